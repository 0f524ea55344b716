"""Golden observations of every page in both styles, and ASCII transliteration."""

from __future__ import annotations

import pytest

from agent_envs.envs.webshop.pages import Page
from agent_envs.envs.webshop.render import render
from agent_envs.envs.webshop.text import clip, to_ascii

PRODUCTS = {
    "B0SHIRT001": {
        "asin": "B0SHIRT001",
        "Title": "Cotton T\u2011Shirt \u3010Soft\u3011",
        "Price": "$12.5 to $15.0",
        "Rating": "N.A.",
        "Description": "Soft  cotton\nshirt \u2013 100%",
        "BulletPoints": ["Machine wash", "Crew neck"],
        "Reviews": [{"title": "Nice", "score": 5, "body": "Fits well."}],
        "options": {"size": ["small", "large"], "color": ["black", "Caf\u00e9 Brown"]},
    },
    "B0MUG00002": {
        "asin": "B0MUG00002",
        "Title": "Mug",
        "Price": "$8.0",
        "Rating": 4.5,
        "Description": "",
        "BulletPoints": [],
        "Reviews": [],
        "options": {},
    },
}
GOAL = "find me a cotton t-shirt"
TWO = ("B0SHIRT001", "B0MUG00002")
ITEM = Page(kind="item", results=TWO, asin="B0SHIRT001", options=(("size", "large"),))
BACK = "Available actions: click[Back to Search], click[< Prev]"
OPTION_ACTIONS = (
    "Available actions: click[Back to Search], click[< Prev], click[small], click[large], "
    "click[black], click[Cafe Brown], click[Description], click[Features], click[Reviews], "
    "click[Buy Now]"
)
CASES = [
    (
        Page(),
        "WebShop [SEP] Instruction: [SEP] find me a cotton t-shirt [SEP] Search\n"
        "Available actions: search[<keywords>]",
        "WebShop: search page\nInstruction: find me a cotton t-shirt\n"
        "Type keywords into the search box: search[<keywords>]\n"
        "Available actions: search[<keywords>]",
    ),
    (
        Page(kind="results", keywords="cotton shirt", results=TWO),
        "Instruction: [SEP] find me a cotton t-shirt [SEP] Back to Search [SEP] Page 1 (Total "
        "results: 2) [SEP] B0SHIRT001 [SEP] Cotton T-Shirt (Soft) [SEP] $12.5 to $15.0 [SEP] "
        "B0MUG00002 [SEP] Mug [SEP] $8.0\n"
        "Available actions: click[Back to Search], click[B0SHIRT001], click[B0MUG00002]",
        "Instruction: find me a cotton t-shirt\n"
        'Results for "cotton shirt": page 1 of 1 (2 results)\n'
        "[Back to Search]\n"
        "1. [B0SHIRT001] Cotton T-Shirt (Soft) - $12.5 to $15.0\n"
        "2. [B0MUG00002] Mug - $8.0\n"
        "Available actions: click[Back to Search], click[B0SHIRT001], click[B0MUG00002]",
    ),
    (
        ITEM,
        "Instruction: [SEP] find me a cotton t-shirt [SEP] Back to Search [SEP] < Prev [SEP] "
        "size [SEP] small [SEP] large [SEP] color [SEP] black [SEP] Cafe Brown [SEP] Cotton "
        "T-Shirt (Soft) [SEP] Price: $12.5 to $15.0 [SEP] Rating: N.A. [SEP] Description [SEP] "
        "Features [SEP] Reviews [SEP] Buy Now\n" + OPTION_ACTIONS,
        "Instruction: find me a cotton t-shirt\n[Back to Search] [< Prev]\n"
        "Product [B0SHIRT001]: Cotton T-Shirt (Soft)\n"
        "Price: $12.5 to $15.0 | Rating: N.A.\n"
        "size (selected: large): [small] [large]\n"
        "color (selected: none): [black] [Cafe Brown]\n"
        "[Description] [Features] [Reviews] [Buy Now]\n" + OPTION_ACTIONS,
    ),
    (
        Page(kind="description", asin="B0SHIRT001"),
        "Instruction: [SEP] find me a cotton t-shirt [SEP] Back to Search [SEP] < Prev [SEP] "
        "Soft cotton shirt - 100%\n" + BACK,
        "Instruction: find me a cotton t-shirt\n[Back to Search] [< Prev]\n"
        "Description of [B0SHIRT001]: Soft cotton shirt - 100%\n" + BACK,
    ),
    (
        Page(kind="features", asin="B0SHIRT001"),
        "Instruction: [SEP] find me a cotton t-shirt [SEP] Back to Search [SEP] < Prev [SEP] "
        "Machine wash [SEP] Crew neck\n" + BACK,
        "Instruction: find me a cotton t-shirt\n[Back to Search] [< Prev]\n"
        "Features of [B0SHIRT001]:\n- Machine wash\n- Crew neck\n" + BACK,
    ),
    (
        Page(kind="reviews", asin="B0SHIRT001"),
        "Instruction: [SEP] find me a cotton t-shirt [SEP] Back to Search [SEP] < Prev [SEP] "
        '"Nice" [SEP] 5 [SEP] Fits well.\n' + BACK,
        "Instruction: find me a cotton t-shirt\n[Back to Search] [< Prev]\n"
        'Reviews of [B0SHIRT001]:\n- "Nice" (5/5): Fits well.\n' + BACK,
    ),
    (
        Page(kind="reviews", asin="B0MUG00002"),
        "Instruction: [SEP] find me a cotton t-shirt [SEP] Back to Search [SEP] < Prev [SEP] "
        "No reviews found\n" + BACK,
        "Instruction: find me a cotton t-shirt\n[Back to Search] [< Prev]\n"
        "Reviews of [B0MUG00002]:\nNo reviews found\n" + BACK,
    ),
    (
        Page(kind="features", asin="B0MUG00002"),
        "Instruction: [SEP] find me a cotton t-shirt [SEP] Back to Search [SEP] < Prev [SEP] "
        "No Features\n" + BACK,
        "Instruction: find me a cotton t-shirt\n[Back to Search] [< Prev]\n"
        "Features of [B0MUG00002]:\nNo Features\n" + BACK,
    ),
    (
        Page(kind="done", asin="B0SHIRT001", options=(("size", "large"),)),
        "Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] 0.75",
        "Thank you for shopping with us!\n"
        "Purchased [B0SHIRT001] Cotton T-Shirt (Soft) (options: size: large)\n"
        "Your score (min 0.0, max 1.0): 0.75",
    ),
]


