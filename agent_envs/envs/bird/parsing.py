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
_FENCE = "```"
_TAG = re.compile(r"[A-Za-z0-9_+-]*")


def _unfence(text: str) -> str:
    """The content of the first Markdown fence in ``text`` (to the next fence or the end),
    without its language tag line (```` ```sql ````); ``text`` itself when it has no fence.

    Plain string searches, so the cost is linear in the length of ``text`` whatever it holds
    (a regular expression with a lazy body and an optional tag line was quadratic on a fence
    followed by a long run of spaces)."""
    opening = text.find(_FENCE)
    if opening < 0:
        return text
    start = opening + len(_FENCE)
    line_end = text.find("\n", start)
    if line_end >= 0 and _TAG.fullmatch(text[start:line_end].strip(" \t")):
        start = line_end + 1
    closing = text.find(_FENCE, start)
    return text[start:] if closing < 0 else text[start:closing]


def decode_action(text: str) -> SqlAction | None:
    """``"EXECUTE: SELECT 1"`` → ``(EXECUTE, "SELECT 1")``; ``"SELECT 1"`` → ``(SUBMIT, ...)``;
    ``"```sql\\nSELECT 1\\n```"`` → ``(SUBMIT, "SELECT 1")``; empty SQL → ``None``."""
    kind = QueryKind.SUBMIT
    prefix = _PREFIX.match(text)
    if prefix is not None:
        kind = QueryKind(prefix.group(1).lower())
        text = text[prefix.end() :]
    sql = _unfence(text).strip()
    return SqlAction(kind, sql) if sql else None
