"""The TextEnv turn semantics, on a toy counter env."""

from __future__ import annotations

import copy
import pickle

import pytest

from agent_envs.core.env import COMMON_INFO_KEYS
from tests.core.toy_env import CounterEnv


def test_text_env__reset_info_has_every_common_key():
    env = CounterEnv()
    observation, info = env.reset(seed=7)
    assert observation == "count=0"
    assert set(COMMON_INFO_KEYS) | {"count"} == set(info)
    assert info["episode_seed"] == 7 and info["turn"] == 0 and not info["success"]


def test_text_env__actions_execute_in_order_and_reward_adds_up():
    env = CounterEnv()
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("<answer>inc || inc</answer>")
    assert observation == "count=2"
    assert reward == 0.0 and not terminated and not truncated
    assert info["parsed_actions"] == ["inc", "inc"] and info["num_actions"] == 2
    assert info["action_valid"] and info["format_ok"] and info["action_effective"]


def test_text_env__task_end_stops_the_turn():
    env = CounterEnv(goal=1)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("<answer>inc || inc || inc</answer>")
    assert terminated and not truncated and info["success"]
    assert info["num_actions"] == 1 and reward == 1.0


def test_text_env__unreadable_answer_earns_format_penalty_and_executes_nothing():
    env = CounterEnv(format_penalty=-0.25)
    env.reset(seed=0)
    observation, reward, _, _, info = env.step("inc")
    assert reward == -0.25
    assert not info["format_ok"] and not info["action_valid"] and info["num_actions"] == 0
    assert observation.startswith("Invalid answer: no <answer>") and observation.endswith("count=0")


def test_text_env__unknown_action_stops_the_turn_and_is_penalised_once():
    env = CounterEnv()
    env.reset(seed=0)
    observation, reward, _, _, info = env.step("<answer>inc || jump || inc</answer>")
    assert info["format_ok"] and not info["action_valid"]
    assert info["num_actions"] == 1 and reward == -0.5
    assert observation.endswith("count=1") and "Invalid action 2 of 3: unknown" in observation


def test_text_env__illegal_action_counts_and_earns_its_reward():
    env = CounterEnv(max_actions_per_episode=10)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("<answer>dec || inc</answer>")
    assert info["num_actions"] == 1 and not info["action_valid"] and not info["action_effective"]
    assert reward == -1.0 + -0.5
    assert env._actions_taken == 1


def test_text_env__action_budget_drops_extra_actions_and_truncates():
    env = CounterEnv(goal=10, max_turns=5, max_actions_per_episode=3)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step("<answer>inc || inc</answer>")
    assert not truncated
    _, _, terminated, truncated, info = env.step("<answer>inc || inc || inc</answer>")
    assert info["num_actions"] == 1 and truncated and not terminated
    assert info["truncation_reason"] == "action_budget"
    assert env.count == 3


def test_text_env__max_turns_truncates():
    env = CounterEnv(goal=10, max_turns=2)
    env.reset(seed=0)
    assert env.step("<answer>wait</answer>")[3] is False
    _, _, terminated, truncated, info = env.step("<answer>wait</answer>")
    assert truncated and not terminated and info["truncation_reason"] == "max_turns"
    assert info["turn"] == 2


def test_text_env__max_actions_per_turn_keeps_the_first_actions():
    env = CounterEnv(goal=10, max_actions_per_turn=2)
    env.reset(seed=0)
    _, _, _, _, info = env.step("<answer>inc || inc || inc</answer>")
    assert info["parsed_actions"] == ["inc", "inc"] and env.count == 2


def test_text_env__step_after_the_end_executes_nothing():
    env = CounterEnv(goal=1)
    env.reset(seed=0)
    env.step("<answer>inc</answer>")
    _observation, reward, terminated, _, info = env.step("<answer>dec</answer>")
    assert terminated and reward == 0.0 and info["num_actions"] == 0 and env.count == 1


def test_text_env__reset_without_seed_reports_a_seed_that_reproduces_it():
    env = CounterEnv(start_high=1000)
    env.reset(seed=3)
    observation, info = env.reset()
    replay = CounterEnv(start_high=1000)
    assert replay.reset(seed=info["episode_seed"])[0] == observation


def test_text_env__messages_and_window():
    env = CounterEnv(goal=10)
    env.reset(seed=0)
    env.step("<answer>inc</answer>")
    env.step("<answer>inc</answer>")
    messages = env.messages()
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert messages[0]["content"] == env.instructions
    assert [m["content"] for m in messages[1:]] == [
        "count=0", "<answer>inc</answer>", "count=1", "<answer>inc</answer>", "count=2",
    ]  # fmt: skip
    assert env.messages(window=1) == [messages[0], *messages[-3:]]
    assert env.messages(window=1, keep_first_observation=True) == [
        messages[0], messages[1], *messages[-3:],
    ]  # fmt: skip
    assert env.messages(window=2, keep_first_observation=True) == messages
    with pytest.raises(ValueError, match="window"):
        env.messages(window=0)


def test_text_env__pickle_and_deepcopy_keep_a_mid_episode_state():
    env = CounterEnv(goal=10)
    env.reset(seed=0)
    env.step("<answer>inc</answer>")
    for clone in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert clone.count == 1 and clone.turn == 1 and clone.messages() == env.messages()
        clone.step("<answer>inc</answer>")
        assert env.count == 1


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"max_turns": 0}, "max_turns"), ({"max_turns": "6"}, "max_turns"),
     ({"max_actions_per_turn": -1}, "max_actions_per_turn"),
     ({"max_actions_per_episode": 0}, "max_actions_per_episode"),
     ({"format_penalty": "x"}, "format_penalty"),
     ({"render_mode": "rgb_array"}, "render_mode")],
)  # fmt: skip
def test_text_env__bad_configuration_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        CounterEnv(**kwargs)


def test_check_text_env__passes_the_toy_env():
    from agent_envs.testing import check_text_env

    check_text_env(CounterEnv())


def test_text_env__unknown_reset_options_name_themselves():
    env = CounterEnv()
    expected = r"unknown reset options \['levle'\]; CounterEnv accepts \[\]"
    with pytest.raises(ValueError, match=expected):
        env.reset(seed=0, options={"levle": 1})
