"""Trajectory/Step records: derived token fields and the JSONL round trip."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from agent_envs.core.records import Step, Trajectory, json_safe, read_jsonl, write_jsonl


def _trajectory() -> Trajectory:
    info = {
        "success": np.bool_(True),
        "turn": np.int64(2),
        "score": np.float32(0.5),
        "board": np.array([[1, 2], [3, 4]]),
        "parsed_actions": ("Up", "Left"),
    }
    return Trajectory(
        env_id="grl/Sokoban-v0",
        seed=7,
        group_id=1,
        steps=[
            Step("obs0", "<answer>Up</answer>", ["Up"], -0.1, {"turn": 1}, "aa"),
            Step("obs1", "<answer>Left</answer>", ["Left"], 10.9, info, "bb"),
        ],
        messages=[{"role": "system", "content": "rules"}, {"role": "user", "content": "obs0"}],
        final_observation="obs2",
        terminated=True,
        success=True,
        agent="oracle",
        prompt_ids=[1, 2, 3],
        turn_completion_ids=[[4, 5], [6]],
        turn_logprobs=[[-0.5, -0.25], [-1.0]],
        turn_env_ids=[[7, 8, 9], []],
    )


def test_records__derived_token_fields():
    trajectory = _trajectory()
    assert trajectory.completion_ids == [4, 5, 7, 8, 9, 6]
    assert trajectory.env_mask == [1, 1, 0, 0, 0, 1]
    assert trajectory.completion_logprobs == [-0.5, -0.25, 0.0, 0.0, 0.0, -1.0]
    assert trajectory.episode_return == pytest.approx(10.8)
    assert trajectory.num_turns == 2


def test_records__jsonl_round_trip_with_numpy_values(tmp_path):
    path = tmp_path / "episodes.jsonl"
    assert write_jsonl([_trajectory(), _trajectory()], path) == 2
    back = list(read_jsonl(path))
    assert len(back) == 2
    step = back[0].steps[1]
    assert step.info == {
        "success": True, "turn": 2, "score": 0.5, "board": [[1, 2], [3, 4]],
        "parsed_actions": ["Up", "Left"],
    }  # fmt: skip
    assert back[0].to_dict() == json.loads(json.dumps(_trajectory().to_dict()))
    assert back[0].env_mask == [1, 1, 0, 0, 0, 1]
    line = path.read_text().splitlines()[0]
    assert json.loads(line)["episode_return"] == pytest.approx(10.8)


def test_records__text_only_trajectory_has_no_token_fields():
    trajectory = Trajectory(env_id="grl/GSM8K-v0", seed=None)
    handle = io.StringIO()
    write_jsonl([trajectory], handle)
    data = json.loads(handle.getvalue())
    assert "env_mask" not in data and data["prompt_ids"] is None
    assert next(read_jsonl(io.StringIO(handle.getvalue()))) == trajectory
    with pytest.raises(ValueError, match="no token fields"):
        trajectory.env_mask  # noqa: B018


def test_records__json_safe_table():
    assert json_safe({1: np.float64(2.5), "t": (np.int8(1),), "b": b"x"}) == {
        "1": 2.5, "t": [1], "b": "x",
    }  # fmt: skip
