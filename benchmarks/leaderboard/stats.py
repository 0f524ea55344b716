"""The leaderboard's arithmetic: per-episode metrics, summaries with standard errors, paired
comparisons, and the check that a summary is what its trajectories say.

Everything here is pure (no I/O): the same functions build the summary of a run and, in
``--validate``, rebuild it from the trajectories to compare.

**Per-episode metrics** (from the trajectory's steps, never from stored totals):

``success``  1.0 when the episode ended solved, else 0.0;
``return``   the sum of the step rewards (``math.fsum``);
``turns``    the number of replies the env received;
``validity`` the fraction of those turns whose reply was a valid action
             (``info["action_valid"]``); 0.0 for an episode with no turns.

**Per (env, agent)**: the mean of each metric over the episodes and its standard error
``s / sqrt(n)`` (``s``: the sample standard deviation, ``n - 1`` in the denominator; 0 when
``n < 2``).

**Overall, per agent**: the unweighted mean over the envs the agent ran of the per-env means
(every env counts the same whatever its episode count); its standard error is
``sqrt(sum of squared per-env SEs) / k`` for ``k`` envs (envs are independent samples).

**Paired comparison** of agents ``A`` and ``B`` on one env: over the seeds both ran, the
per-seed differences ``d = B - A``; reported as ``mean(d) ± 1.96 · SE(d)`` (a normal
approximation of the 95% interval; the pairing removes the between-seed variance the two
agents share). Overall: the mean over the shared envs of the per-env mean differences, with
the SE combined as above.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent_envs.core.records import Trajectory

__all__ = [
    "METRICS",
    "PAIRED_METRICS",
    "Z95",
    "compare_summaries",
    "episode_metrics",
    "mean_and_stderr",
    "paired_difference",
    "summarize",
]

#: metric name → what the report calls it
METRICS: dict[str, str] = {
    "success": "success rate",
    "return": "mean return",
    "turns": "mean turns",
    "validity": "action validity",
}
#: the metrics compared seed by seed between agents
PAIRED_METRICS: tuple[str, ...] = ("success", "return")
#: the two-sided 95% normal quantile
Z95 = 1.96


def mean_and_stderr(values: Sequence[float]) -> tuple[float, float]:
    """``(mean, standard error of the mean)``; the SE is 0.0 for fewer than two values."""
    if not values:
        raise ValueError("mean_and_stderr needs at least one value")
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    variance = math.fsum((value - mean) ** 2 for value in values) / (n - 1)
    return mean, math.sqrt(variance / n)


def episode_metrics(trajectory: Trajectory) -> dict[str, float]:
    """The four per-episode metrics of ``trajectory`` (see the module docstring)."""
    turns = len(trajectory.steps)
    valid = sum(1 for step in trajectory.steps if step.info.get("action_valid") is True)
    return {
        "success": 1.0 if trajectory.success else 0.0,
        "return": math.fsum(step.reward for step in trajectory.steps),
        "turns": float(turns),
        "validity": valid / turns if turns else 0.0,
    }


def paired_difference(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """``B - A`` over paired values: mean, SE and the 95% interval ``mean ± 1.96 · SE``."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    mean, se = mean_and_stderr([y - x for x, y in zip(a, b, strict=True)])
    return {"n": len(a), "mean": mean, "se": se, "low": mean - Z95 * se, "high": mean + Z95 * se}


def _combine(parts: Sequence[Mapping[str, float]]) -> dict[str, float]:
    k = len(parts)
    mean = math.fsum(part["mean"] for part in parts) / k
    se = math.sqrt(math.fsum(part["se"] ** 2 for part in parts)) / k
    return {"mean": mean, "se": se}


