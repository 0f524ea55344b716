"""The SQL sandbox: hostile queries are refused or stopped, and the database never changes."""

from __future__ import annotations

import copy
import hashlib
import pickle
import sqlite3
import time
from pathlib import Path

import pytest

from agent_envs.envs.bird.sandbox import Sandbox, SandboxPool, check_query

LIMIT = 1.0  # seconds per query in these tests; a stop must come within 1.2x


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
    ("random", "SELECT random()", "random() is not allowed"),
    ("randomblob", "SELECT hex(randomblob(8))", "randomblob() is not allowed"),
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


@pytest.mark.parametrize("statement", ["ATTACH DATABASE '{path}' AS other", "VACUUM INTO '{path}'"])
def test_sandbox__attach_and_vacuum_into_create_no_file(football, tmp_path, statement):
    target = tmp_path / "other.db"
    sandbox = _sandbox(football)
    for query in (statement, f"WITH x AS (SELECT 1) SELECT * FROM x; {statement}"):
        result = sandbox.run(query.format(path=target))
        assert result.rows is None
    # Even past the first guard, ATTACH is denied (and VACUUM INTO attaches its target).
    connection = sandbox._connect()
    with pytest.raises(sqlite3.DatabaseError):
        connection.execute(statement.format(path=target))
    assert not target.exists()


def test_sandbox__connection_refuses_writes_without_the_first_guard(football):
    before = _digest(football)
    connection = _sandbox(football)._connect()
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
    info = sandbox.run("SELECT name FROM pragma_table_info('teams')")
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


def test_sandbox__pickle_and_deepcopy_drop_the_connection(football):
    sandbox = _sandbox(football)
    assert sandbox.run("SELECT 1").rows == [(1,)]
    assert sandbox._connection is not None
    for clone in (pickle.loads(pickle.dumps(sandbox)), copy.deepcopy(sandbox)):
        assert clone._connection is None and clone.path == sandbox.path
        assert clone.run("SELECT COUNT(*) FROM teams").rows == [(16,)]
    pool = SandboxPool(timeout=LIMIT, max_rows=10, max_bytes=10**6)
    pool.get(football).run("SELECT 1")
    for clone in (pickle.loads(pickle.dumps(pool)), copy.deepcopy(pool)):
        assert clone._open == {} and clone.get(football).run("SELECT 2").rows == [(2,)]


def test_sandbox__pool_keeps_at_most_max_open_connections(builtin_root):
    pool = SandboxPool(timeout=LIMIT, max_rows=10, max_bytes=10**6, max_open=2)
    paths = [builtin_root / name / f"{name}.sqlite" for name in ("bookshop", "clinic", "football")]
    first = pool.get(paths[0])
    first.run("SELECT 1")
    for path in paths[1:]:
        pool.get(path).run("SELECT 1")
    assert list(pool._open) == paths[1:] and first._connection is None
    pool.close()
    assert pool._open == {}


def test_sandbox__missing_file_is_an_error_not_an_exception(tmp_path):
    result = _sandbox(tmp_path / "absent.sqlite").run("SELECT 1")
    assert result.rows is None and "unable to open" in result.error
    assert not (tmp_path / "absent.sqlite").exists()


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
