"""Episode export: an animated GIF (Pillow) or an MP4 (imageio with imageio-ffmpeg).

:func:`turn_images` draws one picture per turn: the frame the model saw (or a card of its
observation) with a panel under it holding the turn number, the reward, the parsed actions
and the model's reply; a final state with no reply gets one more picture. All pictures of
an episode are padded to one size. The writers accept an episode (any shape in
`agent_envs.renderers.episodes`: a dict, an :class:`~agent_envs.renderers.episodes.Episode`,
or a record with ``to_dict()`` such as the project's ``Trajectory``) or a plain list of
``(H, W, 3)`` uint8 frames, e.g. what Gymnasium's ``RecordVideo`` collects from
``render_mode="rgb_array"``.

**Where the pictures come from.** A record that carries frames is drawn from them. A record
that carries none (a ``Trajectory`` from the rollout collector or the leaderboard holds text
only) is drawn from ``frames=`` (one per turn, plus optionally the final state, e.g. from
:func:`~agent_envs.renderers.episodes.replay_frames`), or, given ``env=``, by playing its
replies again on that env from its seed
(:func:`~agent_envs.renderers.episodes.with_replayed_frames`; ``ValueError`` when the replay
does not earn the recorded rewards). With neither, each turn is a text card of its
observation::

    trajectory = collect_episodes("grl/Sokoban-v0", random_engine(0), [1])[0]
    write_gif(trajectory, "episode.gif", env=gymnasium.make(trajectory.env_id))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.renderers.display import format_reward, safe_text, summary_items
from agent_envs.renderers.episodes import (
    Episode,
    Turn,
    as_episode,
    attach_frames,
    with_replayed_frames,
)
from agent_envs.renderers.frames import GridFrame, TextFrame
from agent_envs.renderers.raster import BACKGROUND, PANEL, draw, text_panel

from agent_envs.optional import require

__all__ = ["REPLY_PANEL_HEIGHT", "turn_image", "turn_images", "write_gif", "write_mp4"]

#: Height in pixels of the reply panel under each frame.
REPLY_PANEL_HEIGHT = 150
_MIN_WIDTH = 480
_PANEL_CHARS = 2_000  # more than the panel can show


def _frame_array(turn: Turn) -> np.ndarray:
    frame = turn.frame
    if isinstance(frame, (GridFrame, TextFrame)):
        return draw(frame)
    if frame is not None:
        array = np.asarray(frame, dtype=np.uint8)
        if array.ndim != 3 or array.shape[2] != 3:
            raise ValueError(f"a frame array must be (H, W, 3), got shape {array.shape}")
        return array
    observation = turn.observation
    body = "(observation not recorded)" if observation is None else safe_text(observation)
    return draw(TextFrame("Observation", (("", body),)))


def _label(index: int, turn: Turn) -> str:
    if turn.reply is None:
        return "End of episode"
    parts = [f"Turn {index + 1}"]
    if turn.reward is not None:
        parts.append(f"reward {format_reward(turn.reward)}")
    if turn.parsed_actions:
        parts.append("actions: " + " || ".join(turn.parsed_actions))
    return safe_text("   ".join(parts), _PANEL_CHARS)


def turn_image(index: int, turn: Turn, note: str = "") -> np.ndarray:
    """Turn ``index`` (0-based) drawn: its frame over a panel with its reply (for a final
    state with no reply: ``note``, e.g. the episode's return)."""
    image_module = require("PIL.Image", "render")
    frame = _frame_array(turn)
    height, width = frame.shape[:2]
    canvas_width = max(width, _MIN_WIDTH)
    canvas = image_module.new("RGB", (canvas_width, height + REPLY_PANEL_HEIGHT), BACKGROUND)
    canvas.paste(image_module.fromarray(frame), ((canvas_width - width) // 2, 0))
    draw_module = require("PIL.ImageDraw", "render")
    draw_module.Draw(canvas).rectangle(
        [0, height, canvas_width, height + REPLY_PANEL_HEIGHT], fill=PANEL
    )
    reply = note if turn.reply is None else turn.reply[: _PANEL_CHARS * 2].strip()
    reply = safe_text(reply or "(empty reply)", _PANEL_CHARS)
    box = (12, height + 8, canvas_width - 12, height + REPLY_PANEL_HEIGHT - 4)
    text_panel(canvas, box, [(_label(index, turn), reply)])
    return np.asarray(canvas, dtype=np.uint8).copy()


def _pad(images: list[np.ndarray]) -> list[np.ndarray]:
    """Centre every image on a background canvas of the largest size (multiples of 2)."""
    height = max(image.shape[0] for image in images)
    width = max(image.shape[1] for image in images)
    height, width = height + height % 2, width + width % 2
    padded = []
    for image in images:
        canvas = np.empty((height, width, 3), dtype=np.uint8)
        canvas[:] = BACKGROUND
        top, left = (height - image.shape[0]) // 2, (width - image.shape[1]) // 2
        canvas[top : top + image.shape[0], left : left + image.shape[1]] = image
        padded.append(canvas)
    return padded


#: One episode for the writers: an Episode, an episode dict or a record with to_dict().
Source = Any


def _episode(source: Source, frames: Sequence[Any] | None, env: Any) -> Episode:
    """``source`` as an :class:`Episode` with pictures from ``frames`` or ``env`` (module
    docstring)."""
    if frames is not None:
        return attach_frames(source, frames)
    if env is not None:
        return with_replayed_frames(source, env)
    return as_episode(source)


def turn_images(
    episode: Source, *, frames: Sequence[Any] | None = None, env: Any = None
) -> list[np.ndarray]:
    """One image per turn (plus one for a recorded final state), all the same size; the
    pictures come from the record, ``frames`` or ``env`` (module docstring)."""
    episode = _episode(episode, frames, env)
    if not episode.turns:
        raise ValueError("the episode has no turns to draw")
    note = "   ".join(f"{label}: {value}" for label, value in summary_items(episode.summary))
    return _pad([turn_image(index, turn, note) for index, turn in enumerate(episode.turns)])


def _is_episode(source: Any) -> bool:
    return isinstance(source, (Episode, dict)) or callable(getattr(source, "to_dict", None))


def _images(source: Any, frames: Sequence[Any] | None, env: Any) -> list[np.ndarray]:
    if _is_episode(source):
        return turn_images(source, frames=frames, env=env)
    if frames is not None or env is not None:
        raise ValueError("frames= and env= go with an episode, not with a list of images")
    images = [np.asarray(image, dtype=np.uint8) for image in source]
    if not images:
        raise ValueError("no frames to write")
    return _pad(images)


def write_gif(
    source: Source | list[np.ndarray],
    path: str | Path,
    *,
    fps: float = 1.0,
    loop: bool = True,
    frames: Sequence[Any] | None = None,
    env: Any = None,
) -> Path:
    """Write an animated GIF of an episode (one image per turn; pictures from the record,
    ``frames`` or ``env``, see the module docstring) or of a list of images.

    Consecutive identical frames may be merged into one longer frame by the GIF encoder."""
    image_module = require("PIL.Image", "render")
    images = [image_module.fromarray(image) for image in _images(source, frames, env)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {"loop": 0} if loop else {}
    images[0].save(
        path,
        save_all=True,
        append_images=images[1:],
        duration=round(1000 / fps),
        optimize=False,
        **extra,
    )
    return path


def write_mp4(
    source: Source | list[np.ndarray],
    path: str | Path,
    *,
    fps: float = 1.0,
    frames: Sequence[Any] | None = None,
    env: Any = None,
) -> Path:
    """Write an H.264 MP4 (needs ``imageio`` and ``imageio-ffmpeg``) of what
    :func:`write_gif` takes."""
    require("imageio_ffmpeg", "render")
    imageio = require("imageio.v2", "render")
    images = _images(source, frames, env)
    height, width = images[0].shape[:2]
    block = 16  # H.264 wants sizes in macro blocks; pad rather than let ffmpeg rescale
    padded_height, padded_width = -(-height // block) * block, -(-width // block) * block
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=1) as writer:
        for image in images:
            canvas = np.empty((padded_height, padded_width, 3), dtype=np.uint8)
            canvas[:] = BACKGROUND
            canvas[:height, :width] = image
            writer.append_data(canvas)
    return path
