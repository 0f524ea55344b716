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

   The marked answer is graded when it holds exactly one number and does not hedge it (see
   **Hedges** below); words around it are allowed (``The answer is $1,000.``, ``72 clips``,
   ``x = 5``). With two or more numbers, or none, or a hedge, it is read (``format_ok``) but it
   is not a number (:func:`parse_number` gives ``None``). An empty marker counts as absent.
2. **strict** mode reads only the marked answer; no marker at all is unreadable.
3. **flexible** mode reads the marked answer the same way when it holds a digit: a hedge inside
   a marker is never paid. With no marker, or a marker without a digit, it reads the last
   number of the reply (the last number of the last line that holds a digit), as
   lm-evaluation-harness's ``flexible-extract`` does; so untagged ``The time is 12:30`` reads
   30 there, as the harness reads it, and untagged hedges are not judged (``18 or 20`` reads
   20, ``at least 18`` reads 18); the words that are part of a number still are
   (``The answer is 18 thousand`` reads 18000).

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

**Words that are part of a number** (letter case aside) are read with their meaning:

* ``minus 18`` and ``negative 18`` are −18 (a sign word, like ``-``, is an operator after an
  operand: ``10 minus 5`` is two numbers);
* a scale after the number multiplies it: ``hundred``, ``thousand``, ``million``,
  ``billion``, ``trillion``, ``dozen`` (singular or plural, up to three in a row: ``18
  hundred thousand``), ``tenths``, ``hundredths``, ``thousandths`` (...) divide it; glued
  to the number, ``k``/``K`` is a thousand, ``M`` a million, ``bn`` a billion, and after a
  currency sign ``m`` is a million and ``b``/``B`` a billion (``$18m``; without a currency
  sign ``18m`` is 18 metres, like ``18 m``);
* ``and a half`` (``and a``/``an``/``one``/``two``/``three`` + ``half``, ``third(s)``,
  ``quarter(s)``, ``fourth(s)``, a proper fraction) adds to a plain number before any scale:
  ``18 and a half`` is 18.5, ``2 and a half million`` 2,500,000.

So ``18k`` is graded as 18000 (right against a gold of 18000, wrong against 18), ``negative
18`` as −18. Words that make the value something we do not evaluate make the number **refused**
(not a number): ``squared``, ``cubed``, ``halved``, ``doubled``, ``tripled``, ``factorial``
after it; ``half``, ``twice``, ``double``, ``triple``, ``thrice``, ``a third``, ``a quarter``,
``square root`` or ``cube root`` (each with an optional ``of``), ``sqrt``, ``√`` and
``\\sqrt`` before it.

