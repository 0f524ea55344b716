"""GSM8K grading over a table of realistic model replies, in both answer modes."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from agent_envs.envs.gsm8k.grading import (
    find_numbers,
    format_number,
    gold_number,
    parse_number,
    read_answer,
)

NAN = "not a number"  # read, but the marked answer holds no number


def outcome(reply: object, mode: str) -> str | None:
    """The canonical number graded, ``NAN``, or ``None`` when nothing is readable."""
    parsed = read_answer(reply, mode)
    if not parsed.format_ok:
        assert parsed.actions == () and parsed.error
        return None
    assert len(parsed.actions) == 1
    value = parse_number(parsed.actions[0])
    return NAN if value is None else format_number(value)


# (reply, strict reading, flexible reading)
REPLY_TABLE = [
    # the answer tag, well formed
    ("<answer>72</answer>", "72", "72"),
    ("<answer> 72 </answer>", "72", "72"),
    ("<ANSWER>72</ANSWER>", "72", "72"),
    (
        "Natalia sold 48/2 = 24 clips in May.\nAltogether 48 + 24 = 72 clips.\n<answer>72</answer>",
        "72",
        "72",
    ),
    ("<think>48/2 = 24 and 48 + 24 = 72</think>\n<answer>72</answer>", "72", "72"),
    # currency, thousands, signs, decimals, fractions, units
    ("<answer>$18</answer>", "18", "18"),
    ("<answer>$1,000</answer>", "1000", "1000"),
    ("<answer>1,000,000</answer>", "1000000", "1000000"),
    ("<answer>$18.00</answer>", "18", "18"),
    ("<answer>72.</answer>", "72", "72"),
    ("<answer>-5</answer>", "-5", "-5"),
    ("<answer>\u22125</answer>", "-5", "-5"),
    ("<answer>$-3</answer>", "-3", "-3"),
    ("<answer>2.5</answer>", "2.5", "2.5"),
    ("<answer>.5</answer>", "0.5", "0.5"),
    ("<answer>3/4</answer>", "0.75", "0.75"),
    ("<answer>1/3</answer>", "1/3", "1/3"),
    ("<answer>72 clips</answer>", "72", "72"),
    ("<answer>18 dollars per day</answer>", "18", "18"),
    ("<answer>25%</answer>", "25", "25"),
    ("<answer>\uff17\uff12</answer>", "72", "72"),
    # words around one number inside the tag
    ("<answer>The answer is 72.</answer>", "72", "72"),
    ("<answer>48 + 24 = 72</answer>", NAN, NAN),  # one number, not a worked equation
    ("<answer>\\boxed{72}</answer>", "72", "72"),
    ("<answer>#### 72</answer>", "72", "72"),
    ("<answer>$\\$1{,}234$</answer>", "1234", "1234"),
    # \boxed{} without an answer tag
    ("The answer is \\boxed{72}.", "72", "72"),
    ("So the total is $\\boxed{1{,}000}$ dollars.", "1000", "1000"),
    ("\\boxed{\\$18.50}", "18.5", "18.5"),
    ("\\boxed{\\frac{3}{4}}", "0.75", "0.75"),
    ("\\boxed{72 \\text{ clips}}", "72", "72"),
    ("First \\boxed{70}, corrected: \\boxed{72}", "72", "72"),
    # #### without a tag: the number right after the last ####
    ("She makes 9 * 2 = $18 every day.\n#### 18", "18", "18"),
    ("#### 1,200", "1200", "1200"),
    ("#### 72 (48 + 24)", NAN, NAN),
    ("#### 70\nOops.\n#### 72", "72", "72"),
    # no marker: only flexible reads the last number
    ("72", None, "72"),
    ("The answer is 72.", None, "72"),
    ("Natalia sold 24 clips in May, so 72 clips altogether.", None, "72"),
    ("**Final answer: 1,000**", None, "1000"),
    ("He pays 3 x $4 = $12.\nThe answer is: 12", None, "12"),
    ("The difference is 10-5", None, "5"),
    ("The temperature is now x = -3 degrees", None, "-3"),
    ("The total is 12,345.67 dollars", None, "12345.67"),
    ("Counting 1, 2, 3 apples gives 3", None, "3"),
    ("5 + 3 = 8 apples", None, "8"),
    # thinking: only text after the last </think> is read
    ("<think>I get 70... no, 72</think>", None, None),
    ("<think>scratch: 70</think>The answer is 72.", None, "72"),
    ("<think>maybe <answer>70</answer></think><answer>72</answer>", "72", "72"),
    ("<think>70</think><think>71</think>So: <answer>72</answer>", "72", "72"),
    # several answers: the last complete tag wins, flexible prefers it to later numbers
    ("<answer>70</answer> wait, I made a mistake. <answer>72</answer>", "72", "72"),
    ("<answer>72</answer> Let me know if you need step 2.", "72", "72"),
    ("<answer>72</answer> and \\boxed{70}", "72", "72"),
    # marked but not a number
    ("<answer>seventy-two</answer>", NAN, NAN),
    ("I computed 72.\n<answer>seventy-two</answer>", NAN, "72"),
    ("#### seventy", None, None),  # `####` marks an answer only when a number follows
    ("<answer>1/0</answer>", NAN, NAN),
    ("<answer>" + "9" * 100 + "</answer>", NAN, NAN),
    # broken or missing
    ("<answer></answer>", None, None),
    ("<answer>72", None, "72"),
    ("\\boxed{72", None, "72"),
    ("I don't know.", None, None),
    ("", None, None),
    (None, None, None),
    (b"<answer>72</answer>", None, None),
]


@pytest.mark.parametrize(("reply", "strict", "flexible"), REPLY_TABLE)
def test_gsm8k_grading__reply_table(reply, strict, flexible):
    assert outcome(reply, "strict") == strict
    assert outcome(reply, "flexible") == flexible


def test_gsm8k_grading__table_is_large_and_covers_every_outcome():
    assert len(REPLY_TABLE) >= 40
    readings = {row[1] for row in REPLY_TABLE} | {row[2] for row in REPLY_TABLE}
    assert {None, NAN} <= readings


def test_gsm8k_grading__parsed_action_is_the_number_as_written():
    assert read_answer("<answer>It is $1,000.</answer>", "strict").actions == ("1,000",)
    assert read_answer("<answer>seventy</answer>", "strict").actions == ("seventy",)


def test_gsm8k_grading__unknown_mode_is_a_configuration_error():
    with pytest.raises(ValueError, match="mode"):
        read_answer("<answer>1</answer>", "lenient")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(1000), "1000"),
        (Fraction(-7), "-7"),
        (Fraction(0), "0"),
        (Fraction(5, 2), "2.5"),
        (Fraction(-5, 2), "-2.5"),
        (Fraction(3, 4), "0.75"),
        (Fraction(-1, 8), "-0.125"),
        (Fraction(1, 20), "0.05"),
        (Fraction(1, 3), "1/3"),
        (Fraction(-2, 7), "-2/7"),
    ],
)
def test_gsm8k_grading__format_number(value, text):
    assert format_number(value) == text
    assert parse_number(text) == value


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("72", Fraction(72)),
        ("+72", Fraction(72)),
        ("1,234,567", Fraction(1234567)),
        ("-0.5", Fraction(-1, 2)),
        ("1.5/2", Fraction(3, 4)),
        ("1,23", None),
        ("72 clips", None),
        ("seventy", None),
        ("", None),
        ("1" * 41, None),
    ],
)
def test_gsm8k_grading__parse_number(token, value):
    assert parse_number(token) == value


@pytest.mark.parametrize(
    ("solution", "value"),
    [
        ("Natalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72", Fraction(72)),
        ("It is 1,000.\n#### 1,000", Fraction(1000)),
        ("He loses $3.\n#### -3", Fraction(-3)),
        ("#### 72\n", Fraction(72)),
        ("The answer is 72.", None),
        ("#### none", None),
    ],
)
def test_gsm8k_grading__gold_number(solution, value):
    assert gold_number(solution) == value


def test_gsm8k_grading__find_numbers_skips_operators_and_reads_latex():
    assert find_numbers("10-5=5, then $1,000 + \\frac{1}{2} and -3") == [
        "10",
        "5",
        "5",
        "1,000",
        "1/2",
        "-3",
    ]


def test_gsm8k_grading__huge_garbage_is_read_in_linear_time():
    for reply in ("\\boxed{" * 200_000, "{" * 500_000 + "\\boxed{1", "1" * 1_000_000):
        assert outcome(reply, "flexible") in (None, NAN, "1")


# ----------------------------------------------------------------- the audit (issue 11)
@pytest.mark.parametrize("mode", ["strict", "flexible"])
@pytest.mark.parametrize(
    "reply",
    [
        "<answer>18 or 20</answer>",
        "<answer>18, 20</answer>",
        "<answer>18-20</answer>",
        "\\boxed{18 \\text{ or } 20}",
        "#### 18 or 20",
        "<answer>\\boxed{18} or \\boxed{20}</answer>",
    ],
)
def test_gsm8k_grading__a_hedge_is_not_its_last_number(reply, mode):
    assert outcome(reply, mode) == NAN


@pytest.mark.parametrize(
    ("answer", "reading"),
    [
        ("1e6", "1000000"),
        ("1.5E-3", "0.0015"),
        ("10^3", "1000"),
        ("10^{3}", "1000"),
        ("1.5 x 10^3", "1500"),
        ("1.5\u00d710\u00b3", "1500"),
        ("1 000", "1000"),
        ("1\u2009000", "1000"),
        ("1\u202f000\u202f000", "1000000"),
        ("1\u00a0000", "1000"),
        ("5-3", NAN),
        ("2+3", NAN),
        ("12:30", NAN),
        ("2^3", NAN),
    ],
)
def test_gsm8k_grading__audited_answers_denote_their_number(answer, reading):
    for mode in ("strict", "flexible"):
        assert outcome(f"<answer>{answer}</answer>", mode) == reading, mode


def test_gsm8k_grading__flexible_never_falls_back_from_a_hedge_in_a_marker():
    reply = "I think 20.\n<answer>18 or 20</answer>"
    assert outcome(reply, "flexible") == NAN
    # a marker without any digit still falls back to the last number
    assert outcome("I think 20.\n<answer>twenty</answer>", "flexible") == "20"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e6", Fraction(10**6)),
        ("10^-2", Fraction(1, 100)),
        ("1 1/2", Fraction(3, 2)),
        ("\\frac{3}{4}", Fraction(3, 4)),
        ("-$3", Fraction(-3)),
        ("1 3/2", None),  # not a proper fraction
        ("1e101", None),  # exponent over MAX_EXPONENT
        ("18 or 20", None),
        ("5-3", None),
        ("1,000 000", None),
    ],
)
def test_gsm8k_grading__parse_number_reads_exactly_one_number(text, value):
    assert parse_number(text) == value


MB = 1_000_000
STALL_SECONDS = 1.0  # a linear reader takes milliseconds; the old one took up to 5 s here


def _fill(unit: str, head: str = "", tail: str = "") -> str:
    body = MB - len(head) - len(tail)
    return head + (unit * (body // len(unit) + 1))[:body] + tail


@pytest.mark.parametrize(
    ("reply", "strict", "flexible"),
    [
        (_fill("\ufdfa"), None, None),  # NFKC grows each character 18-fold
        (_fill("1\u00bd"), None, "0.5"),
        (_fill("<answer>", tail="</answer>"), NAN, NAN),
        (_fill("<answer>", tail="72</answer>"), "72", "72"),
        (_fill("\\boxed{", tail="72}"), "72", "72"),
        (_fill("\\boxed{{", tail="}"), None, None),
        (_fill("{"), None, None),
        (_fill("####"), None, None),
        (_fill("1 ", "<answer>", "</answer>"), NAN, NAN),
        (_fill(" ", "<answer>", "72</answer>"), "72", "72"),
        (_fill("1,"), None, "1"),
        (_fill("a", tail="<answer>72</answer>"), "72", "72"),
    ],
)
def test_gsm8k_grading__1mb_adversarial_replies_are_read_without_stalling(reply, strict, flexible):
    assert len(reply) == MB
    for mode, expected in (("strict", strict), ("flexible", flexible)):
        start = time.perf_counter()
        reading = outcome(reply, mode)
        elapsed = time.perf_counter() - start
        assert reading == expected, mode
        assert elapsed < STALL_SECONDS, (mode, elapsed)
