"""Text the model reads: instructions, the problem, query results and turn feedback.

Everything printed is ASCII (printable, newline, tab). Text from the data goes through
:func:`to_ascii`: typographic punctuation becomes its ASCII look-alike (and the replacement
character U+FFFD, the mark of undecodable bytes, a ``?``), CR and CRLF become ``\\n``, and any
other character outside ASCII is written as a Python escape (``\\u00e9``), so the value can be
recovered exactly. Every part has a length cap, which is what makes
:data:`MAX_OBSERVATION_CHARS` a true bound.
"""

from __future__ import annotations

import re
from typing import Any

from agent_envs.core.parsing import AnswerFormat
from agent_envs.envs.bird.types import BirdItem, QueryResult

__all__ = [
    "MAX_OBSERVATION_CHARS",
    "clip",
    "describe_result",
    "instructions",
    "problem_text",
    "sql_literal",
    "to_ascii",
]

MAX_SCHEMA_CHARS = 100_000
MAX_QUESTION_CHARS = 4_000
MAX_EVIDENCE_CHARS = 4_000
MAX_RESULT_CHARS = 6_000
MAX_ERROR_CHARS = 500
MAX_CELL_CHARS = 80
MAX_LINE_CHARS = 1_000
#: Upper bound on any observation (problem text, or turn feedback plus the base class's
#: one-line "Invalid answer" prefix), with room to spare for the fixed words around the parts.
MAX_OBSERVATION_CHARS = MAX_SCHEMA_CHARS + MAX_QUESTION_CHARS + MAX_EVIDENCE_CHARS + 2_000

_PUNCTUATION = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u2026": "...", "\u2022": "*", "\u00a0": " ", "\u2002": " ", "\u2003": " ",
    "\u2009": " ", "\u202f": " ", "\u200b": "", "\u00ad": "", "\ufeff": "", "\ufffd": "?",
}  # fmt: skip
_NEEDS_WORK = re.compile(r"[^\x20-\x7e\n\t]")


def _escape(char: str) -> str:
    if char in _PUNCTUATION:
        return _PUNCTUATION[char]
    code = ord(char)
    if code < 0x80:  # control characters
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def to_ascii(text: str) -> str:
    """Printable ASCII plus newline and tab; see the module docstring."""
    if _NEEDS_WORK.search(text) is None:
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _NEEDS_WORK.sub(lambda match: _escape(match.group()), text)


def clip(text: str, limit: int, note: str = "...") -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``note`` when cut."""
    return text if len(text) <= limit else text[: max(0, limit - len(note))] + note


def sql_literal(value: Any, limit: int = MAX_CELL_CHARS) -> str:
    """A value as SQLite would write it: ``NULL``, ``12``, ``1.5``, ``'O''Brien'``, a blob's
    size; long strings are cut, with ``...`` after the closing quote."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"<blob of {len(value)} bytes>"
    if isinstance(value, str):
        text = to_ascii(value).replace("\n", "\\n").replace("\t", "\\t").replace("'", "''")
        if len(text) > limit:
            return f"'{text[:limit]}'..."
        return f"'{text}'"
    return repr(value)


def instructions(
    *,
    max_executions: int,
    max_submissions: int,
    submit_discount: float,
    max_turns: int,
    query_timeout: float,
    submit_timeout: float,
    display_rows: int,
    format_penalty: float,
    invalid_action_penalty: float,
    answer_format: AnswerFormat,
) -> str:
    """The system prompt of a BIRD episode, for this configuration."""
    lines = [
        "You write SQLite queries that answer questions about a database.",
        "You are shown the database's CREATE TABLE statements, each followed by comment lines"
        " with every column's meaning and example values, then a question and evidence"
        " (hints that map the question's words to columns, values and formulas).",
        "Your final query is graded by execution, as in the BIRD benchmark: it is correct when"
        " the set of rows it returns equals the set of rows of the reference query (row order,"
        " duplicate rows and column names do not matter; which columns, their order and their"
        f" values do). A query that fails or runs longer than {submit_timeout:g} s is wrong.",
        "Only one read-only statement per answer (SELECT, WITH or VALUES); random() is"
        " seeded, so a query gives the same rows every time.",
        "Characters outside ASCII are shown as escapes such as \\u00e9 (curly quotes and dashes"
        " as their ASCII look-alikes); in a query, write the character itself.",
    ]
    if max_executions > 0:
        lines.append(
            "Answer in one of two ways, one query per turn: <answer>EXECUTE: SELECT ...</answer>"
            f" runs a query (for at most {query_timeout:g} s) and shows you its first"
            f" {display_rows} rows or its error;"
            " <answer>SUBMIT: SELECT ...</answer>, or the SQL alone, submits your final query."
            f" You may EXECUTE at most {max_executions} queries; you have {max_turns} turns."
        )
    elif max_submissions > 1:
        lines.append(
            f"Every answer is a submission of your final query. You have {max_submissions}"
            " submissions, one per turn: a wrong one is answered with 'wrong result' or the"
            " query's error, and you may try again."
        )
    else:
        lines.append(
            "You have one answer: the SQL inside <answer>...</answer> is your final query."
        )
    if max_submissions > 1 and submit_discount != 1.0:
        steps = ", ".join(f"{submit_discount**k:g}" for k in range(3))
        lines.append(
            f"Reward: {steps}, ... for a correct first, second, third, ... submission"
            f" ({submit_discount:g} ** (k - 1) for the k-th); 0 if none is correct."
        )
    else:
        lines.append("Reward: 1 for a correct final query, 0 otherwise.")
    if max_executions > 0:
        lines.append(
            f"A reply without a readable answer scores {format_penalty:+g}; an EXECUTE with"
            f" none left scores {invalid_action_penalty:+g}."
        )
    else:
        lines.append(
            f"A reply without a readable answer scores {format_penalty:+g}; EXECUTE is not"
            f" available here and scores {invalid_action_penalty:+g}. Either uses up a turn."
        )
    example = "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'"
    if max_executions > 0:
        example = "EXECUTE: SELECT status, COUNT(*) FROM orders GROUP BY status"
    lines.append(answer_format.describe(example))
    return "\n".join(lines)


def problem_text(item: BirdItem, schema: str) -> str:
    """The first observation: the database, the question and the evidence."""
    question = clip(to_ascii(item.question.strip()), MAX_QUESTION_CHARS)
    evidence = clip(to_ascii(item.evidence.strip()), MAX_EVIDENCE_CHARS) or "(none)"
    return (
        f"Database: {clip(to_ascii(item.db_id), 200)}\n\n{schema}\n\n"
        f"Question: {question}\nEvidence: {evidence}"
    )


def describe_result(result: QueryResult, display_rows: int) -> str:
    """A query's result for the model: the row count, the column names and the first rows,
    or the error."""
    if result.rows is None:
        return f"error: {clip(to_ascii(result.error or 'unknown error'), MAX_ERROR_CHARS)}"
    count = len(result.rows)
    noun = "row" if count == 1 else "rows"
    head = f"{count} {noun}" if result.complete else f"more than {count} rows (cut at the cap)"
    if count > display_rows:
        head += f"; the first {display_rows}"
    columns = " | ".join(to_ascii(name or "?") for name in result.columns)
    lines = [head + ":", clip(columns, MAX_LINE_CHARS)]
    for row in result.rows[:display_rows]:
        lines.append(clip(" | ".join(sql_literal(value) for value in row), MAX_LINE_CHARS))
    return clip("\n".join(lines), MAX_RESULT_CHARS, "\n... (output cut)")
