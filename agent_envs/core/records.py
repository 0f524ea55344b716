"""One record of an episode, everywhere: :class:`Trajectory` made of :class:`Step` s.

The rollout collector writes it, the leaderboard and SFT export read it, trainers take its
token fields. A record is plain data; :func:`write_jsonl` / :func:`read_jsonl` move it in and
out of JSON Lines (one trajectory per line), turning numpy scalars and arrays into JSON values
on the way out, so ``read_jsonl(write_jsonl(x)) == x`` for every record the collector builds.

Token fields (present when an engine produced the episode, ``None`` for scripted agents that
never tokenized anything) follow the token-in token-out layout of the collector:

``prompt_ids``
    the chat-template rendering of the system message and the first observation, ending
    with the template's generation prompt;
``turn_completion_ids[t]`` / ``turn_logprobs[t]``
    the tokens the model sampled in turn ``t`` exactly as sampled, and their log-probabilities
    under the sampling distribution (``None`` when the engine returned none);
``turn_env_ids[t]``
    the environment/template tokens appended after turn ``t``: the end of the assistant
    message the model did not sample itself, the next observation and the next generation
    prompt. The last turn's list is empty (nothing follows the last reply in training data).

:attr:`Trajectory.completion_ids` concatenates the turns (model tokens then env tokens) and
:attr:`Trajectory.env_mask` marks them 1 = model token, 0 = environment/template token.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["Step", "Trajectory", "json_safe", "read_jsonl", "write_jsonl"]


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars/arrays, tuples and sets turned into JSON values (dict keys
    become strings, non-finite floats stay floats: Python's json writes them as NaN/Infinity)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [json_safe(item) for item in value.tolist()]
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return repr(value)


@dataclass
class Step:
    """One turn: what the model saw, what it replied, and what the env did with it."""

    observation: str
    reply: str
    parsed_actions: list[str]
    reward: float
    info: dict[str, Any]
    state_hash: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        return cls(
            observation=data["observation"],
            reply=data["reply"],
            parsed_actions=list(data["parsed_actions"]),
            reward=float(data["reward"]),
            info=dict(data["info"]),
            state_hash=data.get("state_hash"),
        )


@dataclass
class Trajectory:
    """One episode (see the module docstring for the token fields).

    ``truncation_reason`` is the env's (``"max_turns"``, ``"action_budget"``) or the
    collector's: ``"context"`` (the next observation would not fit in ``max_total_tokens``),
    ``"error"`` (the engine failed for this episode; ``error`` says why).
    """

    env_id: str
    seed: int | None
    group_id: int | None = None
    steps: list[Step] = field(default_factory=list)
    messages: list[dict[str, str]] = field(default_factory=list)
    final_observation: str = ""
    terminated: bool = False
    truncated: bool = False
    truncation_reason: str | None = None
    success: bool = False
    agent: str | None = None
    error: str | None = None
    prompt_ids: list[int] | None = None
    turn_completion_ids: list[list[int]] | None = None
    turn_logprobs: list[list[float]] | None = None
    turn_env_ids: list[list[int]] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    # ----------------------------------------------------------------- derived values
    @property
    def episode_return(self) -> float:
        return math.fsum(step.reward for step in self.steps)

    @property
    def num_turns(self) -> int:
        return len(self.steps)

    @property
    def has_tokens(self) -> bool:
        return self.prompt_ids is not None and self.turn_completion_ids is not None

    @property
    def completion_ids(self) -> list[int]:
        """Every token after the prompt: each turn's model tokens, then its env tokens."""
        ids: list[int] = []
        for model, env in zip(self._turns(), self._env_turns(), strict=True):
            ids += model
            ids += env
        return ids

    @property
    def env_mask(self) -> list[int]:
        """1 for a model-sampled token of :attr:`completion_ids`, 0 for an env/template one."""
        mask: list[int] = []
        for model, env in zip(self._turns(), self._env_turns(), strict=True):
            mask += [1] * len(model)
            mask += [0] * len(env)
        return mask

    @property
    def completion_logprobs(self) -> list[float] | None:
        """Sampling log-probabilities aligned with :attr:`completion_ids` (0.0 on env tokens);
        ``None`` when the engine returned none."""
        if self.turn_logprobs is None:
            return None
        values: list[float] = []
        for logprobs, env in zip(self.turn_logprobs, self._env_turns(), strict=True):
            values += logprobs
            values += [0.0] * len(env)
        return values

    def _turns(self) -> list[list[int]]:
        if self.turn_completion_ids is None:
            raise ValueError(f"trajectory of {self.env_id} seed {self.seed} has no token fields")
        return self.turn_completion_ids

    def _env_turns(self) -> list[list[int]]:
        if self.turn_env_ids is None:
            return [[] for _ in self._turns()]
        return self.turn_env_ids

    # ----------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict; derived values (return, turns, flat tokens, env mask) are added
        for readers that do not use this class and ignored by :meth:`from_dict`."""
        data = {
            "env_id": self.env_id,
            "seed": self.seed,
            "group_id": self.group_id,
            "agent": self.agent,
            "episode_return": self.episode_return,
            "success": self.success,
            "num_turns": self.num_turns,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "truncation_reason": self.truncation_reason,
            "error": self.error,
            "steps": [step.to_dict() for step in self.steps],
            "messages": self.messages,
            "final_observation": self.final_observation,
            "prompt_ids": self.prompt_ids,
            "turn_completion_ids": self.turn_completion_ids,
            "turn_logprobs": self.turn_logprobs,
            "turn_env_ids": self.turn_env_ids,
            "metadata": self.metadata,
        }
        if self.has_tokens:
            data["completion_ids"] = self.completion_ids
            data["env_mask"] = self.env_mask
        return json_safe(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return cls(
            env_id=data["env_id"],
            seed=data.get("seed"),
            group_id=data.get("group_id"),
            steps=[Step.from_dict(step) for step in data.get("steps", [])],
            messages=[dict(message) for message in data.get("messages", [])],
            final_observation=data.get("final_observation", ""),
            terminated=bool(data.get("terminated", False)),
            truncated=bool(data.get("truncated", False)),
            truncation_reason=data.get("truncation_reason"),
            success=bool(data.get("success", False)),
            agent=data.get("agent"),
            error=data.get("error"),
            prompt_ids=data.get("prompt_ids"),
            turn_completion_ids=data.get("turn_completion_ids"),
            turn_logprobs=data.get("turn_logprobs"),
            turn_env_ids=data.get("turn_env_ids"),
            metadata=dict(data.get("metadata") or {}),
        )


def write_jsonl(trajectories: Iterable[Trajectory], path_or_file: str | Path | IO[str]) -> int:
    """Write one JSON line per trajectory (appends to an open file); returns how many."""
    if isinstance(path_or_file, (str, Path)):
        with open(path_or_file, "w", encoding="utf-8") as handle:
            return write_jsonl(trajectories, handle)
    count = 0
    for trajectory in trajectories:
        path_or_file.write(json.dumps(trajectory.to_dict(), ensure_ascii=True) + "\n")
        count += 1
    return count


def read_jsonl(path_or_file: str | Path | IO[str]) -> Iterator[Trajectory]:
    """Yield the trajectories of a JSON Lines file (blank lines are skipped)."""
    if isinstance(path_or_file, (str, Path)):
        with open(path_or_file, encoding="utf-8") as handle:
            yield from read_jsonl(handle)
        return
    for line in path_or_file:
        if line.strip():
            yield Trajectory.from_dict(json.loads(line))
