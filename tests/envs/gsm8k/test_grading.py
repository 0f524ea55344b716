"""GSM8K grading over a table of realistic model replies, in both answer modes."""

from __future__ import annotations

import sys
import time
import unicodedata
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


# ----------------------------------------------------------------- the audit of words and scripts
def _case(name: str, *values):
    return pytest.param(*values, id=name)


# (answer inside <answer>...</answer>, the reading in both modes)
VALUE_WORDS = [
    _case("18_thousand_is_18000", "18 thousand", "18000"),
    _case("18_million_is_18000000", "18 million", "18000000"),
    _case("18_billion_is_18000000000", "18 billion", "18000000000"),
    _case("18_hundred_is_1800", "18 hundred", "1800"),
    _case("18_dozen_is_216", "18 dozen", "216"),
    _case("18_dozens_is_216", "18 dozens", "216"),
    _case("18_hundred_thousand_is_1800000", "18 hundred thousand", "1800000"),
    _case("1_5_million_is_1500000", "$1.5 million", "1500000"),
    _case("18_hundredths_is_0_18", "18 hundredths", "0.18"),
    _case("18k_is_18000", "18k", "18000"),
    _case("18K_is_18000", "$18K", "18000"),
    _case("18M_is_18000000", "18M", "18000000"),
    _case("dollar_18m_is_18000000", "$18m", "18000000"),
    _case("18bn_is_18000000000", "18bn", "18000000000"),
    _case("18m_without_currency_is_18_metres", "18m", "18"),
    _case("18kg_is_a_unit", "18kg", "18"),
    _case("18_km_is_a_unit", "18 km", "18"),
    _case("18_and_a_half_is_18_5", "18 and a half", "18.5"),
    _case("18_and_three_quarters_is_18_75", "18 and three quarters", "18.75"),
    _case("18_and_a_third_is_55_thirds", "18 and a third", "55/3"),
    _case("2_and_a_half_million_is_2500000", "2 and a half million", "2500000"),
    _case("18_and_two_halves_is_refused", "18 and two halves", NAN),
    _case("minus_18_is_minus_18", "minus 18", "-18"),
    _case("negative_18_is_minus_18", "Negative 18", "-18"),
    _case("minus_dollar_1000_is_minus_1000", "minus $1,000", "-1000"),
    _case("negative_18_thousand_is_minus_18000", "negative 18 thousand", "-18000"),
    _case("non_negative_18_is_18", "non-negative 18", "18"),
    _case("10_minus_5_is_two_numbers", "10 minus 5", NAN),
    _case("18_squared_is_refused", "18 squared", NAN),
    _case("18_cubed_is_refused", "18 cubed", NAN),
    _case("18_doubled_is_refused", "18 doubled", NAN),
    _case("half_of_36_is_refused", "half of 36", NAN),
    _case("twice_9_is_refused", "twice 9", NAN),
    _case("a_third_of_54_is_refused", "a third of 54", NAN),
    _case("square_root_of_324_is_refused", "the square root of 324", NAN),
    _case("sqrt_324_is_refused", "sqrt(324)", NAN),
    _case("radical_324_is_refused", "\u221a324", NAN),
    _case("latex_sqrt_324_is_refused", "\\sqrt{324}", NAN),
    _case("18_percent_is_18", "18 percent", "18"),
]


@pytest.mark.parametrize(("answer", "reading"), VALUE_WORDS)
def test_grading__words_of_a_number(answer, reading):
    for mode in ("strict", "flexible"):
        assert outcome(f"<answer>{answer}</answer>", mode) == reading, mode


