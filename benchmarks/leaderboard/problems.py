"""Problems, not seeds: which problem each episode starts from, whether a model trained on it,
and paired comparisons whose intervals count distinct problems.

Seeds repeat problems (``grl/Blocksworld-v0`` deals about 150 problems over 600 eval seeds) and a
greedy agent's outcome depends only on the problem, so episodes of one problem are not
independent. Everything here keys an episode by ``TextEnv.problem_key()`` (its start state and
goal, canonically).

**Cluster bootstrap** (:func:`paired_by_problem`): ``B - A`` of paired successes, the point
estimate the mean over seeds (as the seed-level figure), the 95% interval the percentile
interval of :data:`~agent_envs.benchmarks.leaderboard.stats.BOOTSTRAP_REPS` replicates that
each draw the distinct problems with replacement (``RandomState(BOOTSTRAP_SEED).randint``) and
take every seed of each drawn problem (the ratio of summed differences to summed seeds). With
one seed per problem it is the ordinary paired bootstrap over seeds.

**Problem split** (:func:`in_train_part`): a problem is in the train part of split
``(fraction, seed)`` when the first 8 bytes of ``sha256(f"{seed}#{key}")``, read as a fraction
of 2**64, fall below ``fraction``; defined for every problem without listing the problem space,
the same in every process.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from agent_envs.benchmarks.leaderboard.stats import BOOTSTRAP_REPS, BOOTSTRAP_SEED, CONFIDENCE

__all__ = [
    "compare",
    "in_train_part",
    "paired_by_problem",
    "problem_keys",
    "run_problem_keys",
    "run_successes",
]


def problem_keys(
    env_id: str, seeds: Iterable[int], env_spec: Mapping[str, Any] | None = None
) -> dict[int, str]:
    """``seed -> problem key`` of ``env_id`` (built from a run manifest's ``env_kwargs`` entry
    ``env_spec`` when given, else ``gymnasium.make(env_id)``)."""
    import gymnasium

    import agent_envs  # noqa: F401  (registers the grl/* ids)

    if env_spec is not None:
        from agent_envs.benchmarks.leaderboard.replay import make_env

        env = make_env(env_spec)
    else:
        env = gymnasium.make(env_id)
    keys = {}
    try:
        for seed in seeds:
            env.reset(seed=int(seed))
            keys[int(seed)] = env.unwrapped.problem_key()
    finally:
        env.close()
    return keys


def in_train_part(key: str, fraction: float, seed: int) -> bool:
    """Whether problem ``key`` is in the train part of the split ``(fraction, seed)``."""
    digest = hashlib.sha256(f"{seed}#{key}".encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def paired_by_problem(
    a: Sequence[float],
    b: Sequence[float],
    problems: Sequence[str],
    *,
    reps: int = BOOTSTRAP_REPS,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """``B - A`` of paired per-seed values (success 0/1) with seed ``i`` dealing problem
    ``problems[i]``: ``n`` seeds, ``problems`` (distinct), ``mean`` (over seeds) and the
    cluster-bootstrap interval ``low``, ``high`` over problems (module docstring)."""
    if not len(a) == len(b) == len(problems) or not len(a):
        raise ValueError(
            f"paired_by_problem needs equal, non-zero lengths: {len(a)}, {len(b)}, {len(problems)}"
        )
    differences = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    _, cluster = np.unique(np.asarray(problems), return_inverse=True)
    count = int(cluster.max()) + 1
    sums = np.bincount(cluster, differences, count)
    sizes = np.bincount(cluster, None, count)
    draws = np.random.RandomState(seed).randint(0, count, size=(reps, count))
    replicates = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return {
        "n": len(differences),
        "problems": count,
        "mean": float(differences.mean()),
        "low": float(low),
        "high": float(high),
        "method": "cluster bootstrap over problems",
    }


def run_successes(folder: Path) -> dict[tuple[str, str], dict[int, float]]:
    """``(agent, env_id) -> {seed: success}`` of the leaderboard run folder ``folder``."""
    from agent_envs.benchmarks.leaderboard.run import episodes_file, read_episodes

    out: dict[tuple[str, str], dict[int, float]] = {}
    for trajectory in read_episodes(episodes_file(folder)):
        out.setdefault((trajectory.agent, trajectory.env_id), {})[int(trajectory.seed)] = float(
            trajectory.success
        )
    return out


def run_problem_keys(folder: Path, env_id: str) -> dict[int, str]:
    """``seed -> problem key`` of every seed the run in ``folder`` lists for ``env_id``, the
    env built as its manifest records."""
    settings = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["settings"]
    return problem_keys(env_id, settings["seeds"][env_id], settings["env_kwargs"][env_id])


def compare(
    a: Mapping[int, float], b: Mapping[int, float], keys: Mapping[int, str], seeds: Sequence[int]
) -> dict[str, Any]:
    """``B - A`` of per-seed successes on ``seeds``: ``"seeds"`` (Newcombe's paired interval,
    each seed counted once: :func:`~agent_envs.benchmarks.leaderboard.stats.paired_success`)
    and ``"problems"`` (:func:`paired_by_problem`)."""
    from agent_envs.benchmarks.leaderboard.stats import paired_success

    first, second = [a[seed] for seed in seeds], [b[seed] for seed in seeds]
    return {
        "seeds": paired_success(first, second),
        "problems": paired_by_problem(first, second, [keys[seed] for seed in seeds]),
    }
