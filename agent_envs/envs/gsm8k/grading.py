"""GSM8K grading: a reply → the one number it answers; a gold solution → its number.

Pure functions: no I/O, no randomness. Numbers are compared exactly, as fractions.

**An answer must denote exactly one number.** ``<answer>18 or 20</answer>``, ``18, 20``, a
range ``18-20``, an expression ``5-3`` or ``2+3``, a time ``12:30`` and a worked equation
``48 + 24 = 72`` are not a number (an invalid answer), never their last number: a grader that
pays the last number pays a policy for listing candidates.

How a reply is read (:func:`read_answer`):

0. A reply that is not a ``str`` is unreadable. If the reply closes a ``<think>`` block, only
   the text after the last ``</think>`` is read.
1. **The marked answer**, the first of these found:

   a. the last ``<answer>...</answer>`` (the rules of :mod:`agent_envs.core.parsing`: the last
      ``<answer>`` that a ``</answer>`` follows, up to the first ``</answer>`` after it). Its
      whole content is the answer; ``\\boxed{}`` and ``####`` inside it are markup;
   b. else the last ``\\boxed{...}`` (or ``\\fbox{``) whose braces close: its content;
   c. else the last ``####`` followed by a number (``#### 72``; a Markdown heading such as
      ``#### Step 3`` is not a marker): the rest of that line.

   The marked answer is graded when it holds exactly one number; words around it are allowed
   (``The answer is $1,000.``, ``72 clips``, ``x = 5``). With two or more numbers, or none,
   it is read (``format_ok``) but it is not a number (:func:`parse_number` gives ``None``).
   An empty marker counts as absent.
2. **strict** mode reads only the marked answer; no marker at all is unreadable.
3. **flexible** mode reads the marked answer the same way when it holds a digit: a hedge inside
   a marker is never paid. With no marker, or a marker without a digit, it reads the last
   number of the reply (the last number of the last line that holds a digit), as
   lm-evaluation-harness's ``flexible-extract`` does; so untagged ``The time is 12:30`` reads
   30 there, as the harness reads it.

**One number** (after the clean-up below) is an optional sign (``-5``; a ``-`` right after an
operand, as in ``5-3``, is an operator), an optional currency sign (``$ € £ ¥``, before or after
the sign), then one of:

* an integer, plain or in groups of three separated by ``,`` or by one space (``1,000``,
  ``1 000``: thin, narrow and no-break spaces count), with an optional decimal part (``.5``,
  ``2.50``);
* a fraction ``3/4`` (integer denominator) or a mixed number ``1 1/2`` (proper fraction);
* scientific notation: ``1e6``, ``1.5E-3``, ``1.5x10^3`` (``x``, ``×``, ``*``, ``·``,
  ``\\times``, ``\\cdot``), or a bare power of ten ``10^3``; exponents up to
  :data:`MAX_EXPONENT` in size.

Anything after it is ignored: units (``5 apples``, ``12 km``, ``$18 per hour``), ``%``
(``25%`` is 25, as GSM8K's golds write percentages), a full stop. A power after a letter is part
of a unit (``12 m^2``, ``12 m²``).

Clean-up before reading: non-ASCII text is NFKC-normalised (full-width digits become digits,
thin spaces become spaces) after superscripts become ``^`` powers (``10³`` → ``10^3``, not
``103``) and vulgar fractions become ``a/b`` (``2½`` → ``2 1/2``); ``−``, ``–`` and ``‒`` are
minus signs. LaTeX: ``\\frac{a}{b}`` (``\\dfrac``, ``\\tfrac``) reads ``a/b``; ``\\text{}`` and
similar read their content; ``\\$``, ``\\%``, ``{,}`` and braces are dropped; ``\\,`` is a
space.

Tags may be written in any letter case, with spaces inside the brackets and with ASCII or
full-width brackets (``＜answer＞``). Unlike :mod:`agent_envs.core.parsing`, the reply is not
NFKC-normalised as a whole (only the text read as numbers is: NFKC can grow text 18-fold), so
full-width *letters* in a tag do not make a tag.

Limits, so that any reply is read in linear time (a 1 MB reply in milliseconds): a marked
answer longer than :data:`MAX_ANSWER_LENGTH` characters and a number longer than
:data:`MAX_NUMBER_LENGTH` are not numbers; exponents are at most :data:`MAX_EXPONENT`; a box
nests braces at most three deep; at most :data:`MAX_MARKER_CANDIDATES` occurrences of a
marker's keyword (``answer``, ``think``, ``\\boxed{``, ``####``) are examined, from the end of
the reply (more only in garbage); flexible mode looks for the last number in the
:data:`NUMBER_WINDOW` characters up to the reply's last digit.

Deliberate differences from the references (lm-evaluation-harness's ``gsm8k`` task and
math-verify; measured in ``benchmarks/results/gsm8k_graders.md``):

* the harness's strict-match pays the first ``#### <number>`` match and its flexible-extract
  the last number anywhere, so ``18 or 20``, ``5-3`` and ``12:30`` pay their last (or first)
  number; here a marked answer must be one number;
* the harness compares strings (``18.00`` ≠ ``18``, ``1e6`` and ``1 000`` are not numbers);
  here values are compared exactly (``18.00`` = ``18``, ``3/4`` = ``0.75``);
* math-verify reads ``<answer>`` as no answer and evaluates expressions (``48 + 24 = 72``,
  ``70+2``); here the tag is the answer and an expression is not a number;
* in flexible mode a marker wins over later numbers, and a marker holding a hedge is not a
  number (no fall-back to the last number).
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction
from typing import Literal

from agent_envs.core.parsing import ParsedReply

__all__ = [
    "ANSWER_MODES",
    "MAX_ANSWER_LENGTH",
    "MAX_EXPONENT",
    "MAX_MARKER_CANDIDATES",
    "MAX_NUMBER_LENGTH",
    "NUMBER_WINDOW",
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
MAX_ANSWER_LENGTH = 1000
MAX_EXPONENT = 100
MAX_MARKER_CANDIDATES = 256
NUMBER_WINDOW = 4096

_UNREADABLE = {
    "strict": "no final answer found (put the number in <answer>...</answer>)",
    "flexible": "no number found",
}

# ----------------------------------------------------------------- the number grammar
_SIGN = r"(?<![\w)\]}.%])[-+]"
_CURRENCY = "[$\u20ac\u00a3\u00a5]"
_PREFIX = rf"(?P<prefix>{_SIGN}(?:{_CURRENCY}[ ]?)?|{_CURRENCY}[ ]?[-+]?)?"
_INTEGER = r"[0-9]{1,3}(?:,[0-9]{3}(?![0-9]))+|[0-9]{1,3}(?:[ ][0-9]{3}(?![0-9]))+|[0-9]+"
_TIMES = "[xX*\u00d7\u00b7\u22c5\u2219]"
_BODY = rf"""(?P<body>
    (?P<whole>[0-9]+)\ (?P<numerator>[0-9]+)/(?P<denominator>[0-9]+)(?![0-9.,/])
  | 10\^(?P<power>[-+]?[0-9]+)
  | (?P<mantissa>(?:{_INTEGER})(?:\.[0-9]+)?|\.[0-9]+)
    (?:
        [eE](?P<exponent>[-+]?[0-9]+)
      | \ ?{_TIMES}\ ?10\^(?P<times_power>[-+]?[0-9]+)
      | /(?P<over>[0-9]+)(?!\.[0-9])
    )?
)"""
_NUMBER = re.compile(_PREFIX + _BODY, re.VERBOSE)

# ----------------------------------------------------------------- clean-up of text read as numbers
_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b"
_SUPERSCRIPT_TEXT = str.maketrans(_SUPERSCRIPTS, "0123456789+-")
_SUPERSCRIPT_RUN = re.compile(f"(?P<letter>[^\\W\\d_])?[{_SUPERSCRIPTS}]+")
_VULGAR = "\u00bc-\u00be\u2150-\u215f\u2189"
_DIGIT_BEFORE_VULGAR = re.compile(f"(?<=[0-9])(?=[{_VULGAR}])")
_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2012": "-", "\u2044": "/", "\u2215": "/"})
_FRAC = re.compile(r"(?:(?P<digit>[0-9])\s*)?\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX = (
    (re.compile(r"\\(?:text\w*|math\w*|mbox|operatorname)\s*\{([^{}]*)\}"), r" \1 "),
    (re.compile(r"\\(?:boxed|fbox)\s*\{"), " "),
    (re.compile(r"\{,\}"), ","),
    (re.compile(r"\\(?:times|cdot)(?![A-Za-z])"), "\u00d7"),
    (re.compile(r"\\(?:left|right)(?![A-Za-z])"), ""),
    (re.compile(r"\\[,;:! ]"), " "),
    (re.compile(r"\\([$%])"), r"\1"),
    (re.compile(r"([^\W\d_])\^\{?[-+]?[0-9]+\}?"), r"\1"),
    (re.compile(r"####"), " "),
    (re.compile(r"[{}]"), ""),
)


def _frac(match: re.Match[str]) -> str:
    digit = match.group("digit")
    return ("" if digit is None else digit + " ") + f"{match.group(2)}/{match.group(3)}"


def _superscript(match: re.Match[str]) -> str:
    letter = match.group("letter")
    if letter is not None:  # a unit's power: m² is m
        return letter
    return "^" + match.group(0).translate(_SUPERSCRIPT_TEXT)


def _clean(text: str) -> str:
    """The text as numbers are read (see the module docstring); call on bounded text only."""
    if not text.isascii():
        text = _SUPERSCRIPT_RUN.sub(_superscript, text)
        text = _DIGIT_BEFORE_VULGAR.sub(" ", text)
        text = unicodedata.normalize("NFKC", text).translate(_SIGNS)
    if "\\" in text:
        text = _FRAC.sub(_frac, text)
    for pattern, replacement in _LATEX:
        text = pattern.sub(replacement, text)
    return text


def _token(match: re.Match[str]) -> str:
    """A number as written: its sign (if any) and body, without currency or spaces around."""
    prefix = match.group("prefix") or ""
    sign = "-" if "-" in prefix else "+" if "+" in prefix else ""
    return sign + match.group("body")


def _value(match: re.Match[str]) -> Fraction | None:
    if match.group("whole") is not None:
        numerator, denominator = int(match.group("numerator")), int(match.group("denominator"))
        if not 0 < numerator < denominator:
            return None
        value = int(match.group("whole")) + Fraction(numerator, denominator)
    elif match.group("power") is not None:
        value = _power_of_ten(match.group("power"))
    else:
        value = Fraction(match.group("mantissa").replace(",", "").replace(" ", ""))
        exponent = match.group("exponent") or match.group("times_power")
        if exponent is not None:
            scale = _power_of_ten(exponent)
            value = None if scale is None else value * scale
        elif match.group("over") is not None:
            over = int(match.group("over"))
            value = None if over == 0 else value / over
    if value is None:
        return None
    return -value if "-" in (match.group("prefix") or "") else value


def _power_of_ten(exponent: str) -> Fraction | None:
    power = int(exponent)
    return Fraction(10) ** power if abs(power) <= MAX_EXPONENT else None


def find_numbers(text: str) -> list[str]:
    """Every number in ``text`` as written (sign and body), in order."""
    return [_token(match) for match in _NUMBER.finditer(_clean(text))]


def parse_number(text: str) -> Fraction | None:
    """``text`` → its exact value when it is exactly one number (``"-1,000.50"``, ``"3/4"``,
    ``"1.5x10^3"``, ``"1 000"``); ``None`` for anything else, including two numbers
    (``"18 or 20"``), units (``"72 clips"``) and numbers longer than
    :data:`MAX_NUMBER_LENGTH` characters."""
    text = text.strip()
    if not text or len(text) > MAX_NUMBER_LENGTH:
        return None
    cleaned = _clean(text).strip()
    match = _NUMBER.fullmatch(cleaned)
    return None if match is None else _value(match)


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
    _, hashes, rest = solution.partition("####")
    if not hashes:
        return None
    line = rest.lstrip().split("\n", 1)[0][:MAX_ANSWER_LENGTH]
    match = _NUMBER.match(_clean(line).lstrip())
    return None if match is None else _value(match)


# ----------------------------------------------------------------- markers, found from the end
_LT, _GT, _SLASH = "[<\uff1c\ufe64]", "[>\uff1e\ufe65]", "[/\uff0f]"
_TAG_TAIL = re.compile(rf"\s*{_GT}")
_OPEN_HEAD = re.compile(rf"{_LT}\s*\Z")
_CLOSE_HEAD = re.compile(rf"{_LT}\s*{_SLASH}\s*\Z")
_HEAD_ROOM = 64  # characters before a tag's keyword searched for its "<" (and "/")
_BOX_OPENERS = ("\\boxed{", "\\fbox{")
_BOX = re.compile(
    r"\\(?:boxed|fbox)\{(?P<content>[^{}]*+(?:\{[^{}]*+(?:\{[^{}]*+\}[^{}]*+)*+\}[^{}]*+)*+)\}"
)
_NUMBER_START = re.compile(
    r"[^\S\n]*+(?:[-+$\u20ac\u00a3\u00a5\uff04][^\S\n]?){0,2}\.?[0-9\uff10-\uff19]"
)
_DIGITS = tuple("0123456789")
_NUMERIC = _DIGITS + tuple(
    chr(code)
    for code in (
        *range(0xFF10, 0xFF1A),  # full-width digits
        0x00B2,
        0x00B3,
        0x00B9,
        *range(0x2070, 0x207A),  # superscripts
        0x00BC,
        0x00BD,
        0x00BE,
        *range(0x2150, 0x2160),
        0x2189,  # vulgar fractions
    )
)


def _tag(text: str, lowered: str, keyword: str, closing: bool, start: int, end: int):
    """The span of the last ``<keyword>`` (or ``</keyword>``) inside ``text[start:end]``."""
    head = _CLOSE_HEAD if closing else _OPEN_HEAD
    for _ in range(MAX_MARKER_CANDIDATES):
        at = lowered.rfind(keyword, start, end)
        if at < 0:
            return None
        tail = _TAG_TAIL.match(text, at + len(keyword), end)
        if tail is not None:
            before = head.search(text, max(start, at - _HEAD_ROOM), at)
            if before is not None:
                return before.start(), tail.end()
        end = at + len(keyword) - 1
    return None


def _first_close(text: str, lowered: str, start: int, fallback: tuple[int, int]):
    """The span of the first ``</answer>`` at or after ``start`` (``fallback`` if too far)."""
    position = start
    for _ in range(MAX_MARKER_CANDIDATES):
        at = lowered.find("answer", position, fallback[1])
        if at < 0:
            break
        tail = _TAG_TAIL.match(text, at + 6)
        head = _CLOSE_HEAD.search(text, max(start, at - _HEAD_ROOM), at)
        if tail is not None and head is not None:
            return head.start(), tail.end()
        position = at + 1
    return fallback


def _answer_tag(text: str, lowered: str, start: int) -> str | None:
    close = _tag(text, lowered, "answer", True, start, len(text))
    if close is None:
        return None
    opening = _tag(text, lowered, "answer", False, start, close[0])
    if opening is None:
        return None
    inner = _first_close(text, lowered, opening[1], close)
    return text[opening[1] : inner[0]]


def _box(text: str, start: int) -> str | None:
    """The content of the last box whose braces close (three levels deep at most)."""
    end = text.rfind("}", start)
    if end < 0:
        return None
    found = [text.rfind(opener, start, end) for opener in _BOX_OPENERS]
    for _ in range(MAX_MARKER_CANDIDATES):
        at = max(found)
        if at < 0:
            return None
        match = _BOX.match(text, at)
        if match is not None:
            return match.group("content")
        kind = found.index(at)
        found[kind] = text.rfind(_BOX_OPENERS[kind], start, at)
    return None


def _hashes(text: str, start: int) -> str | None:
    """The rest of the line after the last ``####`` that a number follows."""
    end = len(text)
    for _ in range(MAX_MARKER_CANDIDATES):
        at = text.rfind("####", start, end)
        if at < 0:
            return None
        if _NUMBER_START.match(text, at + 4):
            line_end = text.find("\n", at)
            return text[at + 4 : len(text) if line_end < 0 else line_end]
        end = at + 3
    return None


