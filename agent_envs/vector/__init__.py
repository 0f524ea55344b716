"""The batched multi-turn API: :class:`TextVectorEnv` and the ``make_vec`` entry point."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gymnasium.vector import AutoresetMode

from agent_envs.vector.batch import batch_infos
from agent_envs.vector.seeding import SeedStream
from agent_envs.vector.vector_env import TextVectorEnv, WorkerDiedError
from agent_envs.vector.workers import WorkerPool, register_backend

__all__ = [
    "AutoresetMode",
    "SeedStream",
    "TextVectorEnv",
    "WorkerDiedError",
    "WorkerPool",
    "batch_infos",
    "register_backend",
    "vector_entry_point",
]

_VECTOR_KWARGS = (
    "group_size",
    "autoreset_mode",
    "mode",
    "num_workers",
    "context",
    "respawn_workers",
)


def vector_entry_point(env_cls: Callable[..., Any]) -> Callable[..., TextVectorEnv]:
    """Build the ``vector_entry_point`` that ``gymnasium.make_vec`` calls for a text env.

    The returned creator takes ``num_envs``, the vector options (``group_size``,
    ``autoreset_mode``, ``mode``, ``num_workers``, ``context``, ``respawn_workers``) and the
    env's own keyword
    arguments, ``max_turns`` (the turn budget) among them. ``max_episode_steps=k`` is read as
    ``max_turns=k`` when ``max_turns`` is not given; a registered id always gives its preset's
    ``max_turns``, so there ``max_episode_steps`` must agree with it (a ``ValueError`` names
    both otherwise): pass ``max_turns`` to change the budget.
    """

    def make(
        num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any
    ) -> TextVectorEnv:
        vector_kwargs = {key: kwargs.pop(key) for key in _VECTOR_KWARGS if key in kwargs}
        if max_episode_steps is not None:
            if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int):
                raise ValueError(
                    f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}"
                )
            max_turns = kwargs.setdefault("max_turns", max_episode_steps)
            if max_turns != max_episode_steps:
                raise ValueError(
                    f"max_turns={max_turns} and max_episode_steps={max_episode_steps} disagree: "
                    f"the turn budget is max_turns (the preset's, unless you pass it): pass "
                    f"max_turns={max_episode_steps} instead"
                )
        env_fn = functools.partial(env_cls, **kwargs)
        return TextVectorEnv([env_fn] * num_envs, **vector_kwargs)

    make.__name__ = f"make_{getattr(env_cls, '__name__', 'text')}_vector"
    return make
