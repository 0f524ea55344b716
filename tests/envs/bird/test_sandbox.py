"""The SQL sandbox: hostile queries are refused or stopped, and the database never changes."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import pickle
import random
import resource
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_envs.envs.bird import sandbox as sandbox_module
from agent_envs.envs.bird import worker as worker_module
from agent_envs.envs.bird.grading import rows_match
from agent_envs.envs.bird.sandbox import (
    Sandbox,
    SandboxPool,
    SqlWorker,
    check_query,
    thread_worker,
)
from agent_envs.envs.bird.worker import QueryFailed, Worker

LIMIT = 1.0  # seconds per query in these tests; a stop must come within 1.2x
MIB = 2**20


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def _process_limits_restored():
    """A test that calls ``Worker.query`` in this process gets the worker's process limits
    (a CPU-seconds limit: SIGXCPU, an address-space and a file-size limit); put the test
    process's own limits back after it, or a later test dies of SIGXCPU."""
    names = (resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_FSIZE)
    saved = {name: resource.getrlimit(name) for name in names}
    yield
    for name, limits in saved.items():
        resource.setrlimit(name, limits)


@pytest.fixture
def football(builtin_root: Path) -> Path:
    return builtin_root / "football" / "football.sqlite"


def _sandbox(path: Path, **kwargs) -> Sandbox:
    settings = dict(timeout=LIMIT, max_rows=10_000, max_bytes=1_000_000) | kwargs
    return Sandbox(path, **settings)


# (name, query, substring of the error) — every one is refused before or while preparing.
REFUSED = [
    ("delete", "DELETE FROM players", "not 'DELETE'"),
    ("drop", "DROP TABLE players", "not 'DROP'"),
    ("update", "UPDATE players SET name = 'x'", "not 'UPDATE'"),
    ("insert", "INSERT INTO teams VALUES (99, 'x', 'y', 1, 'z', 1)", "not 'INSERT'"),
    ("replace", "REPLACE INTO teams VALUES (1, 'x', 'y', 1, 'z', 1)", "not 'REPLACE'"),
    ("create", "CREATE TABLE t (x)", "not 'CREATE'"),
    ("create_temp", "CREATE TEMP TABLE t AS SELECT * FROM teams", "not 'CREATE'"),
    ("alter", "ALTER TABLE teams ADD COLUMN x", "not 'ALTER'"),
    ("begin", "BEGIN; SELECT 1", "not 'BEGIN'"),
    ("pragma_write", "PRAGMA query_only = OFF", "not 'PRAGMA'"),
    ("vacuum", "VACUUM", "not 'VACUUM'"),
    ("cte_delete", "WITH x AS (SELECT 1) DELETE FROM players", "DELETE is not allowed"),
    ("cte_insert", "WITH x AS (SELECT 1) INSERT INTO teams SELECT * FROM teams", "INSERT"),
    ("cte_update", "WITH x AS (SELECT 1) UPDATE teams SET name = 'x'", "UPDATE is not allowed"),
    ("pragma_function", "SELECT * FROM pragma_writable_schema", "not authorized"),
    ("load_extension", "SELECT load_extension('/tmp/evil.so')", "load_extension() is not"),
    ("huge_randomblob", "SELECT randomblob(2000000000)", "randomblob(N) makes at most"),
    ("long_like_pattern", "SELECT 'a' LIKE printf('%.*c', 5000, 'a')", "pattern too complex"),
    ("two_statements", "SELECT 1; DROP TABLE players", "one statement"),
    ("comment_then_statement", "SELECT 1 /* hi */; DELETE FROM players", "one statement"),
    ("line_comment_hides", "SELECT 1;\n-- ok\nDROP TABLE players", "one statement"),
    ("leading_comment", "-- a query\nDELETE FROM players", "not 'DELETE'"),
    ("block_comment", "/* SELECT */ DROP TABLE players", "not 'DROP'"),
    ("parenthesis", "(DELETE FROM players)", "not 'DELETE'"),
    ("empty", "  -- nothing\n /* at all */ ", "the query is empty"),
    ("unclosed_comment", "/* SELECT 1", "the query is empty"),
    ("huge_value", "SELECT zeroblob(100000000)", "too big"),
    ("doubling", "WITH RECURSIVE c(x) AS (SELECT 'a' UNION ALL SELECT x || x FROM c) "
     "SELECT COUNT(*) FROM c", "too big"),
    ("nul", "SELECT 1\x00; DROP TABLE players", "null character"),
    ("surrogate", "SELECT '\ud800'", "not valid Unicode"),
    ("too_long", "SELECT " + "1 + " * 20_000 + "1", "longer than"),
]  # fmt: skip

