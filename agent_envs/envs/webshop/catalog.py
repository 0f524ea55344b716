"""A shop: products, their prices, goals and the search index, loaded once per process.

:func:`load_catalog` turns a :class:`CatalogSpec` (where the products come from) into a
:class:`Catalog`, cached per process, so every env over the same data shares one. A catalog
pickles as its spec (a worker process loads its own copy, from the disk cache) and
``deepcopy`` returns the same object: cloning an env mid-episode never copies the shop.

Sources: ``"generated"`` (the built-in catalog of :mod:`agent_envs.envs.webshop.generator`)
and ``"webshop"`` (WebShop's files, :mod:`agent_envs.envs.webshop.data`). Products live in
memory, except for the full 1.18M-product set, which is streamed once into an SQLite
product store beside the search index in the cache directory and read back by ASIN.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import tempfile
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from agent_envs.envs.webshop import data, generator, goals, search

__all__ = ["Catalog", "CatalogSpec", "SqliteProducts", "default_cache_dir", "load_catalog"]

_CATALOG_VERSION = 1  # bump when products, prices or goals are built differently


def default_cache_dir() -> Path:
    """``$AGENT_ENVS_CACHE/webshop``, else ``$XDG_CACHE_HOME/agent_envs/webshop``, else
    ``~/.cache/agent_envs/webshop``."""
    if os.environ.get("AGENT_ENVS_CACHE"):
        return Path(os.environ["AGENT_ENVS_CACHE"]) / "webshop"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agent_envs" / "webshop"


class CatalogSpec(NamedTuple):
    """Where a catalog comes from (hashable; what a pickled catalog carries)."""

    source: str  # "generated" | "webshop"
    data_path: str | None = None
    catalog: str | None = None  # "100" | "1k" | "full" (webshop)
    num_products: int | None = None  # generated
    search_backend: str = "bm25s"  # "bm25s" | "fts5" (resolved)
    cache_dir: str | None = None
    store: str = "memory"  # "memory" | "sqlite"


class SqliteProducts(Mapping):
    """Products by ASIN, read from an SQLite file (the full set), with a small LRU cache."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.size = size
        self._connection: sqlite3.Connection | None = None
        self._recent: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            uri = f"file:{self.path}?mode=ro"
            self._connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
        return self._connection

    def __getitem__(self, asin: str) -> dict[str, Any]:
        if asin in self._recent:
            self._recent.move_to_end(asin)
            return self._recent[asin]
        row = self._db().execute("SELECT body FROM products WHERE asin = ?", (asin,)).fetchone()
        if row is None:
            raise KeyError(asin)
        product = json.loads(row[0])
        self._recent[asin] = product
        if len(self._recent) > 256:
            self._recent.popitem(last=False)
        return product

    def __contains__(self, asin: object) -> bool:
        if asin in self._recent:
            return True
        query = "SELECT 1 FROM products WHERE asin = ?"
        return isinstance(asin, str) and self._db().execute(query, (asin,)).fetchone() is not None

    def __iter__(self) -> Iterator[str]:
        rows = self._db().execute("SELECT asin FROM products ORDER BY position")
        return (row[0] for row in rows)

    def __len__(self) -> int:
        return self.size


class Catalog:
    """One shop (see the module docstring). Read-only once built."""

    def __init__(
        self,
        spec: CatalogSpec,
        asins: list[str],
        products: Mapping[str, dict[str, Any]],
        prices: np.ndarray,
        goal_lists: dict[str, list[dict[str, Any]]],
        index: search.BM25Index | search.Fts5Index,
    ) -> None:
        self.spec = spec
        self.asins = asins
        self.position = {asin: i for i, asin in enumerate(asins)}
        self.products = products
        self.prices = prices
        self.goal_lists = goal_lists  # kind -> goals in their shuffled (split) order
        self.index = index
        self._searches: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    def __reduce__(self) -> tuple[Any, tuple[CatalogSpec]]:
        return load_catalog, (self.spec,)

    def __deepcopy__(self, memo: dict[int, Any]) -> Catalog:
        return self

    def __len__(self) -> int:
        return len(self.asins)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{len(v)} {k} goals" for k, v in self.goal_lists.items())
        return f"Catalog({self.spec.source}, {len(self)} products, {sizes})"

    def product(self, asin: str) -> dict[str, Any]:
        return self.products[asin]

    def price(self, asin: str) -> float:
        """The price paid for ``asin`` (WebShop's ``product_prices``)."""
        return float(self.prices[self.position[asin]])

    def search(self, keywords: str) -> tuple[str, ...]:
        """The ASINs of the (up to 50) best products for ``keywords``, best first."""
        if keywords in self._searches:
            self._searches.move_to_end(keywords)
            return self._searches[keywords]
        found = tuple(self.asins[i] for i in self.index.search(keywords))
        self._searches[keywords] = found
        if len(self._searches) > 512:
            self._searches.popitem(last=False)
        return found

    def goals(self, kind: str, split: str) -> list[dict[str, Any]]:
        """The goals of ``kind`` (``"synthetic"``/``"human"``) in ``split``."""
        everything = self.goal_lists[kind]
        start, stop = goals.split_bounds(split, len(everything))
        return everything[start:stop]


