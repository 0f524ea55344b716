"""Running a slice of sub-envs: in-process for ``sync``, inside each worker for the others.

The same :class:`EnvRunner` does the work in every mode, so autoreset, masking and seeding
behave identically whichever mode is chosen. Its answers are columns (one list per field,
one entry per env of the slice), so the vector env batches them without a per-env loop.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from agent_envs.vector.seeding import SeedStream

__all__ = ["EnvRunner", "StepColumns", "worker_main"]


class StepColumns(NamedTuple):
    """One ``step`` of a slice: a column per field, one entry per env of the slice.

    Envs that were not stepped keep their last observation, report reward 0, no
    termination and ``None`` info. ``finals`` lists ``(index, final_obs, final_info)`` of
    the envs that autoreset in the same step (``SAME_STEP``), indices within the slice.
    """

    observations: list[str]
    rewards: list[float]
    terminations: list[bool]
    truncations: list[bool]
    infos: list[dict[str, Any] | None]
    finals: list[tuple[int, str, dict[str, Any]]]


class EnvRunner:
    """Owns some sub-envs, their seed streams and their autoreset state.

    ``streams``, ``observations`` and ``needs_reset`` set the initial state (a respawned
    worker continues the seed streams of the one that died, answers with the last
    observations seen until its envs step, and resets its envs before stepping them). ``drawn``
    collects ``{index: stream count}`` of the streams that advanced since it was last
    emptied; the parent keeps its copy of the streams from it.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        autoreset_mode: AutoresetMode,
        streams: Sequence[SeedStream | None] | None = None,
        observations: Sequence[str] | None = None,
        needs_reset: bool = False,
    ):
        self.envs = [env_fn() for env_fn in env_fns]
        self.autoreset_mode = autoreset_mode
        self.streams: list[SeedStream | None] = list(streams or [None] * len(self.envs))
        self.needs_reset = [needs_reset] * len(self.envs)
        self.observations: list[str] = list(observations or [""] * len(self.envs))
        self.drawn: dict[int, int] = {}

    def reset(
        self,
        mask: Sequence[bool],
        seeds: Sequence[int | None],
        streams: Sequence[SeedStream | None],
        options: dict[str, Any] | None,
    ) -> list[tuple[str, dict[str, Any]] | None]:
        results: list[tuple[str, dict[str, Any]] | None] = []
        for index, env in enumerate(self.envs):
            if not mask[index]:
                results.append(None)
                continue
            if streams[index] is not None:
                self.streams[index] = streams[index]
            seed = seeds[index]
            if seed is None:
                seed = self._next_seed(index)
            observation, info = env.reset(seed=seed, options=options)
            self.observations[index] = observation
            results.append((observation, info))
            self.needs_reset[index] = False
        return results

    def _next_seed(self, index: int) -> int | None:
        stream = self.streams[index]
        if stream is None:
            return None
        seed = stream.next()
        self.drawn[index] = stream.count
        return seed

    def step(self, actions: Sequence[Any], mask: Sequence[bool] | None) -> StepColumns:
        """Step the envs whose ``mask`` entry is true (all of them when ``mask`` is None)."""
        observations = self.observations
        count = len(self.envs)
        rewards = [0.0] * count
        terminations = [False] * count
        truncations = [False] * count
        infos: list[dict[str, Any] | None] = [None] * count
        finals: list[tuple[int, str, dict[str, Any]]] = []
        needs_reset = self.needs_reset
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        next_step = self.autoreset_mode is AutoresetMode.NEXT_STEP
        for index, env in enumerate(self.envs):
            if mask is not None and not mask[index]:
                continue
            if needs_reset[index]:
                observations[index], infos[index] = env.reset(seed=self._next_seed(index))
                needs_reset[index] = False
                continue
            observation, reward, terminated, truncated, info = env.step(actions[index])
            if terminated or truncated:
                if next_step:
                    needs_reset[index] = True
                elif same_step:
                    finals.append((index, observation, info))
                    observation, info = env.reset(seed=self._next_seed(index))
            observations[index] = observation
            rewards[index] = reward
            terminations[index] = terminated
            truncations[index] = truncated
            infos[index] = info
        return StepColumns(list(observations), rewards, terminations, truncations, infos, finals)

    def call(self, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        outputs = []
        for env in self.envs:
            attribute = env.get_wrapper_attr(name)
            outputs.append(attribute(*args, **kwargs) if callable(attribute) else attribute)
        return outputs

    def set_attr(self, values: Sequence[Any], name: str) -> None:
        for env, value in zip(self.envs, values, strict=True):
            env.set_wrapper_attr(name, value)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def serve(self, command: str, args: tuple) -> tuple[Any, dict[int, int]]:
        """Run ``command`` for a parent in another process: its answer and the streams that
        advanced meanwhile."""
        answer = getattr(self, command)(*args)
        drawn, self.drawn = self.drawn, {}
        return answer, drawn


def worker_main(
    connection: Connection,
    env_fns_pickled: bytes,
    autoreset_mode: str,
    streams: Sequence[SeedStream | None] | None = None,
    observations: Sequence[str] | None = None,
    needs_reset: bool = False,
) -> None:
    """Serve commands ``(name, args)`` from the parent until ``close``; answers travel back as
    ``("ok", (answer, drawn))``, env errors as ``("error", traceback_text)`` and the worker
    keeps serving."""
    import cloudpickle

    runner = None
    try:
        env_fns = cloudpickle.loads(env_fns_pickled)
        runner = EnvRunner(
            env_fns, AutoresetMode(autoreset_mode), streams, observations, needs_reset
        )
        connection.send(("ok", (len(runner.envs), {})))
        while True:
            command, args = connection.recv()
            if command == "close":
                runner.close()
                connection.send(("ok", (None, {})))
                break
            try:
                connection.send(("ok", runner.serve(command, args)))
            except Exception:  # report any env failure to the parent, keep serving
                connection.send(("error", traceback.format_exc()))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except Exception:
        connection.send(("error", traceback.format_exc()))
    finally:
        connection.close()
