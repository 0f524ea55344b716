"""WebShop's files: streaming, record processing, goals, splits, the SQLite product store."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agent_envs.envs.webshop import data, goals
from agent_envs.envs.webshop.catalog import CatalogSpec, load_catalog

from .conftest import DATA, needs_data

RAW = {
    "asin": "B0RAW00001",
    "name": "Shredded Wheat Cereal",
    "full_description": "Whole grain.",
    "small_description": "High fiber",
    "pricing": "$4.50 - $9.99",
    "customization_options": {
        "Size": [{"value": " Pack of 2 "}, {"value": "Family/Large"}],
        "Color": None,
    },
    "product_category": "Grocery \u203a Cereal",
    "category": "grocery",
    "query": " Breakfast Cereal ",
    "images": ["x.jpg"],
}


def test_data__iter_json_array_streams_in_small_chunks(tmp_path):
    records = [{"a": "[not] a {bracket}", "b": [1, 2, {"c": "]"}]}, [], "text", 12.5, None]
    path = tmp_path / "items.json"
    path.write_text(" \n" + json.dumps(records, indent=1))
    assert list(data.iter_json_array(path, chunk_size=7)) == records
    for chunk_size in (1, 3, 1 << 20):
        assert list(data.iter_json_array(path, chunk_size=chunk_size)) == records
    path.write_text("{}")
    with pytest.raises(ValueError, match="JSON array"):
        list(data.iter_json_array(path))
    path.write_text("[1, 2")
    with pytest.raises(ValueError, match="not closed"):
        list(data.iter_json_array(path))


def test_data__raw_record_processed_as_webshop_load_products():
    product = data.process_raw_product(RAW, {}, {}, {})
    assert product["Title"] == product["name"] == "Shredded Wheat Cereal"
    assert product["Description"] == "Whole grain." and product["BulletPoints"] == ["High fiber"]
    assert product["pricing"] == [4.5, 9.99] and product["Price"] == "$4.5 to $9.99"
    assert product["options"] == {"size": ["pack of 2", "family | large"]}
    assert product["Attributes"] == ["DUMMY_ATTR"] and product["query"] == "breakfast cereal"
    assert "instruction_text" not in product
    assert data.document_text(product) == (
        "shredded wheat cereal whole grain. high fiber size: pack of 2, family | large"
    )


@pytest.mark.parametrize(
    ("pricing", "values", "tag"),
    [("$12.99", [12.99], "$12.99"), ("", [100.0], "$100.0"), (None, [100.0], "$100.0"),
     ("$1,299.00", [1299.0], "$1299.0"), ("$3.00 - $4.00 - $5.00", [3.0, 4.0], "$3.0 to $4.0")],
)  # fmt: skip
def test_data__pricing_strings(pricing, values, tag):
    product = data.process_raw_product(dict(RAW, pricing=pricing), {}, {}, {})
    assert (product["pricing"], product["Price"]) == (values, tag)


def _write_raw_directory(path, count=4):
    names = ["Cereal Alpha", "Cereal Bravo", "Cereal Charlie", "Cereal Delta"]
    raws = [dict(RAW, asin=f"B0RAW0000{i}", name=names[i]) for i in range(count)]
    raws.append(dict(RAW, asin="nan"))  # skipped as in WebShop
    raws.append(dict(RAW, asin="B0RAW00000"))  # a repeat: skipped
    (path / "items_shuffle_1000.json").write_text(json.dumps(raws))
    attributes = {
        "B0RAW00000": {"attributes": ["high fiber", "whole grain"], "instruction": "Find me "
                       "high fiber breakfast cereal", "instruction_attributes": ["high fiber"]},
        "B0RAW00001": {"attributes": ["whole grain"]},
    }  # fmt: skip
    (path / "items_ins_v2_1000.json").write_text(json.dumps(attributes))
    human = {
        "B0RAW00002": [
            {"instruction": "i want cereal with fiber.", "instruction_attributes": ["high fiber"],
             "instruction_options": ["pack of 2"]},
            {"instruction": "no attributes", "instruction_attributes": [],
             "instruction_options": []},
        ]
    }  # fmt: skip
    (path / "items_human_ins.json").write_text(json.dumps(human))


def test_data__raw_directory_gives_products_goals_and_search(tmp_path):
    _write_raw_directory(tmp_path)
    catalog = load_catalog(CatalogSpec("webshop", str(tmp_path), "1k", cache_dir=str(tmp_path)))
    assert catalog.asins == [f"B0RAW0000{i}" for i in range(4)]
    assert catalog.product("B0RAW00000")["Attributes"] == ["high fiber", "whole grain"]
    synthetic = catalog.goal_lists["synthetic"]
    assert len(synthetic) == 2  # one per size value
    assert {g["goal_options"]["size"] for g in synthetic} == {"pack of 2", "family | large"}
    [human] = catalog.goal_lists["human"]
    assert human["goal_options"] == ["pack of 2"] and human["asin"] == "B0RAW00002"
    assert human["instruction_text"].startswith("i want cereal with fiber, and price lower than")
    assert catalog.search("charlie cereal")[0] == "B0RAW00002"


def test_data__resolve_files_errors(tmp_path):
    with pytest.raises(ValueError, match="catalog must be one of"):
        data.resolve_files(tmp_path, "10k")
    with pytest.raises(ValueError, match="WebShop data directory"):
        data.resolve_files(tmp_path / "missing", "1k")
    with pytest.raises(ValueError, match="no product file"):
        data.resolve_files(tmp_path, "full")


@pytest.mark.parametrize(
    ("price", "draws", "cap"),
    [
        (12.0, (0.0, 0.0), 30.0),  # candidates 20, 30, 40, 50: draws 20 and 30
        (12.0, (0.99, 0.99), 50.0),  # draws 50 and 40
        (12.0, (0.5, 0.1), 40.0),  # draws 40 and 20
        (975.0, (0.3, 0.7), 990.0),  # only 980 and 990 above
        (985.0, (0.3, 0.7), goals.NO_PRICE_CAP),  # one candidate: no cap
        (0.5, (0.0, 0.0), 20.0),
    ],
)
def test_goals__price_cap_as_webshop_draws_it(price, draws, cap):
    assert goals.price_cap(price, *draws) == cap


def test_goals__synthetic_goals_enumerate_option_combinations():
    product = {
        "asin": "B0X", "Title": "Tee", "query": "tees", "category": "fashion",
        "product_category": "A", "instruction_text": "Find me cotton tees",
        "instruction_attributes": ["cotton"],
        "options": {"size": ["s", "m"], "color": ["red", "blue"]},
    }  # fmt: skip
    made = goals.synthetic_goals([(0, product)], np.array([15.0]))
    assert len(made) == 4
    assert made[0]["goal_options"] == {"color": "red", "size": "s"}
    cap = made[0]["price_upper"]
    assert made[0]["instruction_text"] == (
        f"Find me cotton tees with color: red, and size: s, and price lower than {cap:.2f} dollars"
    )
    assert {g["price_upper"] for g in made} == {cap}  # one cap per product
    assert (
        goals.synthetic_goals([(0, dict(product, options={}))], np.array([995.0]))[0][
            "instruction_text"
        ]
        == "Find me cotton tees"
    )


@pytest.mark.parametrize(
    ("split", "total", "bounds"),
    [("test", 6910, (0, 500)), ("validation", 6910, (500, 1500)), ("train", 6910, (1500, 6910)),
     ("test", 13, (0, 13)), ("validation", 13, (13, 13)), ("train", 700, (700, 700))],
)  # fmt: skip
def test_goals__split_bounds(split, total, bounds):
    assert goals.split_bounds(split, total) == bounds


def test_goals__product_prices_single_default_and_range():
    prices = goals.product_prices([[5.0], [], [10.0, 20.0]])
    assert prices[0] == 5.0 and prices[1] == 100.0 and 10.0 <= prices[2] <= 20.0
    assert goals.product_prices([[5.0], [], [10.0, 20.0]])[2] == prices[2]


@needs_data
def test_data__official_1k_set_reproduces_webshop_counts():
    catalog = load_catalog(CatalogSpec("webshop", str(DATA), "1k", cache_dir=None))
    assert len(catalog) == 1000
    assert len(catalog.goal_lists["synthetic"]) == 6910  # WebShop: "Loaded 6910 goals."
    assert len(catalog.goal_lists["human"]) == 13  # instructions kept in documents_1k.jsonl
    assert [len(catalog.goals("synthetic", s)) for s in goals.SPLITS] == [500, 1000, 5410]
    with open(DATA / "documents_1k.jsonl", encoding="utf-8") as file:
        first = json.loads(file.readline())
    assert data.document_text(catalog.product(first["id"])) == first["contents"]


@needs_data
def test_data__sqlite_store_matches_the_in_memory_catalog(tmp_path):
    memory = load_catalog(CatalogSpec("webshop", str(DATA), "100", cache_dir=None))
    spec = CatalogSpec("webshop", str(DATA), "100", cache_dir=str(tmp_path), store="sqlite")
    stored = load_catalog(spec)
    assert len(stored) == len(memory) == 100
    asin = memory.asins[42]
    assert stored.product(asin) == memory.product(asin) and asin in stored.products
    assert list(stored.products)[:3] == memory.asins[:3]
    assert stored.goal_lists == memory.goal_lists
    assert np.array_equal(stored.prices, memory.prices)
    for query in ("console table", "womens dress black", "gluten free snacks"):
        assert stored.search(query) == memory.search(query)
