"""`TextVectorEnv`: many text envs behind one `gymnasium.vector.VectorEnv`.

What it adds to Gymnasium's vector envs, for multi-turn LLM training:

- **groups**: ``group_size=G`` gives G consecutive envs the same seed stream, so they start
  every episode identically (GRPO/GiGPO groups); seeds come from ``np.random.SeedSequence``.
- **masked steps**: ``step(actions, mask)`` steps only the envs whose mask is true; the others
  are not touched, report reward 0 and no termination, and are absent from the info masks.
- **autoreset modes** ``NEXT_STEP`` (default), ``SAME_STEP`` (terminal observation and info in
  ``infos["final_obs"]`` / ``infos["final_info"]``) and ``DISABLED`` (reset chosen envs with
  ``reset(options={"reset_mask": mask})``). Autoreset seeds are the next seeds of each env's
  stream, so a run is reproducible from its ``reset`` seed.
- ``mode="sync"`` (in process), ``"async"`` (worker processes, each running a contiguous
  slice of the envs; text travels through pipes, no shared memory) or a registered backend
  (``import agent_envs.adapters.ray`` registers ``"ray"``: Ray actors holding the slices).

**Dead workers.** A worker that dies (killed, crashed, out of memory, a lost Ray node) is
found by the call that talks to it and replaced by a new one running the same env
constructors (``respawn_workers=True``, the default). Its envs' seed streams continue from
where they stood (the parent keeps a copy), so their next episodes start from the seeds they
would have drawn anyway and a run stays reproducible. Every env of the dead worker whose
episode was running ends it with ``truncated=True``, reward 0 and
``info["truncation_reason"] == "worker_died"`` (its only info key), in the ``step`` that
found the death or, when another call found it, in the next ``step``, masked or not; its
observation is the last one seen. Then, as for any truncation: ``NEXT_STEP`` resets the env on
its next step, ``SAME_STEP`` resets it at once (the last observation and that info go to
``final_obs`` and ``final_info``), ``DISABLED`` leaves it to ``reset`` (a step before that
resets it). Envs of the dead worker whose episode had already ended report nothing. A
``reset``, ``call`` or ``set_attr`` that found a death is run again on the new worker.
The deaths are kept in :attr:`TextVectorEnv.worker_deaths`. With ``respawn_workers=False``, or
when the new worker cannot start, the call raises :class:`WorkerDiedError`, as does every
later one.

Observations are a tuple of strings; actions any sequence of reply strings.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from agent_envs.vector.batch import batch_infos
from agent_envs.vector.runner import EnvRunner, StepColumns
from agent_envs.vector.seeding import SeedStream, group_streams
from agent_envs.vector.workers import ProcessPool, WorkerDiedError, WorkerPool, backend

__all__ = ["TextVectorEnv", "WorkerDiedError"]

logger = logging.getLogger(__name__)

_WORKER_DIED = "worker_died"


def _autoreset_mode(value: AutoresetMode | str) -> AutoresetMode:
    if isinstance(value, AutoresetMode):
        return value
    for mode in AutoresetMode:
        if str(value).replace("_", "").lower() in (
            mode.value.lower(),
            mode.name.replace("_", "").lower(),
        ):
            return mode
    raise ValueError(
        f"autoreset_mode must be one of {[mode.name for mode in AutoresetMode]}, got {value!r}"
    )


def _batched(space: gym.Space, num_envs: int) -> gym.Space:
    """``batch_space`` for text spaces without its ``num_envs`` deep copies (~22 KiB per env
    for our charsets): a ``Tuple`` holding the one single-env space ``num_envs`` times."""
    if isinstance(space, spaces.Text):
        return spaces.Tuple((space,) * num_envs)
    return gym.vector.utils.batch_space(space, num_envs)


class TextVectorEnv(gym.vector.VectorEnv):
    """A batch of text envs (see the module docstring).

    Args:
        env_fns: one callable per sub-env, each returning a text env.
        group_size: consecutive envs sharing a seed stream; must divide ``len(env_fns)``.
        autoreset_mode: ``AutoresetMode`` or its name (``"next_step"``, ``"same_step"``,
            ``"disabled"``).
        mode: ``"sync"``, ``"async"`` or a registered backend's name (``"ray"`` once
            ``agent_envs.adapters.ray`` is imported).
        num_workers: workers of a non-sync mode (default: ``min(num_envs, os.cpu_count())``).
        context: multiprocessing start method for async (default: the platform's).
        respawn_workers: replace a dead worker and end its episodes with
            ``truncation_reason="worker_died"`` (default); ``False`` raises instead.

    Raises:
        WorkerDiedError: from a call that finds a dead worker when ``respawn_workers`` is
            false or the new worker fails to start, and from every later call; it names the
            worker's pid and env indices.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        group_size: int = 1,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        mode: str = "sync",
        num_workers: int | None = None,
        context: str | None = None,
        respawn_workers: bool = True,
    ):
        env_fns = list(env_fns)
        if not env_fns:
            raise ValueError("env_fns must contain at least one env constructor")
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size must be a positive int, got {group_size!r}")
        if len(env_fns) % group_size:
            raise ValueError(f"group_size={group_size} must divide num_envs={len(env_fns)}")
        factory = None if mode == "sync" else backend(mode)
        if mode != "sync" and factory is None:
            hint = " (import agent_envs.adapters.ray first)" if mode == "ray" else ""
            raise ValueError(f"mode must be 'sync', 'async' or a registered backend{hint}, "
                             f"got {mode!r}")  # fmt: skip
        if num_workers is not None and (
            isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1
        ):
            raise ValueError(f"num_workers must be a positive int or None, got {num_workers!r}")
        if not isinstance(respawn_workers, bool):
            raise ValueError(f"respawn_workers must be a bool, got {respawn_workers!r}")
        self.num_envs = len(env_fns)
        self.group_size = group_size
        self.mode = mode
        self.respawn_workers = respawn_workers
        autoreset = _autoreset_mode(autoreset_mode)
        probe = env_fns[0]()
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        self.observation_space = _batched(self.single_observation_space, self.num_envs)
        self.action_space = _batched(self.single_action_space, self.num_envs)
        self.render_mode = probe.render_mode
        self.metadata = {**probe.metadata, "autoreset_mode": autoreset}
        probe.close()
        self._runner: EnvRunner | None = None
        self._pool: WorkerPool | None = None
        #: the dead workers found so far (each replaced, unless respawning is off)
        self.worker_deaths: list[WorkerDiedError] = []
        self._fatal: WorkerDiedError | None = None
        if factory is None:
            self._runner = EnvRunner(env_fns, autoreset)
        else:
            workers = min(self.num_envs, num_workers or os.cpu_count() or 1)
            if factory is ProcessPool:
                self._pool = ProcessPool(env_fns, autoreset, workers, context)
            else:
                self._pool = factory(env_fns, autoreset, workers)
        self._observations: list[str] = [""] * self.num_envs
        self._has_reset = False
        # kept for respawning: each env's seed stream, whether its episode runs, and the
        # envs whose episode a dead worker ended, reported by the next step
        self._streams: list[SeedStream | None] = [None] * self.num_envs
        self._live = np.zeros(self.num_envs, dtype=np.bool_)
        self._died: dict[int, WorkerDiedError] = {}

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self.metadata["autoreset_mode"]

    @property
    def num_groups(self) -> int:
        return self.num_envs // self.group_size

    @property
    def worker_pids(self) -> tuple[int | None, ...]:
        """The workers' process ids, in env order (empty in sync mode)."""
        if self._pool is None:
            return ()
        return tuple(self._pool.pid(worker) for worker in range(len(self._pool.slices)))

    # ----------------------------------------------------------------- workers
    def _run(self, command: str, *per_env: Sequence[Any], shared: tuple = ()) -> list[Any]:
        """Run ``command`` on every env's runner with its part of each per-env sequence; the
        per-env answers in env order. A dead worker is replaced and its part is ``None``
        (``step``) or run again on the new worker (other commands)."""
        if self._runner is not None:
            return getattr(self._runner, command)(*per_env, *shared)
        if self._fatal is not None:
            raise self._fatal
        pool = self._pool
        assert pool is not None
        parts = [(*(values[piece] for values in per_env), *shared) for piece in pool.slices]
        handles: list[Any] = []
        dead: dict[int, WorkerDiedError] = {}
        for worker, args in enumerate(parts):
            try:
                handles.append(pool.submit(worker, command, args))
            except WorkerDiedError as error:
                handles.append(None)
                dead[worker] = error
        answers: list[Any] = [None] * len(parts)
        errors: list[RuntimeError] = []
        for worker, handle in enumerate(handles):
            if worker in dead:
                continue
            try:
                answers[worker] = self._answer(worker, pool.result(worker, handle))
            except WorkerDiedError as error:
                dead[worker] = error
            except RuntimeError as error:  # an env failed; drain the others first
                errors.append(error)
        for worker, error in sorted(dead.items()):
            self._replace(worker, error)
            if command != "step":
                try:
                    handle = pool.submit(worker, command, parts[worker])
                    answers[worker] = self._answer(worker, pool.result(worker, handle))
                except WorkerDiedError as again:
                    self._fatal = again
                    raise
        if errors:
            raise errors[0]
        if command == "step":
            return answers  # one StepColumns (or None) per worker
        if command == "set_attr":
            return []
        return [answer for part in answers for answer in part]

    def _answer(self, worker: int, reply: tuple[Any, dict[int, int]]) -> Any:
        answer, drawn = reply
        start = self._pool.slices[worker].start  # type: ignore[union-attr]
        for index, count in drawn.items():
            stream = self._streams[start + index]
            if stream is not None:
                stream.count = count
        return answer

    def _replace(self, worker: int, error: WorkerDiedError) -> None:
        """Respawn ``worker`` (or raise ``error``); its running episodes end as died."""
        pool = self._pool
        assert pool is not None
        self.worker_deaths.append(error)
        if not self.respawn_workers:
            self._fatal = WorkerDiedError(
                error.pid, error.exitcode, error.env_indices,
                "This vector env cannot continue (respawn_workers=False).",
            )  # fmt: skip
            raise self._fatal from error
        piece = pool.slices[worker]
        streams = [None if s is None else s.copy() for s in self._streams[piece]]
        try:
            pool.respawn(worker, streams, self._observations[piece])
        except Exception as failure:
            self._fatal = WorkerDiedError(
                error.pid, error.exitcode, error.env_indices,
                f"Its replacement failed to start ({failure!r}); this vector env cannot "
                "continue.",
            )  # fmt: skip
            raise self._fatal from failure
        logger.warning("%s Respawned as pid %s.", error, pool.pid(worker))
        for index in range(piece.start, piece.stop):
            if self._live[index]:
                self._died[index] = error
        self._live[piece] = False

    # ----------------------------------------------------------------- reset / step
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Reset all envs, or those in ``options["reset_mask"]``.

        ``seed``: an int (each group's seed stream is derived from it), a list with one seed
        per env (each env's later episodes continue from its own seed), or ``None`` (fresh
        entropy on the first reset; afterwards each env's next stream seed).
        """
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        mask = (
            [True] * self.num_envs
            if mask is None
            else self._check_mask(mask, "options['reset_mask']")
        )
        seeds: list[int | None] = [None] * self.num_envs
        streams: list[SeedStream | None] = [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            streams = list(group_streams(int(seed), self.num_envs, self.group_size))
        elif seed is None:
            if not self._has_reset:
                entropy = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
                streams = list(group_streams(entropy, self.num_envs, self.group_size))
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(
                    f"seed must have num_envs={self.num_envs} entries, got {len(seeds)}"
                )
            for index, value in enumerate(seeds):
                if value is not None:
                    streams[index] = SeedStream(int(value))
        if self._pool is not None:
            for index, stream in enumerate(streams):
                if stream is not None and mask[index]:
                    self._streams[index] = stream.copy()
        results = self._run("reset", mask, seeds, streams, shared=(options or None,))
        self._has_reset = True
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        for index, result in enumerate(results):
            if result is not None:
                self._observations[index], infos[index] = result
                self._live[index] = True
                self._died.pop(index, None)
        return tuple(self._observations), batch_infos(infos)

    def step(
        self, actions: Sequence[Any], mask: Sequence[bool] | np.ndarray | None = None
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step the envs whose ``mask`` is true (all when ``mask`` is None)."""
        if len(actions) != self.num_envs:
            raise ValueError(
                f"actions must have num_envs={self.num_envs} entries, got {len(actions)}"
            )
        flags = None if mask is None else self._check_mask(mask, "mask")
        if self._runner is not None:
            columns = self._runner.step(actions, flags)
        else:
            every = [True] * self.num_envs if flags is None else flags
            columns = self._gather(self._run("step", actions, every))
        observations, rewards, terminations, truncations, infos, finals = columns
        self._observations = observations
        rewards = np.array(rewards, dtype=np.float64)
        terminations = np.array(terminations, dtype=np.bool_)
        truncations = np.array(truncations, dtype=np.bool_)
        if self._pool is not None:
            self._track_episodes(flags, terminations, truncations, infos, finals)
        batched = batch_infos(infos)
        if finals:
            final_obs_column = np.full(self.num_envs, None, dtype=object)
            final_infos: list[dict[str, Any] | None] = [None] * self.num_envs
            has_final = np.zeros(self.num_envs, dtype=np.bool_)
            for index, final_obs, final_info in finals:
                final_obs_column[index] = final_obs
                final_infos[index] = final_info
                has_final[index] = True
            batched["final_obs"] = final_obs_column
            batched["_final_obs"] = has_final
            batched["final_info"] = batch_infos(final_infos)
            batched["_final_info"] = has_final.copy()
        return tuple(observations), rewards, terminations, truncations, batched

    def _gather(self, parts: list[StepColumns | None]) -> StepColumns:
        """Join the workers' step columns; a dead worker's envs keep their observation."""
        pool = self._pool
        assert pool is not None
        joined = StepColumns([], [], [], [], [], [])
        for piece, part in zip(pool.slices, parts, strict=True):
            if part is None:
                size = piece.stop - piece.start
                part = StepColumns(
                    self._observations[piece], [0.0] * size, [False] * size, [False] * size,
                    [None] * size, [],
                )  # fmt: skip
            for column, values in zip(joined[:5], part[:5], strict=True):
                column.extend(values)
            joined.finals.extend((piece.start + i, obs, info) for i, obs, info in part.finals)
        return joined

    def _track_episodes(
        self,
        flags: list[bool] | None,
        terminations: np.ndarray,
        truncations: np.ndarray,
        infos: list[dict[str, Any] | None],
        finals: list[tuple[int, str, dict[str, Any]]],
    ) -> None:
        """Keep which episodes run, and end those a dead worker lost (see the module doc)."""
        stepped = np.ones(self.num_envs, np.bool_) if flags is None else np.array(flags)
        stepped &= np.array([info is not None for info in infos], dtype=np.bool_)
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            self._live[stepped] = True
        else:
            self._live[stepped] = ~(terminations | truncations)[stepped]
        if not self._died:
            return
        died = sorted(self._died)
        self._died.clear()
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        if same_step:  # start the next episode at once, on the new workers
            mask = np.zeros(self.num_envs, np.bool_)
            mask[died] = True
            nothing = [None] * self.num_envs
            fresh = self._run("reset", mask.tolist(), nothing, nothing, shared=(None,))
        for index in died:
            info = {"truncation_reason": _WORKER_DIED}
            truncations[index] = True
            terminations[index] = False
            if same_step:
                finals.append((index, self._observations[index], info))
                self._observations[index], infos[index] = fresh[index]
                self._live[index] = True
            else:
                infos[index] = info

    def _check_mask(self, mask: Sequence[bool] | np.ndarray, name: str) -> list[bool]:
        values = np.asarray(mask)
        if values.shape != (self.num_envs,) or values.dtype != np.bool_:
            raise ValueError(
                f"{name} must be a bool array of shape ({self.num_envs},), "
                f"got dtype {values.dtype} and shape {values.shape}"
            )
        return values.tolist()

    # ----------------------------------------------------------------- attributes, render, close
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call ``name`` on every sub-env (or read it, if it is not callable)."""
        return tuple(self._run("call", shared=(name, args, kwargs)))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def set_attr(self, name: str, values: Any | Sequence[Any]) -> None:
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(
                f"values must have num_envs={self.num_envs} entries, got {len(values)}"
            )
        self._run("set_attr", list(values), shared=(name,))

    def render(self) -> tuple[Any, ...] | None:
        if self.render_mode is None:
            return None
        return self.call("render")

    def close_extras(self, **kwargs: Any) -> None:
        if self._runner is not None:
            self._runner.close()
        if self._pool is not None:
            self._pool.close()
