"""Blocksworld rules on hand-drawn states: one table row per rule, GRL's rewards."""

from __future__ import annotations

import itertools

import pytest

from agent_envs.envs.blocksworld.constants import GOAL_REWARD, MOVE_REWARD, TABLE
from agent_envs.envs.blocksworld.dynamics import (
    blocks_in_place,
    check_move,
    check_state,
    clear_blocks,
    stacks,
    step,
    successors,
)
from agent_envs.envs.blocksworld.types import Move, State


def towers(*piles: str) -> State:
    """A state from towers written bottom to top: ``towers("12", "3")`` is block 2 on block 1,
    blocks 1 and 3 on the table."""
    count = sum(map(len, piles))
    state = [TABLE] * count
    for pile in piles:
        for below, block in itertools.pairwise(map(int, pile)):
            state[block - 1] = below
    return tuple(state)


def test_blocksworld__towers_helper_matches_grl_encoding():
    assert towers("12", "3") == (0, 1, 0)
    assert towers("321") == (2, 3, 0)
    assert towers("1", "2", "3") == (0, 0, 0)


def far_goal(count: int) -> State:
    """One tower, block ``count`` at the bottom: no row below reaches it."""
    return towers("".join(str(block) for block in range(count, 0, -1)))


# name, before, move, after, reward, moved
LEGAL = [
    ("move_to_table", towers("12", "3"), Move(2, 0), towers("1", "2", "3"), MOVE_REWARD, True),
    ("move_onto_block", towers("1", "2", "3"), Move(1, 3), towers("2", "31"), MOVE_REWARD, True),
    ("move_top_of_tower", towers("123"), Move(3, 0), towers("12", "3"), MOVE_REWARD, True),
    ("move_between_towers", towers("12", "34"), Move(4, 2), towers("124", "3"), MOVE_REWARD, True),
    ("table_block_to_table", towers("1", "23"), Move(1, 0), towers("1", "23"), MOVE_REWARD, False),
]


@pytest.mark.parametrize(("name", "before", "move", "after", "reward", "moved"), LEGAL)
def test_blocksworld__legal_move(name, before, move, after, reward, moved):
    goal = far_goal(len(before))
    assert check_move(before, move) is None, name
    transition = step(before, move, goal)
    assert transition.state == after, name
    assert transition.reward == reward and transition.legal, name
    assert transition.moved is moved and not transition.solved, name


# name, before, move, reason
ILLEGAL = [
    ("move_from_under_another", towers("12", "3"), Move(1, 3), "block 1 has a block on top of it"),
    ("move_from_bottom_of_tower", towers("123"), Move(1, 0), "block 1 has a block on top of it"),
    ("onto_covered_block", towers("12", "3"), Move(3, 1), "block 1 has a block on top of it"),
    ("onto_block_it_sits_on", towers("12", "3"), Move(2, 1), "block 1 has a block on top of it"),
    ("onto_itself", towers("12", "3"), Move(3, 3), "block 3 cannot go on itself"),
    ("covered_onto_itself", towers("12", "3"), Move(1, 1), "block 1 cannot go on itself"),
    ("unknown_block", towers("12", "3"), Move(4, 0), "there is no block 4"),
    ("block_zero", towers("12", "3"), Move(0, 3), "there is no block 0"),
    ("unknown_destination", towers("12", "3"), Move(3, 4), "there is no block 4"),
    ("huge_numbers", towers("12", "3"), Move(999999, 999999), "there is no block 999999"),
]


@pytest.mark.parametrize(("name", "before", "move", "reason"), ILLEGAL)
def test_blocksworld__illegal_move_changes_nothing(name, before, move, reason):
    assert check_move(before, move) == reason, name
    transition = step(before, move, (0, 0, 0))
    assert transition.state == before, name
    assert transition.reward == 0.0, name
    assert not transition.legal and not transition.moved and not transition.solved, name


def test_blocksworld__move_that_reaches_goal_pays_goal_reward_instead_of_move():
    transition = step(towers("12", "3"), Move(2, 3), towers("1", "32"))
    assert transition == (towers("1", "32"), GOAL_REWARD, True, True, True)


def test_blocksworld__illegal_move_at_goal_reports_solved_state():
    assert step(towers("1", "2"), Move(1, 1), towers("1", "2")).solved


# state, reason (None: valid)
STATES = [
    ((0, 1, 0), None),
    ((2, 3, 0), None),
    ((0,), None),
    ((), "there are no blocks"),
    ((1, 0), "block 1 sits on itself"),
    ((0, 3), "block 2 sits on 3, not on 0 (the table) or a block 1..2"),
    ((0, -1), "block 2 sits on -1, not on 0 (the table) or a block 1..2"),
    ((0, 1, 1), "two blocks sit on the same block"),
    ((2, 1, 0), "the stack under block 1 is a cycle"),
    ((2, 3, 1), "the stack under block 1 is a cycle"),
    ((0, True), "block 2 sits on True, not on 0 (the table) or a block 1..2"),
]


@pytest.mark.parametrize(("state", "reason"), STATES)
def test_blocksworld__check_state(state, reason):
    assert check_state(state) == reason


@pytest.mark.parametrize(
    ("state", "clear", "piles"),
    [
        (towers("12", "3"), [2, 3], [[1, 2], [3]]),
        (towers("321"), [1], [[3, 2, 1]]),
        (towers("2", "13", "4"), [2, 3, 4], [[1, 3], [2], [4]]),
    ],
)
def test_blocksworld__clear_blocks_and_stacks(state, clear, piles):
    assert clear_blocks(state) == clear
    assert stacks(state) == piles


@pytest.mark.parametrize(
    "state", [towers("1", "2", "3"), towers("12", "3"), towers("123"), towers("13", "24", "5")]
)
def test_blocksworld__successors_are_exactly_the_effective_legal_moves(state):
    n = len(state)
    expected = {
        Move(block, dest)
        for block in range(1, n + 1)
        for dest in range(n + 1)
        if check_move(state, Move(block, dest)) is None
        and step(state, Move(block, dest), state).moved
    }
    got = successors(state)
    assert {move for move, _ in got} == expected
    assert len(got) == len(expected)
    for move, after in got:
        assert step(state, move, state).state == after


def test_blocksworld__successor_counts():
    assert len(successors(towers("1", "2", "3"))) == 6  # 3 tops x 2 other tops
    assert len(successors(towers("123"))) == 1  # only the top block to the table


def test_blocksworld__blocks_in_place():
    assert blocks_in_place(towers("12", "3"), towers("12", "3")) == 3
    assert blocks_in_place(towers("12", "3"), towers("1", "32")) == 2
    assert blocks_in_place(towers("123"), towers("321")) == 0
