"""Tetris rules as pure functions on `TetrisState` (no RNG: the caller passes the next piece).

Moves (`step`):

* ``Left``/``Right`` shift the piece one column if it fits there; otherwise nothing happens.
* ``Down`` moves it one row down if it fits; otherwise the piece locks.
* ``Drop`` moves it down as far as it fits and locks it (hard drop).
* ``RotateCW``/``RotateCCW`` turn it a quarter inside its bounding box; if it does not fit, it
  is tried shifted by each column offset of `KICKS` in turn (simple wall kicks); if none fits,
  nothing happens.
* With ``rules.lock_on_rest`` (GRL), after any move a piece that cannot move down locks.

Cells above the top row are open space: a piece may stick out above the board while it falls.

Locking (`lock`): the piece's cells join the board; full rows are removed and the rows above
move down; the score grows by `SCORE_BY_LINES`. The game is over when a locked cell is above
the top row, when (``rules.top_row_game_over``) the top row holds a block after the clears, or
when the next piece does not fit where it spawns. Otherwise the next piece spawns: at its
given column, with its top cell in the top row (or, ``rules.enter_from_above``, its lowest
cell in the top row).

Reward of a move: ``rules.action_penalty`` plus ``rules.line_rewards[lines cleared]``; of
gravity (`fall`, one row down or a lock): the line reward only.
"""

from __future__ import annotations

import struct
from functools import cache

from agent_envs.envs.tetris.constants import (
    ACTIVE,
    EMPTY,
    FILLED,
    KICKS,
    SCORE_BY_LINES,
    Action,
)
from agent_envs.envs.tetris.types import Game, Orientation, Piece, TetrisState, Transition

__all__ = [
    "board_text",
    "center_left",
    "drop_top",
    "fall",
    "fits",
    "lock",
    "render",
    "spawn",
    "spawn_lefts",
    "state_bytes",
    "step",
]

# tuple.__new__ builds the NamedTuples without their Python-level __new__ (a step is hot code).
_new = tuple.__new__
_LEFT, _RIGHT, _DOWN, _DROP, _CW, _CCW = (int(action) for action in Action)
_ROW_CACHE_LIMIT = 1 << 16


def fits(
    rows: tuple[int, ...], height: int, width: int, o: Orientation, top: int, left: int
) -> bool:
    """Whether orientation `o` with its box corner at (`top`, `left`) overlaps nothing."""
    left += o.col_offset
    if left < 0 or left + o.span > width:
        return False
    for dr, mask in o.masks:
        r = top + dr
        if r >= height:
            return False
        if r >= 0 and rows[r] & (mask << left):
            return False
    return True


def drop_top(game: Game, state: TetrisState) -> int:
    """The lowest box row the falling piece can move down to."""
    rows, kind, rotation, top, left = state[:5]
    o = game.pieces[kind].orientations[rotation]
    height, width = game.height, game.width
    while fits(rows, height, width, o, top + 1, left):
        top += 1
    return top


def center_left(game: Game, kind: int) -> int:
    """Box column of a centred spawn: ``(width - box) // 2`` (columns 3-6 for I on 10)."""
    return (game.width - game.pieces[kind].box) // 2


def spawn_lefts(game: Game, kind: int) -> range:
    """Every box column at which the piece's spawn orientation lies inside the board."""
    o = game.pieces[kind].orientations[0]
    return range(-o.col_offset, game.width - o.span - o.col_offset + 1)


def _spawn_top(game: Game, piece: Piece) -> int:
    o = piece.orientations[0]
    return -o.last_row if game.rules.enter_from_above else -o.first_row


def spawn(game: Game, rows: tuple[int, ...], upcoming: tuple[int, int]) -> TetrisState:
    """A fresh state: piece ``upcoming = (kind, left)`` spawned on `rows`, or a game-over
    state (``kind == -1``) if it does not fit there."""
    kind, left = upcoming
    piece = game.pieces[kind]
    top = _spawn_top(game, piece)
    if not fits(rows, game.height, game.width, piece.orientations[0], top, left):
        return TetrisState(rows, -1, 0, 0, 0, 0, 0, 0)
    return TetrisState(rows, kind, 0, top, left, 0, 0, 0)


def lock(
    game: Game, state: TetrisState, upcoming: tuple[int, int], base_reward: float
) -> Transition:
    """Lock the falling piece where it is, clear lines, spawn `upcoming`; see module doc."""
    rows, kind, rotation, top, left, lines, score, placed = state
    o = game.pieces[kind].orientations[rotation]
    cells = list(rows)
    above = False
    shift = left + o.col_offset
    for dr, mask in o.masks:
        r = top + dr
        if r < 0:
            above = True
        else:
            cells[r] |= mask << shift
    full = (1 << game.width) - 1
    if full in cells:
        kept = [row for row in cells if row != full]
        cleared = len(cells) - len(kept)
        cells = [0] * cleared + kept
    else:
        cleared = 0
    rows = tuple(cells)
    lines += cleared
    score += SCORE_BY_LINES[cleared]
    placed += 1
    rules = game.rules
    reward = base_reward + rules.line_rewards[cleared]
    if above or (rules.top_row_game_over and rows[0]):
        new = _new(TetrisState, (rows, -1, 0, 0, 0, lines, score, placed))
        return _new(Transition, (new, reward, True, True, cleared, True))
    next_kind, next_left = upcoming
    piece = game.pieces[next_kind]
    next_top = _spawn_top(game, piece)
    if fits(rows, game.height, game.width, piece.orientations[0], next_top, next_left):
        new = _new(TetrisState, (rows, next_kind, 0, next_top, next_left, lines, score, placed))
        return _new(Transition, (new, reward, True, True, cleared, False))
    new = _new(TetrisState, (rows, -1, 0, 0, 0, lines, score, placed))
    return _new(Transition, (new, reward, True, True, cleared, True))