def _last_index(text: str, start: int, chars: tuple[str, ...]) -> int:
    return max(text.rfind(char, start) for char in chars)


def _one_number(content: str) -> tuple[str | None, bool]:
    """(the number a marked answer holds, else ``None``; whether it holds a digit)."""
    content = content.strip()
    has_digit = _last_index(content, 0, _DIGITS if content.isascii() else _NUMERIC) >= 0
    if not has_digit or len(content) > MAX_ANSWER_LENGTH:
        return None, has_digit
    numbers = _NUMBER.finditer(_clean(content))
    first = next(numbers, None)
    if first is None or next(numbers, None) is not None:
        return None, True
    return _token(first), True


def _last_number(text: str, start: int) -> str | None:
    """The last number of ``text[start:]``, read in the :data:`NUMBER_WINDOW` characters up
    to its last digit (numbers never span lines, so reading from the window on is exact for
    any number that starts inside it)."""
    digit = _last_index(text, start, _DIGITS if text.isascii() else _NUMERIC)
    if digit < 0:
        return None
    line_end = text.find("\n", digit, digit + _HEAD_ROOM)
    window = text[
        max(start, digit - NUMBER_WINDOW) : digit + _HEAD_ROOM if line_end < 0 else line_end
    ]
    numbers = find_numbers(window)
    return numbers[-1] if numbers else None


