"""WebShop's pages as plain data, what can be clicked on each, and where a click leads.

A :class:`Page` is the whole browsing state: which page is shown, the last search (its
keywords and up to 50 result ASINs), the results page number, the product being viewed and
the options selected on it. Transitions are pure: :func:`after_search` and :func:`after_click`
take a page (and, for clicks, the viewed product) and return the next page, or a reason why
the action is not available.

Page flow (WebShop's ``web_agent_text_env.py``):

=============  ===========================================================================
search         ``search[keywords]`` → results page 1 (the only page with a search box)
results        ``Back to Search``; ``< Prev`` / ``Next >`` between pages of 10 (shown when
               there is a previous / next page); a product id → its item page
item           ``Back to Search``; ``< Prev`` → the results page it came from (selected
               options are dropped); an option value → selects it (one value per option
               name); ``Description`` / ``Features`` / ``Reviews`` → that sub-page;
               ``Buy Now`` → purchase (the episode ends)
sub-pages      ``Back to Search``; ``< Prev`` → the item page (options kept)
done           nothing
=============  ===========================================================================

Click values are matched case-insensitively against the page's buttons first, then product
ids, then option values (the ASCII text the page shows).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

from agent_envs.envs.webshop.text import to_ascii

__all__ = [
    "BACK_TO_SEARCH",
    "BUY_NOW",
    "NEXT_PAGE",
    "PAGE_KINDS",
    "PREV_PAGE",
    "PRODUCT_WINDOW",
    "SUB_PAGES",
    "Clickable",
    "Page",
    "after_click",
    "after_search",
    "clickables",
    "find_clickable",
    "option_labels",
    "page_results",
]

BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BUY_NOW = "Buy Now"
SUB_PAGES: tuple[str, ...] = ("Description", "Features", "Reviews")
PAGE_KINDS: tuple[str, ...] = ("search", "results", "item", "description", "features",
                               "reviews", "done")  # fmt: skip
PRODUCT_WINDOW = 10  # products per results page


@dataclasses.dataclass(frozen=True)
class Page:
    """The browsing state (see the module docstring)."""

    kind: str = "search"
    keywords: str = ""
    results: tuple[str, ...] = ()
    page: int = 1
    asin: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # (option name, value), selection order

    @property
    def selected(self) -> dict[str, str]:
        return dict(self.options)

    @property
    def num_pages(self) -> int:
        return max(1, -(-len(self.results) // PRODUCT_WINDOW))


class Clickable(NamedTuple):
    """One thing a click can hit: ``kind`` is ``"button"``, ``"product"`` or ``"option"``;
    ``label`` the ASCII text shown; ``value`` the button name, ASIN or option value and
    ``group`` the option name (both as in the data)."""

    kind: str
    label: str
    value: str
    group: str = ""


def page_results(page: Page) -> tuple[str, ...]:
    """The ASINs on the current results page."""
    start = (page.page - 1) * PRODUCT_WINDOW
    return page.results[start : start + PRODUCT_WINDOW]


def option_labels(product: Mapping[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """``[(option name, [(label, value), ...]), ...]``: the ASCII labels of a product's option
    values (a value with no ASCII text is shown as ``option <n>``); names as in the data."""
    groups = []
    for name, values in (product.get("options") or {}).items():
        labels = []
        for number, value in enumerate(values, start=1):
            label = to_ascii(str(value)) or f"option {number}"
            labels.append((label, str(value)))
        groups.append((str(name), labels))
    return groups


def _button(name: str) -> Clickable:
    return Clickable("button", name, name)


def clickables(page: Page, product: Mapping[str, Any] | None) -> list[Clickable]:
    """Everything clickable on ``page``, in page order (``product``: the viewed one)."""
    if page.kind == "results":
        items = [_button(BACK_TO_SEARCH)]
        if page.page > 1:
            items.append(_button(PREV_PAGE))
        if page.page * PRODUCT_WINDOW < len(page.results):
            items.append(_button(NEXT_PAGE))
        items += [Clickable("product", asin, asin) for asin in page_results(page)]
        return items
    if page.kind == "item":
        items = [_button(BACK_TO_SEARCH), _button(PREV_PAGE)]
        for name, labels in option_labels(product or {}):
            items += [Clickable("option", label, value, name) for label, value in labels]
        return items + [_button(name) for name in (*SUB_PAGES, BUY_NOW)]
    if page.kind in ("description", "features", "reviews"):
        return [_button(BACK_TO_SEARCH), _button(PREV_PAGE)]
    return []


def find_clickable(items: list[Clickable], value: str) -> Clickable | None:
    """The clickable that ``value`` names (case-insensitive; buttons, products, options)."""
    wanted = " ".join(value.split()).lower()
    for kind in ("button", "product", "option"):
        for item in items:
            if item.kind == kind and item.label.lower() == wanted:
                return item
    return None


def after_search(page: Page, keywords: str, results: tuple[str, ...]) -> Page | str:
    """The results page of a search, or why searching is not possible here."""
    if page.kind != "search":
        return "search is only available on the search page (click Back to Search first)"
    return Page(kind="results", keywords=keywords, results=results, page=1)


def after_click(page: Page, item: Clickable) -> Page:
    """The page a click on ``item`` (from :func:`clickables` of ``page``) leads to."""
    if item.kind == "product":
        return dataclasses.replace(page, kind="item", asin=item.value, options=())
    if item.kind == "option":
        name = item.group
        kept = tuple((k, v) for k, v in page.options if k != name)
        options = (*kept, (name, item.value))
        return dataclasses.replace(page, kind="item", options=options)
    button = item.value
    if button == BACK_TO_SEARCH:
        return Page()
    if button == NEXT_PAGE:
        return dataclasses.replace(page, page=page.page + 1)
    if button == PREV_PAGE:
        if page.kind == "results":
            return dataclasses.replace(page, page=page.page - 1)
        if page.kind == "item":
            return dataclasses.replace(page, kind="results", asin=None, options=())
        return dataclasses.replace(page, kind="item")
    if button in SUB_PAGES:
        return dataclasses.replace(page, kind=button.lower())
    if button == BUY_NOW:
        return dataclasses.replace(page, kind="done")
    raise ValueError(f"unknown button {button!r}")
