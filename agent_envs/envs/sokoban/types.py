"""Plain data for Sokoban: the state and the result of one step."""

from __future__ import annotations

from typing import NamedTuple


class SokobanState(NamedTuple):
    """A Sokoban position, kept flat so a step is a few byte operations.

    `board` is the text board as ASCII bytes (the glyphs of `constants`), rows joined by
    ``b"\\n"`` with no trailing newline, so ``board.decode()`` is the observation text.
    `player` is the index of the player's glyph in `board`. `width` is the number of columns;
    the row stride in `board` is ``width + 1``. Boards are enclosed by walls, so a move
    (offset ``±1`` or ``±(width + 1)``) never lands on a newline.
    """

    board: bytes
    player: int
    width: int


class Transition(NamedTuple):
    """The result of `dynamics.step`.

    `moved`: the player changed cell. `pushed`: a box moved. `solved`: every box of the new
    state is on a target.
    """

    state: SokobanState
    reward: float
    moved: bool
    pushed: bool
    solved: bool
