"""The replies of ``benchmarks/gsm8k_graders.py`` as a test table: the project's readings.

The benchmark sets each reply beside lm-evaluation-harness's and math-verify's verdicts in
``benchmarks/results/gsm8k_graders.md``; here only the project's readings are held."""

from __future__ import annotations

from fractions import Fraction

import pytest
from agent_envs.benchmarks.gsm8k_graders import NAN, ROWS, project_reading

from agent_envs.envs.gsm8k import GSM8KEnv


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}-{row.category}" for i, row in enumerate(ROWS)])
def test_gsm8k_grader_table__project_readings(row):
    assert project_reading(row.reply, "strict") == row.strict
    assert project_reading(row.reply, "flexible") == row.flexible


def test_gsm8k_grader_table__is_large_and_pays_no_hedge():
    assert len(ROWS) >= 80
    hedges = [row for row in ROWS if row.category in ("hedge", "expression")]
    assert len(hedges) >= 15
    for row in hedges:
        for reading in (row.strict, row.flexible):
            assert reading is None or reading == NAN or Fraction(reading) != Fraction(row.gold)


@pytest.mark.parametrize("mode", ["strict", "flexible"])
def test_gsm8k_grader_table__env_rewards_follow_the_readings(mode):
    for row in ROWS:
        env = GSM8KEnv(answer_mode=mode)
        env.reset(seed=0, options={"item": {"question": "Q?", "answer": f"#### {row.gold}"}})
        reward = env.step(row.reply)[1]
        reading = getattr(row, mode)
        if reading is None:
            expected = env.format_penalty
        elif reading == NAN:
            expected = env.invalid_action_penalty
        else:
            expected = 1.0 if Fraction(reading) == Fraction(row.gold) else 0.0
        assert reward == pytest.approx(expected), (row.reply, mode)
