"""Every fenced python/bash block of README.md and docs/ runs (see `tests.docs.snippets`)."""

from __future__ import annotations

import pytest

from tests.docs.snippets import ROOT, Block, PageSession, collect

BLOCKS = collect()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """One `PageSession` per page; a page's background servers stop when the next page starts
    and at the end."""
    cache = tmp_path_factory.mktemp("agent_envs_cache")
    opened: dict[str, PageSession] = {}

    def session(page: str) -> PageSession:
        for other in [name for name in opened if name != page]:
            opened.pop(other).close()
        if page not in opened:
            folder = tmp_path_factory.mktemp(page.replace("/", "_").replace(".md", ""))
            opened[page] = PageSession(page, folder, cache)
        return opened[page]

    yield session
    for open_session in opened.values():
        open_session.close()


def test_snippets__found_in_the_readme_and_every_docs_page():
    pages = {block.page for block in BLOCKS}
    assert "README.md" in pages and "docs/quickstart.md" in pages
    assert len(BLOCKS) >= 40
    assert (ROOT / "mkdocs.yml").exists()


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_snippet(block: Block, sessions):
    session = sessions(block.page)
    reason = session.skip_reason(block)
    if reason:
        pytest.skip(f"{block.id}: {reason}")
    session.run(block)
