"""Clients of the env server: :class:`RemoteEnv` (one session, a ``gymnasium.Env``) and
:class:`RemoteVectorEnv` (many sessions over several servers, a text vector env the rollout
collector drives unchanged).

**Server restarts.** A session lives in one server process. When a request finds the server
gone (connection refused or reset), or the server answers that the session is unknown or
expired, a `RemoteEnv` waits for a server at the same address (up to ``reconnect_timeout``
seconds), creates a new session with the same env id and kwargs, and **replays** the episode:
``reset(seed=info["episode_seed"], options)`` and the replies so far, checking each turn's
``state_hash`` against the one recorded (envs are deterministic given the seed and the
replies). Then it sends the request that failed. The episode goes on as if nothing happened,
and :attr:`RemoteEnv.resumes` counts the replays. If the replay does not reproduce the
recorded states, the episode is **marked**: that step returns the last observation with
``reward=0``, ``truncated=True`` and ``info["truncation_reason"] = "server_restart"``. If no
server answers within ``reconnect_timeout``, :class:`ServerUnavailable` is raised. An episode
is never silently lost.

**Tokens.** A server that requires a token (any server listening beyond loopback) is called
with ``token=`` or, when that is not given, ``$AGENT_ENVS_SERVER_TOKEN`` (one token; a
``NAME:TOKEN`` entry sends its ``TOKEN``). The token names the client, which owns the sessions
it creates; on a server without tokens ``client_id=`` names it instead (``X-Client-Id``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from agent_envs.optional import require

__all__ = ["RemoteEnv", "RemoteVectorEnv", "ServerError", "ServerUnavailable"]

_LOST_SESSION = ("unknown_session", "expired_session")
_TRANSPORTS = ("ws", "http")


#: the statuses of the error kinds, for servers whose WebSocket errors carry none
_STATUS = {
    "malformed_json": 400,
    "missing_token": 401,
    "wrong_token": 401,
    "path_not_allowed": 403,
    "endpoint_not_allowed": 403,
    "unknown_env": 404,
    "request_timeout": 408,
    "reset_needed": 409,
    "no_session": 409,
    "body_too_large": 413,
    "session_full": 413,
    "bad_env_kwargs": 422,
    "bad_reset": 422,
    "invalid_request": 422,
    "unknown_op": 422,
    "render_failed": 422,
    "too_many_sessions": 429,
    "too_many_connections": 429,
    "env_error": 500,
    "internal_error": 500,
}
#: where `RemoteEnv` finds its token when none is passed
TOKEN_VARIABLE = "AGENT_ENVS_SERVER_TOKEN"


def token_from_environment() -> str | None:
    """The token in ``$AGENT_ENVS_SERVER_TOKEN`` (its first entry; ``NAME:TOKEN`` -> ``TOKEN``)."""
    entries = os.environ.get(TOKEN_VARIABLE, "").split()
    if not entries:
        return None
    return entries[0].rpartition(":")[2] or None


class ServerError(RuntimeError):
    """The server refused a request: ``status`` (HTTP), ``kind`` and ``message`` from its JSON
    error body."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(f"{status} {kind}: {message}")
        self.status, self.kind, self.message = status, kind, message


class ServerUnavailable(ConnectionError):
    """No server answered at the address within ``reconnect_timeout`` seconds."""


class _SessionLost(Exception):
    """The session is gone: the server restarted, or the session expired."""


def _raise(status: int | None, kind: str, message: str) -> None:
    if kind in _LOST_SESSION:
        raise _SessionLost(message)
    raise ServerError(status or _STATUS.get(kind, 400), kind, message)


def _problem(body: Any) -> tuple[int | None, str, str] | None:
    """(status, type, message) of an error body ``{"error": {...}}``; ``None`` otherwise."""
    problem = body.get("error") if isinstance(body, dict) else None
    if not isinstance(problem, dict) or "type" not in problem:
        return None
    status = problem.get("status")
    return (
        (status if isinstance(status, int) else None),
        problem["type"],
        problem.get("message", ""),
    )