def step(game: Game, state: TetrisState, action: int, upcoming: tuple[int, int]) -> Transition:
    """Apply one action; `upcoming` = ``(kind, left)`` spawns if the piece locks."""
    rows, kind, rotation, top, left, lines, score, placed = state
    rules = game.rules
    penalty = rules.action_penalty
    if kind < 0:
        return _new(Transition, (state, penalty, False, False, 0, True))
    orientations = game.pieces[kind].orientations
    o = orientations[rotation]
    height, width = game.height, game.width
    moved = False
    if action in (_LEFT, _RIGHT):
        target = left - 1 if action == _LEFT else left + 1
        if fits(rows, height, width, o, top, target):
            left = target
            moved = True
    elif action == _DOWN:
        if not fits(rows, height, width, o, top + 1, left):
            return lock(game, state, upcoming, penalty)
        top += 1
        moved = True
    elif action == _DROP:
        bottom = drop_top(game, state)
        if bottom != top:
            state = _new(TetrisState, (rows, kind, rotation, bottom, left, lines, score, placed))
        return lock(game, state, upcoming, penalty)
    else:
        turned = (rotation + (1 if action == _CW else 3)) & 3
        t = orientations[turned]
        for kick in KICKS:
            if fits(rows, height, width, t, top, left + kick):
                rotation, left, o = turned, left + kick, t
                moved = True
                break
    if moved:
        state = _new(TetrisState, (rows, kind, rotation, top, left, lines, score, placed))
    if rules.lock_on_rest and not fits(rows, height, width, o, top + 1, left):
        return lock(game, state, upcoming, penalty)
    return _new(Transition, (state, penalty, moved, False, 0, False))


def fall(game: Game, state: TetrisState, upcoming: tuple[int, int]) -> Transition:
    """Gravity: the falling piece moves down one row, or locks if it cannot (no penalty)."""
    rows, kind, rotation, top, left, lines, score, placed = state
    if kind < 0:
        return _new(Transition, (state, 0.0, False, False, 0, True))
    o = game.pieces[kind].orientations[rotation]
    if fits(rows, game.height, game.width, o, top + 1, left):
        new = _new(TetrisState, (rows, kind, rotation, top + 1, left, lines, score, placed))
        return _new(Transition, (new, 0.0, True, False, 0, False))
    return lock(game, state, upcoming, 0.0)


@cache
def _row_cache(width: int) -> dict[int, str]:
    return {}


def _row_text(cache: dict[int, str], width: int, key: int) -> str:
    """Text of one row; `key` = locked mask | active mask << width."""
    text = "".join(
        ACTIVE if key >> (width + c) & 1 else FILLED if key >> c & 1 else EMPTY
        for c in range(width)
    )
    if len(cache) < _ROW_CACHE_LIMIT:
        cache[key] = text
    return text


def board_text(game: Game, rows: tuple[int, ...]) -> str:
    """The locked blocks alone, one row per line (what `render` draws the piece onto)."""
    width = game.width
    cache = _row_cache(width)
    get = cache.get
    return "\n".join([get(row) or _row_text(cache, width, row) for row in rows])


def render(
    game: Game, state: TetrisState, next_kind: int | None = None, board: str | None = None
) -> str:
    """The board, one row per line, the falling piece's visible cells as `ACTIVE`; with
    ``rules.preview`` a last line ``Next: <letter>`` (``Game over.`` once it is over).
    `board` may pass ``board_text(game, state.rows)`` if the caller has it already."""
    width = game.width
    rows = state.rows
    text = board_text(game, rows) if board is None else board
    kind = state.kind
    if kind >= 0:
        cache = _row_cache(width)
        o = game.pieces[kind].orientations[state.rotation]
        top = state.top
        shift = state.left + o.col_offset + width
        stride = width + 1
        for dr, mask in o.masks:
            r = top + dr
            if r >= 0:
                key = rows[r] | mask << shift
                line = cache.get(key) or _row_text(cache, width, key)
                start = r * stride
                text = text[:start] + line + text[start + width :]
    if game.rules.preview:
        if kind < 0:
            return text + "\nGame over."
        if next_kind is not None:
            return text + "\nNext: " + game.pieces[next_kind].name
    return text


@cache
def _state_struct(height: int) -> struct.Struct:
    return struct.Struct(f"<{height}I6i")


def state_bytes(game: Game, state: TetrisState, next_kind: int) -> bytes:
    """Canonical bytes of what decides the future: board, falling piece, lines, next piece."""
    rows, kind, rotation, top, left, lines = state[:6]
    return _state_struct(game.height).pack(*rows, kind, rotation, top, left, lines, next_kind)
