"""The schema text the model reads: tables read through the sandbox, rendered as SQL.

Each table is shown as its own ``CREATE TABLE`` statement (from ``sqlite_master``, verbatim),
followed by one SQL comment line per column with what the description CSV says about it and a
few distinct example values::

    -- superhero.superhero_name ("superhero name"): the name of the superhero.
    --   Examples: '3-D Man', 'A-Bomb', 'Abe Sapien'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_envs.envs.bird.data import ColumnNote
from agent_envs.envs.bird.prompts import MAX_SCHEMA_CHARS, clip, sql_literal, to_ascii
from agent_envs.envs.bird.sandbox import Sandbox

__all__ = ["TableSchema", "read_tables", "render_schema"]

_SAMPLE_TIMEOUT = 1.0
_SAMPLE_SCAN = 1_000  # example values come from a table's first rows: fast on any size
_MAX_DESCRIPTION = 200
_MAX_VALUES_NOTE = 300
_MAX_SAMPLE_CHARS = 40


@dataclass(frozen=True)
class TableSchema:
    """One table: its name, its CREATE statement, its columns and example values per column."""

    name: str
    create_sql: str
    columns: tuple[str, ...]
    samples: tuple[tuple[Any, ...], ...]


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def read_tables(sandbox: Sandbox, sample_values: int) -> list[TableSchema]:
    """Every table and view of the database, in creation order, with up to ``sample_values``
    distinct non-NULL values per column from the table's first rows (each lookup has a short
    time limit; one that fails just gives no examples). ``ValueError`` naming the file if
    its list of tables cannot be read (a corrupt database)."""
    listing = sandbox.run(
        "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY rowid"
    )
    if listing.rows is None:
        raise ValueError(f"database file {str(sandbox.path)!r} cannot be read: {listing.error}")
    tables = []
    for name, create_sql in listing.rows:
        info = sandbox.run("SELECT name FROM pragma_table_info(?)", (name,))
        columns = tuple(row[0] for row in info.rows or [])
        samples = []
        for column in columns:
            found = None
            if sample_values > 0:
                found = sandbox.run(
                    f"SELECT DISTINCT value FROM (SELECT {_quote(column)} AS value FROM "
                    f"{_quote(name)} LIMIT {_SAMPLE_SCAN}) WHERE value IS NOT NULL "
                    f"LIMIT {sample_values}",
                    timeout=min(_SAMPLE_TIMEOUT, sandbox.timeout),
                ).rows
            samples.append(tuple(row[0] for row in found or []))
        tables.append(TableSchema(name, create_sql or "", columns, tuple(samples)))
    return tables


def _column_line(table: str, column: str, note: ColumnNote | None, samples: tuple) -> str:
    line = f"-- {table}.{column}"
    if note is not None:
        if note.name and note.name.lower() != column.lower():
            line += f' ("{note.name}")'
        if note.description:
            line += f": {clip(note.description.rstrip('.'), _MAX_DESCRIPTION)}."
        if note.values:
            line += f" Values: {clip(note.values.rstrip('.'), _MAX_VALUES_NOTE)}."
    if samples:
        examples = ", ".join(sql_literal(value, _MAX_SAMPLE_CHARS) for value in samples)
        line += f"\n--   Examples: {examples}."
    return line


def render_schema(
    tables: list[TableSchema],
    notes: dict[str, dict[str, ColumnNote]],
    max_chars: int = MAX_SCHEMA_CHARS,
) -> str:
    """The tables as CREATE statements with column comments, ASCII, at most ``max_chars``."""
    blocks = []
    for table in tables:
        table_notes = notes.get(table.name.strip().lower(), {})
        lines = [table.create_sql.strip().rstrip(";") + ";"]
        for column, samples in zip(table.columns, table.samples, strict=True):
            note = table_notes.get(column.strip().lower())
            lines.append(_column_line(table.name, column, note, samples))
        blocks.append("\n".join(lines))
    text = to_ascii("\n\n".join(blocks))
    return clip(text, max_chars, "\n-- ... (schema cut: too long)")
