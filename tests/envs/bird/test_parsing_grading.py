"""The answer grammar (text → action) and BIRD's grading (pure functions)."""

from __future__ import annotations

import time

import pytest

from agent_envs.envs.bird.grading import rows_match, submission_reward
from agent_envs.envs.bird.parsing import decode_action
from agent_envs.envs.bird.types import QueryKind

EXECUTE, SUBMIT = QueryKind.EXECUTE, QueryKind.SUBMIT

# (answer text inside <answer>, expected (kind, sql) or None)
ANSWERS = [
    ("SELECT 1", (SUBMIT, "SELECT 1")),
    (
        "  SELECT name FROM t WHERE a || b = 'x'  ",
        (SUBMIT, "SELECT name FROM t WHERE a || b = 'x'"),
    ),
    ("EXECUTE: SELECT 1", (EXECUTE, "SELECT 1")),
    ("execute SELECT 1", (EXECUTE, "SELECT 1")),
    ("Execute :SELECT 1", (EXECUTE, "SELECT 1")),
    ("SUBMIT: SELECT 1;", (SUBMIT, "SELECT 1;")),
    ("submit:\nSELECT\n  1", (SUBMIT, "SELECT\n  1")),
    ("```sql\nSELECT 1\n```", (SUBMIT, "SELECT 1")),
    ("```SQL\nSELECT 1;\n```", (SUBMIT, "SELECT 1;")),
    ("```SELECT 1```", (SUBMIT, "SELECT 1")),
    ("EXECUTE: ```sql\nSELECT 2\n```", (EXECUTE, "SELECT 2")),
    ("Here it is:\n```sqlite\nSELECT 3\n```\nDone.", (SUBMIT, "SELECT 3")),
    ("```sql\nSELECT 4", (SUBMIT, "SELECT 4")),
    ("EXECUTESELECT 1", (SUBMIT, "EXECUTESELECT 1")),  # no word boundary: not a prefix
    ("submitted SELECT 1", (SUBMIT, "submitted SELECT 1")),
    ("EXECUTE:", None),
    ("SUBMIT:   ", None),
    ("```sql\n```", None),
    ("```sql```\n", (SUBMIT, "sql")),  # no newline right after the tag: not a tag line
    ("``` sql \t\nSELECT 5```", (SUBMIT, "SELECT 5")),
    ("```\nSELECT 6\n```", (SUBMIT, "SELECT 6")),
    ("```SELECT (1)\n```", (SUBMIT, "SELECT (1)")),
    ("```" + " " * 1000 + "x", (SUBMIT, "x")),
    ("SELECT '```' || x FROM t", (SUBMIT, "' || x FROM t")),  # a fence is a fence
]


@pytest.mark.parametrize(("text", "expected"), ANSWERS)
def test_bird_parsing__answer_grammar(text, expected):
    action = decode_action(text)
    assert (None if action is None else (action.kind, action.sql)) == expected


@pytest.mark.parametrize(
    ("predicted", "gold", "match"),
    [
        ([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], True),  # order does not matter
        ([(1, "a"), (1, "a")], [(1, "a")], True),  # duplicates do not matter
        ([(1,)], [(1.0,)], True),  # 1 == 1.0, as in Python
        ([], [], True),
        ([("a", 1)], [(1, "a")], False),  # column order matters
        ([(1, "a")], [(1, "a", None)], False),  # extra column
        ([(0.1 + 0.2,)], [(0.3,)], False),  # exact float comparison, as BIRD
        ([(None,)], [], False),
        ([("A",)], [("a",)], False),
    ],
)
def test_bird_grading__rows_match_is_set_equality(predicted, gold, match):
    assert rows_match(predicted, gold) is match


# 1 MB adversarial answers: each used to cost up to minutes in the fence regex (the first:
# 9.8 s at 100k spaces). A generous bound that only a quadratic parser misses.
ADVERSARIAL = [
    "```" + " " * 1_000_000 + "x",
    "```" + " \t" * 500_000 + "(",
    "```" + "a" * 1_000_000,
    "```" * 333_333,
    "EXECUTE: " * 110_000,
    " " * 1_000_000 + "EXECUTEx",
    "```sql\n" + "SELECT 1 " * 110_000,
    "\n```".join(["x"] * 250_000),
]


def test_bird_parsing__adversarial_answers_parse_in_linear_time():
    start = time.perf_counter()
    for text in ADVERSARIAL:
        decode_action(text)
    assert time.perf_counter() - start < 2.0
    assert decode_action(ADVERSARIAL[0]) == (SUBMIT, "x")
    assert decode_action(ADVERSARIAL[4]) == (EXECUTE, "EXECUTE: " * 109_998 + "EXECUTE:")


@pytest.mark.parametrize(
    ("correct", "submission", "discount", "reward"),
    [
        (True, 1, 1.0, 1.0),
        (True, 3, 1.0, 1.0),
        (True, 1, 0.5, 1.0),
        (True, 2, 0.5, 0.5),
        (True, 5, 0.5, 0.0625),
        (False, 1, 0.5, 0.0),
    ],
)
def test_bird_grading__submission_reward_is_grl_step_discounted(
    correct, submission, discount, reward
):
    assert submission_reward(correct, submission, discount) == reward
