"""The image+text ids (``grl/*-vision-v0``): registered from their text ids, passing the
image-aware contract check, vectorised with pictures in every observation."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import agent_envs  # noqa: F401
from agent_envs.core.vision import VisionEnv
from agent_envs.registration import PRESETS, VISION_OF
from agent_envs.testing.checker import check_vision_env

VISION_IDS = sorted(env_id for env_id in gym.registry if "-vision-" in env_id)

#: (height, width) of each id's frames, as VisionEnv's docstring states for the first three.
SIZES = {
    "grl/Sokoban-vision-v0": (484, 448),
    "grl/Sokoban-8x8-vision-v0": (580, 448),
    "grl/Tetris-vision-v0": (648, 448),
    "grl/Tetris-4x4-cell-vision-v0": (360, 448),
    "grl/Blocksworld-vision-v0": (334, 544),
}


def test_vision_ids__the_grid_games_have_vision_ids():
    assert VISION_IDS == sorted(VISION_OF) == sorted(SIZES)
    assert {"grl/Sokoban-vision-v0", "grl/Tetris-vision-v0"} <= set(VISION_IDS)


@pytest.mark.parametrize("env_id", VISION_IDS)
def test_vision_ids__settings_are_the_text_ids(env_id):
    text_entry, _, text_kwargs = PRESETS[VISION_OF[env_id]]
    spec = gym.spec(env_id)
    assert spec.kwargs == {"base": text_entry, **text_kwargs}
    env = gym.make(env_id)
    text_env = gym.make(VISION_OF[env_id])
    observation, info = env.reset(seed=11)
    text, text_info = text_env.reset(seed=11)
    assert observation["text"] == text and info == text_info
    assert env.unwrapped.instructions == text_env.unwrapped.instructions
    assert observation["image"].shape == (*SIZES[env_id], 3)


@pytest.mark.parametrize("env_id", VISION_IDS)
def test_vision_ids__check_vision_env(env_id):
    check_vision_env(gym.make(env_id))


def test_vision_ids__sizes_in_the_docstring_are_the_frames():
    doc = " ".join(VisionEnv.__doc__.split())
    assert "Sokoban 6x6 484 x 448, Tetris 10x20 648 x 448, Blocksworld 3 blocks 334 x 544" in doc


def test_vision_ids__make_vec_groups_share_pictures():
    envs = gym.make_vec("grl/Sokoban-vision-v0", num_envs=4, group_size=2)
    observations, _ = envs.reset(seed=0)
    assert np.array_equal(observations[0]["image"], observations[1]["image"])
    assert not np.array_equal(observations[1]["image"], observations[2]["image"])
    observations, *_ = envs.step(["<answer>Up</answer>"] * 4)
    assert all(o["image"].shape == (484, 448, 3) for o in observations)
    envs.close()


def test_vision_ids__bad_base_is_named():
    with pytest.raises(ValueError, match="base"):
        VisionEnv("SokobanEnv")


class _ShrinkingPicture(VisionEnv):
    """A broken vision env: its picture loses a row after the first step."""

    def _observe(self, text):
        observation = super()._observe(text)
        if self.env.unwrapped.turn:
            observation["image"] = observation["image"][1:]
        return observation


def test_vision_ids__the_checker_catches_a_picture_of_the_wrong_size():
    env = _ShrinkingPicture(PRESETS["grl/Sokoban-v0"][0], **PRESETS["grl/Sokoban-v0"][2])
    with pytest.raises(AssertionError, match="image shape"):
        check_vision_env(env)
