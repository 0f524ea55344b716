"""Group-relative advantages over :class:`~agent_envs.core.records.Trajectory` records (numpy).

Framework-agnostic: every function takes records and returns numpy arrays; the TRL and Tunix
adapters turn them into tensors. ``R(tau)`` is :attr:`Trajectory.episode_return` (the sum of
``Step.reward``). Episode groups are the trajectories sharing a ``group_id`` (the collector gives
the G members of a group the same seed, hence the same start state); ids must be unique across
the batch passed in. A trajectory whose ``group_id`` is ``None`` is a group of its own.

A **singleton episode group** (one trajectory) has baseline 0 and scale 1 in every estimator:
its advantage is its return (``R / (1 + eps)`` for ``"grpo"``), as in verl-agent.
``eps = 1e-6``; standard deviations use N - 1 (``ddof=1``).

Episode-level estimators (:func:`episode_advantages`, one value per trajectory, group of N):

============  ============================================  ==========================
``"grpo"``    ``(R_i - mean(R)) / (std(R) + eps)``          Shao et al., 2024
``"drgrpo"``  ``R_i - mean(R)``                             Liu et al., 2025 (Dr. GRPO)
``"rloo"``    ``R_i - mean_{j != i}(R_j)``                  Ahmadian et al., 2024
============  ============================================  ==========================

GiGPO (:func:`gigpo`; Feng et al., 2025, "Group-in-Group Policy Optimization for LLM Agent
Training"), one value per turn:

- Eq. 3, episode advantage: ``A_E(tau_i) = (R(tau_i) - mean) / F`` over the episode group, with
  ``F = 1`` for ``normalize="mean"`` and ``F = std + eps`` for ``normalize="std"``. With
  ``stats="trajectory"`` (the paper's) mean/std are over the group's N returns; with
  ``stats="step"`` (verl-agent's default) over step rows, each trajectory's return counted once
  per turn, so long episodes weigh more. Example, one group of a 2-turn success (R = 10) and an
  8-turn failure (R = 0), ``normalize="mean"``: ``"trajectory"`` gives +5 / -5; ``"step"`` has
  mean (2*10 + 8*0) / 10 = 2 and gives +8 / -2.
- Eq. 5, discounted step return: ``R_t = sum_{k >= t} gamma^(k - t) r_k`` (:func:`step_returns`).
- Eq. 6, anchor groups: within an episode group, the turns whose ``Step.observation`` (the state
  the agent acted from) is identical; every visit is one member, repeat visits within one
  trajectory included (:func:`anchor_groups`). ``similarity`` widens "identical": a threshold
  ``s`` in (0, 1] joins an observation to the first anchor whose first observation has
  ``rapidfuzz.fuzz.ratio >= 100 * s`` (greedy, in record order), or a callable maps an
  observation to a key and equal keys share an anchor.
- Eq. 7, step advantage: ``A_S = (R_t - mean) / F`` over the anchor group; 0 for a singleton.
- Eq. 8: ``A = A_E + omega * A_S``.

LUFFY-style mixed groups (Yan et al., 2025, "Learning to Reason under Off-Policy Guidance"):
:func:`mix_off_policy` adds oracle trajectories of the group's seed to each group; the estimators
above then run over the mixed group unchanged. Off-policy tokens are trained with
:func:`policy_shaping`, see there.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agent_envs.core.records import Trajectory
from agent_envs.optional import require

__all__ = [
    "anchor_groups",
    "diagnostics",
    "drop_zero_variance",
    "episode_advantages",
    "episode_groups",
    "gigpo",
    "is_off_policy",
    "mix_off_policy",
    "policy_shaping",
    "step_returns",
    "token_advantages",
]

EPSILON = 1e-6
ESTIMATORS = ("grpo", "drgrpo", "rloo")
NORMALIZE = ("mean", "std")
STATS = ("trajectory", "step")

Similarity = float | Callable[[str], Hashable] | None
Anchor = list[tuple[int, int]]  # (trajectory index, turn index) pairs


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def _center(values: np.ndarray, stats_of: np.ndarray, normalize: str) -> np.ndarray:
    """``values`` minus the mean of ``stats_of``, divided by its std + eps when ``"std"``."""
    mean = stats_of.mean() if stats_of.size else 0.0
    centered = values - mean
    if normalize == "std":
        std = stats_of.std(ddof=1) if stats_of.size >= 2 else 1.0
        centered = centered / (std + EPSILON)
    return centered


def episode_groups(trajectories: Sequence[Trajectory]) -> list[list[int]]:
    """Indices of ``trajectories`` grouped by ``group_id``, in order of first appearance;
    each trajectory with ``group_id=None`` is a group of its own."""
    groups: dict[Any, list[int]] = {}
    for index, trajectory in enumerate(trajectories):
        key = ("single", index) if trajectory.group_id is None else ("id", trajectory.group_id)
        groups.setdefault(key, []).append(index)
    return list(groups.values())


def _returns(trajectories: Sequence[Trajectory]) -> np.ndarray:
    return np.array([t.episode_return for t in trajectories], dtype=np.float64)


def episode_advantages(
    trajectories: Sequence[Trajectory], *, estimator: str = "grpo"
) -> np.ndarray:
    """One advantage per trajectory from its episode group (estimators in the module docstring;
    a singleton group has baseline 0 and scale 1)."""
    _choice("estimator", estimator, ESTIMATORS)
    returns = _returns(trajectories)
    advantages = np.zeros_like(returns)
    for members in episode_groups(trajectories):
        group = returns[members]
        if len(members) == 1:
            baseline, scale = 0.0, (1.0 + EPSILON if estimator == "grpo" else 1.0)
        elif estimator == "rloo":
            baseline, scale = (group.sum() - group) / (len(members) - 1), 1.0
        else:
            baseline = group.mean()
            scale = group.std(ddof=1) + EPSILON if estimator == "grpo" else 1.0
        advantages[members] = (group - baseline) / scale
    return advantages


def step_returns(trajectory: Trajectory, gamma: float) -> np.ndarray:
    """GiGPO Eq. 5: ``R_t = sum_{k >= t} gamma^(k - t) r_k`` for every turn ``t``."""
    returns = np.zeros(trajectory.num_turns, dtype=np.float64)
    running = 0.0
    for t in reversed(range(trajectory.num_turns)):
        running = trajectory.steps[t].reward + gamma * running
        returns[t] = running
    return returns


def _anchor_key(similarity: Similarity) -> Callable[[str, list[str]], Hashable]:
    """A function of (observation, anchors so far' first observations) -> anchor key."""
    if similarity is None:
        return lambda observation, _reps: observation
    if callable(similarity):
        key = similarity
        return lambda observation, _reps: key(observation)
    if isinstance(similarity, bool) or not isinstance(similarity, (int, float)):
        raise ValueError(f"similarity must be None, a float or a callable, got {similarity!r}")
    if not 0.0 < similarity <= 1.0:
        raise ValueError(f"similarity threshold must be in (0, 1], got {similarity!r}")
    fuzz = require("rapidfuzz.fuzz", "webshop", needed_by="similarity grouping")
    cutoff = 100.0 * similarity

    def nearest(observation: str, reps: list[str]) -> Hashable:
        for rep in reps:
            if rep == observation or fuzz.ratio(observation, rep) >= cutoff:
                return rep
        return observation

    return nearest


def anchor_groups(
    trajectories: Sequence[Trajectory], *, similarity: Similarity = None
) -> list[Anchor]:
    """GiGPO Eq. 6: the anchor groups of every episode group, each a list of ``(trajectory
    index, turn index)``; every turn is in exactly one (singletons included)."""
    key_of = _anchor_key(similarity)
    anchors: list[Anchor] = []
    for members in episode_groups(trajectories):
        found: dict[Hashable, Anchor] = {}
        reps: list[str] = []
        for index in members:
            for turn, step in enumerate(trajectories[index].steps):
                key = key_of(step.observation, reps)
                if key not in found:
                    found[key] = []
                    reps.append(step.observation)
                found[key].append((index, turn))
        anchors += found.values()
    return anchors


def gigpo(
    trajectories: Sequence[Trajectory],
    *,
    gamma: float = 0.95,
    omega: float = 1.0,
    normalize: str = "mean",
    stats: str = "trajectory",
    similarity: Similarity = None,
) -> list[np.ndarray]:
    """GiGPO advantages (module docstring, Eqs. 3 and 5-8): one array per trajectory with one
    value per turn, ``A_E + omega * A_S``."""
    _choice("normalize", normalize, NORMALIZE)
    _choice("stats", stats, STATS)
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}")
    returns = _returns(trajectories)
    episode = np.zeros_like(returns)
    for members in episode_groups(trajectories):
        group = returns[members]
        if len(members) == 1:  # singleton episode group: mean 0, std 1
            episode[members] = group / (1.0 + EPSILON) if normalize == "std" else group
            continue
        weights = [trajectories[i].num_turns for i in members] if stats == "step" else 1
        episode[members] = _center(group, np.repeat(group, weights), normalize)
    discounted = [step_returns(t, gamma) for t in trajectories]
    step = [np.zeros(t.num_turns) for t in trajectories]
    for anchor in anchor_groups(trajectories, similarity=similarity):
        if len(anchor) < 2:
            continue
        values = np.array([discounted[i][t] for i, t in anchor])
        for (i, t), value in zip(anchor, _center(values, values, normalize), strict=True):
            step[i][t] = value
    return [episode[i] + omega * step[i] for i in range(len(trajectories))]


