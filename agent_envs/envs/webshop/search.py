"""Product search: BM25 over the text WebShop indexes, the way its Lucene index scores it.

WebShop indexes one document per product (``search_engine/convert_product_file_format.py``):
the lower-cased title, description, first bullet point and option text
(``"size: small, medium, and color: black"``), searched with pyserini's BM25 (k1 0.9,
b 0.4) and its English analyzer, 50 results per query. Here:

* :func:`tokenize` is the analyzer: lower case, words of two or more word characters, the 33
  Lucene English stop words dropped, Porter stemming (PyStemmer's ``porter``).
* :class:`BM25Index` scores with ``bm25s`` (``method="lucene"``, k1 0.9, b 0.4); the index
  is built once per catalog and cached on disk (:func:`build_index`), then memory-mapped.
* :class:`Fts5Index` is the fallback when ``bm25s``/``PyStemmer`` are not installed: SQLite
  FTS5 with its ``porter`` tokenizer and ``bm25()`` ranking (whose k1 1.2, b 0.75 are fixed),
  rebuilt in memory per process.

Both return at most :data:`SEARCH_RETURN_N` documents with a positive score, best first;
ties go to the earlier document, so results never depend on the process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
import tempfile
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from agent_envs.optional import require

__all__ = [
    "BACKENDS",
    "K1",
    "SEARCH_RETURN_N",
    "STOP_WORDS",
    "B",
    "BM25Index",
    "Fts5Index",
    "bm25s_available",
    "build_index",
    "resolve_backend",
    "tokenize",
]

SEARCH_RETURN_N = 50
K1 = 0.9
B = 0.4
BACKENDS: tuple[str, ...] = ("auto", "bm25s", "fts5")
_INDEX_VERSION = 1  # bump when the tokenizer or the scoring changes (invalidates caches)

#: Lucene's English stop words (EnglishAnalyzer's default set).
STOP_WORDS = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
        "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
        "these", "they", "this", "to", "was", "will", "with",
    )
)  # fmt: skip
_WORDS = re.compile(r"\b\w\w+\b")


def bm25s_available() -> bool:
    """Whether the ``bm25s`` backend can run (``bm25s`` and ``PyStemmer`` importable)."""
    # A probe, not a guard: "auto" falls back to FTS5 without them (resolve_backend).
    try:
        import bm25s  # noqa: F401
        import Stemmer  # noqa: F401
    except ImportError:
        return False
    return True


class _Stemmer:
    """PyStemmer's Porter stemmer, created on first use (it is not picklable)."""

    _stemmer = None

    @classmethod
    def stem(cls, words: list[str]) -> list[str]:
        if cls._stemmer is None:
            import Stemmer

            cls._stemmer = Stemmer.Stemmer("porter")
        return cls._stemmer.stemWords(words)


