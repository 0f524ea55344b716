"""Shared fixtures: a private index cache for the session, and WebShop's sample data."""

from __future__ import annotations

import os

import pytest

from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "webshop"
HAS_DATA = (DATA / "documents_1k.jsonl").is_file() and (DATA / "items_ins_v2_1000.json").is_file()
needs_data = pytest.mark.skipif(
    not HAS_DATA,
    reason=f"WebShop sample data (documents_1k.jsonl, items_ins_v2_1000.json) not at {DATA}",
)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory):
    """Search indexes go to a temporary cache (inherited by spawned checker processes)."""
    previous = os.environ.get("AGENT_ENVS_CACHE")
    os.environ["AGENT_ENVS_CACHE"] = str(tmp_path_factory.mktemp("agent_envs_cache"))
    yield
    if previous is None:
        os.environ.pop("AGENT_ENVS_CACHE", None)
    else:
        os.environ["AGENT_ENVS_CACHE"] = previous
