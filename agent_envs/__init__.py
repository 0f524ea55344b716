"""agent-envs: multi-turn text environments for LLM agents, on Gymnasium.

``import agent_envs`` registers every ``grl/*`` id; nothing else is imported until used::

    import gymnasium, agent_envs
    env = gymnasium.make("grl/Sokoban-v0")
    envs = gymnasium.make_vec("grl/Sokoban-v0", num_envs=8, group_size=4)
"""

from __future__ import annotations

import importlib
from typing import Any

from agent_envs.registration import PRESETS, register_all

__version__ = "0.1.0"
__all__ = ["PRESETS", "TextEnv", "TextVectorEnv", "__version__", "check_text_env", "register_all"]

_LAZY = {
    "TextEnv": "agent_envs.core.env",
    "TextVectorEnv": "agent_envs.vector.vector_env",
    "check_text_env": "agent_envs.testing.checker",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_envs' has no attribute {name!r}")


register_all()
