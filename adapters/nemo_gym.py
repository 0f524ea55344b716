"""NeMo Gym: any ``grl/*`` id behind NeMo Gym's Gymnasium resource-server protocol.

NeMo Gym (``nemo-gym``) does not install on this project's Python: its releases need Python
3.10 exactly (0.1.0), >= 3.12 (0.2.0-0.4.0) or >= 3.13.14 (0.5.0 on), and ours is 3.11. So
this module serves the protocol itself, as NeMo Gym documents it for its ``GymnasiumServer``
resource servers (``resources_servers/gymnasium``) and drives it from its
``gymnasium_agent``, with FastAPI (the ``[server]`` extra)::

    from agent_envs.adapters.nemo_gym import create_nemo_gym_app, make_nemo_gym_dataset
    app = create_nemo_gym_app()                    # serve with uvicorn, or mount it
    rows = make_nemo_gym_dataset("grl/Sokoban-v0", seeds=range(100))  # the JSONL rows

**The protocol** (one episode per session; the session is a cookie the server sets on
``/reset``, which the agent sends back, as NeMo Gym's session middleware does):

- ``POST /reset`` with a dataset row ``{"responses_create_params": {...}, "env_id", "seed",
  "env_kwargs"}`` (NeMo Gym passes the row's extra fields as the env's metadata): resets the
  env; answers ``{"observation": first observation, "info": {..., "supports_explicit_close":
  true}}``. The agent appends the observation to the row's input as a user message (the row's
  input holds the instructions as the system message).
- ``POST /step`` with the row plus ``"response"``, the model's reply as a Responses-API
  response (the text of its ``output`` messages' ``output_text`` parts, joined, is the
  reply): one ``env.step``; answers ``{"observation", "reward", "terminated", "truncated",
  "info"}`` (the env's info, JSON-safe). The observation is the next user message; after the
  last turn it is the final observation.
- ``POST /close``: ends the session (the agent calls it when ``/reset`` advertised it; a
  session also ends with its episode).
- ``POST /aggregate_metrics`` with ``{"verify_responses": [{"reward": ...}, ...]}``: mean
  reward and success rate, in NeMo Gym's ``AggregateMetrics`` shape.

Sessions are bounded (``max_sessions``; the oldest idle session is dropped beyond it) and
requests are plain JSON; a bad row is a 422 and an unknown or ended session a 404, with
``{"error": {"type", "message"}}``. Bind it to 127.0.0.1 unless it sits behind an
authenticating proxy: the protocol has no authentication of its own.

(No ``from __future__ import annotations`` here: FastAPI reads the endpoints' ``Request``
annotations, which name the ``fastapi`` module imported inside :func:`create_nemo_gym_app`.)
"""

import math
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from agent_envs.core.records import json_safe
from agent_envs.optional import require

__all__ = ["SESSION_COOKIE", "create_nemo_gym_app", "make_nemo_gym_dataset", "reply_text"]

#: the cookie that carries a session between ``/reset``, ``/step`` and ``/close``
SESSION_COOKIE = "agent_envs_nemo_gym_session"


def reply_text(response: Any) -> str:
    """The reply in a Responses-API ``response``: its ``output`` messages' ``output_text``
    parts (and plain string contents), joined, as NeMo Gym's ``extract_text`` reads it."""
    if not isinstance(response, dict):
        return ""
    parts = []
    for item in response.get("output") or ():
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [
                part.get("text") or ""
                for part in content
                if isinstance(part, dict) and part.get("type") == "output_text"
            ]
    return "".join(parts)


def make_nemo_gym_dataset(
    env_id: str, seeds: Iterable[int], **env_kwargs: Any
) -> list[dict[str, Any]]:
    """One NeMo Gym JSONL row per seed: ``responses_create_params`` whose input is the env's
    instructions as the system message (the first observation comes from ``/reset``), and
    the metadata ``env_id``, ``seed`` and ``env_kwargs``."""
    env = _make(env_id, env_kwargs)
    instructions = env.unwrapped.instructions
    env.close()
    return [
        {
            "responses_create_params": {"input": [{"role": "system", "content": instructions}]},
            "env_id": env_id,
            "seed": int(seed),
            "env_kwargs": json_safe(dict(env_kwargs)),
        }
        for seed in seeds
    ]


