"""The piece sequence: 7-bag permutations, seeding, GRL's balanced draw, spawn columns."""

from __future__ import annotations

import numpy as np
import pytest

from agent_envs.envs.tetris.constants import PIECE_SETS, RULES
from agent_envs.envs.tetris.generator import PieceQueue, check_sequence
from agent_envs.envs.tetris.types import Game

FULL = Game(10, 20, PIECE_SETS["tetromino"], RULES["standard"])
GRL_CELL = Game(4, 4, PIECE_SETS["cell"], RULES["grl"])
GRL_DOMINO_3 = Game(3, 3, PIECE_SETS["domino"], RULES["grl"])
SEEDS = 1000


def sequence(game: Game, seed: int, count: int, order: str = "bag") -> list[tuple[int, int]]:
    queue = PieceQueue(np.random.default_rng(seed), game, order)
    return [queue.pop() for _ in range(count)]


def test_tetris__every_bag_of_seven_is_a_permutation():
    for seed in range(SEEDS):
        kinds = [kind for kind, _ in sequence(FULL, seed, 28)]
        for start in range(0, 28, 7):
            assert sorted(kinds[start : start + 7]) == list(range(7)), f"seed {seed}"


def test_tetris__every_pair_of_dominoes_is_one_of_each():
    for seed in range(SEEDS):
        kinds = [kind for kind, _ in sequence(GRL_DOMINO_3, seed, 20)]
        assert all(sorted(kinds[i : i + 2]) == [0, 1] for i in range(0, 20, 2)), f"seed {seed}"


def test_tetris__same_seed_same_sequence():
    for seed in range(SEEDS):
        assert sequence(FULL, seed, 21) == sequence(FULL, seed, 21)
        assert sequence(GRL_DOMINO_3, seed, 8) == sequence(GRL_DOMINO_3, seed, 8)
    firsts = {tuple(kind for kind, _ in sequence(FULL, seed, 7)) for seed in range(SEEDS)}
    assert len(firsts) > 500  # 5040 orders of a bag: seeds do not collapse onto a few


def test_tetris__bag_orders_are_uniform_enough():
    first = np.bincount([sequence(FULL, seed, 1)[0][0] for seed in range(SEEDS)], minlength=7)
    assert first.min() > 100 and first.max() < 190  # 1000 / 7 = 143 each


def test_tetris__looking_ahead_does_not_change_the_sequence():
    queue = PieceQueue(np.random.default_rng(5), FULL, "bag")
    seen = []
    for index in range(40):
        ahead = queue.upcoming(1 + index % 9)
        assert ahead[0] == queue.peek()
        seen.append(queue.pop())
    assert seen == sequence(FULL, 5, 40)


class ScriptedRng:
    """Answers `integers(low, high)` from a script and records the bounds it was asked."""

    def __init__(self, draws: list[int]) -> None:
        self.draws = list(draws)
        self.calls: list[tuple[int, int]] = []

    def integers(self, low: int, high: int | None = None) -> int:
        self.calls.append((low, high))
        return self.draws.pop(0)


def test_tetris__balanced_draw_uses_grl_weights():
    # Dominoes on 4x4, GRL spawn: after each piece one column draw (V: 4 columns, H: 3).
    game = Game(4, 4, PIECE_SETS["domino"], RULES["grl"])
    # Weights start (5, 5); draw 6 -> H (index 1). Counts (0, 1) -> weights (6, 5): draw 6 -> V.
    # Counts (1, 1) -> (5, 5): draw 5 -> V. Counts (2, 1) -> (5, 6): draw 5 -> V.
    rng = ScriptedRng([6, 2, 6, 0, 5, 3, 5, 1])
    queue = PieceQueue(rng, game, "balanced")  # type: ignore[arg-type]
    pieces = [queue.pop() for _ in range(3)] + [queue.peek()]
    assert pieces == [(1, 2), (0, 0), (0, 3), (0, 1)]
    assert rng.calls[::2] == [(1, 11), (1, 12), (1, 11), (1, 12)]


def test_tetris__balanced_draw_balances():
    counts = np.zeros(7, dtype=int)
    for seed in range(200):
        for kind, _ in sequence(FULL, seed, 14, "balanced"):
            counts[kind] += 1
    assert counts.min() > 0.8 * 400 and counts.max() < 1.2 * 400


@pytest.mark.parametrize(
    ("game", "kind", "columns"),
    [(GRL_CELL, 0, {0, 1, 2, 3}), (GRL_DOMINO_3, 0, {0, 1, 2}), (GRL_DOMINO_3, 1, {0, 1})],
    ids=["cell_4_wide", "vertical_domino_3_wide", "horizontal_domino_3_wide"],
)
def test_tetris__grl_spawn_columns_are_every_fitting_column(game, kind, columns):
    seen = {left for seed in range(200) for k, left in sequence(game, seed, 6) if k == kind}
    assert seen == columns


def test_tetris__standard_spawn_is_centred():
    lefts = {kind: left for seed in range(20) for kind, left in sequence(FULL, seed, 7)}
    assert lefts == {0: 3, 1: 4, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3}


def test_tetris__unknown_sequence_names_the_argument():
    with pytest.raises(ValueError, match="sequence"):
        check_sequence("random")
    with pytest.raises(ValueError, match="sequence"):
        PieceQueue(np.random.default_rng(0), FULL, "7bag")
