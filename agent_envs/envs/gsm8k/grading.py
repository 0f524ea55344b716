"""GSM8K grading: a reply → the number it answers; a gold solution → its number; equality.

Pure functions: no I/O, no randomness. Numbers are compared exactly, as fractions.

How a reply is read (:func:`read_answer`):

0. A reply that is not a ``str`` is unreadable. Non-ASCII text is NFKC-normalised (full-width
   digits become digits) and the minus sign U+2212 becomes ``-``. If the reply closes a
   ``<think>`` block, only the text after the last ``</think>`` is read.
1. **strict**: the final answer must be marked; the first marker found in this order wins:

   a. the last ``<answer>...</answer>`` (the rules of :mod:`agent_envs.core.parsing`): a
      ``\\boxed{}`` inside it, else the number after a ``####`` inside it, else the last number
      in it;
   b. without an answer tag, the last ``\\boxed{...}``: the last number in it;
   c. without either, the last ``####``: the number right after it (the official GSM8K
      extraction).

   A marker with no number in it is read, but it is not a number (an invalid answer). No
   marker at all: unreadable.
2. **flexible**: the strict reading when it finds a number; otherwise the last number anywhere
   in the reply. No number anywhere: unreadable.

A number is an optional sign, digits with optional ``,`` thousands groups, an optional decimal
part and an optional ``/denominator``; ``$``, ``€``, ``£``, ``%`` and trailing units are
ignored, as are LaTeX ``\\$``, ``{,}`` and ``\\text{}``; ``\\frac{a}{b}`` reads as ``a/b``. A
sign counts only when it does not follow an operand (``10-5`` reads ``10`` then ``5``). Numbers
of more than :data:`MAX_NUMBER_LENGTH` characters are not numbers.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction
from typing import Literal

from agent_envs.core.parsing import AnswerFormat, ParsedReply, parse_reply

__all__ = [
    "ANSWER_MODES",
    "MAX_NUMBER_LENGTH",
    "AnswerMode",
    "find_numbers",
    "format_number",
    "gold_number",
    "parse_number",
    "read_answer",
]

AnswerMode = Literal["strict", "flexible"]
ANSWER_MODES: tuple[str, ...] = ("strict", "flexible")
MAX_NUMBER_LENGTH = 40

_TAG_FORMAT = AnswerFormat(separator=None)
_THINK_CLOSE = re.compile(r"<\s*/\s*think\s*>", re.IGNORECASE)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BRACES = re.compile(r"[{}]")
_HASHES = "####"
_UNREADABLE = {
    "strict": "no final answer found (put the number in <answer>...</answer>)",
    "flexible": "no number found",
}

# One number: [sign] (1,234 | 1234) [.5] [/ 7], or .5; the sign only where no operand precedes.
_NUMBER = re.compile(
    r"(?:(?<![\w)\]}.])[-+])?"
    r"(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|(?<![\d.])\.\d+)"
    r"(?:/\d+(?![\d.]))?"
)
# LaTeX and currency noise, removed before numbers are read.
_LATEX = (
    (re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}"), r"\1/\2"),
    (re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}"), r" \1 "),
    (re.compile(r"\{,\}"), ","),
    (re.compile(r"\\[,!;: ]"), ""),
    (re.compile(r"\\([$%])"), r"\1"),
    (re.compile(r"[$\u20ac\u00a3\u00a5]"), ""),
)


def _normalise(reply: str) -> str:
    text = reply if reply.isascii() else unicodedata.normalize("NFKC", reply).replace("\u2212", "-")
    start = 0
    for match in _THINK_CLOSE.finditer(text):
        start = match.end()
    return text[start:]


def _clean(text: str) -> str:
    for pattern, replacement in _LATEX:
        text = pattern.sub(replacement, text)
    return text


def find_numbers(text: str) -> list[str]:
    """Every number token in ``text`` (after LaTeX/currency clean-up), in order."""
    return [match.group(0) for match in _NUMBER.finditer(_clean(text))]


def parse_number(token: str) -> Fraction | None:
    """A number token (``"-1,000.50"``, ``"3/4"``) → its exact value; ``None`` if ``token`` is
    not exactly one number (or is longer than :data:`MAX_NUMBER_LENGTH`)."""
    token = token.strip()
    if len(token) > MAX_NUMBER_LENGTH or not _NUMBER.fullmatch(token):
        return None
    numerator, _, denominator = token.replace(",", "").partition("/")
    value = Fraction(numerator)
    if denominator:
        if int(denominator) == 0:
            return None
        value /= int(denominator)
    return value


def format_number(value: Fraction) -> str:
    """The canonical text of a number: ``1000``, ``-2.5``, ``1/3`` (no terminating decimal)."""
    if value.denominator == 1:
        return str(value.numerator)
    denominator = value.denominator
    for factor in (2, 5):
        while denominator % factor == 0:
            denominator //= factor
    if denominator != 1:
        return f"{value.numerator}/{value.denominator}"
    digits = 0
    while (value * 10**digits).denominator != 1:
        digits += 1
    scaled = abs(value.numerator * 10**digits // value.denominator)
    whole, fraction = divmod(scaled, 10**digits)
    return f"{'-' if value < 0 else ''}{whole}.{fraction:0{digits}d}"


def gold_number(solution: str) -> Fraction | None:
    """The gold number of an official GSM8K solution: the number right after the first
    ``####`` (commas removed); ``None`` if there is none."""
    _, hashes, rest = solution.partition(_HASHES)
    if not hashes:
        return None
    match = _NUMBER.match(_clean(rest).lstrip())
    return None if match is None else parse_number(match.group(0))


