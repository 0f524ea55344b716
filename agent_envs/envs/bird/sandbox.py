"""Read-only, time- and memory-bounded SQLite for model-written queries.

A query passes two layers:

1. **Here, in the env's process**: after leading comments, spaces and parentheses the query
   must start with ``SELECT``, ``WITH`` or ``VALUES`` and be at most :data:`MAX_QUERY_CHARS`
   characters (:func:`check_query`); Python's ``sqlite3`` refuses a second statement
   (``SELECT 1; DROP TABLE t`` and comment tricks alike).
2. **In a worker process** (:mod:`agent_envs.envs.bird.worker`, which lists its guards: a
   read-only file, an authorizer, SQLite's own limits, a heap limit that also holds its
   temporary data, an address-space limit, a time limit, results read one row at a time
   against a byte budget, seeded ``random()``).
   The env waits at most :data:`~agent_envs.envs.bird.worker.KILL_FACTOR` times a query's
   limit for the answer, then kills the worker (a single SQLite function call can run past
   the worker's own time check) and starts a fresh one for the next query. So a query costs
   the env at most about 1.1 times its limit of wall time, whatever it calls, and the env's
   process grows by at most the result it is sent (``max_bytes``).

**One worker per thread.** The sandboxes used from one thread share one worker
(:func:`thread_worker`): the envs of a synchronous vector env, which step one after another,
use one process (and one kept gold set per question of a GRPO group) rather than one each;
envs stepped from different threads never wait for each other. A worker starts on the first
query, keeps up to :data:`SHARED_MAX_OPEN` databases open, and ends with its thread, at exit,
or on :meth:`SqlWorker.close`. What a query returns does not depend on the worker that ran
it (it keeps nothing between queries but open files and gold sets). A forked process starts
its own worker and never touches its parent's.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from agent_envs.envs.bird import worker as protocol
from agent_envs.envs.bird.grading import Grade
from agent_envs.envs.bird.types import QueryResult

__all__ = [
    "MAX_QUERY_CHARS",
    "Sandbox",
    "SandboxPool",
    "SqlWorker",
    "check_query",
    "thread_worker",
]

MAX_QUERY_CHARS = 50_000
#: Databases a thread's shared worker keeps open at once.
SHARED_MAX_OPEN = 16
#: Seconds a worker may take to start (not counted in any query's time limit).
START_TIMEOUT = 60.0
ALLOWED_FIRST_WORDS = ("SELECT", "WITH", "VALUES")
_WORKER_FILE = Path(protocol.__file__)
# Leading noise before the first keyword: one space, comment or "(" at a time (no nested
# quantifiers, so no catastrophic backtracking on hostile input).
_LEADING = re.compile(r"(?:\s|--[^\n]*(?:\n|\Z)|/\*.*?(?:\*/|\Z)|\()*", re.DOTALL)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_THREAD = threading.local()


def check_query(sql: str) -> str | None:
    """Why ``sql`` may not run (the first word and the length cap), or ``None`` if it may."""
    if len(sql) > MAX_QUERY_CHARS:
        return f"the query is longer than {MAX_QUERY_CHARS} characters"
    start = _LEADING.match(sql).end()  # type: ignore[union-attr]
    if start >= len(sql):
        return "the query is empty"
    word = _WORD.match(sql, start)
    if word is None or word.group().upper() not in ALLOWED_FIRST_WORDS:
        found = word.group().upper()[:20] if word else sql[start : start + 10].strip()
        return (
            "only one read-only query is allowed (starting with SELECT, WITH or VALUES), "
            f"not {found!r}"
        )
    return None


class _Stopped(Exception):
    """The worker did not answer in time (``timed_out``), or died."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def _read(fd: int, size: int, deadline: float, process: subprocess.Popen) -> bytes:
    """At least ``size`` bytes (more if they are there already, up to 1 MiB per read),
    waiting at most until ``deadline``."""
    poller = select.poll()  # not select.select: fine with descriptors over 1023
    poller.register(fd, select.POLLIN)
    chunks = []
    while size > 0:
        left = deadline - time.perf_counter()
        if left <= 0 or not poller.poll(left * 1e3):
            raise _Stopped("no answer in time", timed_out=True)
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            try:
                code = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
            raise _Stopped(f"the SQL worker stopped (exit code {code})")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(process: subprocess.Popen, deadline: float) -> tuple:
    """One message from the worker (it sends one per request, so a read never reaches into
    the next)."""
    fd = process.stdout.fileno()
    data = _read(fd, protocol.HEADER.size, deadline, process)
    size = protocol.HEADER.unpack_from(data)[0]
    body = data[protocol.HEADER.size :]
    if len(body) < size:
        body += _read(fd, size - len(body), deadline, process)
    return protocol.marshal.loads(body)


