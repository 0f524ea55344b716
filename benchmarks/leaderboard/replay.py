"""Replaying a leaderboard run: every recorded episode is played again on its env.

A record is only as good as the env behind it: a step reward raised by 10 with the return and
the success edited to match is consistent with itself, and only the env can tell that it never
paid that reward. :func:`replay_mismatches` builds each env of a run from the manifest
(``settings.env_kwargs``: the entry point and keyword arguments the run was played with; one
env per id, reset for each of its episodes), resets it with the record's seed, steps it with
the record's replies in order and compares, turn by turn:

- the observation the reply answered (``steps[t].observation``), the reward, the parsed
  actions, the state hash and every key of the step's ``info`` (``success``, ``turn``,
  ``truncation_reason``, ``action_valid``, ``episode_seed``, the env's own keys);
- that the env did not end the episode before the record's last turn;
- at the end: ``terminated``, ``truncated``, ``truncation_reason``, ``success``,
  ``final_observation`` and the chat ``messages`` (system = the env's instructions, then the
  observations and replies).

An episode may end without the env ending it only the ways the rollout collector ends one:
at the agent's turn cap (``settings.agents[].max_turns``; ``truncation_reason="max_turns"``)
or when its engine failed (``error`` set; ``truncation_reason="error"``, the turns before the
failure are checked). Numbers are compared within 1e-9 relative / 1e-12 absolute (JSON
formatting of floats); everything else exactly. Token ids and logprobs are not replayed here
(they need the model; they enter no number of the report): who played an episode is
`agent_envs.benchmarks.leaderboard.provenance`'s business (scripted agents re-played, model
agents' tokens re-scored with their pinned checkpoint).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gymnasium.envs.registration import load_env_creator

from agent_envs.core.records import Trajectory, json_safe

__all__ = [
    "Mismatch",
    "env_construction",
    "make_env",
    "replay_episode",
    "replay_mismatches",
    "summary_line",
]

_MISSING = "<absent>"
_SHOWN = 60  # characters of a differing value shown on each side


@dataclass(frozen=True)
class Mismatch:
    """One field of one record that its replay does not reproduce (``turn`` 0: the episode
    as a whole)."""

    agent: str | None
    env_id: str
    seed: int | None
    turn: int
    field: str
    recorded: Any
    replayed: Any

    @property
    def record(self) -> str:
        return f"({self.agent}, {self.env_id}, seed {self.seed})"

    def __str__(self) -> str:
        where = f"turn {self.turn}" if self.turn else "episode"
        recorded, replayed = _shown(self.recorded, self.replayed)
        return f"{self.record} {where}: {self.field}: recorded {recorded}, replayed {replayed}"


def _shown(recorded: Any, replayed: Any) -> tuple[str, str]:
    """Both values, shortened to the neighbourhood of their first difference."""
    if isinstance(recorded, str) and isinstance(replayed, str):
        start = next(
            (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
            min(len(recorded), len(replayed)),
        )
        if len(recorded) > _SHOWN * 2 or len(replayed) > _SHOWN * 2:
            low = max(0, start - _SHOWN // 2)
            return (
                f"{recorded[low : low + _SHOWN * 2]!r} (char {start} of {len(recorded)})",
                f"{replayed[low : low + _SHOWN * 2]!r} (char {start} of {len(replayed)})",
            )
    texts = []
    for value in (recorded, replayed):
        text = repr(value)
        texts.append(text if len(text) <= _SHOWN * 2 else text[: _SHOWN * 2] + "...")
    return texts[0], texts[1]


def _same(recorded: Any, replayed: Any) -> bool:
    """Equal as JSON values, numbers within float-formatting tolerance."""
    if isinstance(recorded, bool) or isinstance(replayed, bool):
        return recorded is replayed
    if isinstance(recorded, (int, float)) and isinstance(replayed, (int, float)):
        if math.isnan(recorded) or math.isnan(replayed):
            return math.isnan(recorded) and math.isnan(replayed)
        return math.isclose(recorded, replayed, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        return recorded.keys() == replayed.keys() and all(
            _same(recorded[key], replayed[key]) for key in recorded
        )
    if isinstance(recorded, list) and isinstance(replayed, list):
        return len(recorded) == len(replayed) and all(
            _same(a, b) for a, b in zip(recorded, replayed, strict=True)
        )
    return type(recorded) is type(replayed) and recorded == replayed


def _as_json(value: Any) -> Any:
    """``value`` as it reads back from a record (numpy values, tuples → JSON values)."""
    return json.loads(json.dumps(json_safe(value)))


def env_construction(env_spec: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(entry point, keyword arguments)`` of the env a manifest entry (``entry_point``,
    ``kwargs``, ``max_episode_steps``) describes, as ``gymnasium.make_vec`` builds each
    sub-env: ``max_turns`` defaults to ``max_episode_steps``. Two entries that build the same
    env give equal values."""
    kwargs = dict(env_spec["kwargs"])
    if kwargs.get("max_turns") is None and env_spec.get("max_episode_steps") is not None:
        kwargs["max_turns"] = env_spec["max_episode_steps"]
    return str(env_spec["entry_point"]), kwargs


def make_env(env_spec: Mapping[str, Any]) -> Any:
    """The env a run played, from its manifest entry (see :func:`env_construction`)."""
    entry_point, kwargs = env_construction(env_spec)
    return load_env_creator(entry_point)(**kwargs)


