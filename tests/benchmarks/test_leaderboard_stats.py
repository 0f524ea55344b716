"""The leaderboard's intervals against reference implementations on fixed inputs (0/n, n/n and
n = 1 among them): Wilson against statsmodels and the closed form, Newcombe's paired interval
against its definition computed here and a published worked example, the paired bootstrap
against a percentile bootstrap drawn here, the stratified bootstrap (mean and IQM) against
rliable itself; then the summary's normalization, ranking and turn-cap rules."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from agent_envs.benchmarks.leaderboard import stats
from agent_envs.benchmarks.leaderboard.stats import (
    BOOTSTRAP_REPS,
    BOOTSTRAP_SEED,
    newcombe_paired_interval,
    paired_return,
    paired_success,
    stratified_bootstrap,
    summarize,
    wilson_interval,
)

from agent_envs.core.records import Step, Trajectory

Z = 1.959963984540054  # the 97.5% normal quantile

COUNTS = [(0, 1), (1, 1), (0, 2), (1, 2), (2, 2), (0, 20), (20, 20), (3, 7), (13, 40), (1, 256)]


def wilson_closed_form(k: int, n: int) -> tuple[float, float]:
    """(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), computed here."""
    p = k / n
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2)) / (1 + Z**2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------- Wilson
@pytest.mark.parametrize(("k", "n"), COUNTS)
def test_wilson__equals_the_closed_form(k, n):
    assert wilson_interval(k, n) == pytest.approx(wilson_closed_form(k, n), abs=1e-12)


@pytest.mark.parametrize(("k", "n"), COUNTS)
def test_wilson__equals_statsmodels(k, n):
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    low, high = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((low, high), abs=1e-12)


def test_wilson__inside_0_1_and_never_empty_at_the_ends():
    for n in range(1, 31):
        for k in range(n + 1):
            low, high = wilson_interval(k, n)
            assert 0.0 <= low <= k / n <= high <= 1.0
            assert high - low > 0.05  # 0/n and n/n are not "± 0.00"
    assert wilson_interval(0, 1) == pytest.approx((0.0, 0.7934506856227627), abs=1e-12)
    assert wilson_interval(20, 20)[0] == pytest.approx(0.8388748419471808, abs=1e-12)


# --------------------------------------------------------------------------- Newcombe
def newcombe_by_definition(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Newcombe (1998), method 10, written out here from its definition: p1 = (a+b)/n,
    p2 = (a+c)/n, Wilson limits of each, phi with ad - bc corrected by n/2."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_closed_form(a + b, n)
    l2, u2 = wilson_closed_form(a + c, n)
    product = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if product == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    elif cross > n / 2:
        phi = (cross - n / 2) / math.sqrt(product)
    else:
        phi = cross / math.sqrt(product)
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return p1 - p2 - delta, p1 - p2 + epsilon


TABLES = [
    (1, 0, 0, 0),  # n = 1, each cell
    (0, 1, 0, 0),
    (0, 0, 1, 0),
    (0, 0, 0, 1),
    (5, 0, 0, 0),  # n/n for both
    (0, 0, 0, 5),  # 0/n for both
    (0, 5, 0, 0),  # first n/n, second 0/n
    (0, 0, 4, 0),
    (3, 2, 1, 4),
    (12, 1, 9, 78),
    (59, 6, 16, 80),
    (2, 14, 3, 81),
]


@pytest.mark.parametrize("table", TABLES)
def test_newcombe__equals_its_definition(table):
    assert newcombe_paired_interval(*table) == pytest.approx(
        newcombe_by_definition(*table), abs=1e-12
    )


def test_newcombe__the_worked_example_of_fagerland_lydersen_laake():
    """Cavo et al. (2012), 161 paired patients: 59 / 6 / 16 / 80. Fagerland, Lydersen & Laake,
    Statistical Analysis of Contingency Tables (2017), ch. 8, give the Newcombe
    square-and-add interval -0.0621 (95% CI -0.1186 to -0.0046), as their R package
    contingencytables' tests expect."""
    low, high = newcombe_paired_interval(59, 6, 16, 80)
    assert (round(-10 / 161, 4), round(low, 4), round(high, 4)) == (-0.0621, -0.1186, -0.0046)


