"""Optional dependencies: imported where they are used, through :func:`require`.

Every heavy or optional library (torch, transformers, TRL, pygame, FastAPI, Ray, ...) is
imported inside the function that needs it, by ``require("module", extra="...")``. A missing
one raises `gymnasium.error.DependencyNotInstalled` naming the extra that installs it, e.g.
``pip install 'agent-envs[train]'``. This module imports nothing optional itself, and every
floor of the package (renderers, envs, adapters, benchmarks) uses it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from gymnasium.error import DependencyNotInstalled

__all__ = ["EXTRAS", "missing", "require"]

#: the extras of ``pyproject.toml`` that :func:`require` may name
EXTRAS = (
    "render",
    "webshop",
    "train",
    "vllm",
    "tunix",
    "textarena",
    "pettingzoo",
    "server",
    "openai",
    "ray",
    "model",
    "dev",
)


def missing(module: str, extra: str) -> DependencyNotInstalled:
    """The error for a module of ``extra`` that is not installed (to raise ``from`` the
    original `ImportError`)."""
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {EXTRAS}, got {extra!r}")
    return DependencyNotInstalled(
        f"{module} is not installed; it comes with the [{extra}] extra: "
        f"pip install 'agent-envs[{extra}]'"
    )


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` (a dotted name) or raise `DependencyNotInstalled` naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise missing(module, extra) from error
