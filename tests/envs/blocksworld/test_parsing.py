"""The move grammar: what a model writes → a move, or an unknown action."""

from __future__ import annotations

import pytest

from agent_envs.envs.blocksworld.parsing import decode_action, format_move
from agent_envs.envs.blocksworld.types import Move

# text, move (None: not an action)
ACCEPTED = [
    ("move 1 to 2", Move(1, 2)),
    ("Move 1 to 2", Move(1, 2)),
    ("MOVE 1 TO 2", Move(1, 2)),
    ("  move   1   to   2  ", Move(1, 2)),
    ("move\t1\tto\t2", Move(1, 2)),
    ("move 1 to table", Move(1, 0)),
    ("move 1 to the table", Move(1, 0)),
    ("Move 1 to Table", Move(1, 0)),
    ("move 1 to 0", Move(1, 0)),
    ("(move 2 to 0)", Move(2, 0)),  # GRL's example answer
    ("[move 2 to 0]", Move(2, 0)),
    ("( move 2 to 0 )", Move(2, 0)),
    ("Move block 2 to block 3", Move(2, 3)),
    ("move block2 to block3", Move(2, 3)),
    ("move block 2 onto block 3", Move(2, 3)),
    ("move 2 on 3", Move(2, 3)),
    ("move 2 on top of 3", Move(2, 3)),
    ("Move Block 2 On Top Of Block 3", Move(2, 3)),
    ("move 2 onto the table", Move(2, 0)),
    ("move 2 to 3.", Move(2, 3)),
    ("(move 2 to 3).", Move(2, 3)),
    ("(move 2 to 3.)", Move(2, 3)),
    ("move 07 to 3", Move(7, 3)),  # parses; the env finds block 7 illegal
    ("move 0 to 3", Move(0, 3)),
    ("move 999999 to 1", Move(999999, 1)),
]
REJECTED = [
    "move 1",
    "move to 2",
    "1 to 2",
    "move 1 2",
    "move 1 -> 2",
    "move 1 to 2 and 3",
    "move 1 to 2, move 3 to 1",
    "move 1 to 2..",
    "move 1 totable",
    "move1 to 2",
    "move -1 to 2",
    "move 1.5 to 2",
    "move one to two",
    "move 1234567 to 2",  # more than six digits
    "stack 1 on 2",
    "put 1 on the table",
    "unstack 1",
    "(move 1 to 2]",
    "move 1 to 2)",
    "((move 1 to 2))",
    "<answer>move 1 to 2</answer>",
    "move \u0661 to 2",  # an Arabic-Indic digit is not an ASCII digit
    "move 1 to 2 please",
    "Up",
    ".",
    "()",
    "(",
]


@pytest.mark.parametrize(("text", "move"), ACCEPTED)
def test_blocksworld__accepted_action(text, move):
    assert decode_action(text) == move


@pytest.mark.parametrize("text", REJECTED)
def test_blocksworld__rejected_action(text):
    assert decode_action(text) is None


@pytest.mark.parametrize(
    ("move", "text"), [(Move(2, 1), "move 2 to 1"), (Move(3, 0), "move 3 to table")]
)
def test_blocksworld__format_move_round_trips(move, text):
    assert format_move(move) == text
    assert decode_action(text) == move
