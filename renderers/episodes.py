"""The episode shapes the exporters read (GIF/MP4, HTML replay), and how they are read.

The exporters take plain dicts, not a record class, so they work with any trajectory store.
**An episode** is a dict with a ``steps`` list, one dict per turn::

    {
      "env_id": "grl/Sokoban-v0", "seed": 0, "agent": "oracle",  # optional, shown as title
      "steps": [
        {
          "observation": "...",      # what the model saw before replying (str)
          "reply": "...",            # its whole reply ("action" is read too)
          "parsed_actions": ["Up"],  # optional ("info": {"parsed_actions": ...} is read too)
          "reward": -0.1,            # optional
          "frame": ...,              # optional: the frame the model saw (below)
        },
        ...
      ],
      "final_observation": "...",    # optional: the state after the last turn
      "final_frame": ...,            # optional
    }

A **frame** is a frame description (a `agent_envs.renderers.frames` object or its
:func:`~agent_envs.renderers.frames.frame_to_dict` dict), an ``(H, W, 3)`` uint8 array (or nested
list), or a PNG as a ``data:image/png;base64,...`` URL. Steps without a frame are drawn as a text
card of their observation.

This is also the JSON shape of a trajectory record (``steps`` with ``observation``,
``reply``, ``parsed_actions``, ``reward``, ``info``; ``final_observation``; extra keys such
as token ids are ignored).

**Leaderboard episodes** (``runs/leaderboard/episodes.jsonl``, `agent_envs.benchmarks.leaderboard`'s
``Episode``: ``first_observation``, ``replies``, ``last_observation``, ``episode_return``,
...) are read too: the first turn shows ``first_observation``, later turns show only the
reply (their observations are not recorded), and ``last_observation`` is the final state.

:func:`load_episodes` reads a ``.jsonl`` file (one episode per line) or a ``.json`` file
(one episode or a list); :func:`record_episode` plays replies on an env that has a
``frame()`` method and returns an episode dict with frames.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.renderers.frames import GridFrame, TextFrame, frame_from_dict, frame_to_dict

from agent_envs.optional import require

__all__ = ["Episode", "Turn", "episode_from_dict", "load_episodes", "record_episode"]

_PNG_PREFIX = "data:image/png;base64,"


@dataclass
class Turn:
    """One turn as the exporters draw it; ``frame`` is a frame description, an rgb array or
    ``None`` (then the observation is drawn as a card)."""

    observation: str | None
    reply: str | None
    parsed_actions: list[str] = field(default_factory=list)
    reward: float | None = None
    frame: Any = None


@dataclass
class Episode:
    """An episode normalised from any accepted shape: a title, its turns (the last may be a
    final state with no reply) and a summary (return, success, ...) for the header."""

    title: str
    turns: list[Turn]
    summary: dict[str, Any] = field(default_factory=dict)
    env_id: str | None = None
    agent: str | None = None


def _decode_frame(value: Any) -> Any:
    if value is None or isinstance(value, (GridFrame, TextFrame)):
        return value
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, dict):
        return frame_from_dict(value)
    if isinstance(value, str):
        data = value[len(_PNG_PREFIX) :] if value.startswith(_PNG_PREFIX) else value
        image_module = require("PIL.Image", "render")
        image = image_module.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
        return np.asarray(image, dtype=np.uint8)
    if isinstance(value, list):
        return np.asarray(value, dtype=np.uint8)
    raise ValueError(f"cannot read a frame from {type(value).__name__}")


def _title(data: dict[str, Any]) -> str:
    parts = [str(data[key]) for key in ("env_id", "agent") if data.get(key) is not None]
    if data.get("seed") is not None:
        parts.append(f"seed {data['seed']}")
    return "  ".join(parts) or "episode"


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    keys = ("episode_return", "success", "turns", "num_turns", "actions", "truncation_reason")
    return {key: data[key] for key in keys if key in data}


def _turn(step: dict[str, Any]) -> Turn:
    info = step.get("info") if isinstance(step.get("info"), dict) else {}
    actions = step.get("parsed_actions", info.get("parsed_actions", []))
    reward = step.get("reward")
    reply = step.get("reply", step.get("action"))
    return Turn(
        observation=step.get("observation"),
        reply=None if reply is None else str(reply),
        parsed_actions=[str(action) for action in actions or []],
        reward=None if reward is None else float(reward),
        frame=_decode_frame(step.get("frame")),
    )


def episode_from_dict(data: dict[str, Any]) -> Episode:
    """An :class:`Episode` from one of the shapes in the module docstring."""
    if not isinstance(data, dict):
        raise ValueError(f"an episode must be a dict, got {type(data).__name__}")
    if isinstance(data.get("steps"), list):
        turns = [_turn(step) for step in data["steps"]]
        final_observation = data.get("final_observation")
        final_frame = data.get("final_frame")
    elif isinstance(data.get("replies"), list):
        replies = data["replies"]
        turns = [
            Turn(data.get("first_observation") if index == 0 else None, str(reply))
            for index, reply in enumerate(replies)
        ]
        final_observation, final_frame = data.get("last_observation"), None
    else:
        raise ValueError("an episode needs 'steps' (a list of turns) or 'replies' (leaderboard)")
    if final_observation or final_frame is not None:  # "" means not recorded
        turns.append(Turn(final_observation, None, frame=_decode_frame(final_frame)))
    env_id, agent = data.get("env_id"), data.get("agent")
    return Episode(
        _title(data),
        turns,
        _summary(data),
        None if env_id is None else str(env_id),
        None if agent is None else str(agent),
    )


def load_episodes(path: str | Path) -> list[Episode]:
    """Episodes from a ``.jsonl`` file (one per line) or a ``.json`` file (one or a list)."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix == ".json":
        loaded = json.loads(text)
        records = loaded if isinstance(loaded, list) else [loaded]
    else:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [episode_from_dict(record) for record in records]


def record_episode(
    env: Any, replies: Iterable[str], *, seed: int | None = None, options: dict | None = None
) -> dict[str, Any]:
    """Play ``replies`` on ``env`` (whose unwrapped env has ``frame()``) from
    ``reset(seed=seed)`` until they run out or the episode ends; the episode dict, with
    frame descriptions, in the shape the exporters read."""
    base = env.unwrapped
    observation, info = env.reset(seed=seed, options=options)
    steps = []
    for reply in replies:
        frame = frame_to_dict(base.frame())
        next_observation, reward, terminated, truncated, info = env.step(reply)
        steps.append(
            {
                "observation": observation,
                "reply": reply,
                "parsed_actions": list(info.get("parsed_actions", [])),
                "reward": float(reward),
                "frame": frame,
            }
        )
        observation = next_observation
        if terminated or truncated:
            break
    return {
        "env_id": None if env.spec is None else env.spec.id,
        "seed": seed,
        "steps": steps,
        "final_observation": observation,
        "final_frame": frame_to_dict(base.frame()),
        "episode_return": round(sum(step["reward"] for step in steps), 6),
        "success": bool(info.get("success", False)),
    }
