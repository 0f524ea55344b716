"""benchmarks/vector_overhead.py on a few envs: the same work in the bare loop and make_vec,
the reset split, and the report it writes."""

from __future__ import annotations

import math

import pytest
from agent_envs.benchmarks.vector_overhead import Args, main, measure


@pytest.fixture(scope="module")
def result():
    return measure(Args(num_envs=6, steps=8, rounds=3, output=""))


def test_vector_overhead__every_round_has_the_resets_it_played(result):
    for round_ in result["rounds"]:
        # episodes of grl/Sokoban-v0 last at most 6 turns, so 8 steps of 6 envs reset some
        assert 0 < round_["resets_per_step"] <= 1
        assert round_["reset_us"] > 0
        assert math.isclose(
            round_["reset_share_us"], round_["reset_us"] * round_["resets_per_step"]
        )
        assert math.isclose(round_["overhead_us"], round_["ours_us"] - round_["bare_us"])


def test_vector_overhead__report_names_the_reset_floor(tmp_path):
    output = tmp_path / "vector.md"
    text = main(Args(num_envs=4, steps=7, rounds=2, output=str(output)))
    assert output.read_text(encoding="utf-8") == text
    assert "| one `reset` alone (a new level), µs |" in text
    assert "The resets alone take " in text
    assert "Targets: overhead " in text
