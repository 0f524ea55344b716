"""BIRD's files on disk → questions, database paths and column descriptions.

The layout is BIRD's own (``dev.json`` / ``train.json`` / Mini-Dev json, or JSON lines)::

    <data_path>                                   a list of question objects
    <db_root>/<db_id>/<db_id>.sqlite              one SQLite file per database
    <db_root>/<db_id>/database_description/*.csv  one CSV per table (optional)

Question objects carry ``db_id``, ``question``, ``SQL`` and usually ``evidence``,
``question_id`` and ``difficulty``; other keys are ignored. Description CSVs have the header
``original_column_name,column_name,column_description,data_format,value_description``; some
official files have CRLF line ends or are cp1252 rather than UTF-8, so they are decoded with
fallbacks, and a file that still cannot be read is skipped: descriptions never stop a load.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_envs.envs.bird.types import BirdItem

__all__ = [
    "BirdDataset",
    "ColumnNote",
    "check_database",
    "db_file",
    "item_from_dict",
    "load_items",
    "read_descriptions",
]

_REQUIRED_KEYS = ("db_id", "question", "SQL")
_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class ColumnNote:
    """One row of a description CSV: a column's readable name, meaning and value notes."""

    name: str
    description: str
    values: str


def item_from_dict(record: Any, where: str) -> BirdItem:
    """One question object → :class:`BirdItem`; ``ValueError`` naming ``where`` if malformed."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a BIRD question must be an object, got {type(record).__name__}")
    missing = [key for key in _REQUIRED_KEYS if not isinstance(record.get(key), str)]
    if missing:
        raise ValueError(f"{where}: missing or non-string keys {missing}")
    evidence = record.get("evidence") or ""
    question_id = record.get("question_id")
    difficulty = record.get("difficulty")
    if not isinstance(evidence, str):
        raise ValueError(f"{where}: 'evidence' must be a string, got {evidence!r}")
    if question_id is not None and (
        isinstance(question_id, bool) or not isinstance(question_id, int)
    ):
        raise ValueError(f"{where}: 'question_id' must be an int, got {question_id!r}")
    if difficulty is not None and not isinstance(difficulty, str):
        raise ValueError(f"{where}: 'difficulty' must be a string, got {difficulty!r}")
    return BirdItem(
        db_id=record["db_id"],
        question=record["question"],
        evidence=evidence,
        sql=record["SQL"],
        question_id=question_id,
        difficulty=difficulty,
    )


def load_items(data_path: Path) -> list[BirdItem]:
    """Read a BIRD question file: a JSON list, or one JSON object per line."""
    try:
        text = data_path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise ValueError(f"data_path {str(data_path)!r} cannot be read: {error}") from None
    try:
        if text.lstrip().startswith("["):
            records = json.loads(text)
        else:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise ValueError(
            f"data_path {str(data_path)!r} is not JSON or JSON lines: {error}"
        ) from None
    return [item_from_dict(record, f"{data_path}[{i}]") for i, record in enumerate(records)]


def db_file(db_root: Path, db_id: str) -> Path:
    """Where BIRD keeps a database: ``<db_root>/<db_id>/<db_id>.sqlite``."""
    return db_root / db_id / f"{db_id}.sqlite"


def check_database(path: Path) -> None:
    """``ValueError`` naming ``path`` unless it is a readable SQLite database: the file starts
    with SQLite's header and its schema table can be read (read-only; a few pages)."""
    try:
        with path.open("rb") as file:
            header = file.read(len(_SQLITE_MAGIC))
    except OSError as error:
        raise ValueError(f"database file {str(path)!r} cannot be read: {error}") from None
    if header != _SQLITE_MAGIC:
        what = "is empty" if not header else "does not start with SQLite's header"
        raise ValueError(
            f"database file {str(path)!r} is not a SQLite database ({what}): corrupt, "
            "truncated or another format"
        )
    try:
        connection = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise ValueError(f"database file {str(path)!r} cannot be read: {error}") from None