def test_newcombe__every_small_table_gives_an_interval_inside_minus_1_1_around_the_estimate():
    for n in range(1, 7):
        for a, b, c in itertools.product(range(n + 1), repeat=3):
            d = n - a - b - c
            if d < 0:
                continue
            low, high = newcombe_paired_interval(a, b, c, d)
            assert -1.0 <= low <= (b - c) / n <= high <= 1.0, (a, b, c, d)


def test_paired_success__orientation_counts_and_small_n():
    # B - A per seed: B solved seeds 1, 3, 4 that A did not; both solved seed 2; seed 5 neither
    a = [0.0, 1.0, 0.0, 0.0, 0.0]
    b = [1.0, 1.0, 0.0, 1.0, 1.0]
    result = paired_success(a, b)
    assert (result["n"], result["mean"]) == (5, pytest.approx(0.6))
    assert (result["won"], result["lost"], result["tied"]) == (3, 0, 2)
    # table for p_B - p_A: both 1, only B 3, only A 0, neither 1
    assert (result["low"], result["high"]) == pytest.approx(newcombe_by_definition(1, 3, 0, 1))
    assert (
        -1 <= result["low"] < 0.6 < result["high"] <= 1
    )  # the normal approximation's 1.08 is gone
    one = paired_success([0.0], [1.0])
    assert (one["mean"], one["won"], one["lost"]) == (1.0, 1, 0)
    assert -1 <= one["low"] < one["high"] == 1.0
    ties = paired_success([1.0] * 4, [1.0] * 4)
    assert ties["mean"] == 0.0 and ties["low"] < 0 < ties["high"]  # no false ± 0.00


# --------------------------------------------------------------------------- bootstraps
def percentile_bootstrap_here(values: list[float]) -> tuple[float, float]:
    """A percentile bootstrap of the mean written here: RandomState(seed).randint draws of
    (reps, n) indices, the 2.5th and 97.5th percentiles."""
    data = np.asarray(values)
    rows = np.random.RandomState(BOOTSTRAP_SEED).randint(0, len(data), (BOOTSTRAP_REPS, len(data)))
    low, high = np.percentile(data[rows].mean(axis=1), [2.5, 97.5])
    return float(low), float(high)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([0.0, 1.0, -0.5, 2.0, 0.3], [1.0, 1.2, -0.5, 10.4, 0.3]),
        ([-0.6] * 6, [-0.6, 10.9, -0.6, 9.2, -1.1, -0.6]),
        ([0.0, 0.0], [1.0, 0.0]),
    ],
)
def test_paired_return__is_a_seeded_percentile_bootstrap(a, b):
    result = paired_return(a, b)
    differences = [y - x for x, y in zip(a, b, strict=True)]
    assert result["mean"] == pytest.approx(sum(differences) / len(differences))
    assert (result["low"], result["high"]) == pytest.approx(
        percentile_bootstrap_here(differences), abs=1e-12
    )
    assert min(differences) <= result["low"] <= result["high"] <= max(differences)
    assert (result["won"], result["lost"], result["tied"]) == (
        sum(d > 0 for d in differences),
        sum(d < 0 for d in differences),
        sum(d == 0 for d in differences),
    )
    assert paired_return(a, b) == result  # the same numbers every time (--validate)


def test_paired_return__one_pair_or_equal_differences_have_no_interval():
    assert paired_return([1.0], [3.0]) == {"n": 1, "mean": 2.0, "low": None, "high": None,
                                           "won": 1, "lost": 0, "tied": 0}  # fmt: skip
    same = paired_return([0.5, 1.5, 2.5], [1.5, 2.5, 3.5])  # every difference 1.0
    assert (same["mean"], same["low"], same["high"], same["won"]) == (1.0, None, None, 3)
    ties = paired_return([-0.6] * 4, [-0.6] * 4)  # not "0.00 [0.00, 0.00]"
    assert (ties["mean"], ties["low"], ties["high"], ties["tied"]) == (0.0, None, None, 4)


