"""The SQL worker: a process of its own that runs model-written queries under every guard.

SQLite checks a time limit only between virtual-machine instructions, so one long function
call (``printf('%.*c', 2e9, 'x')``, a ``LIKE`` or ``instr`` over megabyte strings) runs as long
as it likes inside one instruction; and a query may ask for gigabytes of values. In a process
of its own such a query can be killed at a hard deadline and can exhaust only its own, limited
memory. :class:`~agent_envs.envs.bird.sandbox.SqlWorker` starts this file as
``python -I -S worker.py MAX_OPEN`` (the standard library only: no ``agent_envs`` import, and
no re-import of the caller's ``__main__`` as ``multiprocessing``'s spawn would do) and talks
to it over its stdin and stdout (POSIX: Linux, macOS): each message is an 8-byte
little-endian length and a ``marshal`` payload of plain values (``marshal`` builds data, never
runs code).

Guards inside the worker, on top of the caller's statement check:

1. **Read-only file**: ``file:...?mode=ro``, ``PRAGMA query_only``, no attached databases.
2. **Authorizer**: only reading (``SELECT``, column reads, recursive CTEs, functions other
   than ``load_extension`` and ``fts3_tokenizer``, the introspection pragmas and the JSON
   table-valued functions ``json_each``/``json_tree``, which are connected before the
   authorizer is installed since their first use looks like a write of ``sqlite_master``).
   A denied query's message names what was denied (:func:`denial_message`).
3. **SQLite's limits**: values of at most :data:`MAX_VALUE_BYTES` bytes, ``LIKE``/``GLOB``
   patterns of at most :data:`MAX_LIKE_PATTERN` characters, :data:`MAX_COLUMNS` columns, and
   :data:`HEAP_LIMIT` bytes of SQLite heap in the whole process (``PRAGMA hard_heap_limit``).
   ``PRAGMA temp_store = MEMORY`` keeps temporary data (sorts for ``ORDER BY``, ``GROUP BY``
   and ``DISTINCT``, materialised subqueries) in that heap instead of files: a query that
   needs more stops with an out-of-memory error and writes nothing to disk (a sorted cross
   join used to write 1 GiB of temporary files in 3-4 s).
4. **Time**: a progress handler stops a query at its limit (checked every
   :data:`PROGRESS_OPCODES` instructions); the caller kills the process at
   :data:`KILL_FACTOR` times the limit when one instruction runs longer.
5. **Memory**: results are read one row at a time against a byte budget (see
   :func:`row_cost`); the address space is capped at the start-up size plus
   :data:`ADDRESS_SPACE_GROWTH` (``RLIMIT_AS``, on Linux, where ``/proc`` gives the size),
   any file written at :data:`MAX_TEMP_FILE_BYTES` (``RLIMIT_FSIZE``, a second guard for
   temporary files), and CPU time at each query's limit plus :data:`CPU_GRACE` seconds, so
   a worker whose caller died cannot run on. After running out of memory the worker answers
   and exits; the caller starts a fresh one.
6. **Replay**: ``random()`` and ``randomblob(N)`` are replaced by generators seeded afresh for
   every query, so a query returns the same rows every time it runs.

Requests and replies (tuples; every reply starts with ``recycle``, true when the worker exits
after answering):

* ``("run", path, sql, params, limit, max_rows, max_bytes)`` → ``(recycle, "rows", columns,
  rows, complete)``: at most ``max_rows`` rows and ``max_bytes`` of :func:`row_cost`;
  ``complete`` is false when the result was cut.
* ``("gold", path, sql, limit)`` → ``(recycle, "gold", distinct_rows)``: runs a reference
  query and keeps its set of rows (at most :data:`GOLD_MAX_BYTES`; the last one always, others
  in a least-recently-used cache of :data:`GOLD_CACHE_BYTES`).
* ``("grade", path, sql, gold_sql, limit, max_rows)`` → ``(recycle, "graded", correct)``:
  streams the query's rows against the kept set of ``gold_sql`` (see :func:`same_row_set`).
* Failures: ``(recycle, "error", message, timed_out)``.
"""

from __future__ import annotations

import marshal
import math
import os
import random
import re
import resource
import signal
import sqlite3
import struct
import sys
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

