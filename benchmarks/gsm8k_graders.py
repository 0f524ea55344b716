"""GSM8K graders side by side: the project's, lm-evaluation-harness's and math-verify's.

``python -m agent_envs.benchmarks.gsm8k_graders`` grades :data:`ROWS` (real-looking replies with
their gold answer) four ways and writes ``benchmarks/results/gsm8k_graders.md``:

* the project's :func:`agent_envs.envs.gsm8k.grading.read_answer`, strict and flexible;
* lm-evaluation-harness's ``gsm8k`` task (``lm_eval/tasks/gsm8k/gsm8k.yaml``, version 3.0):
  ``strict-match`` = regex ``#### (\\-?[0-9\\.\\,]+)``, first match; ``flexible-extract`` =
  regex ``(-?[$0-9.,]{2,})|(-?[0-9]+)``, last match (``group_select: -1``), the first
  non-empty group; no match gives ``[invalid]``. Then ``exact_match`` on strings with
  ``ignore_case`` and ``regexes_to_ignore`` ``,`` / ``\\$`` / ``(?s).*#### `` / ``\\.$``
  applied to the extraction and to the gold solution (transcribed here, not imported);
* math-verify (``pip install math-verify``): ``verify(parse(gold), parse(reply))``.

The project's readings must equal each row's expected ``strict`` / ``flexible`` (the same rows
are the test table of ``tests/envs/gsm8k/test_grader_table.py``); the script stops if not.

It also times the project's reader on 1 MB adversarial replies (repeated openers, boxes,
``####``, digit and separator runs, nested braces, non-ASCII floods), side by side with the
reader of ``--baseline`` (a git commit, read with ``git show``), best and worst of
``--repeats`` runs each, and one ``GSM8KEnv.step`` per reply.
"""

from __future__ import annotations

import platform
import re
import subprocess
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from pathlib import Path

from agent_envs.benchmarks.cli import parse

from agent_envs.envs.gsm8k import GSM8KEnv
from agent_envs.envs.gsm8k.grading import format_number, parse_number, read_answer

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "benchmarks/results/gsm8k_graders.md"
GRADING = "agent_envs/envs/gsm8k/grading.py"
NAN = "not a number"  # a marked answer that is not exactly one number (an invalid answer)
LIMIT_MS = 50.0


@dataclass(frozen=True)
class Row:
    """One reply, its gold number and the project's expected readings (a canonical number,
    :data:`NAN`, or ``None`` for no readable answer)."""

    category: str
    reply: str
    gold: str
    strict: str | None
    flexible: str | None
    note: str = ""