Anything else after it is ignored: units (``5 apples``, ``12 km``, ``$18 per hour``), ``%``
(``25%`` is 25, as GSM8K's golds write percentages), a full stop. A power after a letter is part
of a unit (``12 m^2``, ``12 m²``).

**Hedges.** Two numbers are not an answer (``18 or 20``); the same holds when the other side
is a word or a bound. A marked answer that holds one number is not a number when it holds

* anywhere: ``or``, ``maybe``, ``perhaps``, ``possibly``, ``probably``, ``approximately``
  (``approx``), ``roughly``, ``at least``, ``at most`` (``at the very least`` ...),
  ``unsure``, ``uncertain``, ``not sure``, ``±``, ``≈``, ``≤``, ``≥`` (``\\approx``,
  ``\\geq``, ``\\leq``, ``\\pm``, ``\\sim``): so ``either 18 or twenty``, ``18 or more``, ``18 or
  so`` and ``maybe 18`` are not numbers;
* anywhere apart from the number, a scale word or ``and a half`` (``18 (in thousands)``,
  ``18 hours and a half``): a value word that is not part of the number;
* right before the number: ``not`` (``isn't``, ``never``), a bound (``over``, ``under``,
  ``above``, ``below``, ``about``, ``around``, ``nearly``, ``almost``, ``circa``, ``up to``,
  ``more than``, ``less than``, ``fewer than``, ``greater than``, ``close to``, ``max``,
  ``minimum`` ...) or ``<``, ``>``, ``<=``, ``>=``, ``~``; right after it: ``+`` (``18+``),
  ``ish``, ``?``, ``and up``, ``and above``, ``plus``, ``tops``, ``max``, ``minimum``;
* a number word (``zero``, ``two`` to ``ninety``) linked to the number by ``-``, ``,``,
  ``/``, ``to``, ``through``, ``and`` or ``or`` (``18 to twenty``, ``twenty, 18``). Number
  words elsewhere are prose (``The two boys drank 36 cups`` reads 36), and ``one`` is never
  counted (``each one costs $18``).

Against a gold of 18, ``at least 18``, ``18 or more``, ``maybe 18`` and ``not 18`` are all
invalid answers, never correct.

Clean-up before reading: in non-ASCII text, every Unicode decimal digit (``unicodedata.decimal``:
full-width ``１８``, Arabic-Indic ``١٨``, Devanagari ``१८``, ...) becomes its ASCII digit and the
Arabic decimal and thousands separators (``٫``, ``٬``) and percent sign become ``.``, ``,`` and
``%``; then superscripts become ``^`` powers (``10³`` → ``10^3``, not ``103``), vulgar fractions
become ``a/b`` (``2½`` → ``2 1/2``) and the text is NFKC-normalised (thin spaces become spaces);
``−``, ``–`` and ``‒`` are minus signs. LaTeX: ``\\frac{a}{b}`` (``\\dfrac``, ``\\tfrac``) reads
``a/b``; ``\\text{}`` and similar read their content; ``\\$``, ``\\%``, ``{,}`` and braces are
dropped; ``\\,`` is a space.

Tags may be written in any letter case, with spaces inside the brackets and with ASCII or
full-width brackets (``＜answer＞``). Unlike :mod:`agent_envs.core.parsing`, the reply is not
NFKC-normalised as a whole (only the text read as numbers is: NFKC can grow text 18-fold), so
full-width *letters* in a tag do not make a tag.

Limits, so that any reply is read in linear time (a 1 MB reply in milliseconds): a marked
answer longer than :data:`MAX_ANSWER_LENGTH` characters and a numeral (its digits,
separators and exponent, without sign and words) longer than :data:`MAX_NUMBER_LENGTH` are not
numbers; the words of a number are separated by at most three spaces; exponents are at most
:data:`MAX_EXPONENT`; a box nests braces at most three deep; at most
:data:`MAX_MARKER_CANDIDATES` occurrences of a marker's keyword (``answer``, ``think``,
``\\boxed{``, ``####``) are examined, from the end of the reply (more only in garbage);
flexible mode looks for the last number in the :data:`NUMBER_WINDOW` characters up to the
reply's last digit (found by ``rfind`` in an ASCII or Latin-1 reply, by one regex pass from
the end in any other: the slowest case, about 10 ms for 1 MB of such text without a digit).

Deliberate differences from the references (lm-evaluation-harness's ``gsm8k`` task and
math-verify; measured in ``benchmarks/results/gsm8k_graders.md``):

* the harness's strict-match pays the first ``#### <number>`` match and its flexible-extract
  the last number anywhere, so ``18 or 20``, ``5-3`` and ``12:30`` pay their last (or first)
  number; here a marked answer must be one number;
* the harness compares strings (``18.00`` ≠ ``18``, ``1e6`` and ``1 000`` are not numbers);
  here values are compared exactly (``18.00`` = ``18``, ``3/4`` = ``0.75``);
* the harness reads ``18 thousand``, ``18k`` and ``minus 18`` as 18 and no digits but 0-9;
  here words that are part of a number count and any script's digits are digits. GSM8K's own
  solutions give a count in the unit the question uses (``... 8 dozen`` → ``#### 8``,
  ``$4 million`` → ``#### 4``): against such a gold the answer is the bare count, as the gold
  writes it;
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
_MAX_TOKEN_LENGTH = 4 * MAX_NUMBER_LENGTH  # a numeral and its words, as written

_UNREADABLE = {
    "strict": "no final answer found (put the number in <answer>...</answer>)",
    "flexible": "no number found",
}

# ----------------------------------------------------------------- the number grammar
_SIGN = r"(?<![\w)\]}.%])[-+]"
# a sign word stands where a "-" sign would, and not after an operand (10 minus 5)
_SIGN_WORD = r"(?=[mMnN])(?<![\w)\]}.%-])(?<![0-9)\]}%][ ])(?i:minus|negative)[ ]{1,3}"
# words before a number that change its value: the number they make is refused
_OPERATOR = (
    r"(?=[A-Za-z\\\u221a])(?<![^\W\d_])"
    r"(?i:half|twice|double|triple|thrice|(?:a|one)[ ](?:third|quarter)|(?:square|cube)[ ]root)"
    r"[ ]{1,3}(?:(?i:of)[ ]{1,3})?"
    r"|\\sqrt(?:\[[^\]]{0,10}\])?[ ]?|(?<![^\W\d_])(?i:sqrt)[ ]?\(?|\u221a[ ]?"
)
_CURRENCY = "[$\u20ac\u00a3\u00a5]"
_PREFIX = rf"""(?P<prefix>
    (?P<operator>{_OPERATOR})?
    (?P<sign>{_SIGN}|(?P<sign_word>{_SIGN_WORD}))?
    (?:(?P<currency>{_CURRENCY})[ ]?(?(sign)|(?P<late_sign>[-+])?))?
)"""
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
# words after a number that are part of it (see the module docstring)
_GLUED = {"k": 10**3, "K": 10**3, "M": 10**6, "bn": 10**9}
_GLUED_AFTER_CURRENCY = {"m": "M", "b": "bn", "B": "bn"}  # $18m is a million, 18m metres
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}
_PARTS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4}
_PARTS |= {"fourth": 4, "fourths": 4}
_MULTIPLIERS = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9}
_MULTIPLIERS |= {"trillion": 10**12, "dozen": 12}
_DIVISORS = {"tenth": 10, "hundredth": 100, "thousandth": 10**3, "millionth": 10**6}
_SCALES = _MULTIPLIERS | {word: Fraction(1, value) for word, value in _DIVISORS.items()}
_REFUSED = ("squared", "cubed", "halved", "doubled", "tripled", "factorial")
_SUFFIX = rf"""(?:
    (?P<glued>[kK]|M|bn|(?(currency)[mbB]|(?!)))(?!\w)
  | (?=[ ]{{1,3}}[A-Za-z])
    (?P<fraction>[ ]{{1,3}}(?i:and)[ ]{{1,3}}(?P<count>(?i:{"|".join(_COUNTS)}))
        [ ]{{1,3}}(?P<part>(?i:{"|".join(_PARTS)}))(?!\w))?
    (?P<scale>(?:[ ]{{1,3}}(?i:{"|".join(_SCALES)})s?(?!\w)){{1,3}})?
)?
(?P<refused>(?=[ ]{{1,3}}[A-Za-z])[ ]{{1,3}}(?i:{"|".join(_REFUSED)})(?!\w))?"""
_NUMBER = re.compile(_PREFIX + _BODY + _SUFFIX, re.VERBOSE)

