"""Running a slice of sub-envs: in-process for ``sync``, inside each worker for ``async``.

The same :class:`EnvRunner` does the work in both modes, so autoreset, masking and seeding
behave identically whichever mode is chosen.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from agent_envs.vector.seeding import SeedStream

__all__ = ["EnvRunner", "StepResult", "worker_main"]

#: (observation, reward, terminated, truncated, info, final_observation, final_info)
StepResult = tuple[str, float, bool, bool, dict[str, Any], "str | None", "dict[str, Any] | None"]


class EnvRunner:
    """Owns some sub-envs, their seed streams and their autoreset state."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], autoreset_mode: AutoresetMode):
        self.envs = [env_fn() for env_fn in env_fns]
        self.autoreset_mode = autoreset_mode
        self.streams: list[SeedStream | None] = [None] * len(self.envs)
        self.needs_reset = [False] * len(self.envs)

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
            results.append(env.reset(seed=seed, options=options))
            self.needs_reset[index] = False
        return results

    def _next_seed(self, index: int) -> int | None:
        stream = self.streams[index]
        return None if stream is None else stream.next()

    def step(self, actions: Sequence[Any], mask: Sequence[bool]) -> list[StepResult | None]:
        mode = self.autoreset_mode
        results: list[StepResult | None] = []
        for index, env in enumerate(self.envs):
            if not mask[index]:
                results.append(None)
                continue
            if self.needs_reset[index]:
                observation, info = env.reset(seed=self._next_seed(index))
                self.needs_reset[index] = False
                results.append((observation, 0.0, False, False, info, None, None))
                continue
            observation, reward, terminated, truncated, info = env.step(actions[index])
            if terminated or truncated:
                if mode is AutoresetMode.NEXT_STEP:
                    self.needs_reset[index] = True
                elif mode is AutoresetMode.SAME_STEP:
                    final_observation, final_info = observation, info
                    observation, info = env.reset(seed=self._next_seed(index))
                    results.append(
                        (observation, float(reward), terminated, truncated, info,
                         final_observation, final_info)
                    )  # fmt: skip
                    continue
            results.append((observation, float(reward), terminated, truncated, info, None, None))
        return results

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


def worker_main(connection: Connection, env_fns_pickled: bytes, autoreset_mode: str) -> None:
    """Serve commands ``(name, args)`` from the parent until ``close``; errors travel back as
    ``("error", traceback_text)`` and the worker keeps serving."""
    import cloudpickle

    runner = None
    try:
        runner = EnvRunner(cloudpickle.loads(env_fns_pickled), AutoresetMode(autoreset_mode))
        connection.send(("ok", len(runner.envs)))
        while True:
            command, args = connection.recv()
            if command == "close":
                runner.close()
                connection.send(("ok", None))
                break
            try:
                connection.send(("ok", getattr(runner, command)(*args)))
            except Exception:  # report any env failure to the parent, keep serving
                connection.send(("error", traceback.format_exc()))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except Exception:
        connection.send(("error", traceback.format_exc()))
    finally:
        connection.close()
