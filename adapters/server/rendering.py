"""A session drawn by `agent_envs.renderers`: its state as a PNG, its episode as an HTML replay.

What a client sent may be any text (lone surrogates included) and vision ids observe
``{"text", "image"}``: the replay is given text only, with lone surrogates shown as U+FFFD.
Before a reset there is nothing to draw (409 ``reset_needed``); a renderer that raises anyway
is answered 422 ``render_failed`` with its message (and logged), never a dropped connection.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from typing import Any

from agent_envs.adapters.server.errors import Refused
from agent_envs.adapters.server.sessions import Session, make_env, text_of

from agent_envs.optional import require

__all__ = ["png", "replay_page"]

LOG = logging.getLogger("agent_envs.adapters.server")


def png(session: Session) -> bytes | None:
    """The current state as a PNG; ``None`` when the env draws no frames."""
    if not session.reset_done:
        raise Refused(
            "nothing to draw before the first reset: POST /sessions/{id}/reset first",
            status=409,
            kind="reset_needed",
        )
    base = session.env.unwrapped
    if not hasattr(base, "frame"):
        return None
    with _render_errors(session):
        try:
            frame = base.frame()
        except NotImplementedError:
            return None
        from agent_envs.renderers.raster import draw

        image_module = require("PIL.Image", "render")
        buffer = io.BytesIO()
        image_module.fromarray(draw(frame)).save(buffer, format="PNG")
        return buffer.getvalue()


def replay_page(session: Session) -> bytes:
    """The episode so far as an HTML replay (UTF-8), with frames when the env draws them
    (replayed on a fresh env from the seed and the replies)."""
    from agent_envs.renderers.replay import replay_html

    with session.lock:
        episode = session.episode()
        replies = list(session.replies)
    with _render_errors(session):
        if session.seed is not None and hasattr(session.env.unwrapped, "frame"):
            from agent_envs.renderers.episodes import record_episode

            env = make_env(session.env_id, session.env_kwargs, (session.env_id,))
            try:
                episode = {
                    **record_episode(env, replies, seed=session.seed, options=session.options),
                    "env_id": session.env_id,
                }
            except NotImplementedError:
                pass
            finally:
                env.close()
        title = f"{session.env_id} session {session.id[:8]}"
        page = replay_html([_printable(episode)], title=title)
        return page.encode("utf-8", "replace")


@contextlib.contextmanager
def _render_errors(session: Session) -> Iterator[None]:
    """Any exception of the renderers -> `Refused` 422 ``render_failed`` (logged)."""
    try:
        yield
    except Refused:
        raise
    except Exception as error:
        LOG.warning("rendering %s failed", session.env_id, exc_info=error)
        raise Refused(
            f"the renderer could not draw this {session.env_id} session: "
            f"{type(error).__name__}: {error}",
            status=422,
            kind="render_failed",
        ) from error


def _printable(episode: dict[str, Any]) -> dict[str, Any]:
    """The episode with text observations and replies free of lone surrogates."""
    steps = [
        {
            **step,
            "observation": _clean(text_of(step.get("observation", ""))),
            "reply": _clean(text_of(step.get("reply", ""))),
        }
        for step in episode.get("steps", [])
    ]
    final = _clean(text_of(episode.get("final_observation", "")))
    return {**episode, "steps": steps, "final_observation": final}


def _clean(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
