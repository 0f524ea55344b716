"""The WebShop Gymnasium shell: presets, episodes, invalid actions, goals, data sources."""

from __future__ import annotations

import copy
import pickle
import re

import numpy as np
import pytest

from agent_envs.core.env import COMMON_INFO_KEYS
from agent_envs.core.policies import OraclePolicy, RandomPolicy
from agent_envs.envs.webshop import WebShopEnv, make_vector_env
from agent_envs.testing import check_text_env

from .conftest import DATA, needs_data

# The presets reported for agent_envs/registration.py: the built-in catalog (no data needed),
# WebShop's text observations and a readable variant; 15 turns of one action.
PRESETS = {
    "grl/WebShop-v0": dict(observation_mode="text", goals="synthetic", split="train",
                           max_turns=15),
    "grl/WebShop-readable-v0": dict(observation_mode="readable", goals="synthetic",
                                    split="train", max_turns=15),
}  # fmt: skip


@pytest.fixture(scope="module")
def env() -> WebShopEnv:
    return WebShopEnv()


def _play(env: WebShopEnv, policy, observation: str, limit: int = 30):
    total, info, terminated, truncated = 0.0, {}, False, False
    for _ in range(limit):
        observation, reward, terminated, truncated, info = env.step(policy(env, observation))
        total += reward
        if terminated or truncated:
            break
    return total, info, terminated, truncated


@pytest.mark.parametrize("kwargs", list(PRESETS.values()), ids=list(PRESETS))
def test_webshop_env__check_text_env_passes_for_every_preset(kwargs):
    check_text_env(WebShopEnv(**kwargs))


@needs_data
def test_webshop_env__check_text_env_passes_on_webshop_1k_test_goals():
    check_text_env(WebShopEnv(data_path=str(DATA), split="test"))


def test_webshop_env__instructions_name_the_builtin_catalog_and_the_answer_format(env):
    text = env.instructions
    assert "The shop is the built-in generated catalog of 3000 products (no WebShop data" in text
    assert "search[keywords]" in text and "click[value]" in text and "15 turns" in text
    assert text.endswith("give your answer as <answer>search[gluten free snacks]</answer>.")
    assert env.source == "generated" and env.catalog_name is None


def test_webshop_env__docstring_lists_every_extra_info_key(env):
    _, info = env.reset(seed=0)
    assert set(info) == set(COMMON_INFO_KEYS) | set(env.extra_info_keys)
    for key in env.extra_info_keys:
        assert f"``{key}``" in WebShopEnv.__doc__


def test_webshop_env__oracle_buys_the_target_with_reward_one(env):
    for index in range(12):
        observation, info = env.reset(seed=index, options={"index": index})
        total, info, terminated, truncated = _play(env, OraclePolicy(), observation)
        assert terminated and not truncated and info["success"] and total == 1.0
        assert info["page"] == "done" and info["purchased_asin"] == info["target_asin"]
        assert info["reward_parts"]["r_type"] == 1.0 and env.oracle_actions() == []


def test_webshop_env__episode_walkthrough_with_invalid_actions(env):
    observation, info = env.reset(seed=0, options={"index": 3})
    assert info["page"] == "search" and info["goal_id"] == "synthetic/train/3"
    assert observation.startswith("WebShop [SEP] Instruction: [SEP] ")
    assert observation.endswith("\nAvailable actions: search[<keywords>]")
    steps = [
        ("<answer>click[Buy Now]</answer>", "Invalid action: the search page has nothing to "
         "click; use search[keywords].", False),
        ("no tags at all", "Invalid answer: no <answer>...</answer> found.", False),
        ("<answer>buy it</answer>", "Invalid action: write one action: search[keywords] or "
         "click[value].", False),
    ]  # fmt: skip
    for reply, feedback, valid in steps:
        observation, reward, terminated, truncated, info = env.step(reply)
        assert observation.split("\n")[0] == feedback
        assert info["action_valid"] is valid and info["page"] == "search"
        assert not (terminated or truncated)
    assert reward == pytest.approx(0.0)  # invalid actions cost invalid_action_penalty = 0
    keywords = env.oracle_actions()[0]
    observation, reward, _, _, info = env.step(f"<think>hmm</think><answer>{keywords}</answer>")
    assert info["page"] == "results" and info["action_valid"] and info["action_effective"]
    assert "Page 1 (Total results: 50)" in observation
    observation, *_, info = env.step("<answer>search[again]</answer>")
    assert observation.startswith("Invalid action: search is only available on the search page")
    assert info["page"] == "results" and not info["action_valid"]
    first = info["available_actions"][2]  # after Back to Search, Next >
    observation, *_, info = env.step(f"<answer>{first.lower()}</answer>")
    assert info["page"] == "item" and "Buy Now" in observation
    _, *_, info = env.step("<answer>click[Description]</answer>")
    assert info["page"] == "description"
    _, *_, info = env.step("<answer>click[< Prev]</answer>")
    assert info["page"] == "item"
    _, reward, terminated, _, info = env.step("<answer>click[buy now]</answer>")
    assert terminated and info["page"] == "done" and 0.0 <= reward <= 1.0
    assert info["reward_parts"]["reward"] == reward and info["available_actions"] == []