# ----------------------------------------------------------------- clean-up of text read as numbers
_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b"
_SUPERSCRIPT_TEXT = str.maketrans(_SUPERSCRIPTS, "0123456789+-")
_SUPERSCRIPT_RUN = re.compile(f"(?P<letter>[^\\W\\d_])?[{_SUPERSCRIPTS}]+")
_VULGAR = "\u00bc-\u00be\u2150-\u215f\u2189"
_DIGIT_BEFORE_VULGAR = re.compile(f"(?<=[0-9])(?=[{_VULGAR}])")
_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2012": "-", "\u2044": "/", "\u2215": "/"})
_ARABIC_MARKS = str.maketrans({"\u066b": ".", "\u066c": ",", "\u066a": "%"})
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")  # any Unicode decimal digit but 0-9
_ANY_DIGIT = re.compile(f"[\\d\u00b9\u00b2\u00b3\u2070\u2074-\u2079{_VULGAR}]")
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


def _ascii_digit(match: re.Match[str]) -> str:
    return str(unicodedata.decimal(match.group()))


def _superscript(match: re.Match[str]) -> str:
    letter = match.group("letter")
    if letter is not None:  # a unit's power: m² is m
        return letter
    return "^" + match.group(0).translate(_SUPERSCRIPT_TEXT)


