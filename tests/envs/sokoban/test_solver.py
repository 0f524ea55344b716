"""The optimal solver on hand-drawn boards, checked against a plain breadth-first search."""

from __future__ import annotations

from collections import deque

import pytest

from agent_envs.envs.sokoban.constants import Action
from agent_envs.envs.sokoban.dynamics import is_solved, step
from agent_envs.envs.sokoban.levels import parse_xsb
from agent_envs.envs.sokoban.solver import (
    SolverLimitExceeded,
    optimal_solution_length,
    solve,
)
from agent_envs.envs.sokoban.types import SokobanState


def bfs_length(state: SokobanState) -> int | None:
    """Fewest moves to solve `state` by brute force over `dynamics.step` (small boards)."""
    if is_solved(state):
        return 0
    seen = {state.board}
    queue = deque([(state, 0)])
    while queue:
        current, depth = queue.popleft()
        for action in Action:
            transition = step(current, action)
            if transition.solved:
                return depth + 1
            if transition.moved and transition.state.board not in seen:
                seen.add(transition.state.board)
                queue.append((transition.state, depth + 1))
    return None


def replay(state: SokobanState, actions: list[Action]) -> SokobanState:
    for action in actions:
        state = step(state, action).state
    return state


# name, XSB level, optimal number of moves
LEVELS = [
    ("one_push", "#####\n#@$.#\n#####", 1),
    ("two_pushes", "######\n#@$ .#\n######", 2),
    ("walk_around_the_box", "#######\n#     #\n# $@. #\n#     #\n#######", 6),
    ("walk_then_push", "######\n#@   #\n#  $ #\n#  . #\n######", 3),
    ("two_boxes", "########\n#  .   #\n# $$ @ #\n#  .   #\n########", 14),
    (
        "two_boxes_in_a_room",
        "#######\n###   #\n#.@$  #\n### $.#\n#  #  #\n#     #\n#######",
        11,
    ),
    ("already_solved", "#####\n#@* #\n#####", 0),
    ("player_on_goal", "######\n#+$  #\n#  $.#\n######", 5),
]


@pytest.mark.parametrize(
    ("text", "moves"), [level[1:] for level in LEVELS], ids=[level[0] for level in LEVELS]
)
def test_sokoban__solver_finds_known_optimal_lengths(text, moves):
    state = parse_xsb(text)
    solution = solve(state)
    assert solution is not None
    assert len(solution) == moves == bfs_length(state)
    assert is_solved(replay(state, solution))
    assert optimal_solution_length(state) == moves


def test_sokoban__already_solved_gives_empty_plan():
    assert solve(parse_xsb("######\n#@ * #\n#  * #\n######")) == []


@pytest.mark.parametrize(
    "text",
    [
        "#####\n#@ .#\n#$  #\n#####",  # box in a corner
        "######\n#@  .#\n#    #\n# $  #\n######",  # box along a wall without a goal
        "########\n#@$$ ..#\n########",  # two boxes in a row in a corridor
        "######\n#@   #\n# $$ #\n# $$ #\n#....#\n######",  # 2x2 block of boxes
    ],
)
def test_sokoban__unsolvable_board_gives_none(text):
    state = parse_xsb(text)
    assert bfs_length(state) is None
    assert solve(state) is None
    assert optimal_solution_length(state) is None


def test_sokoban__more_boxes_than_targets_gives_none():
    state = SokobanState(b"#######\n#PXXO_#\n#_____#\n#######", 9, 7)
    assert solve(state) is None


def test_sokoban__returned_actions_are_actions():
    solution = solve(parse_xsb("#######\n#     #\n# $@. #\n#     #\n#######"))
    assert solution == [
        Action.UP,
        Action.LEFT,
        Action.LEFT,
        Action.DOWN,
        Action.RIGHT,
        Action.RIGHT,
    ]
    assert all(type(action) is Action for action in solution)


def test_sokoban__state_budget_raises():
    state = parse_xsb("########\n#  .   #\n# $$ @ #\n#  .   #\n########")
    with pytest.raises(SolverLimitExceeded, match="expanding 3 states"):
        solve(state, max_states=3)
    assert len(solve(state, max_states=10_000)) == 14


def test_sokoban__max_states_must_be_positive():
    with pytest.raises(ValueError, match="max_states"):
        solve(parse_xsb("#####\n#@$.#\n#####"), max_states=0)
