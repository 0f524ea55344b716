"""The answer grammar (text → action) and BIRD's grading (pure functions)."""

from __future__ import annotations

import pytest

from agent_envs.envs.bird.grading import grade, rows_match, submission_reward
from agent_envs.envs.bird.parsing import decode_action
from agent_envs.envs.bird.types import QueryKind, QueryResult

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
]


@pytest.mark.parametrize(("text", "expected"), ANSWERS)
def test_bird_parsing__answer_grammar(text, expected):
    action = decode_action(text)
    assert (None if action is None else (action.kind, action.sql)) == expected


def _result(rows, *, error=None, complete=True):
    return QueryResult(rows, ("c",) * (len(rows[0]) if rows else 1), error, False, complete)


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


def test_bird_grading__grade_reports_why_a_submission_failed():
    gold = _result([(1,)])
    assert grade(_result([(1,)]), gold) == (True, None)
    assert grade(_result([(2,)]), gold) == (False, None)
    failed = QueryResult(None, (), "no such column: x")
    assert grade(failed, gold) == (False, "no such column: x")
    timed_out = QueryResult(None, (), "stopped at the 5 s time limit", True)
    assert grade(timed_out, gold) == (False, "stopped at the 5 s time limit")
    assert grade(_result([(1,)], complete=False), gold).error.startswith("the result is larger")
    broken_gold = QueryResult(None, (), "no such table: t")
    assert grade(_result([(1,)]), broken_gold) == (
        False,
        "the reference query could not be graded: no such table: t",
    )


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
