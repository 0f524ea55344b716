"""Plain data of the BIRD env: a question, a decoded action, a query result, the episode."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["BirdItem", "EpisodeState", "QueryKind", "QueryResult", "SqlAction"]


@dataclass(frozen=True)
class BirdItem:
    """One question in BIRD's format (``dev.json``, ``train.json``, Mini-Dev)."""

    db_id: str
    question: str
    evidence: str
    sql: str
    question_id: int | None = None
    difficulty: str | None = None


class QueryKind(enum.Enum):
    """What an answer asks for: run a query and see its rows, or submit the final query."""

    EXECUTE = "execute"
    SUBMIT = "submit"


class SqlAction(NamedTuple):
    """A decoded answer: the kind and the SQL text (never empty)."""

    kind: QueryKind
    sql: str


class QueryResult(NamedTuple):
    """What the sandbox returned for one query.

    ``rows`` is ``None`` when the query failed; then ``error`` says why and ``timed_out`` tells
    a time-limit stop from an error. ``complete`` is false when the result was cut at the row
    or byte cap (``rows`` then holds the rows read so far).
    """

    rows: list[tuple[Any, ...]] | None
    columns: tuple[str, ...]
    error: str | None = None
    timed_out: bool = False
    complete: bool = True


@dataclass(frozen=True)
class EpisodeState:
    """Everything that defines where an episode stands (hashed into ``state_hash``)."""

    item: BirdItem
    executions: int = 0
    submissions: int = 0
    solved: bool = False
    feedback: str = ""
