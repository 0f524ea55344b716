"""Plain data for Tetris: pieces, rule sets, the game settings, the state, a transition.

Boards are tuples of row bitmasks, row 0 at the top; bit ``c`` of a row is column ``c``
(column 0 is the leftmost). A piece's position is the top-left corner of its bounding box,
which may lie outside the board as long as the piece's cells do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["Game", "Orientation", "Piece", "Rules", "TetrisState", "Transition", "piece_from_art"]


class Orientation(NamedTuple):
    """One orientation of a piece inside its bounding box.

    `masks`: ``(box row, bitmask)`` for each occupied row, lowest row first, with the piece's
    leftmost cell at bit 0. `col_offset`: box column of that leftmost cell; `span`: columns
    covered. `first_row`/`last_row`: box rows of the top and the lowest cell.
    """

    cells: tuple[tuple[int, int], ...]
    masks: tuple[tuple[int, int], ...]
    col_offset: int
    span: int
    first_row: int
    last_row: int


class Piece(NamedTuple):
    """A piece: its letter, a phrase for the prompt, its box size and four orientations
    (index 0 = spawn, each next one a quarter turn clockwise)."""

    name: str
    description: str
    box: int
    orientations: tuple[Orientation, ...]


def _orientation(cells: tuple[tuple[int, int], ...]) -> Orientation:
    cells = tuple(sorted(cells))
    left = min(c for _, c in cells)
    by_row: dict[int, int] = {}
    for r, c in cells:
        by_row[r] = by_row.get(r, 0) | 1 << (c - left)
    masks = tuple(sorted(by_row.items(), reverse=True))
    span = max(c for _, c in cells) - left + 1
    return Orientation(cells, masks, left, span, min(by_row), max(by_row))


def piece_from_art(name: str, description: str, art: tuple[str, ...]) -> Piece:
    """A piece from its spawn orientation drawn in a square box (``"."`` empty); the other
    orientations turn the box clockwise: cell ``(r, c)`` goes to ``(c, box - 1 - r)``."""
    box = len(art)
    if any(len(row) != box for row in art):
        raise ValueError(f"piece {name!r}: the art must be a square box")
    cells = tuple((r, c) for r, row in enumerate(art) for c, ch in enumerate(row) if ch != ".")
    orientations = []
    for _ in range(4):
        orientations.append(_orientation(cells))
        cells = tuple((c, box - 1 - r) for r, c in cells)
    return Piece(name, description, box, tuple(orientations))


@dataclass(frozen=True)
class Rules:
    """What differs between the full game and GRL's Tetris (see `constants.RULES`).

    Attributes:
        name: ``"standard"`` or ``"grl"``.
        actions: the actions this rule set accepts; others are unknown actions.
        gravity: at the end of every turn the falling piece moves down one row, locking if it
            cannot.
        lock_on_rest: after any action, a piece that cannot move down locks at once (GRL);
            otherwise it locks only on ``Drop`` or on a move down that is blocked.
        top_row_game_over: the game ends when, after a lock and its line clears, the top row
            holds a block (GRL).
        random_spawn: a new piece appears at a uniformly drawn column where it fits (GRL);
            otherwise centred.
        enter_from_above: a new piece appears with its lowest cell in the top row and the rest
            above the board (GRL); otherwise with its top cell in the top row.
        preview: the observation names the next piece.
        action_penalty: reward of every executed action.
        line_rewards: reward for clearing 0..4 lines with one piece.
    """

    name: str
    actions: tuple[int, ...]
    gravity: bool
    lock_on_rest: bool
    top_row_game_over: bool
    random_spawn: bool
    enter_from_above: bool
    preview: bool
    action_penalty: float
    line_rewards: tuple[float, ...]


class Game(NamedTuple):
    """The fixed settings of one game: board size, piece set, rules."""

    width: int
    height: int
    pieces: tuple[Piece, ...]
    rules: Rules


class TetrisState(NamedTuple):
    """A Tetris position.

    `rows`: the locked blocks, one bitmask per row, top row first. `kind`: index of the falling
    piece in the game's piece set, ``-1`` once the game is over (no falling piece).
    `rotation`, `top`, `left`: the falling piece's orientation and bounding-box corner.
    `lines`, `score`, `placed`: lines cleared, points scored and pieces locked so far.
    """

    rows: tuple[int, ...]
    kind: int
    rotation: int
    top: int
    left: int
    lines: int
    score: int
    placed: int


class Transition(NamedTuple):
    """The result of one action (or of gravity).

    `effective`: the state changed. `locked`: the piece locked, and the next piece (the one
    passed in) was used. `cleared`: lines cleared by that lock. `game_over`: no piece is
    falling any more (a lock ended the game).
    """

    state: TetrisState
    reward: float
    effective: bool
    locked: bool
    cleared: int
    game_over: bool
