"""The ASGI middleware in front of both server modes (our app and OpenEnv's): it answers
before any route runs, so every route is behind it.

For each HTTP request or WebSocket, in order:

1. ``/health`` and the docs (``/openapi.json``, ``/docs``, ``/redoc``) are open to all.
2. **Who** (`agent_envs.adapters.server.auth.Clients`): no valid token -> 401 (a WebSocket
   handshake is refused with 403); the client's name goes into ``scope["state"]["client"]``
   (``request.state.client`` in a route).
3. **Bytes and time**: a body over ``max_body_bytes`` -> 413; a body not all in within
   ``read_timeout`` -> 408 (the connection is closed). A WebSocket silent for
   ``ws_idle_timeout`` is closed (code 1001).
4. **Fair turns**: at most ``max_inflight_per_client`` requests (or WebSocket messages, each
   until its reply) of one client are served at once; the rest wait in that client's queue,
   so a client that floods the server delays itself, not the others. A client may have
   ``max_sessions_per_client`` WebSockets open; one more is refused at the handshake (429).
5. **Crashes**: an exception that escapes the app is logged with its traceback and answered
   as a JSON 500 in the error shape, and the keep-alive connection stays usable.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agent_envs.adapters.server.auth import Clients
from agent_envs.adapters.server.errors import answer, error_bytes
from agent_envs.adapters.server.limits import ClientSlots, Limits

__all__ = ["OPEN_PATHS", "Guard"]

OPEN_PATHS = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
_BODYLESS = ("GET", "HEAD", "DELETE", "OPTIONS")
LOG = logging.getLogger("agent_envs.adapters.server")


class Guard:
    """The middleware (see the module docstring); ``app.add_middleware(Guard, clients=...,
    limits=..., slots=...)``."""

    def __init__(self, app: Any, *, clients: Clients, limits: Limits, slots: ClientSlots) -> None:
        self.app = app
        self.clients = clients
        self.limits = limits
        self.slots = slots

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] in OPEN_PATHS:
            await self._run(scope, receive, send)
            return
        headers = dict(scope["headers"])
        client = self.clients.identify(headers)
        if client is None:
            kind = "missing_token" if not headers.get(b"authorization") else "wrong_token"
            message = "a valid 'Authorization: Bearer <token>' is required"
            if scope["type"] == "websocket":
                await _refuse_handshake(scope, send, 401, kind, message)
            else:
                await answer(send, 401, kind, message, ((b"www-authenticate", b"Bearer"),))
            return
        scope.setdefault("state", {})["client"] = client
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send, client)
        else:
            await self._http(scope, receive, send, headers, client)

    # ----------------------------------------------------------------- HTTP
    async def _http(self, scope: dict, receive: Any, send: Any, headers: dict, client: str) -> None:
        cap = self.limits.max_body_bytes
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > cap):
            await answer(send, 413, "body_too_large", _too_large(length.decode("latin-1"), cap))
            return
        if scope["method"] in _BODYLESS and length in (None, b"0"):
            async with self.slots.turn(client):
                await self._run(scope, receive, send)
            return
        body = await self._read_body(receive, send)
        if body is None:
            return
        delivered = False

        async def replay() -> dict:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async with self.slots.turn(client):
            await self._run(scope, replay, send)

    async def _read_body(self, receive: Any, send: Any) -> bytes | None:
        """The whole body within ``read_timeout`` and ``max_body_bytes``; ``None`` when it was
        refused (answered) or the client went away."""
        cap, timeout = self.limits.max_body_bytes, self.limits.read_timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                message = f"the request body did not arrive within read_timeout={timeout:g} s"
                await answer(send, 408, "request_timeout", message, ((b"connection", b"close"),))
                return None
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > cap:
                await answer(send, 413, "body_too_large", _too_large(f"over {size}", cap))
                return None
        return b"".join(chunks)

    async def _run(self, scope: dict, receive: Any, send: Any) -> None:
        """The app, with an escaping exception answered as a JSON 500 (when no response has
        started) instead of dropping the connection."""
        started = False

        async def tracked(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as error:
            LOG.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if started:
                raise
            message = f"{type(error).__name__}: {error} (a server bug: please report it)"
            await answer(send, 500, "internal_error", message)

    # ----------------------------------------------------------------- WebSocket
    async def _websocket(self, scope: dict, receive: Any, send: Any, client: str) -> None:
        if not self.slots.open_socket(client):
            message = (
                f"client {client!r} has max_sessions_per_client="
                f"{self.limits.max_sessions_per_client} WebSockets open; close one first"
            )
            await _refuse_handshake(scope, send, 429, "too_many_connections", message)
            return
        idle = self.limits.ws_idle_seconds
        loop = asyncio.get_running_loop()
        holding = False  # a message of this client is being served (its turn is held)
        closed = False
        last = loop.time()
        watchdog: asyncio.TimerHandle | None = None

        def watch() -> None:  # one timer per connection, not one per message
            nonlocal watchdog
            quiet = loop.time() - last
            if holding or quiet < idle:
                watchdog = loop.call_later(idle if holding else idle - quiet, watch)
                return
            watchdog = None
            tasks.append(loop.create_task(close_idle()))

        async def close_idle() -> None:
            nonlocal closed
            if not closed:
                closed = True  # the app's pending receive then gets the disconnect
                await send({"type": "websocket.close", "code": 1001, "reason": "idle"})

        async def guarded_receive() -> dict:
            nonlocal holding, last
            if holding:  # a message that got no reply: its turn ends here
                holding = False
                self.slots.release(client)
            message = await receive()
            last = loop.time()
            if message["type"] == "websocket.receive":
                await self.slots.acquire(client)
                holding = True
            return message

        async def guarded_send(message: dict) -> None:
            nonlocal holding, closed, last
            if closed:
                return  # closed for idleness: what the app sends after that goes nowhere
            if message["type"] == "websocket.close":
                closed = True
            await send(message)
            last = loop.time()
            if holding and message["type"] == "websocket.send":
                holding = False
                self.slots.release(client)

        tasks: list[asyncio.Task] = []
        watchdog = loop.call_later(idle, watch)
        try:
            await self.app(scope, guarded_receive, guarded_send)
        finally:
            if watchdog is not None:
                watchdog.cancel()
            if holding:
                self.slots.release(client)
            self.slots.close_socket(client)


async def _refuse_handshake(scope: dict, send: Any, status: int, kind: str, message: str) -> None:
    """Refuse a WebSocket before it is accepted: an HTTP response with the JSON error where
    the server supports that (ASGI's ``websocket.http.response``), else a close (403)."""
    if "websocket.http.response" in scope.get("extensions", {}):
        body = error_bytes(status, kind, message)
        await send(
            {
                "type": "websocket.http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "websocket.close", "code": 1008, "reason": kind})


def _too_large(size: str, cap: int) -> str:
    return f"request body of {size} bytes is over max_body_bytes={cap}"