ROWS: tuple[Row, ...] = (
    # --- a clean answer tag
    Row("tag", "<answer>72</answer>", "72", "72", "72"),
    Row(
        "tag",
        "Natalia sold 48/2 = 24 clips in May.\nAltogether 48 + 24 = 72 clips.\n<answer>72</answer>",
        "72",
        "72",
        "72",
    ),
    Row("tag", "<think>48/2 = 24 and 48 + 24 = 72</think>\n<answer>72</answer>", "72", "72", "72"),
    Row("tag", "<answer> 72 </answer>", "72", "72", "72"),
    Row("tag", "<ANSWER>72</ANSWER>", "72", "72", "72"),
    Row("tag", "<answer>The answer is 72.</answer>", "72", "72", "72"),
    Row("tag", "<answer>**72**</answer>", "72", "72", "72"),
    Row("tag", "<answer>x = 72</answer>", "72", "72", "72"),
    Row("tag", "<answer>Answer: 72 dollars.</answer>", "72", "72", "72"),
    Row("tag", "<answer>\\boxed{72}</answer>", "72", "72", "72"),
    Row("tag", "<answer>#### 72</answer>", "72", "72", "72"),
    Row("tag", "\uff1canswer\uff1e72\uff1c/answer\uff1e", "72", "72", "72", "full-width brackets"),
    Row(
        "tag",
        "<answer>72</answer>\n\nStep 2 of 3 was the hardest.",
        "72",
        "72",
        "72",
        "flexible: the tag wins over later numbers",
    ),
    Row(
        "tag",
        "<answer>72</answer> wait, I made a mistake. <answer>70</answer>",
        "72",
        "70",
        "70",
        "the last complete tag is the answer",
    ),
    Row("tag", "<think>maybe <answer>70</answer></think><answer>72</answer>", "72", "72", "72"),
    # --- currency and thousands
    Row("currency", "<answer>$18</answer>", "18", "18", "18"),
    Row("currency", "<answer>$1,000</answer>", "1000", "1000", "1000"),
    Row("currency", "<answer>1,000,000</answer>", "1000000", "1000000", "1000000"),
    Row("currency", "<answer>$18.00</answer>", "18", "18", "18", "values, not strings"),
    Row("currency", "<answer>$ 18</answer>", "18", "18", "18"),
    Row("currency", "<answer>\u20ac18</answer>", "18", "18", "18"),
    Row("currency", "<answer>18\u20ac</answer>", "18", "18", "18"),
    Row("currency", "<answer>$\\$1{,}234$</answer>", "1234", "1234", "1234"),
    Row("currency", "Janet makes 9 * $2 = $18 every day.\n#### 18", "18", "18", "18"),
    # --- units
    Row("units", "<answer>5 apples</answer>", "5", "5", "5"),
    Row("units", "<answer>12 km</answer>", "12", "12", "12"),
    Row("units", "<answer>$18 per day</answer>", "18", "18", "18"),
    Row("units", "<answer>12 m^2</answer>", "12", "12", "12", "a power after a letter is a unit"),
    Row(
        "units", "<answer>12 m\u00b2</answer>", "12", "12", "12", "a power after a letter is a unit"
    ),
    Row("units", "\\boxed{72 \\text{ clips}}", "72", "72", "72"),
    # --- percent
    Row("percent", "<answer>25%</answer>", "25", "25", "25"),
    Row("percent", "<answer>25\\%</answer>", "25", "25", "25"),
    Row("percent", "The discount is 25%.\n#### 25", "25", "25", "25"),
    Row("percent", "<answer>0.25</answer>", "25", "0.25", "0.25", "a fraction is not a percentage"),
    # --- negative numbers
    Row("negative", "<answer>-5</answer>", "-5", "-5", "-5"),
    Row("negative", "<answer>\u22125</answer>", "-5", "-5", "-5", "U+2212 minus"),
    Row("negative", "<answer>-$3</answer>", "-3", "-3", "-3"),
    Row("negative", "He is $3 short, so his balance is -3 dollars.\n#### -3", "-3", "-3", "-3"),
    # --- decimals
    Row("decimal", "<answer>2.5</answer>", "2.5", "2.5", "2.5"),
    Row("decimal", "<answer>.5</answer>", "0.5", "0.5", "0.5"),
    Row("decimal", "<answer>72.</answer>", "72", "72", "72"),
    Row("decimal", "<answer>18.0</answer>", "18", "18", "18", "values, not strings"),
    Row(
        "decimal",
        "<answer>1.000</answer>",
        "1000",
        "1",
        "1",
        "a dot is a decimal point, never a thousands separator",
    ),
    # --- fractions
    Row("fraction", "<answer>3/4</answer>", "0.75", "0.75", "0.75", "values, not strings"),
    Row("fraction", "<answer>1 1/2</answer>", "1.5", "1.5", "1.5", "mixed number"),
    Row("fraction", "<answer>2\u00bd</answer>", "2.5", "2.5", "2.5", "vulgar fraction"),
    Row("fraction", "\\boxed{\\frac{3}{4}}", "0.75", "0.75", "0.75"),
    Row("fraction", "$\\boxed{\\dfrac{5}{2}}$", "2.5", "2.5", "2.5"),
    Row("fraction", "<answer>1\\frac{1}{2} cups</answer>", "1.5", "1.5", "1.5"),
    # --- scientific notation
    Row("scientific", "<answer>1e6</answer>", "1000000", "1000000", "1000000"),
    Row("scientific", "<answer>1.5e3</answer>", "1500", "1500", "1500"),
    Row("scientific", "<answer>1.5 \u00d7 10^3</answer>", "1500", "1500", "1500"),
    Row("scientific", "<answer>10^3</answer>", "1000", "1000", "1000"),
    Row("scientific", "\\boxed{1.5 \\times 10^{3}}", "1500", "1500", "1500"),
    Row("scientific", "<answer>1.5\u00d710\u00b3</answer>", "1500", "1500", "1500", "superscript"),
    Row("scientific", "<answer>2.4 x 10^6 gallons</answer>", "2400000", "2400000", "2400000"),
    Row("scientific", "The total is 1e6 dollars", "1000000", None, "1000000"),
    # --- grouping spaces
    Row("spaces", "<answer>1 000</answer>", "1000", "1000", "1000"),
    Row("spaces", "<answer>1\u2009000</answer>", "1000", "1000", "1000", "thin space"),
    Row("spaces", "<answer>1\u202f000\u202f000</answer>", "1000000", "1000000", "1000000"),
    Row("spaces", "\\boxed{1\\,000}", "1000", "1000", "1000"),
    Row("spaces", "<answer>\uff11\uff0c\uff10\uff10\uff10</answer>", "1000", "1000", "1000"),
    Row("spaces", "He needs 1 000 bricks.", "1000", None, "1000"),
    # --- \boxed{} without a tag
    Row("boxed", "The answer is \\boxed{72}.", "72", "72", "72"),
    Row(
        "boxed",
        "Therefore, the final answer is: $\\boxed{72}$. I hope it is correct.",
        "72",
        "72",
        "72",
    ),
    Row("boxed", "So the total is $\\boxed{1{,}000}$ dollars.", "1000", "1000", "1000"),
    Row("boxed", "\\boxed{\\$18.50}", "18.5", "18.5", "18.5"),
    Row("boxed", "First \\boxed{70}, corrected: \\boxed{72}", "72", "72", "72"),
    Row("boxed", "Total: 48 + 24 = \\boxed{72", "72", None, "72", "an unclosed box is no box"),
    # --- #### without a tag
    Row(
        "####",
        "Weng earns 12/60 = $0.2 per minute.\nFor 50 minutes she earned 0.2 x 50 = $10.\n#### 10",
        "10",
        "10",
        "10",
    ),
    Row("####", "#### 1,200", "1200", "1200", "1200"),
    Row("####", "#### 70\nWait, that's wrong.\n#### 72", "72", "72", "72", "the last marker"),
    Row(
        "####",
        "#### Step 1: add the clips\n48 + 24 = 72",
        "72",
        None,
        "72",
        "a Markdown heading is not a marker",
    ),
    Row("####", "#### 72 (48 + 24)", "72", NAN, NAN, "three numbers after ####"),
    # --- hedges: two numbers are not an answer
    Row("hedge", "<answer>18 or 20</answer>", "20", NAN, NAN, "hedge"),
    Row("hedge", "<answer>18, 20</answer>", "20", NAN, NAN, "hedge"),
    Row("hedge", "<answer>18-20</answer>", "20", NAN, NAN, "range"),
    Row("hedge", "<answer>between 18 and 20</answer>", "20", NAN, NAN, "range"),
    Row("hedge", "<answer>20 (or 18 if she keeps one)</answer>", "20", NAN, NAN, "hedge"),
    Row("hedge", "<answer>\\boxed{18} or \\boxed{20}</answer>", "20", NAN, NAN, "hedge"),
    Row("hedge", "\\boxed{18 \\text{ or } 20}", "20", NAN, NAN, "hedge"),
    Row("hedge", "#### 18 or 20", "20", NAN, NAN, "hedge"),
    Row("hedge", "<answer>18/20</answer>", "20", "0.9", "0.9", "a fraction is one number"),
    Row("hedge", "<answer>1,0000</answer>", "10000", NAN, NAN, "malformed grouping"),
    Row("hedge", "<answer>72 clips, 24 in May</answer>", "72", NAN, NAN, "two numbers"),
    Row(
        "tag",
        "I computed 18 or 20, not sure.\n<answer>20</answer>",
        "20",
        "20",
        "20",
        "doubt outside the tag is allowed",
    ),
    # --- expressions, times
    Row("expression", "<answer>5-3</answer>", "3", NAN, NAN, "expression"),
    Row("expression", "<answer>2+3</answer>", "3", NAN, NAN, "expression"),
    Row("expression", "<answer>5 * 4</answer>", "4", NAN, NAN, "expression"),
    Row("expression", "<answer>2^3</answer>", "3", NAN, NAN, "only 10^n is notation"),
    Row("expression", "<answer>70+2</answer>", "72", NAN, NAN, "not evaluated"),
    Row("expression", "<answer>48 + 24 = 72</answer>", "72", NAN, NAN, "the tag holds one number"),
    Row("expression", "<answer>12:30</answer>", "30", NAN, NAN, "time"),
    Row("expression", "<answer>3:45 pm</answer>", "45", NAN, NAN, "time"),
    Row("expression", "<answer>2 hours and 30 minutes</answer>", "150", NAN, NAN, "two numbers"),
    # --- no marker: flexible reads the last number (the harness's flexible-extract)
    Row("untagged", "72", "72", None, "72"),
    Row("untagged", "The answer is 72.", "72", None, "72"),
    Row("untagged", "Natalia sold 24 clips in May, so 72 clips altogether.", "72", None, "72"),
    Row("untagged", "**Final answer: 1,000**", "1000", None, "1000"),
    Row("untagged", "**Answer:** 72 clips", "72", None, "72"),
    Row("untagged", "So she has 18 or 20 marbles left.", "20", None, "20", "untagged: last number"),
    Row("untagged", "The difference is 5-3", "3", None, "3", "untagged: last number"),
    Row("untagged", "The meeting ends at 12:30", "30", None, "30", "untagged: last number"),
    Row("untagged", "So the answer is 72 \\text{ clips}", "72", None, "72"),
    # --- thinking: only the text after </think> is read
    Row("think", "<think>I get 70... no, 72</think>", "72", None, None),
    Row("think", "<think>scratch: 70</think>The answer is 72.", "72", None, "72"),
    Row("think", "<think>70</think><think>71</think>So: <answer>72</answer>", "72", "72", "72"),
    # --- marked but not a number
    Row("not a number", "<answer>seventy-two</answer>", "72", NAN, NAN),
    Row(
        "not a number",
        "I computed 72.\n<answer>seventy-two</answer>",
        "72",
        NAN,
        "72",
        "flexible: a marker without a digit falls back to the last number",
    ),
    Row("not a number", "<answer>1/0</answer>", "0", NAN, NAN),
    Row("not a number", "<answer>1e400</answer>", "0", NAN, NAN, "exponent over 100"),
    Row("not a number", "<answer></answer>", "0", None, None, "an empty tag is no tag"),
    Row("not a number", "I don't know.", "0", None, None),
)