# (marked answer) -> not a number in both modes, so never correct against a gold of 18
HEDGES = [
    _case("either_18_or_twenty_is_a_hedge", "<answer>either 18 or twenty</answer>"),
    _case("at_least_18_is_a_bound", "<answer>at least 18</answer>"),
    _case("18_at_the_very_least_is_a_bound", "<answer>18 at the very least</answer>"),
    _case("at_most_18_is_a_bound", "<answer>At most 18.</answer>"),
    _case("18_or_more_is_a_bound", "<answer>18 or more</answer>"),
    _case("18_apples_or_fewer_is_a_bound", "<answer>18 apples or fewer</answer>"),
    _case("18_or_so_is_a_hedge", "<answer>18 or so</answer>"),
    _case("maybe_18_is_a_hedge", "<answer>maybe 18</answer>"),
    _case("18_probably_is_a_hedge", "<answer>18 (probably)</answer>"),
    _case("not_18_is_a_negation", "<answer>not 18</answer>"),
    _case("isnt_18_is_a_negation", "<answer>It isn't 18</answer>"),
    _case("about_18_is_a_bound", "<answer>about 18</answer>"),
    _case("approximately_18_is_a_hedge", "<answer>approximately 18</answer>"),
    _case("nearly_18_is_a_bound", "<answer>nearly 18</answer>"),
    _case("more_than_18_is_a_bound", "<answer>more than 18</answer>"),
    _case("no_more_than_18_is_a_bound", "<answer>no more than 18</answer>"),
    _case("up_to_18_is_a_bound", "<answer>up to 18</answer>"),
    _case("18_plus_sign_is_a_bound", "<answer>18+</answer>"),
    _case("18_and_up_is_a_bound", "<answer>18 and up</answer>"),
    _case("18_max_is_a_bound", "<answer>18 max</answer>"),
    _case("18ish_is_a_hedge", "<answer>18ish</answer>"),
    _case("18_question_mark_is_a_hedge", "<answer>18?</answer>"),
    _case("tilde_18_is_a_hedge", "<answer>~18</answer>"),
    _case("x_at_least_18_symbol_is_a_bound", "<answer>x \u2265 18</answer>"),
    _case("x_greater_or_equal_18_is_a_bound", "<answer>x >= 18</answer>"),
    _case("latex_approx_18_is_a_hedge", "\\boxed{\\approx 18}"),
    _case("18_to_twenty_is_a_range", "<answer>18 to twenty</answer>"),
    _case("twenty_comma_18_is_a_list", "<answer>twenty, 18</answer>"),
    _case("eighteen_dash_20_is_a_range", "<answer>eighteen-20</answer>"),
    _case("18_in_thousands_is_a_detached_scale", "<answer>18 (in thousands)</answer>"),
    _case("18_hours_and_a_half_is_a_detached_half", "<answer>18 hours and a half</answer>"),
    _case("boxed_text_at_least_18_is_a_bound", "\\boxed{\\text{at least } 18}"),
    _case("hashes_18_or_more_is_a_bound", "#### 18 or more"),
]


@pytest.mark.parametrize("reply", HEDGES)
def test_grading__a_hedge_with_a_word_or_a_bound_is_not_a_number(reply):
    for mode in ("strict", "flexible"):
        assert outcome(reply, mode) == NAN, mode


# marked answers whose words are prose, not a hedge: (answer, reading in both modes)
PROSE = [
    _case("two_boys_drank_36_is_36", "The two boys drank a total of 36 cups", "36"),
    _case("eight_servings_need_14_is_14", "Eight servings would need 14 pints", "14"),
    _case("difference_between_them_is_18", "The difference between them is 18", "18"),
    _case("either_way_18_is_18", "Either way, 18", "18"),
    _case("each_one_costs_18_is_18", "Each one costs $18", "18"),
    _case("18_more_than_tom_is_18", "18 more than Tom", "18"),
    _case("18_left_over_is_18", "18 left over", "18"),
    _case("note_18_is_18", "Note: 18", "18"),
    _case("18_min_is_18_minutes", "18 min", "18"),
    _case("18_quarters_are_coins", "18 quarters", "18"),
    _case("18_exclaimed_is_18", "The answer is 18!", "18"),
    _case("html_bold_18_is_18", "<b>18</b>", "18"),
    _case("leftover_18_is_18", "Leftover: 18", "18"),
]