def _encode(payload: dict[str, Any]) -> bytes:
    text = json.dumps(payload, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: let JSON escape them
        return json.dumps(payload).encode("ascii")


class RemoteEnv(gymnasium.Env):
    """A session on an env server, as a ``gymnasium.Env[str, str]``.

    ``RemoteEnv("http://127.0.0.1:8000", "grl/Sokoban-v0", max_turns=20)`` behaves like
    ``gymnasium.make("grl/Sokoban-v0", max_turns=20)``: the same observations, rewards, flags
    and info keys for the same seed and replies. Restarts: see the module docstring.

    Args:
        base_url: the server's root URL.
        env_id: a registered id the server serves.
        token: the server's bearer token (default: ``$AGENT_ENVS_SERVER_TOKEN``, if set).
        client_id: this client's name on a server without tokens (``X-Client-Id``); with
            tokens the token names the client.
        transport: ``"ws"`` (default: one WebSocket per env, the server's ``/ws``) or
            ``"http"`` (a request per call); render and HTML replays always use HTTP.
        request_timeout: seconds per request.
        reconnect_timeout: seconds to wait for a restarted server before `ServerUnavailable`.
        client: an ``httpx.Client`` to share (e.g. between the envs of a vector env).
        **env_kwargs: the env's own keyword arguments (JSON values).

    Attributes:
        instructions: the env's instructions (the system prompt).
        resumes: how many times the episode was replayed on a new session.
    """

    def __init__(
        self,
        base_url: str,
        env_id: str,
        *,
        token: str | None = None,
        client_id: str | None = None,
        transport: str = "ws",
        request_timeout: float = 60.0,
        reconnect_timeout: float = 30.0,
        client: Any = None,
        **env_kwargs: Any,
    ) -> None:
        httpx = require("httpx", "server", needed_by="RemoteEnv")
        for name, value in (
            ("request_timeout", request_timeout),
            ("reconnect_timeout", reconnect_timeout),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if transport not in _TRANSPORTS:
            raise ValueError(f"transport must be one of {_TRANSPORTS}, got {transport!r}")
        if transport == "ws":
            require("websocket", "server", needed_by="RemoteEnv(transport='ws')")
        if env_kwargs.get("render_mode") == "human":
            raise ValueError("render_mode='human' is not available remotely; use 'rgb_array'")
        self.base_url = base_url.rstrip("/")
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self.transport = transport
        self.request_timeout = float(request_timeout)
        self.reconnect_timeout = float(reconnect_timeout)
        self._httpx = httpx
        self._own_client = client is None
        headers = {"content-type": "application/json"}
        token = token_from_environment() if token is None else token
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        if client_id is not None:
            headers["x-client-id"] = client_id
        self._headers = headers
        self._client = client or httpx.Client(timeout=request_timeout)
        self._ws: Any = None
        self._session_id: str | None = None
        self.resumes = 0
        self._episode: dict[str, Any] | None = None  # seed, options, replies, hashes
        self._last: tuple[str, dict[str, Any]] = ("", {})
        self._open()

    # ----------------------------------------------------------------- transport
    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        """One HTTP request; `_SessionLost` when the server or the session is gone."""
        httpx = self._httpx
        try:
            response = self._client.request(
                method,
                self.base_url + path,
                content=None if payload is None else _encode(payload),
                headers=self._headers,
            )
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as error:
            raise _SessionLost(str(error)) from error
        if response.status_code >= 400:
            try:
                problem = _problem(response.json())
            except ValueError:
                problem = None
            _, kind, message = problem or (None, "http_error", response.text[:500])
            _raise(response.status_code, kind, message)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.content

    def _message(self, payload: dict[str, Any]) -> Any:
        """One WebSocket round trip; `_SessionLost` when the server or the session is gone.

        websocket-client sends and receives on the calling thread (websockets' sync client
        hands every message over from a reader thread: more CPU per step for the client). So it
        answers the server's pings only while it waits for a reply: a client idle for longer
        than the server's ping interval and timeout finds its connection closed at its next
        call, and reconnects to the same session, as after any dropped connection."""
        import websocket

        try:
            if self._ws is None:
                self._ws = self._connect()
            self._ws.send_bytes(_encode(payload))  # a binary frame: UTF-8 JSON
            data = self._ws.recv()
            if not data:  # a close frame: e.g. the server's ping went unanswered while idle
                raise websocket.WebSocketConnectionClosedException("closed by the server")
            reply = json.loads(data)
        except websocket.WebSocketTimeoutException as error:
            self._drop_ws()
            raise TimeoutError(
                f"no reply within request_timeout={self.request_timeout:g} s"
            ) from error
        except (websocket.WebSocketConnectionClosedException, OSError) as error:
            self._drop_ws()
            raise _SessionLost(str(error) or "connection closed") from error
        problem = _problem(reply)
        if problem is not None:
            _raise(*problem)
        return reply

    def _connect(self) -> Any:
        import websocket

        url = "ws" + self.base_url.removeprefix("http") + "/ws"
        headers = [
            f"{k}: {v}" for k, v in self._headers.items() if k in ("authorization", "x-client-id")
        ]
        try:
            return websocket.create_connection(url, header=headers, timeout=self.request_timeout)
        except websocket.WebSocketBadStatusException as error:  # refused at the handshake
            status = error.status_code
            try:
                problem = _problem(json.loads(getattr(error, "resp_body", None) or b""))
            except ValueError:
                problem = None
            _, kind, message = problem or (status, "refused", f"WebSocket handshake: {status}")
            raise ServerError(status, kind, message) from error

    def _drop_ws(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.close(timeout=1.0)
            self._ws = None

    def _call(self, op: str, payload: dict[str, Any]) -> Any:
        if self.transport == "ws":
            return self._message({"op": op, **payload})
        if op == "create":
            return self._request("POST", "/sessions", payload)
        if op == "close":
            return self._request("DELETE", f"/sessions/{self._session_id}")
        return self._request("POST", f"/sessions/{self._session_id}/{op}", payload)

    def _wait_for_server(self) -> None:
        deadline = time.monotonic() + self.reconnect_timeout
        delay = 0.05
        while True:
            try:
                response = self._client.get(self.base_url + "/health", headers=self._headers)
                if response.status_code == 200:
                    return
            except self._httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise ServerUnavailable(
                    f"no env server answered at {self.base_url} within "
                    f"reconnect_timeout={self.reconnect_timeout:g} s"
                )
            time.sleep(delay)
            delay = min(1.0, delay * 2)

    def _open(self) -> None:
        """A new session (waiting for the server when it is down)."""
        payload = {"env_id": self.env_id, "env_kwargs": self.env_kwargs}
        try:
            created = self._call("create", payload)
        except _SessionLost:
            self._wait_for_server()
            created = self._call("create", payload)
        self._session_id = created["session_id"]
        self.instructions: str = created["instructions"]
        self.observation_space = _space(created["observation_space"])
        self.action_space = _space(created["action_space"])
        self.metadata = created["metadata"]
        self.render_mode = created["render_mode"]
        self.reset_options = tuple(created.get("reset_options", ()))
        if self.spec is None and self.env_id in gymnasium.registry:
            self.spec = gymnasium.spec(self.env_id)

    def _session_call(self, op: str, payload: dict[str, Any]) -> Any:
        return self._call(op, payload)

    # ----------------------------------------------------------------- gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        payload = {"seed": seed, "options": options}
        try:
            data = self._session_call("reset", payload)
        except _SessionLost:
            self._open()
            data = self._session_call("reset", payload)
        observation, info = data["observation"], data["info"]
        self._episode = {
            "seed": info.get("episode_seed", seed),
            "options": options,
            "replies": [],
            "hashes": [info.get("state_hash")],
            "observations": [observation],
            "done": False,
        }
        self._last = (observation, info)
        return observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        reply = action if isinstance(action, str) else None
        payload = {"action": reply}
        try:
            data = self._session_call("step", payload)
        except _SessionLost:
            if not self._resume():
                return self._marked()
            data = self._session_call("step", payload)
        if self._episode is not None and not self._episode["done"]:
            # as the env records it: replies after the episode's end are not part of it
            self._episode["done"] = data["terminated"] or data["truncated"]
            self._episode["replies"].append(reply)
            self._episode["hashes"].append(data["info"].get("state_hash"))
            self._episode["observations"].append(data["observation"])
        self._last = (data["observation"], data["info"])
        return (
            data["observation"],
            data["reward"],
            data["terminated"],
            data["truncated"],
            data["info"],
        )

    def _resume(self) -> bool:
        """Carry the episode on after a lost connection: on the same session when it is still
        there as this client last saw it (WebSocket ``attach``), else replayed on a new session;
        ``False`` if it does not reproduce."""
        episode = self._episode
        if self._reattach(episode):
            return True
        self._open()
        if episode is None:
            return True  # no episode yet: the step is refused as on a fresh env
        if episode["seed"] is None:
            return False
        data = self._session_call("reset", {"seed": episode["seed"], "options": episode["options"]})
        if data["info"].get("state_hash") != episode["hashes"][0]:
            return False
        for reply, expected in zip(episode["replies"], episode["hashes"][1:], strict=True):
            data = self._session_call("step", {"action": reply})
            if data["info"].get("state_hash") != expected:
                return False
        self.resumes += 1
        return True

    def _reattach(self, episode: dict[str, Any] | None) -> bool:
        """Attach a new WebSocket to the session, if it holds exactly the replies this client
        saw answered (the step whose reply was lost was not played, so it can be sent again)."""
        if self.transport != "ws" or episode is None or episode["done"]:
            return False
        try:
            attached = self._message({"op": "attach", "session_id": self._session_id})
        except (_SessionLost, ServerError):
            return False
        return attached.get("replies") == len(episode["replies"])

    def _marked(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, info = self._last
        info = {**info, "truncation_reason": "server_restart"}
        self._episode = None
        return observation, 0.0, False, True, info

    def render(self) -> Any:
        """``"rgb_array"``: the server's PNG of the state as an ``(H, W, 3)`` array;
        ``"ansi"``: the current observation; ``None``: nothing."""
        if self.render_mode is None:
            return None
        if self.render_mode == "ansi":
            return self._last[0]
        image_module = require("PIL.Image", "render", needed_by="render_mode='rgb_array'")
        png = self._request("GET", f"/sessions/{self._session_id}/render?format=png")
        import io

        return np.asarray(image_module.open(io.BytesIO(png)).convert("RGB"))

    def render_png(self) -> bytes:
        """The server's PNG of the current state (envs that draw frames)."""
        return self._request("GET", f"/sessions/{self._session_id}/render?format=png")

    def render_html(self) -> str:
        """The episode so far as a self-contained HTML replay, drawn by the server."""
        return self._request("GET", f"/sessions/{self._session_id}/render?format=html").decode()

    def messages(self) -> list[dict[str, str]]:
        """The episode so far as OpenAI chat messages: system = instructions, user =
        observations, assistant = replies (as ``TextEnv.messages()``)."""
        messages = [{"role": "system", "content": self.instructions}]
        if self._episode is None:
            return messages
        observations = self._episode["observations"]
        for observation, reply in zip(observations, self._episode["replies"], strict=False):
            messages.append({"role": "user", "content": observation})
            messages.append({"role": "assistant", "content": str(reply)})
        messages.append({"role": "user", "content": observations[-1]})
        return messages

    @property
    def session_id(self) -> str | None:
        return self._session_id

    def close(self) -> None:
        if self._session_id is not None:
            with contextlib.suppress(
                _SessionLost, ServerError, TimeoutError, self._httpx.HTTPError
            ):
                self._call("close", {})  # a server that lost it already reaps what it holds
            self._session_id = None
        self._drop_ws()
        if self._own_client:
            self._client.close()
        super().close()


def _space(description: dict[str, Any] | None) -> spaces.Space:
    if description is None:
        return spaces.Text(max_length=1 << 20)
    return spaces.Text(
        max_length=description["max_length"],
        min_length=description["min_length"],
        charset=description["charset"],
    )


class RemoteVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` `RemoteEnv` sessions spread round-robin over ``servers``, stepped
    concurrently (one request in flight per env).

    It follows `agent_envs.vector.TextVectorEnv`'s contract where the collector needs it:
    ``reset(seed=int | list | None)`` (an int seeds ``num_envs / group_size`` groups from
    ``np.random.SeedSequence`` as ``TextVectorEnv`` does), ``step(actions, mask)``, batched
    infos, ``get_attr``/``call``, ``group_size``, and the autoreset modes ``"disabled"`` and
    ``"next_step"``.

    Args:
        servers: server root URLs.
        env_id: a registered id.
        num_envs: sessions to open.
        group_size: consecutive envs sharing a seed.
        autoreset_mode: ``"disabled"`` (the collector's) or ``"next_step"``.
        token, client_id, transport, request_timeout, reconnect_timeout: as for `RemoteEnv`.
        **env_kwargs: the env's keyword arguments.
    """

    def __init__(
        self,
        servers: Sequence[str],
        env_id: str,
        num_envs: int,
        *,
        group_size: int = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.DISABLED,
        token: str | None = None,
        client_id: str | None = None,
        transport: str = "ws",
        request_timeout: float = 60.0,
        reconnect_timeout: float = 30.0,
        **env_kwargs: Any,
    ) -> None:
        from agent_envs.vector.seeding import group_streams

        httpx = require("httpx", "server", needed_by="RemoteEnv")
        servers = [servers] if isinstance(servers, str) else list(servers)
        if not servers:
            raise ValueError("servers must name at least one server URL")
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size must be a positive int, got {group_size!r}")
        if num_envs % group_size:
            raise ValueError(f"group_size={group_size} must divide num_envs={num_envs}")
        mode = autoreset_mode
        if isinstance(mode, str) and mode.upper() in AutoresetMode.__members__:
            mode = AutoresetMode[mode.upper()]
        if mode not in (AutoresetMode.DISABLED, AutoresetMode.NEXT_STEP):
            raise ValueError(
                f"autoreset_mode must be 'disabled' or 'next_step', got {autoreset_mode!r}"
            )
        self._group_streams = group_streams
        limits = httpx.Limits(max_connections=num_envs, max_keepalive_connections=num_envs)
        self._clients = [httpx.Client(timeout=request_timeout, limits=limits) for _ in servers]
        self.envs = [
            RemoteEnv(
                servers[index % len(servers)],
                env_id,
                token=token,
                client_id=client_id,
                transport=transport,
                request_timeout=request_timeout,
                reconnect_timeout=reconnect_timeout,
                client=self._clients[index % len(servers)],
                **env_kwargs,
            )
            for index in range(num_envs)
        ]
        self.num_envs = num_envs
        self.group_size = group_size
        self.env_id = env_id
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = gymnasium.vector.utils.batch_space(
            first.observation_space, num_envs
        )
        self.action_space = gymnasium.vector.utils.batch_space(first.action_space, num_envs)
        self.metadata = {**first.metadata, "autoreset_mode": mode}
        self.render_mode = first.render_mode
        self.spec = first.spec
        self._pool = ThreadPoolExecutor(max_workers=min(num_envs, 64))
        self._streams: list[Any] = [None] * num_envs
        self._needs_reset = [False] * num_envs
        self._observations = [""] * num_envs

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self.metadata["autoreset_mode"]

    def _map(self, function: Any, indices: Sequence[int]) -> list[Any]:
        return list(self._pool.map(function, indices))

    def _next_seed(self, index: int) -> int | None:
        stream = self._streams[index]
        return None if stream is None else stream.next()

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        from agent_envs.vector import batch_infos
        from agent_envs.vector.seeding import SeedStream

        seeds: list[int | None] = [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            self._streams = self._group_streams(int(seed), self.num_envs, self.group_size)
            seeds = [self._next_seed(index) for index in range(self.num_envs)]
        elif seed is not None:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(
                    f"seed must have num_envs={self.num_envs} entries, got {len(seeds)}"
                )
            for index, value in enumerate(seeds):
                if value is not None:  # this episode's seed; later ones continue from it
                    self._streams[index] = SeedStream(int(value))
        else:
            seeds = [self._next_seed(index) for index in range(self.num_envs)]

        def one(index: int) -> tuple[str, dict[str, Any]]:
            return self.envs[index].reset(seed=seeds[index], options=options)

        results = self._map(one, range(self.num_envs))
        self._needs_reset = [False] * self.num_envs
        self._observations = [observation for observation, _ in results]
        return tuple(self._observations), batch_infos([info for _, info in results])

    def step(
        self, actions: Sequence[Any], mask: Sequence[bool] | np.ndarray | None = None
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        from agent_envs.vector import batch_infos

        if len(actions) != self.num_envs:
            raise ValueError(
                f"actions must have num_envs={self.num_envs} entries, got {len(actions)}"
            )
        if mask is None:
            live = list(range(self.num_envs))
        else:
            values = np.asarray(mask)
            if values.shape != (self.num_envs,) or values.dtype != np.bool_:
                raise ValueError(
                    f"mask must be a bool array of shape ({self.num_envs},), "
                    f"got dtype {values.dtype} and shape {values.shape}"
                )
            live = np.flatnonzero(values).tolist()

        def one(index: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
            env = self.envs[index]
            if self._needs_reset[index]:
                self._needs_reset[index] = False
                observation, info = env.reset(seed=self._next_seed(index))
                return observation, 0.0, False, False, info
            result = env.step(actions[index])
            if (result[2] or result[3]) and self.autoreset_mode is AutoresetMode.NEXT_STEP:
                self._needs_reset[index] = True
            return result

        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        for index, result in zip(live, self._map(one, live), strict=True):
            self._observations[index] = result[0]
            rewards[index], terminations[index], truncations[index] = result[1:4]
            infos[index] = result[4]
        return tuple(self._observations), rewards, terminations, truncations, batch_infos(infos)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call ``name`` on every `RemoteEnv` (or read it, if it is not callable)."""
        outputs = []
        for env in self.envs:
            attribute = getattr(env, name)
            outputs.append(attribute(*args, **kwargs) if callable(attribute) else attribute)
        return tuple(outputs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def close_extras(self, **kwargs: Any) -> None:
        self._map(lambda index: self.envs[index].close(), range(self.num_envs))
        self._pool.shutdown()
        for client in self._clients:
            client.close()
