"""The leaderboard's arithmetic: per-episode metrics, per-env summaries with intervals,
random-normalized scores, paired comparisons, and the check that a summary is what its
trajectories say.

Everything here is pure (no I/O) and deterministic (every bootstrap draws from its own
``numpy.random.RandomState(BOOTSTRAP_SEED)``, whose stream numpy keeps frozen): the same
functions build the summary of a run and, in ``--validate``, rebuild it to compare.
Intervals are two-sided 95% (:data:`CONFIDENCE`).

**Per-episode metrics** (from the trajectory's steps, never from stored totals):

``success``  1.0 when the episode ended solved, else 0.0;
``return``   the sum of the step rewards (``math.fsum``);
``turns``    the number of replies the env received;
``validity`` the fraction of those turns whose reply was a valid action
             (``info["action_valid"]``); 0.0 for an episode with no turns.

**Per (env, agent)**: each metric's mean and standard error ``s / sqrt(n)`` (``s`` with
``n - 1``; 0 when ``n < 2``). The success rate also gets its **Wilson score interval**
(``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``): always inside [0, 1],
not empty at 0/n or n/n, and right at small ``n``, where ``mean ± 1.96 SE`` is not.

**Random-normalized score** of an env (:func:`normalization`): ``(p - r) / (o - r)`` for a
success rate ``p``, where ``r`` and ``o`` are the success rates of the run's ``random`` and
``oracle`` agents on that env (all their seeds, taken as fixed constants): random scores 0,
oracle 1. An env where either agent is missing, or where ``o == r`` (the scale has no
length), has no normalized score and is left out of every normalized number (the summary's
``normalization`` says why). The per-env interval is the Wilson interval mapped the same way.

**Overall, per agent**: over the envs the agent played that have a normalized score, the
**mean** and the **interquartile mean** (IQM: ``scipy.stats.trim_mean(·, 0.25)`` of the
per-env scores: the middle half of the envs; with fewer than 4 envs nothing is trimmed and
it equals the mean) with **stratified-bootstrap** 95% intervals as rliable recommends
(Agarwal et al. 2021): each of :data:`BOOTSTRAP_REPS` replicates resamples every env's
episodes with replacement, separately per env (rliable's ``StratifiedBootstrap``,
``task_bootstrap=False``), and the interval is the 2.5th-97.5th percentile of the replicate
statistics. The bootstrap needs a rectangular episodes x envs matrix: it uses the first
``m`` published seeds of each env, ``m`` = the fewest the agent played on any of them
(agents play every env on the same number of seeds, so normally all of them). The draws are
rliable's exactly (``RandomState.randint(0, m, (m, envs))`` per replicate, as its
``np.random.choice`` makes them), which the tests check against rliable itself. When every
replicate comes out the same (the agent's episodes ended alike on every env, e.g. 0/100, or
one seed per env) the bootstrap has no spread, which is no evidence of none: the interval is
then the mean (IQM) over envs of the per-env Wilson limits, normalized (``"method":
"wilson"`` in place of ``"bootstrap"``). There is no
average of raw returns or turns across envs: their scales differ (Sokoban's +10, WebShop's
[0, 1]); the mean success rate over envs is kept as a plain number. **Rank**: by mean
normalized score, among the agents that play every env's own turn budget; an agent capped
by ``--model-max-turns`` is marked and not ranked.

**Paired comparisons** of agents ``A`` and ``B`` (``B - A``) on the seeds both played of each
env, for agents with the same turn cap only (an agent capped at K turns is not compared
with uncapped ones):

- success: **Newcombe's hybrid score interval for paired proportions** (Newcombe 1998,
  method 10: from the Wilson intervals of both rates and the correlation of the pairs,
  with its ``n/2`` correction of ``ad - bc``), always inside [-1, 1], with the counts of
  seeds B won (B solved, A did not), lost and tied;
- return: the mean of the per-seed differences with a **percentile bootstrap** interval
  (``scipy.stats.bootstrap``, ``method="percentile"``, :data:`BOOTSTRAP_REPS` resamples,
  ``random_state=RandomState(BOOTSTRAP_SEED)``; it stays inside the range of the observed
  differences; none for a single pair or where every difference is the same), and the
  seeds won, lost and tied;
- overall: the difference of the mean normalized scores over the envs both played that
  have one, with a stratified bootstrap resampling the shared seeds (the same seeds for
  both agents: a paired bootstrap; where it has no spread, e.g. every pair tied, the mean
  over envs of the per-env Newcombe limits divided by the env's ``o - r``, ``"method":
  "newcombe"``), and the won/lost/tied totals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from agent_envs.core.records import Trajectory

__all__ = [
    "BOOTSTRAP_REPS",
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "METRICS",
    "compare_summaries",
    "episode_metrics",
    "mean_and_stderr",
    "newcombe_paired_interval",
    "normalization",
    "paired_return",
    "paired_success",
    "stratified_bootstrap",
    "summarize",
    "wilson_interval",
]

#: metric name → what the report calls it
METRICS: dict[str, str] = {
    "success": "success rate",
    "return": "mean return",
    "turns": "mean turns",
    "validity": "action validity",
}
#: coverage of every interval
CONFIDENCE = 0.95
#: replicates of every bootstrap
BOOTSTRAP_REPS = 5_000
#: the seed of every bootstrap's RandomState (each bootstrap starts from it afresh)
BOOTSTRAP_SEED = 0
#: the scripted agents that fix each env's normalized scale (score 0 and 1)
FLOOR, CEILING = "random", "oracle"
#: bootstrap draws held in memory at once (replicates are drawn in chunks of this many)
_CHUNK = 2_000_000


# --------------------------------------------------------------------------- basics
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


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n`` (scipy's ``binomtest``)."""
    from scipy.stats import binomtest

    if n < 1 or not 0 <= successes <= n:
        raise ValueError(
            f"wilson_interval needs 0 <= successes <= n and n >= 1, got {successes}/{n}"
        )
    ci = binomtest(int(successes), int(n)).proportion_ci(
        confidence_level=confidence, method="wilson"
    )
    return min(max(float(ci.low), 0.0), 1.0), min(max(float(ci.high), 0.0), 1.0)


