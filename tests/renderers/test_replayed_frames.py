"""Frames drawn by playing a record again are refused unless the replay is the recorded episode:
same seed, same observations, not only the same rewards (a wrong answer scores 0 on any
GSM8K problem, so rewards alone would accept another problem's pictures)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from agent_envs.adapters.engines import random_engine
from agent_envs.adapters.loop import collect_episodes
from agent_envs.renderers.episodes import replay_frames, with_replayed_frames
from agent_envs.renderers.frames import TextFrame

import agent_envs  # noqa: F401


@pytest.fixture(scope="module")
def gsm8k_record():
    (trajectory,) = collect_episodes("grl/GSM8K-v0", random_engine(0), [1])
    assert [step.reward for step in trajectory.steps] == [0.0]  # a wrong answer
    return trajectory.to_dict()


def test_replayed_frames__the_recorded_problem_is_drawn(gsm8k_record):
    episode = with_replayed_frames(gsm8k_record, gym.make("grl/GSM8K-v0"))
    frame = episode.turns[0].frame
    assert isinstance(frame, TextFrame)
    problem = frame.sections[0][1]
    assert problem and problem in gsm8k_record["steps"][0]["observation"]


def test_replayed_frames__another_seed_with_the_same_rewards_is_refused(gsm8k_record):
    other = {**gsm8k_record, "seed": gsm8k_record["seed"] + 1}
    with pytest.raises(ValueError, match="turn 1: the replay shows another observation"):
        with_replayed_frames(other, gym.make("grl/GSM8K-v0"))


def test_replayed_frames__a_record_without_a_seed_is_refused(gsm8k_record):
    with pytest.raises(ValueError, match="without a seed"):
        with_replayed_frames({**gsm8k_record, "seed": None}, gym.make("grl/GSM8K-v0"))


def test_replayed_frames__observations_are_checked_only_where_recorded(gsm8k_record):
    replies = [step["reply"] for step in gsm8k_record["steps"]]
    env = gym.make("grl/GSM8K-v0")
    seed = gsm8k_record["seed"]
    frames = replay_frames(env, replies, seed=seed, observations=[None])
    assert len(frames) == len(replies) + 1
    with pytest.raises(ValueError, match="another observation"):
        replay_frames(env, replies, seed=seed, observations=["Question: something else"])
