"""Advantage estimators against hand-computed tables (every number below is worked by hand)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from agent_envs.adapters.advantages import (
    EPSILON,
    anchor_groups,
    diagnostics,
    drop_zero_variance,
    episode_advantages,
    gigpo,
    is_off_policy,
    mix_off_policy,
    policy_shaping,
    step_returns,
    token_advantages,
)

from agent_envs.core.records import Step, Trajectory


def make(
    rewards: list[float],
    observations: list[str] | None = None,
    *,
    group_id: int | None = 0,
    seed: int = 0,
    env_id: str = "grl/Sokoban-v0",
) -> Trajectory:
    observations = observations or [f"s{t}-{seed}-{rewards}" for t in range(len(rewards))]
    steps = [
        Step(observation=obs, reply="", parsed_actions=[], reward=reward, info={})
        for obs, reward in zip(observations, rewards, strict=True)
    ]
    return Trajectory(env_id=env_id, seed=seed, group_id=group_id, steps=steps)


def assert_turns(actual: list[np.ndarray], expected: list[list[float]]) -> None:
    assert [len(a) for a in actual] == [len(e) for e in expected]
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=0, atol=1e-9)


# ------------------------------------------------------------------ episode estimators
def test_episode_advantages__grpo_drgrpo_rloo_table():
    # group 0: returns 1, 2, 3, 6 (mean 3, std with N-1 = sqrt(14/3)); group 1: 5, 5;
    # a None group_id is a singleton (baseline 0, scale 1). Groups are interleaved on purpose.
    trajectories = [
        make([1.0]),
        make([5.0], group_id=1),
        make([0.5, 1.5]),
        make([7.0], group_id=None),
        make([3.0]),
        make([2.0, 3.0, 1.0]),
        make([5.0], group_id=1),
    ]
    std = math.sqrt(14 / 3)
    grpo = [
        -2 / (std + EPSILON),
        0,
        -1 / (std + EPSILON),
        7 / (1 + EPSILON),
        0,
        3 / (std + EPSILON),
        0,
    ]
    drgrpo = [-2, 0, -1, 7, 0, 3, 0]
    # RLOO: R_i minus the mean of the other three = 4/3 * (R_i - mean) in a group of 4
    rloo = [1 - 11 / 3, 0, 2 - 10 / 3, 7, 0, 6 - 2, 0]
    for estimator, expected in [("grpo", grpo), ("drgrpo", drgrpo), ("rloo", rloo)]:
        actual = episode_advantages(trajectories, estimator=estimator)
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12, err_msg=estimator)


def test_episode_advantages__unknown_estimator_is_named():
    with pytest.raises(ValueError, match="estimator"):
        episode_advantages([make([1.0])], estimator="ppo")


# ------------------------------------------------------------------ GiGPO
def worked_example() -> list[Trajectory]:
    """One group: a 2-turn success (return 10) and an 8-turn failure (return 0)."""
    success = make([0.0, 10.0], ["start", "win-1"])
    failure = make([0.0] * 8, ["start"] + [f"lose-{t}" for t in range(1, 8)])
    return [success, failure]


def test_gigpo__worked_example_trajectory_stats_gives_plus_minus_5():
    advantages = gigpo(worked_example(), omega=0.0, normalize="mean", stats="trajectory")
    assert_turns(advantages, [[5.0] * 2, [-5.0] * 8])


def test_gigpo__worked_example_step_stats_weights_by_length_gives_8_and_minus_2():
    # step rows: 10, 10, 0 x 8 -> mean 2
    advantages = gigpo(worked_example(), omega=0.0, normalize="mean", stats="step")
    assert_turns(advantages, [[8.0] * 2, [-2.0] * 8])


def test_gigpo__worked_example_step_stats_with_std():
    std = math.sqrt((2 * 8**2 + 8 * 2**2) / 9)  # N - 1 over the 10 step rows
    advantages = gigpo(worked_example(), omega=0.0, normalize="std", stats="step")
    assert_turns(advantages, [[8 / (std + EPSILON)] * 2, [-2 / (std + EPSILON)] * 8])


def test_gigpo__worked_example_with_the_shared_start_anchor():
    # "start" is an anchor of both: R_0 = 0.95 * 10 = 9.5 vs 0 -> step advantages +-4.75
    advantages = gigpo(worked_example(), gamma=0.95, omega=1.0, normalize="mean")
    assert_turns(advantages, [[5 + 4.75, 5.0], [-5 - 4.75] + [-5.0] * 7])


def test_gigpo__anchors_join_identical_observations_and_repeat_visits_within_a_group():
    a = make([0.0, 0.0, 1.0], ["s0", "s1", "s0"])  # revisits s0
    b = make([0.0, 0.0], ["s0", "s2"])
    other = make([4.0], ["s0"], group_id=1)  # same text, other episode group: no anchor
    trajectories = [a, b, other]
    assert anchor_groups(trajectories) == [[(0, 0), (0, 2), (1, 0)], [(0, 1)], [(1, 1)], [(2, 0)]]
    # gamma 0.5: a's step returns 0.25, 0.5, 1; b's 0, 0. Anchor s0: 0.25, 1, 0 (mean 5/12).
    # Episode: returns 1 vs 0 -> +-0.5; the singleton group 1 keeps its return 4.
    advantages = gigpo(trajectories, gamma=0.5, omega=1.0, normalize="mean")
    assert_turns(
        advantages,
        [[0.5 + 0.25 - 5 / 12, 0.5, 0.5 + 1 - 5 / 12], [-0.5 - 5 / 12, -0.5], [4.0]],
    )


def test_gigpo__omega_weights_the_step_advantage():
    a = make([0.0, 0.0, 1.0], ["s0", "s1", "s0"])
    b = make([0.0, 0.0], ["s0", "s2"])
    advantages = gigpo([a, b], gamma=0.5, omega=2.0)
    assert_turns(
        advantages,
        [[0.5 + 2 * (0.25 - 5 / 12), 0.5, 0.5 + 2 * (1 - 5 / 12)], [-0.5 - 2 * 5 / 12, -0.5]],
    )


def test_gigpo__std_normalises_anchor_groups_with_n_minus_1():
    a = make([0.0, 3.0], ["s0", "a1"])
    b = make([0.0, 1.0], ["s0", "b1"])
    c = make([0.0, 2.0], ["s0", "c1"])
    # gamma 1: anchor s0 holds 3, 1, 2 -> mean 2, std 1; the episode group is the same.
    advantages = gigpo([a, b, c], gamma=1.0, normalize="std")
    s = 1 + EPSILON
    assert_turns(advantages, [[1 / s + 1 / s, 1 / s], [-1 / s - 1 / s, -1 / s], [0.0, 0.0]])


def test_gigpo__singleton_episode_group_uses_mean_0_std_1_and_singleton_anchor_is_0():
    lone = make([1.0, 2.0], ["x", "y"], group_id=None)
    assert_turns(gigpo([lone], normalize="mean"), [[3.0, 3.0]])
    assert_turns(gigpo([lone], normalize="std"), [[3 / (1 + EPSILON)] * 2])
    # a revisit inside the lone trajectory is still an anchor: gamma 1 -> R = 3, 2
    loop = make([1.0, 2.0], ["x", "x"], group_id=None)
    assert_turns(gigpo([loop], gamma=1.0), [[3.5, 2.5]])


def test_step_returns__discounted_sum_of_later_rewards():
    trajectory = make([1.0, 0.0, 2.0])
    np.testing.assert_allclose(step_returns(trajectory, 0.9), [1 + 0.9**2 * 2, 0.9 * 2, 2.0])
    np.testing.assert_allclose(step_returns(trajectory, 1.0), [3.0, 2.0, 2.0])
    np.testing.assert_allclose(step_returns(trajectory, 0.0), [1.0, 0.0, 2.0])


def test_gigpo__similarity_threshold_and_key_group_near_identical_observations():
    a = make([0.0, 1.0], ["board 12345678", "end a"])
    b = make([0.0, 0.0], ["board 12345679", "end b"])
    assert anchor_groups([a, b])[0] == [(0, 0)]
    assert anchor_groups([a, b], similarity=0.9)[0] == [(0, 0), (1, 0)]
    assert anchor_groups([a, b], similarity=1.0)[0] == [(0, 0)]
    assert anchor_groups([a, b], similarity=lambda obs: obs[:6])[0] == [(0, 0), (1, 0)]
    # gamma 1: the anchor holds 1 and 0 -> +-0.5 on top of the episode +-0.5
    assert_turns(gigpo([a, b], gamma=1.0, similarity=0.9), [[1.0, 0.5], [-1.0, -0.5]])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"normalize": "z"}, "normalize"),
        ({"stats": "episode"}, "stats"),
        ({"gamma": 1.5}, "gamma"),
        ({"similarity": 0.0}, "similarity"),
        ({"similarity": "yes"}, "similarity"),
    ],
)
def test_gigpo__bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gigpo([make([1.0])], **kwargs)


# ------------------------------------------------------------------ tokens
def test_token_advantages__model_tokens_of_turn_t_get_a_t_env_tokens_0():
    trajectory = make([0.0, 1.0])
    trajectory.prompt_ids = [100, 101]
    trajectory.turn_completion_ids = [[1, 2], [3]]
    trajectory.turn_env_ids = [[9, 9, 9], []]
    actual = token_advantages(trajectory, [0.5, -2.0])
    np.testing.assert_array_equal(actual, [0.5, 0.5, 0.0, 0.0, 0.0, -2.0])
    assert len(actual) == len(trajectory.completion_ids)
    assert np.all(actual[np.array(trajectory.env_mask) == 0] == 0.0)
    np.testing.assert_array_equal(token_advantages(trajectory, 3.0), [3, 3, 0, 0, 0, 3])
    with pytest.raises(ValueError, match="turn_advantages"):
        token_advantages(trajectory, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="no tokens"):
        token_advantages(make([1.0]), [1.0])


# ------------------------------------------------------------------ LUFFY
def test_mix_off_policy__k_oracle_copies_join_each_group_of_the_same_seed():
    on_policy = [
        make([0.0], group_id=0, seed=5),
        make([0.0], group_id=1, seed=6),
        make([0.0], group_id=0, seed=5),
        make([1.0], group_id=1, seed=6),
    ]
    oracle = [make([10.0], group_id=None, seed=6), make([10.0], group_id=None, seed=5)]
    mixed = mix_off_policy(on_policy, oracle, k=1)
    assert [(t.group_id, t.seed, is_off_policy(t)) for t in mixed] == [
        (0, 5, False), (0, 5, False), (0, 5, True), (1, 6, False), (1, 6, False), (1, 6, True),
    ]  # fmt: skip
    assert mixed[0] is on_policy[0]
    assert oracle[0].group_id is None and oracle[0].metadata == {}  # inputs untouched
    # drgrpo over the mixed groups: returns 0, 0, 10 (mean 10/3) and 0, 1, 10 (mean 11/3)
    np.testing.assert_allclose(
        episode_advantages(mixed, estimator="drgrpo"),
        [-10 / 3, -10 / 3, 20 / 3, -11 / 3, 1 - 11 / 3, 10 - 11 / 3],
    )


def test_mix_off_policy__k_copies_cycle_and_replace_keeps_the_group_size():
    on_policy = [make([0.0], seed=5) for _ in range(4)]
    oracle = [make([10.0], group_id=None, seed=5)]
    assert [is_off_policy(t) for t in mix_off_policy(on_policy, oracle, k=2)] == [
        False, False, False, False, True, True,
    ]  # fmt: skip
    replaced = mix_off_policy(on_policy, oracle, k=1, replace=True)
    assert [is_off_policy(t) for t in replaced] == [False, False, False, True]
    assert replaced[:3] == on_policy[:3]


def test_mix_off_policy__errors_name_the_problem():
    on_policy = [make([0.0], seed=5), make([0.0], seed=5)]
    with pytest.raises(ValueError, match="off_policy has no trajectory"):
        mix_off_policy(on_policy, [make([1.0], seed=6)])
    with pytest.raises(ValueError, match="k must be"):
        mix_off_policy(on_policy, [make([1.0], seed=5)], k=0)
    with pytest.raises(ValueError, match="replace=True"):
        mix_off_policy(on_policy, [make([1.0], seed=5)], k=2, replace=True)
    with pytest.raises(ValueError, match="group_id"):
        mix_off_policy([make([0.0], group_id=None, seed=5)], [make([1.0], seed=5)])
    with pytest.raises(ValueError, match="mixes"):
        mix_off_policy([make([0.0], seed=5), make([0.0], seed=6)], [make([1.0], seed=5)])


def test_policy_shaping__values_monotone_and_documented_gradient():
    np.testing.assert_allclose(
        policy_shaping([0.0, 0.1, 0.9, 1.0]), [0.0, 0.5, 0.9, 1 / 1.1], rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(policy_shaping([0.3], gamma=0.3), [0.5])
    grid = np.linspace(0.0, 1.0, 101)
    assert np.all(np.diff(policy_shaping(grid)) > 0)
    # d f / d pi = gamma / (pi + gamma)^2, as the docstring states
    p, h = np.array([0.05, 0.5, 0.95]), 1e-6
    numeric = (policy_shaping(p + h) - policy_shaping(p - h)) / (2 * h)
    np.testing.assert_allclose(numeric, 0.1 / (p + 0.1) ** 2, rtol=1e-6)
    with pytest.raises(ValueError, match="gamma"):
        policy_shaping([0.5], gamma=0.0)


# ------------------------------------------------------------------ diagnostics
def test_diagnostics__anchor_hit_rate_and_zero_variance_groups():
    trajectories = [
        make([1.0, 0.0], ["s0", "a"], group_id=0),
        make([0.0, 1.0], ["s0", "b"], group_id=0),  # same return 1: zero variance
        make([0.0], ["s0"], group_id=1),
        make([1.0, 0.0], ["s0", "s0"], group_id=1),  # revisit: 3 hits in group 1
        make([5.0], ["z"], group_id=None),  # singleton: not zero-variance
    ]
    assert diagnostics(trajectories) == {
        "anchor_hit_rate": 5 / 8,
        "zero_variance_fraction": 1 / 3,
        "num_groups": 3.0,
        "num_turns": 8.0,
    }
    kept, dropped = drop_zero_variance(trajectories)
    assert kept == trajectories[2:]
    assert dropped == 2
    assert diagnostics([]) == {
        "anchor_hit_rate": 0.0,
        "zero_variance_fraction": 0.0,
        "num_groups": 0.0,
        "num_turns": 0.0,
    }
