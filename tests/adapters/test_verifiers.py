"""verifiers 0.4 (``verifiers.v1``): ``grl/*`` ids as a verifiers environment, built by
verifiers' own loader and run by its own evaluation entry point, ``vf-eval``, against a local
OpenAI-compatible server with the project's scripted oracle behind it. Runs where
``verifiers`` is installed (``.venv-frameworks``, ``.ci/frameworks.sh``); the harness's chat
program is a uv script that verifiers prepares once (it needs ``uv`` on ``PATH`` and, the
first time, the package index)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
from gymnasium.error import DependencyNotInstalled

import agent_envs  # noqa: F401
from tests.adapters.test_conformance import Case, ChatServer, _replies, scripted_chat

ENV_ID = "grl/Sokoban-v0"
SEEDS = [0, 1]
VF_EVAL_TIME_LIMIT_S = 420
INSTALLED = importlib.util.find_spec("verifiers") is not None


def test_verifiers__without_verifiers_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "verifiers.v1", None)
    monkeypatch.delitem(sys.modules, "agent_envs.adapters.verifiers", raising=False)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'agent-envs\[verifiers\]'"):
        importlib.import_module("agent_envs.adapters.verifiers")


needs_verifiers = pytest.mark.skipif(not INSTALLED, reason="verifiers is not installed here")


@pytest.fixture(scope="module")
def vf():
    return importlib.import_module("verifiers.v1")


@pytest.fixture(scope="module")
def adapter():
    return importlib.import_module("agent_envs.adapters.verifiers")


@needs_verifiers
def test_verifiers__load_environment_is_a_verifiers_env_with_one_task_per_seed(vf, adapter):
    env = adapter.load_environment(ENV_ID, seeds=SEEDS, max_turns=3)
    assert isinstance(env, vf.Env) and isinstance(env, adapter.GrlEnv)
    assert isinstance(env.taskset, adapter.GrlTaskset)
    tasks = list(env.taskset)
    native = gymnasium.make(ENV_ID, max_turns=3)
    for task, seed in zip(tasks, SEEDS, strict=True):
        assert isinstance(task, adapter.GrlTask)
        assert task.data.prompt == native.reset(seed=seed)[0]
        assert task.data.system_prompt == native.unwrapped.instructions
        assert (task.data.env_id, task.data.seed, task.data.env_kwargs) == (
            ENV_ID,
            seed,
            {"max_turns": 3},
        )
    harness = env.config.player.harness
    assert (harness.id, env.config.player.runtime.type) == ("null", "subprocess")
    url = "http://127.0.0.1:9/v1"
    seat = {"model": "m", "max_turns": 2, "client": {"type": "eval", "base_url": url}}
    player = adapter.load_environment(ENV_ID, seeds=[0], player=seat).config.player
    assert (player.model, player.max_turns, player.client.base_url) == ("m", 2, url)
    assert player.harness.id == "null"  # the override merges onto the seat's defaults


@needs_verifiers
def test_verifiers__bad_ids_and_arguments_fail_when_loading(adapter):
    with pytest.raises(gymnasium.error.Error):
        adapter.load_environment("grl/Nope-v0")
    with pytest.raises(TypeError):
        adapter.load_environment(ENV_ID, no_such_argument=1)


@needs_verifiers
def test_verifiers__plugin_package_exports_exactly_the_taskset_and_the_env(tmp_path, adapter):
    folder = adapter.write_plugin_package(tmp_path / "pkg")
    init = (folder / adapter.PLUGIN_MODULE / "__init__.py").read_text()
    assert '__all__ = ["GrlEnv", "GrlTaskset"]' in init
    assert f'name = "{adapter.PLUGIN_ID}"' in (folder / "pyproject.toml").read_text()
    adapter.register_plugin()
    adapter.register_plugin()  # idempotent
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    assert taskset_class(adapter.PLUGIN_ID) is adapter.GrlTaskset
    assert environment_class(adapter.PLUGIN_ID) is adapter.GrlEnv


@needs_verifiers
def test_verifiers__ids_resolve_only_as_top_level_modules(adapter):
    """Why ``register_plugin`` puts a module in ``sys.modules``: verifiers resolves an id by
    importing a top-level module, and a dotted id of ``agent_envs`` does not resolve. If this
    fails, verifiers has learned another way, and ``register_plugin`` can go."""
    from verifiers.v1.utils.loaders import taskset_class

    with pytest.raises(ModuleNotFoundError):
        taskset_class(adapter.__name__)


@needs_verifiers
def test_verifiers__vf_eval_plays_the_oracle_through_verifiers_own_loop(tmp_path, adapter):
    """``vf-eval agent-envs-grl ...``: verifiers' CLI loads the plugin package, plays every
    seed against the scripted server, and records the env's return, success and turns."""
    cases = [Case(ENV_ID, seed, "oracle", _replies(ENV_ID, seed, "oracle")) for seed in SEEDS]
    package = adapter.write_plugin_package(tmp_path / "pkg")
    output = tmp_path / "out"
    bin_dir = str(Path(sys.executable).parent)
    environment = {
        **os.environ,
        "PYTHONPATH": str(package),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with ChatServer(scripted_chat(cases)) as server:
        command = [
            str(Path(bin_dir) / "vf-eval"),
            adapter.PLUGIN_ID,
            "--env.taskset.env-id",
            ENV_ID,
            "--env.taskset.seeds",
            json.dumps(SEEDS),
            "-n",
            str(len(SEEDS)),
            "-m",
            "scripted",
            "--client.base-url",
            server.url,
            "--no-push",
            "-o",
            str(output),
        ]
        done = subprocess.run(
            command,
            env=environment,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=VF_EVAL_TIME_LIMIT_S,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (traces,) = output.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]
    assert len(episodes) == len(SEEDS)
    for episode in episodes:
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        seed = trace["task"]["data"]["seed"]
        native = gymnasium.make(ENV_ID)
        native.reset(seed=seed)
        rewards = [native.step(reply)[1] for reply in _replies(ENV_ID, seed, "oracle")]
        assert trace["info"]["rewards"] == rewards
        assert trace["rewards"]["episode_return"]["score"] == pytest.approx(sum(rewards))
        assert trace["metrics"] == {"success": 1.0, "num_turns": float(len(rewards))}
        replies = [
            n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "assistant"
        ]
        assert replies == list(_replies(ENV_ID, seed, "oracle"))
