"""WebShop's purchase reward as its published code computes it (``get_reward`` and the
functions it calls in ``web_agent_site/engine/goal.py`` and ``normalize.py`` of
princeton-nlp/WebShop, commit 64fa2a5), quirks included. Pure functions of the purchased
product, the goal, the price paid and the selected options.

    reward = r_type * (attribute matches + option matches + [price <= price_upper])
                    / (len(goal attributes) + len(goal options) + 1)

* **Fuzzy ratio** (:func:`fuzzy_ratio`): thefuzz's ``token_set_ratio`` (thefuzz >= 0.20,
  which runs on rapidfuzz): each side is read as ``str(x)``, characters U+0080-U+00FF are
  dropped, rapidfuzz's ``default_process`` lower-cases it and turns every other
  non-alphanumeric character into a space, and the 0-100 score is rounded to an int. A
  score above 85 matches, so the float score must reach 85.5.
* **Attributes.** A goal attribute matches when one of the product's ``Attributes`` matches
  it fuzzily, or else when it occurs (as written) in the lower-cased title, space-joined
  bullet points or description.
* **Options.** The goal's options are the list of a human goal, or the ``(name, value)``
  *pairs* of a synthetic goal's dict (WebShop passes ``dict.items()``). Each side is
  colour-normalised (:func:`normalize_color`) and a goal option matches when some selected
  value matches it fuzzily. A pair that stays a pair is compared as Python prints it, so
  its name counts as words: ``("size", "standard")`` reads ``size standard``.
* **Colours.** :func:`normalize_color` returns the first of WebShop's 102 colour words
  (:data:`COLORS`, alphabetical) that the option contains: for a string, as a substring
  (``"light pink"`` reads ``"light"``, ``"standard"`` reads ``"tan"``); for a pair, equal to
  its name or its value (``("color", "black")`` reads ``"black"``, ``("color", "navy
  blue")`` stays a pair). So a selected ``"peppermint"`` reads ``"mint"``, which the pair
  ``("flavor", "peppermint")`` does not match: WebShop pays less than 1 for it.
* **Price.** 1 when the price paid is at most ``price_upper``.
* **Type** (``r_type``). ``query_match``: the product's search query equals the goal's;
  ``category_match``: at least two levels of the ``›``-separated ``product_category`` agree;
  ``title_score``: how many distinct nouns of the goal name are nouns of the product name,
  divided by the number of the goal name's noun *tokens* (a repeated noun counts each time,
  so the target itself can score below 1); 0.2 when the goal name has none. ``r_type`` is 1,
  or 0.5 when none of the three holds (a title score above 0.2 counts), 0.1 when
  ``title_score < 0.1`` and 0 when it is 0.

One documented departure: WebShop tags nouns with spaCy's ``en_core_web_sm`` (tokens tagged
``NOUN`` or ``PROPN``, lower-cased), a model spaCy publishes outside the package index;
:func:`title_nouns` is a heuristic: the runs of letters and digits (possessive ``'s``
dropped, hyphens splitting words as spaCy does) that hold a letter and are not English
function words. It moves the reward only through ``r_type`` (a target's query always
matches). Measured with spaCy 3.8's ``en_core_web_sm`` (WebShop pins spaCy 3.3) over the
1,834 (goal, purchase) pairs of ``tests/envs/webshop/test_reward_reference.py`` (which holds
every other step equal to a transcription of WebShop's code): the title score differs on
29.5% of pairs, the reward on 0.38% (mean absolute difference 0.0003, at most 0.2), none
of them a purchase of the target.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent_envs.optional import require

__all__ = [
    "COLORS",
    "FUZZY_THRESHOLD",
    "GoalOption",
    "attribute_matches",
    "fuzzy_ratio",
    "goal_option_list",
    "normalize_color",
    "option_matches",
    "purchase_reward",
    "title_nouns",
    "type_reward",
]

FUZZY_THRESHOLD = 85  # the rounded ratio must be strictly above this (WebShop's `score > 85`)

#: A goal option as WebShop scores it: a value (human goals) or a (name, value) pair.
GoalOption = str | tuple[str, str]

#: WebShop's colour words (``COLOR_SET`` of ``normalize.py``), in its (alphabetical) order.
COLORS: tuple[str, ...] = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black",
    "blue", "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel",
    "champagne", "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee",
    "cognac", "copper", "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant",
    "elephant", "espresso", "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray",
    "green", "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender", "lemon",
    "leopard", "light", "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight",
    "mint", "mocha", "multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive",
    "orange", "peach", "pewter", "pink", "plum", "purple", "rainbow", "red", "rose", "royal",
    "rust", "sand", "sapphire", "seashell", "silver", "skull", "slate", "steel", "stone",
    "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise", "violet", "walnut",
    "wheat", "white", "wine", "yellow",
)  # fmt: skip

#: Words that are never nouns of a product name (articles, pronouns, prepositions,
#: conjunctions, auxiliaries, and quantity words).
_FUNCTION_WORDS = frozenset(
    (
        "a", "an", "the", "and", "or", "nor", "but", "so", "yet", "for", "of", "in", "on", "at",
        "by", "to", "from", "with", "without", "into", "onto", "upon", "over", "under", "above",
        "below", "between", "among", "through", "during", "before", "after", "about", "against",
        "across", "along", "around", "behind", "beyond", "near", "off", "out", "up", "down", "per",
        "via", "than", "as", "if", "then", "also", "very", "too", "not", "no", "only", "just",
        "more", "most", "less", "least", "much", "many", "few", "each", "every", "all", "any",
        "both", "either", "neither", "some", "such", "this", "that", "these", "those", "it", "its",
        "they", "them", "their", "there", "here", "i", "me", "my", "we", "our", "you", "your",
        "us", "he", "him", "his", "she", "her", "who", "whom", "whose", "which", "what", "when",
        "where", "why", "how", "is", "are", "was", "were", "be", "been", "being", "am", "do",
        "does", "did", "has", "have", "had", "will", "would", "can", "could", "shall", "should",
        "may", "might", "must",
    )
)  # fmt: skip
_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits
_POSSESSIVE = re.compile("['\u2019]s\\b")
_LATIN1 = {code: None for code in range(0x80, 0x100)}  # what thefuzz's force_ascii drops


def _fuzz():  # type: ignore[no-untyped-def]
    fuzz = require("rapidfuzz.fuzz", "webshop", needed_by="The WebShop reward")
    return fuzz, require("rapidfuzz.utils", "webshop").default_process


def fuzzy_ratio(a: object, b: object) -> int:
    """thefuzz's ``token_set_ratio(a, b)`` (0-100, an int; see the module docstring)."""
    fuzz, process = _fuzz()
    left = process(str(a).translate(_LATIN1))
    right = process(str(b).translate(_LATIN1))
    return round(fuzz.token_set_ratio(left, right))