# ----------------------------------------------------------------- the project
def project_reading(reply: str, mode: str, reader: Callable = read_answer) -> str | None:
    """The canonical number read, :data:`NAN`, or ``None`` when nothing is readable."""
    parsed = reader(reply, mode)
    if not parsed.format_ok:
        return None
    value = parse_number(parsed.actions[0])
    return NAN if value is None else format_number(value)


def _correct(reading: str | None, gold: str) -> bool:
    return reading not in (None, NAN) and parse_number(reading) == Fraction(gold)


# ----------------------------------------------------------------- lm-evaluation-harness
LM_EVAL_COMMIT = "4e7e0d47f33bc71070c1d38394bafbb52b117163"  # where the yaml was read
LM_EVAL_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
LM_EVAL_FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
LM_EVAL_IGNORE = (",", "\\$", "(?s).*#### ", "\\.$")


def lm_eval_extract(reply: str, pattern: re.Pattern[str], group_select: int) -> str:
    """The harness's ``regex`` filter, then ``take_first``."""
    matches = pattern.findall(reply)
    if not matches:
        return "[invalid]"
    match = matches[group_select]
    if isinstance(match, tuple):
        match = next((group for group in match if group), "[invalid]")
    return match.strip()


def lm_eval_correct(extracted: str, gold: str) -> bool:
    """The harness's ``exact_match`` with the gsm8k task's settings; the reference is a
    solution ending in ``#### <gold>``."""

    def normalise(text: str) -> str:
        for ignore in LM_EVAL_IGNORE:
            text = re.sub(ignore, "", text)
        return text.lower()

    return normalise(extracted) == normalise(f"... so the answer is\n#### {gold}")


