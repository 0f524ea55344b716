"""Where the env server runs env calls: on the event loop while they are fast, in worker
threads while they are not (plain asyncio; starlette's thread pool).

Env calls run on the event loop while they are fast (the median of an env id's last 15 calls
within ``inline_budget``, default 2 ms, and its latest call under 25 times that), in worker
threads otherwise, so a slow env (a SQL query, a big search) does not stall the other
sessions for long. Calls on one session never overlap (the session's lock).
"""

from __future__ import annotations

import collections
import statistics
import time
from typing import Any

from agent_envs.adapters.server.sessions import Session

__all__ = ["Runner"]


class Runner:
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
