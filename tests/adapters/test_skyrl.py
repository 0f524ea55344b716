"""SkyRL-gym: ``grl/*`` ids registered in SkyRL-gym's registry, made with ``skyrl_gym.make``
and played by SkyRL's generator loop (``init(prompt)``, then ``step(reply)`` until ``done``,
appending the observations to the chat). That loop (``SkyRLGymGenerator.agent_loop``) lives in
SkyRL's trainer, ``skyrl-train`` / ``skyrl`` 0.4, which needs Python 3.12, so
:func:`generator_loop` writes it out, minus the model. Runs where ``skyrl-gym`` is installed
(``.venv-frameworks``, ``.ci/frameworks.sh``)."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import sys

import gymnasium
import pytest
from gymnasium.error import DependencyNotInstalled


def test_skyrl__without_skyrl_gym_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "skyrl_gym.envs.base_text_env", None)
    monkeypatch.delitem(sys.modules, "agent_envs.adapters.skyrl", raising=False)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'agent-envs\[skyrl\]'"):
        importlib.import_module("agent_envs.adapters.skyrl")


INSTALLED = importlib.util.find_spec("skyrl_gym") is not None
needs_skyrl = pytest.mark.skipif(not INSTALLED, reason="skyrl-gym is not installed here")
if INSTALLED:
    import omegaconf
    import skyrl_gym
    from agent_envs.adapters.skyrl import (
        ENTRY_POINT,
        GrlTextEnv,
        make_skyrl_dataset,
        register_skyrl_envs,
    )
    from skyrl_gym.envs.base_text_env import BaseTextEnv

import agent_envs  # noqa: E402, F401
from agent_envs.core.policies import OraclePolicy  # noqa: E402
from agent_envs.registration import PRESETS  # noqa: E402

ENV_ID = "grl/Sokoban-v0"


def _extras(row: dict, **more) -> dict:
    """What SkyRL's generator passes as ``extras``: the row without prompt and env class."""
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    return {**extras, **more}


def generator_loop(row: dict, reply, *, max_turns: int | None = None, env_config=None) -> dict:
    """One episode the way ``SkyRLGymGenerator.agent_loop`` runs it (minus the model): make
    the env from the row, ``init`` on the prompt, ``step`` each reply, append observations."""
    extras = _extras(row) if max_turns is None else _extras(row, max_turns=max_turns)
    env = skyrl_gym.make(
        row["env_class"], env_config=env_config or omegaconf.DictConfig({}), extras=extras
    )
    chat, _ = env.init(copy.deepcopy(row["prompt"]))
    rewards, done, outputs = [], False, []
    while not done:
        action = reply(chat)
        chat.append({"role": "assistant", "content": action})
        output = env.step(action)
        outputs.append(output)
        rewards.append(output["reward"])
        chat += output["observations"]
        done = output["done"]
    metrics = env.get_metrics()
    env.close()
    return {"chat": chat, "rewards": rewards, "outputs": outputs, "metrics": metrics, "env": env}


def oracle_replies(row: dict):
    """The oracle, playing a native twin of the row's episode (it reads the env's state)."""
    twin = gymnasium.make(row["env_class"], **row["extra_info"]["env_kwargs"])
    twin.reset(seed=row["extra_info"]["seed"])

    def reply(chat):
        text = OraclePolicy()(twin.unwrapped, chat[-1]["content"])
        twin.step(text)
        return text

    return reply


@needs_skyrl
def test_skyrl__every_grl_id_is_registered_once_with_its_entry_point():
    assert register_skyrl_envs() == list(PRESETS)
    assert register_skyrl_envs([ENV_ID]) == [ENV_ID]  # again: left as it is
    spec = skyrl_gym.spec(ENV_ID)
    assert (spec.entry_point, spec.kwargs) == (ENTRY_POINT, {"env_id": ENV_ID})
    with pytest.raises(ValueError, match="grl/Nope-v0"):
        register_skyrl_envs(["grl/Nope-v0"])