def _boxed_content(text: str) -> str | None:
    """The content of the last-opened ``\\boxed{...}`` whose braces close, else ``None``
    (one pass over the braces, so unclosed boxes cost linear time)."""
    if "\\" not in text:
        return None
    openings = {match.end() - 1 for match in _BOXED.finditer(text)}
    if not openings:
        return None
    stack: list[int] = []
    best: tuple[int, int] | None = None
    for brace in _BRACES.finditer(text):
        if brace.group(0) == "{":
            stack.append(brace.start())
        elif stack:
            start = stack.pop()
            if start in openings and (best is None or start > best[0]):
                best = (start, brace.start())
    return None if best is None else text[best[0] + 1 : best[1]]


def _after_hashes(text: str) -> str | None:
    """The first number right after the last ``####``, ``""`` if none follows, else ``None``."""
    index = text.rfind(_HASHES)
    if index < 0:
        return None
    match = _NUMBER.match(_clean(text[index + len(_HASHES) :]).lstrip())
    return "" if match is None else match.group(0)


def _last_number(text: str) -> str | None:
    numbers = find_numbers(text)
    return numbers[-1] if numbers else None


def _strict(text: str) -> tuple[str | None, str | None]:
    """(marker content, number token in it); ``(None, None)`` when nothing is marked."""
    parsed = parse_reply(text, _TAG_FORMAT)
    if parsed.format_ok:
        content = parsed.actions[0]
        boxed = _boxed_content(content)
        if boxed is not None:
            return content, _last_number(boxed)
        after = _after_hashes(content)
        if after is not None:
            return content, after or None
        return content, _last_number(content)
    boxed = _boxed_content(text)
    if boxed is not None:
        return boxed, _last_number(boxed)
    after = _after_hashes(text)
    if after is not None:
        return _HASHES, after or None
    return None, None


def read_answer(reply: object, mode: AnswerMode) -> ParsedReply:
    """Read the final answer out of a reply; see the module docstring for the rules.

    Returns a :class:`~agent_envs.core.parsing.ParsedReply` with one action: the number token
    as written (``"1,000"``), or the marker's content when it holds no number (then
    :func:`parse_number` gives ``None``). Never raises on any input."""
    if mode not in ANSWER_MODES:
        raise ValueError(f"mode must be one of {ANSWER_MODES}, got {mode!r}")
    if not isinstance(reply, str):
        return ParsedReply((), False, f"reply must be a string, got {type(reply).__name__}")
    text = _normalise(reply)
    content, token = _strict(text)
    if token is None and mode == "flexible":
        token = _last_number(text)
    if token is not None:
        return ParsedReply((token,), True)
    if content is not None and content.strip():
        return ParsedReply((content.strip(),), True)
    return ParsedReply((), False, _UNREADABLE[mode])