def newcombe_paired_interval(
    both: int, first_only: int, second_only: int, neither: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Newcombe's (1998) hybrid score interval, method 10, for ``p1 - p2`` of paired
    proportions, from the 2x2 table of pairs: ``both`` succeeded, only the first, only the
    second, ``neither``. ``p1 = (both + first_only) / n``, ``p2 = (both + second_only) / n``;
    with ``[l1, u1]``, ``[l2, u2]`` their Wilson intervals::

        L = (p1 - p2) - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
        U = (p1 - p2) + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2)

    where ``phi`` is the correlation of the pairs with ``A = ad - bc`` replaced by
    ``A - n/2`` when ``A > n/2`` and by 0 when ``0 <= A <= n/2`` (0 when a margin is
    empty), as Newcombe defines it."""
    a, b, c, d = (int(value) for value in (both, first_only, second_only, neither))
    n = a + b + c + d
    if n < 1 or min(a, b, c, d) < 0:
        raise ValueError(f"newcombe_paired_interval needs counts >= 0, n >= 1: {(a, b, c, d)}")
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, confidence)
    l2, u2 = wilson_interval(a + c, n, confidence)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0
    if margins > 0:
        cross = a * d - b * c
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    low_part = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    high_part = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    low = (p1 - p2) - math.sqrt(max(low_part, 0.0))
    high = (p1 - p2) + math.sqrt(max(high_part, 0.0))
    return max(low, -1.0), min(high, 1.0)


def _won_lost(differences: Sequence[float]) -> dict[str, int]:
    return {
        "won": sum(1 for value in differences if value > 0),
        "lost": sum(1 for value in differences if value < 0),
        "tied": sum(1 for value in differences if value == 0),
    }


def _table(a: Sequence[float], b: Sequence[float]) -> tuple[int, int, int, int]:
    """The 2x2 table of ``B - A``: (both solved, only B, only A, neither)."""
    if len(a) != len(b) or not len(a):
        raise ValueError(f"paired values need equal, non-zero lengths: {len(a)} and {len(b)}")
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    return both, only_b, only_a, len(a) - both - only_b - only_a


def _paired_limits(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Newcombe's interval of ``p_B - p_A`` from paired successes."""
    return newcombe_paired_interval(*_table(a, b))


