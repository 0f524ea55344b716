"""The env server: stateful sessions over HTTP (FastAPI on uvicorn), owned by their clients.

Endpoints (the schemas are in ``GET /openapi.json``):

========================================  ================================================
``GET /health``                           ``{"status": "ok", "server_id", "sessions",
                                          "auth", "limits"}`` (open to all)
``GET /envs``                             the ids that may be served
``POST /sessions``                        ``{"env_id", "env_kwargs"}`` -> a new session
``GET /sessions``                         your live session ids
``POST /sessions/{id}/reset``             ``{"seed", "options"}`` -> ``observation, info``
``POST /sessions/{id}/step``              ``{"action"}`` -> ``observation, reward,
                                          terminated, truncated, info``
``GET /sessions/{id}/render?format=png``  the current state as a PNG (envs with frames)
``GET /sessions/{id}/render?format=html`` the episode so far as an HTML replay
``DELETE /sessions/{id}``                 close the session
``WS /ws``                                the same session calls as JSON messages on one
                                          connection (`agent_envs.adapters.server.websocket`):
                                          no per-request HTTP cost, what `RemoteEnv` uses
``POST /rollouts``                        AgentGym-shaped batch: episodes of ``env`` for
                                          ``ids`` (seeds) against an allowed OpenAI-compatible
                                          ``base_url``/``model``, up to ``max_round`` turns,
                                          returned as `Trajectory` records
========================================  ================================================

**Who may call** (`agent_envs.adapters.server.auth`): with tokens, every route but
``/health`` and the docs needs ``Authorization: Bearer TOKEN`` (401 without); each token
names a client. A session belongs to the client that created it: listings show only one's
own, and another client's session is 404 to everyone else.

**Limits** (`agent_envs.adapters.server.limits`, all configurable): sessions per client and
in all, requests in flight per client, bytes per request and per session, episodes and
concurrent runs of ``/rollouts``, read, keep-alive and WebSocket idle timeouts. Paths in env
kwargs and reset options stay inside the server's data roots
(`agent_envs.adapters.server.paths`); ``/rollouts`` calls allowed model endpoints only
(`agent_envs.adapters.server.rollouts`).

**Errors** are JSON, ``{"error": {"type", "message", "status"}}``, the same over HTTP and
WebSocket, and the connection stays usable: malformed JSON (400), no or a wrong token (401),
a path outside the data roots or a model endpoint not allowed (403), an unknown env id or
session (404), a step or render before reset (409), an expired session (410), a request not
read within ``read_timeout`` (408), a body over ``max_body_bytes`` or an episode over
``max_session_bytes`` (413), bad env kwargs, reset options, field types or unknown fields
(422), a limit reached (429). A 500 is a bug (an env or the server raised); it is logged.

**Execution.** Env calls run on the event loop while they are fast and in worker threads
while they are slow (`agent_envs.adapters.server.runner`); env construction and the HTML
replay always run in a thread. Calls on one session never overlap.

**Sessions** expire after ``session_ttl`` idle seconds (`agent_envs.adapters.server.sessions`);
the reaper runs every ``session_ttl / 4`` seconds (at most every second). ``server_id`` in
``/health`` is new on every start, so a client can tell that the server restarted.
"""

# no `from __future__ import annotations`: FastAPI reads the route annotations at runtime
import asyncio
import contextlib
import dataclasses
import secrets
from collections.abc import Sequence
from typing import Any

from agent_envs.adapters.server.auth import ANONYMOUS, Clients
from agent_envs.adapters.server.errors import Refused, dumps, error_bytes
from agent_envs.adapters.server.guard import Guard
from agent_envs.adapters.server.limits import ClientSlots, Limits
from agent_envs.adapters.server.models import (
    CreateSession,
    ResetRequest,
    RolloutRequest,
    StepRequest,
)
from agent_envs.adapters.server.paths import DataRoots
from agent_envs.adapters.server.rollouts import LOOPBACK, ModelEndpoints, RolloutGate
from agent_envs.adapters.server.runner import Runner
from agent_envs.adapters.server.service import SessionService
from agent_envs.adapters.server.sessions import SessionStore

from agent_envs.optional import require

__all__ = ["create_app", "protect"]


def protect(app: Any, clients: Clients, limits: Limits) -> Any:
    """Put ``app`` (ours or OpenEnv's) behind the guard: tokens, byte and time limits,
    per-client turns, crashes answered as JSON 500 (`agent_envs.adapters.server.guard`)."""
    slots = ClientSlots(limits)
    app.add_middleware(Guard, clients=clients, limits=limits, slots=slots)
    app.state.clients, app.state.limits, app.state.slots = clients, limits, slots
    return app