# ----------------------------------------------------------------- math-verify
def math_verify_grade(reply: str, gold: str) -> tuple[str, bool]:
    from math_verify import parse, verify

    parsed = parse(reply)
    shown = str(parsed[0]) if parsed else "(none)"
    return shown, bool(verify(parse(gold), parsed))


# ----------------------------------------------------------------- the table
def _cell(reading: str | None, correct: bool) -> str:
    text = "(none)" if reading is None else "(not a number)" if reading == NAN else reading
    return f"{'✓' if correct else '✗'} {text}"


def _code(text: str) -> str:
    shown = text.replace("\n", "⏎").replace("|", "\\|")
    return f"`{shown}`" if "`" not in shown else shown


def grade_rows() -> list[dict[str, object]]:
    graded = []
    for row in ROWS:
        strict = project_reading(row.reply, "strict")
        flexible = project_reading(row.reply, "flexible")
        if (strict, flexible) != (row.strict, row.flexible):
            raise SystemExit(
                f"project reading changed for {row.reply!r}: {(strict, flexible)} "
                f"!= expected {(row.strict, row.flexible)}"
            )
        lm_strict = lm_eval_extract(row.reply, LM_EVAL_STRICT, 0)
        lm_flexible = lm_eval_extract(row.reply, LM_EVAL_FLEXIBLE, -1)
        verified_text, verified = math_verify_grade(row.reply, row.gold)
        graded.append(
            {
                "row": row,
                "strict": _correct(strict, row.gold),
                "flexible": _correct(flexible, row.gold),
                "lm_strict": (lm_strict, lm_eval_correct(lm_strict, row.gold)),
                "lm_flexible": (lm_flexible, lm_eval_correct(lm_flexible, row.gold)),
                "math_verify": (verified_text, verified),
            }
        )
    return graded


