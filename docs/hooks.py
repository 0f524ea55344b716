"""MkDocs hooks: let mkdocstrings read the package laid out as installed.

The wheel installs ``adapters/``, ``renderers/`` and ``benchmarks/`` as ``agent_envs.adapters``,
``agent_envs.renderers`` and ``agent_envs.benchmarks`` (setuptools ``package-dir``), which a
static reader of the checkout cannot follow. Before mkdocstrings starts, this builds that layout
from symbolic links in a temporary folder and points mkdocstrings' search path at it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[1]
_FOLDERS: list[Path] = []


@event_priority(100)  # before mkdocstrings' own on_config creates its handler
def on_config(config):
    folder = Path(tempfile.mkdtemp(prefix="agent-envs-docs-api-"))
    _FOLDERS.append(folder)
    package = folder / "agent_envs"
    package.mkdir()
    for child in (ROOT / "agent_envs").iterdir():
        if child.name != "__pycache__":
            (package / child.name).symlink_to(child)
    for name in ("adapters", "renderers", "benchmarks"):
        (package / name).symlink_to(ROOT / name)
    handlers = config.plugins["mkdocstrings"].config.handlers
    handlers.setdefault("python", {})["paths"] = [str(folder)]
    return config


def on_shutdown():
    while _FOLDERS:
        shutil.rmtree(_FOLDERS.pop(), ignore_errors=True)