def _stop(process: subprocess.Popen, owner: int) -> None:
    """Kill a worker and reap it (safe to call twice); nothing in a forked copy of ``owner``,
    whose worker it is not."""
    if os.getpid() != owner:
        return
    if process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


class SqlWorker:
    """The env's side of one worker process: start, ask with a deadline, kill, restart.

    Args:
        max_open: databases the worker keeps open at once (least recently used closed first).
    """

    def __init__(self, *, max_open: int = SHARED_MAX_OPEN) -> None:
        self.max_open = max_open
        self._process: subprocess.Popen | None = None
        self._owner = os.getpid()
        self.lock = threading.RLock()  # one caller at a time (held across related calls)
        self._finalizer: weakref.finalize | None = None
        self.starts = 0  # worker processes started so far (a fresh one after each kill)

    @property
    def pid(self) -> int | None:
        """The worker's process id, or ``None`` before the first query and after a kill."""
        if self._process is None or self._owner != os.getpid():
            return None
        return self._process.pid

    def call(self, request: tuple, limit: float) -> tuple:
        """Send one request; the reply without its ``recycle`` flag. A worker that does not
        answer within ``KILL_FACTOR * limit`` seconds is killed and the reply is a time-limit
        error; one that dies is reported as an error too. Raises only when no worker can be
        started (``RuntimeError``)."""
        with self.lock:
            process = self._ensure_started()
            deadline = time.perf_counter() + protocol.KILL_FACTOR * limit
            try:
                protocol.send(process.stdin.fileno(), request)
                reply = _receive(process, deadline)
            except _Stopped as stopped:
                self._discard()
                if stopped.timed_out:
                    return ("error", f"stopped at the {limit:g} s time limit", True)
                return ("error", str(stopped), False)
            except (OSError, ValueError, EOFError) as error:  # a broken pipe, a garbled reply
                self._discard()
                return ("error", f"the SQL worker stopped ({error})", False)
            if reply[0]:  # the worker exits after this answer (it ran out of memory)
                self._discard()
            return tuple(reply[1:])

    def _ensure_started(self) -> subprocess.Popen:
        if self._owner != os.getpid():  # a forked copy: the pipe belongs to the parent
            self._process, self._finalizer, self._owner = None, None, os.getpid()
        if self._process is None or self._process.poll() is not None:
            if self._process is not None:
                self._discard()
            self._process = self._start()
        return self._process

    def _start(self) -> subprocess.Popen:
        if not sys.executable:
            raise RuntimeError("the BIRD SQL worker needs sys.executable to start a process")
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(_WORKER_FILE), str(self.max_open)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            start_new_session=True,  # Ctrl-C in a terminal stops the caller, not the worker
        )
        try:
            reply = _receive(process, time.perf_counter() + START_TIMEOUT)
        except (_Stopped, OSError, ValueError, EOFError) as error:
            output = process.stderr.read() if process.poll() is not None else b""
            _stop(process, os.getpid())
            detail = " ".join(output.decode(errors="replace").strip().splitlines()[-1:])
            raise RuntimeError(f"the BIRD SQL worker did not start ({error}) {detail}") from None
        if reply[1] != "ready":
            _stop(process, os.getpid())
            raise RuntimeError(f"the BIRD SQL worker answered {reply!r} on start")
        process.stderr.close()  # only start-up errors are read from it
        self._finalizer = weakref.finalize(self, _stop, process, os.getpid())
        self.starts += 1
        return process

    def _discard(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # kills and reaps
        self._process, self._finalizer = None, None

    def close(self) -> None:
        """Stop the worker process (a later query starts a new one)."""
        with self.lock:
            if self._owner == os.getpid():
                self._discard()
            self._process, self._finalizer = None, None

    def __getstate__(self) -> dict[str, Any]:
        return {"max_open": self.max_open}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(max_open=state["max_open"])

    def __deepcopy__(self, memo: dict[int, Any]) -> SqlWorker:
        return SqlWorker(max_open=self.max_open)


def thread_worker() -> SqlWorker:
    """The worker shared by every sandbox used from the calling thread (made on first use;
    its process starts with the first query and is stopped when the thread ends)."""
    worker = getattr(_THREAD, "worker", None)
    if worker is None:
        worker = _THREAD.worker = SqlWorker()
    return worker


class Sandbox:
    """One database, queried through a worker. See the module docstring for the guards.

    Args:
        path: the ``.sqlite`` file.
        timeout: default seconds a query may run.
        max_rows: default row cap of a result.
        max_bytes: cap on a result's size in memory
            (:func:`~agent_envs.envs.bird.worker.row_cost` summed over its rows).
        worker: a worker of its own; default: the calling thread's (:func:`thread_worker`).
    """

    def __init__(
        self,
        path: Path,
        *,
        timeout: float,
        max_rows: int,
        max_bytes: int,
        worker: SqlWorker | None = None,
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._worker = worker

    @property
    def worker(self) -> SqlWorker:
        """The worker that runs this sandbox's next query."""
        return self._worker if self._worker is not None else thread_worker()

    def run(
        self,
        sql: str,
        params: tuple[Any, ...] = (),
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        max_bytes: int | None = None,
    ) -> QueryResult:
        """Run one query under every guard. Never raises: failures come back as ``error``."""
        refusal = check_query(sql) if isinstance(sql, str) else "the query must be text"
        if refusal is not None:
            return QueryResult(None, (), refusal)
        limit = self.timeout if timeout is None else timeout
        request = (
            "run",
            str(self.path),
            sql,
            tuple(params),
            float(limit),
            self.max_rows if max_rows is None else max_rows,
            self.max_bytes if max_bytes is None else max_bytes,
        )
        reply = self.worker.call(request, limit)
        if reply[0] == "error":
            return QueryResult(None, (), reply[1], timed_out=reply[2])
        _, columns, rows, complete = reply
        return QueryResult(rows, tuple(columns), complete=complete)

    def grade(
        self,
        sql: str,
        gold_sql: str,
        *,
        timeout: float,
        gold_timeout: float,
        max_rows: int | None = None,
    ) -> Grade:
        """Execution accuracy of ``sql`` against ``gold_sql`` (see :mod:`grading`): the gold
        query's set of rows is built (or reused) in the worker, then ``sql``'s rows are
        streamed against it. Never raises."""
        refusal = check_query(sql) if isinstance(sql, str) else "the query must be text"
        if refusal is not None:
            return Grade(False, refusal)
        worker = self.worker
        with worker.lock:  # the gold set the worker keeps is the one "grade" reads
            request = ("gold", str(self.path), gold_sql, float(gold_timeout))
            gold = worker.call(request, gold_timeout)
            if gold[0] == "error":
                return Grade(False, f"the reference query could not be graded: {gold[1]}")
            request = ("grade", str(self.path), sql, gold_sql, float(timeout), max_rows)
            reply = worker.call(request, timeout)
        if reply[0] == "error":
            return Grade(False, reply[1])
        return Grade(bool(reply[1]))

    def close(self) -> None:
        """Stop the sandbox's own worker, if it has one (a thread's shared worker runs on)."""
        if self._worker is not None:
            self._worker.close()

    def __deepcopy__(self, memo: dict[int, Any]) -> Sandbox:
        worker = None if self._worker is None else SqlWorker(max_open=self._worker.max_open)
        return Sandbox(
            self.path,
            timeout=self.timeout,
            max_rows=self.max_rows,
            max_bytes=self.max_bytes,
            worker=worker,
        )


class SandboxPool:
    """One :class:`Sandbox` per database path, with the same limits; their queries run on
    ``worker`` if given, else on the calling thread's shared worker."""

    def __init__(
        self, *, timeout: float, max_rows: int, max_bytes: int, worker: SqlWorker | None = None
    ) -> None:
        self.timeout = timeout
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._worker = worker
        self._sandboxes: dict[Path, Sandbox] = {}

    @property
    def worker(self) -> SqlWorker:
        """The worker that runs the pool's next query."""
        return self._worker if self._worker is not None else thread_worker()

    def get(self, path: Path) -> Sandbox:
        sandbox = self._sandboxes.get(path)
        if sandbox is None:
            sandbox = Sandbox(
                path,
                timeout=self.timeout,
                max_rows=self.max_rows,
                max_bytes=self.max_bytes,
                worker=self._worker,
            )
            self._sandboxes[path] = sandbox
        return sandbox

    def close(self) -> None:
        """Stop the pool's own worker, if it has one (a thread's shared worker runs on)."""
        if self._worker is not None:
            self._worker.close()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "timeout": self.timeout,
            "max_rows": self.max_rows,
            "max_bytes": self.max_bytes,
            "worker": None if self._worker is None else SqlWorker(max_open=self._worker.max_open),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def __deepcopy__(self, memo: dict[int, Any]) -> SandboxPool:
        return SandboxPool(**self.__getstate__())
