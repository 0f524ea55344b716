"""The episode shapes the exporters read (GIF/MP4, HTML replay), and how they are read.

The exporters take plain dicts (or any record with a ``to_dict()``), not a record class, so
they work with any trajectory store.
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
list), or a PNG as a ``data:image/png;base64,...`` URL. Steps without a frame show their
observation as text (the GIF draws it as a text card).

This is also the JSON shape of a trajectory record (``steps`` with ``observation``,
``reply``, ``parsed_actions``, ``reward``, ``info``; ``final_observation``; extra keys such
as token ids are ignored).

**Trajectory records** (`agent_envs.core.records.Trajectory`, or any object with a
``to_dict()`` giving the dict above) are read through that dict.

**Vision observations** ``{"text": ..., "image": ...}`` (the ``grl/*-vision-v0`` ids) are
read as their text, with the image as the turn's frame when the step has none.

**Leaderboard episodes** (``runs/leaderboard/episodes.jsonl``, `agent_envs.benchmarks.leaderboard`'s
``Episode``: ``first_observation``, ``replies``, ``last_observation``, ``episode_return``,
...) are read too: the first turn shows ``first_observation``, later turns show only the
reply (their observations are not recorded), and ``last_observation`` is the final state.

:func:`load_episodes` reads a ``.jsonl`` file (one episode per line) or a ``.json`` file
(one episode or a list); :func:`as_episode` normalises one episode of any shape.

**Frames for records that hold none** (leaderboard runs, collector trajectories): play the
recorded replies again on the episode's env. :func:`replay_frames` returns the frame
descriptions (one per turn, the state the model saw, plus the final state), checking the
replay against the recorded rewards and observations; :func:`attach_frames` puts a list of
frames on an episode, keeping its recorded text; :func:`with_replayed_frames` does both (and
refuses a record without a seed)::

    env = gymnasium.make(trajectory.env_id)           # with the run's env settings
    episode = with_replayed_frames(trajectory, env)   # an Episode with a frame on every turn
    write_replay([episode], "replay.html")

:func:`record_episode` plays replies on an env that has a ``frame()`` method and returns an
episode dict with frames (the replayed text, not a record's).
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.renderers.frames import GridFrame, TextFrame, frame_from_dict, frame_to_dict

from agent_envs.optional import require

__all__ = [
    "Episode",
    "Turn",
    "as_episode",
    "attach_frames",
    "episode_from_dict",
    "load_episodes",
    "record_episode",
    "replay_frames",
    "with_replayed_frames",
]

_PNG_PREFIX = "data:image/png;base64,"


@dataclass
class Turn:
    """One turn as the exporters draw it; ``frame`` is a frame description, an rgb array or
    ``None`` (then the observation is shown as text)."""

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
    seed: int | None = None

    @property
    def played(self) -> list[Turn]:
        """The turns with a reply (without the final state)."""
        return [turn for turn in self.turns if turn.reply is not None]


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


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    try:
        return str(value)
    except Exception:  # a broken __str__ is shown as its type
        return f"<{type(value).__name__}>"


def _observation(value: Any) -> tuple[str | None, Any]:
    """An observation's text and, for a vision observation ``{"text", "image"}``, its image."""
    if isinstance(value, dict) and "text" in value:
        image = value.get("image")
        return _text(value["text"]), None if image is None else _decode_frame(image)
    return _text(value), None


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _title(data: dict[str, Any]) -> str:
    parts = [str(data[key]) for key in ("env_id", "agent") if data.get(key) is not None]
    if data.get("seed") is not None:
        parts.append(f"seed {data['seed']}")
    return "  ".join(parts) or "episode"


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    keys = ("episode_return", "success", "turns", "num_turns", "actions", "truncation_reason")
    return {key: data[key] for key in keys if key in data}


def _turn(step: Any) -> Turn:
    step = step if isinstance(step, dict) else {"observation": step}
    info = step.get("info") if isinstance(step.get("info"), dict) else {}
    actions = step.get("parsed_actions", info.get("parsed_actions", []))
    if isinstance(actions, str) or not isinstance(actions, Iterable):
        actions = [actions]
    reply = step.get("reply", step.get("action"))
    observation, image = _observation(step.get("observation"))
    frame = _decode_frame(step.get("frame"))
    return Turn(
        observation=observation,
        reply=_text(reply),
        parsed_actions=[_text(action) or "" for action in actions],
        reward=_number(step.get("reward")),
        frame=image if frame is None else frame,
    )


def _record_dict(source: Any) -> Any:
    """A record object's dict (anything with ``to_dict()``, e.g. a ``Trajectory``)."""
    to_dict = getattr(source, "to_dict", None)
    return to_dict() if callable(to_dict) and not isinstance(source, dict) else source