# Queries that would run far past the limit: stopped within 1.2x of it.
ENDLESS = [
    ("recursive_cte", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
     "SELECT MAX(x) FROM c"),
    ("cross_join", "SELECT COUNT(*) FROM goals AS a, goals AS b, goals AS c"),
    ("sorted_cross_join", "SELECT a.name FROM players AS a, players AS b, players AS c "
     "ORDER BY a.name || b.name || c.name LIMIT 1"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "query", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_sandbox__hostile_query_is_refused(football, name, query, message):
    before = _digest(football)
    sandbox = _sandbox(football)
    start = time.perf_counter()
    result = sandbox.run(query)
    assert time.perf_counter() - start < LIMIT
    assert result.rows is None and not result.timed_out
    assert message in result.error
    assert sandbox.run("SELECT COUNT(*) FROM players").rows == [(384,)]
    sandbox.close()
    assert _digest(football) == before


@pytest.mark.parametrize(("name", "query"), ENDLESS, ids=[r[0] for r in ENDLESS])
def test_sandbox__endless_query_is_stopped_within_the_limit(football, name, query):
    before = _digest(football)
    sandbox = _sandbox(football, max_rows=10**9, max_bytes=10**12)
    start = time.perf_counter()
    result = sandbox.run(query)
    elapsed = time.perf_counter() - start
    assert result.timed_out and result.rows is None, result
    assert result.error == "stopped at the 1 s time limit"
    assert LIMIT <= elapsed <= 1.2 * LIMIT
    assert sandbox.run("SELECT COUNT(*) FROM teams").rows == [(16,)]  # usable afterwards
    assert _digest(football) == before


# One SQLite function call that runs far past the limit: the progress handler never gets to
# run, so the worker is killed at 1.1x the limit (each ran 10 s to minutes before the worker).
LONG_CALLS = [
    ("printf_width", "SELECT printf('%.*c', 2000000000, 'x')"),
    ("like", "WITH s(a, p) AS (SELECT printf('%.*c', 999999, 'a'), '%' || printf('%.*c', 990,"
     " 'a') || 'b') SELECT " + " OR ".join(["a LIKE p"] * 12) + " FROM s"),  # ~1 s per LIKE
    ("instr", "WITH s(a, b) AS (SELECT printf('%.*c', 999999, 'a'), printf('%.*c', 499999, 'a')"
     " || 'b') SELECT " + " + ".join(["instr(a, b)"] * 8) + " FROM s"),  # ~1 s per instr
]  # fmt: skip


@pytest.mark.parametrize(("name", "query"), LONG_CALLS, ids=[r[0] for r in LONG_CALLS])
def test_sandbox__one_long_function_call_is_killed_within_the_limit(football, name, query):
    sandbox = _sandbox(football)
    sandbox.run("SELECT 1")  # the worker is up
    first = sandbox.worker.pid
    start = time.perf_counter()
    result = sandbox.run(query)
    elapsed = time.perf_counter() - start
    assert result.timed_out and result.rows is None, result
    assert result.error == "stopped at the 1 s time limit"
    assert LIMIT <= elapsed <= 1.2 * LIMIT
    assert sandbox.worker.pid is None  # killed; the next query starts a fresh worker
    assert sandbox.run("SELECT COUNT(*) FROM teams").rows == [(16,)]
    assert sandbox.worker.pid not in (None, first)
    sandbox.close()


def _rss_kib(pid: int | str, key: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} for {pid}")


def _open_file_bytes(pid: int, database: Path) -> int:
    """The size of the regular files a process holds open, other than ``database``: SQLite's
    temporary files, which it unlinks as soon as it opens them, are seen only this way."""
    skip = database.stat().st_ino
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            info = os.stat(f"/proc/{pid}/fd/{fd}")
            if stat.S_ISREG(info.st_mode) and info.st_ino != skip:
                total += info.st_size
    return total


class _PeakSampler:
    """The peak of ``measure(pid)`` (default: RSS in KiB), sampled every millisecond in a
    thread."""

    def __init__(self, pid: int, measure: Callable[[int], int] = _rss_kib) -> None:
        self.pid, self.measure, self._done = pid, measure, threading.Event()
        self.peak = measure(pid)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                self.peak = max(self.peak, self.measure(self.pid))
            except (OSError, AssertionError):  # the worker is gone
                return
            time.sleep(0.001)

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


def _wide(columns: int) -> str:
    return "SELECT " + ", ".join(["hex(zeroblob(499999))"] * columns)  # one row of 1 MB values


_TALL = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 64) SELECT "
    + ", ".join(["hex(zeroblob(499999))"] * 50)
    + " FROM r"
)  # 64 rows of 50 x 1 MB
BOMBS = [
    ("2000_columns", _wide(2000), "too many columns in result set"),
    ("900_columns", _wide(900), "out of memory: the query needs more than the 64 MiB allowed"),
    ("64_rows_of_50_columns", _TALL, "out of memory: the query needs more than the 64 MiB"),
]


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("name", "query", "message"), BOMBS, ids=[r[0] for r in BOMBS])
@pytest.mark.parametrize("graded", [False, True], ids=["run", "grade"])
def test_sandbox__memory_bombs_grow_no_process_by_256_mib(football, name, query, message, graded):
    # Before the worker these took the env's process from ~50 MiB to 3.2-4.8 GiB.
    sandbox = _sandbox(football, max_bytes=64 * MIB)
    sandbox.run("SELECT 1")
    pid = sandbox.worker.pid
    limits = Path(f"/proc/{pid}/limits").read_text()
    address_space = next(line for line in limits.splitlines() if "address space" in line)
    start_size = _rss_kib(pid, "VmSize") * 1024
    assert int(address_space.split()[3]) <= start_size + 256 * MIB
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    env_before, worker_before = _rss_kib("self"), _rss_kib(pid)
    sampler = _PeakSampler(pid)
    start = time.perf_counter()
    if graded:
        outcome = sandbox.grade(query, "SELECT 1", timeout=LIMIT, gold_timeout=LIMIT)
        assert not outcome.correct
        error = outcome.error
    else:
        result = sandbox.run(query)
        assert result.rows is None and not result.timed_out
        error = result.error
    elapsed = time.perf_counter() - start
    worker_peak = sampler.stop()
    assert message in error or graded  # graded: streamed, the first row is not in the gold set
    assert elapsed <= 1.2 * LIMIT
    assert _rss_kib("self", "VmHWM") - env_before < 256 * 1024
    assert worker_peak - worker_before < 256 * 1024
    assert sandbox.run("SELECT COUNT(*) FROM teams").rows == [(16,)]
    sandbox.close()