@needs_skyrl
def test_skyrl__dataset_rows_are_skyrls_format_and_the_env_starts_where_the_prompt_says():
    register_skyrl_envs([ENV_ID])
    rows = make_skyrl_dataset(ENV_ID, [3, 4], max_turns=5)
    assert [row["extra_info"] for row in rows] == [
        {"env_id": ENV_ID, "seed": seed, "env_kwargs": {"max_turns": 5}} for seed in (3, 4)
    ]
    row = rows[0]
    assert row["env_class"] == ENV_ID and [m["role"] for m in row["prompt"]] == ["system", "user"]
    env = skyrl_gym.make(ENV_ID, env_config=omegaconf.DictConfig({}), extras=_extras(row))
    assert isinstance(env, GrlTextEnv) and isinstance(env, BaseTextEnv)
    prompt, info = env.init(row["prompt"])
    assert prompt == row["prompt"]
    native = gymnasium.make(ENV_ID, max_turns=5)
    assert prompt[1]["content"] == native.reset(seed=3)[0]
    assert info["episode_seed"] == 3 and env.max_turns == 5


@needs_skyrl
@pytest.mark.parametrize("env_id", ["grl/Sokoban-v0", "grl/Blocksworld-v0", "grl/GSM8K-v0"])
def test_skyrl__generator_loop_plays_the_native_episode(env_id):
    register_skyrl_envs([env_id])
    for row in make_skyrl_dataset(env_id, [0, 1]):
        played = generator_loop(row, oracle_replies(row))
        native = gymnasium.make(env_id)
        native.reset(seed=row["extra_info"]["seed"])
        replies = [m["content"] for m in played["chat"] if m["role"] == "assistant"]
        for reply, output in zip(replies, played["outputs"], strict=True):
            observation, reward, terminated, truncated, info = native.step(reply)
            assert output["reward"] == reward
            assert output["done"] == (terminated or truncated)
            assert output["metadata"]["observation"] == observation
            assert output["metadata"]["state_hash"] == info["state_hash"]
            assert output["observations"] == (
                [] if output["done"] else [{"role": "user", "content": observation}]
            )
        assert played["outputs"][-1]["metadata"]["success"]
        assert played["metrics"]["success"] == 1.0
        assert played["metrics"]["turns"] == len(replies)
        assert played["metrics"]["episode_return"] == pytest.approx(sum(played["rewards"]))


@needs_skyrl
def test_skyrl__turn_budget_comes_from_env_kwargs_then_the_generator():
    register_skyrl_envs([ENV_ID])
    (row,) = make_skyrl_dataset(ENV_ID, [0])
    played = generator_loop(row, lambda chat: "no answer", max_turns=2)  # the generator's
    assert len(played["rewards"]) == 2
    assert played["outputs"][-1]["metadata"]["truncation_reason"] == "max_turns"
    (row,) = make_skyrl_dataset(ENV_ID, [0], max_turns=3)  # the row's env_kwargs win
    assert len(generator_loop(row, lambda chat: "no answer", max_turns=2)["rewards"]) == 3
    config = omegaconf.DictConfig({"env_kwargs": {"max_turns": 4}})  # SkyRL's env config
    (row,) = make_skyrl_dataset(ENV_ID, [0])
    assert len(generator_loop(row, lambda chat: "no", env_config=config)["rewards"]) == 4


@needs_skyrl
def test_skyrl__model_output_never_raises():
    register_skyrl_envs([ENV_ID])
    (row,) = make_skyrl_dataset(ENV_ID, [0])
    replies = iter(["", "\x00\xff", "<answer>", "x" * 100_000, "<answer>Up</answer>" * 3, "?"])
    played = generator_loop(row, lambda chat: next(replies))
    assert len(played["rewards"]) == 6
    assert all(not output["metadata"]["action_valid"] for output in played["outputs"][:4])
    metrics = BaseTextEnv.aggregate_metrics([played["metrics"], played["metrics"]])
    assert metrics["turns"] == 6


@needs_skyrl
def test_skyrl__configuration_errors_name_what_is_missing():
    with pytest.raises(ValueError, match="seed"):
        GrlTextEnv(extras={"extra_info": {}}, env_id=ENV_ID)
    with pytest.raises(ValueError, match="env_id"):
        GrlTextEnv(extras={"extra_info": {"seed": 1}})
    with pytest.raises(ValueError, match="grl/GSM8K-v0"):
        GrlTextEnv(extras={"extra_info": {"seed": 1, "env_id": "grl/GSM8K-v0"}}, env_id=ENV_ID)