def _make(env_id: str, env_kwargs: dict[str, Any]) -> Any:
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    if not isinstance(env_id, str) or not env_id.startswith("grl/"):
        raise ValueError(f"env_id must be a grl/* id, got {env_id!r}")
    return gymnasium.make(env_id, **env_kwargs)


class _Sessions:
    """At most ``limit`` live episodes, the least recently used dropped beyond it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._envs: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, env: Any) -> str:
        key = secrets.token_urlsafe(24)
        with self._lock:
            self._envs[key] = env
            while len(self._envs) > self.limit:
                _, old = self._envs.popitem(last=False)
                old.close()
        return key

    def get(self, key: str | None) -> Any:
        with self._lock:
            env = self._envs.get(key or "")
            if env is not None:
                self._envs.move_to_end(key)
            return env

    def close(self, key: str | None) -> bool:
        with self._lock:
            env = self._envs.pop(key or "", None)
        if env is not None:
            env.close()
        return env is not None


def create_nemo_gym_app(*, max_sessions: int = 1024) -> Any:
    """The FastAPI app serving every ``grl/*`` id over NeMo Gym's Gymnasium resource-server
    protocol (module docstring); ``max_sessions`` live episodes at most."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"max_sessions must be a positive int, got {max_sessions!r}")
    fastapi = require("fastapi", "server", needed_by="the NeMo Gym resource server")
    responses = require("fastapi.responses", "server", needed_by="the NeMo Gym resource server")
    JSONResponse = responses.JSONResponse
    sessions = _Sessions(max_sessions)
    app = fastapi.FastAPI(title="agent-envs: NeMo Gym Gymnasium resource server")

    def error(status: int, kind: str, message: str) -> Any:
        return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)

    async def body_of(request: Any) -> dict[str, Any] | None:
        try:
            body = await request.json()
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    @app.post("/reset")
    async def reset(request: fastapi.Request) -> Any:
        row = await body_of(request)
        if row is None or not isinstance(row.get("responses_create_params"), dict):
            return error(
                422, "invalid_request", "the body must be a row with responses_create_params"
            )
        env_kwargs = row.get("env_kwargs") or {}
        seed = row.get("seed")
        if not isinstance(env_kwargs, dict) or not (seed is None or isinstance(seed, int)):
            return error(422, "invalid_request", "env_kwargs must be an object, seed an int")
        try:
            env = _make(row.get("env_id"), env_kwargs)
            observation, info = env.reset(seed=seed)
        except Exception as failure:  # an unknown id or a bad argument is the row's fault
            return error(422, "bad_env", f"{type(failure).__name__}: {failure}")
        response = JSONResponse(
            {
                "observation": observation,
                "info": {**json_safe(info), "supports_explicit_close": True},
            }
        )
        previous = request.cookies.get(SESSION_COOKIE)
        if previous:
            sessions.close(previous)
        response.set_cookie(SESSION_COOKIE, sessions.open(env), httponly=True, samesite="strict")
        return response

    @app.post("/step")
    async def step(request: fastapi.Request) -> Any:
        body = await body_of(request)
        if body is None:
            return error(422, "invalid_request", "the body must be a JSON object")
        key = request.cookies.get(SESSION_COOKIE)
        env = sessions.get(key)
        if env is None:
            return error(404, "unknown_session", "no live episode for this session; /reset first")
        observation, reward, terminated, truncated, info = env.step(
            reply_text(body.get("response"))
        )
        if terminated or truncated:  # the episode is over: its session ends (as in NeMo Gym)
            sessions.close(key)
        return {
            "observation": observation,
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": json_safe(info),
        }

    @app.post("/close")
    async def close(request: fastapi.Request) -> Any:
        closed = sessions.close(request.cookies.get(SESSION_COOKIE))
        return {"closed": closed}

    @app.post("/aggregate_metrics")
    async def aggregate_metrics(request: fastapi.Request) -> Any:
        body = await body_of(request)
        results = (body or {}).get("verify_responses")
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            return error(422, "invalid_request", "verify_responses must be a list of objects")
        rewards = [float(result.get("reward", 0.0)) for result in results]
        successes = [bool((result.get("info") or {}).get("success")) for result in results]
        count = len(rewards)
        metrics = {
            "num_rollouts": count,
            "mean/reward": math.fsum(rewards) / count if count else 0.0,
            "mean/success": sum(successes) / count if count else 0.0,
        }
        return {"group_level_metrics": [], "agent_metrics": metrics, "key_metrics": metrics}

    return app
