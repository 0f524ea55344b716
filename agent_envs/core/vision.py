"""Image+text versions of the grid games: the ``grl/*-vision-v0`` ids.

:class:`VisionEnv` builds a registered text env and wraps it in
:class:`agent_envs.renderers.image_obs.ImageObservation`, so each observation carries the text the
text env prints and the picture the renderers draw of the same state. Rules, rewards, info keys,
budgets and seeding are the text env's, unchanged; the vision ids differ from their text
siblings in the observation only.
"""

from __future__ import annotations

from typing import Any

from gymnasium.envs.registration import load_env_creator

from agent_envs.renderers.image_obs import ImageObservation
from agent_envs.vector import vector_entry_point

__all__ = ["VisionEnv", "make_vector_env"]


class VisionEnv(ImageObservation):
    """A text env whose observations also hold its rendered frame.

    ## Observation
    ``{"text": str, "image": np.ndarray}``: ``text`` is the text env's observation (in its
    ``Text`` space), ``image`` its frame drawn by `agent_envs.renderers.raster` as an ``(H, W, 3)``
    ``uint8`` RGB array. The size is fixed per configuration (``agent_envs.renderers.raster`` gives
    the formula; height x width: Sokoban 6x6 484 x 448, Tetris 10x20 648 x 448, Blocksworld 3
    blocks 334 x 544); the ``image`` box of ``observation_space`` has it.

    ## Action, rewards, episode end, information
    The text env's (its class docstring): the action is the model's whole reply, the info
    keys are the common ones plus the env's own.

    ## Chat messages
    :meth:`messages` gives the episode with each user turn holding its text and its picture
    as a PNG data URL, in the OpenAI format (``style="openai"``:
    ``{"type": "image_url", "image_url": {"url": ...}}``) or the Hugging Face one
    (``style="transformers"``: ``{"type": "image", "url": ...}``). The rollout collector builds
    its own messages the same way (`agent_envs.adapters.loop.collector`).

    ## Arguments
    ``gymnasium.make("grl/Sokoban-vision-v0", style="openai", max_turns=6, ...)``: ``base`` is
    the text env's entry point (set by the registered id), ``style`` the message format, and
    every other keyword goes to the text env, as for its text id.

    ## Version history
    * v0: initial version.
    """

    def __init__(
        self, base: str, *, style: str = "openai", render_mode: str | None = None, **kwargs: Any
    ) -> None:
        if not isinstance(base, str) or ":" not in base:
            raise ValueError(f"base must be an entry point 'module:Class', got {base!r}")
        env = load_env_creator(base)(render_mode=render_mode, **kwargs)
        super().__init__(env, style=style)
        self.base = base

    @property
    def instructions(self) -> str:
        return self.env.unwrapped.instructions

    def state_hash(self) -> str:
        return self.env.unwrapped.state_hash()


#: ``gymnasium.make_vec`` entry point of every vision id.
make_vector_env = vector_entry_point(VisionEnv)
