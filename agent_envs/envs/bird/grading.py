"""Execution accuracy, as BIRD's evaluator computes it, and the reward of a submission.

The evaluator reproduced is the one of BIRD's Mini-Dev release (github.com/bird-bench/mini_dev,
``evaluation/evaluation_ex.py``, run by ``evaluation/run_evaluation.sh``):
``execute_model`` calls ``evaluation_utils.execute_sql`` under
``func_timeout(meta_time_out)`` with ``meta_time_out = 30.0``; ``execute_sql`` runs the
predicted and the gold query on ``sqlite3.connect(db_path)`` and ``fetchall()``\\ s both (no
row cap), and ``calculate_ex`` scores 1 when ``set(predicted_res) == set(ground_truth_res)``,
else 0; an exception or the time-out scores 0. So row order and duplicate rows do not matter,
column order and values do (``1`` equals ``1.0``, as in Python), column names are ignored.
:func:`rows_match` is that comparison; the worker
(:func:`agent_envs.envs.bird.worker.same_row_set`) computes the same verdict while streaming
the predicted rows against the gold set, stopping at the first row the gold set lacks.

Where this env differs, deliberately:

* The gold query runs once (its set is kept by the worker) with its own 30 s; the predicted
  query gets the whole graded time limit (``submit_timeout``, 30 s by default). BIRD's 30 s
  covers both queries of one pair.
* A query other than one read-only ``SELECT``/``WITH``/``VALUES`` is refused (scores 0);
  BIRD's evaluator would run it on a writable connection.
* ``random()``/``randomblob()`` are seeded afresh for every query, so a query that uses them
  scores the same every time (``ORDER BY RANDOM()`` returns the same set, so it scores as in
  BIRD); text that is not valid UTF-8 is read with replacement characters (BIRD's
  ``fetchall`` would raise and score 0).
* Resources are bounded: the gold result may hold at most 64 MiB
  (:data:`~agent_envs.envs.bird.worker.GOLD_MAX_BYTES`), SQLite at most 64 MiB of heap, one
  value at most 1 MB, a ``LIKE`` pattern 1000 characters and a result 1000 columns
  (BIRD runs with SQLite's defaults); a query past one of them scores 0 with the reason. No
  gold query of the Mini-Dev sample comes close.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["BIRD_TIMEOUT", "Grade", "rows_match", "submission_reward"]

#: BIRD's ``meta_time_out``: seconds the evaluator gives a (predicted, gold) pair.
BIRD_TIMEOUT = 30.0


class Grade(NamedTuple):
    """Whether a submission is correct, and why not when it could not be compared."""

    correct: bool
    error: str | None = None


def rows_match(predicted: Sequence[tuple[Any, ...]], gold: Sequence[tuple[Any, ...]]) -> bool:
    """BIRD's ``calculate_ex``: the two results hold the same set of rows."""
    return set(predicted) == set(gold)


def submission_reward(correct: bool, submission: int, discount: float) -> float:
    """``discount ** (submission - 1)`` for a correct ``submission``-th submission, else 0.

    With ``discount=0.5`` this is GRL's step-discounted BIRD reward ``1 / 2**(k - 1)``.
    """
    return discount ** (submission - 1) if correct else 0.0