def test_webshop_env__readable_style_marks_buttons_and_selected_options():
    env = WebShopEnv(observation_mode="readable")
    goal = next(g for g in env.goal_list if len(g["goal_options"]) == 2)
    observation, _ = env.reset(seed=0, options={"item": goal})
    while env.page.kind != "item" or not env.page.options:
        observation, *_ = env.step(OraclePolicy()(env, observation))
    name, value = env.page.options[0]
    assert f"{name} (selected: {value}):" in observation
    assert "[Description] [Features] [Reviews] [Buy Now]" in observation


def test_webshop_env__truncates_after_max_turns():
    env = WebShopEnv(max_turns=2)
    env.reset(seed=0)
    assert env.step("<answer>search[shampoo]</answer>")[3] is False
    *_, terminated, truncated, info = env.step("<answer>click[Back to Search]</answer>")
    assert truncated and not terminated and info["truncation_reason"] == "max_turns"


def test_webshop_env__item_option_poses_a_goal_with_list_options_and_missing_fields(env):
    target = env.catalog.product(env.goal_list[0]["asin"])
    goal = {
        "asin": target["asin"],
        "instruction_text": "i need this thing.",
        "attributes": list(target["Attributes"][:1]),
        "goal_options": [values[0] for values in target["options"].values()],
        "price_upper": 1000,
    }
    observation, info = env.reset(seed=1, options={"item": goal})
    assert info["goal_id"] == "item" and "i need this thing." in observation
    assert env.goal["name"] == target["Title"] and env.goal["query"] == target["query"]
    total, info, terminated, _ = _play(env, OraclePolicy(), observation)
    assert terminated and total == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"item": {"asin": "NOPE"}}, "missing"),
        ({"item": {"asin": "NOPE", "instruction_text": "x", "attributes": [],
                   "goal_options": [], "price_upper": 10}}, "product of the catalog"),
        ({"index": 10**9}, "'index' must be an int"),
        ({"index": "3"}, "'index' must be an int"),
        ({"level": 1}, "unknown reset options"),
        ({"item": {}, "index": 0}, "exclude each other"),
    ],
)  # fmt: skip
def test_webshop_env__bad_reset_options_raise(env, options, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        env.reset(seed=0, options=options)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(source="amazon"), "source must be"),
        (dict(source="webshop"), "data_path"),
        (dict(data_path="/nowhere", source="generated"), "data_path is read only"),
        (dict(catalog="1k"), "catalog applies"),
        (dict(num_products=0), "num_products"),
        (dict(goals="expert"), "goals must be"),
        (dict(split="dev"), "split must be"),
        (dict(observation_mode="html"), "observation_mode"),
        (dict(search_backend="lucene"), "search_backend"),
        (dict(goals="human"), "no such goals"),
        (dict(max_turns=0), "max_turns"),
        (dict(data_path="/nowhere"), "WebShop data directory"),
    ],
)
def test_webshop_env__bad_configuration_raises(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WebShopEnv(**kwargs)


def test_webshop_env__copies_share_the_catalog_and_continue_alike(env):
    env.reset(seed=5)
    env.step("<answer>search[shampoo]</answer>")
    clone = copy.deepcopy(env)
    assert clone.catalog is env.catalog
    assert pickle.loads(pickle.dumps(env)).catalog is env.catalog  # same process: cached
    assert (
        clone.step("<answer>click[Next >]</answer>")[0]
        == env.step("<answer>click[Next >]</answer>")[0]
    )


def test_webshop_env__random_baseline_only_takes_available_actions(env):
    policy = RandomPolicy(seed=0)
    for seed in range(5):
        observation, _ = env.reset(seed=seed)
        for _ in range(15):
            observation, _, terminated, truncated, info = env.step(policy(env, observation))
            assert info["action_valid"]
            if terminated or truncated:
                break


def test_webshop_env__fts5_fallback_backend_runs_the_oracle():
    env = WebShopEnv(search_backend="fts5", num_products=400, split="test")
    observation, _ = env.reset(seed=0, options={"index": 0})
    total, _info, terminated, _ = _play(env, OraclePolicy(), observation)
    assert terminated and total == 1.0 and env.catalog.index.backend == "fts5"


def test_webshop_env__vector_entry_point_steps_a_batch():
    vector = make_vector_env(num_envs=2, max_episode_steps=15)
    observations, infos = vector.reset(seed=[0, 1])
    assert len(observations) == 2 and list(infos["page"]) == ["search", "search"]
    _, rewards, *_, infos = vector.step(["<answer>search[coffee]</answer>", "nothing"])
    assert list(infos["page"]) == ["results", "search"]
    assert np.allclose(rewards, [0.0, -0.1])
    vector.close()


@needs_data
def test_webshop_env__oracle_on_webshop_human_goals():
    env = WebShopEnv(data_path=str(DATA), goals="human", split="test")
    rewards = []
    for index in range(len(env.goal_list)):
        observation, _ = env.reset(seed=0, options={"index": index})
        rewards.append(_play(env, OraclePolicy(), observation)[0])
    assert len(rewards) == 13 and np.mean(rewards) > 0.8