@pytest.fixture
def rliable_library(monkeypatch):
    """rliable's library, its bootstrap runnable. rliable is not in the dev extra: 1.2.0 pins
    arch<8, and arch 7 does not import under pandas 3 (arch 8 does, by hand). rliable 1.2.0
    hands ``random_state=`` to arch's IIDBootstrap, which arch 8 calls ``seed=``; rliable
    draws its indices from numpy's global generator either way."""
    try:
        from rliable import library
    except Exception as error:  # absent, or arch 7 under pandas 3 (a TypeError at import)
        pytest.skip(f"rliable's library does not import here: {error!r}")
    import arch.bootstrap as arch_bootstrap

    init = arch_bootstrap.IIDBootstrap.__init__
    if "random_state" not in init.__code__.co_varnames:

        def renamed(self, *args, random_state=None, **kwargs):
            init(self, *args, seed=random_state, **kwargs)

        monkeypatch.setattr(arch_bootstrap.IIDBootstrap, "__init__", renamed)
    return library


def _matrices() -> list[np.ndarray]:
    rng = np.random.RandomState(7)
    binary = (rng.rand(9, 6) < 0.4).astype(float)
    binary[:, 0] = 0.0  # 0/n on one env
    binary[:, 1] = 1.0  # n/n on another
    scale = np.array([1.0, 1.0, 0.8, 0.95, 0.5, 1.0])
    floor = np.array([0.0, 0.0, 0.2, 0.05, 0.5, 0.1])
    return [
        (binary - floor) / scale,  # normalized episodes x envs
        (rng.rand(1, 5) < 0.5).astype(float),  # n = 1: one episode per env
        rng.rand(12, 3),  # fewer than 4 envs: IQM = mean
    ]


@pytest.mark.parametrize("index", range(3))
def test_stratified_bootstrap__mean_and_iqm_equal_rliable(rliable_library, index):
    from rliable import metrics

    matrix = _matrices()[index]

    def both(scores):  # rliable's aggregates: mean of task means, IQM of the task scores
        return np.array([
            metrics.aggregate_mean(scores),
            metrics.aggregate_iqm(scores.mean(axis=0, keepdims=True)),
        ])  # fmt: skip

    np.random.seed(BOOTSTRAP_SEED)  # rliable 1.2.0 draws from numpy's global generator
    points, intervals = rliable_library.get_interval_estimates(
        {"agent": matrix}, both, reps=BOOTSTRAP_REPS
    )
    point, low, high = stratified_bootstrap(matrix, stats._mean_and_iqm)
    assert point == pytest.approx(points["agent"], abs=1e-12)
    assert low == pytest.approx(intervals["agent"][0], abs=1e-12)
    assert high == pytest.approx(intervals["agent"][1], abs=1e-12)


@pytest.mark.parametrize("index", range(3))
def test_stratified_bootstrap__agrees_with_scipys_multi_sample_bootstrap(index):
    """scipy.stats.bootstrap resamples each sample (here each env's column) on its own: the
    same stratified bootstrap with other draws, so the intervals agree within Monte Carlo
    error (the points exactly)."""
    from scipy.stats import bootstrap, trim_mean

    matrix = _matrices()[index]
    if matrix.shape[0] < 2:
        pytest.skip("scipy's bootstrap needs two episodes per env")

    def both(*columns, axis=-1):
        means = np.stack([np.mean(column, axis=axis) for column in columns], axis=-1)
        return np.stack([means.mean(axis=-1), trim_mean(means, 0.25, axis=-1)])

    reference = bootstrap(
        tuple(matrix.T), both, n_resamples=BOOTSTRAP_REPS, method="percentile",
        rng=np.random.default_rng(1),
    )  # fmt: skip
    point, low, high = stratified_bootstrap(matrix, stats._mean_and_iqm)
    assert point == pytest.approx(both(*matrix.T), abs=1e-12)
    assert low == pytest.approx(reference.confidence_interval.low, abs=0.03)
    assert high == pytest.approx(reference.confidence_interval.high, abs=0.03)


def test_stratified_bootstrap__resamples_within_each_env_only():
    # one env always 1, one always 0: every replicate keeps its env's value
    matrix = np.array([[1.0, 0.0]] * 5)
    point, low, high = stratified_bootstrap(matrix, stats._mean_and_iqm)
    assert list(point) == list(low) == list(high) == [0.5, 0.5]


