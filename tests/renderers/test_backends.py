"""The window backend (headless) and the error for a missing optional dependency."""

from __future__ import annotations

import numpy as np
import pytest
from agent_envs.renderers import FrameRenderer, TextFrame
from agent_envs.renderers.pygame_backend import HumanWindow
from gymnasium.error import DependencyNotInstalled

from agent_envs.optional import require


def test_backends__human_window_shows_frames_headless():
    window = HumanWindow("test", fps=0)
    window.show(np.full((30, 40, 3), 200, np.uint8))
    import pygame

    assert pygame.display.get_surface().get_size() == (40, 30)
    window.show(np.zeros((20, 10, 3), np.uint8))  # a new size reopens the window
    assert pygame.display.get_surface().get_size() == (10, 20)
    window.close()


def test_backends__frame_renderer_modes():
    renderer = FrameRenderer(fps=0)
    card = TextFrame("Card", (("Body", "text"),))
    assert renderer.render(card, None) is None
    assert renderer.render(card, "ansi").startswith("\x1b[1mCard")
    assert renderer.render(card, "rgb_array").shape == (480, 640, 3)
    assert renderer.render(card, "human") is None
    renderer.close()
    with pytest.raises(ValueError, match="render mode"):
        renderer.render(card, "video")


def test_backends__missing_dependency_names_the_render_extra():
    with pytest.raises(DependencyNotInstalled, match=r"agent-envs\[render\]"):
        require("imageio_ffmpeg_is_not_a_module", "render")