def table(graded: list[dict[str, object]]) -> list[str]:
    lines = [
        "| # | kind | reply | gold | ours strict | ours flexible | lm-eval strict"
        " | lm-eval flexible | math-verify | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for index, item in enumerate(graded, start=1):
        row = item["row"]
        cells = [
            str(index),
            row.category,
            _code(row.reply),
            row.gold,
            _cell(row.strict, item["strict"]),
            _cell(row.flexible, item["flexible"]),
            f"{'✓' if item['lm_strict'][1] else '✗'} {_code(item['lm_strict'][0])}",
            f"{'✓' if item['lm_flexible'][1] else '✗'} {_code(item['lm_flexible'][0])}",
            f"{'✓' if item['math_verify'][1] else '✗'} {_code(item['math_verify'][0])}",
            row.note,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def agreement(graded: list[dict[str, object]]) -> list[str]:
    columns = ("strict", "flexible", "lm_strict", "lm_flexible", "math_verify")
    names = ("ours strict", "ours flexible", "lm-eval strict", "lm-eval flexible", "math-verify")

    def verdict(item, column) -> bool:
        value = item[column]
        return value if isinstance(value, bool) else value[1]

    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines.append(
        "| correct | "
        + " | ".join(
            f"{sum(verdict(item, column) for item in graded)}/{len(graded)}" for column in columns
        )
        + " |"
    )
    hedges = [item for item in graded if item["row"].category in ("hedge", "expression")]
    lines.append(
        "| hedges and expressions paid | "
        + " | ".join(
            f"{sum(verdict(item, column) for item in hedges)}/{len(hedges)}" for column in columns
        )
        + " |"
    )
    return lines


# ----------------------------------------------------------------- adversarial replies
MB = 1_000_000


def _fill(unit: str, head: str = "", tail: str = "") -> str:
    body = MB - len(head) - len(tail)
    return head + (unit * (body // len(unit) + 1))[:body] + tail


ADVERSARIAL: dict[str, str] = {
    "<answer> openers": _fill("<answer>", tail="</answer>"),
    "<answer> openers, spaced": _fill("< answer ", tail="</answer>"),
    "</answer> closers": _fill("</answer>"),
    "</answer without >": _fill("</answer"),
    "answer words in a tag": _fill(" answer", "<answer>72", "</answer>"),
    "nested tags": _fill("<answer>", tail="72" + "</answer>" * 1000),
    "tag pairs": _fill("<answer>1</answer>"),
    "</think> closers": _fill("</think>"),
    "</think without >": _fill("</think"),
    "< flood": _fill("<"),
    "> flood": _fill(">"),
    "< and spaces": _fill("<" + " " * 99),
    "\\boxed{ openers": _fill("\\boxed{"),
    "\\boxed{ openers, closed once": _fill("\\boxed{", tail="}"),
    "\\boxed{{ openers, closed once": _fill("\\boxed{{", tail="}"),
    "\\boxed{ + long content": "\\boxed{" + _fill("a", tail="}")[7:],
    "nested braces": _fill("{"),
    "nested braces, closed": _fill("{", tail="}" * 1000),
    "brace pairs": _fill("{}"),
    "\\frac{ openers": _fill("\\frac{"),
    "\\frac{1}{ repeats": _fill("\\frac{1}{"),
    "\\text{ openers": _fill("\\text{"),
    "#### repeats": _fill("####"),
    "#### + space repeats": _fill("#### "),
    "#### 1 repeats": _fill("#### 1"),
    "#### then words": _fill("#### Step\n"),
    "digits": _fill("1"),
    "digits and commas": _fill("1,"),
    "digit groups": _fill(",000", "1"),
    "digit space groups": _fill(" 000", "1"),
    "digits and spaces": _fill("1 "),
    "digits and dots": _fill("1."),
    "digits and slashes": _fill("1/"),
    "digits and colons": _fill("1:"),
    "exponents": _fill("1e"),
    "powers": _fill("10^"),
    "times ten": _fill("1x10^"),
    "signs": _fill("-"),
    "dollars": _fill("$1"),
    "spaces then a digit": _fill(" ", tail="1"),
    "letters": _fill("a"),
    "tag holding digits and spaces": _fill("1 ", "<answer>", "</answer>"),
    "tag holding boxes": _fill("\\boxed{1 ", "<answer>", "</answer>"),
    "full-width digits": _fill("\uff11"),
    "thin spaces": _fill("1\u2009"),
    "superscripts": _fill("\u00b3"),
    "vulgar fractions": _fill("1\u00bd"),
    "NFKC expansion (U+FDFA)": _fill("\ufdfa"),
    "non-ASCII + < flood": _fill("\u00e9<"),
    "full-width tag openers": _fill("\uff1canswer\uff1e", tail="</answer>"),
}


def load_baseline(commit: str) -> types.ModuleType:
    source = subprocess.run(
        ["git", "show", f"{commit}:{GRADING}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType(f"gsm8k_grading_{commit}")
    exec(compile(source, f"{commit}:{GRADING}", "exec"), module.__dict__)
    return module


def _best_worst(function: Callable[[], object], repeats: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1e3)
    return min(samples), max(samples)


def _step(env: GSM8KEnv, reply: str) -> None:
    env.reset(seed=0, options={"item": {"question": "How many clips?", "answer": "#### 72"}})
    env.step(reply)


def time_adversarial(repeats: int, baseline: types.ModuleType | None) -> list[dict[str, object]]:
    results = []
    for name, reply in ADVERSARIAL.items():
        assert len(reply) == MB, name
        result: dict[str, object] = {"name": name}
        for mode in ("strict", "flexible"):
            result[mode] = _best_worst(partial(read_answer, reply, mode), repeats)
            if baseline is not None:
                reader = partial(baseline.read_answer, reply, mode)
                result[f"baseline_{mode}"] = _best_worst(reader, repeats)
            env = GSM8KEnv(answer_mode=mode)
            result[f"step_{mode}"] = _best_worst(partial(_step, env, reply), repeats)
        results.append(result)
    return results


def timing_table(results: list[dict[str, object]], baseline: str | None) -> list[str]:
    def span(value: tuple[float, float]) -> str:
        return f"{value[0]:.1f} ({value[1]:.1f})"

    header = "| 1 MB reply | ours strict | ours flexible | env step strict | env step flexible |"
    rule = "|---|---|---|---|---|"
    if baseline:
        header += f" {baseline} strict | {baseline} flexible |"
        rule += "---|---|"
    lines = [header, rule]
    for result in results:
        cells = [result["name"], span(result["strict"]), span(result["flexible"])]
        cells += [span(result["step_strict"]), span(result["step_flexible"])]
        if baseline:
            cells += [span(result["baseline_strict"]), span(result["baseline_flexible"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


@dataclass
class Args:
    """Benchmark settings (every field is a command-line flag)."""

    repeats: int = 5
    """timed runs per adversarial reply (best and worst reported)"""
    baseline: str = ""
    """a git commit whose reader is timed beside ours ("": none)"""
    output: Path = OUTPUT
    """where the Markdown report goes"""


def main(args: Args) -> str:
    from importlib.metadata import version

    graded = grade_rows()
    baseline = load_baseline(args.baseline) if args.baseline else None
    timings = time_adversarial(args.repeats, baseline)
    ours = [(r[key], r["name"]) for r in timings for key in ("strict", "flexible")]
    steps = [(r[key], r["name"]) for r in timings for key in ("step_strict", "step_flexible")]
    worst = max(best for (best, _), _ in ours)
    worst_step = max(best for (best, _), _ in steps)
    worst_single = max(slowest for (_, slowest), _ in ours + steps)
    summary = (
        f"Worst best-of time of the reader: **{worst:.1f} ms**; of a step: **{worst_step:.1f}"
        f" ms**; slowest single run of either: {worst_single:.1f} ms (limit {LIMIT_MS:.0f} ms)."
    )
    if baseline is not None:
        old = [
            (r[key], r["name"]) for r in timings for key in ("baseline_strict", "baseline_flexible")
        ]
        (old_best, _), old_name = max(old, key=lambda item: item[0][0])
        summary += (
            f" The reader at `{args.baseline}` (same run): worst best-of {old_best:.0f} ms"
            f" ({old_name}), {sum(best > LIMIT_MS for (best, _), _ in old)} of {len(old)}"
            f" reply-mode pairs over {LIMIT_MS:.0f} ms; ours: "
            f"{sum(best > LIMIT_MS for (best, _), _ in ours)}."
        )
    lines = [
        "# GSM8K graders side by side",
        "",
        "Generated by `python -m agent_envs.benchmarks.gsm8k_graders"
        + (f" --baseline {args.baseline}" if args.baseline else "")
        + f"` (Python {platform.python_version()}, math-verify {version('math-verify')})."
        " ✓ = graded correct against the gold.",
        "",
        "* **ours**: `agent_envs.envs.gsm8k.grading.read_answer` (the reading shown is the number"
        " graded; *(not a number)*: a marked answer that is not exactly one number, an invalid"
        " answer; *(none)*: no readable answer).",
        "* **lm-eval**: lm-evaluation-harness `gsm8k` (task version 3.0, `gsm8k.yaml` read at"
        f" commit `{LM_EVAL_COMMIT}`): strict-match regex"
        " `#### (\\-?[0-9\\.\\,]+)` (first match), flexible-extract regex"
        " `(-?[$0-9.,]{2,})|(-?[0-9]+)` (last match), then `exact_match` ignoring case, `,`,"
        " `$`, everything up to `#### ` and a final `.`; the shown value is the extraction.",
        "* **math-verify**: `verify(parse(gold), parse(reply))`; the shown value is `parse`'s"
        " first result.",
        "",
        "## Agreement",
        "",
        *agreement(graded),
        "",
        "## Deliberate differences",
        "",
        "* **A marked answer must be one number.** The harness pays the last (flexible) or first"
        " (strict) number, math-verify evaluates expressions and sets, so a hedge (`18 or 20`),"
        " a range (`18-20`), an expression (`5-3`, `70+2`, `48 + 24 = 72`) or a time (`12:30`)"
        " can earn the reward there. Here they are *not a number* (an invalid answer, never"
        " their last number) in strict mode and in flexible mode alike.",
        "* **Numbers are values.** The harness compares strings: `18.00`, `18.0`, `3/4` vs"
        " `0.75`, `1e6`, `10^3`, `1 000` (thin spaces too) and `$ 18` fail there; here they are"
        " the number they denote. `1.000` is 1 (a dot is always a decimal point).",
        "* **The answer tag.** math-verify does not read `<answer>...</answer>` (it finds no"
        " answer in `<answer>72</answer>`); the harness's strict-match reads only `####`. Here"
        " the tag comes first, then the last closed `\\boxed{}`, then the last `#### <number>`"
        " (`#### Step 1` is a Markdown heading, not a marker; the harness's strict-match takes"
        " the *first* `####`, we take the last, as a correction).",
        "* **Flexible mode** keeps the harness's last-number rule for untagged text (`The"
        " meeting ends at 12:30` reads 30, as there), but a marker wins over later numbers and a"
        " marker that holds a hedge is not paid; a marker without a digit (`seventy-two`) falls"
        " back to the last number.",
        "* **Only text after `</think>` is read**, in every mode; the others read the thinking.",
        "",
        f"## The table ({len(graded)} replies)",
        "",
        *table(graded),
        "",
        "## Adversarial 1 MB replies",
        "",
        f"Milliseconds per reply, best (worst) of {args.repeats} runs, on a shared machine."
        " `env step` is `GSM8KEnv.reset` + `step` with the reply. " + summary,
        "",
        *timing_table(timings, args.baseline),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> Args:
    return parse(
        Args,
        argv,
        prog="python -m agent_envs.benchmarks.gsm8k_graders",
        description=__doc__.split("\n\n")[0],
    )


if __name__ == "__main__":
    arguments = parse_args()
    report = main(arguments)
    arguments.output.write_text(report, encoding="utf-8")
    print(report)