# ---------------------------------------------------------------------- loading
def _fingerprint(spec: CatalogSpec, files: data.DataFiles | None) -> str:
    parts: list[Any] = [_CATALOG_VERSION, spec.source, spec.catalog, spec.num_products, spec.store]
    if files is not None:
        for path in (files.products, files.attributes, files.human, files.reviews):
            if path is not None:
                stat = path.stat()
                parts.append([str(path.resolve()), stat.st_size, stat.st_mtime_ns])
    else:
        parts.append(generator.CATALOG_SEED)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def _goal_lists(instructed: list[tuple[int, dict]], prices: np.ndarray) -> dict[str, list]:
    return {
        "synthetic": goals.shuffled(goals.synthetic_goals(instructed, prices)),
        "human": goals.shuffled(goals.human_goals(instructed, prices)),
    }


def _in_memory(spec: CatalogSpec, records: Iterator[tuple[dict, str]], key: str) -> Catalog:
    products: dict[str, dict[str, Any]] = {}
    contents: list[str] = []
    for product, text in records:
        products[product["asin"]] = product
        contents.append(text)
    if not products:
        raise ValueError("the catalog has no products")
    asins = list(products)
    prices = goals.product_prices([products[a].get("pricing") or [] for a in asins])
    instructed = [
        (i, products[a])
        for i, a in enumerate(asins)
        if "instruction_text" in products[a] or "instructions" in products[a]
    ]
    cache = None if spec.cache_dir is None else Path(spec.cache_dir)
    index = search.build_index(contents, backend=spec.search_backend, key=key, cache_dir=cache)
    return Catalog(spec, asins, products, prices, _goal_lists(instructed, prices), index)


def _streamed(spec: CatalogSpec, files: data.DataFiles, key: str) -> Catalog:
    """The SQLite-backed catalog: streamed into ``<cache>/catalog-<key>/`` once."""
    if spec.cache_dir is None:
        raise ValueError("the full WebShop catalog needs a cache directory (cache_dir)")
    folder = Path(spec.cache_dir) / f"catalog-v{_CATALOG_VERSION}-{key}"
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        _stream_into(folder, files)
    with open(meta_path, encoding="utf-8") as file:
        meta = json.load(file)
    asins = meta["asins"]
    prices = np.asarray(meta["prices"], dtype=float)
    products = SqliteProducts(folder / "products.sqlite", len(asins))
    if spec.search_backend == "fts5":
        index = search.Fts5Index.build(_stored_contents(folder))
    else:
        index = search.build_index(
            _stored_contents(folder), backend="bm25s", key=key, cache_dir=Path(spec.cache_dir)
        )
    goal_lists = {kind: meta["goals"][kind] for kind in goals.GOAL_KINDS}
    return Catalog(spec, asins, products, prices, goal_lists, index)


def _stored_contents(folder: Path) -> Iterator[str]:
    connection = sqlite3.connect(f"file:{folder / 'products.sqlite'}?mode=ro", uri=True)
    try:
        for (text,) in connection.execute("SELECT contents FROM products ORDER BY position"):
            yield text
    finally:
        connection.close()


def _stream_into(folder: Path, files: data.DataFiles) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".catalog-", dir=folder.parent))
    connection = sqlite3.connect(staging / "products.sqlite")
    connection.execute(
        "CREATE TABLE products (position INTEGER PRIMARY KEY, asin TEXT UNIQUE, body TEXT,"
        " contents TEXT)"
    )
    asins: list[str] = []
    pricings: list[list[float]] = []
    instructed: list[tuple[int, dict]] = []
    batch = []
    for position, (product, text) in enumerate(data.iter_products(files)):
        asins.append(product["asin"])
        pricings.append(product.get("pricing") or [])
        if "instruction_text" in product or "instructions" in product:
            instructed.append((position, product))
        batch.append((position, product["asin"], json.dumps(product), text))
        if len(batch) >= 10_000:
            connection.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", batch)
            batch = []
    connection.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", batch)
    connection.commit()
    connection.close()
    if not asins:
        raise ValueError(f"{files.products} holds no products")
    prices = goals.product_prices(pricings)
    meta = {"asins": asins, "prices": prices.tolist(), "goals": _goal_lists(instructed, prices)}
    (staging / "meta.json").write_text(json.dumps(meta))
    os.replace(staging, folder)


@functools.lru_cache(maxsize=4)
def load_catalog(spec: CatalogSpec) -> Catalog:
    """The catalog of ``spec``, loaded once per process."""
    if spec.source == "generated":
        num_products = spec.num_products or generator.DEFAULT_NUM_PRODUCTS
        rng = np.random.default_rng([generator.CATALOG_SEED, num_products])
        products = generator.generate_products(rng, num_products)
        records = ((p, data.document_text(p)) for p in products)
        return _in_memory(spec, records, _fingerprint(spec, None))
    if spec.source != "webshop" or spec.data_path is None:
        raise ValueError(f"cannot load catalog {spec}")
    files = data.resolve_files(spec.data_path, spec.catalog or "1k")
    key = _fingerprint(spec, files)
    if spec.store == "sqlite":
        return _streamed(spec, files, key)
    return _in_memory(spec, data.iter_products(files), key)
