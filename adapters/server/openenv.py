"""Any ``grl/*`` id as an OpenEnv environment (``openenv-core``), for OpenEnv's clients and
TRL's OpenEnv integration.

``agent-envs serve --openenv grl/Sokoban-v0 --port 8001`` (or
:func:`create_openenv_app` under uvicorn) serves the id through OpenEnv's own server: each
WebSocket connection at ``/ws`` is one session with its own env, up to
``max_concurrent_envs`` at once (default 64; a GRPO trainer needs at least its
``num_generations``), and OpenEnv's stateless ``/reset``, ``/state``, ``/schema`` and
``/health`` routes are there too. OpenEnv's stateless ``POST /step`` runs on a fresh env that
was never reset, which cannot play a turn of ours: it answers 409 naming the fix (play over
``/ws``). Reset and step fields that OpenEnv passes through (``seed``, ``episode_id``,
``options``; ``timeout_s``, ``request_id``) are read, any other is refused (422), so a
misspelled ``sed`` is not silently dropped.

The app is behind the same guard as ours (`agent_envs.adapters.server.guard`): the tokens
(OpenEnv's clients send no header, so put the token in the URL:
``GenericEnvClient(base_url="http://me:TOKEN@host:8001")``, sent as HTTP Basic), the body cap,
the read and idle timeouts, ``max_sessions_per_client`` WebSockets per client.

The messages:

- action :class:`TextAction`: ``{"message": reply}`` (the model's whole reply for the turn);
- observation :class:`TextObservation`: ``text`` (what the model reads next), ``info`` (the
  env's info dict, the same keys as a local env), ``terminated``, ``truncated``, and on reset
  the env's ``instructions`` (the system prompt); OpenEnv's ``reward`` and ``done``
  (``terminated or truncated``) sit beside it;
- reset data: ``seed`` and ``options`` as in ``env.reset``.

With OpenEnv's generic client::

    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url="http://127.0.0.1:8001").sync() as env:
        first = env.reset(seed=3)            # first.observation["text"]
        result = env.step({"message": "<answer>Up</answer>"})
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_envs.adapters.server.limits import Limits
from agent_envs.adapters.server.sessions import make_env

from agent_envs.optional import require

__all__ = ["TextAction", "TextEnvironment", "TextObservation", "create_openenv_app"]

# The classes below subclass OpenEnv's, so importing this module needs openenv-core (the
# package agent_envs.adapters.server imports it only for `agent-envs serve --openenv`).
_OPENENV = "serving through OpenEnv"
Environment = require(
    "openenv.core.env_server.interfaces", "server", needed_by=_OPENENV
).Environment
_types = require("openenv.core.env_server.types", "server", needed_by=_OPENENV)
Action, Observation, State = _types.Action, _types.Observation, _types.State
Field = require("pydantic", "server", needed_by=_OPENENV).Field
HTTPException = require("fastapi", "server", needed_by=_OPENENV).HTTPException


class TextAction(Action):
    """One turn: the model's whole reply."""

    message: str = Field(description="the model's whole reply for this turn")


class TextObservation(Observation):
    """What the env shows after a reset or a step."""

    text: str = Field(description="the observation the model reads next")
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict")
    terminated: bool = False
    truncated: bool = False
    instructions: str | None = Field(default=None, description="the system prompt (on reset)")


class TextEnvironment(Environment[TextAction, TextObservation, State]):
    """One ``grl/*`` env behind OpenEnv's `Environment` interface (one per session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.env_id = env_id
        self.env = make_env(env_id, dict(env_kwargs or {}), ("grl/",))
        self._state = State(episode_id=None, step_count=0)
        self._reset = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> TextObservation:
        from agent_envs.core.records import json_safe

        _refuse_unknown("reset", unknown, ("seed", "episode_id", "options"))
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise HTTPException(422, detail=f"seed must be an int >= 0 or null, got {seed!r}")
        if options is not None and not isinstance(options, dict):
            raise HTTPException(422, detail="options must be an object or null")
        try:
            observation, info = self.env.reset(seed=seed, options=options)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            detail = f"reset refused: {type(error).__name__}: {error}"
            raise HTTPException(422, detail=detail) from error
        self._reset = True
        self._state = State(episode_id=episode_id, step_count=0)
        return TextObservation(
            text=observation,
            info=json_safe(info),
            instructions=getattr(self.env.unwrapped, "instructions", None),
            reward=None,
            done=False,
        )

    def step(
        self,
        action: TextAction,
        timeout_s: float | None = None,
        request_id: str | None = None,
        **unknown: Any,
    ) -> TextObservation:
        from agent_envs.core.records import json_safe

        _refuse_unknown("step", unknown, ("action", "timeout_s", "request_id"))
        if not self._reset:
            raise HTTPException(
                409,
                detail="this env was never reset: OpenEnv's HTTP POST /step runs each request "
                "on a fresh env, so play episodes over the WebSocket at /ws (reset, then step), "
                "as OpenEnv's clients (GenericEnvClient) and TRL do",
            )
        observation, reward, terminated, truncated, info = self.env.step(action.message)
        self._state.step_count += 1
        return TextObservation(
            text=observation,
            info=json_safe(info),
            terminated=bool(terminated),
            truncated=bool(truncated),
            reward=float(reward),
            done=bool(terminated or truncated),
        )

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self.env.close()


def _refuse_unknown(what: str, given: dict[str, Any], known: Sequence[str]) -> None:
    if given:
        raise HTTPException(
            422, detail=f"unknown {what} field(s) {sorted(given)}; known: {', '.join(known)}"
        )


def create_openenv_app(
    env_id: str,
    *,
    max_concurrent_envs: int = 64,
    token: str | Sequence[str] | None = None,
    limits: Limits | None = None,
    **env_kwargs: Any,
) -> Any:
    """OpenEnv's FastAPI app serving ``env_id`` (built with ``env_kwargs``), behind the guard
    with ``token`` (`agent_envs.adapters.server.auth`; ``None``: no authentication) and
    ``limits`` (default ``Limits()``); an unknown id or bad kwargs raise here, before anything
    is served."""
    from agent_envs.adapters.server.app import protect
    from agent_envs.adapters.server.auth import Clients
    from openenv.core.env_server.http_server import create_app

    if isinstance(max_concurrent_envs, bool) or not isinstance(max_concurrent_envs, int):
        raise ValueError(f"max_concurrent_envs must be a positive int, got {max_concurrent_envs!r}")
    if max_concurrent_envs < 1:
        raise ValueError(f"max_concurrent_envs must be a positive int, got {max_concurrent_envs!r}")
    clients = Clients(token)
    TextEnvironment(env_id, env_kwargs).close()  # fail now, naming the id or kwargs

    def factory() -> TextEnvironment:
        return TextEnvironment(env_id, env_kwargs)

    app = create_app(
        factory,
        TextAction,
        TextObservation,
        env_name=env_id,
        max_concurrent_envs=max_concurrent_envs,
    )
    return protect(app, clients, Limits() if limits is None else limits)
