"""Text the model writes → Sokoban actions (one action string at a time)."""

from __future__ import annotations

from agent_envs.envs.sokoban.constants import ACTION_NAMES, Action

__all__ = ["decode_action"]

_BY_NAME = {name.lower(): Action(index) for index, name in enumerate(ACTION_NAMES)}


def decode_action(text: str) -> Action | None:
    """``"Up"``, ``"up"``, ``" UP "`` → ``Action.UP``; anything else → ``None``."""
    return _BY_NAME.get(text.strip().lower())