@pytest.mark.parametrize(("answer", "reading"), PROSE)
def test_grading__prose_around_one_number_is_not_a_hedge(answer, reading):
    for mode in ("strict", "flexible"):
        assert outcome(f"<answer>{answer}</answer>", mode) == reading, mode


# untagged text in flexible mode: the last number with its words; hedges there are not judged
UNTAGGED = [
    _case("untagged_18_thousand_is_18000", "The answer is 18 thousand.", "18000"),
    _case("untagged_18k_is_18000", "So she earns 18k a year.", "18000"),
    _case("untagged_minus_3_is_minus_3", "The temperature is now minus 3 degrees", "-3"),
    _case("untagged_10_minus_5_is_5", "The difference is 10 minus 5", "5"),
    _case("untagged_18_squared_is_refused", "The area is 18 squared.", NAN),
    _case("untagged_at_least_18_is_18", "She needs at least 18", "18"),
    _case("untagged_2_and_a_half_is_2_5", "Interest for 2 and a half years", "2.5"),
    _case("untagged_latin1_vulgar_half", "Le caf\u00e9 co\u00fbte 2\u00bd euros", "2.5"),
    _case("untagged_latin1_reply_reads_digits", "\u00c9t\u00e9: 18 \u00e9l\u00e8ves", "18"),
]


@pytest.mark.parametrize(("reply", "flexible"), UNTAGGED)
def test_grading__untagged_numbers_keep_their_words(reply, flexible):
    assert outcome(reply, "strict") is None
    assert outcome(reply, "flexible") == flexible


@pytest.mark.parametrize(
    ("reply", "gold", "reward"),
    [
        _case("18k_against_18000_is_correct", "<answer>18k</answer>", "18000", 1.0),
        _case("18k_against_18_is_wrong", "<answer>18k</answer>", "18", 0.0),
        _case("18_thousand_against_18_is_wrong", "<answer>18 thousand</answer>", "18", 0.0),
        _case(
            "negative_18_against_minus_18_is_correct", "<answer>negative 18</answer>", "-18", 1.0
        ),
        _case("minus_18_against_18_is_wrong", "<answer>minus 18</answer>", "18", 0.0),
        _case(
            "18_and_a_half_against_18_5_is_correct", "<answer>18 and a half</answer>", "18.5", 1.0
        ),
        _case("arabic_18_against_18_is_correct", "<answer>\u0661\u0668</answer>", "18", 1.0),
        _case("at_least_18_against_18_is_invalid", "<answer>at least 18</answer>", "18", -0.1),
        _case("18_or_more_against_18_is_invalid", "<answer>18 or more</answer>", "18", -0.1),
        _case("maybe_18_against_18_is_invalid", "<answer>maybe 18</answer>", "18", -0.1),
        _case("not_18_against_18_is_invalid", "<answer>not 18</answer>", "18", -0.1),
        _case("18_squared_against_18_is_invalid", "<answer>18 squared</answer>", "18", -0.1),
    ],
)
def test_grading__env_grades_words_on_their_value(reply, gold, reward):
    from agent_envs.envs.gsm8k import GSM8KEnv

    for mode in ("strict", "flexible"):
        env = GSM8KEnv(answer_mode=mode)
        env.reset(seed=0, options={"item": {"question": "Q?", "answer": f"#### {gold}"}})
        _, got, _, _, info = env.step(reply)
        assert got == pytest.approx(reward), mode
        assert info["success"] is (reward == 1.0), mode


# ----------------------------------------------------------------- digits of every script
def _zeros() -> list[str]:
    """The zero of every run of Unicode decimal digits (each run holds 0-9 in order)."""
    return [
        chr(code) for code in range(sys.maxunicode + 1) if unicodedata.decimal(chr(code), None) == 0
    ]


ZEROS = _zeros()


def test_grading__every_unicode_decimal_digit_is_its_digit():
    digits = [
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.decimal(chr(code), None) is not None
    ]
    assert len(digits) == 10 * len(ZEROS) > 600
    for digit in digits:
        assert parse_number(digit) == unicodedata.decimal(digit), hex(ord(digit))


