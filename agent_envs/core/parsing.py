"""Model reply → action strings.

The answer format shared by every env: free text, with the action(s) inside the **last**
``<answer>...</answer>``. Rules, in order:

1. A reply that is not a ``str`` is unparseable (never an exception).
2. Non-ASCII text is NFKC-normalised first (unless the format turns it off), so full-width
   ``＜answer＞`` reads as ``<answer>``.
   Look-alike letters from other scripts (Cyrillic ``а``) are *not* folded: such a tag is not
   our tag. Only replies of at most :data:`~agent_envs.core.spaces.MAX_REPLY_LENGTH`
   characters (the action space's ``max_length``) are normalised; a longer reply is read as
   written, since NFKC can multiply a text's length (``ﷺ`` becomes 18 characters).
3. Tags are case-insensitive and may carry spaces inside the brackets (``< Answer >``).
4. If the reply has a closed ``<think>...</think>`` block, only the text after the last
   ``</think>`` is searched: an answer written while thinking is not the answer.
5. The answer opens at the last ``<answer>`` that a ``</answer>`` follows and ends at the
   first ``</answer>`` after it, so repeated answers resolve to the last complete one and
   nested tags to the innermost. A missing closing tag is a format error.
6. With a separator (``"||"`` for games), the answer is split on it; pieces are stripped and
   empty pieces skipped. Without one (SQL, free-form answers) the stripped answer is one action.
7. No action left → format error. More than ``max_actions_per_turn`` → the extra ones are
   dropped (counted in :attr:`ParsedReply.dropped`); the format is still fine.

Reading a reply is linear in its length: each tag pattern is scanned once, left to right,
and the patterns have no nested or adjacent overlapping repeats that could backtrack
(``benchmarks/parse_worst_case.py`` times 1 MB hostile replies on every registered id).
"""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from agent_envs.core.spaces import MAX_REPLY_LENGTH

__all__ = ["AnswerFormat", "ParsedReply", "parse_reply"]

_OPEN = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class AnswerFormat:
    """How an env reads the answer out of a reply.

    Args:
        separator: splits one answer into several actions (``"||"``); ``None`` keeps the
            whole answer as a single action.
        max_actions_per_turn: actions kept from one reply; ``None`` for no limit.
        normalize_unicode: NFKC-normalise non-ASCII replies before reading them (rule 2);
            off for answers whose exact characters matter (SQL string literals).
    """

    separator: str | None = "||"
    max_actions_per_turn: int | None = None
    normalize_unicode: bool = True

    def __post_init__(self) -> None:
        if self.separator is not None and (
            not isinstance(self.separator, str) or not self.separator.strip()
        ):
            raise ValueError(
                f"separator must be a non-blank string or None, got {self.separator!r}"
            )
        if self.max_actions_per_turn is not None and (
            not isinstance(self.max_actions_per_turn, int) or self.max_actions_per_turn < 1
        ):
            raise ValueError(
                "max_actions_per_turn must be a positive int or None, "
                f"got {self.max_actions_per_turn!r}"
            )

    def describe(self, example: str) -> str:
        """One sentence for an env's instructions, e.g. ``describe("Up || Left")``."""
        text = f"Think as you like, then give your answer as <answer>{example}</answer>."
        if self.separator is not None:
            text += f" Separate several actions with {self.separator!r}"
            if self.max_actions_per_turn is not None:
                text += f" (at most {self.max_actions_per_turn} per turn; extra ones are ignored)"
            text += "."
        return text


class ParsedReply(NamedTuple):
    """What :func:`parse_reply` read. ``error`` says why ``format_ok`` is false."""

    actions: tuple[str, ...]
    format_ok: bool
    error: str | None = None
    dropped: int = 0


def _last(pattern: re.Pattern[str], text: str, start: int, end: int) -> re.Match[str] | None:
    found = deque(pattern.finditer(text, start, end), maxlen=1)
    return found[0] if found else None


def parse_reply(reply: object, fmt: AnswerFormat) -> ParsedReply:
    """Read the actions out of one model reply. Never raises on any input."""
    if not isinstance(reply, str):
        return ParsedReply((), False, f"reply must be a string, got {type(reply).__name__}")
    if fmt.normalize_unicode and len(reply) <= MAX_REPLY_LENGTH and not reply.isascii():
        text = unicodedata.normalize("NFKC", reply)
    else:
        text = reply
    think = _last(_THINK_CLOSE, text, 0, len(text))
    start = 0 if think is None else think.end()
    close = _last(_CLOSE, text, start, len(text))
    if close is None:
        return ParsedReply((), False, "no <answer>...</answer> found")
    opening = _last(_OPEN, text, start, close.start())
    if opening is None:
        return ParsedReply((), False, "</answer> without a matching <answer>")
    # The first closing tag after that opening: nested tags give the innermost answer.
    close = _CLOSE.search(text, opening.end())
    answer = text[opening.end() : close.start()]  # type: ignore[union-attr]
    if fmt.separator is None:
        actions = (answer.strip(),) if answer.strip() else ()
    else:
        actions = tuple(piece for piece in map(str.strip, answer.split(fmt.separator)) if piece)
    if not actions:
        return ParsedReply((), False, "empty <answer></answer>")
    limit = fmt.max_actions_per_turn
    if limit is not None and len(actions) > limit:
        return ParsedReply(actions[:limit], True, None, len(actions) - limit)
    return ParsedReply(actions, True)
