"""The agent loop: an engine plays a vector env turn by turn into `Trajectory` records.

Engines, trainers and servers import from here, never the reverse: the engine interface
(:mod:`~agent_envs.adapters.loop.engine`), the chat-template token bookkeeping
(:mod:`~agent_envs.adapters.loop.chat`), the lockstep collector
(:mod:`~agent_envs.adapters.loop.collector`) and the asynchronous one
(:mod:`~agent_envs.adapters.loop.async_collector`).
"""

from agent_envs.adapters.loop.async_collector import (
    AsyncEngine,
    AsyncRolloutCollector,
    BatchingEngine,
    staleness,
)
from agent_envs.adapters.loop.chat import ChatDelta
from agent_envs.adapters.loop.collector import (
    WORKER_DIED,
    EpisodeRecorder,
    RolloutCollector,
    collect_episodes,
)
from agent_envs.adapters.loop.engine import Engine, Generation, GenerationRequest, SamplingConfig

__all__ = [
    "WORKER_DIED",
    "AsyncEngine",
    "AsyncRolloutCollector",
    "BatchingEngine",
    "ChatDelta",
    "Engine",
    "EpisodeRecorder",
    "Generation",
    "GenerationRequest",
    "RolloutCollector",
    "SamplingConfig",
    "collect_episodes",
    "staleness",
]
