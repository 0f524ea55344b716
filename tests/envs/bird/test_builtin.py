"""The built-in databases: deterministic, realistic, and every gold query answerable."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from agent_envs.envs.bird.builtin import (
    BUILTIN_VERSION,
    content_digest,
    ensure_builtin,
    generate,
)
from agent_envs.envs.bird.builtin_questions import QUESTIONS
from agent_envs.envs.bird.data import load_items

DIGEST = "54b803cf5ba55eaf2bf37524ddeb20be039c5297e8eae8508281f259674045cc"
ROW_COUNTS = {
    "bookshop": {"publishers": 12, "authors": 80, "books": 400, "customers": 600,
                 "orders": 1800, "order_items": 4531},
    "clinic": {"departments": 8, "doctors": 45, "patients": 900, "visits": 2600,
               "prescriptions": 1541},
    "football": {"teams": 16, "players": 384, "matches": 720, "goals": 1889},
}  # fmt: skip


def test_bird_builtin__generation_is_deterministic():
    databases = generate()
    assert content_digest(databases) == DIGEST
    assert {
        db.name: {t: len(rows) for t, rows in db.rows.items()} for db in databases
    } == ROW_COUNTS


def test_bird_builtin__files_in_bird_layout(builtin_cache: Path):
    questions, root = ensure_builtin(builtin_cache)
    assert questions == builtin_cache / f"builtin-v{BUILTIN_VERSION}" / "builtin.json"
    items = load_items(questions)
    assert len(items) == len(QUESTIONS) == 36
    assert [item.question_id for item in items] == list(range(36))
    assert {item.difficulty for item in items} == {"simple", "moderate", "challenging"}
    for name, tables in ROW_COUNTS.items():
        assert (root / name / f"{name}.sqlite").is_file()
        described = {path.stem for path in (root / name / "database_description").iterdir()}
        assert described == set(tables)
    record = json.loads(questions.read_text())[0]
    assert list(record) == ["question_id", "db_id", "question", "evidence", "SQL", "difficulty"]


def test_bird_builtin__second_call_reuses_the_cache(builtin_cache: Path):
    questions, _ = ensure_builtin(builtin_cache)
    stamp = questions.stat().st_mtime_ns
    assert ensure_builtin(builtin_cache)[0].stat().st_mtime_ns == stamp


def test_bird_builtin__foreign_keys_hold(builtin_root: Path):
    for name in ROW_COUNTS:
        connection = sqlite3.connect(builtin_root / name / f"{name}.sqlite")
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        for (table,) in tables.fetchall():
            assert connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] > 0
        connection.close()


_ORDER_LIMIT_1 = re.compile(r"ORDER BY (.+?) (?:DESC|ASC) LIMIT 1$")


@pytest.mark.parametrize("index", range(len(QUESTIONS)))
def test_bird_builtin__gold_query_has_a_non_empty_unambiguous_answer(builtin_root, index):
    question = QUESTIONS[index]
    db = question["db_id"]
    connection = sqlite3.connect(builtin_root / db / f"{db}.sqlite")
    rows = connection.execute(question["SQL"]).fetchall()
    assert rows and any(value is not None for row in rows for value in row)
    order = _ORDER_LIMIT_1.search(question["SQL"])
    if order is not None:  # the top value is not tied with the next one
        sql = question["SQL"]
        keyed = f"SELECT {order.group(1)}, {sql[len('SELECT ') :].replace('LIMIT 1', 'LIMIT 2')}"
        first, second = connection.execute(keyed).fetchall()
        assert first[0] != second[0], question["question"]
    connection.close()


def test_bird_builtin__race_lost_to_another_process_is_fine(tmp_path: Path):
    from agent_envs.envs.bird import builtin

    target = tmp_path / f"builtin-v{BUILTIN_VERSION}"
    builtin._build(target)
    builtin._build(target)  # the rename fails because the target exists: not an error
    assert (target / "builtin.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no scratch left behind
