"""The built-in catalog: realistic products in WebShop's item format, from a seed.

:func:`generate_products` draws ``num_products`` products from the product types of
:mod:`agent_envs.envs.webshop.vocabulary`, each a dict with the keys WebShop's
``load_products`` leaves on a product (``asin``, ``name``, ``Title``, ``Description``,
``BulletPoints``, ``Price``, ``pricing``, ``options``, ``Attributes``, ``category``, ``query``,
``product_category``, ``Rating``, ``Reviews``) plus, for about half of them, a synthetic
instruction as ``items_ins_v2.json`` has it (``instruction_text``,
``instruction_attributes``): ``"Find me sulfate free, paraben free shampoo with tea tree"``.
Everything comes from the ``np.random.Generator`` passed in; the same seed gives the same
catalog in every process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agent_envs.envs.webshop.vocabulary import BRANDS, PRODUCT_TYPES, REVIEW_LINES, ProductType

__all__ = ["CATALOG_SEED", "DEFAULT_NUM_PRODUCTS", "generate_products"]

CATALOG_SEED = 20220701  # the built-in catalog is one fixed catalog per size
DEFAULT_NUM_PRODUCTS = 3000
INSTRUCTION_SHARE = 0.5  # products with a synthetic instruction (WebShop's 1k set: 415/1000)
_ASIN_CHARS = np.array(list("0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"))
_SEPARATOR = " \u203a "  # WebShop's category separator


def _pick(rng: np.random.Generator, values: tuple[Any, ...]) -> Any:
    return values[int(rng.integers(len(values)))]


def _subset(rng: np.random.Generator, values: tuple[Any, ...], low: int, high: int) -> list:
    """Between ``low`` and ``high`` distinct values, kept in their listed order."""
    count = int(rng.integers(low, min(high, len(values)) + 1))
    return [values[i] for i in _distinct(rng, len(values), count)]


def _distinct(rng: np.random.Generator, population: int, count: int) -> list[int]:
    """``count`` distinct indices below ``population``, sorted."""
    return sorted(rng.permutation(population)[:count].tolist())


def _asin(rng: np.random.Generator, taken: set[str]) -> str:
    while True:
        asin = "B0" + "".join(_ASIN_CHARS[rng.integers(0, len(_ASIN_CHARS), 8)].tolist())
        if asin not in taken:
            taken.add(asin)
            return asin


def _price(rng: np.random.Generator, low: float, high: float) -> float:
    return round(float(rng.uniform(low, high)), 0) - 0.01


def _options(rng: np.random.Generator, kind: ProductType) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    for name, values in kind.options:
        if rng.random() < 0.75:
            if name == "size" and len(values) > 4 and rng.random() < 0.6:
                start = int(rng.integers(0, len(values) - 2))
                stop = int(rng.integers(start + 2, len(values) + 1))
                options[name] = list(values[start:stop])
            else:
                options[name] = _subset(rng, values, 2, 6)
    return options


def _title(rng: np.random.Generator, kind: ProductType, brand: str, attributes: list) -> str:
    noun = _pick(rng, kind.nouns)
    descriptor = _pick(rng, kind.descriptors)
    words = [brand, noun] if descriptor.lower() in noun.lower() else [brand, descriptor, noun]
    extra = [text for text, _ in attributes if rng.random() < 0.4]
    title = " ".join(words)
    if extra:
        title += " with " + " and ".join(text.title() for text in extra[:2])
    if rng.random() < 0.3:
        title += f", {_pick(rng, ('1 Count', '2 Pack', 'Set of 2', 'Value Pack'))}"
    return title


def _description(rng: np.random.Generator, kind: ProductType, noun: str, attributes: list) -> str:
    sentences = [f"This {noun.lower()} is made for everyday use and built to last."]
    for text, slot in attributes:
        if slot == "pre":
            sentences.append(f"It is {text}, so you can use it with confidence.")
        elif slot == "with":
            sentences.append(f"Designed with {text} for better results.")
        else:
            sentences.append(f"A great choice for {text}.")
    if rng.random() < 0.5:
        sentences.append("Satisfaction guaranteed: contact us with any question.")
    return " ".join(sentences)


def _bullets(rng: np.random.Generator, kind: ProductType, noun: str, attributes: list) -> list:
    bullets = [f"{text.upper()}: our {noun.lower()} comes {slot_phrase(slot)} {text}."
               for text, slot in attributes]  # fmt: skip
    bullets.append(f"WHAT YOU GET: {noun} and a quick start guide.")
    if rng.random() < 0.5:
        bullets.insert(0, f"PREMIUM {kind.category.upper()} PICK: loved by thousands of buyers.")
    return bullets


def slot_phrase(slot: str) -> str:
    return {"pre": "certified", "with": "with", "for": "ready for"}[slot]


def _reviews(rng: np.random.Generator, noun: str) -> list[dict[str, Any]]:
    reviews = []
    for _ in range(int(rng.integers(0, 4))):
        score, title, body = _pick(rng, REVIEW_LINES)
        reviews.append({"score": score, "title": title, "body": body.format(noun=noun.lower())})
    return reviews


def _instruction(rng: np.random.Generator, kind: ProductType, attributes: list) -> tuple:
    count = int(rng.integers(1, min(3, len(attributes)) + 1))
    chosen = [attributes[i] for i in _distinct(rng, len(attributes), count)]
    before = [text for text, slot in chosen if slot == "pre"]
    after = [(text, slot) for text, slot in chosen if slot != "pre"]
    text = "Find me " + (", ".join(before) + " " if before else "") + kind.query
    if after:
        slot = after[0][1]
        text += f" {slot} " + ", ".join(t for t, _ in after)
    return text, [t for t, _ in chosen]


def _product(rng: np.random.Generator, asin: str) -> dict[str, Any]:
    kind: ProductType = _pick(rng, PRODUCT_TYPES)
    brand = _pick(rng, BRANDS[kind.category])
    pool = kind.attributes
    attributes = [pool[i] for i in _distinct(rng, len(pool), int(rng.integers(2, 6)))]
    title = _title(rng, kind, brand, attributes)
    noun = _pick(rng, kind.nouns)
    low, high = kind.price
    if rng.random() < 0.15:
        first = _price(rng, low, high)
        pricing = [first, round(first + float(rng.uniform(3, 25)), 2)]
        price_tag = f"${pricing[0]} to ${pricing[1]}"
    else:
        pricing = [_price(rng, low, high)]
        price_tag = f"${pricing[0]}"
    description = _description(rng, kind, noun, attributes)
    bullets = _bullets(rng, kind, noun, attributes)
    reviews = _reviews(rng, noun)
    rating = round(sum(r["score"] for r in reviews) / len(reviews), 1) if reviews else "N.A."
    product: dict[str, Any] = {
        "asin": asin,
        "name": title,
        "Title": title,
        "Description": description,
        "BulletPoints": bullets,
        "Price": price_tag,
        "pricing": pricing,
        "options": _options(rng, kind),
        "Attributes": [text for text, _ in attributes],
        "category": kind.category,
        "query": kind.query,
        "product_category": _SEPARATOR.join(kind.path),
        "Rating": rating,
        "Reviews": reviews,
    }
    if rng.random() < INSTRUCTION_SHARE:
        text, instruction_attributes = _instruction(rng, kind, attributes)
        product["instruction_text"] = text
        product["instruction_attributes"] = instruction_attributes
    return product


def generate_products(rng: np.random.Generator, num_products: int) -> list[dict[str, Any]]:
    """``num_products`` products in WebShop's processed item format (module docstring)."""
    if isinstance(num_products, bool) or not isinstance(num_products, int) or num_products < 1:
        raise ValueError(f"num_products must be a positive int, got {num_products!r}")
    taken: set[str] = set()
    return [_product(rng, _asin(rng, taken)) for _ in range(num_products)]