MIB = 2**20
MAX_VALUE_BYTES = 1_000_000
MAX_SQL_BYTES = 200_000
MAX_LIKE_PATTERN = 1_000
MAX_COLUMNS = 1_000
HEAP_LIMIT = 64 * MIB
SOFT_HEAP_LIMIT = 32 * MIB
ADDRESS_SPACE_GROWTH = 224 * MIB
MAX_TEMP_FILE_BYTES = 64 * MIB
GOLD_MAX_BYTES = 64 * MIB
GOLD_CACHE_BYTES = 32 * MIB
PROGRESS_OPCODES = 1_000
KILL_FACTOR = 1.1
CPU_GRACE = 5.0
RANDOM_SEED = 0

HEADER = struct.Struct("<Q")
_READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)
_TABLE_FUNCTIONS = ("json_each", "json_tree")
_ALLOWED_NAMES = (*_TABLE_FUNCTIONS, *(f"pragma_{p}" for p in sorted(_READ_PRAGMAS)))
_ALLOWED_TABLES = ", ".join(_ALLOWED_NAMES)
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
_SCHEMA_TABLES = frozenset(
    {"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"}
)
# The eponymous virtual tables of this SQLite build that a query can name (see denial_message).
_EPONYMOUS = re.compile(r"\b(?:pragma_[a-z0-9_]+|dbstat|sqlite_stmt)\b", re.IGNORECASE)
# Authorizer action codes from sqlite3.h.
_OK, _DENY = 0, 1
_DELETE, _INSERT, _PRAGMA, _READ, _SELECT, _UPDATE = 9, 18, 19, 20, 21, 23
_ATTACH, _DETACH, _FUNCTION, _RECURSIVE = 24, 25, 31, 33
_ACTION_NAMES = {
    1: "CREATE INDEX", 2: "CREATE TABLE", 3: "CREATE TEMP INDEX", 4: "CREATE TEMP TABLE",
    5: "CREATE TEMP TRIGGER", 6: "CREATE TEMP VIEW", 7: "CREATE TRIGGER", 8: "CREATE VIEW",
    9: "DELETE", 10: "DROP INDEX", 11: "DROP TABLE", 12: "DROP TEMP INDEX",
    13: "DROP TEMP TABLE", 14: "DROP TEMP TRIGGER", 15: "DROP TEMP VIEW", 16: "DROP TRIGGER",
    17: "DROP VIEW", 18: "INSERT", 19: "PRAGMA", 22: "BEGIN/COMMIT/ROLLBACK", 23: "UPDATE",
    24: "ATTACH", 25: "DETACH", 26: "ALTER TABLE", 27: "REINDEX", 28: "ANALYZE",
    29: "CREATE VIRTUAL TABLE", 30: "DROP VIRTUAL TABLE", 32: "SAVEPOINT",
}  # fmt: skip


