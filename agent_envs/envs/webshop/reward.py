"""WebShop's purchase reward, written from its definition (Yao et al., 2022, section 3.2;
``web_agent_site/engine/goal.py``). Pure functions of the purchased product, the goal, the
price paid and the selected options; fuzzy matching uses ``rapidfuzz``.

    reward = r_type * (attribute matches + option matches + [price <= price_upper])
                    / (len(goal attributes) + len(goal options) + 1)

* **Attributes.** A goal attribute matches when one of the product's ``Attributes`` has a
  token-set ratio above 85 with it, or else when it occurs (lower case) in the product's
  title, joined bullet points or description.
* **Options.** Goal option values (the values of a ``{name: value}`` goal, or the list of a
  human goal) and the selected option values are colour-normalised (:func:`normalize_color`);
  a goal option matches when some selected value has a token-set ratio above 85 with it.
* **Price.** 1 when the price paid is at most ``price_upper``.
* **Type** (``r_type``). ``query_match``: the product's search query equals the goal's;
  ``category_match``: at least two levels of the ``›``-separated ``product_category`` agree;
  ``title_score``: the share of the goal name's nouns found among the product name's nouns
  (0.2 when the goal name has none). ``r_type`` is 1, or 0.5 when none of the three holds
  (title score above 0.2 counts), 0.1 when ``title_score < 0.1`` and 0 when it is 0.

Two documented departures: WebShop tags nouns with spaCy's ``en_core_web_lg``; here
:func:`title_nouns` is a heuristic (every word of two or more letters that is not an English
function word or a number; product names are title-cased, which spaCy mostly tags as proper
nouns, so this is close). Fuzzy ratios are rapidfuzz's ``token_set_ratio`` on
``default_process``-ed text (lower case, punctuation to spaces), as thefuzz computes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gymnasium.error import DependencyNotInstalled

__all__ = [
    "COLORS",
    "FUZZY_THRESHOLD",
    "attribute_matches",
    "normalize_color",
    "option_matches",
    "purchase_reward",
    "title_nouns",
    "type_reward",
]

FUZZY_THRESHOLD = 85  # a ratio strictly above this matches (WebShop's `score > 85`)

#: Base colour words, alphabetical: an option value containing one (as a substring) is
#: reduced to the first it contains, so ``"light blue"`` and ``"navy blue"`` both read
#: ``"blue"`` (WebShop's ``normalize_color`` rule, with this list).
COLORS: tuple[str, ...] = (
    "aqua", "beige", "black", "blue", "blush", "bronze", "brown", "burgundy", "camel",
    "charcoal", "coffee", "copper", "coral", "cream", "gold", "gray", "green", "grey",
    "ivory", "khaki", "lavender", "lilac", "magenta", "maroon", "mint", "multicolor",
    "navy", "nude", "olive", "orange", "peach", "pink", "plum", "purple", "red", "rose",
    "silver", "tan", "taupe", "teal", "turquoise", "violet", "white", "wine", "yellow",
)  # fmt: skip

#: Words that are never nouns of a product name (articles, pronouns, prepositions,
#: conjunctions, auxiliaries, and units-free quantity words).
_FUNCTION_WORDS = frozenset(
    (
        "a", "an", "the", "and", "or", "nor", "but", "so", "yet", "for", "of", "in", "on", "at",
        "by", "to", "from", "with", "without", "into", "onto", "upon", "over", "under", "above",
        "below", "between", "among", "through", "during", "before", "after", "about", "against",
        "across", "along", "around", "behind", "beyond", "near", "off", "out", "up", "down", "per",
        "via", "than", "as", "if", "then", "also", "very", "too", "not", "no", "only", "just",
        "more", "most", "less", "least", "much", "many", "few", "each", "every", "all", "any",
        "both", "either", "neither", "some", "such", "this", "that", "these", "those", "it", "its",
        "it's", "they", "them", "their", "there", "here", "i", "me", "my", "we", "our", "you",
        "your", "he", "him", "his", "she", "her", "who", "whom", "whose", "which", "what", "when",
        "where", "why", "how", "is", "are", "was", "were", "be", "been", "being", "am", "do",
        "does", "did", "has", "have", "had", "will", "would", "can", "could", "shall", "should",
        "may", "might", "must", "new", "best", "great", "good", "top", "fit", "fits", "use", "used",
        "using",
    )
)  # fmt: skip
_WORD = re.compile(r"[a-z][a-z']*[a-z]|[a-z]")


def _fuzz():  # type: ignore[no-untyped-def]
    try:
        from rapidfuzz import fuzz, utils
    except ImportError as error:
        raise DependencyNotInstalled(
            'The WebShop reward needs `rapidfuzz`: pip install "agent-envs[webshop]"'
        ) from error
    return fuzz, utils.default_process


def fuzzy_ratio(a: str, b: str) -> float:
    """thefuzz's ``token_set_ratio`` (0-100) with its default text processing."""
    fuzz, process = _fuzz()
    return float(fuzz.token_set_ratio(a, b, processor=process))


def normalize_color(value: str) -> str:
    """The first of :data:`COLORS` that ``value`` contains, else ``value`` unchanged."""
    for color in COLORS:
        if color in value:
            return color
    return value


def title_nouns(name: str) -> set[str]:
    """The noun heuristic standing in for spaCy (see the module docstring)."""
    return {
        word
        for word in _WORD.findall(name.lower().replace("'s", ""))
        if len(word) >= 2 and word not in _FUNCTION_WORDS
    }


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
    title_score = len(desired & purchased) / len(desired) if desired else 0.2
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


def goal_option_values(goal_options: Mapping[str, str] | Sequence[str]) -> list[str]:
    """A goal's option values: the values of a dict, or the list itself."""
    if isinstance(goal_options, Mapping):
        return [str(value) for value in goal_options.values()]
    return [str(value) for value in goal_options]


def option_matches(goal_values: Sequence[str], selected_values: Sequence[str]) -> int:
    """How many goal option values some selected value matches (colour-normalised, fuzzy)."""
    selected = [normalize_color(value) for value in selected_values]
    count = 0
    for value in goal_values:
        wanted = normalize_color(value)
        if any(fuzzy_ratio(option, wanted) > FUZZY_THRESHOLD for option in selected):
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
    goal_values = goal_option_values(goal.get("goal_options") or [])
    denominator = len(attributes) + len(goal_values) + 1
    type_parts = type_reward(product, goal)
    num_attr = attribute_matches(product, attributes)
    num_option = option_matches(goal_values, [str(v) for v in selected_options.values()])
    r_price = bool(price <= float(goal["price_upper"]))
    total = (num_attr + num_option + int(r_price)) / denominator * type_parts["r_type"]
    parts: dict[str, Any] = {
        "reward": total,
        **type_parts,
        "r_att": num_attr / len(attributes) if attributes else None,
        "r_option": num_option / len(goal_values) if goal_values else None,
        "r_price": r_price,
        "w_att": len(attributes) / denominator,
        "w_option": len(goal_values) / denominator,
        "w_price": 1 / denominator,
        "num_attr_matches": num_attr,
        "num_option_matches": num_option,
        "price": float(price),
    }
    return total, parts