# Temporary data without bound: about 1 KB a row over a 56.6-million-row cross join, sorted,
# grouped, made distinct or materialised. With temporary files (before temp_store = MEMORY)
# each wrote 200-430 MiB in its 1 s, and 1 GiB in 3-4 s under the 5 s EXECUTE limit.
_KB_ROW = "printf('%.*c', 1000, 'x') || a.name || b.name || c.name"
_CROSS = "FROM players AS a, players AS b, players AS c"
TEMP_BOMBS = [
    ("order_by", f"SELECT {_KB_ROW} AS x {_CROSS} ORDER BY x"),
    ("group_by", f"SELECT {_KB_ROW} AS x, COUNT(*) {_CROSS} GROUP BY x"),
    ("count_distinct", f"SELECT COUNT(DISTINCT {_KB_ROW}) {_CROSS}"),
    ("union", f"SELECT {_KB_ROW} {_CROSS} UNION SELECT 1"),
    ("materialized", f"WITH m AS MATERIALIZED (SELECT {_KB_ROW} AS x {_CROSS}) "
     "SELECT COUNT(*) FROM m AS m1, m AS m2"),
]  # fmt: skip


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("name", "query"), TEMP_BOMBS, ids=[r[0] for r in TEMP_BOMBS])
def test_sandbox__temporary_data_writes_at_most_64_mib_to_disk(
    football, tmp_path, monkeypatch, name, query
):
    monkeypatch.setenv("SQLITE_TMPDIR", str(tmp_path))  # where a fresh worker's files would go
    sandbox = _sandbox(football, worker=SqlWorker())
    sandbox.run("SELECT 1")
    pid = sandbox.worker.pid
    limits = Path(f"/proc/{pid}/limits").read_text()
    file_size = next(line for line in limits.splitlines() if "file size" in line)
    rss_before = _rss_kib(pid)
    disk = _PeakSampler(pid, lambda pid: _open_file_bytes(pid, football))
    memory = _PeakSampler(pid)
    start = time.perf_counter()
    result = sandbox.run(query)
    elapsed = time.perf_counter() - start
    disk_peak, memory_peak = disk.stop(), memory.stop()
    assert disk_peak <= 64 * MIB, f"{disk_peak / MIB:.0f} MiB of temporary files"
    assert int(file_size.split()[3]) <= 64 * MIB  # a second guard: no file grows past it
    assert memory_peak - rss_before < 256 * 1024
    assert elapsed <= 1.2 * LIMIT
    assert result.rows is None and not result.timed_out
    assert result.error == "out of memory: the query needs more than the 64 MiB allowed"
    assert list(tmp_path.iterdir()) == []
    assert sandbox.run("SELECT COUNT(*) FROM teams").rows == [(16,)]
    sandbox.close()


