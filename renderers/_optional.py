"""Optional imports: each backend imports its library here, when it is first used."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from gymnasium.error import DependencyNotInstalled

__all__ = ["require"]

_PIP_NAMES = {"PIL": "Pillow", "imageio_ffmpeg": "imageio-ffmpeg"}


def require(module: str) -> ModuleType:
    """Import ``module`` or raise `DependencyNotInstalled` naming the ``[render]`` extra."""
    if module == "pygame":
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.split(".")[0]
        package = _PIP_NAMES.get(top, top)
        raise DependencyNotInstalled(
            f"{package} is not installed; run `pip install agent-envs[render]`"
        ) from error
