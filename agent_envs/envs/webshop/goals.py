"""Shopping goals: WebShop's synthetic and human goals, their price caps, and the splits.

A goal is a dict with ``asin`` (the target product), ``instruction_text``, ``attributes``,
``goal_options`` (``{option name: value}`` for synthetic goals, a list of values for human
ones), ``price_upper``, and the target's ``name``, ``query``, ``category`` and
``product_category`` (what the type reward compares).

* **Synthetic goals** (``get_synthetic_goals`` in WebShop's ``goal.py``): every product with
  a synthetic instruction gives one goal per combination of its option values (option names
  sorted); the text is ``"<instruction> with <name>: <value>, and <name>: <value>, and price
  lower than <cap> dollars"``.
* **Human goals** (``get_human_goals``): one per human instruction with at least one
  attribute; the text is the instruction without its final period, plus the price phrase.
* **Price cap**, as WebShop draws it: of the first four multiples of $10 above the product's
  price (10 ... 990), two are drawn without replacement and the larger is the cap; with
  fewer than two, the cap is 1,000,000 and the text has no price phrase. One cap per product
  (synthetic) or per instruction (human), from fixed seeds, so goals are the same everywhere.
* **Product prices** (WebShop's ``generate_product_prices``): the single price, 100 without
  one, or a uniform draw within a ``[low, high]`` range (fixed seed, per product position).
* **Splits**: the goals are shuffled once by a fixed permutation, then ``test`` is goals
  ``[0, 500)``, ``validation`` ``[500, 1500)`` and ``train`` the rest: the convention of
  WebShop's baselines. A catalog with fewer goals has a shorter (or empty) split.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "GOAL_KINDS",
    "NO_PRICE_CAP",
    "SPLITS",
    "check_goal",
    "human_goals",
    "price_cap",
    "product_prices",
    "split_bounds",
    "synthetic_goals",
]

GOAL_KINDS: tuple[str, ...] = ("synthetic", "human")
SPLITS: tuple[str, ...] = ("test", "validation", "train")
PRICE_RANGE: tuple[float, ...] = tuple(10.0 * i for i in range(1, 100))
NO_PRICE_CAP = 1_000_000.0
PRICE_SEED = 233  # product prices within a range
SYNTHETIC_CAP_SEED = 234
HUMAN_CAP_SEED = 235
SHUFFLE_SEED = 233  # WebShop shuffles its goals with random.seed(233)
_SPLIT_STARTS = {"test": (0, 500), "validation": (500, 1500), "train": (1500, None)}


def product_prices(pricings: Sequence[Sequence[float]]) -> np.ndarray:
    """The price paid for each product (module docstring), in catalog order."""
    draws = np.random.default_rng(PRICE_SEED).random(len(pricings))
    prices = np.empty(len(pricings))
    for index, pricing in enumerate(pricings):
        if not pricing:
            prices[index] = 100.0
        elif len(pricing) == 1:
            prices[index] = float(pricing[0])
        else:
            low, high = float(pricing[0]), float(pricing[1])
            prices[index] = low + draws[index] * (high - low)
    return prices


def price_cap(price: float, first: float, second: float) -> float:
    """WebShop's cap from two uniform numbers in [0, 1): the larger of two distinct draws
    among the first four multiples of 10 above ``price``, or :data:`NO_PRICE_CAP`."""
    candidates = [value for value in PRICE_RANGE if value > price][:4]
    if len(candidates) < 2:
        return NO_PRICE_CAP
    i = int(first * len(candidates))
    j = int(second * (len(candidates) - 1))
    if j >= i:
        j += 1
    return candidates[max(i, j)]


def _price_text(cap: float) -> str:
    return f", and price lower than {cap:.2f} dollars" if cap != NO_PRICE_CAP else ""


def _target_fields(product: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "asin": product["asin"],
        "category": product.get("category", ""),
        "query": product.get("query", ""),
        "name": product.get("Title", product.get("name", "")),
        "product_category": product.get("product_category", ""),
    }


def synthetic_goals(
    products: Sequence[tuple[int, Mapping[str, Any]]], prices: np.ndarray
) -> list[dict]:
    """WebShop's synthetic goals of ``(catalog position, product)`` pairs in catalog order
    (before shuffling); ``prices`` holds every product's price."""
    draws = np.random.default_rng(SYNTHETIC_CAP_SEED).random((len(prices), 2))
    goals = []
    for index, product in products:
        text = product.get("instruction_text")
        attributes = product.get("instruction_attributes")
        if not text or not attributes:
            continue
        cap = price_cap(float(prices[index]), *draws[index])
        options = product.get("options") or {}
        names = sorted(options)
        for combination in itertools.product(*(options[name] for name in names)):
            goal_options = dict(zip(names, combination, strict=True))
            option_text = ", and ".join(f"{k}: {v}" for k, v in goal_options.items())
            option_text = f" with {option_text}" if option_text else ""
            goals.append(
                {
                    **_target_fields(product),
                    "instruction_text": f"{text}{option_text}{_price_text(cap)}",
                    "attributes": list(attributes),
                    "price_upper": cap,
                    "goal_options": goal_options,
                }
            )
    return goals