class QueryFailed(Exception):
    """A query that cannot give a result; ``str(error)`` is the message for the model."""

    def __init__(self, message: str, timed_out: bool = False, recycle: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.recycle = recycle


# ----------------------------------------------------------------- pure helpers
def denial_message(action: int, arg1: str | None, arg2: str | None, sql: str) -> str:
    """The model's message for a query that the authorizer stopped, from the first action it
    denied (SQLite stops preparing there) and the query's text.

    Some actions are not what the statement says: SQLite checks a CREATE as an INSERT into
    ``sqlite_master`` and a DROP as a DELETE from it, and connecting an eponymous virtual table
    (a table-valued function such as ``pragma_journal_mode``) on its first use as an UPDATE of
    ``sqlite_master``; the authorizer does not name that table, so it is looked up in ``sql``.
    """
    schema = arg1 is not None and arg1.lower() in _SCHEMA_TABLES
    if action == _FUNCTION:
        return f"not authorized: the function {arg2}() is not allowed"
    if action == _PRAGMA:
        return f"not authorized: PRAGMA {arg1} is not allowed (only {_ALLOWED_TABLES})"
    if action == _UPDATE and schema:
        names = (found.group().lower() for found in _EPONYMOUS.finditer(sql))
        name = next((n for n in names if n not in _ALLOWED_NAMES), None)
        what = "this virtual table" if name is None else f"the table-valued function {name}"
        return f"not authorized: {what} is not allowed (only {_ALLOWED_TABLES})"
    if action in (_ATTACH, _DETACH):
        what = _ACTION_NAMES[action]
        return f"not authorized: {what} is not allowed (only this one database can be read)"
    if action == _INSERT and schema:
        what = "CREATE"
    elif action == _DELETE and schema:
        what = "DROP"
    else:
        what = _ACTION_NAMES.get(action, f"authorizer action {action}")
    return f"not authorized: {what} is not allowed (read-only database)"


def row_cost(row: tuple[Any, ...]) -> int:
    """Bytes a row holds in memory, about as CPython counts them: 56 for the tuple, 8 per
    slot, 49 plus the length for text, 33 plus the length for a blob, 32 for a number."""
    cost = 56 + 8 * len(row)
    for value in row:
        kind = value.__class__
        if kind is str:
            cost += 49 + len(value)
        elif kind is bytes:
            cost += 33 + len(value)
        elif value is not None:
            cost += 32
    return cost


def read_rows(
    rows: Iterable[tuple[Any, ...]], max_rows: int, max_bytes: int
) -> tuple[list[tuple[Any, ...]], bool]:
    """At most ``max_rows`` rows and ``max_bytes`` of :func:`row_cost`, one row at a time;
    ``(rows, complete)``. A first row over the byte budget alone is an error, not an empty
    result."""
    kept: list[tuple[Any, ...]] = []
    size = 0
    for row in rows:
        size += row_cost(row)
        if size > max_bytes:
            if not kept:
                raise QueryFailed(
                    f"the result is too large: its first row alone holds more than "
                    f"{max_bytes:,} bytes"
                )
            return kept, False
        if len(kept) == max_rows:
            return kept, False
        kept.append(row)
    return kept, True


def row_set(rows: Iterable[tuple[Any, ...]], max_bytes: int) -> dict[tuple[Any, ...], int]:
    """The distinct rows (as dict keys numbered 0, 1, ...), within ``max_bytes``."""
    index: dict[tuple[Any, ...], int] = {}
    size = 0
    for row in rows:
        if row not in index:
            size += row_cost(row) + 64  # the dict entry
            if size > max_bytes:
                raise QueryFailed(
                    f"the reference result is too large to grade (over {max_bytes // MIB} MiB)"
                )
            index[row] = len(index)
    return index


def same_row_set(
    rows: Iterable[tuple[Any, ...]], gold: dict[tuple[Any, ...], int], max_rows: int | None
) -> bool:
    """``set(rows) == set(gold)``, reading ``rows`` one at a time and stopping at the first row
    that is not in ``gold`` (the sets differ whatever follows). Memory: one byte per gold row.
    More than ``max_rows`` rows (``None``: no cap) is an error."""
    seen = bytearray(len(gold))
    found = 0
    for count, row in enumerate(rows, 1):
        if max_rows is not None and count > max_rows:
            raise QueryFailed(f"the result is larger than the {max_rows}-row cap")
        position = gold.get(row)
        if position is None:
            return False
        if not seen[position]:
            seen[position] = 1
            found += 1
    return found == len(gold)


def _lenient_text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# ----------------------------------------------------------------- the worker's state
class Worker:
    """Open connections (least recently used first), the kept gold sets, the current query."""

    def __init__(self, max_open: int) -> None:
        self.max_open = max_open
        self.connections: OrderedDict[str, sqlite3.Connection] = OrderedDict()
        self.golds: OrderedDict[tuple[str, str], tuple[dict, int]] = OrderedDict()
        self.last_gold: tuple[tuple[str, str], dict] | None = None
        self.deadline = math.inf
        self.denied: tuple[int, str | None, str | None] | None = None  # the first denial
        self.note: str | None = None
        self.rng = random.Random(RANDOM_SEED)
        self.rng_used = False  # reseed only after a query drew from it (seeding costs ~6 us)

    # ------------------------------------------------------------- connections
    def connect(self, path: str) -> sqlite3.Connection:
        connection = self.connections.get(path)
        if connection is not None:
            self.connections.move_to_end(path)
            return connection
        uri = "file:" + _uri_path(path) + "?mode=ro"
        connection = sqlite3.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, cached_statements=64
        )
        try:
            self._configure(connection)
        except BaseException:
            connection.close()
            raise
        self.connections[path] = connection
        while len(self.connections) > self.max_open:
            self.connections.popitem(last=False)[1].close()
        return connection

    def _configure(self, connection: sqlite3.Connection) -> None:
        connection.execute("PRAGMA query_only = ON")
        connection.execute("PRAGMA trusted_schema = OFF")
        connection.execute("PRAGMA temp_store = MEMORY")  # sorts and temp tables: heap only
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES)
        connection.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_LIKE_PATTERN)
        connection.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()  # a database?
        # Connect the read-only table-valued functions now: their first use looks, to the
        # authorizer, like an UPDATE of sqlite_master.
        for pragma in sorted(_READ_PRAGMAS):
            connection.execute(f"SELECT * FROM pragma_{pragma}('') LIMIT 0").fetchall()
        for function in _TABLE_FUNCTIONS:
            connection.execute(f"SELECT * FROM {function}('[]') LIMIT 0").fetchall()
        connection.create_function("random", 0, self._random)
        connection.create_function("randomblob", 1, self._randomblob)
        connection.set_authorizer(self._authorize)
        connection.set_progress_handler(self._over_time, PROGRESS_OPCODES)

    def _over_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def _random(self) -> int:
        self.rng_used = True
        return self.rng.getrandbits(64) - 2**63

    def _randomblob(self, size: Any) -> bytes:
        count = int(size) if isinstance(size, (int, float)) else 0
        if count > MAX_VALUE_BYTES:
            self.note = f"randomblob(N) makes at most {MAX_VALUE_BYTES:,} bytes"
            raise ValueError(self.note)
        self.rng_used = True
        return self.rng.randbytes(max(count, 1))

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        if action in (_SELECT, _READ, _RECURSIVE):
            return _OK
        if action == _FUNCTION and (arg2 is None or arg2.lower() not in _DENIED_FUNCTIONS):
            return _OK
        if action == _PRAGMA and arg1 is not None and arg1.lower() in _READ_PRAGMAS:
            return _OK
        if self.denied is None:
            self.denied = (action, arg1, arg2)
        return _DENY

    # ------------------------------------------------------------- one query
    def query(self, path: str, sql: str, params: tuple, limit: float, consume: Any) -> Any:
        """Run ``sql`` and hand its rows to ``consume(rows) -> value``; failures raise
        :class:`QueryFailed` with the message for the model."""
        try:
            connection = self.connect(path)
        except sqlite3.Error as error:
            raise QueryFailed(f"cannot open the database: {error}") from None
        try:
            return self._query(connection, sql, params, limit, consume)
        except sqlite3.OperationalError as error:
            if "decode" not in str(error).lower():
                raise self._failure(error, limit, sql) from None
        except QueryFailed:
            raise
        except Exception as error:  # the query text is untrusted: report, never raise
            raise self._failure(error, limit, sql) from None
        # Text that is not valid UTF-8 in the database: read it again with replacement chars.
        connection.text_factory = _lenient_text
        try:
            return self._query(connection, sql, params, limit, consume)
        except QueryFailed:
            raise
        except Exception as error:
            raise self._failure(error, limit, sql) from None
        finally:
            connection.text_factory = str

    def _query(
        self, connection: sqlite3.Connection, sql: str, params: tuple, limit: float, consume: Any
    ) -> Any:
        self.denied = self.note = None
        if self.rng_used:
            self.rng.seed(RANDOM_SEED)
            self.rng_used = False
        _limit_cpu(limit)
        self.deadline = time.perf_counter() + limit
        try:
            cursor = connection.execute(sql, params)
            try:
                columns = tuple(entry[0] for entry in cursor.description or ())
                return columns, consume(cursor)
            finally:
                cursor.close()
        finally:
            self.deadline = math.inf

    def _failure(self, error: Exception, limit: float, sql: str) -> QueryFailed:
        message = str(error) or type(error).__name__
        if isinstance(error, MemoryError):
            return QueryFailed(
                f"out of memory: the query needs more than the {HEAP_LIMIT // MIB} MiB allowed",
                recycle=True,
            )
        if isinstance(error, sqlite3.OperationalError) and message == "interrupted":
            return QueryFailed(f"stopped at the {limit:g} s time limit", timed_out=True)
        if message.startswith("vtable constructor failed: "):
            name = message.split(": ", 1)[1]
            return QueryFailed(
                f"the virtual table {name} is not available here (only {_ALLOWED_TABLES})"
            )
        if self.denied is not None and (
            "not authorized" in message or message == "authorization denied"
        ):
            return QueryFailed(denial_message(*self.denied, sql))
        if self.note is not None and "user-defined function raised exception" in message:
            return QueryFailed(self.note)
        if isinstance(error, UnicodeError):
            return QueryFailed("the query is not valid Unicode text")
        return QueryFailed(message)

    # ------------------------------------------------------------- requests
    def handle(self, request: tuple) -> tuple:
        kind = request[0]
        if kind == "run":
            _, path, sql, params, limit, max_rows, max_bytes = request
            columns, (rows, complete) = self.query(
                path, sql, params, limit, lambda cursor: read_rows(cursor, max_rows, max_bytes)
            )
            return (False, "rows", columns, rows, complete)
        if kind == "gold":
            _, path, sql, limit = request
            return (False, "gold", len(self.gold(path, sql, limit)))
        if kind == "grade":
            _, path, sql, gold_sql, limit, max_rows = request
            if self.last_gold is None or self.last_gold[0] != (path, gold_sql):
                raise QueryFailed("internal error: the reference query was not run first")
            gold = self.last_gold[1]
            _, correct = self.query(
                path, sql, (), limit, lambda cursor: same_row_set(cursor, gold, max_rows)
            )
            return (False, "graded", correct)
        raise QueryFailed(f"internal error: unknown request {kind!r}")

    def gold(self, path: str, sql: str, limit: float) -> dict:
        key = (path, sql)
        if self.last_gold is not None and self.last_gold[0] == key:
            return self.last_gold[1]
        cached = self.golds.get(key)
        if cached is not None:
            self.golds.move_to_end(key)
            index = cached[0]
        else:
            self.last_gold = None  # let the previous one go before building the next
            _, index = self.query(path, sql, (), limit, lambda c: row_set(c, GOLD_MAX_BYTES))
            size = sum(row_cost(row) + 64 for row in index)
            if size <= GOLD_CACHE_BYTES:
                self.golds[key] = (index, size)
                while sum(entry[1] for entry in self.golds.values()) > GOLD_CACHE_BYTES:
                    self.golds.popitem(last=False)
        self.last_gold = (key, index)
        return index