def _clean(text: str) -> str:
    """The text as numbers are read (see the module docstring); call on bounded text only."""
    if not text.isascii():
        text = _OTHER_DIGIT.sub(_ascii_digit, text).translate(_ARABIC_MARKS)
        text = _SUPERSCRIPT_RUN.sub(_superscript, text)
        text = _DIGIT_BEFORE_VULGAR.sub(" ", text)
        text = unicodedata.normalize("NFKC", text).translate(_SIGNS)
    if "\\" in text:
        text = _FRAC.sub(_frac, text)
    for pattern, replacement in _LATEX:
        text = pattern.sub(replacement, text)
    return text


def _negative(match: re.Match[str]) -> bool:
    sign = (match.group("sign") or "") + (match.group("late_sign") or "")
    return "-" in sign or match.group("sign_word") is not None


def _token(match: re.Match[str]) -> str:
    """A number as written: its sign (``-`` for ``minus``), body and the words that are part
    of it (``18 thousand``, ``$18m`` → ``18M``), without currency or spaces around."""
    sign = "-" if _negative(match) else "+" if "+" in (match.group("sign") or "") else ""
    glued = match.group("glued")
    tail = match.group(0)[match.end("body") - match.start() :]
    if glued in _GLUED_AFTER_CURRENCY:
        tail = _GLUED_AFTER_CURRENCY[glued] + tail[len(glued) :]
    return (match.group("operator") or "") + sign + match.group("body") + tail


def _numeral(match: re.Match[str]) -> Fraction | None:
    """The value of the body alone."""
    if match.group("whole") is not None:
        numerator, denominator = int(match.group("numerator")), int(match.group("denominator"))
        if not 0 < numerator < denominator:
            return None
        return int(match.group("whole")) + Fraction(numerator, denominator)
    if match.group("power") is not None:
        return _power_of_ten(match.group("power"))
    value = Fraction(match.group("mantissa").replace(",", "").replace(" ", ""))
    exponent = match.group("exponent") or match.group("times_power")
    if exponent is not None:
        scale = _power_of_ten(exponent)
        return None if scale is None else value * scale
    if match.group("over") is not None:
        over = int(match.group("over"))
        return None if over == 0 else value / over
    return value


def _value(match: re.Match[str]) -> Fraction | None:
    if match.group("operator") or match.group("refused"):
        return None
    value = _numeral(match)
    if value is None:
        return None
    if match.group("fraction"):
        plain = match.group("mantissa") == match.group("body")  # no exponent, no fraction
        count = _COUNTS[match.group("count").lower()]
        part = _PARTS[match.group("part").lower()]
        if not plain or count >= part:
            return None
        value += Fraction(count, part)
    for word in (match.group("scale") or "").lower().split():
        value *= _SCALES[word if word in _SCALES else word[:-1]]
    glued = match.group("glued")
    if glued is not None:
        value *= _GLUED[_GLUED_AFTER_CURRENCY.get(glued, glued)]
    return -value if _negative(match) else value


def _power_of_ten(exponent: str) -> Fraction | None:
    power = int(exponent)
    return Fraction(10) ** power if abs(power) <= MAX_EXPONENT else None


def find_numbers(text: str) -> list[str]:
    """Every number in ``text`` as written (sign, numeral and the words that are part of it:
    ``-18``, ``18 thousand``, ``18 squared``), in order."""
    return [_token(match) for match in _NUMBER.finditer(_clean(text))]


def parse_number(text: str) -> Fraction | None:
    """``text`` → its exact value when it is exactly one number (``"-1,000.50"``, ``"3/4"``,
    ``"1.5x10^3"``, ``"1 000"``, ``"18 thousand"``, ``"minus 18"``); ``None`` for anything
    else, including two numbers (``"18 or 20"``), units (``"72 clips"``), refused words
    (``"18 squared"``) and numerals longer than :data:`MAX_NUMBER_LENGTH` characters."""
    text = text.strip()
    if not text or len(text) > _MAX_TOKEN_LENGTH:
        return None
    cleaned = _clean(text).strip()
    match = _NUMBER.fullmatch(cleaned)
    if match is None or len(match.group("body")) > MAX_NUMBER_LENGTH:
        return None
    return _value(match)


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
    r"[^\S\n]*+(?:(?i:minus|negative)[^\S\n]{1,3})?"
    r"(?:[-+$\u20ac\u00a3\u00a5\uff04][^\S\n]?){0,2}\.?\d"
)
_NUMBER_TAIL = 128  # characters after a number's last digit that may hold its words
_DIGITS = tuple("0123456789")
_LATIN1_DIGITS = (*_DIGITS, "\u00b9", "\u00b2", "\u00b3", "\u00bc", "\u00bd", "\u00be")

