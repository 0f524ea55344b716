"""PettingZoo envs: two-player TextArena games (AEC) and self-play on grl/* envs."""

from __future__ import annotations

import importlib.util
import warnings

import pytest

pytest.importorskip("pettingzoo")

from agent_envs.adapters.pettingzoo import (
    TextObservation,
    self_play_aec_env,
    self_play_parallel_env,
    textarena_aec_env,
)
from pettingzoo.test import api_test, parallel_api_test

needs_textarena = pytest.mark.skipif(
    importlib.util.find_spec("textarena") is None, reason="textarena is not installed"
)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@needs_textarena
@pytest.mark.parametrize("textarena_id", ["TicTacToe-v0", "ConnectFour-v0", "KuhnPoker-v0"])
def test_textarena_aec__passes_api_test(textarena_id):
    api_test(textarena_aec_env(textarena_id), num_cycles=200)


@needs_textarena
def test_textarena_aec__plain_str_observation_fails_api_test():
    """The trap: api_test compares an observation's dtype with Text.dtype ('<U'); a plain str
    has no dtype. TextObservation carries it."""
    env = textarena_aec_env("TicTacToe-v0")
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    assert isinstance(observation, TextObservation)
    assert observation.dtype == env.observation_space("player_0").dtype
    typed = env.observe
    env.observe = lambda agent: str(typed(agent))  # a plain str, no dtype
    with pytest.raises(AttributeError):
        api_test(env, num_cycles=10)


def _play(env, moves):
    for move in moves:
        env.step(move)


@needs_textarena
def test_textarena_aec__turn_comes_from_textarena_player_id():
    """Kuhn Poker's first round opens with player 1 (TextArena 0.7.4), not player 0."""
    env = textarena_aec_env("KuhnPoker-v0")
    env.reset(seed=0)
    assert env.agent_selection == "player_1"
    assert "Your available actions" in env.observe("player_1")
    env.step("[check]")
    assert env.agent_selection == "player_0"
    assert "[Player 1] [check]" in env.observe("player_0")


@needs_textarena
def test_textarena_aec__rejected_move_keeps_the_turn():
    env = textarena_aec_env("TicTacToe-v0")
    env.reset(seed=0)
    _play(env, ["[4]"])
    assert env.agent_selection == "player_1"
    env.step("[4]")  # occupied
    assert env.agent_selection == "player_1"
    assert env.infos["player_1"]["action_valid"] is False
    assert not any(env.terminations.values())
    env.step(12345)  # not a string: sent as "", the second rejected move ends the game
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}


@needs_textarena
def test_textarena_aec__close_rewards_then_dead_steps_remove_agents():
    env = textarena_aec_env("TicTacToe-v0")
    env.reset(seed=0)
    _play(env, ["[0]", "[3]", "[1]", "[4]"])
    assert sum(env._cumulative_rewards.values()) == 0
    env.step("[2]")  # player_0 completes the top row
    assert all(env.terminations.values())
    assert env._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}
    _, reward, terminated, _, info = env.last()
    assert terminated and reward == env._cumulative_rewards[env.agent_selection]
    assert info["end_reason"]
    with pytest.raises(ValueError):
        env.step("[5]")  # a finished agent only takes None
    env.step(None)
    env.step(None)
    assert env.agents == []


@needs_textarena
def test_textarena_aec__max_moves_truncates():
    env = textarena_aec_env("TicTacToe-v0", max_moves=2)
    env.reset(seed=0)
    _play(env, ["[0]", "[3]"])
    assert all(env.truncations.values()) and not any(env.terminations.values())


@needs_textarena
def test_textarena_aec__bad_configuration_names_the_argument():
    with pytest.raises(ValueError, match="max_moves"):
        textarena_aec_env("TicTacToe-v0", max_moves=0)
    with pytest.raises(ValueError, match="textarena_id"):
        textarena_aec_env("Hangman-v0")


def test_self_play__passes_api_tests():
    api_test(self_play_aec_env("grl/Sokoban-v0"), num_cycles=100)
    parallel_api_test(self_play_parallel_env("grl/Sokoban-v0"), num_cycles=100)


def test_self_play__same_puzzle_and_each_agent_its_own_episode():
    env = self_play_aec_env("grl/Sokoban-v0")
    env.reset(seed=4)
    assert env.observe("player_0") == env.observe("player_1")
    oracle = env.envs["player_0"].unwrapped
    while not env.terminations["player_0"]:
        assert env.agent_selection == "player_0"
        env.step("<answer>" + " || ".join(oracle.oracle_actions()) + "</answer>")
        if not env.terminations["player_0"]:
            env.step("no idea")  # player_1
    assert env.infos["player_0"]["success"] is True
    # the round ends with player_1; then the finished agent steps with None and leaves
    assert env.agent_selection == "player_1"
    env.step("no idea")
    assert env.agent_selection == "player_0"
    env.step(None)
    assert env.agents == ["player_1"] and env.agent_selection == "player_1"
    env.step("still no idea")
    assert env.agent_selection == "player_1"
    assert env.infos["player_1"]["success"] is False
