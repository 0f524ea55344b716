"""Optional dependencies: imported where they are used, through :func:`require`.

Every heavy or optional library (torch, transformers, TRL, pygame, FastAPI, Ray, ...) is
imported inside the function that needs it, by ``require("module", extra="...")``. A missing
one raises `gymnasium.error.DependencyNotInstalled` naming the extra that installs it, e.g.
``pip install 'agent-envs[train]'``. This module imports nothing optional itself, and every
floor of the package (renderers, envs, adapters, benchmarks) uses it.

A module that must subclass a library class when it is imported (a TRL trainer, a PettingZoo
env) calls :func:`require` at its top, so importing that module without the extra raises the
same error; the package that holds it does not import it eagerly.
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
    "verifiers",
    "skyrl",
    "dev",
)

#: pip's name for an import name that differs from it (the top-level module)
_DISTRIBUTIONS = {
    "PIL": "Pillow",
    "Stemmer": "PyStemmer",
    "imageio_ffmpeg": "imageio-ffmpeg",
    "openenv": "openenv-core",
    "tunix": "google-tunix",
    "websocket": "websocket-client",
}


def missing(module: str, extra: str, *, needed_by: str | None = None) -> DependencyNotInstalled:
    """The error for a module of ``extra`` that is not installed (to raise ``from`` the
    original `ImportError`); ``needed_by`` names what needs it (``"VLLMEngine"``)."""
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {EXTRAS}, got {extra!r}")
    distribution = _DISTRIBUTIONS.get(module.split(".")[0])
    name = module if distribution is None else f"{module} (pip package {distribution})"
    head = f"{needed_by} needs {name}, which" if needed_by else name
    return DependencyNotInstalled(
        f"{head} is not installed; it comes with the [{extra}] extra: "
        f"pip install 'agent-envs[{extra}]'"
    )


def require(module: str, extra: str, *, needed_by: str | None = None) -> ModuleType:
    """Import ``module`` (a dotted name) or raise `DependencyNotInstalled` naming ``extra``
    (and ``needed_by``, what needs it, when given)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise missing(module, extra, needed_by=needed_by) from error