def token_advantages(trajectory: Trajectory, turn_advantages: float | npt.ArrayLike) -> np.ndarray:
    """Per-turn advantages laid out on :attr:`Trajectory.completion_ids`: turn ``t``'s model
    tokens get ``A_t``, env/template tokens 0 (so the result is 0 wherever ``env_mask`` is 0).
    A scalar is one episode-level advantage for every turn."""
    if trajectory.turn_completion_ids is None:
        raise ValueError(f"trajectory of {trajectory.env_id} seed {trajectory.seed} has no tokens")
    turns = trajectory.turn_completion_ids
    values = np.asarray(turn_advantages, dtype=np.float64)
    if values.ndim == 0:
        values = np.full(len(turns), float(values))
    if values.shape != (len(turns),):
        raise ValueError(
            f"turn_advantages must have one value per turn ({len(turns)}), got shape {values.shape}"
        )
    env_turns = trajectory.turn_env_ids or [[] for _ in turns]
    parts: list[np.ndarray] = []
    for value, model, env in zip(values, turns, env_turns, strict=True):
        parts += [np.full(len(model), value), np.zeros(len(env))]
    return np.concatenate(parts) if parts else np.zeros(0)


# --------------------------------------------------------------------- LUFFY
def is_off_policy(trajectory: Trajectory) -> bool:
    """Whether :func:`mix_off_policy` put this record into its group."""
    return bool(trajectory.metadata.get("off_policy", False))