_ONLY = (
    "(only json_each, json_tree, pragma_foreign_key_list, pragma_index_info, pragma_index_list,"
    " pragma_index_xinfo, pragma_table_info, pragma_table_xinfo)"
)
# (name, statement, the whole message): what the authorizer denied, named as the model wrote
# it. SQLite checks the first use of a table-valued function as an UPDATE of sqlite_master,
# a CREATE as an INSERT into it and a DROP as a DELETE from it.
DENIED = [
    ("pragma_journal_mode", "SELECT * FROM pragma_journal_mode",
     f"not authorized: the table-valued function pragma_journal_mode is not allowed {_ONLY}"),
    ("pragma_quoted_upper", 'SELECT * FROM "PRAGMA_USER_VERSION"',
     f"not authorized: the table-valued function pragma_user_version is not allowed {_ONLY}"),
    ("pragma_beside_allowed", "SELECT t.name FROM teams AS t, pragma_table_info('teams') AS i,"
     " pragma_compile_options AS o",
     f"not authorized: the table-valued function pragma_compile_options is not allowed {_ONLY}"),
    ("pragma_writable_schema", "SELECT * FROM pragma_writable_schema",
     f"not authorized: the table-valued function pragma_writable_schema is not allowed {_ONLY}"),
    ("dbstat", "SELECT * FROM dbstat", f"the virtual table dbstat is not available here {_ONLY}"),
    ("load_extension", "SELECT load_extension('/tmp/evil.so')",
     "not authorized: the function load_extension() is not allowed"),
    ("fts3_tokenizer", "SELECT fts3_tokenizer('simple')",
     "not authorized: the function fts3_tokenizer() is not allowed"),
    ("cte_update", "WITH x AS (SELECT 1) UPDATE teams SET name = 'x'",
     "not authorized: UPDATE is not allowed (read-only database)"),
    ("cte_delete", "WITH x AS (SELECT 1) DELETE FROM players",
     "not authorized: DELETE is not allowed (read-only database)"),
    ("cte_insert", "WITH x AS (SELECT 1) INSERT INTO teams SELECT * FROM teams",
     "not authorized: INSERT is not allowed (read-only database)"),
    # Past the first guard only (they do not start with SELECT, WITH or VALUES):
    ("pragma", "PRAGMA journal_mode",
     f"not authorized: PRAGMA journal_mode is not allowed {_ONLY}"),
    ("pragma_write", "PRAGMA query_only = OFF",
     f"not authorized: PRAGMA query_only is not allowed {_ONLY}"),
    ("create_table", "CREATE TABLE t (x)",
     "not authorized: CREATE is not allowed (read-only database)"),
    ("create_temp_view", "CREATE TEMP VIEW v AS SELECT 1",
     "not authorized: CREATE is not allowed (read-only database)"),
    ("drop_table", "DROP TABLE teams", "not authorized: DROP is not allowed (read-only database)"),
    ("alter_table", "ALTER TABLE teams ADD COLUMN x",
     "not authorized: ALTER TABLE is not allowed (read-only database)"),
    ("attach", "ATTACH DATABASE ':memory:' AS other",
     "not authorized: ATTACH is not allowed (only this one database can be read)"),
    ("begin", "BEGIN", "not authorized: BEGIN/COMMIT/ROLLBACK is not allowed (read-only database)"),
    ("savepoint", "SAVEPOINT s", "not authorized: SAVEPOINT is not allowed (read-only database)"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "query", "message"), DENIED, ids=[r[0] for r in DENIED])
