"""One turn budget: ``max_turns`` alone sets it in ``gymnasium.make`` and ``make_vec`` alike."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import agent_envs
from agent_envs.core.env import TextEnv

GRL_IDS = sorted(agent_envs.PRESETS)
NO_ANSWER = "I am not sure."  # unreadable: executes nothing, spends no action budget


def _expected_end(env: TextEnv) -> tuple[bool, bool, str | None]:
    """(terminated, truncated, truncation_reason) of an episode that runs out of turns."""
    return (True, False, None) if env.last_turn_terminates else (False, True, "max_turns")


@pytest.mark.parametrize("env_id", GRL_IDS)
def test_turn_budget__make_with_max_turns_alone_plays_that_many_turns(env_id):
    budget = gym.spec(env_id).kwargs["max_turns"] + 2  # past the preset's budget
    env = gym.make(env_id, max_turns=budget)
    env.reset(seed=0)
    ends = []
    for turn in range(1, budget + 1):
        _, _, terminated, truncated, info = env.step(NO_ANSWER)
        if terminated or truncated:
            ends.append((turn, terminated, truncated, info["truncation_reason"]))
            break
    assert ends == [(budget, *_expected_end(env.unwrapped))]
    assert env.unwrapped.max_turns == budget
    assert env.spec.max_episode_steps in (None, budget)
    env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("env_id", ["grl/Sokoban-v0", "grl/GSM8K-5turn-v0"])
def test_turn_budget__make_vec_with_max_turns_alone_plays_that_many_turns(env_id, mode):
    budget = gym.spec(env_id).kwargs["max_turns"] + 2
    envs = gym.make_vec(env_id, num_envs=2, max_turns=budget, mode=mode, autoreset_mode="disabled")
    envs.reset(seed=0)
    terminated, truncated, reasons = _expected_end(envs.call("unwrapped")[0])
    for turn in range(1, budget + 1):
        _, _, terminations, truncations, infos = envs.step([NO_ANSWER] * 2)
        last = turn == budget
        assert terminations.tolist() == [last and terminated] * 2, turn
        assert truncations.tolist() == [last and truncated] * 2, turn
    assert infos["truncation_reason"].tolist() == [reasons] * 2
    assert envs.call("max_turns") == (budget, budget)
    envs.close()


def test_turn_budget__make_and_make_vec_agree_turn_by_turn():
    env = gym.make("grl/Sokoban-v0", max_turns=10)
    envs = gym.make_vec("grl/Sokoban-v0", num_envs=1, max_turns=10, autoreset_mode="disabled")
    observation, _ = env.reset(seed=7)
    observations, _ = envs.reset(seed=[7])
    assert observations == (observation,)
    replies = ["<answer>Up</answer>", NO_ANSWER] * 5
    for reply in replies:
        single = env.step(reply)
        batch = envs.step([reply])
        assert batch[0] == (single[0],)
        assert batch[1:4] == (np.array([single[1]]), np.array([single[2]]), np.array([single[3]]))
        assert batch[4]["truncation_reason"][0] == single[4]["truncation_reason"]
    assert single[3] and single[4]["truncation_reason"] == "max_turns" and single[4]["turn"] == 10
    envs.close()


def test_turn_budget__make_vec_reads_max_episode_steps_as_max_turns():
    from agent_envs.envs.sokoban import make_vector_env

    envs = make_vector_env(num_envs=1, max_episode_steps=3)
    assert envs.call("max_turns") == (3,)
    envs.close()
    envs = gym.make_vec("grl/Sokoban-v0", num_envs=1, max_turns=3, max_episode_steps=3)
    assert envs.call("max_turns") == (3,)
    envs.close()


def test_turn_budget__make_vec_refuses_disagreeing_max_episode_steps():
    with pytest.raises(ValueError, match=r"max_turns=6 and max_episode_steps=9 .*max_turns=9"):
        gym.make_vec("grl/Sokoban-v0", num_envs=2, max_episode_steps=9)
    with pytest.raises(ValueError, match="max_episode_steps must be a positive int"):
        gym.make_vec("grl/Sokoban-v0", num_envs=2, max_episode_steps="9")


def test_turn_budget__instructions_state_the_budget_the_episode_keeps():
    env = gym.make("grl/Sokoban-v0", max_turns=10)
    assert "You have 10 turns" in env.unwrapped.instructions


def test_turn_budget__the_action_budget_ends_sokoban_before_max_turns_as_the_readme_says():
    """README: ``grl/Sokoban-v0`` with ``max_turns=10`` and one move a turn ends after turn 10
    on its 10-action budget (``"action_budget"``), not on ``max_turns``; with no actions
    played it runs out of turns (``"max_turns"``)."""
    env = gym.make("grl/Sokoban-v0", max_turns=10)
    for reply, reason in (("<answer>Left</answer>", "action_budget"), (NO_ANSWER, "max_turns")):
        env.reset(seed=0)
        ends = []
        for turn in range(1, 11):
            *_, terminated, truncated, info = env.step(reply)
            if terminated or truncated:
                ends.append((turn, terminated, info["truncation_reason"]))
                break
        assert ends == [(10, False, reason)]
    env.close()