def human_goals(
    products: Sequence[tuple[int, Mapping[str, Any]]], prices: np.ndarray
) -> list[dict]:
    """WebShop's human goals: the human instructions (with attributes) of ``(catalog
    position, product)`` pairs in catalog order, before shuffling."""
    rng = np.random.default_rng(HUMAN_CAP_SEED)
    goals = []
    for index, product in products:
        for entry in product.get("instructions") or []:
            attributes = entry.get("instruction_attributes") or []
            if not attributes:
                continue
            cap = price_cap(float(prices[index]), *rng.random(2))
            goals.append(
                {
                    **_target_fields(product),
                    "instruction_text": str(entry["instruction"]).strip(".") + _price_text(cap),
                    "attributes": list(attributes),
                    "price_upper": cap,
                    "goal_options": list(entry.get("instruction_options") or []),
                }
            )
    return goals


def shuffled(goals: list[dict]) -> list[dict]:
    """The goals in their fixed shuffled order (the order splits are cut from)."""
    order = np.random.default_rng(SHUFFLE_SEED).permutation(len(goals))
    return [goals[i] for i in order]


def split_bounds(split: str, total: int) -> tuple[int, int]:
    """``[start, stop)`` of ``split`` among ``total`` shuffled goals."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    start, stop = _SPLIT_STARTS[split]
    stop = total if stop is None else min(stop, total)
    return min(start, total), stop


def check_goal(item: object, products: Mapping[str, Any]) -> dict[str, Any]:
    """A goal given through ``reset(options={"item": ...})``, validated and completed: the
    optional ``name``/``query``/``category``/``product_category`` default to the target
    product's. ``ValueError`` says what is wrong."""
    if not isinstance(item, Mapping):
        raise ValueError(f"a WebShop goal must be a dict, got {type(item).__name__}")
    missing = [k for k in ("asin", "instruction_text", "attributes", "goal_options",
                           "price_upper") if k not in item]  # fmt: skip
    if missing:
        raise ValueError(f"the goal is missing {missing}")
    asin = item["asin"]
    if not isinstance(asin, str) or asin not in products:
        raise ValueError(f"goal 'asin' must be a product of the catalog, got {asin!r}")
    text = item["instruction_text"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"goal 'instruction_text' must be a non-empty string, got {text!r}")
    attributes = item["attributes"]
    if not isinstance(attributes, (list, tuple)) or not all(isinstance(a, str) for a in attributes):
        raise ValueError(f"goal 'attributes' must be a list of strings, got {attributes!r}")
    options = item["goal_options"]
    values = list(options.values()) if isinstance(options, Mapping) else options
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise ValueError(
            f"goal 'goal_options' must be a list of strings or a dict of strings, got {options!r}"
        )
    cap = item["price_upper"]
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap > 0:
        raise ValueError(f"goal 'price_upper' must be a positive number, got {cap!r}")
    goal = {**_target_fields(products[asin]), **dict(item)}
    for key in ("name", "query", "category", "product_category"):
        if not isinstance(goal[key], str):
            raise ValueError(f"goal {key!r} must be a string, got {goal[key]!r}")
    goal["attributes"] = list(attributes)
    goal["goal_options"] = dict(options) if isinstance(options, Mapping) else list(options)
    goal["price_upper"] = float(cap)
    return goal