def _uri_path(path: str) -> str:
    """An absolute path as a SQLite URI path (``%``, ``?`` and ``#`` escaped)."""
    path = os.path.abspath(path)
    return path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _limit_cpu(limit: float) -> None:
    """Let the process use at most ``limit + CPU_GRACE`` more seconds of CPU (SIGXCPU ends
    it): a worker whose caller is gone cannot run on."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    _set_soft_limit(resource.RLIMIT_CPU, math.ceil(used + limit + CPU_GRACE))


def _address_space() -> int | None:
    """The process's virtual size in bytes (Linux ``/proc``), or ``None`` where unknown."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _set_soft_limit(name: int, value: int) -> None:
    _, hard = resource.getrlimit(name)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(name, (value, hard))


def _limit_process() -> None:
    """Address space: the size now plus ADDRESS_SPACE_GROWTH (where the size is known: Linux);
    files: MAX_TEMP_FILE_BYTES; SQLite's heap: HEAP_LIMIT (a process-wide setting)."""
    size = _address_space()
    if size is not None:
        _set_soft_limit(resource.RLIMIT_AS, size + ADDRESS_SPACE_GROWTH)
    _set_soft_limit(resource.RLIMIT_FSIZE, MAX_TEMP_FILE_BYTES)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-large file is an error, not a kill
    memory = sqlite3.connect(":memory:")
    memory.execute(f"PRAGMA hard_heap_limit = {HEAP_LIMIT}")
    memory.execute(f"PRAGMA soft_heap_limit = {SOFT_HEAP_LIMIT}")
    memory.close()


