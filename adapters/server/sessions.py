"""Server-side sessions: one live env per session id, owned by the client that made it, with
idle expiry.

Plain Python, no web framework: :class:`SessionStore` is what the HTTP app calls. A session
remembers its episode (seed, options, replies and the text of the turns they produced) besides
its env, so it can be rendered as an HTML replay.

**Ownership.** A session belongs to the client that created it (its name from
`agent_envs.adapters.server.auth`); to any other client it does not exist (404), in listings
too. A client holds at most ``max_sessions_per_client`` sessions, all clients
``max_sessions`` (429 beyond either).

**Bytes.** The episode record keeps text only (a vision observation's picture is redrawn
when a replay asks for it) and stops at the episode's end, as the env's own record does.
:meth:`Session.admit` refuses a reply that would take the episode's kept text past
``max_session_bytes`` (413 ``session_full``) before the env sees it, so the env's copy is
bounded by the same cap; a reset starts from zero.

Sessions idle for longer than ``ttl`` seconds are reaped (their env is closed) by
:meth:`SessionStore.reap`, which the app runs every ``ttl / 4`` seconds (at most every
second): a client that was killed mid-episode leaves nothing behind for longer than about
``1.25 * ttl``. The ids of reaped sessions are remembered (the last 65,536) so that a late
request is told the session *expired* (410) rather than that it never existed (404).
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium
from agent_envs.adapters.server.errors import Refused
from agent_envs.adapters.server.paths import DataRoots

__all__ = [
    "BadEnvArguments",
    "ExpiredSession",
    "Session",
    "SessionError",
    "SessionFull",
    "SessionStore",
    "TooManySessions",
    "UnknownEnv",
    "UnknownSession",
    "make_env",
]

_EXPIRED_MEMORY = 65_536


class SessionError(Refused):
    """A request the store refuses; ``status`` is the HTTP status the app answers with."""


class UnknownEnv(SessionError):
    status = 404
    kind = "unknown_env"


class BadEnvArguments(SessionError):
    status = 422
    kind = "bad_env_kwargs"


class UnknownSession(SessionError):
    status = 404
    kind = "unknown_session"


class ExpiredSession(SessionError):
    status = 410
    kind = "expired_session"


class TooManySessions(SessionError):
    status = 429
    kind = "too_many_sessions"


class SessionFull(SessionError):
    status = 413
    kind = "session_full"


def make_env(
    env_id: str,
    env_kwargs: dict[str, Any],
    prefixes: tuple[str, ...],
    data_roots: DataRoots | None = None,
) -> Any:
    """``gymnasium.make(env_id, **env_kwargs)`` for a registered id under one of ``prefixes``,
    with any construction failure turned into a :class:`SessionError` naming the id. With
    ``data_roots`` (kwargs from a request) path kwargs must lie inside them."""
    import agent_envs  # noqa: F401  (registers the grl/* ids)

    if not isinstance(env_id, str) or not env_id.startswith(prefixes):
        raise UnknownEnv(f"env_id must be a registered id starting with {prefixes}: {env_id!r}")
    if env_id not in gymnasium.registry:
        raise UnknownEnv(f"unknown env_id {env_id!r}; GET /envs lists the served ids")
    if not isinstance(env_kwargs, dict):
        raise BadEnvArguments(f"env_kwargs must be an object, got {type(env_kwargs).__name__}")
    if env_kwargs.get("render_mode") == "human":
        raise BadEnvArguments(
            "render_mode='human' opens a window on the server; use 'rgb_array' (then GET "
            "/sessions/{id}/render?format=png) or None"
        )
    if data_roots is not None:
        data_roots.check_env_kwargs(env_kwargs)
    try:
        return gymnasium.make(env_id, disable_env_checker=True, **env_kwargs)
    except Exception as error:  # the env's own validation: name what was refused
        raise BadEnvArguments(
            f"{env_id} refused env_kwargs {sorted(env_kwargs)}: {type(error).__name__}: {error}"
        ) from error


def text_of(observation: Any) -> str:
    """The text of an observation (a vision id's is ``{"text", "image"}``)."""
    if isinstance(observation, dict):
        observation = observation.get("text", "")
    return observation if isinstance(observation, str) else repr(observation)


def _size(text: Any) -> int:
    return sys.getsizeof(text) if isinstance(text, str) else 64


@dataclass
class Session:
    """One client's env and its current episode."""

    id: str
    env_id: str
    env_kwargs: dict[str, Any]
    env: Any
    created: float
    last_used: float
    owner: str = "anonymous"
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    seed: int | None = None
    options: dict[str, Any] | None = None
    #: the current episode: observations[t] is what reply t answered (one more at the end)
    observations: list[str] = field(default_factory=list, repr=False)
    replies: list[Any] = field(default_factory=list, repr=False)
    rewards: list[float] = field(default_factory=list, repr=False)
    parsed_actions: list[list[str]] = field(default_factory=list, repr=False)
    #: bytes of text the episode record (and so the env's own) holds
    kept_bytes: int = 0
    done: bool = False

    @property
    def reset_done(self) -> bool:
        """Whether an episode was started (a reset succeeded)."""
        return bool(self.observations)

    def started(self, seed: int | None, options: dict[str, Any] | None, observation: Any) -> None:
        text = text_of(observation)
        self.seed, self.options = seed, options
        self.observations = [text]
        self.replies, self.rewards, self.parsed_actions = [], [], []
        self.kept_bytes = _size(text)
        self.done = False

    def admit(self, reply: Any, cap: int) -> None:
        """Raise `SessionFull` if keeping ``reply`` would take the episode past ``cap``
        bytes (a step after the episode's end keeps nothing, so it always passes)."""
        if self.done or not self.observations:
            return
        if self.kept_bytes + _size(reply) > cap:
            raise SessionFull(
                f"this episode keeps {self.kept_bytes} bytes of text and this reply would take "
                f"it past max_session_bytes={cap}: reset to start a new episode (the server's "
                "--max-session-bytes sets the cap)"
            )

    def stepped(self, reply: Any, observation: Any, reward: float, info: dict, done: bool) -> None:
        if self.done or not self.observations:
            return  # after the episode's end the env keeps nothing either
        text = text_of(observation)
        self.replies.append(reply)
        self.observations.append(text)
        self.rewards.append(reward)
        self.parsed_actions.append([str(a) for a in info.get("parsed_actions", [])])
        self.kept_bytes += _size(reply) + _size(text)
        self.done = done

    def episode(self) -> dict[str, Any]:
        """The episode so far in the shape `agent_envs.renderers.episodes` reads."""
        steps = [
            {
                "observation": self.observations[index],
                "reply": reply if isinstance(reply, str) else repr(reply),
                "parsed_actions": self.parsed_actions[index],
                "reward": self.rewards[index],
            }
            for index, reply in enumerate(self.replies)
        ]
        return {
            "env_id": self.env_id,
            "seed": self.seed,
            "steps": steps,
            "final_observation": self.observations[-1] if self.observations else "",
            "episode_return": round(sum(self.rewards), 6),
        }


class SessionStore:
    """Live sessions by id, each owned by a client.

    Args:
        ttl: seconds a session may stay idle before :meth:`reap` closes it.
        max_sessions: live sessions at most; creating one more raises `TooManySessions`.
        max_sessions_per_client: live sessions of one owner at most (`TooManySessions`).
        prefixes: the env id prefixes that may be served (default ``("grl/",)``).
        data_roots: where env kwargs' paths may point (default: nowhere).
        clock: ``time.monotonic`` (tests pass their own).
    """

    def __init__(
        self,
        *,
        ttl: float = 600.0,
        max_sessions: int = 4096,
        max_sessions_per_client: int | None = None,
        prefixes: tuple[str, ...] = ("grl/",),
        data_roots: DataRoots | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ValueError(f"max_sessions must be a positive int, got {max_sessions!r}")
        per_client = max_sessions if max_sessions_per_client is None else max_sessions_per_client
        if isinstance(per_client, bool) or not isinstance(per_client, int) or per_client < 1:
            raise ValueError(
                f"max_sessions_per_client must be a positive int, got {max_sessions_per_client!r}"
            )
        self.ttl = float(ttl)
        self.max_sessions = max_sessions
        self.max_sessions_per_client = per_client
        self.prefixes = tuple(prefixes)
        self.data_roots = data_roots or DataRoots()
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._owned: Counter[str] = Counter()
        self._expired: OrderedDict[str, str] = OrderedDict()  # id -> owner
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def ids(self, owner: str) -> list[str]:
        """The live sessions of ``owner``."""
        with self._lock:
            return [sid for sid, session in self._sessions.items() if session.owner == owner]

    def held(self, owner: str) -> int:
        return self._owned[owner]

    def create(
        self, env_id: str, env_kwargs: dict[str, Any] | None = None, owner: str = "anonymous"
    ) -> Session:
        env_kwargs = dict(env_kwargs or {})
        with self._lock:
            self._check_room(owner)
        env = make_env(env_id, env_kwargs, self.prefixes, self.data_roots)
        now = self.clock()
        session = Session(secrets.token_hex(16), env_id, env_kwargs, env, now, now, owner)
        with self._lock:
            try:
                self._check_room(owner)
            except TooManySessions:
                env.close()
                raise
            self._sessions[session.id] = session
            self._owned[owner] += 1
        return session

    def _check_room(self, owner: str) -> None:
        if self._owned[owner] >= self.max_sessions_per_client:
            raise TooManySessions(
                f"client {owner!r} holds max_sessions_per_client={self.max_sessions_per_client}"
                " sessions; close some (DELETE /sessions/{id}) or wait for idle ones to expire"
            )
        if len(self._sessions) >= self.max_sessions:
            raise TooManySessions(
                f"the server holds max_sessions={self.max_sessions} sessions; close some "
                "(DELETE /sessions/{id}) or wait for idle ones to expire"
            )

    def get(self, session_id: str, owner: str) -> Session:
        """``owner``'s live session ``session_id`` (its idle clock restarts), or a
        `SessionError`: another client's session is unknown to this one."""
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:
            if session is None and self._expired.get(session_id) == owner:
                raise ExpiredSession(
                    f"session {session_id} expired after {self.ttl:g} s idle; create a new one"
                )
            raise UnknownSession(f"no session {session_id!r} of yours on this server")
        session.last_used = self.clock()
        return session

    def close(self, session_id: str, owner: str) -> None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and session.owner == owner:
                self._forget(session)
            else:
                session = None
        if session is None:
            self.get(session_id, owner)  # raises the right error
            return
        _close(session)

    def _forget(self, session: Session) -> None:
        del self._sessions[session.id]
        self._owned[session.owner] -= 1
        if not self._owned[session.owner]:
            del self._owned[session.owner]

    def reap(self) -> list[str]:
        """Close the sessions idle for longer than ``ttl``; their ids."""
        deadline = self.clock() - self.ttl
        with self._lock:
            stale = [s for s in self._sessions.values() if s.last_used < deadline]
            for session in stale:
                self._forget(session)
                self._expired[session.id] = session.owner
            while len(self._expired) > _EXPIRED_MEMORY:
                self._expired.popitem(last=False)
        for session in stale:
            _close(session)
        return [session.id for session in stale]

    def close_all(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._owned.clear()
        for session in sessions:
            _close(session)


def _close(session: Session) -> None:
    try:
        with session.lock:
            session.env.close()
    except Exception:  # a failing close must not keep the reaper from the others
        pass
