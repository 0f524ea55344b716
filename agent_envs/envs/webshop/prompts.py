"""The text the model reads: the system instructions of a WebShop episode."""

from __future__ import annotations

from agent_envs.core.parsing import AnswerFormat

__all__ = ["instructions", "shop_description"]


def shop_description(source: str, num_products: int, catalog: str | None) -> str:
    """One sentence naming the catalog the episode shops in."""
    if source == "generated":
        return (
            f"The shop is the built-in generated catalog of {num_products} products (no "
            "WebShop data was given)."
        )
    return f"The shop is WebShop's {catalog} product set ({num_products} products)."


def instructions(
    *,
    shop: str,
    observation_mode: str,
    max_turns: int,
    format_penalty: float,
    invalid_action_penalty: float,
    answer_format: AnswerFormat,
) -> str:
    layout = (
        "Each page is one line of its visible texts joined by ' [SEP] '"
        if observation_mode == "text"
        else "Each page is shown one element per line, buttons and product ids in [brackets],"
        " with the selected value of each option spelled out"
    )
    invalid = (
        f"An unavailable or malformed action changes nothing and earns {invalid_action_penalty:g}"
        if invalid_action_penalty
        else "An unavailable or malformed action changes nothing"
    )
    return "\n".join(
        [
            "You are shopping on WebShop, a simulated online store, for the product described "
            "by the instruction at the top of every page. " + shop,
            "",
            "Pages: the search page (a search box), results pages (10 products each: product "
            "id, title, price), a product page (its options, price, rating and the buttons "
            "Description, Features, Reviews and Buy Now) and the Description / Features / "
            "Reviews sub-pages. " + layout + "; the last line lists the available actions.",
            "",
            "Actions (one per turn):",
            "- search[keywords]: search the shop (only on the search page).",
            "- click[value]: click a button (Back to Search, < Prev, Next >, Description, "
            "Features, Reviews, Buy Now), a product id on a results page, or an option value "
            "on a product page to select it. Values are case-insensitive.",
            "",
            "Select the options the instruction asks for, then click Buy Now: the episode ends "
            "with a score between 0 and 1 for how well the purchase matches the instruction "
            "(product type, attributes, options and price cap); 1 is a full match. "
            f"{invalid}; a reply without a readable answer earns {format_penalty:g}. You have "
            f"{max_turns} turns.",
            "",
            answer_format.describe("search[gluten free snacks]"),
        ]
    )