def summarize(
    trajectories: Iterable[Trajectory], envs: Sequence[str], agents: Sequence[str]
) -> dict[str, Any]:
    """The summary of a run: ``per_env[env][agent]``, ``overall[agent]`` and ``paired``.

    ``envs`` and ``agents`` fix the order of the report (the manifest's order); trajectories
    of other envs or agents are an error, as are two trajectories of one (agent, env, seed).
    """
    by_key: dict[tuple[str, str], dict[int, dict[str, float]]] = {}
    for trajectory in trajectories:
        if trajectory.env_id not in envs or trajectory.agent not in agents:
            raise ValueError(
                f"trajectory of agent {trajectory.agent!r} on {trajectory.env_id!r} is not "
                "part of this run"
            )
        seeds = by_key.setdefault((trajectory.env_id, trajectory.agent), {})
        if trajectory.seed in seeds:
            raise ValueError(
                f"two trajectories of agent {trajectory.agent!r} on {trajectory.env_id!r} "
                f"with seed {trajectory.seed}"
            )
        seeds[int(trajectory.seed)] = episode_metrics(trajectory)

    per_env: dict[str, dict[str, Any]] = {}
    for env_id in envs:
        rows: dict[str, Any] = {}
        for agent in agents:
            seeds = by_key.get((env_id, agent))
            if not seeds:
                continue
            row: dict[str, Any] = {"n": len(seeds), "seeds": sorted(seeds)}
            for metric in METRICS:
                mean, se = mean_and_stderr([seeds[seed][metric] for seed in sorted(seeds)])
                row[metric] = {"mean": mean, "se": se}
            rows[agent] = row
        if rows:
            per_env[env_id] = rows

    overall: dict[str, Any] = {}
    for agent in agents:
        rows = [per_env[env_id][agent] for env_id in per_env if agent in per_env[env_id]]
        if not rows:
            continue
        entry: dict[str, Any] = {"envs": len(rows), "episodes": sum(row["n"] for row in rows)}
        for metric in METRICS:
            entry[metric] = _combine([row[metric] for row in rows])
        overall[agent] = entry

    paired: list[dict[str, Any]] = []
    for first, agent_a in enumerate(agents):
        for agent_b in agents[first + 1 :]:
            per_env_diffs: dict[str, dict[str, Any]] = {}
            for env_id in per_env:
                seeds_a = by_key.get((env_id, agent_a), {})
                seeds_b = by_key.get((env_id, agent_b), {})
                shared = sorted(set(seeds_a) & set(seeds_b))
                if len(shared) < 2:
                    continue
                per_env_diffs[env_id] = {
                    metric: paired_difference(
                        [seeds_a[seed][metric] for seed in shared],
                        [seeds_b[seed][metric] for seed in shared],
                    )
                    for metric in PAIRED_METRICS
                }
            if not per_env_diffs:
                continue
            overall_diff = {}
            for metric in PAIRED_METRICS:
                combined = _combine([diffs[metric] for diffs in per_env_diffs.values()])
                combined["low"] = combined["mean"] - Z95 * combined["se"]
                combined["high"] = combined["mean"] + Z95 * combined["se"]
                combined["n"] = sum(diffs[metric]["n"] for diffs in per_env_diffs.values())
                overall_diff[metric] = combined
            paired.append(
                {"a": agent_a, "b": agent_b, "per_env": per_env_diffs, "overall": overall_diff}
            )
    return {"per_env": per_env, "overall": overall, "paired": paired}


def compare_summaries(stored: Any, recomputed: Any, path: str = "summary") -> list[str]:
    """Every place where ``stored`` differs from ``recomputed`` (numbers within 1e-9
    relative / 1e-12 absolute; keys, lengths and other values exactly)."""
    problems: list[str] = []
    if isinstance(recomputed, dict):
        if not isinstance(stored, dict):
            return [f"{path}: expected an object, found {type(stored).__name__}"]
        for key in sorted(set(stored) | set(recomputed), key=str):
            if key not in recomputed:
                problems.append(f"{path}.{key}: present but not computed from the trajectories")
            elif key not in stored:
                problems.append(f"{path}.{key}: missing (recomputed {recomputed[key]!r})")
            else:
                problems += compare_summaries(stored[key], recomputed[key], f"{path}.{key}")
        return problems
    if isinstance(recomputed, list):
        if not isinstance(stored, list) or len(stored) != len(recomputed):
            return [f"{path}: expected a list of {len(recomputed)} entries, found {stored!r}"]
        for index, (left, right) in enumerate(zip(stored, recomputed, strict=True)):
            problems += compare_summaries(left, right, f"{path}[{index}]")
        return problems
    if isinstance(recomputed, float) or (
        isinstance(recomputed, int) and not isinstance(recomputed, bool)
    ):
        if isinstance(stored, bool) or not isinstance(stored, (int, float)):
            return [f"{path}: stored {stored!r}, recomputed {recomputed!r}"]
        if not math.isclose(stored, recomputed, rel_tol=1e-9, abs_tol=1e-12):
            return [f"{path}: stored {stored!r}, recomputed {recomputed!r}"]
        return []
    if stored != recomputed:
        return [f"{path}: stored {stored!r}, recomputed {recomputed!r}"]
    return []
