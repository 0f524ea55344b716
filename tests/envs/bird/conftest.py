"""Shared fixtures: the built-in data generated once per session into a temporary cache (the
real BIRD sample: ``mini_dev`` in ``tests/conftest.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_envs.envs.bird.builtin import ensure_builtin


@pytest.fixture(scope="session")
def builtin_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("bird-cache")
    ensure_builtin(cache)
    return cache


@pytest.fixture(scope="session")
def builtin_root(builtin_cache: Path) -> Path:
    return ensure_builtin(builtin_cache)[1]