def create_app(
    *,
    token: str | Sequence[str] | None = None,
    limits: Limits | None = None,
    data_roots: Sequence[str] = (),
    model_endpoints: Sequence[str] = (LOOPBACK,),
    prefixes: Sequence[str] = ("grl/",),
    inline_budget: float = 0.002,
) -> Any:
    """The FastAPI app of the env server.

    Args:
        token: the accepted tokens, each ``TOKEN`` or ``NAME:TOKEN``
            (`agent_envs.adapters.server.auth`); ``None``: no authentication (clients name
            themselves with ``X-Client-Id``).
        limits: sessions, bytes and time (`agent_envs.adapters.server.limits`; default
            ``Limits()``).
        data_roots: folders env kwargs' paths may point into (default: none).
        model_endpoints: what ``/rollouts`` may call (default: loopback addresses).
        prefixes: the env id prefixes served.
        inline_budget: seconds an env call may take and still run on the event loop.
    """
    fastapi = require("fastapi", "server", needed_by="the env server")
    from agent_envs.adapters.server import rendering
    from agent_envs.adapters.server.websocket import describe_problems, serve_websocket
    from fastapi import FastAPI, Path, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import Response
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    limits = Limits() if limits is None else limits
    if not isinstance(limits, Limits):
        raise ValueError(f"limits must be a Limits, got {type(limits).__name__}")
    budget = inline_budget
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
        raise ValueError(f"inline_budget must be a positive number, got {inline_budget!r}")
    clients = Clients(token)
    store = SessionStore(
        ttl=limits.session_ttl,
        max_sessions=limits.max_sessions,
        max_sessions_per_client=limits.max_sessions_per_client,
        prefixes=tuple(prefixes),
        data_roots=DataRoots(data_roots),
    )
    service = SessionService(store, Runner(float(inline_budget)), limits)
    gate = RolloutGate(ModelEndpoints(model_endpoints), limits, store.data_roots)
    server_id = secrets.token_hex(8)

    async def reaper() -> None:
        period = min(1.0, limits.session_ttl / 4)
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
    protect(app, clients, limits)
    app.state.store = store
    app.state.server_id = server_id

    def json_response(value: Any, status: int = 200) -> Response:
        return Response(dumps(value), status_code=status, media_type="application/json")

    def error(status: int, kind: str, message: str) -> Response:
        return Response(error_bytes(status, kind, message), status, media_type="application/json")

    def client_of(request: Any) -> str:
        return getattr(request.state, "client", ANONYMOUS)

    @app.exception_handler(Refused)
    async def on_refused(_: Request, exc: Refused) -> Response:
        return error(exc.status, exc.kind, exc.message)

    @app.exception_handler(RequestValidationError)
    async def on_validation(_: Request, exc: RequestValidationError) -> Response:
        problems = exc.errors()
        if any(problem.get("type") == "json_invalid" for problem in problems):
            return error(400, "malformed_json", "the request body is not valid JSON")
        return error(422, "invalid_request", describe_problems(list(problems)))

    @app.exception_handler(HTTPException)
    async def on_http(_: Request, exc: HTTPException) -> Response:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, kind, str(exc.detail))

    @app.get("/health")
    async def health() -> Response:
        return json_response(
            {
                "status": "ok",
                "server_id": server_id,
                "sessions": len(store),
                "auth": clients.required,
                "limits": dataclasses.asdict(limits),
                # the first names of these keys, kept for older clients
                "max_sessions": limits.max_sessions,
                "session_ttl": limits.session_ttl,
                "max_body_bytes": limits.max_body_bytes,
            }
        )

    @app.get("/envs")
    async def envs() -> Response:
        import gymnasium

        import agent_envs  # noqa: F401

        ids = [env_id for env_id in gymnasium.registry if env_id.startswith(store.prefixes)]
        return json_response({"env_ids": ids})

    SessionId = Path(description="the id POST /sessions returned")

    @app.post("/sessions", status_code=201)
    async def create_session(body: CreateSession, request: Request) -> Response:
        session = await service.create(client_of(request), body)
        return json_response(service.describe(session), status=201)

    @app.get("/sessions")
    async def list_sessions(request: Request) -> Response:
        return json_response({"session_ids": store.ids(client_of(request))})

    @app.post("/sessions/{session_id}/reset")
    async def reset(
        request: Request, session_id: str = SessionId, body: ResetRequest | None = None
    ) -> Response:
        session = service.get(session_id, client_of(request))
        return json_response(await service.reset(session, body or ResetRequest()))

    @app.post("/sessions/{session_id}/step")
    async def step(body: StepRequest, request: Request, session_id: str = SessionId) -> Response:
        session = service.get(session_id, client_of(request))
        return json_response(await service.step(session, body))

    @app.get(
        "/sessions/{session_id}/render",
        responses={200: {"content": {"image/png": {}, "text/html": {}}}},
    )
    async def render(
        request: Request,
        session_id: str = SessionId,
        format: str = Query("png", pattern="^(png|html)$"),
    ) -> Response:
        session = service.get(session_id, client_of(request))
        if format == "html":
            page = await run_in_threadpool(rendering.replay_page, session)
            return Response(page, media_type="text/html; charset=utf-8")
        png = await service.runner.run(session, rendering.png, session)
        if png is None:
            return error(409, "no_frames", f"{session.env_id} draws no picture (no frame())")
        return Response(png, media_type="image/png")

    @app.delete("/sessions/{session_id}")
    async def close_session(request: Request, session_id: str = SessionId) -> Response:
        return json_response(await service.close(session_id, client_of(request)))

    @app.websocket("/ws")
    async def websocket_session(websocket: fastapi.WebSocket) -> None:
        await serve_websocket(websocket, service, limits.max_body_bytes)

    @app.post("/rollouts")
    async def rollouts(body: RolloutRequest, request: Request) -> Response:
        from agent_envs.adapters.server.rollouts import run_rollouts

        def work() -> list[dict[str, Any]]:
            return run_rollouts(
                body.env,
                body.model,
                body.base_url,
                body.ids,
                max_round=body.max_round,
                group_size=body.group_size,
                max_new_tokens=body.max_new_tokens,
                sampling=body.sampling.model_dump(),
                api_key=body.api_key,
                timeout=body.timeout,
                env_kwargs=body.env_kwargs,
                prefixes=store.prefixes,
                data_roots=store.data_roots,
            )

        client = client_of(request)
        with gate.admit(client, body.base_url, body.ids, body.group_size, body.env_kwargs):
            return json_response({"trajectories": await run_in_threadpool(work)})

    return app