def episode_from_dict(data: dict[str, Any]) -> Episode:
    """An :class:`Episode` from one of the shapes in the module docstring."""
    data = _record_dict(data)
    if not isinstance(data, dict):
        raise ValueError(f"an episode must be a dict, got {type(data).__name__}")
    if isinstance(data.get("steps"), list):
        turns = [_turn(step) for step in data["steps"]]
        final_observation, final_image = _observation(data.get("final_observation"))
        final_frame = _decode_frame(data.get("final_frame"))
        final_frame = final_image if final_frame is None else final_frame
    elif isinstance(data.get("replies"), list):
        replies = data["replies"]
        first = _observation(data.get("first_observation"))[0]
        turns = [
            Turn(first if index == 0 else None, _text(reply)) for index, reply in enumerate(replies)
        ]
        final_observation, final_frame = _observation(data.get("last_observation"))
    else:
        raise ValueError("an episode needs 'steps' (a list of turns) or 'replies' (leaderboard)")
    if final_observation or final_frame is not None:  # "" means not recorded
        turns.append(Turn(final_observation, None, frame=final_frame))
    env_id, agent, seed = data.get("env_id"), data.get("agent"), data.get("seed")
    return Episode(
        _title(data),
        turns,
        _summary(data),
        None if env_id is None else str(env_id),
        None if agent is None else str(agent),
        seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


def as_episode(source: Episode | dict[str, Any] | Any) -> Episode:
    """One episode of any accepted shape (an :class:`Episode`, a dict, a record with
    ``to_dict()``) as an :class:`Episode`."""
    return source if isinstance(source, Episode) else episode_from_dict(source)


def load_episodes(path: str | Path) -> list[Episode]:
    """Episodes from a ``.jsonl`` file (one per line) or a ``.json`` file (one or a list)."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix == ".json":
        loaded = json.loads(text)
        records = loaded if isinstance(loaded, list) else [loaded]
    else:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [episode_from_dict(record) for record in records]


def attach_frames(source: Episode | dict[str, Any] | Any, frames: Sequence[Any]) -> Episode:
    """``source`` (any accepted shape) with ``frames`` on its turns: ``frames[i]`` is the
    frame turn ``i`` shows (the state the model saw), and a frame past the last turn is the
    final state's. ``None`` keeps a turn's own frame. The recorded text stays as it is.

    Raises ``ValueError`` unless there is one frame per turn, or one more."""
    episode = as_episode(source)
    played = episode.played
    if len(frames) not in (len(played), len(played) + 1):
        raise ValueError(
            f"frames: expected {len(played)} (one per turn) or {len(played) + 1} (and the "
            f"final state), got {len(frames)}"
        )
    turns = [
        turn if frame is None else replace(turn, frame=_decode_frame(frame))
        for turn, frame in zip(played, frames, strict=False)
    ]
    final = next((turn for turn in episode.turns if turn.reply is None), None)
    if len(frames) > len(played) and frames[-1] is not None:
        final = Turn(None, None) if final is None else final
        final = replace(final, frame=_decode_frame(frames[-1]))
    return replace(episode, turns=turns + ([] if final is None else [final]))


def _play(
    env: Any, replies: Iterable[str], seed: int | None, options: dict | None
) -> tuple[list[dict[str, Any]], Any, dict[str, Any], dict[str, Any]]:
    """Play ``replies`` from ``reset(seed, options)`` until they run out or the episode ends:
    the steps (with frame dicts), the last observation, the final frame dict and last info."""
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
    return steps, observation, frame_to_dict(base.frame()), info


def replay_frames(
    env: Any,
    replies: Sequence[str],
    *,
    seed: int | None = None,
    options: dict | None = None,
    rewards: Sequence[float | None] | None = None,
    observations: Sequence[str | None] | None = None,
) -> list[dict[str, Any]]:
    """The frame dicts of ``replies`` played on ``env`` (whose unwrapped env has
    ``frame()``) from ``reset(seed=seed, options=options)``: one per turn (the state the model
    saw before replying) and the final state, ready for :func:`attach_frames`.

    With ``rewards`` and ``observations`` (the recorded ones; ``None`` entries are not
    checked), a replay that does not reproduce the record (another reward or observation on
    some turn, or another number of turns) raises ``ValueError`` naming the turn: its pictures
    would not show the recorded episode."""
    steps, _, final, _ = _play(env, replies, seed, options)
    for index, (step, recorded) in enumerate(zip(steps, observations or (), strict=False)):
        shown = _observation(step["observation"])[0]
        if recorded is not None and shown != recorded:
            raise ValueError(
                f"turn {index + 1}: the replay shows another observation than the record "
                "(another seed, options or env settings?); not the recorded episode"
            )
    if rewards is not None:
        if len(steps) != len(rewards):
            raise ValueError(
                f"the replay ended after {len(steps)} turns; the record has {len(rewards)}"
            )
        for index, (step, recorded) in enumerate(zip(steps, rewards, strict=True)):
            if recorded is not None and not math.isclose(
                step["reward"], recorded, rel_tol=1e-9, abs_tol=1e-12
            ):
                raise ValueError(
                    f"turn {index + 1}: the replay earns {step['reward']!r}, the record "
                    f"{recorded!r}; not the recorded episode"
                )
    return [step["frame"] for step in steps] + [final]


def with_replayed_frames(
    source: Episode | dict[str, Any] | Any, env: Any, *, options: dict | None = None
) -> Episode:
    """``source`` (a trajectory record or any accepted shape) with a frame on every turn and
    on the final state, drawn by playing its replies again on ``env`` from its seed (see
    :func:`replay_frames`, whose ``ValueError`` it raises when the replay differs)."""
    episode = as_episode(source)
    if episode.seed is None:
        raise ValueError(f"{episode.title}: a record without a seed cannot be played again")
    played = episode.played
    frames = replay_frames(
        env,
        [turn.reply or "" for turn in played],
        seed=episode.seed,
        options=options,
        rewards=[turn.reward for turn in played],
        observations=[turn.observation for turn in played],
    )
    return attach_frames(episode, frames)


def record_episode(
    env: Any, replies: Iterable[str], *, seed: int | None = None, options: dict | None = None
) -> dict[str, Any]:
    """Play ``replies`` on ``env`` (whose unwrapped env has ``frame()``) from
    ``reset(seed=seed)`` until they run out or the episode ends; the episode dict, with
    frame descriptions, in the shape the exporters read."""
    steps, observation, final, info = _play(env, replies, seed, options)
    return {
        "env_id": None if env.spec is None else env.spec.id,
        "seed": seed,
        "steps": steps,
        "final_observation": observation,
        "final_frame": final,
        "episode_return": round(sum(step["reward"] for step in steps), 6),
        "success": bool(info.get("success", False)),
    }