def test_sandbox__denied_statement_names_what_was_denied(football, name, query, message):
    if check_query(query) is None:  # what a model can send: through the sandbox
        result = _sandbox(football).run(query)
        assert (result.rows, result.error, result.timed_out) == (None, message, False)
    with pytest.raises(QueryFailed) as failure:  # straight to the worker, past the first guard
        Worker(max_open=1).query(str(football), query, (), LIMIT, lambda cursor: cursor.fetchall())
    assert str(failure.value) == message


def test_sandbox__first_row_over_the_byte_cap_is_an_error_not_zero_rows(football):
    result = _sandbox(football, max_bytes=10_000).run("SELECT hex(zeroblob(20000))")
    assert result.rows is None
    assert (
        result.error == "the result is too large: its first row alone holds more than 10,000 bytes"
    )
    cut = _sandbox(football, max_bytes=10_000).run("SELECT name FROM players")
    assert cut.rows and not cut.complete


def test_sandbox__table_valued_functions_are_allowed(football):
    sandbox = _sandbox(football)
    assert sandbox.run("SELECT key, value FROM json_each('[1,2]')").rows == [(0, 1), (1, 2)]
    tree = sandbox.run("SELECT fullkey FROM json_tree('{\"a\": [1]}') ORDER BY id").rows
    assert tree == [("$",), ("$.a",), ("$.a[0]",)]
    assert sandbox.run("SELECT COUNT(*) FROM pragma_table_info('teams')").rows == [(6,)]
    assert sandbox.run("SELECT * FROM dbstat").error.startswith(
        "the virtual table dbstat is not available here (only json_each, json_tree, pragma_"
    )


def test_sandbox__random_is_seeded_per_query(football):
    sandbox = _sandbox(football)
    query = "SELECT random(), hex(randomblob(8)), name FROM teams ORDER BY random()"
    first = sandbox.run(query).rows
    assert len(first) == 16 and len({row[0] for row in first}) == 16
    assert sandbox.run(query).rows == first  # replays exactly
    assert sorted(row[2] for row in first) != [row[2] for row in first]  # really shuffled


def test_sandbox__grade_is_birds_set_equality_without_a_row_cap(football):
    sandbox = _sandbox(football, max_rows=10)
    gold = "SELECT name FROM players WHERE nationality = 'Brazil'"
    for sql, correct in [
        (gold, True),
        (gold + " ORDER BY random()", True),  # order does not matter (random() is allowed)
        ("SELECT name FROM players WHERE nationality = 'Brazil' UNION ALL " + gold, True),
        ("SELECT name FROM players", False),
        ("SELECT name, 1 FROM players WHERE nationality = 'Brazil'", False),
        (gold + " LIMIT 3", False),
    ]:
        assert sandbox.grade(sql, gold, timeout=LIMIT, gold_timeout=LIMIT) == (correct, None), sql
    many = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 150000) SELECT x"
    many += " FROM c"  # 150,000 rows: over the old 100,000-row cap of graded results
    assert sandbox.grade(many, many, timeout=5.0, gold_timeout=5.0) == (True, None)
    assert sandbox.grade(many, many, timeout=5.0, gold_timeout=5.0, max_rows=100) == (
        False,
        "the result is larger than the 100-row cap",
    )
    failed = sandbox.grade("SELECT nope FROM teams", gold, timeout=LIMIT, gold_timeout=LIMIT)
    assert failed == (False, "no such column: nope")
    broken = sandbox.grade(gold, "SELECT nope FROM teams", timeout=LIMIT, gold_timeout=LIMIT)
    assert broken == (False, "the reference query could not be graded: no such column: nope")


@pytest.mark.parametrize("statement", ["ATTACH DATABASE '{path}' AS other", "VACUUM INTO '{path}'"])
def test_sandbox__attach_and_vacuum_into_create_no_file(football, tmp_path, statement):
    target = tmp_path / "other.db"
    sandbox = _sandbox(football)
    for query in (statement, f"WITH x AS (SELECT 1) SELECT * FROM x; {statement}"):
        result = sandbox.run(query.format(path=target))
        assert result.rows is None
    # Even past the first guard, ATTACH is denied (and VACUUM INTO attaches its target).
    connection = Worker(max_open=1).connect(str(football))
    with pytest.raises(sqlite3.DatabaseError):
        connection.execute(statement.format(path=target))
    assert not target.exists()


