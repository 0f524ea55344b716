"""Loading BIRD's files: questions, missing databases, description CSVs in odd encodings."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import pytest

from agent_envs.envs.bird.data import (
    BirdDataset,
    ColumnNote,
    item_from_dict,
    load_items,
    read_descriptions,
)
from agent_envs.envs.bird.types import BirdItem

QUESTION = {
    "question_id": 7,
    "db_id": "shop",
    "question": "How many items?",
    "evidence": "items refers to the item table",
    "SQL": "SELECT COUNT(*) FROM item",
    "difficulty": "simple",
}


def _database(root: Path, db_id: str) -> Path:
    folder = root / db_id
    folder.mkdir(parents=True)
    connection = sqlite3.connect(folder / f"{db_id}.sqlite")
    connection.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
    connection.commit()
    connection.close()
    return folder


def test_bird_data__json_list_and_json_lines_give_the_same_items(tmp_path):
    listed = tmp_path / "dev.json"
    listed.write_text(json.dumps([QUESTION, {**QUESTION, "question_id": 8}]))
    lines = tmp_path / "dev.jsonl"
    lines.write_text(json.dumps(QUESTION) + "\n\n" + json.dumps({**QUESTION, "question_id": 8}))
    expected = BirdItem("shop", "How many items?", "items refers to the item table",
                        "SELECT COUNT(*) FROM item", 7, "simple")  # fmt: skip
    assert load_items(listed)[0] == expected
    assert load_items(listed) == load_items(lines)


def test_bird_data__train_format_without_optional_keys():
    item = item_from_dict({"db_id": "d", "question": "q", "SQL": "SELECT 1"}, "x")
    assert item == BirdItem("d", "q", "", "SELECT 1", None, None)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"db_id": "d", "question": "q"}, r"missing or non-string keys \['SQL'\]"),
        ({"db_id": 3, "question": "q", "SQL": "s"}, "db_id"),
        ({**QUESTION, "question_id": "7"}, "'question_id' must be an int"),
        ({**QUESTION, "evidence": ["a"]}, "'evidence' must be a string"),
        ([1, 2], "must be an object"),
    ],
)
def test_bird_data__malformed_question_names_the_place(record, message):
    with pytest.raises(ValueError, match=message):
        item_from_dict(record, "dev.json[3]")


def test_bird_data__unreadable_files_raise_value_errors_naming_data_path(tmp_path):
    with pytest.raises(ValueError, match="data_path"):
        load_items(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(ValueError, match=r"data_path .* is not JSON"):
        load_items(broken)


def test_bird_data__missing_databases_are_skipped_with_one_warning(tmp_path):
    root = tmp_path / "dev_databases"
    _database(root, "shop")
    questions = [QUESTION, {**QUESTION, "db_id": "gone"}, {**QUESTION, "db_id": "lost"},
                 {**QUESTION, "db_id": "gone"}]  # fmt: skip
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(questions))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = BirdDataset.from_files(path, root)
    assert [item.db_id for item in dataset.items] == ["shop"]
    assert len(caught) == 1
    assert "skipped 3 of 4 questions" in str(caught[0].message)
    assert "gone, lost" in str(caught[0].message)


def test_bird_data__no_usable_question_is_a_value_error(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([QUESTION]))
    (tmp_path / "empty").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"db_root .* holds none"):
            BirdDataset.from_files(path, tmp_path / "empty")
    with pytest.raises(ValueError, match=r"db_root .* is not a directory"):
        BirdDataset.from_files(path, tmp_path / "nowhere")


HEADER = b"original_column_name,column_name,column_description,data_format,value_description"


def test_bird_data__description_csvs_in_any_encoding_never_crash(tmp_path):
    folder = tmp_path / "shop" / "database_description"
    folder.mkdir(parents=True)
    (folder / "Item.csv").write_bytes(
        HEADER + b'\r\nid,,the id,integer,\r\nName ,item name,"the name,\r\nin full",text,\r\n'
    )
    (folder / "budget.csv").write_bytes(  # cp1252 bullet, as in BIRD's student_club
        HEADER + b'\nstatus,,the status,text,"\x95 Open\n\x95 Closed"\n'
    )
    (folder / "odd.csv").write_bytes(HEADER + b"\nx,,undefined in cp1252: \x81,text,\n")
    (folder / "bom.csv").write_bytes(b"\xef\xbb\xbf" + HEADER + b"\nx,,with a BOM,text,\n")
    (folder / "empty.csv").write_bytes(b"")
    (folder / "notes.txt").write_bytes(b"ignored")
    notes = read_descriptions(tmp_path / "shop")
    assert notes["item"] == {
        "id": ColumnNote("", "the id", ""),
        "name": ColumnNote("item name", "the name, in full", ""),
    }
    assert notes["budget"]["status"].values == "\u2022 Open \u2022 Closed"
    assert notes["odd"]["x"].description == "undefined in cp1252: \x81"
    assert notes["bom"]["x"].description == "with a BOM"
    assert "empty" not in notes and "notes" not in notes
    assert read_descriptions(tmp_path / "nowhere") == {}


def test_bird_data__mini_dev_sample_loads_every_question_with_a_database(mini_dev):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = BirdDataset.from_files(mini_dev, mini_dev.parent / "dev_databases")
    assert len(dataset.items) == 140
    counts = {db: sum(item.db_id == db for item in dataset.items)
              for db in ("student_club", "superhero", "toxicology")}  # fmt: skip
    assert counts == {"student_club": 48, "superhero": 52, "toxicology": 40}
    assert len(caught) == 1 and "skipped 360 of 500 questions" in str(caught[0].message)
    budget = dataset.descriptions("student_club")["budget"]
    assert "\u2022 Closed" in budget["event_status"].values  # the cp1252 file decoded
    assert set(dataset.descriptions("superhero")) >= {"superhero", "hero_power", "colour"}
