"""WebShop's purchase reward, term by term, on hand-built products and goals."""

from __future__ import annotations

import pytest

from agent_envs.envs.webshop import reward

PATH = "Home & Kitchen \u203a Furniture \u203a Living Room Furniture \u203a Tables"
TABLE = {
    "asin": "B000TABLE1",
    "name": "Rustic Console Table with Storage Shelf",
    "Title": "Rustic Console Table with Storage Shelf",
    "Description": "A narrow entryway table in solid wood.",
    "BulletPoints": ["EASY ASSEMBLY: tools included", "Metal frame"],
    "Attributes": ["storage shelf", "living room"],
    "options": {"color": ["espresso", "light gray"], "size": ["small", "large"]},
    "query": "console tables",
    "category": "garden",
    "product_category": PATH,
}
GOAL = {
    "asin": "B000TABLE1",
    "name": "Rustic Console Table with Storage Shelf",
    "query": "console tables",
    "category": "garden",
    "product_category": PATH,
    "instruction_text": "Find me a console table ...",
    "attributes": ["storage shelf", "solid wood"],  # the 2nd only in the description
    "goal_options": {"color": "light gray", "size": "large"},
    "price_upper": 50.0,
}
FULL = {"color": "light gray", "size": "large"}


def test_reward__full_match_is_one():
    total, parts = reward.purchase_reward(TABLE, GOAL, 42.0, FULL)
    assert total == 1.0
    assert parts["r_type"] == 1.0 and parts["r_att"] == 1.0 and parts["r_option"] == 1.0
    assert parts["r_price"] is True
    assert parts["num_attr_matches"] == 2 and parts["num_option_matches"] == 2
    assert (parts["w_att"], parts["w_option"], parts["w_price"]) == (0.4, 0.4, 0.2)


@pytest.mark.parametrize(
    ("price", "selected", "expected"),
    [
        (42.0, {"color": "light gray"}, 4 / 5),  # one option missing
        (42.0, {}, 3 / 5),  # no option selected
        (42.0, {"color": "espresso", "size": "small"}, 3 / 5),  # wrong options
        (50.0, FULL, 1.0),  # the cap is inclusive
        (50.01, FULL, 4 / 5),  # over the price cap
        (99.0, {"size": "large"}, 3 / 5),  # over the cap and one option missing
    ],
)
def test_reward__options_and_price_terms(price, selected, expected):
    total, _ = reward.purchase_reward(TABLE, GOAL, price, selected)
    assert total == pytest.approx(expected)


def test_reward__attribute_matches_fuzzy_then_in_text():
    product = dict(TABLE, Attributes=["shelf for storage"], Description="plain")
    # "storage shelf" vs "shelf for storage": token-set ratio 100 (> 85)
    assert reward.attribute_matches(product, ["storage shelf"]) == 1
    assert reward.attribute_matches(product, ["solid wood"]) == 0
    assert reward.attribute_matches(TABLE, ["solid wood"]) == 1  # in the description
    assert reward.attribute_matches(TABLE, ["easy assembly"]) == 1  # in a bullet, lower-cased
    assert reward.attribute_matches(TABLE, ["waterproof"]) == 0


def test_reward__fuzzy_threshold_is_strictly_above_85():
    assert reward.fuzzy_ratio("Living Room", "living-room") == 100
    assert reward.fuzzy_ratio("gluten free", "gluten free snack") == 100  # token subset
    assert reward.fuzzy_ratio("dairy free", "gluten free") <= 85


@pytest.mark.parametrize(
    ("goal_values", "selected", "expected"),
    [
        (["light blue"], ["navy blue"], 1),  # both normalise to "blue"
        (["x-large"], ["X-Large"], 1),
        # WebShop's fuzzy matching is loose: a token subset scores 100, near strings > 85
        (["large"], ["x-large"], 1),
        (["pack of 2"], ["pack of 12"], 1),
        (["pack of 2"], ["pack of 6"], 1),
        (["small"], ["large"], 0),
        (["16.9 fl oz"], ["33.8 fl oz"], 0),
        (["heather charcoal", "small"], ["charcoal", "small"], 2),
        ([], ["small"], 0),
    ],
)
def test_reward__option_matches_with_color_normalisation(goal_values, selected, expected):
    assert reward.option_matches(goal_values, selected) == expected


def test_reward__list_goal_options_as_in_human_goals():
    goal = dict(GOAL, goal_options=["light gray", "large"])
    assert reward.purchase_reward(TABLE, goal, 42.0, FULL)[0] == 1.0
    goal = dict(GOAL, goal_options=[])
    total, parts = reward.purchase_reward(TABLE, goal, 42.0, {})
    assert total == 1.0 and parts["r_option"] is None and parts["w_option"] == 0.0


@pytest.mark.parametrize(
    ("changes", "r_type"),
    [
        ({}, 1.0),
        # same query, nouns of the goal name half there: still the same type
        ({"name": "Console Table Lamp Base", "product_category": "Other \u203a Things"}, 1.0),
        # other query and category, title overlap 2/6 > 0.2: a match
        ({"name": "Wooden Console Lamp Table", "query": "lamps", "product_category": "A"}, 1.0),
        # other query and category, overlap 1/6 (not > 0.2): 0.5
        ({"name": "Table Lamp Bright", "query": "lamps", "product_category": "A"}, 0.5),
        # overlap 0: type 0
        ({"name": "Garden Hose", "query": "hoses", "product_category": "A"}, 0.0),
    ],
)
def test_reward__type_factor_steps(changes, r_type):
    product = dict(TABLE, **changes)
    parts = reward.type_reward(product, GOAL)
    assert parts["r_type"] == r_type


def test_reward__type_factor_below_a_tenth_is_one_tenth():
    goal = dict(GOAL, name="Alpha Bravo Charlie Delta Echo Foxtrot Golf Hotel India Juliet Kilo")
    product = dict(TABLE, name="Alpha Widget", query="other", product_category="X")
    parts = reward.type_reward(product, goal)
    assert parts["title_score"] == pytest.approx(1 / 11) and parts["r_type"] == 0.1


def test_reward__wrong_type_zeroes_the_reward():
    product = dict(TABLE, name="Garden Hose 50 Feet", query="garden hose", product_category="A")
    total, parts = reward.purchase_reward(product, GOAL, 10.0, FULL)
    assert total == 0.0 and parts["r_type"] == 0.0 and parts["title_score"] == 0.0


def test_reward__goal_name_without_nouns_scores_title_point_two():
    goal = dict(GOAL, name="For The Best")
    assert reward.type_reward(TABLE, goal)["title_score"] == 0.2


@pytest.mark.parametrize(
    ("name", "nouns"),
    [
        (
            "Rustic Console Table with Storage Shelf",
            {"rustic", "console", "table", "storage", "shelf"},
        ),
        ("Women's 2 Pack T-Shirts, X-Large", {"women", "pack", "shirts", "large"}),
        ("The Best Tea for You", {"tea"}),
    ],
)
def test_reward__title_noun_heuristic(name, nouns):
    assert reward.title_nouns(name) == nouns


@pytest.mark.parametrize(
    ("value", "normalised"),
    [
        ("light blue", "blue"),
        ("heather charcoal", "charcoal"),
        ("x-large", "x-large"),
        ("black white", "black"),
    ],
)
def test_reward__normalize_color(value, normalised):
    assert reward.normalize_color(value) == normalised
