"""Text the model reads: ASCII escaping, values, results, the schema (golden strings)."""

from __future__ import annotations

import sqlite3

import pytest

from agent_envs.core.spaces import ASCII_CHARSET
from agent_envs.envs.bird.data import ColumnNote
from agent_envs.envs.bird.prompts import (
    MAX_RESULT_CHARS,
    describe_result,
    sql_literal,
    to_ascii,
)
from agent_envs.envs.bird.sandbox import Sandbox
from agent_envs.envs.bird.schema import read_tables, render_schema
from agent_envs.envs.bird.types import QueryResult


@pytest.mark.parametrize(
    ("text", "ascii"),
    [
        ("plain text\twith tab\n", "plain text\twith tab\n"),
        ("Z\u00fcrich", "Z\\u00fcrich"),
        ("What\u2019s \u201cit\u201d \u2014 a\u2026", 'What\'s "it" - a...'),
        ("line\r\nbreak\rhere", "line\nbreak\nhere"),
        ("nbsp\u00a0and\u200bzero", "nbsp andzero"),
        ("bell\x07 del\x7f", "bell\\x07 del\\x7f"),
        ("\u2022 item \ufffd", "* item ?"),
        ("emoji \U0001f916", "emoji \\U0001f916"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
    ],
)
def test_bird_prompts__to_ascii(text, ascii):
    assert to_ascii(text) == ascii
    assert set(to_ascii(text)) <= set(ASCII_CHARSET)


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (None, "NULL"),
        (12, "12"),
        (1.5, "1.5"),
        ("O'Brien", "'O''Brien'"),
        ("two\nlines", "'two\\nlines'"),
        (b"\x00\x01", "<blob of 2 bytes>"),
        ("x" * 100, "'" + "x" * 80 + "'..."),
    ],
)
def test_bird_prompts__sql_literal(value, literal):
    assert sql_literal(value) == literal


def test_bird_prompts__describe_result_golden():
    result = QueryResult([(1, "Ana"), (2, None), (3, "Bo")], ("id", "name"))
    assert describe_result(result, 2) == "3 rows; the first 2:\nid | name\n1 | 'Ana'\n2 | NULL"
    assert describe_result(QueryResult([(5,)], ("n",)), 10) == "1 row:\nn\n5"
    assert describe_result(QueryResult([], ("a", "b")), 10) == "0 rows:\na | b"
    cut = QueryResult([(1,)] * 20, ("n",), complete=False)
    assert describe_result(cut, 1).startswith("more than 20 rows (cut at the cap); the first 1:")
    failed = QueryResult(None, (), "no such column: caf\u00e9")
    assert describe_result(failed, 10) == "error: no such column: caf\\u00e9"
    wide = QueryResult(
        [tuple("x" * 80 for _ in range(200))] * 10, tuple("c" * 30 for _ in range(200))
    )
    assert len(describe_result(wide, 10)) <= MAX_RESULT_CHARS


def test_bird_schema__render_golden(tmp_path):
    path = tmp_path / "pets.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE owner (id INTEGER PRIMARY KEY, name TEXT, city TEXT);")
    connection.execute(
        'CREATE TABLE "pet" (pet_id INTEGER, owner_id INTEGER REFERENCES owner (id), kind TEXT)'
    )
    owners = [(1, "Ana", "M\u00fcnchen"), (2, "Bo", None), (3, "Cy", "Porto")]
    connection.executemany("INSERT INTO owner VALUES (?, ?, ?)", owners)
    connection.executemany("INSERT INTO pet VALUES (?, ?, ?)", [(1, 1, "cat"), (2, 1, "cat")])
    connection.commit()
    connection.close()
    notes = {
        "owner": {"name": ColumnNote("owner name", "the owner\u2019s name", "")},
        "pet": {"kind": ColumnNote("", "the species.", "'cat' or 'dog'")},
    }
    sandbox = Sandbox(path, timeout=1.0, max_rows=100, max_bytes=10**6)
    text = render_schema(read_tables(sandbox, sample_values=2), notes)
    assert text == (
        "CREATE TABLE owner (id INTEGER PRIMARY KEY, name TEXT, city TEXT);\n"
        "-- owner.id\n"
        "--   Examples: 1, 2.\n"
        '-- owner.name ("owner name"): the owner\'s name.\n'
        "--   Examples: 'Ana', 'Bo'.\n"
        "-- owner.city\n"
        "--   Examples: 'M\\u00fcnchen', 'Porto'.\n"
        "\n"
        'CREATE TABLE "pet" (pet_id INTEGER, owner_id INTEGER REFERENCES owner (id), kind TEXT);\n'
        "-- pet.pet_id\n"
        "--   Examples: 1, 2.\n"
        "-- pet.owner_id\n"
        "--   Examples: 1.\n"
        "-- pet.kind: the species. Values: 'cat' or 'dog'.\n"
        "--   Examples: 'cat'."
    )
    plain = render_schema(read_tables(sandbox, sample_values=0), {})
    assert "Examples" not in plain and plain.count("CREATE TABLE") == 2
    cut = render_schema(read_tables(sandbox, sample_values=2), notes, max_chars=100)
    assert len(cut) == 100 and cut.endswith("-- ... (schema cut: too long)")
