"""SkyRL-gym: any ``grl/*`` id as a SkyRL text env, registered the way SkyRL registers envs.

SkyRL's generator (``SkyRLGymGenerator``) makes one env per dataset row with
``skyrl_gym.make(row["env_class"], env_config=..., extras=...)`` (``extras``: the row's other
columns, plus the generator's ``max_turns``), calls ``init(prompt)`` once and ``step(reply)``
after every model reply until ``done``, appending the returned ``observations`` to the chat::

    from agent_envs.adapters.skyrl import make_skyrl_dataset, register_skyrl_envs
    register_skyrl_envs()                      # every grl/* id, under its own name
    rows = make_skyrl_dataset("grl/Sokoban-v0", seeds=range(1000))  # SkyRL's dataset rows

- :class:`GrlTextEnv` (a ``skyrl_gym.envs.base_text_env.BaseTextEnv``): ``init(prompt)``
  resets the env with the row's seed and returns ``[system: instructions, user: first
  observation]`` (the row's prompt is the same two messages; the env's own reset is what
  counts) and the reset info; ``step(reply)`` is one turn: ``observations`` is the next
  observation as a user message (empty once the episode is over, as SkyRL's envs do), ``reward``
  the turn's reward, ``done = terminated or truncated``, ``metadata`` the env's info plus
  ``observation`` (the observation after the turn, the final one included), ``terminated``
  and ``truncated``. ``get_metrics()`` gives ``episode_return``, ``success`` and ``turns``.
- :func:`register_skyrl_envs`: ``skyrl_gym.register(id=<grl id>, entry_point=
  "agent_envs.adapters.skyrl:GrlTextEnv", kwargs={"env_id": <grl id>})`` for each id not yet
  registered, so a row's ``env_class`` is the ``grl/*`` id itself.
- :func:`make_skyrl_dataset`: the rows, in SkyRL's dataset format (``prompt``, ``env_class``,
  ``reward_spec``, ``extra_info``: seed and env keyword arguments).

**Turn budget.** The env owns it (``max_turns`` of ``gymnasium.make``); the ``max_turns`` the
generator puts into ``extras`` is used as the env's when the row's ``env_kwargs`` set none.
Replies never raise: an unparsable reply is an invalid action, as in the env.

Importing this module needs ``skyrl-gym`` (``pip install 'agent-envs[skyrl]'``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from agent_envs.core.records import json_safe
from agent_envs.optional import require

_base_text_env = require("skyrl_gym.envs.base_text_env", "skyrl")
skyrl_gym = require("skyrl_gym", "skyrl")

__all__ = ["ENTRY_POINT", "GrlTextEnv", "make_skyrl_dataset", "register_skyrl_envs"]

#: the entry point every ``grl/*`` id is registered with in SkyRL-gym's registry
ENTRY_POINT = "agent_envs.adapters.skyrl:GrlTextEnv"


def _config_value(config: Any, key: str) -> Any:
    """``config[key]`` of a dict or an OmegaConf ``DictConfig`` (``None`` when absent)."""
    if config is None:
        return None
    getter = getattr(config, "get", None)
    return getter(key) if callable(getter) else getattr(config, key, None)


class GrlTextEnv(_base_text_env.BaseTextEnv):
    """A ``grl/*`` env as a SkyRL text env (module docstring).

    Args:
        env_config: SkyRL's per-env-class config (``skyrl_gym.<env_class>`` of its config);
            ``env_kwargs`` there apply to every row.
        extras: the dataset row's columns: ``extra_info`` with ``seed`` (required) and
            ``env_kwargs``, and the generator's ``max_turns``.
        env_id: the registered ``grl/*`` id (set by :func:`register_skyrl_envs`; a row's
            ``extra_info["env_id"]`` must agree with it when given).
    """

    def __init__(
        self,
        env_config: Any = None,
        extras: dict[str, Any] | None = None,
        *,
        env_id: str | None = None,
    ) -> None:
        super().__init__()
        import gymnasium

        import agent_envs  # noqa: F401  (registers the grl/* ids)

        extras = dict(extras or {})
        extra_info = dict(extras.get("extra_info") or {})
        row_id = extra_info.get("env_id")
        env_id = env_id or row_id
        if env_id is None:
            raise ValueError("GrlTextEnv needs env_id (registered) or extra_info['env_id']")
        if row_id is not None and row_id != env_id:
            raise ValueError(f"extra_info['env_id']={row_id!r} given to the env of {env_id!r}")
        if "seed" not in extra_info:
            raise ValueError(f"extras['extra_info'] must hold the episode 'seed', got {extra_info}")
        env_kwargs = dict(_config_value(env_config, "env_kwargs") or {})
        env_kwargs.update(extra_info.get("env_kwargs") or {})
        if "max_turns" not in env_kwargs and extras.get("max_turns") is not None:
            env_kwargs["max_turns"] = int(extras["max_turns"])
        self.env_id = env_id
        self.seed = int(extra_info["seed"])
        self.env = gymnasium.make(env_id, **env_kwargs)
        self.max_turns = int(getattr(self.env.unwrapped, "max_turns", None) or 1)
        self.rewards: list[float] = []
        self.info: dict[str, Any] = {}

    def init(self, prompt: list[dict[str, str]] | None = None) -> tuple[list[dict[str, str]], dict]:
        observation, info = self.env.reset(seed=self.seed)
        self.turns = 0
        self.rewards = []
        self.info = json_safe(info)
        messages = [
            {"role": "system", "content": self.env.unwrapped.instructions},
            {"role": "user", "content": observation},
        ]
        return messages, dict(self.info)

    def step(self, action: str) -> Any:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        self.rewards.append(float(reward))
        self.info = json_safe(info)
        done = bool(terminated or truncated)
        return _base_text_env.BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": observation}],
            reward=float(reward),
            done=done,
            metadata={
                **self.info,
                "observation": observation,
                "terminated": bool(terminated),
                "truncated": bool(truncated),
            },
        )

    def get_metrics(self) -> dict[str, Any]:
        return {
            "episode_return": math.fsum(self.rewards),
            "success": float(bool(self.info.get("success", False))),
            "turns": self.turns,
        }

    def close(self) -> None:
        self.env.close()


def register_skyrl_envs(env_ids: Iterable[str] | None = None) -> list[str]:
    """Register ``env_ids`` (default: every ``grl/*`` preset) in SkyRL-gym's registry, each
    under its own id with :data:`ENTRY_POINT`; ids already registered are left as they are.
    Returns the ids."""
    from agent_envs.registration import PRESETS

    ids = list(PRESETS) if env_ids is None else list(env_ids)
    for env_id in ids:
        if env_id not in PRESETS:
            raise ValueError(f"env_ids: {env_id!r} is not a registered grl/* id")
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"env_id": env_id})
    return ids


def make_skyrl_dataset(
    env_id: str, seeds: Iterable[int], **env_kwargs: Any
) -> list[dict[str, Any]]:
    """One SkyRL dataset row per seed: ``prompt`` (system: the instructions, user: the first
    observation), ``env_class`` (``env_id``), ``reward_spec`` (the env's own rewards) and
    ``extra_info`` (``env_id``, ``seed``, ``env_kwargs``). ``datasets.Dataset.from_list``
    or a parquet file of them is what SkyRL's trainer reads."""
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    env = gymnasium.make(env_id, **env_kwargs)
    rows = []
    try:
        for seed in seeds:
            observation, _ = env.reset(seed=int(seed))
            rows.append(
                {
                    "data_source": env_id,
                    "prompt": [
                        {"role": "system", "content": env.unwrapped.instructions},
                        {"role": "user", "content": observation},
                    ],
                    "env_class": env_id,
                    "reward_spec": {"method": "env", "ground_truth": None},
                    "extra_info": {
                        "env_id": env_id,
                        "seed": int(seed),
                        "env_kwargs": json_safe(dict(env_kwargs)),
                    },
                }
            )
    finally:
        env.close()
    return rows
