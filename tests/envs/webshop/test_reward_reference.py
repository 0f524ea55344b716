"""The env's purchase reward against a transcription of WebShop's published reward code.

``webshop_reward`` below re-states ``get_reward`` of princeton-nlp/WebShop
(``web_agent_site/engine/goal.py`` and ``normalize.py``, commit 64fa2a5) function by
function, written for this test and independent of :mod:`agent_envs.envs.webshop.reward`.
thefuzz (>= 0.20) is emulated through rapidfuzz: ``fuzz.token_set_ratio(s1, s2)`` reads each
side as ``str(s)``, deletes code points 128-255 (``force_ascii``), runs ``default_process``
and rounds rapidfuzz's score to an int (checked against thefuzz 0.22.1 itself on 47,737
string pairs, tuples and Latin-1 included: no difference). WebShop's only step the test
cannot run is spaCy's noun tagger (``en_core_web_sm``; spaCy publishes its models outside the
package index): the transcription takes the noun extractor as an argument and the tests pass
the project's heuristic, so every other step is compared exactly. The tagger's own effect is
measured by :func:`main`.

The (goal, purchase) pairs are drawn with a fixed seed from the shared 1k sample: synthetic
goals (an option-name dict) and every human goal (an option list), each bought as the
target with the goal's options, with one option wrong, with no options, over the price cap,
as another product of the same search query and as a random product.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from agent_envs.envs.webshop import WebShopEnv, reward
from agent_envs.envs.webshop.pages import option_labels

from .conftest import DATA, needs_data

rapidfuzz = pytest.importorskip("rapidfuzz")
from rapidfuzz import fuzz as _rf_fuzz  # noqa: E402
from rapidfuzz.utils import default_process as _rf_process  # noqa: E402

PAIR_SEED = 11
SYNTHETIC_GOALS = 300  # goals drawn from the 6,910 synthetic goals; all 13 human goals
KINDS = ("target", "one_option_wrong", "no_options", "over_price", "same_query", "random_item")

# ----------------------------------------------------------------- the transcription
# normalize.py: COLOR_SET, verbatim order.
WEBSHOP_COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper",
    "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso",
    "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather",
    "indigo", "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime",
    "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom",
    "mustard", "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum",
    "purple", "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver",
    "skull", "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger",
    "turquoise", "violet", "walnut", "wheat", "white", "wine", "yellow",
)  # fmt: skip


def thefuzz_token_set_ratio(s1: object, s2: object) -> int:
    def full_process(s: object) -> str:
        return _rf_process("".join(ch for ch in str(s) if not 128 <= ord(ch) <= 255))

    if s1 is None or s2 is None:
        return 0
    return round(_rf_fuzz.token_set_ratio(full_process(s1), full_process(s2)))


def webshop_normalize_color(color_string: Any) -> Any:
    for norm_color in WEBSHOP_COLOR_SET:
        if norm_color in color_string:  # a substring of a str; an element of a tuple
            return norm_color
    return color_string


def webshop_type_reward(purchased: Mapping, goal: Mapping, nouns: Callable) -> dict:
    query_match = purchased["query"] == goal["query"]
    purchased_category = [x.strip() for x in purchased["product_category"].split("\u203a")]
    goal_category = [x.strip() for x in goal["product_category"].split("\u203a")]
    category_match = len(set(purchased_category) & set(goal_category)) >= 2
    purchased_type = nouns(purchased["name"])
    desired_type = nouns(goal["name"])
    n_intersect = len(set(purchased_type) & set(desired_type))
    title_score = 0.2 if len(desired_type) == 0 else n_intersect / len(desired_type)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match,
            "title_score": title_score}  # fmt: skip


def webshop_attribute_reward(purchased: Mapping, goal: Mapping) -> tuple[float, int]:
    matches = 0
    for g_attr in goal["attributes"]:
        in_attributes = any(
            thefuzz_token_set_ratio(p, g_attr) > 85 for p in purchased["Attributes"]
        )
        in_text = (
            g_attr in purchased["Title"].lower()
            or g_attr in " ".join(purchased["BulletPoints"]).lower()
            or g_attr in purchased["Description"].lower()
        )
        matches += in_attributes or in_text
    return matches / len(goal["attributes"]), matches


def webshop_option_reward(purchased_options: list, goal_options: list) -> tuple[Any, int]:
    purchased_options = [webshop_normalize_color(o) for o in purchased_options]
    goal_options = [webshop_normalize_color(o) for o in goal_options]
    matches = 0
    for g_option in goal_options:
        for p_option in purchased_options:
            if thefuzz_token_set_ratio(p_option, g_option) > 85:
                matches += 1
                break
    return (matches / len(goal_options) if goal_options else None), matches


def webshop_reward(
    purchased: Mapping, goal: Mapping, price: float, options: Mapping, nouns: Callable
) -> tuple[float, dict]:
    """``get_reward(..., verbose=True)``: the total and WebShop's info dict."""
    type_dict = webshop_type_reward(purchased, goal, nouns)
    r_price = (price <= goal["price_upper"]) if goal["price_upper"] > 0 else None
    r_att, num_attr = webshop_attribute_reward(purchased, goal)
    goal_options = goal["goal_options"]
    r_option, num_option = webshop_option_reward(
        list(options.values()),
        list(goal_options.items()) if isinstance(goal_options, dict) else goal_options,
    )
    denominator = len(goal["attributes"]) + len(goal_options) + 1
    total = (num_attr + num_option + r_price) / denominator
    total *= type_dict["r_type"]
    info = {"r_type": type_dict["r_type"], "r_att": r_att,
            "w_att": len(goal["attributes"]) / denominator,
            "query_match": type_dict["query_match"],
            "category_match": type_dict["category_match"],
            "title_score": type_dict["title_score"]}  # fmt: skip
    if r_option is not None:
        info["r_option"] = r_option
        info["w_option"] = len(goal_options) / denominator
    if r_price is not None:
        info["r_price"] = r_price
        info["w_price"] = 1 / denominator
    return total, info


