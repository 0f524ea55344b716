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
- ``mode="sync"`` (in process) or ``"async"`` (worker processes, each running a contiguous
  slice of the envs; text travels through pipes, no shared memory). A worker that dies
  (killed, crashed, out of memory) makes the next call raise :class:`WorkerDiedError`, which
  names its pid and the env indices it ran; the vector env cannot go on after that (close
  it and make a new one; respawning workers is not done).

Observations are a tuple of strings; actions any sequence of reply strings.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from agent_envs.vector.batch import batch_infos
from agent_envs.vector.runner import EnvRunner, StepResult, worker_main
from agent_envs.vector.seeding import SeedStream, group_streams

__all__ = ["TextVectorEnv", "WorkerDiedError"]

_MODES = ("sync", "async")


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


class WorkerDiedError(RuntimeError):
    """An async worker process is gone (killed, crashed, out of memory).

    Raised by the first call that finds it, and by every later call; the message names the
    worker's pid, its exit status and the env indices it ran. Attributes: ``pid``,
    ``exitcode`` (``-N`` for signal ``N``, ``None`` if unknown) and ``env_indices``.
    """

    def __init__(self, pid: int | None, exitcode: int | None, env_indices: list[int]):
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
            f"vector worker pid {pid} died ({status}); it ran envs {env_indices}. "
            "This vector env cannot continue: close it and make a new one."
        )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _Workers:
    """The parent's side of the async workers: a pipe per worker and the slice it runs."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        autoreset_mode: AutoresetMode,
        num_workers: int,
        context: str | None,
    ):
        import cloudpickle

        ctx = multiprocessing.get_context(context)
        bounds = np.linspace(0, len(env_fns), num_workers + 1).astype(int)
        self.slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds) if b > a]
        self.pipes = []
        self.processes = []
        for piece in self.slices:
            parent, child = ctx.Pipe()
            process = ctx.Process(
                target=worker_main,
                args=(child, cloudpickle.dumps(list(env_fns[piece])), autoreset_mode.value),
                daemon=True,
            )
            process.start()
            child.close()
            self.pipes.append(parent)
            self.processes.append(process)
        self.died: WorkerDiedError | None = None
        errors = []
        for worker in range(len(self.pipes)):
            try:
                self._receive(worker)
            except RuntimeError as error:
                errors.append(error)
        if errors:
            self.close()
            raise errors[0]

    def _died(self, worker: int) -> WorkerDiedError:
        """The error for a worker whose pipe broke (remembered: later calls raise it too)."""
        process = self.processes[worker]
        process.join(timeout=1)  # reap it, for its exit code
        piece = self.slices[worker]
        error = WorkerDiedError(process.pid, process.exitcode, list(range(piece.start, piece.stop)))
        self.died = self.died or error
        return error

    def _receive(self, worker: int) -> Any:
        try:
            status, payload = self.pipes[worker].recv()
        except (EOFError, OSError) as error:  # the worker's end closed: it is gone
            raise self._died(worker) from error
        if status == "error":
            raise RuntimeError(f"a vector worker failed:\n{payload}")
        return payload

    def run(self, command: str, *per_env: Sequence[Any], shared: tuple = ()) -> list[Any]:
        """Send ``command`` with each worker's part of the per-env sequences; concatenate the
        per-env answers in env order. Raises :class:`WorkerDiedError` if a worker is gone."""
        if self.died is not None:
            raise self.died
        sent = []
        errors: list[RuntimeError] = []
        for worker, (pipe, piece) in enumerate(zip(self.pipes, self.slices, strict=True)):
            try:
                pipe.send((command, (*(values[piece] for values in per_env), *shared)))
                sent.append(worker)
            except OSError as error:  # BrokenPipeError and kin: the worker is gone
                errors.append(self._died(worker))
                errors[-1].__cause__ = error
        answers: list[Any] = []
        for worker in sent:  # drain every live worker, so the pipes stay in step
            try:
                answers.extend(self._receive(worker) or ())
            except RuntimeError as error:
                errors.append(error)
        if errors:
            dead = [error for error in errors if isinstance(error, WorkerDiedError)]
            raise (dead or errors)[0]
        return answers

    def close(self) -> None:
        for pipe in self.pipes:
            try:
                pipe.send(("close", ()))
                pipe.recv()
            except (BrokenPipeError, EOFError, OSError):
                pass
            pipe.close()
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()


class TextVectorEnv(gym.vector.VectorEnv):
    """A batch of text envs (see the module docstring).

    Args:
        env_fns: one callable per sub-env, each returning a text env.
        group_size: consecutive envs sharing a seed stream; must divide ``len(env_fns)``.
        autoreset_mode: ``AutoresetMode`` or its name (``"next_step"``, ``"same_step"``,
            ``"disabled"``).
        mode: ``"sync"`` or ``"async"``.
        num_workers: async worker processes (default: ``min(num_envs, os.cpu_count())``).
        context: multiprocessing start method for async (default: the platform's).

    Raises:
        WorkerDiedError: from any call (``reset``, ``step``, ``call``, ...) in async mode once
            a worker process is gone; it names the worker's pid and env indices.
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
    ):
        env_fns = list(env_fns)
        if not env_fns:
            raise ValueError("env_fns must contain at least one env constructor")
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size must be a positive int, got {group_size!r}")
        if len(env_fns) % group_size:
            raise ValueError(f"group_size={group_size} must divide num_envs={len(env_fns)}")
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
        if num_workers is not None and (not isinstance(num_workers, int) or num_workers < 1):
            raise ValueError(f"num_workers must be a positive int or None, got {num_workers!r}")
        self.num_envs = len(env_fns)
        self.group_size = group_size
        self.mode = mode
        autoreset = _autoreset_mode(autoreset_mode)
        probe = env_fns[0]()
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = probe.render_mode
        self.metadata = {**probe.metadata, "autoreset_mode": autoreset}
        probe.close()
        self._runner: EnvRunner | None = None
        self._workers: _Workers | None = None
        if mode == "sync":
            self._runner = EnvRunner(env_fns, autoreset)
        else:
            workers = min(self.num_envs, num_workers or os.cpu_count() or 1)
            self._workers = _Workers(env_fns, autoreset, workers, context)
        self._observations: list[str] = [""] * self.num_envs
        self._all = [True] * self.num_envs
        self._has_reset = False

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self.metadata["autoreset_mode"]

    @property
    def num_groups(self) -> int:
        return self.num_envs // self.group_size

    @property
    def worker_pids(self) -> tuple[int, ...]:
        """The async workers' process ids, in env order (empty in sync mode)."""
        if self._workers is None:
            return ()
        return tuple(process.pid for process in self._workers.processes)

    def _run(self, command: str, *per_env: Sequence[Any], shared: tuple = ()) -> list[Any]:
        if self._runner is not None:
            return getattr(self._runner, command)(*per_env, *shared)
        assert self._workers is not None
        return self._workers.run(command, *per_env, shared=shared)

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
        mask = self._all if mask is None else self._check_mask(mask, "options['reset_mask']")
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
        results = self._run("reset", mask, seeds, streams, shared=(options or None,))
        self._has_reset = True
        infos = []
        for index, result in enumerate(results):
            if result is None:
                infos.append(None)
                continue
            self._observations[index], info = result
            infos.append(info)
        return tuple(self._observations), batch_infos(infos)

    def step(
        self, actions: Sequence[Any], mask: Sequence[bool] | np.ndarray | None = None
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step the envs whose ``mask`` is true (all when ``mask`` is None)."""
        if len(actions) != self.num_envs:
            raise ValueError(
                f"actions must have num_envs={self.num_envs} entries, got {len(actions)}"
            )
        mask = self._all if mask is None else self._check_mask(mask, "mask")
        results: list[StepResult | None] = self._run("step", list(actions), mask)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        finals: list[tuple[str, dict[str, Any]] | None] = []
        for index, result in enumerate(results):
            if result is None:
                continue
            observation, reward, terminated, truncated, info, final_obs, final_info = result
            self._observations[index] = observation
            rewards[index] = reward
            terminations[index] = terminated
            truncations[index] = truncated
            infos[index] = info
            if final_obs is not None:
                finals.append((index, final_obs, final_info))
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
        return tuple(self._observations), rewards, terminations, truncations, batched

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
        if self._workers is not None:
            self._workers.close()
