"""The Tetris expert: a placement search with a standard board heuristic and lookahead.

For the falling piece, `placements` enumerates every placement reachable by "rotate first,
then shift, then fall": each rotation prefix the rules allow (none, CW, CW CW, CCW), each
number of ``Left`` or ``Right`` shifts until the piece is blocked, then ``Drop`` (or, without
it, ``Down`` until the piece locks). Every candidate is simulated with `dynamics.step`, so a
plan is exactly what the env will do.

A board is scored with the linear heuristic of Yiyuan Lee's Tetris AI ("near perfect"
weights, `WEIGHTS`)::

    -0.510066 * aggregate height + 0.760666 * lines - 0.35663 * holes - 0.184483 * bumpiness

`best_placement` ranks each placement of the falling piece by the best board reachable after
also placing the next `lookahead` pieces (known from the queue, spawn columns included):
reaching the goal beats every board (sooner beats later), ending the game loses to every
board; ties go to the shorter plan, then to the first found. `plan` chains the best
placements of the next known pieces while the actions fit in one turn, so a turn is not
wasted on a short plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from agent_envs.envs.tetris.constants import Action
from agent_envs.envs.tetris.dynamics import step
from agent_envs.envs.tetris.types import Game, TetrisState, Transition

__all__ = ["WEIGHTS", "best_placement", "board_features", "placements", "plan"]

WEIGHTS = (-0.510066, 0.760666, -0.35663, -0.184483)
"""Weights of aggregate height, lines cleared, holes and bumpiness."""

_ROTATIONS = ((), (Action.ROTATE_CW,), (Action.ROTATE_CW, Action.ROTATE_CW), (Action.ROTATE_CCW,))
_LOST = float("-inf")
_GOAL = 1e12  # value of reaching the goal (minus the number of pieces it takes after this one)


def board_features(rows: Sequence[int], width: int) -> tuple[int, int, int]:
    """``(aggregate height, holes, bumpiness)`` of a board (top row first)."""
    height = len(rows)
    seen = 0
    holes = 0
    heights = [0] * width
    for index, row in enumerate(rows):
        new = row & ~seen
        if new:
            for column in range(width):
                if new >> column & 1:
                    heights[column] = height - index
        holes += (seen & ~row).bit_count()
        seen |= row
    bumpiness = sum(abs(a - b) for a, b in pairwise(heights))
    return sum(heights), holes, bumpiness


def _board_value(game: Game, state: TetrisState, cleared: int) -> float:
    aggregate, holes, bumpiness = board_features(state.rows, game.width)
    w_height, w_lines, w_holes, w_bumps = WEIGHTS
    return w_height * aggregate + w_lines * cleared + w_holes * holes + w_bumps * bumpiness


def _descend(
    game: Game, state: TetrisState, upcoming: tuple[int, int]
) -> tuple[list[Action], Transition] | None:
    """Actions and transition that bring the piece down until it locks (None if it cannot)."""
    if Action.DROP in game.rules.actions:
        return [Action.DROP], step(game, state, Action.DROP, upcoming)
    actions = []
    for _ in range(game.height + 4):
        actions.append(Action.DOWN)
        transition = step(game, state, Action.DOWN, upcoming)
        if transition.locked:
            return actions, transition
        state = transition.state
    return None


def placements(
    game: Game, state: TetrisState, upcoming: tuple[int, int]
) -> list[tuple[list[Action], Transition]]:
    """Every "rotate, shift, fall" placement of the falling piece: (actions, the transition
    of the lock). `upcoming` is the piece that spawns after the lock."""
    if state.kind < 0:
        return []
    rotations = _ROTATIONS if Action.ROTATE_CW in game.rules.actions else _ROTATIONS[:1]
    found: list[tuple[list[Action], Transition]] = []
    seen: set[tuple[int, int, int]] = set()
    for prefix in rotations:
        start = state
        for action in prefix:
            transition = step(game, start, action, upcoming)
            if not transition.effective or transition.locked:
                break
            start = transition.state
        else:
            for shift in (Action.LEFT, Action.RIGHT):
                current, moves = start, list(prefix)
                while True:
                    key = (current.rotation, current.top, current.left)
                    if key not in seen:
                        seen.add(key)
                        landing = _descend(game, current, upcoming)
                        if landing is not None:
                            found.append((moves + landing[0], landing[1]))
                    transition = step(game, current, shift, upcoming)
                    if not transition.effective:
                        break
                    moves = [*moves, shift]
                    if transition.locked:  # lock_on_rest: it locked beside where it was
                        found.append((moves, transition))
                        break
                    current = transition.state
    return found


def _outcome(game: Game, transition: Transition, cleared: int, goal_lines: int, ply: int) -> float:
    if transition.game_over:
        return _LOST
    if transition.state.lines >= goal_lines:
        return _GOAL - ply  # the sooner the better
    return _board_value(game, transition.state, cleared)


def _search(
    game: Game,
    transition: Transition,
    upcoming: Sequence[tuple[int, int]],
    goal_lines: int,
    cleared: int,
    ply: int,
    lookahead: int,
) -> float:
    """Value of the position after `transition`: its own, or the best over placements of the
    falling piece if `lookahead` pieces (and their successors in `upcoming`) remain."""
    value = _outcome(game, transition, cleared, goal_lines, ply)
    if value == _LOST or value > _GOAL / 2 or lookahead == 0 or not upcoming:
        return value
    return max(
        (
            _search(game, after, upcoming[1:], goal_lines, cleared + after.cleared, ply + 1,
                    lookahead - 1)
            for _, after in placements(game, transition.state, upcoming[0])
        ),
        default=_LOST,
    )  # fmt: skip


def best_placement(
    game: Game,
    state: TetrisState,
    upcoming: Sequence[tuple[int, int]],
    goal_lines: int,
    lookahead: int = 1,
) -> tuple[list[Action], Transition, float] | None:
    """The best placement of the falling piece: (actions, lock transition, rank value), or
    ``None`` if no piece is falling. ``upcoming[i]`` spawns after the ``i``-th lock; up to
    `lookahead` further pieces of it are placed ahead to rank each placement."""
    best = None
    for moves, first in placements(game, state, upcoming[0]):
        value = _search(game, first, upcoming[1:], goal_lines, first.cleared, 0, lookahead)
        rank = (value, -len(moves))
        if best is None or rank > best[0]:
            best = (rank, moves, first)
    if best is None:
        return None
    (value, _), moves, transition = best
    return moves, transition, value


def plan(
    game: Game,
    state: TetrisState,
    upcoming: Sequence[tuple[int, int]],
    max_actions: int,
    goal_lines: int,
    lookahead: int = 1,
) -> list[Action]:
    """The expert's actions from `state`: the best placement of the falling piece, then of
    each next piece in `upcoming` (``upcoming[i]`` spawns after the ``i``-th lock) while the
    plan is shorter than `max_actions` and the episode goes on."""
    actions: list[Action] = []
    for index in range(len(upcoming)):
        found = best_placement(game, state, upcoming[index:], goal_lines, lookahead)
        if found is None:
            break
        moves, transition, _ = found
        actions += moves
        state = transition.state
        if transition.game_over or state.lines >= goal_lines or len(actions) >= max_actions:
            break
    return actions
