"""Search: the analyzer, BM25 (Lucene scoring, k1 0.9, b 0.4), the FTS5 fallback, caching."""

from __future__ import annotations

import math

import pytest

from agent_envs.envs.webshop import search

DOCS = [
    "red cotton dress for summer",
    "blue running shoes with rubber sole",
    "running shorts, red",
    "ceramic coffee mug",
    "red red red dress with a very long description of many many other words here",
]


def test_search__tokenize_is_lucene_english_like():
    assert search.tokenize("Women's Running Shoes, and the BATTERIES! x-large 4K") == [
        "women", "run", "shoe", "batteri", "larg", "4k",
    ]  # fmt: skip
    assert search.tokenize("the and of a") == []


def test_search__bm25_scores_follow_lucene_formula():
    index = search.BM25Index.build(DOCS)
    lengths = [len(search.tokenize(doc)) for doc in DOCS]
    average = sum(lengths) / len(lengths)
    scores = index.retriever.get_scores_from_ids([index.vocab["dress"]])
    df = 2
    idf = math.log(1 + (len(DOCS) - df + 0.5) / (df + 0.5))
    for doc, length in enumerate(lengths):
        tf = search.tokenize(DOCS[doc]).count("dress")
        expected = idf * tf / (tf + search.K1 * (1 - search.B + search.B * length / average))
        assert scores[doc] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("red dress", [0, 4, 2]),
        ("Running", [2, 1]),  # equal tf; the shorter document first
        ("mug", [3]),
        ("the of", []),  # stop words only
        ("spaceship", []),  # unknown word
    ],
)
def test_search__bm25_ranking(query, expected):
    assert search.BM25Index.build(DOCS).search(query) == expected


def test_search__ties_go_to_the_earlier_document_and_k_limits():
    index = search.BM25Index.build(["same text"] * 7)
    assert index.search("text", k=5) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("query", ["red dress", "running", "mug", "the of", "spaceship"])
def test_search__fts5_fallback_finds_the_same_documents(query):
    bm25 = search.BM25Index.build(DOCS).search(query)
    fts5 = search.Fts5Index.build(DOCS).search(query)
    assert sorted(fts5) == sorted(bm25)
    assert fts5[:1] == bm25[:1]


def test_search__index_is_cached_on_disk_and_reloaded(tmp_path):
    built = search.build_index(DOCS, backend="bm25s", key="k1", cache_dir=tmp_path)
    folder = next(tmp_path.glob("index-*-k1-*"))
    assert (folder / "done").is_file()
    loaded = search.build_index(list(DOCS), backend="bm25s", key="k1", cache_dir=tmp_path)
    assert loaded is not built and loaded.num_docs == len(DOCS)
    assert loaded.search("red dress") == built.search("red dress")


def test_search__unwritable_cache_is_skipped(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    index = search.build_index(DOCS, backend="bm25s", key="k", cache_dir=blocker / "cache")
    assert index.search("mug") == [3]


def test_search__backend_resolution():
    assert search.resolve_backend("auto") == "bm25s"  # installed in the test environment
    assert search.resolve_backend("fts5") == "fts5"
    with pytest.raises(ValueError, match="search_backend"):
        search.resolve_backend("lucene")


def test_search__empty_catalog_is_refused():
    with pytest.raises(ValueError, match="empty"):
        search.BM25Index.build([])
    with pytest.raises(ValueError, match="empty"):
        search.Fts5Index.build([])


def test_search__a_changed_catalog_never_reads_a_stale_cached_index(tmp_path):
    first = search.build_index(
        ["red lipstick vegan", "bluetooth speaker"], backend="bm25s", key="k", cache_dir=tmp_path
    )
    second = search.build_index(
        ["bluetooth speaker", "red lipstick vegan"], backend="bm25s", key="k", cache_dir=tmp_path
    )
    assert len(list(tmp_path.glob("index-*"))) == 2
    assert first.search("lipstick", 1)[0] == 0 and second.search("lipstick", 1)[0] == 1
