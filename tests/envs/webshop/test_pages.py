"""Page flow, clickables and action parsing: pure functions on hand-built pages."""

from __future__ import annotations

import dataclasses

import pytest

from agent_envs.envs.webshop import pages
from agent_envs.envs.webshop.pages import Page, after_click, after_search, clickables
from agent_envs.envs.webshop.parsing import Action, parse_action

PRODUCT = {
    "asin": "B0SHIRT001",
    "Title": "Cotton T-Shirt",
    "options": {"size": ["small", "large"], "color": ["black", "Caf\u00e9 Brown"]},
}
RESULTS = tuple(f"B0ITEM{i:04d}" for i in range(23))


def _click(page: Page, value: str, product=PRODUCT) -> Page | None:
    item = pages.find_clickable(clickables(page, product), value)
    return None if item is None else after_click(page, item)


def test_pages__search_leads_to_results_page_one_and_only_from_the_search_page():
    page = after_search(Page(), "t-shirt", RESULTS)
    assert page == Page(kind="results", keywords="t-shirt", results=RESULTS, page=1)
    assert isinstance(after_search(page, "again", RESULTS), str)


@pytest.mark.parametrize(
    ("page_number", "buttons"),
    [
        (1, ["Back to Search", "Next >"]),
        (2, ["Back to Search", "< Prev", "Next >"]),
        (3, ["Back to Search", "< Prev"]),
    ],
)
def test_pages__results_pages_of_ten_with_prev_and_next(page_number, buttons):
    page = Page(kind="results", keywords="x", results=RESULTS, page=page_number)
    items = clickables(page, None)
    assert [i.label for i in items if i.kind == "button"] == buttons
    shown = [i.value for i in items if i.kind == "product"]
    assert shown == list(RESULTS[(page_number - 1) * 10 : page_number * 10])


def test_pages__a_search_with_no_results_offers_only_back_to_search():
    page = after_search(Page(), "zzz", ())
    assert [i.label for i in clickables(page, None)] == ["Back to Search"]
    assert page.num_pages == 1


def test_pages__browse_select_options_and_buy():
    page = Page(kind="results", keywords="shirt", results=RESULTS, page=2)
    page = _click(page, "Next >")
    assert page.page == 3
    page = _click(page, "< prev")  # case-insensitive
    assert page.page == 2
    item = _click(page, "b0item0012")
    assert (item.kind, item.asin, item.options) == ("item", "B0ITEM0012", ())
    item = _click(item, "LARGE")
    item = _click(item, "cafe brown")  # the ASCII label of "Café Brown"
    item = _click(item, "small")  # replaces the size
    assert item.selected == {"color": "Caf\u00e9 Brown", "size": "small"}
    features = _click(item, "Features")
    assert features.kind == "features" and features.options == item.options
    assert _click(features, "< Prev") == item  # sub-page → item page, options kept
    back = _click(item, "< Prev")
    assert (back.kind, back.page, back.asin, back.options) == ("results", 2, None, ())
    assert _click(item, "Buy Now") == dataclasses.replace(item, kind="done")
    assert _click(item, "Back to Search") == Page()


@pytest.mark.parametrize(
    ("page", "value"),
    [
        (Page(), "Back to Search"),  # the search page has nothing to click
        (Page(kind="results", results=RESULTS), "Buy Now"),
        (Page(kind="results", results=RESULTS), "B0ITEM0015"),  # on page 2, not page 1
        (Page(kind="item", asin="B0SHIRT001"), "medium"),
        (Page(kind="description", asin="B0SHIRT001"), "Buy Now"),
        (Page(kind="done", asin="B0SHIRT001"), "Back to Search"),
    ],
)
def test_pages__values_not_on_the_page_are_not_clickable(page, value):
    assert pages.find_clickable(clickables(page, PRODUCT), value) is None


def test_pages__buttons_win_over_option_values_with_the_same_text():
    product = {"options": {"style": ["description", "plain"]}}
    page = Page(kind="item", asin="B0X")
    assert pages.find_clickable(clickables(page, product), "Description").kind == "button"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("search[Red Dress]", Action("search", "red dress")),
        ("  SEARCH [ gluten  free\nsnacks ] ", Action("search", "gluten free snacks")),
        ("search[caf\u00e9 cr\u00e8me]", Action("search", "cafe creme")),
        ("click[Buy Now]", Action("click", "Buy Now")),
        ("Click[< Prev]", Action("click", "< Prev")),
        ("click[size [large]]", Action("click", "size [large]")),
        ("click[]", Action("invalid", "click[...] needs a non-empty argument")),
        ("search[\U0001f916]", Action("invalid", "the search keywords have no ASCII text")),
        ("buy[now]", Action("invalid", "write one action: search[keywords] or click[value]")),
        ("click Buy Now", Action("invalid", "write one action: search[keywords] or click[value]")),
        (
            "search[a] click[b] extra",
            Action("invalid", "write one action: search[keywords] or click[value]"),
        ),
        (
            "search[" + "x" * 501 + "]",
            Action("invalid", "the search argument is over 500 characters"),
        ),
    ],
)
def test_parsing__action_table(text, expected):
    assert parse_action(text) == expected
