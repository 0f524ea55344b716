"""WebShop's data files → products in its processed item format, streamed.

A WebShop data directory (``data_path``) holds some of:

==============================  ===========================================================
``items_shuffle_1000.json``     the 1k product set, raw scraped records (a JSON array)
``items_shuffle.json``          the full set (1.18M products), same format
``items_ins_v2_1000.json``      per ASIN: ``attributes`` and, for some, a synthetic
``items_ins_v2.json``           ``instruction`` with its ``instruction_attributes``
``items_human_ins.json``        per ASIN: human instructions (text, attributes, options)
``reviews.json``                per ASIN: reviews and the average rating (optional)
``documents_1k.jsonl``          pyserini documents (``id``, ``contents``, ``product``) that
``documents_100.jsonl``         WebShop's indexing script writes; also read from
``documents.jsonl``             ``resources_1k/``, ``resources_100/``, ``resources/``
==============================  ===========================================================

Raw records go through the same steps as WebShop's ``load_products``: ASINs that are
``"nan"`` or longer than 10 characters and repeated ASINs are skipped; ``Title`` is the
name, ``Description`` the full description, ``BulletPoints`` the small description;
``pricing`` strings become one price or a ``[low, high]`` range (``Price`` ``"$x"`` or
``"$x to $y"``; none: ``$100.0``); option names and values are lower-cased, values stripped
and ``/`` written `` | ``; ``Attributes`` come from ``items_ins_v2`` (``["DUMMY_ATTR"]``
without); queries are lower-cased. Document files already hold processed products. The
search text of a product is WebShop's: lower-cased title, description, first bullet and
option text (:func:`document_text`).

Files are read as streams (the full set's JSON array included), one product at a time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "CATALOGS",
    "DataFiles",
    "document_text",
    "iter_json_array",
    "iter_products",
    "process_raw_product",
    "resolve_files",
]

#: Product sets of a WebShop data directory, and how many products each keeps.
CATALOGS: dict[str, int | None] = {"100": 100, "1k": 1000, "full": None}
_KEEP = (
    "asin", "name", "Title", "Description", "BulletPoints", "Price", "pricing", "options",
    "Attributes", "category", "query", "product_category", "Rating", "Reviews",
)  # fmt: skip


class DataFiles(NamedTuple):
    """The files one catalog is read from (``None``: not present)."""

    products: Path  # items_shuffle*.json or a documents jsonl
    attributes: Path | None  # items_ins_v2*.json
    human: Path | None  # items_human_ins.json
    reviews: Path | None  # reviews.json
    limit: int | None  # products kept (first N)

    @property
    def is_documents(self) -> bool:
        return self.products.suffix == ".jsonl"


def _first(directory: Path, names: tuple[str, ...]) -> Path | None:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    return None


def resolve_files(data_path: str | os.PathLike[str], catalog: str) -> DataFiles:
    """The files of ``catalog`` (``"100"``, ``"1k"`` or ``"full"``) under ``data_path``."""
    if catalog not in CATALOGS:
        raise ValueError(f"catalog must be one of {tuple(CATALOGS)}, got {catalog!r}")
    directory = Path(data_path)
    if not directory.is_dir():
        raise ValueError(f"data_path must be a WebShop data directory, got {str(directory)!r}")
    small = catalog != "full"
    raw_names = ("items_shuffle_1000.json",) if small else ("items_shuffle.json",)
    doc_names = {
        "100": ("documents_100.jsonl", "resources_100/documents.jsonl", "documents_1k.jsonl",
                "resources_1k/documents.jsonl"),
        "1k": ("documents_1k.jsonl", "resources_1k/documents.jsonl"),
        "full": ("documents.jsonl", "resources/documents.jsonl"),
    }[catalog]  # fmt: skip
    products = _first(directory, raw_names) or _first(directory, doc_names)
    if products is None:
        raise ValueError(
            f"data_path {str(directory)!r} has no product file for catalog={catalog!r} "
            f"(looked for {', '.join(raw_names + doc_names)})"
        )
    attribute_names = ("items_ins_v2_1000.json",) if small else ("items_ins_v2.json",)
    return DataFiles(
        products=products,
        attributes=_first(directory, attribute_names),
        human=_first(directory, ("items_human_ins.json",)),
        reviews=_first(directory, ("reviews.json",)),
        limit=CATALOGS[catalog],
    )


def iter_json_array(path: Path, chunk_size: int = 1 << 20) -> Iterator[Any]:
    """The elements of the JSON array in ``path``, decoded one at a time."""
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as file:
        buffer, position, eof, started = "", 0, False, False
        while True:
            skip = " \t\r\n," if started else " \t\r\n"
            while True:
                while position < len(buffer) and buffer[position] in skip:
                    position += 1
                if position < len(buffer) or eof:
                    break
                more = file.read(chunk_size)
                eof = not more
                buffer, position = buffer[position:] + more, 0
            if position >= len(buffer):
                raise ValueError(f"{path}: the JSON array is not closed")
            if not started:
                if buffer[position] != "[":
                    raise ValueError(f"{path}: expected a JSON array")
                started, position = True, position + 1
                continue
            if buffer[position] == "]":
                return
            try:
                value, end = decoder.raw_decode(buffer, position)
                complete = end < len(buffer) and buffer[end] in " \t\r\n,]"
                if not (complete or eof):  # "12" of "12.5" split across chunks
                    raise ValueError("incomplete")
            except ValueError:
                if eof:
                    raise
                more = file.read(chunk_size)
                eof = not more
                buffer, position = buffer[position:] + more, 0
                continue
            yield value
            position = end


def _parse_pricing(pricing: object) -> tuple[list[float], str]:
    if not pricing or not isinstance(pricing, str):
        return [100.0], "$100.0"
    values = []
    for piece in pricing.split("$")[1:]:
        digits = re.sub(r"[^\d.]", "", piece)
        try:
            values.append(float(Decimal(digits)))
        except InvalidOperation:
            continue
    if not values:
        return [100.0], "$100.0"
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def _options(customization: object) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    if not isinstance(customization, Mapping):
        return options
    for name, contents in customization.items():
        if contents is None:
            continue
        options[str(name).lower()] = [
            str(content["value"]).strip().replace("/", " | ").lower() for content in contents
        ]
    return options


def process_raw_product(
    raw: Mapping[str, Any],
    attributes: Mapping[str, Any],
    human: Mapping[str, Any],
    reviews: Mapping[str, tuple[list, Any]],
) -> dict[str, Any]:
    """One raw ``items_shuffle`` record → WebShop's processed product (module docstring)."""
    asin = str(raw["asin"])
    pricing, price_tag = _parse_pricing(raw.get("pricing"))
    bullets = raw.get("small_description")
    item_reviews, rating = reviews.get(asin, ([], "N.A."))
    product: dict[str, Any] = {
        "asin": asin,
        "name": raw.get("name", ""),
        "Title": raw.get("name", ""),
        "Description": raw.get("full_description", "") or "",
        "BulletPoints": bullets if isinstance(bullets, list) else [bullets or ""],
        "Price": price_tag,
        "pricing": pricing,
        "options": _options(raw.get("customization_options")),
        "Attributes": list(attributes.get(asin, {}).get("attributes") or ["DUMMY_ATTR"]),
        "category": raw.get("category", ""),
        "query": str(raw.get("query", "")).lower().strip(),
        "product_category": raw.get("product_category", "") or "",
        "Rating": rating,
        "Reviews": item_reviews,
    }
    _add_instructions(product, attributes, human)
    return product


