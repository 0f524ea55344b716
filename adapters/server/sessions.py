"""Server-side sessions: one live env per session id, with idle expiry.

Plain Python, no web framework: :class:`SessionStore` is what the HTTP app calls. A session
remembers its episode (seed, options, replies and the turns they produced) besides its env,
so it can be rendered as an HTML replay and so a client can replay it elsewhere.

Sessions idle for longer than ``ttl`` seconds are reaped (their env is closed) by
:meth:`SessionStore.reap`, which the app runs every ``ttl / 4`` seconds (at most every
second): a client that was killed mid-episode leaves nothing behind for longer than about
``1.25 * ttl``. The ids of reaped sessions are remembered (the last 65,536) so that a late
request is told the session *expired* (410) rather than that it never existed (404).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium

__all__ = [
    "BadEnvArguments",
    "ExpiredSession",
    "Session",
    "SessionError",
    "SessionStore",
    "TooManySessions",
    "UnknownEnv",
    "UnknownSession",
    "make_env",
]

_EXPIRED_MEMORY = 65_536


class SessionError(Exception):
    """A request the store refuses; ``status`` is the HTTP status the app answers with."""

    status = 400
    kind = "bad_request"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


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


def make_env(env_id: str, env_kwargs: dict[str, Any], prefixes: tuple[str, ...]) -> Any:
    """``gymnasium.make(env_id, **env_kwargs)`` for a registered id under one of ``prefixes``,
    with any construction failure turned into a :class:`SessionError` naming the id."""
    import agent_envs  # noqa: F401  (registers the grl/* ids)

    if not isinstance(env_id, str) or not env_id.startswith(prefixes):
        raise UnknownEnv(f"env_id must be a registered id starting with {prefixes}: {env_id!r}")
    if env_id not in gymnasium.registry:
        raise UnknownEnv(f"unknown env_id {env_id!r}; GET /envs lists the served ids")
    if not isinstance(env_kwargs, dict):
        raise BadEnvArguments(f"env_kwargs must be an object, got {type(env_kwargs).__name__}")
    try:
        return gymnasium.make(env_id, disable_env_checker=True, **env_kwargs)
    except Exception as error:  # the env's own validation: name what was refused
        raise BadEnvArguments(
            f"{env_id} refused env_kwargs {sorted(env_kwargs)}: {type(error).__name__}: {error}"
        ) from error


@dataclass
class Session:
    """One client's env and its current episode."""

    id: str
    env_id: str
    env_kwargs: dict[str, Any]
    env: Any
    created: float
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    seed: int | None = None
    options: dict[str, Any] | None = None
    #: the current episode: observations[t] is what reply t answered (one more at the end)
    observations: list[str] = field(default_factory=list, repr=False)
    replies: list[Any] = field(default_factory=list, repr=False)
    rewards: list[float] = field(default_factory=list, repr=False)
    parsed_actions: list[list[str]] = field(default_factory=list, repr=False)

    def started(self, seed: int | None, options: dict[str, Any] | None, observation: str) -> None:
        self.seed, self.options = seed, options
        self.observations = [observation]
        self.replies, self.rewards, self.parsed_actions = [], [], []

    def stepped(self, reply: Any, observation: str, reward: float, info: dict) -> None:
        self.replies.append(reply)
        self.observations.append(observation)
        self.rewards.append(reward)
        self.parsed_actions.append([str(a) for a in info.get("parsed_actions", [])])

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
    """Live sessions by id.

    Args:
        ttl: seconds a session may stay idle before :meth:`reap` closes it.
        max_sessions: live sessions at most; creating one more raises `TooManySessions`.
        prefixes: the env id prefixes that may be served (default ``("grl/",)``).
        clock: ``time.monotonic`` (tests pass their own).
    """

    def __init__(
        self,
        *,
        ttl: float = 600.0,
        max_sessions: int = 4096,
        prefixes: tuple[str, ...] = ("grl/",),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ValueError(f"max_sessions must be a positive int, got {max_sessions!r}")
        self.ttl = float(ttl)
        self.max_sessions = max_sessions
        self.prefixes = tuple(prefixes)
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._expired: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    def create(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> Session:
        env_kwargs = dict(env_kwargs or {})
        with self._lock:
            self._check_room()
        env = make_env(env_id, env_kwargs, self.prefixes)
        now = self.clock()
        session = Session(secrets.token_hex(16), env_id, env_kwargs, env, now, now)
        with self._lock:
            try:
                self._check_room()
            except TooManySessions:
                env.close()
                raise
            self._sessions[session.id] = session
        return session

    def _check_room(self) -> None:
        if len(self._sessions) >= self.max_sessions:
            raise TooManySessions(
                f"the server holds max_sessions={self.max_sessions} sessions; close some "
                "(DELETE /sessions/{id}) or wait for idle ones to expire"
            )

    def get(self, session_id: str) -> Session:
        """The live session ``session_id`` (its idle clock restarts), or a `SessionError`."""
        session = self._sessions.get(session_id)
        if session is None:
            if session_id in self._expired:
                raise ExpiredSession(
                    f"session {session_id} expired after {self.ttl:g} s idle; create a new one"
                )
            raise UnknownSession(f"no session {session_id!r} on this server")
        session.last_used = self.clock()
        return session

    def close(self, session_id: str) -> None:
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            self.get(session_id)  # raises the right error
            return
        _close(session)

    def reap(self) -> list[str]:
        """Close the sessions idle for longer than ``ttl``; their ids."""
        deadline = self.clock() - self.ttl
        with self._lock:
            stale = [s for s in self._sessions.values() if s.last_used < deadline]
            for session in stale:
                del self._sessions[session.id]
                self._expired[session.id] = None
            while len(self._expired) > _EXPIRED_MEMORY:
                self._expired.popitem(last=False)
        for session in stale:
            _close(session)
        return [session.id for session in stale]

    def close_all(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            _close(session)


def _close(session: Session) -> None:
    try:
        with session.lock:
            session.env.close()
    except Exception:  # a failing close must not keep the reaper from the others
        pass
