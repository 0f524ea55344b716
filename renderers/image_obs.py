"""Image observations for vision-language models.

:class:`ImageObservation` wraps a text env whose unwrapped env has ``frame()`` (every
agent-envs env): observations become ``{"text": str, "image": (H, W, 3) uint8}``, and
:meth:`ImageObservation.messages` gives the episode as chat messages whose user turns carry
the text and the picture, in the OpenAI multimodal format::

    {"role": "user", "content": [
        {"type": "text", "text": "..."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}},
    ]}

or, with ``style="transformers"``, ``{"type": "image", "url": "data:image/png;base64,..."}``
parts as Hugging Face chat templates (processors' ``apply_chat_template``) read them. The
image's size is fixed per env configuration (see `agent_envs.renderers.raster`); the observation
space's ``image`` box is measured from a copy of the env reset with seed 0.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from agent_envs.renderers.raster import draw, frame_size
from agent_envs.renderers.replay import png_data_url

__all__ = ["ImageObservation", "image_message"]

_STYLES = ("openai", "transformers")


def _image_part(url: str, style: str) -> dict[str, Any]:
    if style == "openai":
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "image", "url": url}


def image_message(
    text: str, image: np.ndarray, *, role: str = "user", style: str = "openai"
) -> dict[str, Any]:
    """One chat message holding ``text`` and ``image`` (a PNG data URL) in ``style``."""
    if style not in _STYLES:
        raise ValueError(f"style must be one of {_STYLES}, got {style!r}")
    content = [{"type": "text", "text": text}, _image_part(png_data_url(image), style)]
    return {"role": role, "content": content}


class ImageObservation(gym.Wrapper):
    """Adds the rendered frame to every observation: ``{"text": ..., "image": ...}``.

    Args:
        env: an env whose ``unwrapped`` has a ``frame()`` method.
        style: message format of :meth:`messages`: ``"openai"`` or ``"transformers"``.
    """

    def __init__(self, env: gym.Env, *, style: str = "openai") -> None:
        super().__init__(env)
        if not callable(getattr(env.unwrapped, "frame", None)):
            raise ValueError(f"env must have a frame() method, got {type(env.unwrapped).__name__}")
        if style not in _STYLES:
            raise ValueError(f"style must be one of {_STYLES}, got {style!r}")
        self.style = style
        probe = copy.deepcopy(env.unwrapped)
        probe.reset(seed=0)
        height, width = frame_size(probe.frame())
        probe.close()
        self.observation_space = gym.spaces.Dict(
            {
                "text": env.observation_space,
                "image": gym.spaces.Box(0, 255, (height, width, 3), dtype=np.uint8),
            }
        )
        self._images: list[np.ndarray] = []

    def _observe(self, text: str) -> dict[str, Any]:
        image = draw(self.env.unwrapped.frame())
        return {"text": text, "image": image}

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        text, info = self.env.reset(**kwargs)
        observation = self._observe(text)
        self._images = [observation["image"]]
        return observation, info

    def step(self, action: Any) -> tuple[dict[str, Any], Any, bool, bool, dict[str, Any]]:
        text, reward, terminated, truncated, info = self.env.step(action)
        observation = self._observe(text)
        self._images.append(observation["image"])
        return observation, reward, terminated, truncated, info

    def messages(self, window: int | None = None) -> list[dict[str, Any]]:
        """The env's chat transcript (`TextEnv.messages`) with each user turn's picture
        added; the system prompt and the assistant replies stay plain strings."""
        messages = self.env.unwrapped.messages(window)
        users = [index for index, message in enumerate(messages) if message["role"] == "user"]
        images = self._images[len(self._images) - len(users) :] if users else []
        for index, image in zip(users, images, strict=True):
            text = messages[index]["content"]
            messages[index] = image_message(text, image, style=self.style)
        return messages
