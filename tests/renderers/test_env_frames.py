"""Every registered env renders in every mode, at one size per episode."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
from agent_envs.renderers import GridFrame, TextFrame
from agent_envs.renderers.ansi import to_ansi
from agent_envs.renderers.raster import draw, frame_size

import agent_envs  # noqa: F401  (registers the grl/* ids)
from agent_envs.core.policies import format_answer

IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("grl/"))


def test_env_frames__every_env_offers_the_three_render_modes():
    for env_id in IDS:
        env = gym.make(env_id)
        assert env.metadata["render_modes"] == ["ansi", "rgb_array", "human"], env_id
        assert env.metadata["render_fps"] == 4
        env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_env_frames__rgb_array_keeps_its_size_through_an_episode(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    base = env.unwrapped
    frame = base.frame()
    assert isinstance(frame, (GridFrame, TextFrame))
    size = frame_size(frame)
    rng = np.random.default_rng(0)
    for _ in range(4):
        image = env.render()
        assert isinstance(image, np.ndarray) and image.dtype == np.uint8
        assert image.shape == (*size, 3)
        reply = format_answer(base.random_actions(rng), base.answer_format)
        _, _, terminated, truncated, _ = env.step(reply)
        if terminated or truncated:
            break
    assert env.render().shape == (*size, 3)
    env.close()


@pytest.mark.parametrize("env_id", ["grl/Sokoban-v0", "grl/Tetris-v0", "grl/GSM8K-v0"])
def test_env_frames__ansi_is_the_observation_and_human_returns_none(env_id):
    env = gym.make(env_id, render_mode="ansi")
    observation, _ = env.reset(seed=0)
    assert env.render() == observation
    coloured = to_ansi(env.unwrapped.frame())
    assert coloured.isascii() and "\x1b[" in coloured
    env.close()
    human = gym.make(env_id, render_mode="human")
    human.reset(seed=0)
    assert human.render() is None
    human.close()


def test_env_frames__copies_render_without_sharing_a_window():
    env = gym.make("grl/Sokoban-v0", render_mode="human").unwrapped
    env.reset(seed=1)
    env.render()
    for clone in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert clone._renderer._window is None
        clone.render_mode = "rgb_array"
        assert np.array_equal(clone.render(), draw(env.frame()))
    env.close()