# ----------------------------------------------------------------- hedges in a marked answer
_WORD = "(?<!\\w){}(?!\\w)"
_HEDGED = re.compile(
    _WORD.format(
        r"(?:or|maybe|perhaps|possibly|probably|approx(?:imately|\.)?|roughly"
        r"|at[ ]+(?:the[ ]+(?:very[ ]+)?)?(?:least|most)|unsure|uncertain|not[ ]+sure)"
    )
    + r"|[\u00b1\u2248\u2264\u2265]|\\(?:approx|geq?|leq?|pm|sim)(?![A-Za-z])",
    re.IGNORECASE,
)
# a value word that is not part of the number: "18 (in thousands)", "18 hours and a half"
_DETACHED = re.compile(
    _WORD.format(
        rf"(?:(?:{'|'.join(_MULTIPLIERS)})s?"
        rf"|and[ ]{{1,3}}(?:{'|'.join(_COUNTS)})[ ]{{1,3}}(?:{'|'.join(_PARTS)}))"
    ),
    re.IGNORECASE,
)
_SMALL_NUMBER_WORD = (
    "(?:zero|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen"
    "|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy"
    "|eighty|ninety)"
)
_LINK = r"[ ]*(?:[-,/]|(?<!\w)(?:to|through|and|or)(?!\w))[ ]*"
# a number word on the other side of a range or list: "18 to twenty", "twenty, 18"
_PARTNER_BEFORE = re.compile(rf"(?<!\w){_SMALL_NUMBER_WORD}{_LINK}\Z", re.IGNORECASE)
_PARTNER_AFTER = re.compile(rf"{_LINK}{_SMALL_NUMBER_WORD}(?![a-z])", re.IGNORECASE)
_BOUND_BEFORE = re.compile(
    r"(?:"
    + _WORD.format(
        r"(?:not|never|over|under|above|below|about|around|nearly|almost|circa|up[ ]+to"
        r"|upwards[ ]+of|(?:more|less|fewer|greater|higher|lower)[ ]+than|close[ ]+to"
        r"|in[ ]+excess[ ]+of|max|maximum|minimum)"
    )
    + r"|n't|(?<![A-Za-z\"'/])[<>]=?|~)[ ]*\Z",
    re.IGNORECASE,
)
_BOUND_AFTER = re.compile(
    r"\+(?![0-9])|-?ish(?!\w)|[ ]*\?|[ ]+"
    + _WORD.format(r"(?:and[ ]+(?:up|above|over|more|higher)|plus|tops|max|maximum|minimum)"),
    re.IGNORECASE,
)
_BOUND_ROOM = 32  # characters either side of the number searched for a bound