def normalize_color(option: GoalOption) -> GoalOption:
    """The first of :data:`COLORS` that ``option`` contains (a substring of a string; the
    name or value of a pair), else ``option`` unchanged."""
    return next((color for color in COLORS if color in option), option)


def goal_option_list(goal_options: Mapping[str, str] | Sequence[str]) -> list[GoalOption]:
    """The goal options WebShop scores: a dict's ``(name, value)`` pairs, or the list."""
    if isinstance(goal_options, Mapping):
        return [(str(name), str(value)) for name, value in goal_options.items()]
    return [str(value) for value in goal_options]


def option_matches(goal_options: Sequence[GoalOption], selected_values: Sequence[str]) -> int:
    """How many ``goal_options`` some selected value matches (colour-normalised, fuzzy)."""
    selected = [normalize_color(value) for value in selected_values]
    count = 0
    for option in goal_options:
        wanted = normalize_color(option)
        if any(fuzzy_ratio(value, wanted) > FUZZY_THRESHOLD for value in selected):
            count += 1
    return count


def title_nouns(name: str) -> list[str]:
    """The noun heuristic standing in for spaCy, one entry per occurrence (see the module
    docstring): the lower-cased runs of letters and digits (``'s`` dropped) that hold a
    letter and are not function words."""
    return [
        word
        for word in _WORD.findall(_POSSESSIVE.sub(" ", name.lower()))
        if not word.isdigit() and word not in _FUNCTION_WORDS
    ]


def _categories(path: str) -> set[str]:
    return {level.strip() for level in path.split("\u203a")}


def type_reward(product: Mapping[str, Any], goal: Mapping[str, Any]) -> dict[str, Any]:
    """``r_type`` and its parts: ``query_match``, ``category_match``, ``title_score``."""
    query_match = product.get("query") == goal.get("query")
    shared = _categories(product.get("product_category", "")) & _categories(
        goal.get("product_category", "")
    )
    category_match = len(shared) >= 2
    desired = title_nouns(goal.get("name", ""))
    purchased = title_nouns(product.get("name", product.get("Title", "")))
    title_score = len(set(desired) & set(purchased)) / len(desired) if desired else 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {
        "r_type": r_type,
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def _product_text(product: Mapping[str, Any]) -> tuple[str, str, str]:
    bullets = product.get("BulletPoints") or []
    return (
        str(product.get("Title", "")).lower(),
        " ".join(str(bullet) for bullet in bullets).lower(),
        str(product.get("Description", "")).lower(),
    )


def attribute_matches(product: Mapping[str, Any], attributes: Sequence[str]) -> int:
    """How many goal ``attributes`` the product has (fuzzy, then as text)."""
    product_attributes = [str(a) for a in product.get("Attributes") or []]
    texts = _product_text(product)
    count = 0
    for attribute in attributes:
        fuzzy = any(fuzzy_ratio(p, attribute) > FUZZY_THRESHOLD for p in product_attributes)
        if fuzzy or any(attribute in text for text in texts):
            count += 1
    return count


def purchase_reward(
    product: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    selected_options: Mapping[str, str],
) -> tuple[float, dict[str, Any]]:
    """WebShop's reward for buying ``product`` at ``price`` with ``selected_options``
    (option name → value), and its parts (``r_type``, ``r_att``, ``r_option``, ``r_price``,
    the weights ``w_att``/``w_option``/``w_price``, the match counts and the type parts)."""
    attributes = [str(a) for a in goal.get("attributes") or []]
    options = goal_option_list(goal.get("goal_options") or [])
    denominator = len(attributes) + len(options) + 1
    type_parts = type_reward(product, goal)
    num_attr = attribute_matches(product, attributes)
    num_option = option_matches(options, [str(v) for v in selected_options.values()])
    r_price = bool(price <= float(goal["price_upper"]))
    total = (num_attr + num_option + int(r_price)) / denominator * type_parts["r_type"]
    parts: dict[str, Any] = {
        "reward": total,
        **type_parts,
        "r_att": num_attr / len(attributes) if attributes else None,
        "r_option": num_option / len(options) if options else None,
        "r_price": r_price,
        "w_att": len(attributes) / denominator,
        "w_option": len(options) / denominator,
        "w_price": 1 / denominator,
        "num_attr_matches": num_attr,
        "num_option_matches": num_option,
        "price": float(price),
    }
    return total, parts