def replay_episode(trajectory: Trajectory, env: Any, *, max_turns: int | None) -> list[Mismatch]:
    """Every field of ``trajectory`` that playing its replies on ``env`` (from its seed) does
    not reproduce; ``max_turns`` is the agent's turn cap (``None``: the env's own)."""
    found: list[Mismatch] = []

    def check(turn: int, name: str, recorded: Any, replayed: Any) -> None:
        if isinstance(recorded, dict) and isinstance(replayed, dict):
            for key in sorted(set(recorded) | set(replayed), key=str):
                check(turn, f"{name}.{key}", recorded.get(key, _MISSING),
                      replayed.get(key, _MISSING))  # fmt: skip
        elif not _same(recorded, replayed):
            found.append(Mismatch(trajectory.agent, trajectory.env_id, trajectory.seed, turn,
                                  name, recorded, replayed))  # fmt: skip

    if trajectory.seed is None:
        check(0, "seed", None, "a seed to replay from")
        return found
    try:
        observation, info = env.reset(seed=int(trajectory.seed))
        messages = [
            {"role": "system", "content": env.unwrapped.instructions},
            {"role": "user", "content": observation},
        ]
    except Exception as error:  # the record names an env or seed that cannot be played
        check(0, "reset", "an episode", f"raised {error!r}")
        return found
    terminated = truncated = False
    info = _as_json(info)
    steps = trajectory.steps
    for turn, step in enumerate(steps, 1):
        if terminated or truncated:
            check(turn, "turns", len(steps), f"the env ended the episode after turn {turn - 1}")
            break
        check(turn, "observation", step.observation, observation)
        try:
            observation, reward, terminated, truncated, info = env.step(step.reply)
        except Exception as error:  # an env must never raise on a reply: report it, stop here
            check(turn, "step", "a step", f"raised {error!r}")
            return found
        info = _as_json(info)
        check(turn, "reward", step.reward, float(reward))
        check(turn, "parsed_actions", step.parsed_actions, info.get("parsed_actions", _MISSING))
        check(turn, "state_hash", step.state_hash, info.get("state_hash"))
        check(turn, "info", step.info, info)
        messages += [
            {"role": "assistant", "content": step.reply},
            {"role": "user", "content": observation},
        ]
    else:
        _check_end(trajectory, terminated, truncated, info, max_turns, check)
    check(0, "final_observation", trajectory.final_observation, observation)
    check(0, "success", trajectory.success, bool(info.get("success", False)))
    if len(trajectory.messages) != len(messages):
        check(0, "messages", f"{len(trajectory.messages)} messages", f"{len(messages)} messages")
    else:
        for index, (recorded, replayed) in enumerate(
            zip(trajectory.messages, messages, strict=True)
        ):
            check(0, f"messages[{index}]", recorded, replayed)
    return found


def _check_end(
    trajectory: Trajectory,
    terminated: bool,
    truncated: bool,
    info: Mapping[str, Any],
    max_turns: int | None,
    check: Callable[[int, str, Any, Any], None],
) -> None:
    """How the episode ended: by the env, or by the collector (turn cap, engine error)."""
    turns = len(trajectory.steps)
    if terminated or truncated:
        end = (terminated, truncated and not terminated, info.get("truncation_reason"), None)
    elif trajectory.error is not None:
        end = (False, True, "error", trajectory.error)
    elif max_turns is not None and turns >= max_turns:
        end = (False, True, "max_turns", None)
    else:
        check(0, "end", f"ended after turn {turns}", "the episode was still running")
        return
    if max_turns is not None and turns > max_turns:
        check(0, "turns", turns, f"at most {max_turns} (the agent's turn cap)")
    check(0, "terminated", trajectory.terminated, end[0])
    check(0, "truncated", trajectory.truncated, end[1])
    check(0, "truncation_reason", trajectory.truncation_reason, end[2])
    check(0, "error", trajectory.error, end[3])


def replay_mismatches(
    trajectories: Iterable[Trajectory],
    settings: Mapping[str, Any],
    *,
    timings: dict[str, float] | None = None,
) -> list[Mismatch]:
    """Replay every trajectory on the env its run's ``settings`` (the manifest's) describe;
    returns every mismatch, in record order. ``timings`` (when given) receives the seconds
    spent per env id."""
    caps = {agent["name"]: agent.get("max_turns") for agent in settings["agents"]}
    by_env: dict[str, list[tuple[int, Trajectory]]] = {}
    for index, trajectory in enumerate(trajectories):
        by_env.setdefault(trajectory.env_id, []).append((index, trajectory))
    found: list[tuple[int, Mismatch]] = []
    for env_id, records in by_env.items():
        started = time.perf_counter()
        env_spec = settings["env_kwargs"].get(env_id)
        if env_spec is None:
            for index, t in records:
                found.append((index, Mismatch(t.agent, env_id, t.seed, 0, "env_id", env_id,
                                              "an env of the manifest")))  # fmt: skip
            continue
        try:
            env = make_env(env_spec)
        except Exception as error:  # e.g. a data file of the run that is not here
            for index, t in records:
                found.append((index, Mismatch(t.agent, env_id, t.seed, 0, "env",
                                              "an env", f"raised {error!r}")))  # fmt: skip
            continue
        try:
            for index, trajectory in records:
                cap = caps.get(trajectory.agent)
                found += [(index, m) for m in replay_episode(trajectory, env, max_turns=cap)]
        finally:
            env.close()
        if timings is not None:
            timings[env_id] = time.perf_counter() - started
    return [mismatch for _, mismatch in sorted(found, key=lambda item: item[0])]


def summary_line(mismatches: Sequence[Mismatch], total: int) -> str:
    """``N of M episodes do not replay (env: count, ...)``."""
    records = {(m.agent, m.env_id, m.seed) for m in mismatches}
    per_env: dict[str, int] = {}
    for _, env_id, _ in records:
        per_env[env_id] = per_env.get(env_id, 0) + 1
    parts = ", ".join(f"{env_id}: {count}" for env_id, count in sorted(per_env.items()))
    return f"{len(records)} of {total} episodes do not replay on their env ({parts})"
