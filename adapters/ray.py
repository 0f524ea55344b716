"""Scale-out on Ray: the sub-envs of a vector env held by Ray actors, on one machine or many.

``import agent_envs.adapters.ray`` registers the vector mode ``"ray"``::

    import ray
    import gymnasium
    import agent_envs.adapters.ray  # noqa: F401  (registers mode="ray")

    ray.init(address="auto")  # join a running cluster (or ray.init() for a local one)
    envs = gymnasium.make_vec("grl/Sokoban-v0", num_envs=1024, mode="ray", num_workers=16,
                              autoreset_mode="disabled")

Each of the ``num_workers`` actors (:class:`RayPool`) holds a contiguous slice of the envs in
an `agent_envs.vector.runner.EnvRunner`, the object that runs the envs of the ``sync`` and
``async`` modes too, so seeds, groups, masks and autoreset behave the same in every mode. A
``step`` sends one call to every actor and waits for all of them: one round trip per actor
per turn, with only the reply strings going out and the step columns coming back. The
rollout collector drives such a vector env unchanged.

Actors are spread over the cluster's nodes (``scheduling_strategy="SPREAD"``, one CPU
each); other actor options (resources, a runtime environment) go through
``register_backend("ray", functools.partial(RayPool, actor_options={...}))``. The env
constructors travel to the actors pickled, so the nodes need ``agent-envs`` installed (or a
``runtime_env``).

An actor that dies (killed, crashed, its node lost) is replaced like a dead ``async``
worker: a new actor runs the same constructors with the seed streams continued, and the
episodes it ran end with ``truncation_reason="worker_died"`` (see `agent_envs.vector`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from agent_envs.optional import require
from agent_envs.vector import WorkerDiedError, register_backend
from agent_envs.vector.runner import EnvRunner
from agent_envs.vector.seeding import SeedStream
from agent_envs.vector.workers import split

__all__ = ["RayPool"]

_DEFAULT_ACTOR_OPTIONS: dict[str, Any] = {"num_cpus": 1, "scheduling_strategy": "SPREAD"}


class _RunnerActor:
    """The body of one actor: an `EnvRunner` over its slice of the envs."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        autoreset_mode: str,
        streams: Sequence[SeedStream | None] | None,
        observations: Sequence[str] | None,
        needs_reset: bool,
    ) -> None:
        self.runner = EnvRunner(
            env_fns, AutoresetMode(autoreset_mode), streams, observations, needs_reset
        )

    def pid(self) -> int:
        return os.getpid()

    def serve(self, command: str, args: tuple) -> tuple[Any, dict[int, int]]:
        return self.runner.serve(command, args)

    def close(self) -> None:
        self.runner.close()


class RayPool:
    """``mode="ray"``: one Ray actor per slice of the envs (the `WorkerPool` protocol of
    `agent_envs.vector.workers`).

    Args:
        env_fns: the sub-env constructors (picklable: they are sent to the actors).
        autoreset_mode: the vector env's autoreset mode.
        num_workers: actors to start.
        actor_options: options of ``ray.remote`` for each actor (default: one CPU, actors
            spread over the nodes); ``max_restarts`` is always 0 (the vector env replaces
            dead actors itself, continuing their seed streams).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        autoreset_mode: AutoresetMode,
        num_workers: int,
        *,
        actor_options: dict[str, Any] | None = None,
    ) -> None:
        ray = require("ray", "ray", needed_by='mode="ray"')
        options = {**_DEFAULT_ACTOR_OPTIONS, **(actor_options or {}), "max_restarts": 0}
        self._actor_class = ray.remote(**options)(_RunnerActor)
        self._autoreset = autoreset_mode.value
        self.slices = split(len(env_fns), num_workers)
        self._env_fns = [list(env_fns[piece]) for piece in self.slices]
        self._actors: list[Any] = [None] * len(self.slices)
        self._pids: list[int | None] = [None] * len(self.slices)
        for worker in range(len(self.slices)):
            self._actors[worker] = self._start(worker, None, None, False)
        try:
            pids = ray.get([actor.pid.remote() for actor in self._actors])
        except ray.exceptions.RayError as error:
            self.close()
            raise RuntimeError(f"a Ray vector actor failed to start:\n{error}") from error
        self._pids = list(pids)

    def _start(
        self,
        worker: int,
        streams: Sequence[SeedStream | None] | None,
        observations: Sequence[str] | None,
        needs_reset: bool,
    ) -> Any:
        return self._actor_class.remote(
            self._env_fns[worker], self._autoreset, streams, observations, needs_reset
        )

    def _died(self, worker: int) -> WorkerDiedError:
        piece = self.slices[worker]
        return WorkerDiedError(self._pids[worker], None, list(range(piece.start, piece.stop)))

    def submit(self, worker: int, command: str, args: tuple) -> Any:
        return self._actors[worker].serve.remote(command, args)

    def result(self, worker: int, handle: Any) -> tuple[Any, dict[int, int]]:
        ray = require("ray", "ray", needed_by='mode="ray"')
        try:
            return ray.get(handle)
        except ray.exceptions.RayActorError as error:  # the actor (or its node) is gone
            raise self._died(worker) from error
        except ray.exceptions.RayTaskError as error:  # an env raised inside a live actor
            raise RuntimeError(f"a Ray vector actor failed:\n{error}") from error

    def respawn(
        self, worker: int, streams: Sequence[SeedStream | None], observations: Sequence[str]
    ) -> None:
        ray = require("ray", "ray", needed_by='mode="ray"')
        with contextlib.suppress(Exception):  # it may be gone already
            ray.kill(self._actors[worker], no_restart=True)
        actor = self._start(worker, list(streams), list(observations), True)
        self._pids[worker] = ray.get(actor.pid.remote())
        self._actors[worker] = actor

    def pid(self, worker: int) -> int | None:
        return self._pids[worker]

    def close(self) -> None:
        ray = require("ray", "ray", needed_by='mode="ray"')
        live = [actor for actor in self._actors if actor is not None]
        with contextlib.suppress(Exception):  # dead actors have nothing to close
            ray.get([actor.close.remote() for actor in live], timeout=30)
        for actor in live:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self._actors = [None] * len(self.slices)


register_backend("ray", RayPool)
