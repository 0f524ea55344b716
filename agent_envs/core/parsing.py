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

Reading a reply is linear in its length: the last tags are found by one scan of the
reversed reply, the tag patterns have no repeats that could backtrack over each other, and
only replies within the action space's length are normalised
(``benchmarks/parse_worst_case.py`` times 1 MB hostile replies on every registered id).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import NamedTuple

from agent_envs.core.spaces import MAX_REPLY_LENGTH

__all__ = ["AnswerFormat", "ParsedReply", "parse_reply"]

_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
# The tags spelt backwards, searched in the reversed reply: the first match there is the last
# tag in the reply, found in one scan (no match object per earlier tag).
_OPEN_BACKWARDS = re.compile(r">\s*rewsna\s*<", re.IGNORECASE)
_CLOSE_BACKWARDS = re.compile(r">\s*rewsna\s*/\s*<", re.IGNORECASE)
_THINK_CLOSE_BACKWARDS = re.compile(r">\s*kniht\s*/\s*<", re.IGNORECASE)


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


def _last(
    backwards: re.Pattern[str], reversed_text: str, start: int, end: int
) -> tuple[int, int] | None:
    """The span of the last tag within ``[start, end)`` of the reply, given the reply
    reversed and the tag's pattern spelt backwards."""
    size = len(reversed_text)
    found = backwards.search(reversed_text, size - end, size - start)
    return None if found is None else (size - found.end(), size - found.start())


def parse_reply(reply: object, fmt: AnswerFormat) -> ParsedReply:
    """Read the actions out of one model reply. Never raises on any input."""
    if not isinstance(reply, str):
        return ParsedReply((), False, f"reply must be a string, got {type(reply).__name__}")
    if fmt.normalize_unicode and len(reply) <= MAX_REPLY_LENGTH and not reply.isascii():
        text = unicodedata.normalize("NFKC", reply)
    else:
        text = reply
    reversed_text = text[::-1]
    think = _last(_THINK_CLOSE_BACKWARDS, reversed_text, 0, len(text))
    start = 0 if think is None else think[1]
    close = _last(_CLOSE_BACKWARDS, reversed_text, start, len(text))
    if close is None:
        return ParsedReply((), False, "no <answer>...</answer> found")
    opening = _last(_OPEN_BACKWARDS, reversed_text, start, close[0])
    if opening is None:
        return ParsedReply((), False, "</answer> without a matching <answer>")
    # The first closing tag after that opening: nested tags give the innermost answer.
    first_close = _CLOSE.search(text, opening[1])
    answer = text[opening[1] : first_close.start()]  # type: ignore[union-attr]
    if fmt.separator is None:
        actions = (answer.strip(),) if answer.strip() else ()
    else:
        actions = tuple(filter(None, map(str.strip, answer.split(fmt.separator))))
    if not actions:
        return ParsedReply((), False, "empty <answer></answer>")
    limit = fmt.max_actions_per_turn
    if limit is not None and len(actions) > limit:
        return ParsedReply(actions[:limit], True, None, len(actions) - limit)
    return ParsedReply(actions, True)