def _marked(text: str, lowered: str, start: int) -> str | None:
    """The marked answer (rule 1 of the module docstring), else ``None``."""
    tag = _answer_tag(text, lowered, start) if lowered else None
    for content in (tag, _box(text, start), _hashes(text, start)):
        if content is not None and content.strip():
            return content
    return None


def _lowered(text: str) -> str:
    """``text`` in lower case with the same length, for case-blind tag search; ``""`` when it
    holds no ``<`` (so no tag)."""
    if "<" not in text and "\uff1c" not in text and "\ufe64" not in text:
        return ""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text


def _after_think(text: str, lowered: str) -> int:
    """Where the text read starts: after the last ``</think>``, else 0."""
    think = _tag(text, lowered, "think", True, 0, len(text)) if lowered else None
    return 0 if think is None else think[1]


def read_answer(reply: object, mode: AnswerMode) -> ParsedReply:
    """Read the final answer out of a reply; see the module docstring for the rules.

    Returns a :class:`~agent_envs.core.parsing.ParsedReply` with one action: the number as
    written (``"1,000"``), or the marked answer itself when it is not exactly one number (then
    :func:`parse_number` gives ``None``). Never raises on any input."""
    if mode not in ANSWER_MODES:
        raise ValueError(f"mode must be one of {ANSWER_MODES}, got {mode!r}")
    if not isinstance(reply, str):
        return ParsedReply((), False, f"reply must be a string, got {type(reply).__name__}")
    lowered = _lowered(reply)
    start = _after_think(reply, lowered)
    marked = _marked(reply, lowered, start)
    if marked is not None:
        number, has_digit = _one_number(marked)
        if number is not None:
            return ParsedReply((number,), True)
        if mode == "strict" or has_digit:
            return ParsedReply((marked.strip(),), True)
    number = _last_number(reply, start) if mode == "flexible" else None
    if number is not None:
        return ParsedReply((number,), True)
    if marked is not None:
        return ParsedReply((marked.strip(),), True)
    return ParsedReply((), False, _UNREADABLE[mode])
