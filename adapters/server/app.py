"""The env server: stateful sessions over HTTP (FastAPI on uvicorn).

Endpoints (the schemas are in ``GET /openapi.json``):

========================================  ================================================
``GET /health``                           ``{"status": "ok", "server_id", "sessions", ...}``
``GET /envs``                             the ids that may be served
``POST /sessions``                        ``{"env_id", "env_kwargs"}`` -> a new session
``GET /sessions``                         the live session ids
``POST /sessions/{id}/reset``             ``{"seed", "options"}`` -> ``observation, info``
``POST /sessions/{id}/step``              ``{"action"}`` -> ``observation, reward,
                                          terminated, truncated, info``
``GET /sessions/{id}/render?format=png``  the current state as a PNG (envs with frames)
``GET /sessions/{id}/render?format=html`` the episode so far as an HTML replay
``DELETE /sessions/{id}``                 close the session
``WS /ws``                                the same session calls as JSON messages on one
                                          connection (``{"op": "create" | "attach" |
                                          "reset" | "step" | "close", ...}``): no
                                          per-request HTTP cost, what `RemoteEnv` uses
``POST /rollouts``                        AgentGym-shaped batch: episodes of ``env`` for
                                          ``ids`` (seeds) against an OpenAI-compatible
                                          ``base_url``/``model``, up to ``max_round`` turns,
                                          returned as `Trajectory` records
========================================  ================================================

**Errors** are JSON, ``{"error": {"type": ..., "message": ...}}``, with a 4xx status, and the
server keeps serving: malformed JSON (400), a wrong or missing bearer token (401; on ``/ws``
the handshake is refused with 403), an unknown
env id or session (404), a step before reset (409), an expired session (410), a body over
``max_body_bytes`` (413, default 8 MiB: a reply of 1 Mi characters of any text fits, JSON
escapes included), bad env kwargs, reset options or field types (422), too many sessions
(429). An env that raises anyway answers 500 with the same shape.

**Execution.** Env calls run on the event loop while they are fast (the median of an env
id's last 15 calls within ``inline_budget``, default 2 ms, and its latest call under 25 times
that), in worker threads otherwise, so a slow env (a SQL query, a big search) does not stall
the other sessions for long (see `_Runner`). Env construction and the HTML replay always run
in a thread. Calls on one session never overlap.

**Sessions** expire after ``session_ttl`` idle seconds (see `agent_envs.adapters.server.sessions`);
the reaper runs every ``session_ttl / 4`` seconds (at most every second). A WebSocket that drops
leaves its session to the reaper, so a client can reconnect and ``attach`` to it. ``server_id`` in
``/health`` is new on every start, so a client can tell that the server restarted.
"""

# no `from __future__ import annotations`: FastAPI reads the route annotations at runtime
import asyncio
import collections
import contextlib
import hmac
import io
import json
import secrets
import statistics
import time
from typing import Any

from agent_envs.adapters.server.sessions import Session, SessionError, SessionStore

from agent_envs.optional import require

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

#: 8 MiB: a reply of 1 Mi characters fits whatever it holds (JSON escapes at most 6 bytes a char)
DEFAULT_MAX_BODY_BYTES = 8 << 20
_OPEN_PATHS = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"error": {"type": kind, "message": message}}).encode()


def _dumps(value: Any) -> bytes:
    from agent_envs.core.records import json_safe

    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=True).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        return json.dumps(json_safe(value)).encode()


