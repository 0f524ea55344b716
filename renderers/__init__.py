"""Presentation only: turns frame descriptions into pictures.

Envs describe their state as a frame (`agent_envs.renderers.frames`: a glyph grid with a legend
and caption, or a text card); backends draw it: `agent_envs.renderers.ansi` (terminal colour),
`agent_envs.renderers.raster` (an RGB array, Pillow), `agent_envs.renderers.pygame_backend` (a
window). On top of them: `agent_envs.renderers.gif` (animated GIF / MP4 of an episode),
`agent_envs.renderers.replay` (a self-contained HTML replay, also ``python -m
agent_envs.renderers.replay``) and `agent_envs.renderers.image_obs` (image observations and
multimodal chat messages for vision-language models). The exporters read episodes of any shape
(`agent_envs.renderers.episodes`, ``Trajectory`` records included) and show values and text
through `agent_envs.renderers.display` (formatted for people, escaped, cut).

Renderers know no env (of ``agent_envs`` this package imports only
:mod:`agent_envs.optional`, the optional-dependency helper). An env supports every
render mode with a :class:`FrameRenderer`::

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 4}

    def render(self):
        if self.render_mode == "ansi":
            return super().render()  # the observation text, as the model reads it
        return self._renderer.render(self.frame(), self.render_mode)

(``FrameRenderer`` itself draws ``"ansi"`` as the coloured `agent_envs.renderers.ansi.to_ansi`
text.)

Pillow (``rgb_array``) and pygame (``human``) are imported when first used; a missing one
raises ``gymnasium.error.DependencyNotInstalled`` naming ``agent-envs[render]``.
"""

from __future__ import annotations

from typing import Any

from agent_envs.renderers.frames import (
    TILE_KINDS,
    Frame,
    Grid,
    GridFrame,
    TextFrame,
    Tile,
    frame_from_dict,
    frame_to_dict,
)

__all__ = [
    "RENDER_MODES",
    "TILE_KINDS",
    "Frame",
    "FrameRenderer",
    "Grid",
    "GridFrame",
    "TextFrame",
    "Tile",
    "frame_from_dict",
    "frame_to_dict",
]

#: The render modes a :class:`FrameRenderer` serves.
RENDER_MODES: tuple[str, ...] = ("ansi", "rgb_array", "human")


class FrameRenderer:
    """Draws frames for one env in its render mode; holds the ``human`` window, if any.

    ``render(frame, "ansi")`` → colour terminal text; ``"rgb_array"`` → ``(H, W, 3)`` uint8
    array (size: `agent_envs.renderers.raster.frame_size`); ``"human"`` → shows it in a window
    paced to ``fps`` and returns ``None``; ``None`` → ``None``. Pickles and deep-copies without its
    window."""

    def __init__(self, caption: str = "agent-envs", fps: float = 4) -> None:
        self.caption = caption
        self.fps = fps
        self._window: Any = None

    def render(self, frame: Frame, mode: str | None) -> Any:
        if mode is None:
            return None
        if mode == "ansi":
            from agent_envs.renderers.ansi import to_ansi

            return to_ansi(frame)
        if mode == "rgb_array":
            from agent_envs.renderers.raster import draw

            return draw(frame)
        if mode == "human":
            from agent_envs.renderers.pygame_backend import HumanWindow
            from agent_envs.renderers.raster import draw

            if self._window is None:
                self._window = HumanWindow(self.caption, self.fps)
            self._window.show(draw(frame))
            return None
        raise ValueError(f"render mode must be one of {RENDER_MODES} or None, got {mode!r}")

    def close(self) -> None:
        if self._window is not None:
            self._window.close()
            self._window = None

    def __getstate__(self) -> dict[str, Any]:
        return {"caption": self.caption, "fps": self.fps, "_window": None}
