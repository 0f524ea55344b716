"""Page → observation text, in two styles (pure functions of the page and the products).

* ``"text"``: WebShop's text mode, the page's visible strings joined by `` [SEP] ``
  (``WebShop [SEP] Instruction: [SEP] <goal> [SEP] Search`` on the search page; results as
  ``Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] <id> [SEP] <title>
  [SEP] <price> ...``; the item page with its option names and values, ``Price:``,
  ``Rating:``, ``Description [SEP] Features [SEP] Reviews [SEP] Buy Now``).
* ``"readable"``: one element per line, buttons and product ids in ``[brackets]``, the
  options of the item page one line per option name with the selected value spelled out.

Both end with a line ``Available actions: ...`` listing exactly the actions the page accepts.
Product text is transliterated to ASCII and long fields are clipped (description 3000
characters, a bullet or review 600, a title 300).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_envs.envs.webshop.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    PREV_PAGE,
    PRODUCT_WINDOW,
    SUB_PAGES,
    Clickable,
    Page,
    clickables,
    option_labels,
    page_results,
)
from agent_envs.envs.webshop.text import clip, to_ascii

__all__ = ["OBSERVATION_STYLES", "available_actions", "render"]

OBSERVATION_STYLES: tuple[str, ...] = ("text", "readable")
SEP = " [SEP] "
_DESCRIPTION_LIMIT = 3000
_ITEM_LIMIT = 600
_TITLE_LIMIT = 300


def available_actions(page: Page, product: Mapping[str, Any] | None) -> list[str]:
    """The actions the page accepts, as the model writes them."""
    if page.kind == "search":
        return ["search[<keywords>]"]
    return [f"click[{item.label}]" for item in clickables(page, product)]


def _title(product: Mapping[str, Any]) -> str:
    return clip(to_ascii(str(product.get("Title", ""))), _TITLE_LIMIT)


def _price(product: Mapping[str, Any]) -> str:
    return to_ascii(str(product.get("Price", "")))


def _bullets(product: Mapping[str, Any]) -> list[str]:
    bullets = [clip(to_ascii(str(b)), _ITEM_LIMIT) for b in product.get("BulletPoints") or []]
    return [b for b in bullets if b]


def _reviews(product: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    reviews = []
    for review in product.get("Reviews") or []:
        if isinstance(review, Mapping):
            reviews.append(
                (
                    clip(to_ascii(str(review.get("title", ""))), _TITLE_LIMIT),
                    to_ascii(str(review.get("score", ""))),
                    clip(to_ascii(str(review.get("body", ""))), _ITEM_LIMIT),
                )
            )
    return reviews


def _description(product: Mapping[str, Any]) -> str:
    return clip(to_ascii(str(product.get("Description", ""))), _DESCRIPTION_LIMIT)


# ---------------------------------------------------------------------- text style
def _text_parts(
    page: Page, instruction: str, products: Mapping[str, Mapping[str, Any]], reward: float | None
) -> list[str]:
    if page.kind == "search":
        return ["WebShop", "Instruction:", instruction, "Search"]
    if page.kind == "done":
        return ["Thank you for shopping with us!", "Your score (min 0.0, max 1.0)",
                _score(reward)]  # fmt: skip
    parts = ["Instruction:", instruction, BACK_TO_SEARCH]
    if page.kind == "results":
        parts.append(f"Page {page.page} (Total results: {len(page.results)})")
        parts += [item.label for item in clickables(page, None)[1:] if item.kind == "button"]
        for asin in page_results(page):
            product = products[asin]
            parts += [asin, _title(product), _price(product)]
        return parts
    product = products[page.asin or ""]
    parts.append(PREV_PAGE)
    if page.kind == "item":
        for name, labels in option_labels(product):
            parts.append(to_ascii(name) or "option")
            parts += [label for label, _ in labels]
        parts += [_title(product), f"Price: {_price(product)}",
                  f"Rating: {to_ascii(str(product.get('Rating', 'N.A.')))}",
                  *SUB_PAGES, BUY_NOW]  # fmt: skip
    elif page.kind == "description":
        parts.append(_description(product) or "No Description")
    elif page.kind == "features":
        parts += _bullets(product) or ["No Features"]
    else:
        reviews = _reviews(product)
        for title, score, body in reviews:
            parts += [f'"{title}"', score, body]
        if not reviews:
            parts.append("No reviews found")
    return parts


def _score(reward: float | None) -> str:
    return f"{0.0 if reward is None else reward:.4g}"


# ---------------------------------------------------------------------- readable style
def _buttons(items: list[Clickable]) -> str:
    return " ".join(f"[{item.label}]" for item in items if item.kind == "button")


def _readable_lines(
    page: Page, instruction: str, products: Mapping[str, Mapping[str, Any]], reward: float | None
) -> list[str]:
    if page.kind == "search":
        return ["WebShop: search page", f"Instruction: {instruction}",
                "Type keywords into the search box: search[<keywords>]"]  # fmt: skip
    if page.kind == "done":
        product = products[page.asin or ""]
        chosen = ", ".join(f"{to_ascii(k)}: {to_ascii(v)}" for k, v in page.options) or "none"
        return ["Thank you for shopping with us!",
                f"Purchased [{page.asin}] {_title(product)} (options: {chosen})",
                f"Your score (min 0.0, max 1.0): {_score(reward)}"]  # fmt: skip
    product = products[page.asin] if page.asin else None
    items = clickables(page, product)
    lines = [f"Instruction: {instruction}"]
    if page.kind == "results":
        lines.append(
            f'Results for "{to_ascii(page.keywords)}": page {page.page} of {page.num_pages}'
            f" ({len(page.results)} results)"
        )
        lines.append(_buttons(items))
        start = (page.page - 1) * PRODUCT_WINDOW
        for number, asin in enumerate(page_results(page), start=start + 1):
            found = products[asin]
            lines.append(f"{number}. [{asin}] {_title(found)} - {_price(found)}")
        return lines
    assert product is not None
    lines.append(_buttons(items[:2]))
    if page.kind == "item":
        lines.append(f"Product [{page.asin}]: {_title(product)}")
        lines.append(f"Price: {_price(product)} | Rating: {to_ascii(str(product.get('Rating')))}")
        selected = page.selected
        for name, labels in option_labels(product):
            chosen = next((label for label, v in labels if selected.get(name) == v), "none")
            values = " ".join(f"[{label}]" for label, _ in labels)
            lines.append(f"{to_ascii(name) or 'option'} (selected: {chosen}): {values}")
        lines.append(_buttons(items[2:]))
    elif page.kind == "description":
        lines.append(f"Description of [{page.asin}]: {_description(product) or 'none'}")
    elif page.kind == "features":
        lines.append(f"Features of [{page.asin}]:")
        lines += [f"- {bullet}" for bullet in _bullets(product)] or ["No Features"]
    else:
        lines.append(f"Reviews of [{page.asin}]:")
        reviews = _reviews(product)
        lines += [f'- "{t}" ({s}/5): {b}' for t, s, b in reviews] or ["No reviews found"]
    return lines


def render(
    page: Page,
    instruction: str,
    products: Mapping[str, Mapping[str, Any]],
    *,
    style: str,
    reward: float | None = None,
) -> str:
    """The observation of ``page`` (``instruction`` already ASCII) in ``style``."""
    if style == "text":
        body = SEP.join(_text_parts(page, instruction, products, reward))
    else:
        body = "\n".join(_readable_lines(page, instruction, products, reward))
    if page.kind == "done":
        return body
    product = products[page.asin] if page.asin else None
    return f"{body}\nAvailable actions: {', '.join(available_actions(page, product))}"
