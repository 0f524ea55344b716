"""Worker pools: the parent's side of vector envs whose sub-envs run elsewhere.

A pool splits the envs into contiguous slices, one per worker, each worker holding an
:class:`~agent_envs.vector.runner.EnvRunner`. ``"async"`` (worker processes on this machine,
text through pipes) is built in; other backends register themselves with
:func:`register_backend` (``import agent_envs.adapters.ray`` registers ``"ray"``).

The protocol (:class:`WorkerPool`): ``submit(worker, command, args)`` sends a command and
returns a handle, ``result(worker, handle)`` waits for ``(answer, drawn)``; both raise
:class:`WorkerDiedError` for a worker that is gone and ``RuntimeError`` for an env error
inside a live worker. ``respawn(worker, streams)`` replaces a dead worker by a new one
running the same env constructors, its seed streams at ``streams``, its last observations
``observations`` and every env due for a reset.
"""

from __future__ import annotations

import itertools
import multiprocessing
import signal
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from agent_envs.vector.runner import worker_main
from agent_envs.vector.seeding import SeedStream

__all__ = ["ProcessPool", "WorkerDiedError", "WorkerPool", "register_backend", "split"]


class WorkerDiedError(RuntimeError):
    """A vector worker is gone (killed, crashed, out of memory) and could not be replaced.

    Raised when respawning is disabled (``respawn_workers=False``) or the new worker failed
    to start; the message names the worker's pid, its exit status and the env indices it ran.
    Attributes: ``pid``, ``exitcode`` (``-N`` for signal ``N``, ``None`` if unknown) and
    ``env_indices``.
    """

    def __init__(
        self, pid: int | None, exitcode: int | None, env_indices: list[int], note: str = ""
    ):
        self.pid = pid
        self.exitcode = exitcode
        self.env_indices = env_indices
        if exitcode is None:
            status = "exit status unknown"
        elif exitcode < 0:
            status = f"killed by {_signal_name(-exitcode)}"
        else:
            status = f"exit code {exitcode}"
        super().__init__(
            f"vector worker pid {pid} died ({status}); it ran envs {env_indices}."
            + (f" {note}" if note else "")
        )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class WorkerPool(Protocol):
    slices: list[slice]

    def submit(self, worker: int, command: str, args: tuple) -> Any: ...

    def result(self, worker: int, handle: Any) -> tuple[Any, dict[int, int]]: ...

    def respawn(
        self, worker: int, streams: Sequence[SeedStream | None], observations: Sequence[str]
    ) -> None: ...

    def pid(self, worker: int) -> int | None: ...

    def close(self) -> None: ...


#: name -> factory(env_fns, autoreset_mode, num_workers, context) -> WorkerPool
_BACKENDS: dict[str, Callable[..., WorkerPool]] = {}


def register_backend(name: str, factory: Callable[..., WorkerPool]) -> None:
    """Make ``mode=name`` build its workers with ``factory(env_fns, autoreset_mode,
    num_workers, context)``."""
    _BACKENDS[name] = factory


def backend(name: str) -> Callable[..., WorkerPool] | None:
    return _BACKENDS.get(name)


def split(num_envs: int, num_workers: int) -> list[slice]:
    """Contiguous slices of ``range(num_envs)``, as even as possible, none empty."""
    bounds = np.linspace(0, num_envs, num_workers + 1).astype(int)
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds) if b > a]


class ProcessPool:
    """``mode="async"``: one worker process per slice, commands and answers through pipes."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        autoreset_mode: AutoresetMode,
        num_workers: int,
        context: str | None = None,
    ):
        import cloudpickle

        self._ctx = multiprocessing.get_context(context)
        self._autoreset = autoreset_mode.value
        self.slices = split(len(env_fns), num_workers)
        self._pickled = [cloudpickle.dumps(list(env_fns[piece])) for piece in self.slices]
        self.pipes: list[Any] = [None] * len(self.slices)
        self.processes: list[Any] = [None] * len(self.slices)
        for worker in range(len(self.slices)):
            self._start(worker, None, None, False)
        errors = []
        for worker in range(len(self.slices)):
            try:
                self._receive(worker)
            except RuntimeError as error:
                errors.append(error)
        if errors:
            self.close()
            raise errors[0]

    def _start(
        self,
        worker: int,
        streams: Sequence[SeedStream | None] | None,
        observations: Sequence[str] | None,
        needs_reset: bool,
    ) -> None:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=worker_main,
            args=(
                child,
                self._pickled[worker],
                self._autoreset,
                streams,
                observations,
                needs_reset,
            ),
            daemon=True,
        )
        process.start()
        child.close()
        self.pipes[worker] = parent
        self.processes[worker] = process

    def _died(self, worker: int) -> WorkerDiedError:
        process = self.processes[worker]
        process.join(timeout=1)  # reap it, for its exit code
        piece = self.slices[worker]
        return WorkerDiedError(process.pid, process.exitcode, list(range(piece.start, piece.stop)))

    def _receive(self, worker: int) -> Any:
        try:
            status, payload = self.pipes[worker].recv()
        except (EOFError, OSError) as error:  # the worker's end closed: it is gone
            raise self._died(worker) from error
        if status == "error":
            raise RuntimeError(f"a vector worker failed:\n{payload}")
        return payload

    def submit(self, worker: int, command: str, args: tuple) -> None:
        try:
            self.pipes[worker].send((command, args))
        except OSError as error:  # BrokenPipeError and kin: the worker is gone
            raise self._died(worker) from error

    def result(self, worker: int, handle: None) -> tuple[Any, dict[int, int]]:
        return self._receive(worker)

    def respawn(
        self, worker: int, streams: Sequence[SeedStream | None], observations: Sequence[str]
    ) -> None:
        self.pipes[worker].close()
        old = self.processes[worker]
        if old.is_alive():  # a worker that broke its pipe but lingers
            old.kill()
            old.join(timeout=1)
        self._start(worker, list(streams), list(observations), True)
        self._receive(worker)

    def pid(self, worker: int) -> int | None:
        return self.processes[worker].pid

    def close(self) -> None:
        for pipe in self.pipes:
            if pipe is None:
                continue
            try:
                pipe.send(("close", ()))
                pipe.recv()
            except (BrokenPipeError, EOFError, OSError):
                pass
            pipe.close()
        for process in self.processes:
            if process is None:
                continue
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()


register_backend("async", ProcessPool)