# --------------------------------------------------------------------------- the summary
def _trajectory(env_id, agent, seed, success, reward=0.0):
    step = Step(observation="o", reply="r", parsed_actions=[], reward=reward,
                info={"action_valid": True, "success": success})  # fmt: skip
    return Trajectory(env_id=env_id, seed=seed, steps=[step], success=success, agent=agent)


def _run(table: dict[tuple[str, str], list[bool]]) -> list[Trajectory]:
    return [
        _trajectory(env_id, agent, seed, success, reward=float(success))
        for (env_id, agent), results in table.items()
        for seed, success in enumerate(results, 1)
    ]


ENVS = ["e1", "e2", "e3"]
TABLE = {
    ("e1", "random"): [False, False, False, True],  # 0.25
    ("e1", "oracle"): [True, True, True, True],  # 1.00
    ("e1", "model"): [True, False, True, False],  # 0.50 → (0.5 - 0.25) / 0.75 = 1/3
    ("e2", "random"): [False, False, False, False],  # 0.00
    ("e2", "oracle"): [True, True, False, True],  # 0.75
    ("e2", "model"): [False, False, True, False],  # 0.25 → 1/3
    ("e3", "random"): [True, True, False, False],  # 0.50 = oracle: no scale
    ("e3", "oracle"): [False, True, True, False],
    ("e3", "model"): [True, True, True, True],
}


def test_summary__normalized_scores_by_hand():
    summary = summarize(_run(TABLE), ENVS, ["random", "oracle", "model"])
    scales = summary["normalization"]
    assert scales["e1"] == {"floor": 0.25, "ceiling": 1.0, "defined": True, "note": None}
    assert scales["e3"]["defined"] is False
    assert scales["e3"]["note"] == "oracle and random both succeed at 0.50"
    row = summary["per_env"]["e1"]["model"]
    assert row["success"]["successes"] == 2
    low, high = wilson_closed_form(2, 4)
    assert row["normalized"] == pytest.approx(
        {"mean": 1 / 3, "low": (low - 0.25) / 0.75, "high": (high - 0.25) / 0.75}
    )
    assert summary["per_env"]["e3"]["model"]["normalized"] is None
    model = summary["overall"]["model"]
    assert (model["envs"], model["episodes"]) == (3, 12)
    assert model["success"] == pytest.approx((0.5 + 0.25 + 1.0) / 3)  # no normalization there
    assert (model["normalized"]["envs"], model["normalized"]["runs"]) == (2, 4)  # e3 left out
    assert model["normalized"]["mean"]["mean"] == pytest.approx(1 / 3)
    assert model["normalized"]["iqm"]["mean"] == pytest.approx(1 / 3)  # 2 envs: nothing trimmed
    assert summary["overall"]["random"]["normalized"]["mean"]["mean"] == pytest.approx(0.0)
    assert summary["overall"]["oracle"]["normalized"]["mean"]["mean"] == pytest.approx(1.0)
    assert "return" not in model  # raw returns are not averaged across envs
    assert [summary["overall"][a]["rank"] for a in ("random", "oracle", "model")] == [3, 1, 2]
    assert json.dumps(summary) == json.dumps(summarize(_run(TABLE), ENVS, ["random", "oracle",
                                                                           "model"]))  # fmt: skip


def test_summary__paired_success_and_overall_normalized_difference():
    summary = summarize(_run(TABLE), ENVS, ["random", "oracle", "model"])
    pair = next(p for p in summary["paired"] if (p["a"], p["b"]) == ("random", "model"))
    e1 = pair["per_env"]["e1"]["success"]
    # seeds: random F F F T, model T F T F → model won 2 (seeds 1, 3), lost 1 (seed 4)
    assert (e1["won"], e1["lost"], e1["tied"], e1["mean"]) == (2, 1, 1, 0.25)
    assert (e1["low"], e1["high"]) == pytest.approx(newcombe_by_definition(0, 2, 1, 1))
    overall = pair["overall"]
    assert (overall["envs"], overall["n"]) == (3, 12)
    assert (overall["won"], overall["lost"]) == (2 + 1 + 2, 1 + 0 + 0)
    # normalized: e1 (0.5 - 0.25) / 0.75, e2 (0.25 - 0) / 0.75; e3 has no scale
    assert overall["normalized"]["envs"] == 2
    assert overall["normalized"]["mean"] == pytest.approx((0.25 / 0.75 + 0.25 / 0.75) / 2)
    assert overall["normalized"]["low"] <= overall["normalized"]["mean"]


