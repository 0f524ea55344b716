"""TRL's ``environment_factory`` route, for tool-calling models: the env's turn as a tool.

:func:`make_environment_factory` builds the class TRL instantiates per episode and
:func:`make_tool_dataset` the conversational dataset it reads.
"""

from __future__ import annotations

import copyreg
from collections.abc import Iterable
from typing import Any

from agent_envs.adapters.trl.rollout import make_episode_dataset

__all__ = ["make_environment_factory", "make_tool_dataset"]


def make_tool_dataset(env_id: str, seeds: Iterable[int], **env_kwargs: Any) -> Any:
    """The dataset for :func:`make_environment_factory`: one row per seed, ``prompt`` a user
    message asking to play the episode with the ``play`` tool (TRL appends the first
    observation to it), ``seed`` the episode's seed."""
    dataset = make_episode_dataset(env_id, seeds, **env_kwargs)
    request = (
        f"Play this {env_id.split('/')[-1]} episode. Call the play tool once per turn with "
        "your answer; the current state follows.\n"
    )
    return dataset.map(lambda row: {"prompt": [{"role": "user", "content": request}]})


def make_environment_factory(env_id: str, **env_kwargs: Any) -> type:
    """A class for TRL's ``environment_factory`` (tool-calling models): ``reset(**row)``
    starts the episode of the row's ``seed`` and returns its first observation, the public
    method ``play`` is the tool (one turn: the env's answer format, documented with this env's
    instructions), ``get_reward()`` is the episode return so far.

    TRL calls ``reset`` with the dataset row and appends the observation it returns to the
    row's last prompt message, so use :func:`make_tool_dataset` (conversational prompts and
    a ``seed`` column). The tool's docstring is the env's own instructions, so the model sees
    the rules, the legend and the answer format in the tool schema.
    """
    import gymnasium

    import agent_envs  # noqa: F401

    probe = gymnasium.make(env_id, **env_kwargs)
    instructions = probe.unwrapped.instructions
    probe.close()

    class TextEnvironment(metaclass=_EnvironmentClass):
        def __init__(self) -> None:
            self.env = gymnasium.make(env_id, **env_kwargs)
            self.reward = 0.0
            self.done = False
            self.info: dict[str, Any] = {}

        def reset(self, seed: int | None = None, **_: Any) -> str:
            observation, self.info = self.env.reset(seed=None if seed is None else int(seed))
            self.reward = 0.0
            self.done = False
            return observation

        def play(self, answer: str) -> str:
            if self.done:
                return "The episode is over."
            observation, reward, terminated, truncated, self.info = self.env.step(answer)
            self.reward += float(reward)
            self.done = bool(terminated or truncated)
            return observation + ("\nThe episode is over." if self.done else "")

        def get_reward(self) -> float:
            return self.reward

    TextEnvironment.play.__doc__ = (
        f"Play one turn of {env_id}.\n\n{instructions}\n\n"
        "Args:\n    answer: your reply for this turn, containing <answer>...</answer>.\n\n"
        "Returns:\n    The next observation (and whether the episode is over)."
    )
    parts = env_id.split("/")[-1].split("-")[:-1]  # "Sokoban-8x8-v0" -> Sokoban8x8
    TextEnvironment.__name__ = "".join(part[:1].upper() + part[1:] for part in parts) + "Tool"
    TextEnvironment.__qualname__ = TextEnvironment.__name__
    TextEnvironment._factory_args = (env_id, dict(env_kwargs))
    return TextEnvironment


class _EnvironmentClass(type):
    """Metaclass of :func:`make_environment_factory`'s classes: they pickle as the call that
    builds them (TRL's ``AsyncGRPOTrainer`` pickles its ``environment_factory`` into a spawned
    rollout process; a class made inside a function cannot be pickled by reference)."""


def _rebuild_environment_class(env_id: str, env_kwargs: dict[str, Any]) -> type:
    return make_environment_factory(env_id, **env_kwargs)


copyreg.pickle(_EnvironmentClass, lambda cls: (_rebuild_environment_class, cls._factory_args))
