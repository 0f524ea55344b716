"""Text the model writes → Tetris actions (one action string at a time)."""

from __future__ import annotations

from collections.abc import Iterable

from agent_envs.envs.tetris.constants import ACTION_NAMES, Action

__all__ = ["action_table", "decode_action"]

_SEPARATORS = str.maketrans("", "", " _-\t")


def action_table(actions: Iterable[int]) -> dict[str, Action]:
    """Lower-case name → action, for the actions a rule set accepts."""
    return {ACTION_NAMES[action].lower(): Action(action) for action in actions}


def decode_action(text: str, table: dict[str, Action]) -> Action | None:
    """``"Left"``, ``" left "``, ``"Rotate CW"``, ``"rotate_ccw"`` → the action if `table`
    (from `action_table`) holds it: case, spaces, ``-`` and ``_`` are ignored. Anything else,
    or an action this rule set does not accept, → ``None``."""
    key = text.strip().lower()
    action = table.get(key)
    if action is None and len(key) < 32:
        action = table.get(key.translate(_SEPARATORS))
    return action