def _decode(data: bytes) -> str:
    """UTF-8 (with or without BOM), else cp1252, else latin-1 (which decodes any bytes)."""
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _read_csv(path: Path) -> dict[str, ColumnNote] | None:
    try:
        text = _decode(path.read_bytes())
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except (OSError, csv.Error):
        return None
    notes: dict[str, ColumnNote] = {}
    for row in rows[1:]:
        if not row or not row[0].strip():
            continue
        cells = [" ".join(cell.split()) for cell in row] + [""] * 5
        notes[cells[0].lower()] = ColumnNote(name=cells[1], description=cells[2], values=cells[4])
    return notes


def read_descriptions(db_dir: Path) -> dict[str, dict[str, ColumnNote]]:
    """``database_description/*.csv`` → table (lower case) → column (lower case) → note.

    Missing folders give ``{}``; unreadable files are skipped. Whitespace inside a cell
    (including the line breaks of multi-line cells) is collapsed to single spaces.
    """
    folder = db_dir / "database_description"
    if not folder.is_dir():
        return {}
    tables = {}
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() != ".csv":
            continue
        notes = _read_csv(path)
        if notes:
            tables[path.stem.strip().lower()] = notes
    return tables


class BirdDataset:
    """The questions of one source and where their databases are, plus the schema cache.

    The cache (schema text per database) is derived from the files, so it is shared by
    ``copy.deepcopy`` (the dataset is immutable) and dropped when pickling (rebuilt on use).
    Gold results are kept by each env's SQL worker (:mod:`agent_envs.envs.bird.worker`).
    """

    def __init__(self, items: list[BirdItem], db_root: Path, *, origin: str) -> None:
        self.items = tuple(items)
        self.db_root = db_root
        self.origin = origin
        self.schemas: dict[str, tuple[str, tuple[str, ...]]] = {}

    @classmethod
    def from_files(cls, data_path: Path, db_root: Path) -> BirdDataset:
        """Load ``data_path``, keeping the questions whose database exists under ``db_root``.

        The skipped ones are reported in one ``UserWarning``; ``ValueError`` if none is left,
        or if a database file is not a readable SQLite database (:func:`check_database`).
        """
        if not db_root.is_dir():
            raise ValueError(f"db_root {str(db_root)!r} is not a directory")
        items = load_items(data_path)
        present = {db_id: db_file(db_root, db_id).is_file() for db_id in {i.db_id for i in items}}
        for db_id in sorted(db_id for db_id, found in present.items() if found):
            check_database(db_file(db_root, db_id))
        kept = [item for item in items if present[item.db_id]]
        missing = sorted(db_id for db_id, found in present.items() if not found)
        if missing:
            skipped = len(items) - len(kept)
            warnings.warn(
                f"BIRD: skipped {skipped} of {len(items)} questions in {data_path} whose "
                f"database is missing under {db_root}: {', '.join(missing)}",
                UserWarning,
                stacklevel=4,
            )
        if not kept:
            raise ValueError(
                f"db_root {str(db_root)!r} holds none of the databases that data_path "
                f"{str(data_path)!r} asks for (<db_root>/<db_id>/<db_id>.sqlite)"
            )
        return cls(kept, db_root, origin=str(data_path))

    def db_path(self, db_id: str) -> Path:
        return db_file(self.db_root, db_id)

    def has_db(self, db_id: str) -> bool:
        return self.db_path(db_id).is_file()

    def descriptions(self, db_id: str) -> dict[str, dict[str, ColumnNote]]:
        return read_descriptions(self.db_root / db_id)

    def __deepcopy__(self, memo: dict[int, Any]) -> BirdDataset:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {"items": self.items, "db_root": self.db_root, "origin": self.origin}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(list(state["items"]), state["db_root"], origin=state["origin"])