def test_sandbox__connection_refuses_writes_without_the_first_guard(football):
    before = _digest(football)
    connection = Worker(max_open=1).connect(str(football))
    for statement in ("DELETE FROM players", "DROP TABLE goals", "PRAGMA query_only = OFF"):
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            connection.execute(statement)
    assert _digest(football) == before


def test_sandbox__reads_rows_columns_and_introspection(football):
    sandbox = _sandbox(football)
    result = sandbox.run("SELECT team_id, name FROM teams WHERE team_id <= 2 ORDER BY team_id;")
    assert result.columns == ("team_id", "name")
    assert result.rows == [(1, "Northbridge United"), (2, "Riverside Rovers")]
    assert result.complete and result.error is None
    recursive = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3) SELECT x FROM c"
    )
    assert sandbox.run(recursive).rows == [(1,), (2,), (3,)]
    assert sandbox.run("VALUES (1, 'a')").rows == [(1, "a")]
    info = sandbox.run("SELECT name FROM pragma_table_info(?)", ("teams",))
    assert [row[0] for row in info.rows][:2] == ["team_id", "name"]
    assert sandbox.run("SELECT COUNT(*) FROM sqlite_master").rows == [(4,)]
    assert sandbox.run("SELECT nope FROM teams").error == "no such column: nope"


def test_sandbox__row_and_byte_caps_mark_the_result_incomplete(football):
    by_rows = _sandbox(football, max_rows=100).run("SELECT * FROM goals")
    assert len(by_rows.rows) == 100 and not by_rows.complete
    exact = _sandbox(football, max_rows=16).run("SELECT * FROM teams")
    assert len(exact.rows) == 16 and exact.complete
    by_bytes = _sandbox(football, max_bytes=1_000).run("SELECT name FROM players")
    assert 0 < len(by_bytes.rows) < 384 and not by_bytes.complete
    assert _sandbox(football).run("SELECT * FROM goals", max_rows=10).complete is False
    start = time.perf_counter()
    huge = _sandbox(football, max_rows=1_000).run("SELECT * FROM goals AS a, goals AS b")
    assert len(huge.rows) == 1_000 and not huge.complete
    assert time.perf_counter() - start < 0.5 * LIMIT


def test_sandbox__invalid_utf8_text_is_read_with_replacement_characters(tmp_path):
    path = tmp_path / "latin.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (name TEXT)")
    connection.execute("INSERT INTO t VALUES (CAST(x'4361666ee9' AS TEXT))")  # 'Cafn' + 0xe9
    connection.commit()
    connection.close()
    sandbox = _sandbox(path)
    assert sandbox.run("SELECT name FROM t").rows == [("Cafn\ufffd",)]
    assert sandbox.run("SELECT 'ok'").rows == [("ok",)]  # strict decoding again afterwards


def test_sandbox__pickle_and_deepcopy_keep_the_kind_of_worker(football):
    shared = _sandbox(football)
    assert shared.run("SELECT 1").rows == [(1,)]
    own = _sandbox(football, worker=SqlWorker())
    assert own.run("SELECT 1").rows == [(1,)]
    assert own.worker is not shared.worker and own.worker.pid != shared.worker.pid
    for clone in (pickle.loads(pickle.dumps(shared)), copy.deepcopy(shared)):
        assert clone.worker is thread_worker() and clone.path == shared.path
        assert clone.run("SELECT COUNT(*) FROM teams").rows == [(16,)]
    for clone in (pickle.loads(pickle.dumps(own)), copy.deepcopy(own)):
        assert clone.worker is not own.worker and clone.worker.pid is None
        assert clone.run("SELECT COUNT(*) FROM teams").rows == [(16,)]
        assert clone.worker.pid not in (None, own.worker.pid)
        clone.close()
        assert clone.worker.pid is None
    own.close()
    pool = SandboxPool(timeout=LIMIT, max_rows=10, max_bytes=10**6, worker=SqlWorker())
    pool.get(football).run("SELECT 1")
    for clone in (pickle.loads(pickle.dumps(pool)), copy.deepcopy(pool)):
        assert clone.worker is not pool.worker and clone.worker.pid is None
        assert clone.get(football).run("SELECT 2").rows == [(2,)]
        clone.close()
    pool.close()