# ----------------------------------------------------------------- the pairs
def _options_for(product: Mapping, wanted: list[str]) -> dict[str, str]:
    """A shopper's picks for a human goal: per option name the value the goal names (as
    written), else the first value."""
    picks = {}
    for name, values in (product.get("options") or {}).items():
        named = [v for v in values if v in wanted]
        if values:
            picks[name] = named[0] if named else values[0]
    return picks


def _first_options(product: Mapping) -> dict[str, str]:
    return {name: values[0] for name, values in (product.get("options") or {}).items() if values}


def purchase_pairs(catalog: Any) -> Iterator[tuple[str, dict, str, float, dict]]:
    """``(kind, goal, purchased asin, price, selected options)``, drawn with
    :data:`PAIR_SEED` (module docstring)."""
    rng = np.random.default_rng(PAIR_SEED)
    synthetic = catalog.goal_lists["synthetic"]
    picked = sorted(rng.choice(len(synthetic), size=SYNTHETIC_GOALS, replace=False).tolist())
    goals = [synthetic[i] for i in picked] + list(catalog.goal_lists["human"])
    by_query: dict[str, list[str]] = {}
    for asin in catalog.asins:
        by_query.setdefault(catalog.product(asin)["query"], []).append(asin)
    for goal in goals:
        target = goal["asin"]
        product = catalog.product(target)
        price = catalog.price(target)
        wanted = goal["goal_options"]
        right = dict(wanted) if isinstance(wanted, dict) else _options_for(product, list(wanted))
        yield "target", goal, target, price, right
        changeable = [n for n, v in right.items() if set(product["options"].get(n, [])) - {v}]
        if changeable:
            name = changeable[int(rng.integers(len(changeable)))]
            others = [v for v in product["options"][name] if v != right[name]]
            wrong = dict(right, **{name: others[int(rng.integers(len(others)))]})
            yield "one_option_wrong", goal, target, price, wrong
        yield "no_options", goal, target, price, {}
        yield "over_price", goal, target, goal["price_upper"] + 0.01, right
        neighbours = [a for a in by_query[product["query"]] if a != target]
        if neighbours:
            other = neighbours[int(rng.integers(len(neighbours)))]
            yield (
                "same_query",
                goal,
                other,
                catalog.price(other),
                _first_options(catalog.product(other)),
            )
        other = catalog.asins[int(rng.integers(len(catalog.asins)))]
        yield (
            "random_item",
            goal,
            other,
            catalog.price(other),
            _first_options(catalog.product(other)),
        )


# ----------------------------------------------------------------- comparison
def _parts_equal(parts: Mapping, info: Mapping) -> bool:
    """The env's parts carry WebShop's info keys; ``r_option``/``w_option`` are None/0 where
    WebShop leaves them out (no goal options)."""
    for key, value in info.items():
        if parts[key] != value or type(parts[key]) is not type(value):
            return False
    return "r_option" in info or (parts["r_option"] is None and parts["w_option"] == 0)


@pytest.fixture(scope="module")
def shop() -> WebShopEnv:
    return WebShopEnv(data_path=str(DATA), split="test")


@pytest.fixture(scope="module")
def pairs(shop: WebShopEnv) -> list[tuple[str, dict, str, float, dict]]:
    return list(purchase_pairs(shop.catalog))


@needs_data
def test_reward_reference__draws_over_a_thousand_pairs_of_every_kind(pairs):
    kinds = [kind for kind, *_ in pairs]
    assert len(pairs) >= 1000
    assert {kind: kinds.count(kind) >= 100 for kind in KINDS} == dict.fromkeys(KINDS, True)
    assert sum(isinstance(goal["goal_options"], list) for _, goal, *_ in pairs) >= 13 * 4