def paired_success(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """``B - A`` of paired successes (0/1 per seed): the difference of the success rates,
    Newcombe's interval (:func:`newcombe_paired_interval`) and the seeds B won, lost, tied."""
    both, first_only, second_only, neither = _table(a, b)
    low, high = newcombe_paired_interval(both, first_only, second_only, neither)
    return {
        "n": len(a),
        "mean": (first_only - second_only) / len(a),
        "low": low,
        "high": high,
        "won": first_only,
        "lost": second_only,
        "tied": both + neither,
    }


def paired_return(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """``B - A`` of paired values: the mean difference, its percentile-bootstrap interval
    (``scipy.stats.bootstrap``; ``None`` for a single pair and where every difference is the
    same: a resample of them has no spread, which is no evidence of none) and the seeds won,
    lost, tied."""
    if len(a) != len(b) or not a:
        raise ValueError(f"paired values need equal, non-zero lengths: {len(a)} and {len(b)}")
    differences = [y - x for x, y in zip(a, b, strict=True)]
    mean = math.fsum(differences) / len(differences)
    low = high = None
    if len(set(differences)) > 1:
        from scipy.stats import bootstrap

        result = bootstrap(
            (np.asarray(differences, dtype=float),),
            np.mean,
            n_resamples=BOOTSTRAP_REPS,
            confidence_level=CONFIDENCE,
            method="percentile",
            random_state=np.random.RandomState(BOOTSTRAP_SEED),
        )
        low = float(result.confidence_interval.low)
        high = float(result.confidence_interval.high)
    return {"n": len(differences), "mean": mean, "low": low, "high": high,
            **_won_lost(differences)}  # fmt: skip


def stratified_bootstrap(
    matrix: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    reps: int = BOOTSTRAP_REPS,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """rliable's stratified bootstrap of a ``runs x tasks`` matrix (here episodes x envs):
    ``(point, low, high)`` of ``statistic``, percentile intervals.

    ``statistic`` maps a batch ``(replicates, runs, tasks)`` to ``(replicates, k)``. Each
    replicate draws ``RandomState(seed).randint(0, runs, (runs, tasks))`` (in sequence: the
    draws rliable's ``StratifiedBootstrap`` makes after ``np.random.seed(seed)``) and takes
    ``matrix[rows, column]`` for every column; the interval is ``np.percentile`` of the
    replicates at ``(1 - confidence) / 2`` and its complement, as ``arch`` computes it."""
    matrix = np.asarray(matrix, dtype=float)
    runs, tasks = matrix.shape
    point = np.asarray(statistic(matrix[None]))[0]
    rng = np.random.RandomState(seed)
    columns = np.arange(tasks)
    chunk = max(1, _CHUNK // (runs * tasks))
    replicates = []
    for start in range(0, reps, chunk):
        rows = rng.randint(0, runs, size=(min(chunk, reps - start), runs, tasks))
        replicates.append(np.asarray(statistic(matrix[rows, columns])))
    values = np.concatenate(replicates)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    return point, low, high


def _mean_and_iqm(batch: np.ndarray) -> np.ndarray:
    from scipy.stats import trim_mean

    per_env = batch.mean(axis=1)  # (replicates, envs)
    return np.stack([per_env.mean(axis=1), trim_mean(per_env, 0.25, axis=1)], axis=1)


def _iqm(values: np.ndarray) -> float:
    from scipy.stats import trim_mean

    return float(trim_mean(values, 0.25))


def _mean_only(batch: np.ndarray) -> np.ndarray:
    return batch.mean(axis=1).mean(axis=1, keepdims=True)


def _interval(point: float, low: float, high: float) -> dict[str, float]:
    return {"mean": float(point), "low": float(low), "high": float(high)}


def _estimate(
    point: float, low: float, high: float, limits: tuple[float, float], closed_form: str
) -> dict[str, Any]:
    """The bootstrap's interval, or, when every replicate came out the same (``low ==
    high``: every env's episodes ended alike, or one seed per env), ``limits``: the
    aggregate of the per-env closed-form limits, named by ``closed_form``."""
    if low == high:
        return {**_interval(point, *limits), "method": closed_form}
    return {**_interval(point, low, high), "method": "bootstrap"}


def _ends(low: float, high: float, span: float) -> tuple[float, float]:
    """``(low, high)`` divided by ``span`` (a negative span swaps the ends)."""
    return (low / span, high / span) if span > 0 else (high / span, low / span)


# --------------------------------------------------------------------------- normalization
def normalization(
    per_env: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Per env: ``floor`` (random's success rate), ``ceiling`` (oracle's) and ``defined``;
    an env without a scale says why in ``note``."""
    scales: dict[str, dict[str, Any]] = {}
    for env_id, rows in per_env.items():
        floor = rows[FLOOR]["success"]["mean"] if FLOOR in rows else None
        ceiling = rows[CEILING]["success"]["mean"] if CEILING in rows else None
        note = None
        if floor is None or ceiling is None:
            missing = [
                name for name, value in ((FLOOR, floor), (CEILING, ceiling)) if value is None
            ]
            note = f"no {' and no '.join(missing)} row"
        elif ceiling == floor:
            note = f"oracle and random both succeed at {floor:.2f}"
        scales[env_id] = {"floor": floor, "ceiling": ceiling, "defined": note is None,
                          "note": note}  # fmt: skip
    return scales


def _normalize(value: float, scale: Mapping[str, Any]) -> float:
    return (value - scale["floor"]) / (scale["ceiling"] - scale["floor"])


# --------------------------------------------------------------------------- the summary
def _collect(
    trajectories: Iterable[Trajectory], envs: Sequence[str], agents: Sequence[str]
) -> dict[tuple[str, str], dict[int, dict[str, float]]]:
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
    return by_key


def _env_row(seeds: Mapping[int, Mapping[str, float]]) -> dict[str, Any]:
    ordered = sorted(seeds)
    row: dict[str, Any] = {"n": len(seeds), "seeds": ordered}
    for metric in METRICS:
        mean, se = mean_and_stderr([seeds[seed][metric] for seed in ordered])
        row[metric] = {"mean": mean, "se": se}
    successes = sum(1 for seed in ordered if seeds[seed]["success"] > 0)
    low, high = wilson_interval(successes, len(ordered))
    row["success"].update(successes=successes, low=low, high=high)
    return row


def _successes(
    by_key: Mapping[tuple[str, str], Mapping[int, Mapping[str, float]]], agent: str
) -> Callable[[str, int], float]:
    """``(env, seed) -> 0.0 or 1.0``: ``agent``'s success on that episode."""
    return lambda env_id, seed: by_key[env_id, agent][seed]["success"]


def _rectangle(
    order: Mapping[str, Sequence[int]], envs: Sequence[str], columns: Callable[[str, int], float]
) -> tuple[np.ndarray, int]:
    """The ``m x len(envs)`` matrix of ``columns(env, seed)`` over the first ``m`` seeds
    of each env's ``order`` (``m``: the shortest)."""
    m = min(len(order[env_id]) for env_id in envs)
    matrix = np.array(
        [[columns(env_id, order[env_id][index]) for env_id in envs] for index in range(m)],
        dtype=float,
    )
    return matrix, m


def summarize(
    trajectories: Iterable[Trajectory],
    envs: Sequence[str],
    agents: Sequence[str],
    caps: Mapping[str, int | None] | None = None,
    published: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """The summary of a run: ``per_env[env][agent]``, ``normalization[env]``,
    ``overall[agent]`` and ``paired`` (see the module docstring).

    ``envs`` and ``agents`` fix the order of the report (the manifest's order); ``caps``
    gives each agent's turn cap (``None``: the env's own budget); ``published`` each env's
    seed list in published order (default: ascending), which picks the "first ``m``
    seeds" of the bootstraps. Trajectories of other envs or agents are an error, as are
    two trajectories of one (agent, env, seed).
    """
    caps = dict(caps or {})
    by_key = _collect(trajectories, envs, agents)

    def order(env_id: str, seeds: Iterable[int]) -> list[int]:
        wanted = set(seeds)
        listed = [seed for seed in (published or {}).get(env_id, []) if seed in wanted]
        return listed + sorted(wanted - set(listed))

    per_env: dict[str, dict[str, Any]] = {}
    for env_id in envs:
        rows = {
            agent: _env_row(by_key[env_id, agent])
            for agent in agents
            if by_key.get((env_id, agent))
        }
        if rows:
            per_env[env_id] = rows
    scales = normalization(per_env)
    for env_id, rows in per_env.items():
        for row in rows.values():
            if not scales[env_id]["defined"]:
                row["normalized"] = None
                continue
            ends = sorted(
                _normalize(row["success"][key], scales[env_id]) for key in ("low", "high")
            )
            row["normalized"] = {"mean": _normalize(row["success"]["mean"], scales[env_id]),
                                 "low": ends[0], "high": ends[1]}  # fmt: skip

    overall: dict[str, Any] = {}
    for agent in agents:
        played = [env_id for env_id in per_env if agent in per_env[env_id]]
        if not played:
            continue
        entry: dict[str, Any] = {
            "envs": len(played),
            "episodes": sum(per_env[env_id][agent]["n"] for env_id in played),
            "success": math.fsum(per_env[env_id][agent]["success"]["mean"] for env_id in played)
            / len(played),
            "capped": caps.get(agent),
            "normalized": None,
        }
        scored = [env_id for env_id in played if scales[env_id]["defined"]]
        if scored:
            seeds = {env_id: order(env_id, by_key[env_id, agent]) for env_id in scored}
            raw, m = _rectangle(seeds, scored, _successes(by_key, agent))
            floors = np.array([scales[env_id]["floor"] for env_id in scored])
            spans = np.array([scales[env_id]["ceiling"] for env_id in scored]) - floors
            point, low, high = stratified_bootstrap((raw - floors) / spans, _mean_and_iqm)
            lows, highs = np.array([
                _ends(*(np.array(wilson_interval(int(k), m)) - floor), span)
                for k, floor, span in zip(raw.sum(axis=0), floors, spans, strict=True)
            ]).T  # fmt: skip
            entry["normalized"] = {
                "envs": len(scored),
                "runs": m,
                "mean": _estimate(point[0], low[0], high[0],
                                  (float(lows.mean()), float(highs.mean())), "wilson"),
                "iqm": _estimate(point[1], low[1], high[1],
                                 (_iqm(lows), _iqm(highs)), "wilson"),
            }  # fmt: skip
        overall[agent] = entry
    _rank(overall)

    paired: list[dict[str, Any]] = []
    for first, agent_a in enumerate(agents):
        for agent_b in agents[first + 1 :]:
            if caps.get(agent_a) != caps.get(agent_b):
                continue  # not like for like: a capped agent meets only its own cap
            pair = _pair(agent_a, agent_b, per_env, by_key, scales, order)
            if pair is not None:
                paired.append(pair)
    return {
        "per_env": per_env,
        "normalization": scales,
        "overall": overall,
        "paired": paired,
        "method": {
            "confidence": CONFIDENCE,
            "bootstrap_reps": BOOTSTRAP_REPS,
            "bootstrap_seed": BOOTSTRAP_SEED,
        },
    }


def _rank(overall: dict[str, Any]) -> None:
    """Competition ranking ("1, 2, 2, 4") by mean normalized score of the uncapped agents
    that have one; the others get ``None``."""
    ranked = {
        agent: entry["normalized"]["mean"]["mean"]
        for agent, entry in overall.items()
        if entry["capped"] is None and entry["normalized"] is not None
    }
    for agent, entry in overall.items():
        score = ranked.get(agent)
        entry["rank"] = (
            None if score is None else 1 + sum(1 for other in ranked.values() if other > score)
        )


def _pair(
    agent_a: str,
    agent_b: str,
    per_env: Mapping[str, Any],
    by_key: Mapping[tuple[str, str], Mapping[int, Mapping[str, float]]],
    scales: Mapping[str, Mapping[str, Any]],
    order: Callable[[str, Iterable[int]], list[int]],
) -> dict[str, Any] | None:
    per_env_diffs: dict[str, dict[str, Any]] = {}
    shared_seeds: dict[str, list[int]] = {}
    for env_id in per_env:
        seeds_a = by_key.get((env_id, agent_a), {})
        seeds_b = by_key.get((env_id, agent_b), {})
        shared = order(env_id, set(seeds_a) & set(seeds_b))
        if not shared:
            continue
        shared_seeds[env_id] = shared
        per_env_diffs[env_id] = {
            "success": paired_success(
                [seeds_a[seed]["success"] for seed in shared],
                [seeds_b[seed]["success"] for seed in shared],
            ),
            "return": paired_return(
                [seeds_a[seed]["return"] for seed in shared],
                [seeds_b[seed]["return"] for seed in shared],
            ),
        }
    if not per_env_diffs:
        return None
    counts = {
        key: sum(diffs["success"][key] for diffs in per_env_diffs.values())
        for key in ("n", "won", "lost", "tied")
    }
    overall: dict[str, Any] = {"envs": len(per_env_diffs), **counts, "normalized": None}
    scored = [env_id for env_id in per_env_diffs if scales[env_id]["defined"]]
    if scored:
        raw_a, m = _rectangle(shared_seeds, scored, _successes(by_key, agent_a))
        raw_b, _ = _rectangle(shared_seeds, scored, _successes(by_key, agent_b))
        spans = np.array([scales[env_id]["ceiling"] - scales[env_id]["floor"] for env_id in scored])
        point, low, high = stratified_bootstrap((raw_b - raw_a) / spans, _mean_only)
        limits = np.array([
            _ends(*_paired_limits(raw_a[:, column], raw_b[:, column]), span)
            for column, span in enumerate(spans)
        ])  # fmt: skip
        overall["normalized"] = {
            "envs": len(scored),
            "runs": m,
            **_estimate(point[0], low[0], high[0],
                        (float(limits[:, 0].mean()), float(limits[:, 1].mean())), "newcombe"),
        }  # fmt: skip
    return {"a": agent_a, "b": agent_b, "per_env": per_env_diffs, "overall": overall}


# --------------------------------------------------------------------------- validation
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
