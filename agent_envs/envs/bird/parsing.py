"""Text the model writes → a BIRD action.

The answer grammar (the text inside the last ``<answer>...</answer>``)::

    answer := [prefix] sql
    prefix := "EXECUTE" [":"] | "SUBMIT" [":"]      (any case)
    sql    := SQL text, or SQL inside a Markdown fence (```sql ... ``` or ``` ... ```)

No prefix means SUBMIT: a plain SQL answer is the final query. Nothing is split: ``||`` is
SQL's concatenation operator, so the whole answer is one action. An answer with no SQL left
after removing the prefix and the fence is not an action.
"""

from __future__ import annotations

import re

from agent_envs.envs.bird.types import QueryKind, SqlAction

__all__ = ["decode_action"]

_PREFIX = re.compile(r"\s*(execute|submit)\b\s*:?", re.IGNORECASE)
# Opening fence with an optional language tag on its own line; content up to the next fence.
_FENCE = re.compile(r"```(?:[ \t]*[A-Za-z0-9_+-]*[ \t]*\n)?(.*?)(?:```|\Z)", re.DOTALL)


def decode_action(text: str) -> SqlAction | None:
    """``"EXECUTE: SELECT 1"`` → ``(EXECUTE, "SELECT 1")``; ``"SELECT 1"`` → ``(SUBMIT, ...)``;
    ``"```sql\\nSELECT 1\\n```"`` → ``(SUBMIT, "SELECT 1")``; empty SQL → ``None``."""
    kind = QueryKind.SUBMIT
    prefix = _PREFIX.match(text)
    if prefix is not None:
        kind = QueryKind(prefix.group(1).lower())
        text = text[prefix.end() :]
    fence = _FENCE.search(text)
    if fence is not None:
        text = fence.group(1)
    sql = text.strip()
    return SqlAction(kind, sql) if sql else None
