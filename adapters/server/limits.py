"""The env server's limits: sessions, bytes and time, per client and in all.

Every limit is a field of :class:`Limits` and a flag of ``agent-envs serve`` of the same name.
The defaults keep one client from starving the others or the machine:

==============================  =========  ===================================================
``max_sessions``                4096       sessions held at once, all clients (OpenEnv mode:
                                           64 concurrent WebSocket sessions)
``max_sessions_per_client``     256        sessions one client holds; also the WebSockets it
                                           may have open
``max_inflight_per_client``     8          requests of one client served at once; more wait
                                           their turn (so one client's flood adds at most this
                                           many calls ahead of another's)
``max_body_bytes``              8 MiB      one request body or WebSocket message (a 1 Mi
                                           character reply fits, JSON escapes included)
``max_session_bytes``           16 MiB     text one session keeps of its episode (replies and
                                           observations); a step past it is refused (413
                                           ``session_full``) until the next reset
``max_rollout_episodes``        256        episodes (``len(ids) * group_size``) per
                                           ``POST /rollouts``
``max_rollouts``                4          ``/rollouts`` requests running at once, all clients
``max_rollouts_per_client``     1          ... per client
``session_ttl``                 600 s      idle seconds before a session is reaped
``read_timeout``                30 s       to send a request's headers (from its first byte),
                                           and again its body: a half-sent request is answered
                                           408 and its connection closed
``keep_alive_timeout``          5 s        an idle HTTP keep-alive connection stays open
``ws_idle_timeout``             ``None``   a WebSocket may stay silent (``None``:
                                           ``session_ttl``); then it is closed (code 1001), its
                                           session left to the reaper
==============================  =========  ===================================================

:class:`ClientSlots` holds the per-client counters that the ASGI guard
(`agent_envs.adapters.server.guard`) applies to every request; :func:`uvicorn_config` gives
uvicorn the time limits (its HTTP protocol with a header-read deadline, which uvicorn lacks).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["ClientSlots", "Limits", "uvicorn_config"]


@dataclass(frozen=True)
class Limits:
    """The server's limits (see the module docstring for each field and its default)."""

    max_sessions: int = 4096
    max_sessions_per_client: int = 256
    max_inflight_per_client: int = 8
    max_body_bytes: int = 8 << 20
    max_session_bytes: int = 16 << 20
    max_rollout_episodes: int = 256
    max_rollouts: int = 4
    max_rollouts_per_client: int = 1
    session_ttl: float = 600.0
    read_timeout: float = 30.0
    keep_alive_timeout: float = 5.0
    ws_idle_timeout: float | None = None

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name == "ws_idle_timeout" and value is None:
                continue
            if spec.type == "int":
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ValueError(f"{spec.name} must be a positive int, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{spec.name} must be a positive number, got {value!r}")

    @property
    def ws_idle_seconds(self) -> float:
        return self.session_ttl if self.ws_idle_timeout is None else float(self.ws_idle_timeout)


class ClientSlots:
    """Per-client counters of the ASGI guard: requests in flight (a semaphore each, so a
    client's extra requests queue behind its own) and open WebSockets. A client's entry is
    dropped when it has nothing in flight and nothing open, so names do not pile up."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._inflight: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}
        self._sockets: dict[str, int] = {}

    async def acquire(self, client: str) -> None:
        """Wait for one of ``client``'s ``max_inflight_per_client`` slots (FIFO)."""
        entry = self._inflight.get(client)
        if entry is None:
            entry = (asyncio.Semaphore(self.limits.max_inflight_per_client), [0])
            self._inflight[client] = entry
        semaphore, users = entry
        users[0] += 1
        try:
            await semaphore.acquire()
        except BaseException:
            self._forget(client)
            raise

    def release(self, client: str) -> None:
        """Give back a slot that :meth:`acquire` gave ``client``."""
        self._inflight[client][0].release()
        self._forget(client)

    def _forget(self, client: str) -> None:
        users = self._inflight[client][1]
        users[0] -= 1
        if not users[0]:
            del self._inflight[client]

    @contextlib.asynccontextmanager
    async def turn(self, client: str) -> AsyncIterator[None]:
        """Hold one of ``client``'s slots inside."""
        await self.acquire(client)
        try:
            yield
        finally:
            self.release(client)

    def inflight(self, client: str) -> int:
        """Requests of ``client`` served or waiting now."""
        entry = self._inflight.get(client)
        return 0 if entry is None else entry[1][0]

    def open_socket(self, client: str) -> bool:
        """Count a new WebSocket of ``client``; ``False`` (not counted) when it is at its
        ``max_sessions_per_client``."""
        held = self._sockets.get(client, 0)
        if held >= self.limits.max_sessions_per_client:
            return False
        self._sockets[client] = held + 1
        return True

    def close_socket(self, client: str) -> None:
        held = self._sockets.get(client, 0) - 1
        if held > 0:
            self._sockets[client] = held
        else:
            self._sockets.pop(client, None)


def uvicorn_config(app: Any, limits: Limits, **kwargs: Any) -> Any:
    """``uvicorn.Config`` for ``app`` under ``limits``: the body cap on WebSocket messages,
    the keep-alive timeout, and an HTTP protocol that closes a connection whose request
    headers are not all in within ``read_timeout`` (answering 408)."""
    import uvicorn

    return uvicorn.Config(
        app,
        http=_deadline_protocol(limits.read_timeout),
        ws_max_size=limits.max_body_bytes,
        timeout_keep_alive=limits.keep_alive_timeout,
        **kwargs,
    )


def _deadline_protocol(read_timeout: float) -> type:
    """uvicorn's HTTP protocol (h11 or httptools, whichever uvicorn picks) with a deadline
    on reading each request's headers: armed when a connection opens and when the first
    bytes of a next request arrive, cleared once the request line and headers are parsed
    (uvicorn then starts a request cycle) or the connection turns into a WebSocket."""
    from agent_envs.adapters.server.errors import error_bytes
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    body = error_bytes(
        408,
        "request_timeout",
        f"the request's headers did not arrive within read_timeout={read_timeout:g} s",
    )
    timeout_response = (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )

    class ReadDeadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            cycle = getattr(self, "cycle", None)
            if self._deadline is None and (cycle is None or cycle.response_complete):
                self._arm()  # the first bytes of a new request
            super().data_received(data)
            if getattr(self, "cycle", None) is not cycle or self._upgraded():
                self._disarm()  # headers in (a new request cycle), or now a WebSocket

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _upgraded(self) -> bool:
            transport = self.transport
            return transport is not None and transport.get_protocol() is not self

        def _arm(self) -> None:
            self._disarm()
            self._deadline = asyncio.get_running_loop().call_later(read_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            cycle = getattr(self, "cycle", None)
            if self._upgraded() or (cycle is not None and not cycle.response_complete):
                return
            if not self.transport.is_closing():
                self.transport.write(timeout_response)
                self.transport.close()

    return ReadDeadline
