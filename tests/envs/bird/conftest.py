"""Shared fixtures: the built-in data generated once per session into a temporary cache, and
the real BIRD sample under ``../shared/data/bird`` (tests that need it skip without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_envs.envs.bird.builtin import ensure_builtin

SHARED_BIRD = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "bird"
MINI_DEV = SHARED_BIRD / "mini_dev_sqlite.json"
DEV_DATABASES = SHARED_BIRD / "dev_databases"


@pytest.fixture(scope="session")
def builtin_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("bird-cache")
    ensure_builtin(cache)
    return cache


@pytest.fixture(scope="session")
def builtin_root(builtin_cache: Path) -> Path:
    return ensure_builtin(builtin_cache)[1]


@pytest.fixture(scope="session")
def mini_dev() -> Path:
    if not MINI_DEV.is_file() or not DEV_DATABASES.is_dir():
        pytest.skip(
            f"the BIRD sample is not at {SHARED_BIRD} (mini_dev_sqlite.json, dev_databases/)"
        )
    return MINI_DEV
