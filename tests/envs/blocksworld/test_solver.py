"""The two-sided breadth-first solver against hand-worked plans and a plain one-sided BFS."""

from __future__ import annotations

import itertools
from collections import deque

import pytest

from agent_envs.envs.blocksworld.dynamics import check_state, step, successors
from agent_envs.envs.blocksworld.solver import optimal_plan_length, solve
from agent_envs.envs.blocksworld.types import Move, State


def all_states(count: int) -> list[State]:
    return [
        state
        for state in itertools.product(range(count + 1), repeat=count)
        if check_state(state) is None
    ]


def distances_from(start: State) -> dict[State, int]:
    """Plain BFS: the number of moves from ``start`` to every state."""
    distance = {start: 0}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        for _, after in successors(state):
            if after not in distance:
                distance[after] = distance[state] + 1
                queue.append(after)
    return distance


def follow(start: State, goal: State, plan: list[Move]) -> State:
    state = start
    for move in plan:
        transition = step(state, move, goal)
        assert transition.legal and transition.moved, (state, move)
        state = transition.state
    return state


# start, goal, a shortest plan
CASES = [
    ((0, 1, 0), (0, 1, 0), []),
    ((0, 1, 0), (0, 0, 0), [Move(2, 0)]),
    ((0, 0, 0), (3, 1, 0), [Move(1, 3), Move(2, 1)]),  # tower 3-1-2 from the table
    ((0, 1, 2), (2, 3, 0), [Move(3, 0), Move(2, 3), Move(1, 2)]),  # reverse a tower of 3
    ((0, 0, 0, 0), (2, 3, 4, 0), [Move(3, 4), Move(2, 3), Move(1, 2)]),  # build a tower of 4
]


@pytest.mark.parametrize(("start", "goal", "plan"), CASES)
def test_blocksworld__solver_hand_worked_plans(start, goal, plan):
    found = solve(start, goal)
    assert len(found) == len(plan)
    assert follow(start, goal, found) == goal


def test_blocksworld__solver_reverses_a_tower_of_four_by_the_only_shortest_plan():
    plan = [Move(4, 0), Move(3, 4), Move(2, 3), Move(1, 2)]
    assert solve((0, 1, 2, 3), (2, 3, 4, 0)) == plan


@pytest.mark.parametrize("count", [2, 3, 4])
def test_blocksworld__solver_matches_plain_bfs_on_every_pair(count):
    states = all_states(count)
    for start in states:
        distance = distances_from(start)
        assert len(distance) == len(states)  # the state graph is connected
        for goal in states:
            plan = solve(start, goal)
            assert len(plan) == distance[goal], (start, goal)
            assert follow(start, goal, plan) == goal


def test_blocksworld__solver_matches_plain_bfs_from_sampled_starts_of_five_blocks():
    states = all_states(5)
    for start in states[::50]:
        distance = distances_from(start)
        for goal in states[::7]:
            assert optimal_plan_length(start, goal) == distance[goal], (start, goal)


def test_blocksworld__solver_rejects_mismatched_sizes():
    with pytest.raises(ValueError, match="blocks"):
        solve((0, 1), (0, 0, 0))