@pytest.mark.parametrize("zero", ZEROS, ids=[f"U+{ord(zero):04X}" for zero in ZEROS])
def test_grading__18_in_every_script_is_18(zero):
    eighteen = chr(ord(zero) + 1) + chr(ord(zero) + 8)
    for reply, strict in (
        (f"<answer>{eighteen}</answer>", "18"),
        (f"\\boxed{{{eighteen}}}", "18"),
        (f"#### {eighteen}", "18"),
        (f"The answer is {eighteen}.", None),
    ):
        assert outcome(reply, "strict") == strict, reply
        assert outcome(reply, "flexible") == "18", reply


@pytest.mark.parametrize(
    ("answer", "reading"),
    [
        _case("arabic_indic_18_is_18", "\u0661\u0668", "18"),
        _case("devanagari_18_is_18", "\u0967\u096e", "18"),
        _case("arabic_decimal_separator_is_a_point", "\u0661\u0668\u066b\u0665", "18.5"),
        _case("arabic_thousands_separator_is_a_comma", "\u0661\u066c\u0660\u0660\u0660", "1000"),
        _case("arabic_percent_is_a_percent", "\u0662\u0665\u066a", "25"),
        _case("bengali_18_taka_is_18", "\u09e7\u09ee \u099f\u09be\u0995\u09be", "18"),
        _case("mathematical_bold_18_is_18", "\U0001d7cf\U0001d7d6", "18"),
        _case("full_width_2_and_vulgar_half_is_2_5", "\uff12\u00bd", "2.5"),
        _case("arabic_18_thousand_is_18000", "\u0661\u0668 thousand", "18000"),
        _case("arabic_18_or_20_is_a_hedge", "\u0661\u0668 or \u0662\u0660", NAN),
    ],
)
def test_grading__other_scripts_read_as_numbers(answer, reading):
    for mode in ("strict", "flexible"):
        assert outcome(f"<answer>{answer}</answer>", mode) == reading, mode


# ----------------------------------------------------------------- the number's words, as written
def test_grading__parse_number_and_find_numbers_read_the_words():
    assert parse_number("18 thousand") == 18000
    assert parse_number("minus 18") == -18
    assert parse_number("18 and a half") == Fraction(37, 2)
    assert parse_number("18 squared") is None
    assert parse_number("9" * 40 + " thousand") == int("9" * 40) * 1000
    assert parse_number("9" * 41 + " thousand") is None  # the numeral is over 40 characters
    assert find_numbers("minus 18, $18m, 18 squared and 10 minus 5") == [
        "-18",
        "18M",
        "18 squared",
        "10",
        "5",
    ]
    assert read_answer("<answer>$18m</answer>", "strict").actions == ("18M",)
    assert read_answer("<answer>Negative 18 thousand.</answer>", "strict").actions == (
        "-18 thousand",
    )


def _repeat(unit: str) -> str:
    """1 MB of whole ``unit``s (spaces before them make up the length)."""
    return " " * (MB % len(unit)) + unit * (MB // len(unit))


def test_grading__1mb_of_18_thousand_returns():
    reply = _repeat("18 thousand ")
    assert len(reply) == MB
    assert outcome(reply, "strict") is None
    assert outcome(reply, "flexible") == "18000"
    assert outcome("<answer>" + reply + "</answer>", "flexible") == NAN  # over 1000 characters


@pytest.mark.parametrize(
    ("unit", "flexible"),
    [
        ("minus ", None),
        ("half of ", None),
        ("1 and a half ", "1.5"),
        ("1k", "1000"),
        ("\u0661\u0668 ", "18"),
        ("\u0968<", "2"),
        ("18 or more ", "18"),
        ("\u4e00", None),
    ],
)
def test_grading__1mb_floods_of_words_and_scripts_return(unit, flexible):
    reply = _repeat(unit)
    assert len(reply) == MB
    assert outcome(reply, "flexible") == flexible
    assert outcome(reply, "strict") is None
