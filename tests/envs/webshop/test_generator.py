"""The built-in catalog: WebShop's item format, seeded, realistic enough to shop in."""

from __future__ import annotations

import numpy as np
import pytest

from agent_envs.envs.webshop import data, generator, reward

KEYS = {"asin", "name", "Title", "Description", "BulletPoints", "Price", "pricing", "options",
        "Attributes", "category", "query", "product_category", "Rating", "Reviews"}  # fmt: skip


def _products(seed: int, count: int = 300) -> list[dict]:
    return generator.generate_products(np.random.default_rng(seed), count)


def test_generator__same_seed_same_catalog_other_seed_other_catalog():
    assert _products(1) == _products(1)
    assert _products(1) != _products(2)


def test_generator__products_in_webshop_item_format():
    products = _products(3)
    assert len({p["asin"] for p in products}) == len(products)
    categories = set()
    for product in products:
        assert set(product) >= KEYS
        assert len(product["asin"]) == 10 and product["asin"].startswith("B0")
        assert product["Title"].isascii() and product["Description"].isascii()
        assert 1 <= len(product["pricing"]) <= 2 and product["Price"].startswith("$")
        assert product["product_category"].count("\u203a") >= 2
        assert all(v == v.lower() for vs in product["options"].values() for v in vs)
        categories.add(product["category"])
        if "instruction_text" in product:
            assert product["instruction_text"].startswith("Find me ")
            assert set(product["instruction_attributes"]) <= set(product["Attributes"])
    assert categories == {"beauty", "electronics", "fashion", "garden", "grocery"}
    share = sum("instruction_text" in p for p in products) / len(products)
    assert 0.4 < share < 0.6


def test_generator__a_product_fully_matches_its_own_instruction():
    product = next(p for p in _products(4) if "instruction_text" in p)
    goal = {
        "name": product["Title"], "query": product["query"],
        "product_category": product["product_category"],
        "attributes": product["instruction_attributes"],
        "goal_options": {k: v[0] for k, v in product["options"].items()},
        "price_upper": 1000.0,
    }  # fmt: skip
    selected = {k: v[0] for k, v in product["options"].items()}
    assert reward.purchase_reward(product, goal, product["pricing"][0], selected)[0] == 1.0
    assert product["query"] in data.document_text(product) or product["Title"]


@pytest.mark.parametrize("count", [0, -1, 2.5, True])
def test_generator__bad_size_is_refused(count):
    with pytest.raises(ValueError, match="num_products"):
        generator.generate_products(np.random.default_rng(0), count)
