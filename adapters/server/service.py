"""The session operations that the HTTP routes and the WebSocket messages share: create,
attach, reset, step and close, each taking a validated request body
(`agent_envs.adapters.server.models`) and returning the reply's JSON value or raising
`agent_envs.adapters.server.errors.Refused`.

What a client gets wrong is a 4xx: a seed below 0 or reset options the env refuses (422
``bad_reset``), a step before the first reset (409 ``reset_needed``), a reply past the
session's byte cap (413 ``session_full``), a path outside the data roots (403). An env that
raises on input it should have taken is a bug: 500 ``env_error``, logged with its traceback.
"""

from __future__ import annotations

import logging
from typing import Any

import gymnasium
from agent_envs.adapters.server.errors import Refused
from agent_envs.adapters.server.limits import Limits
from agent_envs.adapters.server.models import CreateSession, ResetRequest, StepRequest
from agent_envs.adapters.server.runner import Runner
from agent_envs.adapters.server.sessions import Session, SessionStore

__all__ = ["SessionService", "env_error"]

LOG = logging.getLogger("agent_envs.adapters.server")
#: what an env raises on reset options it cannot use (they come from the client)
_OPTION_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, LookupError)


def env_error(session: Session, what: str, error: Exception) -> Refused:
    """A 500 for an env that raised where it should not have (logged with the traceback)."""
    LOG.error("%s %s raised", session.env_id, what, exc_info=error)
    return Refused(
        f"{session.env_id} {what} raised {type(error).__name__}: {error}",
        status=500,
        kind="env_error",
    )


class SessionService:
    """Session operations over a `SessionStore`, env calls through a `Runner`."""

    def __init__(self, store: SessionStore, runner: Runner, limits: Limits) -> None:
        self.store = store
        self.runner = runner
        self.limits = limits

    async def create(self, client: str, request: CreateSession) -> Session:
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(
            self.store.create, request.env_id, request.env_kwargs, client
        )

    def get(self, session_id: str, client: str) -> Session:
        return self.store.get(session_id, client)

    async def reset(self, session: Session, request: ResetRequest) -> dict[str, Any]:
        seed, options = request.seed, request.options
        self.store.data_roots.check_options(options)
        refusable = _OPTION_ERRORS if options else (ValueError, TypeError)
        try:
            observation, info = await self.runner.run(
                session, session.env.reset, seed=seed, options=options
            )
        except (gymnasium.error.Error, *refusable) as error:
            raise Refused(
                f"{session.env_id} refused this reset: {type(error).__name__}: {error}",
                status=422,
                kind="bad_reset",
            ) from error
        except Exception as error:
            raise env_error(session, "reset", error) from error
        session.started(info.get("episode_seed", seed), options, observation)
        return {"observation": observation, "info": info}

    async def step(self, session: Session, request: StepRequest) -> dict[str, Any]:
        action = request.action
        session.admit(action, self.limits.max_session_bytes)
        try:
            result = await self.runner.run(session, session.env.step, action)
        except gymnasium.error.ResetNeeded as error:
            raise Refused(
                f"{error}: POST /sessions/{{id}}/reset (or send 'reset') before stepping",
                status=409,
                kind="reset_needed",
            ) from error
        except Exception as error:
            raise env_error(session, "step", error) from error
        observation, reward, terminated, truncated, info = result
        session.stepped(action, observation, float(reward), info, bool(terminated or truncated))
        return {
            "observation": observation,
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": info,
        }

    async def close(self, session_id: str, client: str) -> dict[str, Any]:
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(self.store.close, session_id, client)
        return {"closed": session_id}

    @staticmethod
    def describe(session: Session) -> dict[str, Any]:
        """What a client learns about a new session (the reply to create)."""
        base = session.env.unwrapped
        return {
            "session_id": session.id,
            "env_id": session.env_id,
            "instructions": getattr(base, "instructions", ""),
            "observation_space": _text_space(session.env.observation_space),
            "action_space": _text_space(session.env.action_space),
            "metadata": _json_metadata(session.env.metadata),
            "render_mode": session.env.render_mode,
            "reset_options": list(getattr(base, "reset_options", ())),
        }


def _text_space(space: Any) -> dict[str, Any] | None:
    if not hasattr(space, "max_length"):
        return None
    return {
        "max_length": int(space.max_length),
        "min_length": int(space.min_length),
        "charset": "".join(space.character_set),
    }


def _json_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in metadata.items()
        if isinstance(value, (str, int, float, bool, list, type(None)))
    }