# ----------------------------------------------------------------- the pipe
def send(fd: int, message: tuple) -> None:
    data = marshal.dumps(message)
    view = memoryview(HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int) -> tuple | None:
    """One message, or ``None`` at the end of the stream (the sender writes one message and
    waits for the answer, so a read never takes the start of the next message)."""
    data = os.read(fd, 1 << 16)
    if len(data) < HEADER.size:
        data += _read_exactly(fd, HEADER.size - len(data)) if data else b""
        if len(data) < HEADER.size:
            return None
    size = HEADER.unpack_from(data)[0]
    body = data[HEADER.size :]
    if len(body) < size:
        rest = _read_exactly(fd, size - len(body))
        if rest is None:
            return None
        body += rest
    return marshal.loads(body)


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def main(argv: list[str]) -> int:
    max_open = int(argv[1]) if len(argv) > 1 else 8
    requests, replies = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    _limit_process()
    worker = Worker(max_open)
    send(replies, (False, "ready", os.getpid()))
    os.dup2(devnull, 2)  # nothing more to say on stderr
    while True:
        request = receive(requests)
        if request is None:
            return 0
        try:
            reply = worker.handle(request)
        except QueryFailed as failure:
            reply = (failure.recycle, "error", str(failure), failure.timed_out)
        except MemoryError:
            reply = (True, "error", "out of memory while reading the result", False)
        except Exception as error:  # never leave the caller without an answer
            reply = (False, "error", f"internal error: {type(error).__name__}: {error}", False)
        try:
            send(replies, reply)
        except MemoryError:
            send(replies, (True, "error", "out of memory while sending the result", False))
            return 1
        if reply[0]:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
