"""The ``"human"`` backend: shows rgb frames in a pygame window, paced to ``render_fps``.

pygame is imported on first use. Without a display (a headless machine, no
``SDL_VIDEODRIVER`` set) the window falls back to SDL's ``dummy`` driver with a warning, so
``render_mode="human"`` still runs (and shows nothing) in CI. The window is not pickled: a
copied env opens its own when it next renders.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from gymnasium import logger

from agent_envs.optional import require

__all__ = ["HumanWindow"]


def _pygame() -> Any:
    """pygame, imported on first use without its "Hello from the pygame community" banner."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    return require("pygame", "render")


def _init_display(pygame: Any) -> None:
    try:
        pygame.display.init()
    except pygame.error:
        if os.environ.get("SDL_VIDEODRIVER"):
            raise
        os.environ["SDL_VIDEODRIVER"] = "dummy"
        logger.warn("no display available; render_mode='human' draws to SDL's dummy driver")
        pygame.display.init()


class HumanWindow:
    """A pygame window that shows one ``(H, W, 3)`` frame per :meth:`show` call."""

    def __init__(self, caption: str = "agent-envs", fps: float = 4) -> None:
        self.caption = caption
        self.fps = fps
        self._screen: Any = None
        self._clock: Any = None

    def show(self, frame: np.ndarray) -> None:
        pygame = _pygame()
        height, width = frame.shape[:2]
        if self._screen is None or self._screen.get_size() != (width, height):
            if not pygame.display.get_init():
                _init_display(pygame)
            pygame.display.set_caption(self.caption)
            self._screen = pygame.display.set_mode((width, height))
            self._clock = pygame.time.Clock()
        surface = pygame.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2)))
        self._screen.blit(surface, (0, 0))
        pygame.event.pump()
        pygame.display.flip()
        if self.fps:
            self._clock.tick(self.fps)

    def close(self) -> None:
        if self._screen is not None:
            pygame = _pygame()
            pygame.display.quit()
            self._screen = None
            self._clock = None

    def __getstate__(self) -> dict[str, Any]:
        return {"caption": self.caption, "fps": self.fps, "_screen": None, "_clock": None}

    def __deepcopy__(self, memo: dict[int, Any]) -> HumanWindow:
        return HumanWindow(self.caption, self.fps)
