"""Execution accuracy, as BIRD defines it, and the reward of a submission (pure functions).

BIRD's evaluator runs the predicted and the gold query on the same database and scores 1
when ``set(predicted_rows) == set(gold_rows)``: row order and duplicate rows do not matter,
column order and values do (``1`` equals ``1.0``, as in Python), column names are ignored.
A query that fails or runs out of time scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from agent_envs.envs.bird.types import QueryResult

__all__ = ["Grade", "grade", "rows_match", "submission_reward"]


class Grade(NamedTuple):
    """Whether a submission is correct, and why not when it is not."""

    correct: bool
    error: str | None = None


def rows_match(predicted: Sequence[tuple[Any, ...]], gold: Sequence[tuple[Any, ...]]) -> bool:
    """BIRD's comparison: the two results hold the same set of rows."""
    return set(predicted) == set(gold)


def grade(predicted: QueryResult, gold: QueryResult) -> Grade:
    """Grade a submitted query's result against the gold query's result."""
    if predicted.rows is None:
        return Grade(False, predicted.error)
    if not predicted.complete:
        return Grade(False, "the result is larger than the row or byte cap")
    if gold.rows is None or not gold.complete:
        reason = gold.error if gold.rows is None else "its result is larger than the caps"
        return Grade(False, f"the reference query could not be graded: {reason}")
    return Grade(rows_match(predicted.rows, gold.rows))


def submission_reward(correct: bool, submission: int, discount: float) -> float:
    """``discount ** (submission - 1)`` for a correct ``submission``-th submission, else 0.

    With ``discount=0.5`` this is GRL's step-discounted BIRD reward ``1 / 2**(k - 1)``.
    """
    return discount ** (submission - 1) if correct else 0.0