def test_sandbox__one_shared_worker_per_thread(builtin_root):
    pool = SandboxPool(timeout=LIMIT, max_rows=10, max_bytes=10**6)
    paths = [builtin_root / name / f"{name}.sqlite" for name in ("bookshop", "clinic", "football")]
    for path in paths:
        assert pool.get(path).run("SELECT COUNT(*) > 0 FROM sqlite_master").rows == [(1,)]
    assert {pool.get(path).worker.pid for path in paths} == {thread_worker().pid}
    other = {}

    def in_a_thread() -> None:
        other["rows"] = pool.get(paths[0]).run("SELECT 5").rows
        other["pid"] = thread_worker().pid

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert other["rows"] == [(5,)] and other["pid"] not in (None, thread_worker().pid)
    deadline = time.perf_counter() + 10  # the thread is over: its worker is stopped
    while _alive(other["pid"]) and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert not _alive(other["pid"])
    pool.close()  # the shared worker runs on
    assert pool.get(paths[0]).run("SELECT 6").rows == [(6,)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sandbox__worker_keeps_at_most_max_open_connections(builtin_root):
    worker = Worker(max_open=2)
    paths = [str(builtin_root / n / f"{n}.sqlite") for n in ("bookshop", "clinic", "football")]
    for path in paths:
        worker.connect(path)
    assert list(worker.connections) == paths[1:]


def test_sandbox__missing_file_is_an_error_not_an_exception(tmp_path):
    result = _sandbox(tmp_path / "absent.sqlite").run("SELECT 1")
    assert result.rows is None and "unable to open" in result.error
    assert not (tmp_path / "absent.sqlite").exists()


def test_sandbox__a_dead_worker_is_an_error_then_replaced(football):
    sandbox = _sandbox(football)
    sandbox.run("SELECT 1")
    os.kill(sandbox.worker.pid, 9)
    time.sleep(0.05)
    result = sandbox.run("SELECT 2")
    assert result.rows == [(2,)] or "the SQL worker stopped" in result.error
    assert sandbox.run("SELECT 3").rows == [(3,)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_sandbox__a_forked_copy_starts_its_own_worker_and_never_stops_the_parents(football):
    sandbox = _sandbox(football)
    sandbox.run("SELECT 1")
    parent_worker = sandbox.worker.pid
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            result = sandbox.run("SELECT 2")
            os.write(write_end, f"{result.rows} {sandbox.worker.pid}".encode())
            sandbox.close()
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    rows, child_worker = os.read(read_end, 1000).decode().rsplit(" ", 1)
    assert rows == "[(2,)]" and int(child_worker) not in (parent_worker, child)
    # What the parent's finalizer does at a child's exit: nothing, the worker is not its own.
    sandbox_module._stop(sandbox.worker._process, owner=os.getpid() + 1)
    assert sandbox.run("SELECT 3").rows == [(3,)] and sandbox.worker.pid == parent_worker


def test_sandbox__worker_grading_equals_row_set_equality():
    rng = random.Random(7)
    values = [0, 1, 1.0, 2, 2.5, "a", "b", b"a", None]
    for _ in range(500):
        width = rng.randint(1, 2)
        gold = [tuple(rng.choice(values) for _ in range(width)) for _ in range(rng.randint(0, 4))]
        predicted = [
            tuple(rng.choice(values) for _ in range(width)) for _ in range(rng.randint(0, 4))
        ]
        index = worker_module.row_set(gold, 10**6)
        expected = rows_match(predicted, gold)
        assert worker_module.same_row_set(iter(predicted), index, None) is expected


@pytest.mark.parametrize(
    ("query", "allowed"),
    [
        ("SELECT 1", True),
        ("  with x as (select 1) select * from x", True),
        ("((SELECT 1))", True),
        ("/* note */ -- line\n VALUES (1)", True),
        ("EXPLAIN SELECT 1", False),
        ("select1", False),
        ("SELECTED", False),
    ],
)
def test_sandbox__check_query_first_word(query, allowed):
    assert (check_query(query) is None) is allowed