@pytest.mark.parametrize(("page", "text", "readable"), CASES, ids=[c[0].kind for c in CASES])
def test_render__golden_pages_in_both_styles(page, text, readable):
    assert render(page, GOAL, PRODUCTS, style="text", reward=0.75) == text
    assert render(page, GOAL, PRODUCTS, style="readable", reward=0.75) == readable


def test_render__next_page_button_and_numbering_on_page_two():
    results = tuple(["B0MUG00002"] * 12)
    page = Page(kind="results", keywords="mug", results=results, page=2)
    text = render(page, GOAL, PRODUCTS, style="readable")
    assert "page 2 of 2 (12 results)\n[Back to Search] [< Prev]\n11. [B0MUG00002]" in text


def test_render__long_descriptions_are_clipped():
    products = {"B0LONG0001": dict(PRODUCTS["B0MUG00002"], Description="word " * 2000)}
    text = render(Page(kind="description", asin="B0LONG0001"), GOAL, products, style="text")
    body = text.split(" [SEP] ")[-1].split("\n")[0]
    assert len(body) == 3000 and body.endswith(" ...")


@pytest.mark.parametrize(
    ("raw", "ascii_text"),
    [
        ("\u201cSmart\u201d \u2018quotes\u2019 \u2014 dash", "\"Smart\" 'quotes' - dash"),
        ("\u3010NEW\u3011 caf\u00e9 na\u00efve \u00bd cup", "(NEW) cafe naive 1/2 cup"),
        ("90\u00b0 \u00d7 2 \u2265 5\u2122 \u00ae", "90 deg x 2 >= 5TM (R)"),
        ("\u2764\ufe0f Love \U0001f338 it \u2714", "Love it *"),
        ("tabs\tand\nnew\u00a0lines", "tabs and new lines"),
        ("\uff33\uff49\uff5a\uff45\uff1a L", "Size: L"),
        ("\u4e2d\u6587", ""),
    ],
)
def test_text__to_ascii_transliterates_product_text(raw, ascii_text):
    assert to_ascii(raw) == ascii_text


def test_text__clip():
    assert clip("short", 10) == "short"
    assert clip("a long sentence here", 12) == "a long s ..."
