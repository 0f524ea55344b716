"""Settings of the TRL glue that are not TRL's own: how per-token advantages are computed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from agent_envs.adapters import advantages as estimators

from agent_envs.core.records import Trajectory

__all__ = ["ESTIMATORS", "ORACLE_STARTS", "AdvantageConfig"]

#: the advantage estimators :class:`AdvantageConfig` takes
ESTIMATORS = ("grpo", "drgrpo", "rloo", "gigpo")
#: where LUFFY's oracle episodes start (:class:`AdvantageConfig`)
ORACLE_STARTS = ("reset", "recovery")


@dataclass(frozen=True)
class AdvantageConfig:
    """How :func:`make_rollout_func` computes per-token advantages for
    :class:`agent_envs.adapters.trl.grpo_trainer.TokenAdvantageGRPOTrainer`: from each group's
    `Trajectory` records with :mod:`agent_envs.adapters.advantages`, in place of TRL's normalisation
    of rewards.

    Attributes:
        estimator: ``"grpo"``, ``"drgrpo"`` or ``"rloo"`` (one episode advantage on every model
            token of the episode) or ``"gigpo"`` (each turn's advantage on that turn's model
            tokens).
        gamma, omega, normalize, stats: GiGPO's settings
            (:func:`agent_envs.adapters.advantages.gigpo`).
        off_policy: LUFFY's mixing: this many rows of every group are the env's oracle episode
            of the group's seed instead of sampled episodes (0: none). Advantages are taken over
            the mixed group; the trainer trains these rows with the policy-shaping loss.
        oracle_start: where those oracle episodes start. ``"reset"``: the start state (LUFFY).
            ``"recovery"``: each replays the first turn of a sampled episode of its group that
            went on past that turn and failed (its own tokens, given no loss and advantage 0,
            ``metadata["replayed_turns"] = 1``), then the oracle finishes from the state that
            turn left: guidance where the policy has to recover, which an oracle episode from
            the start never shows. A group without such an episode gets one from the start.
            With ``"gigpo"`` the oracle's recovery turn joins the anchor group of the failed
            episode's second turn.
        oracle_rationale: those oracle episodes write the env's worked reasoning before each
            answer (``TextEnv.oracle_rationale``: GSM8K's solution steps), as SFT rows made with
            it do; envs without one play the plain oracle.
    """

    estimator: str = "grpo"
    gamma: float = 0.95
    omega: float = 1.0
    normalize: str = "mean"
    stats: str = "trajectory"
    off_policy: int = 0
    oracle_start: str = "reset"
    oracle_rationale: bool = False

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("estimator", self.estimator, ESTIMATORS),
            ("oracle_start", self.oracle_start, ORACLE_STARTS),
            ("normalize", self.normalize, estimators.NORMALIZE),
            ("stats", self.stats, estimators.STATS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma!r}")
        if isinstance(self.off_policy, bool) or not isinstance(self.off_policy, int):
            raise ValueError(f"off_policy must be an int >= 0, got {self.off_policy!r}")
        if self.off_policy < 0:
            raise ValueError(f"off_policy must be an int >= 0, got {self.off_policy!r}")

    def turn_advantages(self, trajectories: list[Trajectory]) -> list[np.ndarray]:
        """One advantage per turn of each trajectory, groups by ``group_id``."""
        if self.estimator == "gigpo":
            return estimators.gigpo(
                trajectories,
                gamma=self.gamma,
                omega=self.omega,
                normalize=self.normalize,
                stats=self.stats,
            )
        values = estimators.episode_advantages(trajectories, estimator=self.estimator)
        return [np.full(t.num_turns, value) for t, value in zip(trajectories, values, strict=True)]
