"""Sokoban rules as pure functions on `SokobanState` (gym-sokoban semantics).

Every action costs `STEP_PENALTY`. Moving onto a floor or target cell moves the player; moving
into a box pushes it when the cell beyond is floor or target, and is a bump otherwise, as is
moving into a wall. A bump leaves the state unchanged (``moved=False``) and still costs the
step penalty. A push from a non-target onto a target pays `BOX_ON_TARGET_REWARD`, from a target
onto a non-target `BOX_OFF_TARGET_PENALTY`, target to target nothing extra. The push that puts
the last box on a target also pays `SOLVED_REWARD`. (gym-sokoban pays the solved bonus again on
any further step of a solved board; episodes end on solving, so here it is paid once.)
"""

from __future__ import annotations

from agent_envs.envs.sokoban.constants import (
    BOX,
    BOX_OFF_TARGET_PENALTY,
    BOX_ON_TARGET,
    BOX_ON_TARGET_REWARD,
    FLOOR,
    PLAYER,
    PLAYER_ON_TARGET,
    SOLVED_REWARD,
    STEP_PENALTY,
    TARGET,
    Action,
)
from agent_envs.envs.sokoban.types import SokobanState, Transition

_FLOOR = ord(FLOOR)
_TARGET = ord(TARGET)
_BOX = ord(BOX)
_BOX_ON_TARGET = ord(BOX_ON_TARGET)
_PLAYER = ord(PLAYER)
_PLAYER_ON_TARGET = ord(PLAYER_ON_TARGET)
_WALKABLE = (_FLOOR, _TARGET)
_BOXES = (_BOX, _BOX_ON_TARGET)
_BOX_GLYPH = BOX.encode()
_BOX_ON_TARGET_GLYPH = BOX_ON_TARGET.encode()

# Reward of a push, step penalty included, indexed by 2 * (box left a target) + (box lands on
# a target); the solving push adds SOLVED_REWARD.
_PUSH_REWARD = (
    STEP_PENALTY,
    STEP_PENALTY + BOX_ON_TARGET_REWARD,
    STEP_PENALTY + BOX_OFF_TARGET_PENALTY,
    STEP_PENALTY,
)
_SOLVING_PUSH_REWARD = tuple(reward + SOLVED_REWARD for reward in _PUSH_REWARD)
# tuple.__new__ builds the NamedTuples without their Python-level __new__ (a step is hot code).
_new = tuple.__new__


def action_offsets(width: int) -> tuple[int, int, int, int]:
    """Index offsets of Up, Down, Left, Right in a board with `width` columns."""
    stride = width + 1
    return (-stride, stride, -1, 1)


def step(state: SokobanState, action: Action | int) -> Transition:
    """Apply one action; see the module docstring for the rules and rewards.

    `solved` in the result says whether the new state has every box on a target.
    """
    board, player, width = state
    delta = (-width - 1, width + 1, -1, 1)[action]
    dest = player + delta
    here = board[dest]
    if here in _WALKABLE:
        cells = bytearray(board)
        cells[player] = _FLOOR if board[player] == _PLAYER else _TARGET
        cells[dest] = _PLAYER if here == _FLOOR else _PLAYER_ON_TARGET
        new = _new(SokobanState, (bytes(cells), dest, width))
        return _new(Transition, (new, STEP_PENALTY, True, False, _BOX_GLYPH not in board))
    if here in _BOXES:
        beyond = dest + delta
        there = board[beyond]
        if there in _WALKABLE:
            cells = bytearray(board)
            cells[player] = _FLOOR if board[player] == _PLAYER else _TARGET
            kind = 0
            if here == _BOX_ON_TARGET:
                cells[dest] = _PLAYER_ON_TARGET
                kind = 2
            else:
                cells[dest] = _PLAYER
            if there == _TARGET:
                cells[beyond] = _BOX_ON_TARGET
                kind += 1
            else:
                cells[beyond] = _BOX
            after = bytes(cells)
            new = _new(SokobanState, (after, dest, width))
            if _BOX_GLYPH in after:
                return _new(Transition, (new, _PUSH_REWARD[kind], True, True, False))
            return _new(Transition, (new, _SOLVING_PUSH_REWARD[kind], True, True, True))
    return _new(Transition, (state, STEP_PENALTY, False, False, _BOX_GLYPH not in board))


def is_solved(state: SokobanState) -> bool:
    """Whether no box is off a target (no `BOX` glyph on the board)."""
    return _BOX_GLYPH not in state.board


def boxes_on_target(state: SokobanState) -> int:
    """Number of boxes standing on a target."""
    return state.board.count(_BOX_ON_TARGET_GLYPH)


def num_boxes(state: SokobanState) -> int:
    """Number of boxes, on or off a target."""
    return state.board.count(_BOX_GLYPH) + state.board.count(_BOX_ON_TARGET_GLYPH)


def render(state: SokobanState) -> str:
    """The board as text: one row per line, no trailing newline."""
    return state.board.decode("ascii")


def walk_distances(cells: bytearray, offsets: tuple[int, ...], start: int) -> list[int]:
    """Moves from `start` to every cell through cells marked 1 (-1 where unreachable)."""
    up, down, left, right = offsets
    todo = bytearray(cells)
    todo[start] = 0
    dist = [-1] * len(cells)
    dist[start] = 0
    frontier = [start]
    steps = 0
    while frontier:
        steps += 1
        following = []
        for cell in frontier:
            for nxt in (cell + up, cell + down, cell + left, cell + right):
                if todo[nxt]:
                    todo[nxt] = 0
                    dist[nxt] = steps
                    following.append(nxt)
        frontier = following
    return dist