class _Guard:
    """ASGI middleware: the body size cap and the bearer token, answered before any route."""

    def __init__(self, app: Any, *, max_body_bytes: int, token: str | None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.expected = None if token is None else f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if self.expected is not None and not hmac.compare_digest(given, self.expected):
                await send({"type": "websocket.close", "code": 1008, "reason": "wrong token"})
                return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self.expected is not None and scope["path"] not in _OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                kind = "missing_token" if not given else "wrong_token"
                await _answer(
                    send, 401, kind, "a valid 'Authorization: Bearer <token>' is required"
                )
                return
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.max_body_bytes:
                await _answer(send, 413, "body_too_large", self._too_large(length.decode()))
                return
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:  # chunked upload: read it here, within the cap
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.max_body_bytes:
                await _answer(send, 413, "body_too_large", self._too_large(f"over {size}"))
                return
        body = b"".join(chunks)
        delivered = False

        async def replay() -> dict:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _too_large(self, size: str) -> str:
        return f"request body of {size} bytes is over the cap of {self.max_body_bytes} bytes"


async def _answer(send: Any, status: int, kind: str, message: str) -> None:
    body = _error_body(kind, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Refused(Exception):
    """A request refused with ``status``/``kind`` (the same on HTTP and WebSocket)."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class _Runner:
    """Runs env calls inline while they are fast, in worker threads while they are not.

    Per env id it keeps the durations of the last 15 calls (timed where they ran). Calls run
    on the event loop while the median of those is within ``inline_budget`` and the latest
    call took under 25 times that; otherwise in a thread. One slow call (a big query, or the
    process being preempted) sends the next call to a thread; a median back under budget
    brings the calls back inline.
    """

    def __init__(self, inline_budget: float) -> None:
        self.inline_budget = inline_budget
        self.durations: dict[str, collections.deque[float]] = {}
        self.slow: set[str] = set()

    def _timed(self, env_id: str, function: Any, args: tuple, kwargs: dict) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            window = self.durations.setdefault(env_id, collections.deque(maxlen=15))
            window.append(elapsed)
            slow = elapsed > 25 * self.inline_budget
            if slow or statistics.median(window) > self.inline_budget:
                self.slow.add(env_id)
            else:
                self.slow.discard(env_id)

    async def run(self, session: Session, function: Any, *args: Any, **kwargs: Any) -> Any:
        from starlette.concurrency import run_in_threadpool

        env_id = session.env_id
        if env_id not in self.slow and session.lock.acquire(blocking=False):
            try:
                return self._timed(env_id, function, args, kwargs)
            finally:
                session.lock.release()

        def locked() -> Any:
            with session.lock:
                return self._timed(env_id, function, args, kwargs)

        return await run_in_threadpool(locked)


def create_app(
    *,
    token: str | None = None,
    session_ttl: float = 600.0,
    max_sessions: int = 4096,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    prefixes: tuple[str, ...] = ("grl/",),
    inline_budget: float = 0.002,
) -> Any:
    """The FastAPI app (see the module docstring); serve it with uvicorn.

    Args:
        token: when given, every request but ``/health`` and the docs needs
            ``Authorization: Bearer <token>``.
        session_ttl: idle seconds before a session is reaped.
        max_sessions: live sessions at most.
        max_body_bytes: the request body cap.
        prefixes: env ids that may be served.
        inline_budget: seconds an env call may take and still run on the event loop.
    """
    require("fastapi", "server", needed_by="the env server")
    from fastapi import FastAPI, Path, Query, Request, WebSocket, WebSocketDisconnect
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import Response
    from pydantic import BaseModel, Field
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    for name, value in (("session_ttl", session_ttl), ("inline_budget", inline_budget)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"{name} must be a positive number, got {value!r}")
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int):
        raise ValueError(f"max_body_bytes must be a positive int, got {max_body_bytes!r}")
    if max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be a positive int, got {max_body_bytes!r}")
    if token is not None and (not isinstance(token, str) or not token):
        raise ValueError("token must be a non-empty string or None")

    store = SessionStore(ttl=session_ttl, max_sessions=max_sessions, prefixes=tuple(prefixes))
    runner = _Runner(float(inline_budget))
    server_id = secrets.token_hex(8)

    class CreateSession(BaseModel):
        env_id: str = Field(description="a registered id, e.g. grl/Sokoban-v0")
        env_kwargs: dict[str, Any] = Field(default_factory=dict)

    class ResetRequest(BaseModel):
        seed: int | None = None
        options: dict[str, Any] | None = None

    class StepRequest(BaseModel):
        action: str | None = Field(
            description="the model's whole reply for this turn (null: a non-text reply)"
        )

    class Sampling(BaseModel):
        temperature: float = 1.0
        top_p: float = 1.0
        seed: int | None = None

    class RolloutRequest(BaseModel):
        env: str = Field(description="env id, e.g. grl/Sokoban-v0")
        model: str
        base_url: str = Field(description="OpenAI-compatible API root, ending in /v1")
        ids: list[int] = Field(description="episode seeds, one group per id")
        max_round: int | None = Field(default=None, ge=1, description="turn limit")
        env_kwargs: dict[str, Any] = Field(default_factory=dict)
        group_size: int = Field(default=1, ge=1)
        max_new_tokens: int = Field(default=256, ge=1)
        sampling: Sampling = Field(default_factory=Sampling)
        api_key: str | None = None
        timeout: float = Field(default=60.0, gt=0)

    async def reaper() -> None:
        period = min(1.0, session_ttl / 4)
        while True:
            await asyncio.sleep(period)
            await run_in_threadpool(store.reap)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:
        task = asyncio.create_task(reaper())
        try:
            yield
        finally:
            task.cancel()
            store.close_all()

    app = FastAPI(
        title="agent-envs env server",
        description="Stateful sessions of the grl/* text environments.",
        lifespan=lifespan,
    )
    app.add_middleware(_Guard, max_body_bytes=max_body_bytes, token=token)
    app.state.store = store
    app.state.server_id = server_id

    def json_response(value: Any, status: int = 200) -> Response:
        return Response(_dumps(value), status_code=status, media_type="application/json")

    def error(status: int, kind: str, message: str) -> Response:
        return Response(_error_body(kind, message), status, media_type="application/json")

    @app.exception_handler(SessionError)
    async def on_session_error(_: Request, exc: SessionError) -> Response:
        return error(exc.status, exc.kind, exc.message)

    @app.exception_handler(RequestValidationError)
    async def on_validation(_: Request, exc: RequestValidationError) -> Response:
        problems = exc.errors()
        if any(problem.get("type") == "json_invalid" for problem in problems):
            return error(400, "malformed_json", "the request body is not valid JSON")
        text = "; ".join(
            f"{'.'.join(str(p) for p in problem.get('loc', ()))}: {problem.get('msg')}"
            for problem in problems
        )
        return error(422, "invalid_request", text)

    @app.exception_handler(HTTPException)
    async def on_http(_: Request, exc: HTTPException) -> Response:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, kind, str(exc.detail))

    @app.exception_handler(Exception)
    async def on_crash(_: Request, exc: Exception) -> Response:
        return error(500, "env_error", f"{type(exc).__name__}: {exc}")

    @app.get("/health")
    async def health() -> Response:
        return json_response(
            {
                "status": "ok",
                "server_id": server_id,
                "sessions": len(store),
                "max_sessions": store.max_sessions,
                "session_ttl": store.ttl,
                "max_body_bytes": max_body_bytes,
            }
        )

    @app.get("/envs")
    async def envs() -> Response:
        import gymnasium

        import agent_envs  # noqa: F401

        ids = [env_id for env_id in gymnasium.registry if env_id.startswith(store.prefixes)]
        return json_response({"env_ids": ids})

    @app.post("/sessions", status_code=201)
    async def create_session(request: CreateSession) -> Response:
        session = await run_in_threadpool(store.create, request.env_id, request.env_kwargs)
        return json_response(created(session), status=201)

    @app.get("/sessions")
    async def list_sessions() -> Response:
        return json_response({"session_ids": store.ids()})

    SessionId = Path(description="the id POST /sessions returned")

    def created(session: Session) -> dict[str, Any]:
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

    async def do_reset(session: Session, seed: Any, options: Any) -> dict[str, Any]:
        try:
            observation, info = await runner.run(
                session, session.env.reset, seed=seed, options=options
            )
        except (ValueError, TypeError) as exc:
            raise _Refused(422, "bad_reset", f"{type(exc).__name__}: {exc}") from exc
        session.started(info.get("episode_seed", seed), options, observation)
        return {"observation": observation, "info": info}

    async def do_step(session: Session, action: Any) -> dict[str, Any]:
        import gymnasium

        try:
            result = await runner.run(session, session.env.step, action)
        except gymnasium.error.ResetNeeded as exc:
            raise _Refused(409, "reset_needed", str(exc)) from exc
        observation, reward, terminated, truncated, info = result
        session.stepped(action, observation, float(reward), info)
        return {
            "observation": observation,
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": info,
        }

    @app.exception_handler(_Refused)
    async def on_refused(_: Request, exc: _Refused) -> Response:
        return error(exc.status, exc.kind, exc.message)

    @app.websocket("/ws")
    async def websocket_session(websocket: WebSocket) -> None:
        """One session per connection at a time, as JSON messages (see `_ws_reply`)."""
        await websocket.accept()
        state: dict[str, Session | None] = {"session": None}
        while True:
            try:
                message = await websocket.receive()
            except (WebSocketDisconnect, RuntimeError):
                return
            if message["type"] == "websocket.disconnect":
                return  # the session stays until closed or reaped: the client may come back
            data = message.get("bytes")
            if data is None:
                data = message.get("text") or ""
            try:
                reply = await ws_reply(state, data)
            except SessionError as exc:
                reply = {"error": {"type": exc.kind, "message": exc.message}}
            except _Refused as exc:
                reply = {"error": {"type": exc.kind, "message": exc.message}}
            except Exception as exc:  # an env that raised: report it, keep serving
                reply = {"error": {"type": "env_error", "message": f"{type(exc).__name__}: {exc}"}}
            await websocket.send_bytes(_dumps(reply))

    async def ws_reply(state: dict[str, Session | None], text: str | bytes) -> dict[str, Any]:
        """``{"op": "create", "env_id", "env_kwargs"}``, ``{"op": "attach", "session_id"}``,
        ``{"op": "reset", "seed", "options"}``, ``{"op": "step", "action"}``,
        ``{"op": "close"}``; the answer is the HTTP route's body or ``{"error": ...}``."""
        if len(text) > max_body_bytes:
            raise _Refused(413, "body_too_large", f"message over {max_body_bytes} bytes")
        try:
            message = json.loads(text)
        except ValueError as exc:
            raise _Refused(400, "malformed_json", "the message is not valid JSON") from exc
        if not isinstance(message, dict):
            raise _Refused(422, "invalid_request", "a message must be a JSON object")
        op = message.get("op")
        if op not in ("create", "attach", "reset", "step", "close"):
            raise _Refused(422, "unknown_op", f"op must be create/attach/reset/step/close: {op!r}")
        if op == "create":
            env_kwargs = message.get("env_kwargs") or {}
            session = await run_in_threadpool(store.create, message.get("env_id"), env_kwargs)
            state["session"] = session
            return created(session)
        if op == "attach":
            state["session"] = store.get(str(message.get("session_id")))
            return {"session_id": state["session"].id}
        current = state["session"]
        if current is None:
            raise _Refused(409, "no_session", "send 'create' or 'attach' first")
        session = store.get(current.id)
        if op == "reset":
            seed, options = message.get("seed"), message.get("options")
            if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
                raise _Refused(422, "invalid_request", f"seed must be an int or null: {seed!r}")
            if options is not None and not isinstance(options, dict):
                raise _Refused(422, "invalid_request", "options must be an object or null")
            return await do_reset(session, seed, options)
        if op == "step":
            action = message.get("action")
            return await do_step(session, action if isinstance(action, str) else None)
        await run_in_threadpool(store.close, session.id)  # op == "close"
        state["session"] = None
        return {"closed": session.id}

    @app.post("/sessions/{session_id}/reset")
    async def reset(session_id: str = SessionId, request: ResetRequest | None = None) -> Response:
        request = request or ResetRequest()
        session = store.get(session_id)
        return json_response(await do_reset(session, request.seed, request.options))

    @app.post("/sessions/{session_id}/step")
    async def step(request: StepRequest, session_id: str = SessionId) -> Response:
        return json_response(await do_step(store.get(session_id), request.action))

    @app.get(
        "/sessions/{session_id}/render",
        responses={200: {"content": {"image/png": {}, "text/html": {}}}},
    )
    async def render(
        session_id: str = SessionId,
        format: str = Query("png", pattern="^(png|html)$"),
    ) -> Response:
        session = store.get(session_id)
        if format == "html":
            page = await run_in_threadpool(_replay_page, session)
            return Response(page, media_type="text/html; charset=utf-8")
        png = await runner.run(session, _png, session)
        if png is None:
            return error(409, "no_frames", f"{session.env_id} draws no picture (no frame())")
        return Response(png, media_type="image/png")

    @app.delete("/sessions/{session_id}")
    async def close_session(session_id: str = SessionId) -> Response:
        await run_in_threadpool(store.close, session_id)
        return json_response({"closed": session_id})

    @app.post("/rollouts")
    async def rollouts(request: RolloutRequest) -> Response:
        from agent_envs.adapters.server.rollouts import run_rollouts

        def work() -> list[dict[str, Any]]:
            return run_rollouts(
                request.env,
                request.model,
                request.base_url,
                request.ids,
                max_round=request.max_round,
                group_size=request.group_size,
                max_new_tokens=request.max_new_tokens,
                sampling=request.sampling.model_dump(),
                api_key=request.api_key,
                timeout=request.timeout,
                env_kwargs=request.env_kwargs,
                prefixes=store.prefixes,
            )

        return json_response({"trajectories": await run_in_threadpool(work)})

    return app


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


def _png(session: Session) -> bytes | None:
    base = session.env.unwrapped
    try:
        frame = base.frame()
    except NotImplementedError:
        return None
    from agent_envs.renderers.raster import draw

    image_module = require("PIL.Image", "render")
    buffer = io.BytesIO()
    image_module.fromarray(draw(frame)).save(buffer, format="PNG")
    return buffer.getvalue()


def _replay_page(session: Session) -> str:
    """The episode so far as an HTML replay, with frames when the env draws them (replayed on
    a fresh env from the seed and the replies)."""
    from agent_envs.renderers.replay import replay_html

    with session.lock:
        episode = session.episode()
        replies = list(session.replies)
    if session.seed is not None and hasattr(session.env.unwrapped, "frame"):
        from agent_envs.adapters.server.sessions import make_env
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
    return replay_html([episode], title=f"{session.env_id} session {session.id[:8]}")
