"""XSB levels: parsing, the inverse, and every error."""

from __future__ import annotations

import pytest

from agent_envs.envs.sokoban.dynamics import boxes_on_target, num_boxes
from agent_envs.envs.sokoban.levels import parse_xsb, to_xsb
from agent_envs.envs.sokoban.types import SokobanState

CORRIDOR = """\
#######
#@ $ .#
#######"""

# A small two-box level written for these tests, with cells outside its walls.
TWO_BOXES = """\
  #####
###   #
#.@$  #
### $.#
#  #  #
#     #
#######"""


def test_sokoban__parse_corridor():
    state = parse_xsb(CORRIDOR)
    assert state == SokobanState(b"#######\n#P_X_O#\n#######", 9, 7)


def test_sokoban__parse_player_on_goal_and_box_on_goal():
    state = parse_xsb("#####\n#+$ #\n#*  #\n#####")
    assert state.board == b"#####\n#SX_#\n#*__#\n#####"
    assert state.player == 7
    assert state.board[state.player] == ord("S")


@pytest.mark.parametrize("floor", [" ", "-", "_"])
def test_sokoban__parse_floor_variants(floor):
    text = CORRIDOR.replace(" ", floor)
    assert parse_xsb(text) == parse_xsb(CORRIDOR)


def test_sokoban__parse_two_box_level():
    state = parse_xsb(TWO_BOXES)
    assert state.width == 7
    assert state.board.decode().split("\n") == [
        "#######",
        "###___#",
        "#OPX__#",
        "###_XO#",
        "#__#__#",
        "#_____#",
        "#######",
    ]
    assert state.player == 2 * 8 + 2
    assert num_boxes(state) == 2
    assert boxes_on_target(state) == 0


def test_sokoban__ragged_rows_and_outside_cells_become_walls():
    text = "\n  ####\n###  #\n#@$. #\n######\n\n"
    state = parse_xsb(text)
    assert state.board == b"######\n###__#\n#PXO_#\n######"
    assert state.width == 6


def test_sokoban__unreachable_floor_becomes_wall():
    text = "#########\n#@$.# # #\n#########"
    assert parse_xsb(text).board == b"#########\n#PXO#####\n#########"


def test_sokoban__blank_lines_and_crlf_are_ignored():
    text = "\r\n\r\n#######\r\n\r\n#@ $ .#\r\n   \r\n#######\r\n"
    assert parse_xsb(text) == parse_xsb(CORRIDOR)


@pytest.mark.parametrize(
    "text",
    [
        CORRIDOR,
        "#####\n#+$ #\n#*  #\n#####",
        "#######\n#.@$  #\n#  $. #\n#######",
    ],
)
def test_sokoban__to_xsb_inverts_parse_xsb(text):
    state = parse_xsb(text)
    assert to_xsb(state) == text
    assert parse_xsb(to_xsb(state)) == state


def test_sokoban__to_xsb_of_a_level_with_outside_cells_round_trips_the_state():
    state = parse_xsb(TWO_BOXES)
    assert parse_xsb(to_xsb(state)) == state
    assert to_xsb(state).split("\n")[:2] == ["#######", "###   #"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#####\n#@$.#\n#?  #\n#####", "unknown character '?' at line 3, column 2"),
        ("#####\n#@$.#\n#####\tx", "unknown character '\\t' at line 3, column 6"),
        ("", "the text has no rows"),
        ("   \n\n", "the text has no rows"),
        ("#####\n# $.#\n#####", "no player"),
        ("######\n#@$.@#\n######", "2 players ('@' or '+') at row 2 column 2, row 2 column 5"),
        ("#######\n#@$$..#\n#+ $. #\n#######", "2 players"),
        ("######\n#@ ..#\n######", "no box"),
        ("######\n#@$$.#\n######", "2 boxes but 1 goals"),
        ("######\n#@$..#\n######", "1 boxes but 2 goals"),
        ("#####\n#@$.#\n#  ##\n## ##", "not enclosed by walls"),
        ("#####\n#@$. \n#####", "not enclosed by walls"),
        ("@$.", "not enclosed by walls"),
        ("#########\n#@$.#$.##\n#########", "'$' at row 2, column 6 cannot be reached"),
    ],
)
def test_sokoban__parse_errors(text, message):
    with pytest.raises(ValueError, match="XSB level") as error:
        parse_xsb(text)
    assert message in str(error.value)