def _hedged(cleaned: str, number: re.Match[str]) -> bool:
    """Whether a marked answer that holds one number hedges it or holds a value word apart
    from it (see the module docstring)."""
    start, end = number.span()
    before = cleaned[max(0, start - _BOUND_ROOM) : start]
    return bool(
        _HEDGED.search(cleaned)
        or _DETACHED.search(cleaned, 0, start)
        or _DETACHED.search(cleaned, end)
        or _BOUND_BEFORE.search(before)
        or _PARTNER_BEFORE.search(before)
        or _BOUND_AFTER.match(cleaned, end, end + _BOUND_ROOM)
        or _PARTNER_AFTER.match(cleaned, end, end + _BOUND_ROOM)
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


def _answer_tag(text: str, lowered: str, start: int) -> tuple[int, int] | None:
    close = _tag(text, lowered, "answer", True, start, len(text))
    if close is None:
        return None
    opening = _tag(text, lowered, "answer", False, start, close[0])
    if opening is None:
        return None
    inner = _first_close(text, lowered, opening[1], close)
    return opening[1], inner[0]


def _box(text: str, start: int) -> tuple[int, int] | None:
    """The span of the content of the last box whose braces close (three levels deep at most)."""
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
            return match.span("content")
        kind = found.index(at)
        found[kind] = text.rfind(_BOX_OPENERS[kind], start, at)
    return None


def _hashes(text: str, start: int) -> tuple[int, int] | None:
    """The span of the rest of the line after the last ``####`` that a number follows."""
    end = len(text)
    for _ in range(MAX_MARKER_CANDIDATES):
        at = text.rfind("####", start, end)
        if at < 0:
            return None
        if _NUMBER_START.match(text, at + 4):
            line_end = text.find("\n", at)
            return at + 4, len(text) if line_end < 0 else line_end
        end = at + 3
    return None


def _is_latin1(text: str) -> bool:
    try:
        text.encode("latin-1")  # a copy at C speed for Latin-1 text, an early error else
    except UnicodeEncodeError:
        return False
    return True


def _last_digit(text: str, start: int, end: int) -> int:
    """Where the last digit of ``text[start:end]`` is (any script; superscripts and vulgar
    fractions count), else -1: ``rfind`` for ASCII and Latin-1 text, whose only digits are
    ``0``-``9``, ``¹²³`` and ``¼½¾``; one regex pass from the end for any other text."""
    if text.isascii() or _is_latin1(text):
        digits = _DIGITS if text.isascii() else _LATIN1_DIGITS
        return max(text.rfind(digit, start, end) for digit in digits)
    found = _ANY_DIGIT.search(text[start:end][::-1])
    return -1 if found is None else end - 1 - found.start()


def _one_number(content: str) -> str | None:
    """The number a marked answer holds when it holds exactly one, unhedged; else ``None``."""
    content = content.strip()
    if len(content) > MAX_ANSWER_LENGTH:
        return None
    cleaned = _clean(content)
    numbers = _NUMBER.finditer(cleaned)
    first = next(numbers, None)
    if first is None or next(numbers, None) is not None or _hedged(cleaned, first):
        return None
    return _token(first)


def _last_number(text: str, start: int, digit: int) -> str | None:
    """The last number of ``text[start:]``, whose last digit is at ``digit``, read in the
    :data:`NUMBER_WINDOW` characters up to that digit (numbers never span lines, so reading
    from the window on is exact for any number that starts inside it)."""
    line_end = text.find("\n", digit, digit + _NUMBER_TAIL)
    window = text[
        max(start, digit - NUMBER_WINDOW) : digit + _NUMBER_TAIL if line_end < 0 else line_end
    ]
    last = None
    for last in _NUMBER.finditer(_clean(window)):  # noqa: B007 (only the last is read)
        pass
    return None if last is None else _token(last)


def _marked(text: str, lowered: str, start: int) -> tuple[int, int] | None:
    """The span of the marked answer (rule 1 of the module docstring), else ``None``."""
    tag = _answer_tag(text, lowered, start) if lowered else None
    for span in (tag, _box(text, start), _hashes(text, start)):
        if span is not None and span[0] < span[1] and not text[span[0] : span[1]].isspace():
            return span
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
    span = _marked(reply, lowered, start)
    marked = None if span is None else reply[span[0] : span[1]].strip()
    if marked is not None:
        number = _one_number(marked)
        if number is not None:
            return ParsedReply((number,), True)
        if mode == "strict":
            return ParsedReply((marked,), True)
    if mode == "flexible":
        # one pass for the last digit: inside the marker (then its hedge is never paid) or not
        end = len(reply) if span is None else span[1]
        digit = _last_digit(reply, start, end)
        if span is not None and digit >= span[0]:
            return ParsedReply((marked,), True)
        if span is not None:
            digit = max(digit, _last_digit(reply, end, len(reply)))
        number = None if digit < 0 else _last_number(reply, start, digit)
        if number is not None:
            return ParsedReply((number,), True)
    if marked is not None:
        return ParsedReply((marked,), True)
    return ParsedReply((), False, _UNREADABLE[mode])
