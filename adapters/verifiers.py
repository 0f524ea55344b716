"""verifiers (Prime Intellect's Environments Hub): any ``grl/*`` id as a verifiers environment.

verifiers 0.4 (``import verifiers.v1 as vf``) builds an environment from plugins named by id:
a **taskset** (the tasks: one per episode seed here) and an **env** (how one task becomes an
episode). This module is such a plugin: :class:`GrlTaskset` yields one :class:`GrlTask` per
seed (prompt = the first observation, system prompt = the env's instructions) and
:class:`GrlEnv` plays the episode host-side, as the run's *user*: each assistant reply is one
``env.step``, the next observation is the next user turn, and the episode's end ends the
exchange. The env's own rewards are the rubric: the episode return is recorded as the reward
``episode_return`` (weight 1) and ``success``, ``num_turns`` and the per-turn rewards as
metrics and trace info. The agent seat plays through verifiers' ``null`` harness (its plain
chat loop, no tools) in the ``subprocess`` runtime, so a run needs nothing but an
OpenAI-compatible endpoint::

    from agent_envs.adapters.verifiers import load_environment
    env = load_environment("grl/Sokoban-v0", seeds=[0, 1, 2], max_turns=8)  # a vf.Env

verifiers finds plugins by importing a *top-level* module named by the id and reading its
``__all__``; ``agent-envs`` installs one top-level package only (``agent_envs``), so the
plugin's module is :data:`PLUGIN_MODULE` (``agent_envs_grl``), a two-line package that
:func:`write_plugin_package` writes (``pip install`` it, or put its folder on
``PYTHONPATH``) for verifiers' own command line::

    python -m agent_envs.adapters.verifiers ./agent-envs-grl && pip install ./agent-envs-grl
    vf-eval agent-envs-grl --env.taskset.env-id grl/Sokoban-v0 --env.taskset.seeds '[0,1,2]' \\
        -n 3 -m MODEL --client.base-url http://127.0.0.1:8000/v1 --no-push

In Python, :func:`load_environment` makes the id resolvable in the running process
(:func:`register_plugin`, which says why it must put a module in ``sys.modules``) when that
package is not installed.

Replies reach the env exactly as the model wrote them (verifiers' ``Segment.last_reply``
strips whitespace; the env reads the sampled assistant message instead). Importing this module
needs ``verifiers`` (``pip install 'agent-envs[verifiers]'``).
"""

from __future__ import annotations

import importlib.util
import math
import sys
import types
from pathlib import Path
from typing import Any

from agent_envs.optional import require

vf = require("verifiers.v1", "verifiers")
_null_harness = require("verifiers.v1.harnesses.null", "verifiers")
Field = require("pydantic", "verifiers").Field

__all__ = [
    "PLUGIN_ID",
    "PLUGIN_MODULE",
    "GrlData",
    "GrlEnv",
    "GrlEnvConfig",
    "GrlTask",
    "GrlTaskset",
    "GrlTasksetConfig",
    "load_environment",
    "register_plugin",
    "write_plugin_package",
]

#: the taskset id verifiers resolves to :data:`PLUGIN_MODULE` (``vf-eval agent-envs-grl``)
PLUGIN_ID = "agent-envs-grl"
#: the top-level module verifiers imports for :data:`PLUGIN_ID`
PLUGIN_MODULE = "agent_envs_grl"
#: the classes the plugin module exports (verifiers reads them from its ``__all__``)
_PLUGIN_EXPORTS = ("GrlTaskset", "GrlEnv")


class GrlData(vf.TaskData):
    """One episode: the env id, its seed and the env's keyword arguments."""

    env_id: str
    seed: int
    env_kwargs: dict[str, Any] = Field(default_factory=dict)


class GrlTask(vf.Task[GrlData, vf.State, vf.TaskConfig]):
    """An episode of a ``grl/*`` env (scored by :class:`GrlEnv` as it is played)."""


class GrlTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: which env, which seeds, which env keyword arguments."""

    env_id: str = "grl/Sokoban-v0"
    """The registered ``grl/*`` id."""
    seeds: list[int] = Field(default_factory=lambda: list(range(100)))
    """One task per seed, in this order (the dataset)."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of ``gymnasium.make(env_id, ...)`` (``max_turns``, ...)."""


class GrlTaskset(vf.Taskset[GrlTask, GrlTasksetConfig]):
    """One task per seed: prompt = the first observation, system prompt = the instructions."""

    def load(self) -> list[GrlTask]:
        config = self.config
        env = _make(config.env_id, config.env_kwargs)
        try:
            tasks = []
            for seed in config.seeds:
                observation, _ = env.reset(seed=int(seed))
                data = GrlData(
                    name=f"{config.env_id}#{seed}",
                    prompt=observation,
                    system_prompt=env.unwrapped.instructions,
                    env_id=config.env_id,
                    seed=int(seed),
                    env_kwargs=dict(config.env_kwargs),
                )
                tasks.append(GrlTask(data, config.task))
            return tasks
        finally:
            env.close()


class GrlEnvConfig(vf.EnvConfig):
    """The one seat, ``player``: verifiers' ``null`` harness (a chat loop without tools) in
    the ``subprocess`` runtime, so a run needs only an OpenAI-compatible endpoint
    (``--env.player.client.base-url``, ``--env.player.model``)."""

    player: vf.AgentConfig = vf.AgentConfig(
        harness=_null_harness.NullHarnessConfig(id="null"),
        runtime=vf.SubprocessConfig(),
    )


class GrlEnv(vf.Env[GrlEnvConfig]):
    """Plays a :class:`GrlTask` on a fresh env, host-side, as the exchange's user."""

    async def run(self, task: GrlTask, agents: Any) -> None:
        data = task.data
        env = _make(data.env_id, data.env_kwargs)
        rewards: list[float] = []
        info: dict[str, Any] = {}
        try:
            observation, info = env.reset(seed=data.seed)
            if observation != data.prompt_text:
                raise ValueError(
                    f"{data.env_id} seed {data.seed} starts elsewhere than its task's prompt"
                )
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    observation, reward, terminated, truncated, info = env.step(_reply(segment))
                    rewards.append(float(reward))
                    if terminated or truncated:
                        break
                    segment = await interaction.turn(observation)
        finally:
            env.close()
        trace = interaction.trace
        trace.record_reward("episode_return", math.fsum(rewards), 1.0)
        trace.record_metric("success", float(bool(info.get("success", False))))
        trace.record_metric("num_turns", float(len(rewards)))
        trace.info.update(
            env_id=data.env_id,
            seed=data.seed,
            rewards=rewards,
            success=bool(info.get("success", False)),
            truncation_reason=info.get("truncation_reason") if rewards else None,
            final_observation=observation,
        )


def _make(env_id: str, env_kwargs: dict[str, Any]) -> Any:
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    return gymnasium.make(env_id, **env_kwargs)


def _reply(segment: Any) -> str:
    """The model's reply as sampled (``Segment.last_reply`` strips it)."""
    for message in reversed(segment.messages):
        if isinstance(message, vf.AssistantMessage):
            return message.content if isinstance(message.content, str) else segment.last_reply
    return segment.last_reply


def register_plugin() -> None:
    """Make :data:`PLUGIN_ID` resolvable in this process when :data:`PLUGIN_MODULE` is not
    installed: a module of that name exporting :class:`GrlTaskset` and :class:`GrlEnv`, put in
    ``sys.modules``, the import system's table of loaded modules.

    Why not something cleaner: verifiers 0.4 resolves a taskset id only by importing a module
    (``verifiers.v1.utils.loaders._import_plugin``: the id's last ``/`` part, ``-`` read as
    ``_``, tried as ``verifiers.v1.tasksets.<name>`` and then as the top-level ``<name>``); it
    reads no entry points, and a dotted id (``agent_envs.adapters.verifiers``) fails on the
    first lookup, whose parent packages do not exist. ``vf.Env`` resolves its
    ``config.taskset.id`` again when built, so a taskset object cannot be handed in instead.
    The top-level module verifiers expects cannot ship in agent-envs' wheel (its one top-level
    name is ``agent_envs``), and a ``sys.path`` entry for a written package is what STYLE.md
    rules out. So: the installed plugin package (:func:`write_plugin_package`) for verifiers'
    CLI and other processes, and this module for the running process. It is the same two
    exports; an installed :data:`PLUGIN_MODULE` always wins."""
    if PLUGIN_MODULE in sys.modules or importlib.util.find_spec(PLUGIN_MODULE) is not None:
        return
    module = types.ModuleType(PLUGIN_MODULE, "agent-envs' grl/* ids as a verifiers taskset")
    for name in _PLUGIN_EXPORTS:
        setattr(module, name, globals()[name])
    module.__all__ = list(_PLUGIN_EXPORTS)
    sys.modules[PLUGIN_MODULE] = module


def load_environment(
    env_id: str,
    *,
    seeds: list[int] | range = range(100),
    player: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> Any:
    """A verifiers ``Env`` (:class:`GrlEnv`) playing ``env_id`` (built with ``env_kwargs``),
    one task per seed of ``seeds``; ``player``: overrides of the seat's ``AgentConfig``
    (``{"model": ..., "client": {"type": "eval", "base_url": ...}}``). Built by verifiers' own
    ``vf.load_environment``."""
    _make(env_id, env_kwargs).close()  # an unknown id or a bad argument fails here
    register_plugin()
    config = vf.resolve_env_config(
        {
            "taskset": {
                "id": PLUGIN_ID,
                "env_id": env_id,
                "seeds": [int(seed) for seed in seeds],
                "env_kwargs": dict(env_kwargs),
            },
            **({"player": player} if player else {}),
        }
    )
    return vf.load_environment(config)


_PLUGIN_INIT = '''"""agent-envs' grl/* ids as a verifiers taskset: agent_envs.adapters.verifiers."""

from agent_envs.adapters.verifiers import GrlEnv, GrlTaskset

__all__ = ["GrlEnv", "GrlTaskset"]
'''

_PLUGIN_PYPROJECT = f"""[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{PLUGIN_ID}"
version = "0.1.0"
description = "agent-envs' grl/* ids as a verifiers environment"
requires-python = ">=3.11"
dependencies = ["agent-envs[verifiers]"]

[tool.setuptools]
packages = ["{PLUGIN_MODULE}"]
"""


def write_plugin_package(folder: str | Path) -> Path:
    """Write the verifiers plugin package (``pyproject.toml`` and ``agent_envs_grl/``) into
    ``folder``; returns the folder. ``pip install`` it, or put it on ``PYTHONPATH``."""
    root = Path(folder)
    (root / PLUGIN_MODULE).mkdir(parents=True, exist_ok=True)
    (root / PLUGIN_MODULE / "__init__.py").write_text(_PLUGIN_INIT, encoding="utf-8")
    (root / "pyproject.toml").write_text(_PLUGIN_PYPROJECT, encoding="utf-8")
    return root


if __name__ == "__main__":
    print(write_plugin_package(sys.argv[1] if len(sys.argv) > 1 else PLUGIN_ID))
