"""Registry-wide contract: every grl/* id is made, vectorised and checked."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import pytest

import agent_envs
from agent_envs.testing import check_text_env
from agent_envs.testing.checker import check_vision_env
from agent_envs.vector import TextVectorEnv

GRL_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("grl/"))


def test_registry__every_preset_is_registered():
    assert sorted(agent_envs.PRESETS) == GRL_IDS
    assert "grl/Sokoban-v0" in GRL_IDS


@pytest.mark.parametrize("env_id", GRL_IDS)
def test_registry__check_text_env(env_id):
    if "-vision-" in env_id:
        check_vision_env(gym.make(env_id))
    else:
        check_text_env(gym.make(env_id))


@pytest.mark.parametrize("env_id", GRL_IDS)
def test_registry__the_env_owns_its_turn_budget(env_id):
    # No registered max_episode_steps: gymnasium.make would wrap a TimeLimit that ignores a
    # max_turns passed to make (tests/core/test_turn_budget.py plays the episodes).
    spec = gym.spec(env_id)
    assert spec.max_episode_steps is None
    assert isinstance(spec.kwargs["max_turns"], int)
    assert gym.make(env_id, max_turns=3).unwrapped.max_turns == 3


@pytest.mark.parametrize("env_id", GRL_IDS)
def test_registry__make_vec_returns_the_text_vector_env(env_id):
    envs = gym.make_vec(env_id, num_envs=4, group_size=2)
    assert isinstance(envs.unwrapped, TextVectorEnv)
    observations, info = envs.reset(seed=0)
    if isinstance(observations[0], dict):  # vision ids: compare the text and the picture
        observations = [(o["text"], o["image"].tobytes()) for o in observations]
    assert observations[0] == observations[1] and observations[2] == observations[3]
    seeds = info["episode_seed"]
    assert seeds[0] == seeds[1] != seeds[2] == seeds[3]
    envs.close()


def test_registry__make_vec_takes_max_turns_and_rejects_disagreeing_budgets():
    envs = gym.make_vec("grl/Sokoban-v0", num_envs=2, max_turns=9)
    assert envs.call("max_turns") == (9, 9)
    envs.close()
    with pytest.raises(ValueError, match="max_turns=9 and max_episode_steps=8"):
        gym.make_vec("grl/Sokoban-v0", num_envs=2, max_turns=9, max_episode_steps=8)


def test_registry__import_free_make_and_no_heavy_imports():
    code = (
        "import sys, gymnasium\n"
        "env = gymnasium.make('agent_envs:grl/Sokoban-v0')\n"
        "env.reset(seed=0)\n"
        "heavy = ('torch', 'transformers', 'pygame', 'vllm', 'trl', 'httpx')\n"
        "heavy = [name for name in heavy if name in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(type(env.unwrapped).__name__)\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert output.stdout.strip() == "SokobanEnv"


def test_registry__import_registers_without_importing_env_modules():
    code = "import sys, agent_envs; print('agent_envs.envs.sokoban.env' in sys.modules)"
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert output.stdout.strip() == "False"


def test_registry__readme_lists_every_id():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    listed = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `grl/")}
    assert listed == set(GRL_IDS)