def tokenize(text: str) -> list[str]:
    """The analyzer: lower-cased words of 2+ characters, stop words out, Porter stems."""
    words = [word for word in _WORDS.findall(text.lower()) if word not in STOP_WORDS]
    return _Stemmer.stem(words) if words else words


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` best positive scores, best first, ties by index."""
    positive = np.flatnonzero(scores > 0)
    if len(positive) > k:
        kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]
        positive = positive[scores[positive] >= kth]
    order = np.lexsort((positive, -scores[positive]))
    return [int(i) for i in positive[order][:k]]


class BM25Index:
    """A ``bm25s`` index over the catalog's documents (positions ``0..n-1``)."""

    backend = "bm25s"

    def __init__(self, retriever: object) -> None:
        self.retriever = retriever
        self.vocab: dict[str, int] = retriever.vocab_dict  # type: ignore[attr-defined]
        self.num_docs = int(retriever.scores["num_docs"])  # type: ignore[attr-defined]

    @classmethod
    def build(cls, documents: Iterable[str]) -> BM25Index:
        import bm25s

        vocab: dict[str, int] = {}
        corpus = []  # compact int arrays: the full 1.18M-product set stays within memory
        for text in documents:
            corpus.append(array("i", [vocab.setdefault(t, len(vocab)) for t in tokenize(text)]))
        if not corpus:
            raise ValueError("cannot index an empty catalog")
        retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        with _quiet():
            retriever.index((corpus, vocab), show_progress=False)
        return cls(retriever)

    def save(self, path: Path) -> None:
        with _quiet():
            self.retriever.save(str(path))  # type: ignore[attr-defined]

    @classmethod
    def load(cls, path: Path) -> BM25Index:
        import bm25s

        with _quiet():
            return cls(bm25s.BM25.load(str(path), mmap=True))

    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        ids = [self.vocab[token] for token in tokenize(keywords) if token in self.vocab]
        if not ids:
            return []
        scores = self.retriever.get_scores_from_ids(ids)  # type: ignore[attr-defined]
        return _top(np.asarray(scores), k)


class Fts5Index:
    """The SQLite FTS5 fallback (in memory; rebuilt per process)."""

    backend = "fts5"

    def __init__(self, connection: sqlite3.Connection, num_docs: int) -> None:
        self.connection = connection
        self.num_docs = num_docs

    @classmethod
    def build(cls, documents: Iterable[str]) -> Fts5Index:
        connection = sqlite3.connect(":memory:", check_same_thread=False)
        connection.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter ascii')")
        count = 0

        def rows() -> Iterable[tuple[int, str]]:
            nonlocal count
            for count, text in enumerate(documents, start=1):
                yield count - 1, text

        connection.executemany("INSERT INTO docs(rowid, body) VALUES (?, ?)", rows())
        if not count:
            raise ValueError("cannot index an empty catalog")
        return cls(connection, count)

    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        words = [w for w in _WORDS.findall(keywords.lower()) if w not in STOP_WORDS]
        words = [w for w in words if w.isascii()]
        if not words:
            return []
        query = " OR ".join(f'"{word}"' for word in dict.fromkeys(words))
        rows = self.connection.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?",
            (query, k),
        )
        return [int(row[0]) for row in rows]


@contextlib.contextmanager
def _quiet():  # type: ignore[no-untyped-def]
    """Silence bm25s's progress bars and info logs."""
    logger = logging.getLogger("bm25s")
    level = logger.level
    logger.setLevel(logging.WARNING)
    previous = os.environ.get("DISABLE_TQDM")
    os.environ["DISABLE_TQDM"] = "1"
    try:
        yield
    finally:
        logger.setLevel(level)
        if previous is None:
            os.environ.pop("DISABLE_TQDM", None)
        else:
            os.environ["DISABLE_TQDM"] = previous


def resolve_backend(backend: str) -> str:
    """``"auto"`` → ``"bm25s"`` when installed, else ``"fts5"``."""
    if backend not in BACKENDS:
        raise ValueError(f"search_backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "bm25s" if bm25s_available() else "fts5"
    if backend == "bm25s":
        for module in ("bm25s", "Stemmer"):
            require(module, "webshop", needed_by='WebShop search_backend="bm25s"')
    return backend


def build_index(
    documents: Iterable[str],
    *,
    backend: str,
    key: str,
    cache_dir: Path | None,
) -> BM25Index | Fts5Index:
    """The index of ``documents`` (in catalog order). With the ``bm25s`` backend and a
    ``cache_dir``, the index is loaded from ``<cache_dir>/index-<key>`` when there, else built
    and saved there (atomically; an unwritable cache is skipped). For a sequence of documents
    the key also carries a digest of their text, so a changed catalog never reads a stale
    index."""
    if backend == "fts5":
        return Fts5Index.build(documents)
    if cache_dir is None:
        return BM25Index.build(documents)
    if isinstance(documents, Sequence):  # in-memory catalogs: the key also names the content
        digest = hashlib.sha256()
        for document in documents:
            digest.update(document.encode("utf-8", "surrogatepass") + b"\0")
        key = f"{key}-{digest.hexdigest()[:12]}"
    path = cache_dir / f"index-v{_INDEX_VERSION}-{key}"
    if (path / "done").is_file():
        with contextlib.suppress(Exception):
            return BM25Index.load(path)
    index = BM25Index.build(documents)
    with contextlib.suppress(OSError):
        cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".index-", dir=cache_dir))
        try:
            index.save(staging)
            (staging / "done").write_text(json.dumps({"num_docs": index.num_docs}))
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
            os.replace(staging, path)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return index
