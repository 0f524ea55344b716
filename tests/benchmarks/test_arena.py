"""The two-player arena: statistics against hand-computed values, the scripted agents on
hand-played positions, a tiny deterministic run, the validator and the committed results."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

pytest.importorskip("textarena")
pytest.importorskip("openskill")

from agent_envs.adapters.textarena import make
from agent_envs.benchmarks import arena
from agent_envs.benchmarks.leaderboard import eval_seeds


@pytest.mark.parametrize(
    ("wins", "n", "low", "high"),
    [(0, 10, 0.0, 0.27754), (5, 10, 0.23659, 0.76341), (10, 10, 0.72246, 1.0), (0, 0, 0.0, 1.0)],
)
def test_arena__wilson_interval(wins, n, low, high):
    got = arena.wilson(wins, n)
    assert got[0] == pytest.approx(low, abs=1e-5) and got[1] == pytest.approx(high, abs=1e-5)


def test_arena__score_interval_is_normal_and_clipped():
    mean, low, high = arena.score_interval([1.0, 0.5, 0.0, 0.5])
    half = 1.96 * math.sqrt(1 / 6) / 2  # s^2 = (0.25 + 0 + 0.25 + 0) / 3
    assert (mean, low, high) == pytest.approx((0.5, 0.5 - half, 0.5 + half))
    assert arena.score_interval([1.0, 1.0, 0.0])[2] == 1.0


def test_arena__seeds_are_the_leaderboard_rule():
    assert [arena.episode_seed("TicTacToe-v0", i) for i in range(5)] == eval_seeds(
        "TicTacToe-v0", 5
    )


def _scripted(moves):
    replies = iter(moves)
    return lambda observation: next(replies)


def test_arena__lookahead_wins_when_it_can():
    env = make("TicTacToe-v0", opponent=_scripted(["[3]", "[4]"]))
    env.reset(seed=0)
    env.step("<answer>[0]</answer>")
    observation, *_ = env.step("<answer>[1]</answer>")  # X: 0 1, O: 3 4
    rng = np.random.default_rng(0)
    assert arena.lookahead_policy(env, observation, rng) == "[2]"


def test_arena__lookahead_blocks_an_immediate_loss():
    env = make("TicTacToe-v0", opponent=_scripted(["[3]", "[4]"]))
    env.reset(seed=0)
    env.step("<answer>[0]</answer>")
    observation, *_ = env.step("<answer>[8]</answer>")  # X: 0 8, O: 3 4 threatens 5
    for seed in range(5):
        assert arena.lookahead_policy(env, observation, np.random.default_rng(seed)) == "[5]"
    # simulate() leaves the env as it was
    assert env.legal_moves() == ["[1]", "[2]", "[5]", "[6]", "[7]"]


def test_arena__bad_configuration_names_the_argument():
    with pytest.raises(ValueError, match="episodes"):
        arena.schedule(arena.Args(episodes=3))
    with pytest.raises(ValueError, match="agents"):
        arena.schedule(arena.Args(agents=["random", "alphazero"]))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folders = [tmp_path_factory.mktemp(f"arena{i}") for i in range(2)]
    for folder in folders:
        arena.main(
            arena.Args(
                games=["TicTacToe-v0"],
                agents=["random", "lookahead"],
                episodes=4,
                replays=2,
                out=str(folder),
            )
        )
    return folders


def test_arena__run_is_deterministic_and_complete(tiny_run):
    first, second = tiny_run
    for name in ("summary.json", "arena.md", arena.EPISODES, "replays/TicTacToe-v0.html"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    summary = json.loads((first / "summary.json").read_text())
    for agent in ("random", "lookahead"):
        for opponent in arena.OPPONENTS:
            record = summary["fixed"]["TicTacToe-v0"][agent][opponent]
            assert record["n"] == 4
            assert record["wins"] + record["draws"] + record["losses"] == 4
    head = summary["head_to_head"]
    assert head["random"]["lookahead"]["score"] + head["lookahead"]["random"]["score"] == 1.0
    episodes = arena.read_episodes(first)
    assert len(episodes) == 4 * 2 * 2 + 4  # fixed (agents x opponents) + one pair
    assert {e["agent_seat"] for e in episodes if e["kind"] == "fixed"} == {0, 1}


def test_arena__replay_shows_both_players(tiny_run):
    page = (tiny_run[0] / "replays" / "TicTacToe-v0.html").read_text()
    assert page.count('<article class="episode"') == 2
    assert "Player 0 (random)" in page and "Player 1 (lookahead)" in page
    assert "Player 0 (lookahead)" in page and "Player 1 (random)" in page


def test_arena__validator_catches_an_edited_result(tiny_run, tmp_path):
    folder = tiny_run[0]
    assert arena.validate(folder) == []
    episodes = arena.read_episodes(folder)
    episodes[0]["rewards"] = (
        [-r for r in episodes[0]["rewards"]] if any(episodes[0]["rewards"]) else [1.0, -1.0]
    )
    (tmp_path / "summary.json").write_bytes((folder / "summary.json").read_bytes())
    with gzip.open(tmp_path / arena.EPISODES, "wt") as file:
        file.writelines(json.dumps(e) + "\n" for e in episodes)
    problems = arena.validate(tmp_path)
    assert problems and any("fixed.TicTacToe-v0" in p for p in problems)


def test_arena__committed_results_validate():
    if not (arena.RESULTS / "summary.json").exists():
        pytest.skip("no committed arena run")
    assert arena.validate(arena.RESULTS) == []
    ratings = json.loads((arena.RESULTS / "summary.json").read_text())["ratings"]
    assert max(ratings, key=lambda name: ratings[name]["ordinal"]) == "lookahead"
