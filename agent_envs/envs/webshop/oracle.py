"""The expert and the random baseline: the next action from a page, as the model writes it.

The oracle knows the goal's target product. On the search page it searches the goal's
instruction text when the target is among its 50 results, else the target's title (else the
instruction anyway); on a results page it pages towards the target or clicks it (``Back to
Search`` when the target is not among the results); on another product or a sub-page it goes
``< Prev``; on the target's page it selects the goal's option values one by one (for a list of
values, the product value matching each best, fuzzily as the reward does) and then clicks
``Buy Now``. Pure functions of the page, the goal and the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from agent_envs.envs.webshop import reward
from agent_envs.envs.webshop.catalog import Catalog
from agent_envs.envs.webshop.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    NEXT_PAGE,
    PREV_PAGE,
    PRODUCT_WINDOW,
    Page,
    option_labels,
)
from agent_envs.envs.webshop.parsing import MAX_ARGUMENT_LENGTH
from agent_envs.envs.webshop.render import available_actions
from agent_envs.envs.webshop.text import to_ascii

__all__ = ["oracle_action", "oracle_keywords", "random_action", "wanted_options"]


def _keywords(text: str) -> str:
    return " ".join(to_ascii(text).lower().split())[:MAX_ARGUMENT_LENGTH].strip()


def oracle_keywords(goal: Mapping[str, Any], catalog: Catalog) -> str:
    """What the oracle types into the search box (module docstring)."""
    instruction = _keywords(goal["instruction_text"])
    if goal["asin"] in catalog.search(instruction):
        return instruction
    title = _keywords(str(catalog.product(goal["asin"]).get("Title", "")))
    if title and goal["asin"] in catalog.search(title):
        return title
    return instruction


def wanted_options(
    goal: Mapping[str, Any], product: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """``(option name, value, label)`` the oracle selects on the target's page."""
    groups = option_labels(product)
    choices = [(name, value, label) for name, labels in groups for label, value in labels]
    goal_options = goal.get("goal_options") or []
    wanted: list[tuple[str, str, str]] = []
    if isinstance(goal_options, Mapping):
        pairs = list(goal_options.items())
    else:
        pairs = [("", str(value)) for value in goal_options]
    for name, value in pairs:
        exact = [c for c in choices if c[1] == value and (not name or c[0] == name)]
        if exact:
            best = exact[0]
        else:
            scored = [(reward.fuzzy_ratio(c[1], value), -i, c) for i, c in enumerate(choices)]
            scored = [s for s in scored if s[0] > reward.FUZZY_THRESHOLD]
            if not scored:
                continue
            best = max(scored)[2]
        if all(best[0] != w[0] for w in wanted):
            wanted.append(best)
    return wanted


def oracle_action(page: Page, goal: Mapping[str, Any], catalog: Catalog) -> str | None:
    """The expert's next action from ``page`` (``None`` once the purchase is made)."""
    target = goal["asin"]
    if page.kind == "done":
        return None
    if page.kind == "search":
        return f"search[{oracle_keywords(goal, catalog)}]"
    if page.kind == "results":
        if target not in page.results:
            return f"click[{BACK_TO_SEARCH}]"
        target_page = page.results.index(target) // PRODUCT_WINDOW + 1
        if target_page > page.page:
            return f"click[{NEXT_PAGE}]"
        if target_page < page.page:
            return f"click[{PREV_PAGE}]"
        return f"click[{target}]"
    if page.kind != "item" or page.asin != target:
        return f"click[{PREV_PAGE}]"
    selected = page.selected
    for name, value, label in wanted_options(goal, catalog.product(target)):
        if selected.get(name) != value:
            return f"click[{label}]"
    return f"click[{BUY_NOW}]"


def random_action(
    page: Page, instruction: str, product: Mapping[str, Any] | None, rng: np.random.Generator
) -> str:
    """A uniformly random available action; on the search page, 1-4 words of the
    instruction drawn at random as keywords."""
    if page.kind == "search":
        words = _keywords(instruction).split() or ["shop"]
        count = int(rng.integers(1, min(4, len(words)) + 1))
        picked = sorted(rng.choice(len(words), size=count, replace=False).tolist())
        return f"search[{' '.join(words[i] for i in picked)}]"
    actions = available_actions(page, product)
    if not actions:
        return f"click[{BUY_NOW}]"
    return actions[int(rng.integers(len(actions)))]
