"""Text the model reads: the GSM8K instructions and observations, in ASCII.

Questions from the official data hold a few non-ASCII characters (curly quotes, dashes, ``x``
and ``/`` signs, currency signs, accents); :func:`ascii_text` spells them in ASCII so every
observation stays inside the declared charset.
"""

from __future__ import annotations

import re
import unicodedata

from agent_envs.core.parsing import AnswerFormat
from agent_envs.core.spaces import ASCII_CHARSET

__all__ = ["NOT_A_NUMBER", "ascii_text", "instructions", "observation"]

_SPELLED = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
    "\u00d7": "x",
    "\u00f7": "/",
    "\u2044": "/",
    "\u20ac": "EUR ",
    "\u00a3": "GBP ",
    "\u00a2": "c",
    "\u221a": "sqrt",
    "\u00b2": "^2",
    "\u00b3": "^3",
    "\u00b0": " degrees",
    "\u2026": "...",
    "\u00a0": " ",
    "\u2028": "\n",
    "\u2029": "\n",
    "\u200b": "",
    "\ufeff": "",
    "\r\n": "\n",
    "\r": "\n",
    "\u0410": "A",  # a Cyrillic capital A stands for "A" in one official question
}
_SPELLED_PATTERN = re.compile("|".join(map(re.escape, sorted(_SPELLED, key=len, reverse=True))))
_DIGIT_BEFORE_FRACTION = re.compile(r"(\d)(?=[\u00bc\u00bd\u00be])")
_ALLOWED = frozenset(ASCII_CHARSET)


def ascii_text(text: str) -> str:
    """``text`` in the observation charset: known symbols spelled out (``2½`` → ``2 1/2``,
    ``€5`` → ``EUR 5``, ``é`` → ``e``), anything else unknown → ``?``."""
    if text.isascii() and "\r" not in text:
        return "".join(char if char in _ALLOWED else " " for char in text)
    text = _DIGIT_BEFORE_FRACTION.sub(r"\1 ", text)
    text = _SPELLED_PATTERN.sub(lambda match: _SPELLED[match.group(0)], text)
    text = unicodedata.normalize("NFKD", text)
    text = _SPELLED_PATTERN.sub(lambda match: _SPELLED[match.group(0)], text)
    out = []
    for char in text:
        if char in _ALLOWED:
            out.append(char)
        elif unicodedata.combining(char):
            continue
        elif char.isspace() or unicodedata.category(char) == "Cc":
            out.append(" ")
        else:
            out.append("?")
    return "".join(out)


def instructions(
    *,
    max_turns: int,
    answer_mode: str,
    format_penalty: float,
    invalid_action_penalty: float,
    answer_format: AnswerFormat,
) -> str:
    """The system prompt of a GSM8K episode."""
    marked = (
        "Graded: the last <answer>...</answer>; without that tag, the last \\boxed{}, else the"
        " number right after the last '####'. It must hold exactly one number: two numbers, a"
        " range or an expression (18 or 20, 18-20, 5-3) is not a number."
    )
    if answer_mode == "strict":
        graded = marked + " A reply with none of these has no readable answer."
    else:
        graded = marked + " If none of these holds a digit, the last number in your reply is."
    if max_turns == 1:
        turns = "You have one turn: a correct answer earns 1, a wrong one 0."
    else:
        turns = (
            f"You have {max_turns} turns: a correct answer earns 1 and ends the episode; after a"
            " wrong answer (0) you are told it is wrong and may answer again."
        )
    return "\n".join(
        (
            "Solve the grade-school math word problem in the next message. Reason step by step.",
            answer_format.describe("42") + " The final answer is a single number.",
            "If you write <think>...</think>, only the text after </think> is read.",
            graded,
            "Signs, decimals, fractions (3/4, 1 1/2) and scientific notation (1e6, 1.5x10^3)"
            " count; '$', '%', thousands commas or spaces and units after the number are"
            " ignored, so 1,000, 1 000 and $1000.00 are the same answer.",
            turns,
            f"A reply with no readable answer earns {format_penalty:+g}; an answer that is not a"
            f" single number earns {invalid_action_penalty:+g}.",
        )
    )


def observation(
    question: str,
    *,
    solved_with: str | None,
    wrong_answer: str | None,
    turns_left: int,
    gold: str,
) -> str:
    """The observation text: the question, or the verdict on the last answer."""
    if solved_with is not None:
        return f"Correct: {solved_with} is the answer."
    wrong = "" if wrong_answer is None else f"Incorrect: {wrong_answer} is not the answer. "
    if turns_left == 0:
        return f"{wrong}No turns left; the answer was {gold}."
    if wrong:
        plural = "s" if turns_left != 1 else ""
        return f"{wrong}Try again ({turns_left} turn{plural} left).\nQuestion: {question}"
    return f"Question: {question}"


NOT_A_NUMBER = "the final answer is not a single number"
"""Why a marked answer that is not exactly one number is invalid (the turn's feedback line)."""