def test_summary__missing_oracle_means_no_normalized_score():
    table = {key: value for key, value in TABLE.items() if key[1] != "oracle"}
    summary = summarize(_run(table), ENVS, ["random", "model"])
    assert all(scale["note"] == "no oracle row" for scale in summary["normalization"].values())
    assert summary["overall"]["model"]["normalized"] is None
    assert summary["overall"]["model"]["rank"] is None


def test_summary__a_capped_agent_is_not_ranked_nor_paired_with_uncapped_ones():
    agents = ["random", "oracle", "model", "model-capped"]
    table = dict(TABLE)
    table.update({("e1", "model-capped"): [True] * 4, ("e2", "model-capped"): [True] * 4})
    summary = summarize(_run(table), ENVS, agents, caps={"model-capped": 1})
    capped = summary["overall"]["model-capped"]
    assert (capped["capped"], capped["rank"]) == (1, None)
    assert capped["normalized"]["mean"]["mean"] > summary["overall"]["oracle"]["normalized"][
        "mean"]["mean"]  # fmt: skip
    assert summary["overall"]["oracle"]["rank"] == 1  # the capped row does not take first place
    assert all("model-capped" not in (pair["a"], pair["b"]) for pair in summary["paired"])
    assert len(summary["paired"]) == 3  # random, oracle, model with each other


def test_summary__no_bootstrap_spread_falls_back_to_the_per_env_closed_forms():
    """0/4 on every env (and one seed per env) leave the bootstrap without spread: the
    interval is then the mean (IQM) over envs of the Wilson limits, normalized, and a pair
    that tied on every seed gets the mean of Newcombe's limits over the envs' spans."""
    table = {key: value for key, value in TABLE.items() if key[0] != "e3"}
    table[("e1", "model")] = table[("e2", "model")] = [False] * 4
    summary = summarize(_run(table), ENVS[:2], ["random", "oracle", "model"])
    model = summary["overall"]["model"]["normalized"]
    _, high = wilson_closed_form(0, 4)
    lows = [(0 - 0.25) / 0.75, (0 - 0.0) / 0.75]
    highs = [(high - 0.25) / 0.75, (high - 0.0) / 0.75]
    assert model["mean"] == pytest.approx({"mean": sum(lows) / 2, "low": sum(lows) / 2,
                                           "high": sum(highs) / 2, "method": "wilson"})  # fmt: skip
    assert model["iqm"]["method"] == "wilson" and model["iqm"]["high"] > model["iqm"]["mean"]
    assert summary["overall"]["random"]["normalized"]["mean"]["method"] == "bootstrap"

    tied = {key: value for key, value in table.items() if key[1] != "oracle"}
    tied[("e1", "oracle")] = [True] * 4
    tied[("e2", "oracle")] = [True] * 4
    tied[("e1", "model")] = list(tied[("e1", "random")])  # model ties random on every seed
    tied[("e2", "model")] = list(tied[("e2", "random")])
    summary = summarize(_run(tied), ENVS[:2], ["random", "oracle", "model"])
    pair = next(p for p in summary["paired"] if (p["a"], p["b"]) == ("random", "model"))
    spans = [0.75, 1.0]
    limits = [newcombe_by_definition(1, 0, 0, 3), newcombe_by_definition(0, 0, 0, 4)]
    assert pair["overall"]["normalized"] == pytest.approx({
        "envs": 2, "runs": 4, "mean": 0.0, "method": "newcombe",
        "low": sum(low / span for (low, _), span in zip(limits, spans, strict=True)) / 2,
        "high": sum(high / span for (_, high), span in zip(limits, spans, strict=True)) / 2,
    })  # fmt: skip

    one_seed = {key: value[:1] for key, value in TABLE.items() if key[0] != "e3"}
    one_seed[("e1", "random")] = [False]
    one_seed[("e2", "oracle")] = [True]
    summary = summarize(_run(one_seed), ENVS[:2], ["random", "oracle", "model"])
    for agent in ("random", "oracle", "model"):  # n = 1: every replicate the same
        stat = summary["overall"][agent]["normalized"]["mean"]
        assert stat["method"] == "wilson" and stat["low"] < stat["high"]
