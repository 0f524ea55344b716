"""SFT export: expert (oracle) trajectories as chat datasets for TRL's ``SFTTrainer``.

Two row formats, both with assistant-only loss:

- ``"messages"``: one row per episode, ``{"messages": [system, user, assistant, ...]}`` up to
  the last reply. Train with ``SFTConfig(assistant_only_loss=True)``; TRL then needs a chat
  template that marks assistant text with ``{% generation %}`` (SmolLM3, recent Qwen
  training templates; otherwise add the markers).
- ``"prompt_completion"``: one row per turn, ``{"prompt": history up to the observation,
  "completion": [the reply]}``. TRL's default ``completion_only_loss`` trains on the reply
  only, with any chat template.

Every row also has ``env_id``, ``seed`` and ``episode_return``. By default only successful
episodes are kept (an oracle that fails — a budget too small for the optimal plan — is not
expert data).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from adapters.engines.scripted import oracle_engine
from adapters.rollout import collect_episodes
from agent_envs.core.records import Trajectory

__all__ = ["collect_oracle_trajectories", "make_sft_dataset", "sft_rows"]

_FORMATS = ("messages", "prompt_completion")


def collect_oracle_trajectories(
    env_id: str, seeds: Iterable[int], **env_kwargs: Any
) -> list[Trajectory]:
    """One oracle episode per seed (text only: no tokenizer is involved)."""
    return collect_episodes(env_id, oracle_engine(), list(seeds), **env_kwargs)


def sft_rows(
    trajectories: Iterable[Trajectory],
    *,
    format: str = "messages",
    only_successful: bool = True,
) -> list[dict[str, Any]]:
    """Rows of ``format`` (see the module docstring) from trajectories."""
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {_FORMATS}, got {format!r}")
    rows: list[dict[str, Any]] = []
    for trajectory in trajectories:
        if only_successful and not trajectory.success:
            continue
        if not trajectory.steps:
            continue
        # system, (user, assistant) per turn, final user: drop the final observation
        messages = [dict(message) for message in trajectory.messages[:-1]]
        common = {
            "env_id": trajectory.env_id,
            "seed": trajectory.seed,
            "episode_return": trajectory.episode_return,
        }
        if format == "messages":
            rows.append({"messages": messages, **common})
            continue
        for index, message in enumerate(messages):
            if message["role"] == "assistant":
                rows.append({"prompt": messages[:index], "completion": [message], **common})
    return rows


def make_sft_dataset(
    env_id: str,
    seeds: Iterable[int],
    *,
    format: str = "messages",
    only_successful: bool = True,
    **env_kwargs: Any,
) -> Any:
    """A ``datasets.Dataset`` of oracle demonstrations of ``env_id`` for ``seeds``."""
    import datasets

    rows = sft_rows(
        collect_oracle_trajectories(env_id, seeds, **env_kwargs),
        format=format,
        only_successful=only_successful,
    )
    if not rows:
        raise ValueError(f"the oracle solved none of the episodes of {env_id} for these seeds")
    return datasets.Dataset.from_list(rows)
