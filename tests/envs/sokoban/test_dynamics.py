"""Sokoban rules on hand-drawn boards: one table row per rule, gym-sokoban's rewards."""

from __future__ import annotations

import pytest

from agent_envs.envs.sokoban.constants import (
    ACTION_NAMES,
    BOX_OFF_TARGET_PENALTY,
    BOX_ON_TARGET_REWARD,
    GLYPHS,
    SOLVED_REWARD,
    STEP_PENALTY,
    Action,
)
from agent_envs.envs.sokoban.dynamics import (
    boxes_on_target,
    is_solved,
    num_boxes,
    render,
    step,
)
from agent_envs.envs.sokoban.types import SokobanState

ON = STEP_PENALTY + BOX_ON_TARGET_REWARD
OFF = STEP_PENALTY + BOX_OFF_TARGET_PENALTY
SOLVING = STEP_PENALTY + BOX_ON_TARGET_REWARD + SOLVED_REWARD


def board(*rows: str) -> SokobanState:
    """A state from rows of glyphs (player `P` or `S`)."""
    text = "\n".join(rows).encode()
    player = next(i for i, glyph in enumerate(text) if glyph in b"PS")
    return SokobanState(text, player, len(rows[0]))


# name, before, action, after, reward, moved, pushed, solved
CASES = [
    (
        "walk_onto_floor",
        ("######", "#P_XO#", "######"),
        Action.RIGHT,
        ("######", "#_PXO#", "######"),
        STEP_PENALTY,
        True,
        False,
        False,
    ),
    (
        "walk_onto_target",
        ("######", "#PO__#", "#__X_#", "######"),
        Action.RIGHT,
        ("######", "#_S__#", "#__X_#", "######"),
        STEP_PENALTY,
        True,
        False,
        False,
    ),
    (
        "leave_target",
        ("######", "#_S__#", "#__X_#", "######"),
        Action.RIGHT,
        ("######", "#_OP_#", "#__X_#", "######"),
        STEP_PENALTY,
        True,
        False,
        False,
    ),
    (
        "bump_wall",
        ("######", "#P_XO#", "######"),
        Action.UP,
        ("######", "#P_XO#", "######"),
        STEP_PENALTY,
        False,
        False,
        False,
    ),
    (
        "push_box_onto_target",
        ("#######", "#PXO__#", "#__X_O#", "#######"),
        Action.RIGHT,
        ("#######", "#_P*__#", "#__X_O#", "#######"),
        ON,
        True,
        True,
        False,
    ),
    (
        "push_box_along_floor",
        ("#######", "#PX__O#", "#######"),
        Action.RIGHT,
        ("#######", "#_PX_O#", "#######"),
        STEP_PENALTY,
        True,
        True,
        False,
    ),
    (
        "push_box_off_target",
        ("#######", "#P*___#", "#__XO_#", "#######"),
        Action.RIGHT,
        ("#######", "#_SX__#", "#__XO_#", "#######"),
        OFF,
        True,
        True,
        False,
    ),
    (
        "push_box_from_target_to_target",
        ("#######", "#P*O_X#", "#######"),
        Action.RIGHT,
        ("#######", "#_S*_X#", "#######"),
        STEP_PENALTY,
        True,
        True,
        False,
    ),
    (
        "push_box_into_wall",
        ("#####", "#_PX#", "#_O_#", "#####"),
        Action.RIGHT,
        ("#####", "#_PX#", "#_O_#", "#####"),
        STEP_PENALTY,
        False,
        False,
        False,
    ),
    (
        "push_box_into_box",
        ("#######", "#PXX__#", "#__OO_#", "#######"),
        Action.RIGHT,
        ("#######", "#PXX__#", "#__OO_#", "#######"),
        STEP_PENALTY,
        False,
        False,
        False,
    ),
    (
        "push_box_into_box_on_target",
        ("#######", "#PX*__#", "#___O_#", "#######"),
        Action.RIGHT,
        ("#######", "#PX*__#", "#___O_#", "#######"),
        STEP_PENALTY,
        False,
        False,
        False,
    ),
    (
        "solve_the_level",
        ("######", "#PXO_#", "######"),
        Action.RIGHT,
        ("######", "#_P*_#", "######"),
        SOLVING,
        True,
        True,
        True,
    ),
    (
        "solve_with_the_last_box",
        ("#######", "#*_PXO#", "#######"),
        Action.RIGHT,
        ("#######", "#*__P*#", "#######"),
        SOLVING,
        True,
        True,
        True,
    ),
    (
        "push_from_a_target",
        ("#######", "#SX_O_#", "#######"),
        Action.RIGHT,
        ("#######", "#OPXO_#", "#######"),
        STEP_PENALTY,
        True,
        True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("before", "action", "after", "reward", "moved", "pushed", "solved"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_sokoban__step_table(before, action, after, reward, moved, pushed, solved):
    state = board(*before)
    transition = step(state, action)
    assert transition.state == board(*after)
    assert transition.reward == pytest.approx(reward, abs=1e-12)
    assert (transition.moved, transition.pushed, transition.solved) == (moved, pushed, solved)


CROSS = ("#######", "#__O__#", "#__X__#", "#OXPXO#", "#__X__#", "#__O__#", "#######")


@pytest.mark.parametrize(
    ("action", "after"),
    [
        (Action.UP, ("#######", "#__*__#", "#__P__#", "#OX_XO#", "#__X__#", "#__O__#", "#######")),
        (
            Action.DOWN,
            ("#######", "#__O__#", "#__X__#", "#OX_XO#", "#__P__#", "#__*__#", "#######"),
        ),
        (
            Action.LEFT,
            ("#######", "#__O__#", "#__X__#", "#*P_XO#", "#__X__#", "#__O__#", "#######"),
        ),
        (
            Action.RIGHT,
            ("#######", "#__O__#", "#__X__#", "#OX_P*#", "#__X__#", "#__O__#", "#######"),
        ),
    ],
)
def test_sokoban__push_box_onto_target_in_each_direction(action, after):
    transition = step(board(*CROSS), action)
    assert transition.state == board(*after)
    assert transition.reward == pytest.approx(ON, abs=1e-12)
    assert (transition.moved, transition.pushed, transition.solved) == (True, True, False)


@pytest.mark.parametrize(
    ("action", "row", "col"),
    [(Action.UP, 1, 2), (Action.DOWN, 3, 2), (Action.LEFT, 2, 1), (Action.RIGHT, 2, 3)],
)
def test_sokoban__walk_in_each_direction(action, row, col):
    state = board("#####", "#___#", "#_P_#", "#___#", "#_XO#", "#####")
    transition = step(state, action)
    assert transition.moved and not transition.pushed
    assert transition.state.player == row * (state.width + 1) + col
    assert transition.state.board[transition.state.player] == ord("P")
    assert transition.state.board.count(b"P") == 1


def test_sokoban__bump_returns_the_same_state():
    state = board("####", "#P_#", "#XO#", "####")
    transition = step(state, Action.LEFT)
    assert transition.state is state
    assert transition.reward == STEP_PENALTY


def test_sokoban__step_accepts_plain_ints():
    state = board("######", "#P_XO#", "######")
    assert step(state, 3) == step(state, Action.RIGHT)


def test_sokoban__bump_on_a_solved_board_reports_solved():
    transition = step(board("#####", "#P*_#", "#####"), Action.UP)
    assert transition.solved and not transition.moved
    assert transition.reward == STEP_PENALTY


def test_sokoban__queries():
    state = board("#######", "#S*X_O#", "#_*___#", "#######")
    assert not is_solved(state)
    assert boxes_on_target(state) == 2
    assert num_boxes(state) == 3
    assert render(state) == "#######\n#S*X_O#\n#_*___#\n#######"
    assert is_solved(board("####", "#P*#", "####"))


def test_sokoban__player_index_tracks_the_glyph_along_a_walk():
    state = board("#######", "#P____#", "#_XO__#", "#__X_O#", "#######")
    for action in [Action.RIGHT, Action.DOWN, Action.DOWN, Action.LEFT, Action.UP, Action.RIGHT]:
        state = step(state, action).state
        assert state.board[state.player] in b"PS"
        assert sum(state.board.count(glyph) for glyph in (b"P", b"S")) == 1


def test_sokoban__constants_are_the_public_points():
    assert GLYPHS == "#_OX*PS"
    assert [action.name for action in Action] == ["UP", "DOWN", "LEFT", "RIGHT"]
    assert [ACTION_NAMES[action] for action in Action] == ["Up", "Down", "Left", "Right"]
    assert (STEP_PENALTY, BOX_ON_TARGET_REWARD, BOX_OFF_TARGET_PENALTY, SOLVED_REWARD) == (
        -0.1,
        1.0,
        -1.0,
        10.0,
    )