def _add_instructions(
    product: dict[str, Any], attributes: Mapping[str, Any], human: Mapping[str, Any]
) -> None:
    entry = attributes.get(product["asin"], {})
    if entry.get("instruction") and entry.get("instruction_attributes"):
        product["instruction_text"] = entry["instruction"]
        product["instruction_attributes"] = list(entry["instruction_attributes"])
    if product["asin"] in human:
        product["instructions"] = human[product["asin"]]


def document_text(product: Mapping[str, Any]) -> str:
    """The text WebShop indexes for a product (``convert_product_file_format.py``)."""
    option_text = ", and ".join(
        f"{name}: {', '.join(values)}" for name, values in product.get("options", {}).items()
    )
    bullets = product.get("BulletPoints") or [""]
    return " ".join(
        [product.get("Title", ""), product.get("Description", ""), bullets[0] or "", option_text]
    ).lower()


def _load_json(path: Path | None) -> Any:
    if path is None:
        return {}
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def _load_reviews(path: Path | None) -> dict[str, tuple[list, Any]]:
    reviews: dict[str, tuple[list, Any]] = {}
    for record in _load_json(path) or []:
        items = []
        for review in record.get("reviews", []):
            items.append(
                {
                    "title": review.get("title", ""),
                    "score": review.get("score", review.get("stars", "")),
                    "body": review.get("body", review.get("review", "")),
                }
            )
        reviews[record["asin"]] = (items, record.get("average_rating", "N.A."))
    return reviews


def iter_products(files: DataFiles) -> Iterator[tuple[dict[str, Any], str]]:
    """``(product, search text)`` for every product of ``files``, in file order."""
    attributes = _load_json(files.attributes)
    human = _load_json(files.human)
    seen: set[str] = set()
    if files.is_documents:
        records = _iter_documents(files.products)
    else:
        reviews = _load_reviews(files.reviews)
        records = (
            (process_raw_product(raw, attributes, human, reviews), None)
            for raw in iter_json_array(files.products)
            if str(raw.get("asin")) != "nan" and len(str(raw.get("asin"))) <= 10
        )
    for product, contents in records:
        if files.limit is not None and len(seen) >= files.limit:
            return
        if product["asin"] in seen:
            continue
        seen.add(product["asin"])
        if files.is_documents:
            _add_instructions(product, attributes, human)
        yield product, contents if contents is not None else document_text(product)


def _iter_documents(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                raw = record["product"]
                product = {key: raw[key] for key in _KEEP if key in raw}
                product.setdefault("name", raw.get("Title", ""))
                product.setdefault("Reviews", [])
                product.setdefault("Rating", "N.A.")
                if "instructions" in raw:
                    product["instructions"] = raw["instructions"]
                yield product, str(record["contents"])
            except (ValueError, KeyError, TypeError) as error:
                raise ValueError(
                    f"{path}, line {number}: not a WebShop document ({error})"
                ) from error