@needs_data
def test_reward_reference__every_pair_equals_webshops_reward_code(shop, pairs):
    mismatches = []
    for kind, goal, asin, price, options in pairs:
        product = shop.catalog.product(asin)
        total, parts = reward.purchase_reward(product, goal, price, options)
        expected, info = webshop_reward(product, goal, price, options, reward.title_nouns)
        if total != expected or not _parts_equal(parts, info):
            mismatches.append((kind, goal["asin"], asin, options, total, expected))
    assert mismatches == []


@needs_data
def test_reward_reference__env_purchases_equal_webshops_reward_code(shop, pairs):
    """The same through the env's actions, for every 30th pair whose product a search for
    its title finds: search, open it, click the options, ``Buy Now`` (over the price cap:
    the goal's cap is set below the price)."""
    checked = []
    for kind, goal, asin, _, options in pairs[::30]:
        product = shop.catalog.product(asin)
        price = shop.catalog.price(asin)
        if kind == "over_price":
            goal = dict(goal, price_upper=price / 2)
        labels = {(name, value): label for name, group in option_labels(product)
                  for label, value in group}  # fmt: skip
        if len({label.lower() for label in labels.values()}) < len(labels):
            continue  # a label shared by two option names: the click picks the first
        shop.reset(options={"item": goal})
        title = " ".join(product["Title"].lower().split()[:12])
        _, _, _, _, info = shop.step(f"<answer>search[{title}]</answer>")
        while f"click[{asin}]" not in info["available_actions"] and (
            "click[Next >]" in info["available_actions"]
        ):
            _, _, _, _, info = shop.step("<answer>click[Next >]</answer>")
        if f"click[{asin}]" not in info["available_actions"]:
            continue
        shop.step(f"<answer>click[{asin}]</answer>")
        for name, value in options.items():
            _, _, _, _, info = shop.step(f"<answer>click[{labels[(name, value)]}]</answer>")
        assert info["selected_options"] == options
        _, total, terminated, _, info = shop.step("<answer>click[Buy Now]</answer>")
        expected, webshop_info = webshop_reward(
            product, shop.goal, price, options, reward.title_nouns
        )
        assert terminated and info["purchased_asin"] == asin
        assert total == expected and _parts_equal(info["reward_parts"], webshop_info)
        checked.append((kind, isinstance(goal["goal_options"], list), total < 1.0))
    assert len(checked) >= 40 and {kind for kind, *_ in checked} == set(KINDS)
    assert {human for _, human, _ in checked} == {True, False}
    assert {below_one for *_, below_one in checked} == {True, False}


# ----------------------------------------------------------------- measurement script
def main() -> None:
    """Print how far a reward module is from WebShop's code over the pairs, per kind of
    purchase: with the project's noun heuristic in the transcription (0 for this package's
    module) and, given ``--nouns``, with spaCy's nouns as WebShop computes them.

    ``python -m tests.envs.webshop.test_reward_reference [--reward FILE] [--nouns NOUNS]``:
    ``FILE`` is a reward module to load instead of this package's (an older version, say);
    ``NOUNS`` a JSON file mapping each product name to its lower-cased ``NOUN``/``PROPN``
    tokens, or the name of an importable spaCy pipeline package (``en_core_web_sm``)."""
    import argparse
    import importlib.util

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--reward", default=None)
    parser.add_argument("--nouns", default=None)
    args = parser.parse_args()
    module: Any = reward
    if args.reward is not None:
        spec = importlib.util.spec_from_file_location("reward_under_test", args.reward)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    extractors: dict[str, Callable] = {"heuristic": reward.title_nouns}
    if args.nouns is not None and args.nouns.endswith(".json"):
        with open(args.nouns, encoding="utf-8") as file:
            extractors["spacy"] = json.load(file).__getitem__
    elif args.nouns is not None:
        nlp = importlib.import_module(args.nouns).load()
        extractors["spacy"] = lambda name: [
            t.text.lower() for t in nlp(name) if t.pos_ in ("PNOUN", "NOUN", "PROPN")
        ]
    shop = WebShopEnv(data_path=str(DATA), split="test")
    pairs = list(purchase_pairs(shop.catalog))
    for label, extractor in extractors.items():
        for kind in (*KINDS, "all"):
            chosen = [p for p in pairs if kind in ("all", p[0])]
            deltas, title_differs = [], []
            for _, goal, asin, price, options in chosen:
                product = shop.catalog.product(asin)
                total, parts = module.purchase_reward(product, goal, price, options)
                expected, info = webshop_reward(product, goal, price, options, extractor)
                deltas.append(abs(total - expected))
                title_differs.append(parts["title_score"] != info["title_score"])
            delta = np.array(deltas)
            print(
                f"{label:9s} {kind:16s} pairs {len(chosen):5d}  reward differs "
                f"{np.mean(delta > 0):7.2%}  mean |dreward| {delta.mean():.4f}  max "
                f"{delta.max():.3f}  title_score differs {np.mean(title_differs):7.2%}"
            )


if __name__ == "__main__":
    main()
