"""TRL glue: multi-turn episodes of any ``grl/*`` env as TRL rollouts, on TRL's public API.

Laid out like TRL itself: settings in :mod:`~agent_envs.adapters.trl.config`, the
``rollout_func`` route in :mod:`~agent_envs.adapters.trl.rollout`, the ``environment_factory``
route in :mod:`~agent_envs.adapters.trl.environment`, and the trainer subclasses in
:mod:`~agent_envs.adapters.trl.grpo_trainer` and :mod:`~agent_envs.adapters.trl.sft_trainer`
(those two import torch and TRL, so they are not imported here).
"""

from agent_envs.adapters.trl.config import ORACLE_STARTS, AdvantageConfig
from agent_envs.adapters.trl.environment import make_environment_factory, make_tool_dataset
from agent_envs.adapters.trl.rollout import (
    GenerationCopy,
    episode_key,
    episode_return_reward,
    make_episode_dataset,
    make_rollout_func,
    parse_episode_key,
    route_by_env,
    success_reward,
)

__all__ = [
    "ORACLE_STARTS",
    "AdvantageConfig",
    "GenerationCopy",
    "episode_key",
    "episode_return_reward",
    "make_environment_factory",
    "make_episode_dataset",
    "make_rollout_func",
    "make_tool_dataset",
    "parse_episode_key",
    "route_by_env",
    "success_reward",
]
