"""The WebShop text env: a thin Gymnasium shell over `catalog`, `pages`, `render`, `reward`."""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

import numpy as np

from agent_envs.core.env import ActionResult, TextEnv
from agent_envs.envs.webshop import oracle, pages, prompts, render, reward
from agent_envs.envs.webshop.catalog import Catalog, CatalogSpec, default_cache_dir, load_catalog
from agent_envs.envs.webshop.data import CATALOGS
from agent_envs.envs.webshop.goals import GOAL_KINDS, SPLITS, check_goal
from agent_envs.envs.webshop.parsing import Action, parse_action
from agent_envs.envs.webshop.search import resolve_backend
from agent_envs.envs.webshop.text import to_ascii
from agent_envs.renderers import TextFrame

__all__ = ["SOURCES", "WebShopEnv"]

SOURCES: tuple[str, ...] = ("generated", "webshop")
_FEEDBACK_ROOM = 512
_NOT_CLICKABLE = {
    "search": "the search page has nothing to click; use search[keywords]",
    "results": "no button or product id of this results page has that name",
    "item": "no button or option value of this product page has that name",
    "description": "this page only has Back to Search and < Prev",
    "features": "this page only has Back to Search and < Prev",
    "reviews": "this page only has Back to Search and < Prev",
}


class WebShopEnv(TextEnv):
    """WebShop (Yao et al., 2022) in text: find, configure and buy the product an
    instruction describes, in a simulated shop.

    ## Action
    The model's reply; the last ``<answer>...</answer>`` holds one action:

    | action            | where                 | effect                                      |
    |-------------------|-----------------------|---------------------------------------------|
    | ``search[words]`` | search page           | results page 1 of the (up to 50) best hits   |
    | ``click[value]``  | results, product, sub | a button, a product id or an option value   |

    Buttons: ``Back to Search``, ``< Prev``, ``Next >`` (results), ``Description``,
    ``Features``, ``Reviews``, ``Buy Now`` (product page). Values are case-insensitive. An
    action the page does not offer (or a malformed one) is a no-op with
    ``info["action_valid"] = False`` and a one-line reason before the observation. Page flow:
    :mod:`agent_envs.envs.webshop.pages`; search: :mod:`agent_envs.envs.webshop.search`
    (BM25 over WebShop's indexed text, k1 0.9, b 0.4).

    ## Observation
    The page, in ASCII, in ``observation_mode`` ``"text"`` (WebShop's text mode, ``[SEP]``
    joined) or ``"readable"`` (one element per line, buttons in brackets, selected options
    named); both end with ``Available actions: ...``. See :mod:`agent_envs.envs.webshop.render`.

    ## Starting state
    The search page and a goal drawn uniformly from the ``goals`` (``"synthetic"`` or
    ``"human"``) of ``split`` (``"test"`` = shuffled goals 0-499, ``"validation"`` 500-1499,
    ``"train"`` the rest; :mod:`agent_envs.envs.webshop.goals`). ``reset(options={"item":
    goal})`` poses one goal in WebShop's format (``asin``, ``instruction_text``,
    ``attributes``, ``goal_options`` as a list or an option-name dict, ``price_upper``;
    optional ``name``, ``query``, ``category``, ``product_category``, taken from the target
    product when absent); ``reset(options={"index": i})`` poses goal ``i`` of the split.

    The shop: with no ``data_path``, the built-in generated catalog of ``num_products``
    products (``source="generated"``, the default then, named in the instructions); with a
    ``data_path`` (a WebShop data directory), WebShop's ``catalog`` product set
    (``source="webshop"``, ``"100"``, ``"1k"`` or ``"full"``).

    ## Rewards
    0 per step until ``Buy Now``, then WebShop's purchase reward in [0, 1]
    (:mod:`agent_envs.envs.webshop.reward`): attribute, option and price matches over
    ``len(attributes) + len(goal_options) + 1``, times the product-type factor. A turn with
    no readable answer earns ``format_penalty``; an unavailable action adds
    ``invalid_action_penalty`` (0 by default: WebShop's invalid actions are no-ops).
    Success (``info["success"]``): a purchase with reward 1.

    ## Episode end
    Terminated: ``Buy Now`` clicked. Truncated: ``max_turns`` turns played
    (``info["truncation_reason"] == "max_turns"``).

    ## Information
    The common keys of :data:`agent_envs.core.env.COMMON_INFO_KEYS`, plus ``page`` (str:
    the page kind, one of ``search``, ``results``, ``item``, ``description``, ``features``,
    ``reviews``, ``done``), ``available_actions`` (list of str), ``selected_options`` (dict:
    option name → value on the product page), ``goal_id`` (str: ``"synthetic/test/17"`` or
    ``"item"``), ``target_asin`` (str), ``purchased_asin`` (str or None) and
    ``reward_parts`` (dict or None: ``r_type``, ``r_att``, ``r_option``, ``r_price``, the
    weights, match counts, ``query_match``, ``category_match``, ``title_score``, ``price``).

    ## Arguments
    ``gymnasium.make("grl/WebShop-v0", source=None, data_path=None, catalog=None,
    num_products=None, goals="synthetic", split="train", observation_mode="text",
    search_backend="auto", cache_dir=None, max_turns=15, format_penalty=-0.1,
    invalid_action_penalty=0.0, render_mode=None)``

    ``source=None`` picks ``"webshop"`` when ``data_path`` is given, else ``"generated"``.
    ``catalog`` (default ``"1k"``) applies to WebShop data, ``num_products`` (default 3000)
    to the generated catalog. ``search_backend``: ``"bm25s"``, ``"fts5"`` (SQLite) or
    ``"auto"`` (bm25s when installed). ``cache_dir``: where search indexes (and the full
    set's product store) are kept (default ``~/.cache/agent_envs/webshop``). Needs
    ``pip install "agent-envs[webshop]"`` for the reward (rapidfuzz) and bm25s search.

    ## Version history
    * v0: first release; WebShop's pages, search settings, goals and reward; 15 turns of one
      action each (the GRL/AgentGym budget).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array", "human"],
        "render_fps": 4,
    }
    action_separator: ClassVar[str | None] = None
    observation_max_length: ClassVar[int] = 32_768
    reset_options: ClassVar[tuple[str, ...]] = ("item", "index")
    extra_info_keys: ClassVar[tuple[str, ...]] = (
        "page",
        "available_actions",
        "selected_options",
        "goal_id",
        "target_asin",
        "purchased_asin",
        "reward_parts",
    )

    def __init__(
        self,
        *,
        source: str | None = None,
        data_path: str | os.PathLike[str] | None = None,
        catalog: str | None = None,
        num_products: int | None = None,
        goals: str = "synthetic",
        split: str = "train",
        observation_mode: str = "text",
        search_backend: str = "auto",
        cache_dir: str | os.PathLike[str] | None = None,
        max_turns: int = 15,
        format_penalty: float = -0.1,
        invalid_action_penalty: float = 0.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            max_turns=max_turns,
            max_actions_per_turn=1,
            max_actions_per_episode=None,
            format_penalty=format_penalty,
            invalid_action_penalty=invalid_action_penalty,
            render_mode=render_mode,
        )
        self.source = _check_source(source, data_path, catalog, num_products)
        self.goal_kind = _choice("goals", goals, GOAL_KINDS)
        self.split = _choice("split", split, SPLITS)
        self.observation_mode = _choice(
            "observation_mode", observation_mode, render.OBSERVATION_STYLES
        )
        self.data_path = None if data_path is None else os.fspath(data_path)
        self.catalog_name = (catalog or "1k") if self.source == "webshop" else None
        self.num_products = num_products
        cache = default_cache_dir() if cache_dir is None else os.fspath(cache_dir)
        spec = CatalogSpec(
            source=self.source,
            data_path=None if self.data_path is None else os.path.abspath(self.data_path),
            catalog=self.catalog_name,
            num_products=num_products,
            search_backend=resolve_backend(search_backend),
            cache_dir=str(cache),
            store="sqlite" if self.catalog_name == "full" else "memory",
        )
        self.catalog: Catalog = load_catalog(spec)
        self.goal_list = self.catalog.goals(self.goal_kind, self.split)
        if not self.goal_list:
            raise ValueError(
                f"goals={goals!r}, split={split!r}: this catalog has no such goals "
                f"({self.catalog!r})"
            )
        self._goal: dict[str, Any] = {}
        self._goal_id = ""
        self._instruction = ""
        self._page = pages.Page()
        self._reward: float | None = None
        self._reward_parts: dict[str, Any] | None = None

    # ----------------------------------------------------------------- properties
    @property
    def instructions(self) -> str:
        return prompts.instructions(
            shop=prompts.shop_description(self.source, len(self.catalog), self.catalog_name),
            observation_mode=self.observation_mode,
            max_turns=self.max_turns,
            format_penalty=self.format_penalty,
            invalid_action_penalty=self.invalid_action_penalty,
            answer_format=self.answer_format,
        )

    @property
    def goal(self) -> dict[str, Any]:
        """The current goal in WebShop's format."""
        if not self._goal:
            raise RuntimeError("call reset() before reading the goal")
        return self._goal

    @property
    def page(self) -> pages.Page:
        """The current browsing state (plain data)."""
        return self._page

    def _product(self) -> dict[str, Any] | None:
        return self.catalog.product(self._page.asin) if self._page.asin else None

    # ----------------------------------------------------------------- TextEnv hooks
    def _new_episode(self, options: dict[str, Any]) -> None:
        item = options["item"]
        index = options["index"]
        if item is not None and index is not None:
            raise ValueError("reset options 'item' and 'index' exclude each other")
        if item is not None:
            self._goal, self._goal_id = check_goal(item, self.catalog.products), "item"
        else:
            if index is None:
                index = int(self.np_random.integers(len(self.goal_list)))
            elif (
                isinstance(index, bool)
                or not isinstance(index, (int, np.integer))
                or not (0 <= index < len(self.goal_list))
            ):
                raise ValueError(
                    f"reset option 'index' must be an int in [0, {len(self.goal_list)}), "
                    f"got {index!r}"
                )
            self._goal = self.goal_list[int(index)]
            self._goal_id = f"{self.goal_kind}/{self.split}/{int(index)}"
        self._instruction = to_ascii(self._goal["instruction_text"])
        self._page = pages.Page()
        self._reward = None
        self._reward_parts = None

    def _decode_action(self, text: str) -> Action:
        return parse_action(text)

    def _execute(self, action: Action) -> ActionResult:
        if action.kind == "invalid":
            return ActionResult(0.0, False, False, False, action.argument)
        if action.kind == "search":
            on_search_page = self._page.kind == "search"
            results = self.catalog.search(action.argument) if on_search_page else ()
            found = pages.after_search(self._page, action.argument, results)
            if isinstance(found, str):
                return ActionResult(0.0, False, False, False, found)
            self._page = found
            return ActionResult(0.0, True, True, False)
        item = pages.find_clickable(pages.clickables(self._page, self._product()), action.argument)
        if item is None:
            return ActionResult(0.0, False, False, False, _NOT_CLICKABLE[self._page.kind])
        before = self._page
        self._page = pages.after_click(before, item)
        if self._page.kind != "done":
            return ActionResult(0.0, True, self._page != before, False)
        product = self.catalog.product(before.asin or "")
        price = self.catalog.price(before.asin or "")
        value, parts = reward.purchase_reward(product, self._goal, price, before.selected)
        self._reward, self._reward_parts = value, parts
        return ActionResult(value, True, True, True)

    def _render_text(self) -> str:
        text = render.render(
            self._page,
            self._instruction,
            self.catalog.products,
            style=self.observation_mode,
            reward=self._reward,
        )
        limit = self.observation_max_length - _FEEDBACK_ROOM
        return text if len(text) <= limit else text[: limit - 4] + " ..."

    def _is_success(self) -> bool:
        return self._reward == 1.0

    def _state_bytes(self) -> bytes:
        page = self._page
        state = [self._goal_id, self._goal.get("asin"), self._goal.get("instruction_text"),
                 page.kind, page.keywords, list(page.results), page.page, page.asin,
                 [list(pair) for pair in page.options], self._reward]  # fmt: skip
        return json.dumps(state).encode("utf-8")

    def _extra_info(self) -> dict[str, Any]:
        product = self._product()
        return {
            "page": self._page.kind,
            "available_actions": []
            if self._page.kind == "done"
            else render.available_actions(self._page, product),
            "selected_options": self._page.selected,
            "goal_id": self._goal_id,
            "target_asin": self._goal.get("asin", ""),
            "purchased_asin": self._page.asin if self._page.kind == "done" else None,
            "reward_parts": None if self._reward_parts is None else dict(self._reward_parts),
        }

    # ----------------------------------------------------------------- rendering
    def frame(self) -> TextFrame:
        """The shop as a card: the instruction, the current page in the readable style (its
        clickable actions included) and the purchase reward once bought."""
        page = render.render(
            self._page, self._instruction, self.catalog.products, style="readable",
            reward=self._reward,
        )  # fmt: skip
        page = page.split("\n", 1)[-1] if page.startswith("Instruction:") else page
        if self._reward is not None:
            status = f"Bought; reward {self._reward:.2f}"
        else:
            status = f"Turn {self._turn}/{self.max_turns}  ({self._page.kind} page)"
        return TextFrame("WebShop", (("Instruction", self._instruction), ("Page", page)), status)

    # ----------------------------------------------------------------- expert and baseline
    def oracle_actions(self) -> list[str]:
        """The expert's next action (``[]`` after the purchase); see
        :mod:`agent_envs.envs.webshop.oracle`."""
        action = oracle.oracle_action(self._page, self._goal, self.catalog)
        return [] if action is None else [action]

    def random_actions(self, rng: np.random.Generator) -> list[str]:
        """One uniformly random available action (random instruction words as keywords)."""
        if self._page.kind == "done":
            return ["click[Buy Now]"]
        return [oracle.random_action(self._page, self._instruction, self._product(), rng)]


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return str(value)


def _check_source(
    source: str | None, data_path: object, catalog: str | None, num_products: int | None
) -> str:
    if source is None:
        source = "generated" if data_path is None else "webshop"
    if source not in SOURCES:
        raise ValueError(f"source must be None or one of {SOURCES}, got {source!r}")
    if source == "webshop":
        if data_path is None:
            raise ValueError(
                "data_path (a WebShop data directory) is required with source='webshop'"
            )
        if catalog is not None and catalog not in CATALOGS:
            raise ValueError(f"catalog must be one of {tuple(CATALOGS)}, got {catalog!r}")
        if num_products is not None:
            raise ValueError(
                "num_products applies to the generated catalog; use catalog= for WebShop data"
            )
    else:
        if data_path is not None:
            raise ValueError("data_path is read only with source='webshop' (or source=None)")
        if catalog is not None:
            raise ValueError("catalog applies to WebShop data (source='webshop')")
        if num_products is not None and (
            isinstance(num_products, bool) or not isinstance(num_products, int) or num_products < 1
        ):
            raise ValueError(f"num_products must be a positive int or None, got {num_products!r}")
    return source