def mix_off_policy(
    on_policy: Sequence[Trajectory],
    off_policy: Sequence[Trajectory],
    *,
    k: int = 1,
    replace: bool = False,
) -> list[Trajectory]:
    """LUFFY's mixed groups: each episode group of ``on_policy`` (all members share ``env_id``
    and ``seed``; ``group_id`` must be set) gets ``k`` copies of the ``off_policy`` (oracle)
    trajectories with the same ``(env_id, seed)``, cycling through them when fewer than ``k``
    exist (a deterministic oracle gives one). Copies take the group's ``group_id`` and
    ``metadata["off_policy"] = True``; inputs are not modified.

    Returns the groups in order of first appearance, each its on-policy members then its copies.
    ``replace=True`` drops the last ``k`` on-policy members of each group so the group size stays
    G (LUFFY's 7 on-policy + 1 off-policy of 8). A group with no oracle trajectory raises.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    oracle: dict[tuple[str, int | None], list[Trajectory]] = {}
    for trajectory in off_policy:
        oracle.setdefault((trajectory.env_id, trajectory.seed), []).append(trajectory)
    mixed: list[Trajectory] = []
    for members in episode_groups(on_policy):
        group = [on_policy[i] for i in members]
        first = group[0]
        if first.group_id is None:
            raise ValueError(f"on_policy trajectory seed {first.seed} has no group_id")
        if any((t.env_id, t.seed) != (first.env_id, first.seed) for t in group):
            raise ValueError(f"on_policy group {first.group_id} mixes env ids or seeds")
        traces = oracle.get((first.env_id, first.seed))
        if not traces:
            raise ValueError(f"off_policy has no trajectory of {first.env_id} seed {first.seed}")
        if replace:
            if len(group) <= k:
                raise ValueError(f"replace=True needs groups larger than k={k}, got {len(group)}")
            group = group[: len(group) - k]
        for j in range(k):
            copied = copy.deepcopy(traces[j % len(traces)])
            copied.group_id = first.group_id
            copied.metadata["off_policy"] = True
            group.append(copied)
        mixed += group
    return mixed


def policy_shaping(probs: npt.ArrayLike, gamma: float = 0.1) -> np.ndarray:
    """LUFFY's policy shaping ``f(pi) = pi / (pi + gamma)`` of token probabilities (gamma 0.1).

    Use on off-policy tokens: the per-token loss is ``-f(pi_theta(token)) * A`` with ``A`` the
    mixed-group advantage, **without clipping** and without a behaviour-policy denominator (the
    oracle's probability is taken as 1); ``pi_theta = exp(logprob)`` keeps its gradient, so
    ``grad f = gamma / (pi + gamma)^2 * grad pi = gamma * pi / (pi + gamma)^2 * grad log pi``,
    which lifts the weight of low-probability tokens relative to ``grad pi``. On-policy tokens
    keep the usual clipped ratio loss. (The torch version lives in ``adapters/trl.py``.)
    """
    if not gamma > 0.0:
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    values = np.asarray(probs, dtype=np.float64)
    return values / (values + gamma)


# --------------------------------------------------------------------- diagnostics
def _zero_variance(trajectories: Sequence[Trajectory], members: list[int]) -> bool:
    returns = [trajectories[i].episode_return for i in members]
    return len(members) >= 2 and min(returns) == max(returns)


def diagnostics(
    trajectories: Sequence[Trajectory], *, similarity: Similarity = None
) -> dict[str, float]:
    """``anchor_hit_rate``: fraction of turns whose anchor group has >= 2 members (0 without
    turns); ``zero_variance_fraction``: fraction of episode groups of >= 2 trajectories whose
    returns are all equal, over all groups (they give GRPO no signal; singletons count as not
    zero-variance); plus ``num_groups`` and ``num_turns``."""
    anchors = anchor_groups(trajectories, similarity=similarity)
    turns = sum(len(anchor) for anchor in anchors)
    hits = sum(len(anchor) for anchor in anchors if len(anchor) >= 2)
    groups = episode_groups(trajectories)
    flat = sum(_zero_variance(trajectories, members) for members in groups)
    return {
        "anchor_hit_rate": hits / turns if turns else 0.0,
        "zero_variance_fraction": flat / len(groups) if groups else 0.0,
        "num_groups": float(len(groups)),
        "num_turns": float(turns),
    }


def drop_zero_variance(
    trajectories: Sequence[Trajectory],
) -> tuple[list[Trajectory], int]:
    """The trajectories outside zero-variance groups (see :func:`diagnostics`), in input order,
    and how many were dropped."""
    dropped: set[int] = set()
    for members in episode_groups(trajectories):
        if _zero_variance(trajectories, members):
            dropped.update(members)
    kept = [t for i, t in enumerate(trajectories) if i not in dropped]
    return kept, len(dropped)
