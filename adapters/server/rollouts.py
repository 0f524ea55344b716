"""The batch endpoint's work: episodes against an OpenAI-compatible server, as records.

AgentGym's env servers take ``env``, ``model``, ``base_url``, ``ids`` and ``max_round`` and
run the episodes themselves; here ``ids`` are episode seeds (for dataset envs the seed picks
the item), one group of ``group_size`` episodes each, and the episodes are collected by
`agent_envs.adapters.loop.collector.RolloutCollector` with
`agent_envs.adapters.engines.openai_http.OpenAIEngine` on the chat endpoint, so they are the same
`Trajectory` records a local run writes.
"""

from __future__ import annotations

from typing import Any

from agent_envs.adapters.server.sessions import make_env

__all__ = ["run_rollouts"]


def run_rollouts(
    env_id: str,
    model: str,
    base_url: str,
    ids: list[int],
    *,
    max_round: int | None = None,
    group_size: int = 1,
    max_new_tokens: int = 256,
    sampling: dict[str, Any] | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    env_kwargs: dict[str, Any] | None = None,
    prefixes: tuple[str, ...] = ("grl/",),
) -> list[dict[str, Any]]:
    """``Trajectory.to_dict()`` of every episode, in ``ids`` order (groups consecutive)."""
    from agent_envs.adapters.engines.openai_http import OpenAIEngine
    from agent_envs.adapters.loop.collector import collect_episodes
    from agent_envs.adapters.loop.engine import SamplingConfig
    from agent_envs.adapters.server.sessions import BadEnvArguments

    if not ids:
        return []
    make_env(env_id, dict(env_kwargs or {}), prefixes).close()  # refuses bad ids and kwargs
    try:
        config = SamplingConfig(**(sampling or {}))
    except (TypeError, ValueError) as error:
        raise BadEnvArguments(f"sampling: {error}") from error
    engine = OpenAIEngine(base_url, model, sampling=config, api_key=api_key, timeout=timeout)
    try:
        trajectories = collect_episodes(
            env_id,
            engine,
            list(ids),
            group_size=group_size,
            max_turns=max_round,
            max_new_tokens=max_new_tokens,
            **(env_kwargs or {}),
        )
        return [trajectory.to_dict() for trajectory in trajectories]
    finally:
        engine.close()
