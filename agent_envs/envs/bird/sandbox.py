"""Read-only, time-limited SQLite for model-written queries.

Every query goes through five independent guards, so that no single mistake lets a model
change a database, reach another file or hang a worker:

1. **Statement kind.** After leading comments, spaces and parentheses the query must start
   with ``SELECT``, ``WITH`` or ``VALUES``; Python's ``sqlite3`` refuses a second statement
   (``SELECT 1; DROP TABLE t`` and comment tricks alike).
2. **Read-only file.** The database is opened through the URI ``file:...?mode=ro`` with
   ``PRAGMA query_only = ON`` and no attached databases allowed (``SQLITE_LIMIT_ATTACHED = 0``).
3. **Authorizer.** Only reading is authorised: ``SELECT``, column reads, recursive CTEs,
   functions other than ``load_extension``, ``fts3_tokenizer``, ``random`` and ``randomblob``
   (the last two so that episodes replay exactly), and the introspection pragmas
   (``pragma_table_info(...)`` and friends, connected before the authorizer is installed,
   since their first use looks like an UPDATE of ``sqlite_master`` to it). Writes, DDL,
   ``ATTACH``, ``VACUUM INTO``, transactions and pragma changes are denied.
4. **Time limit.** A progress handler stops the query once ``timeout`` seconds have passed
   (checked every :data:`PROGRESS_OPCODES` virtual-machine instructions).
5. **Size caps.** A string or blob value is limited to :data:`MAX_VALUE_BYTES` bytes, the query
   text to :data:`MAX_QUERY_CHARS` characters, and a result to ``max_rows`` rows and
   ``max_bytes`` bytes of text and blobs; a result cut at a cap is marked incomplete.

Connections open lazily and are dropped when a sandbox is pickled or deep-copied, so an env
holding one can be cloned mid-episode.
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from agent_envs.envs.bird.types import QueryResult

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_VALUE_BYTES",
    "PROGRESS_OPCODES",
    "Sandbox",
    "SandboxPool",
    "check_query",
]

MAX_QUERY_CHARS = 50_000
MAX_VALUE_BYTES = 1_000_000
PROGRESS_OPCODES = 1_000
_FETCH_CHUNK = 64
ALLOWED_FIRST_WORDS = ("SELECT", "WITH", "VALUES")

# Authorizer action codes from sqlite3.h (numbers: Python 3.10 lacks some of the names).
_OK, _DENY = 0, 1
_PRAGMA, _READ, _SELECT, _FUNCTION, _RECURSIVE = 19, 20, 21, 31, 33
_ACTION_NAMES = {
    1: "CREATE INDEX", 2: "CREATE TABLE", 3: "CREATE TEMP INDEX", 4: "CREATE TEMP TABLE",
    5: "CREATE TEMP TRIGGER", 6: "CREATE TEMP VIEW", 7: "CREATE TRIGGER", 8: "CREATE VIEW",
    9: "DELETE", 10: "DROP INDEX", 11: "DROP TABLE", 12: "DROP TEMP INDEX",
    13: "DROP TEMP TABLE", 14: "DROP TEMP TRIGGER", 15: "DROP TEMP VIEW", 16: "DROP TRIGGER",
    17: "DROP VIEW", 18: "INSERT", 19: "PRAGMA", 22: "BEGIN/COMMIT/ROLLBACK", 23: "UPDATE",
    24: "ATTACH", 25: "DETACH", 26: "ALTER TABLE", 27: "REINDEX", 28: "ANALYZE",
    29: "CREATE VIRTUAL TABLE", 30: "DROP VIRTUAL TABLE", 32: "SAVEPOINT",
}  # fmt: skip
_READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "random", "randomblob"})
# Leading noise before the first keyword: one space, comment or "(" at a time (no nested
# quantifiers, so no catastrophic backtracking on hostile input).
_LEADING = re.compile(r"(?:\s|--[^\n]*(?:\n|\Z)|/\*.*?(?:\*/|\Z)|\()*", re.DOTALL)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_query(sql: str) -> str | None:
    """Why ``sql`` may not run (guard 1 and the length cap), or ``None`` if it may."""
    if len(sql) > MAX_QUERY_CHARS:
        return f"the query is longer than {MAX_QUERY_CHARS} characters"
    start = _LEADING.match(sql).end()  # type: ignore[union-attr]
    if start >= len(sql):
        return "the query is empty"
    word = _WORD.match(sql, start)
    if word is None or word.group().upper() not in ALLOWED_FIRST_WORDS:
        found = word.group().upper()[:20] if word else sql[start : start + 10].strip()
        return (
            "only one read-only query is allowed (starting with SELECT, WITH or VALUES), "
            f"not {found!r}"
        )
    return None


def _lenient_text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


class Sandbox:
    """One database, opened read-only on first use. See the module docstring for the guards.

    Args:
        path: the ``.sqlite`` file.
        timeout: default seconds a query may run.
        max_rows: default row cap of a result.
        max_bytes: cap on the text and blob bytes of a result.
    """

    def __init__(self, path: Path, *, timeout: float, max_rows: int, max_bytes: int) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._connection: sqlite3.Connection | None = None
        self._deadline = math.inf
        self._denied: str | None = None

    # ----------------------------------------------------------------- connection
    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        uri = self.path.resolve().as_uri() + "?mode=ro"
        connection = sqlite3.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, cached_statements=64
        )
        try:
            connection.execute("PRAGMA query_only = ON")
            connection.execute("PRAGMA trusted_schema = OFF")
            if hasattr(connection, "setlimit"):  # Python >= 3.11
                connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
                connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 4 * MAX_QUERY_CHARS)
                connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            # The first use of a pragma's table-valued function on a connection looks, to the
            # authorizer, like an UPDATE of sqlite_master (SQLite connects the virtual table);
            # connect the allowed ones here, before the authorizer is installed.
            for pragma in sorted(_READ_PRAGMAS):
                connection.execute(f"SELECT * FROM pragma_{pragma}('') LIMIT 0").fetchall()
            connection.set_authorizer(self._authorize)
            connection.set_progress_handler(self._over_time, PROGRESS_OPCODES)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _over_time(self) -> bool:
        return time.perf_counter() > self._deadline

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        if action in (_SELECT, _READ, _RECURSIVE):
            return _OK
        if action == _FUNCTION:
            if arg2 is not None and arg2.lower() in _DENIED_FUNCTIONS:
                self._denied = f"the function {arg2}()"
                return _DENY
            return _OK
        if action == _PRAGMA and arg1 is not None and arg1.lower() in _READ_PRAGMAS:
            return _OK
        self._denied = _ACTION_NAMES.get(action, f"authorizer action {action}")
        return _DENY

    # ----------------------------------------------------------------- queries
    def run(
        self,
        sql: str,
        params: tuple[Any, ...] = (),
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
    ) -> QueryResult:
        """Run one query under every guard. Never raises: failures come back as ``error``."""
        refusal = check_query(sql) if isinstance(sql, str) else "the query must be text"
        if refusal is not None:
            return QueryResult(None, (), refusal)
        limit = self.timeout if timeout is None else timeout
        try:
            return self._run(sql, params, limit, self.max_rows if max_rows is None else max_rows)
        except sqlite3.OperationalError as error:
            if "decode" not in str(error).lower():
                return self._failure(error, limit)
        except Exception as error:  # the query text is untrusted: report, never raise
            return self._failure(error, limit)
        # Text that is not valid UTF-8 in the database: read it again with replacement chars.
        connection = self._connect()
        connection.text_factory = _lenient_text
        try:
            return self._run(sql, params, limit, self.max_rows if max_rows is None else max_rows)
        except Exception as error:
            return self._failure(error, limit)
        finally:
            connection.text_factory = str

    def _run(self, sql: str, params: tuple[Any, ...], limit: float, max_rows: int) -> QueryResult:
        connection = self._connect()
        self._denied = None
        self._deadline = time.perf_counter() + limit
        try:
            cursor = connection.execute(sql, params)
            try:
                columns = tuple(entry[0] for entry in cursor.description or ())
                rows, complete = self._fetch(cursor, max_rows)
            finally:
                cursor.close()
        finally:
            self._deadline = math.inf
        return QueryResult(rows, columns, complete=complete)

    def _fetch(self, cursor: sqlite3.Cursor, max_rows: int) -> tuple[list[tuple[Any, ...]], bool]:
        rows: list[tuple[Any, ...]] = []
        size = 0
        while True:
            chunk = cursor.fetchmany(min(_FETCH_CHUNK, max_rows + 1 - len(rows)))
            if not chunk:
                return rows, True
            for index, row in enumerate(chunk):
                for value in row:
                    if value.__class__ is str or value.__class__ is bytes:
                        size += len(value)
                if size > self.max_bytes:
                    rows.extend(chunk[:index])
                    return rows, False
            rows.extend(chunk)
            if len(rows) > max_rows:
                return rows[:max_rows], False

    def _failure(self, error: Exception, limit: float) -> QueryResult:
        message = str(error) or type(error).__name__
        if isinstance(error, sqlite3.OperationalError) and message == "interrupted":
            return QueryResult(None, (), f"stopped at the {limit:g} s time limit", timed_out=True)
        if self._denied is not None and "not authorized" in message:
            return QueryResult(
                None, (), f"not authorized: {self._denied} is not allowed (read-only database)"
            )
        if isinstance(error, UnicodeError):
            message = "the query is not valid Unicode text"
        return QueryResult(None, (), message)

    # ----------------------------------------------------------------- copies
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_connection"] = None
        state["_deadline"] = math.inf
        state["_denied"] = None
        return state

    def __deepcopy__(self, memo: dict[int, Any]) -> Sandbox:
        return Sandbox(
            self.path, timeout=self.timeout, max_rows=self.max_rows, max_bytes=self.max_bytes
        )


class SandboxPool:
    """Sandboxes by database path, keeping at most ``max_open`` connections open (LRU)."""

    def __init__(self, *, timeout: float, max_rows: int, max_bytes: int, max_open: int = 8) -> None:
        self.timeout = timeout
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.max_open = max_open
        self._open: OrderedDict[Path, Sandbox] = OrderedDict()

    def get(self, path: Path) -> Sandbox:
        sandbox = self._open.get(path)
        if sandbox is None:
            sandbox = Sandbox(
                path, timeout=self.timeout, max_rows=self.max_rows, max_bytes=self.max_bytes
            )
            self._open[path] = sandbox
            while len(self._open) > self.max_open:
                self._open.popitem(last=False)[1].close()
        self._open.move_to_end(path)
        return sandbox

    def close(self) -> None:
        for sandbox in self._open.values():
            sandbox.close()
        self._open.clear()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_open"] = OrderedDict()
        return state

    def __deepcopy__(self, memo: dict[int, Any]) -> SandboxPool:
        return SandboxPool(
            timeout=self.timeout,
            max_rows=self.max_rows,
            max_bytes=self.max_bytes,
            max_open=self.max_open,
        )
