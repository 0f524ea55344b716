"""(start, goal) pairs: valid, distinct, reproducible, uniform over states."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from agent_envs.envs.blocksworld.dynamics import check_state
from agent_envs.envs.blocksworld.generator import (
    check_settings,
    count_states,
    generate,
    random_state,
)
from agent_envs.envs.blocksworld.solver import optimal_plan_length

SEEDS = 1000


def pair(seed: int, count: int):
    return generate(np.random.default_rng(seed), num_blocks=count)


@pytest.mark.parametrize("count", [3, 4, 5])
def test_blocksworld__generated_pairs_over_1000_seeds(count):
    lengths = Counter()
    for seed in range(SEEDS):
        start, goal = pair(seed, count)
        assert len(start) == len(goal) == count, seed
        assert check_state(start) is None and check_state(goal) is None, seed
        assert start != goal, seed
        assert pair(seed, count) == (start, goal), seed  # same seed, same pair
        length = optimal_plan_length(start, goal)
        assert length >= 1, seed
        lengths[length] += 1
    # Not a fixed list: many pairs, and both easy and hard ones.
    assert len({pair(seed, count) for seed in range(200)}) > 100
    assert min(lengths) == 1 and max(lengths) >= count


@pytest.mark.parametrize("count", range(1, 7))
def test_blocksworld__count_states_matches_enumeration(count):
    brute = sum(
        check_state(state) is None for state in itertools.product(range(count + 1), repeat=count)
    )
    assert count_states(count) == brute


def test_blocksworld__count_states_known_values():
    assert [count_states(n) for n in range(1, 9)] == [1, 3, 13, 73, 501, 4051, 37633, 394353]


@pytest.mark.parametrize(("count", "draws"), [(3, 13_000), (4, 73_000)])
def test_blocksworld__random_state_is_uniform(count, draws):
    rng = np.random.default_rng(11)
    seen = Counter(random_state(rng, count) for _ in range(draws))
    assert len(seen) == count_states(count)
    assert all(check_state(state) is None for state in seen)
    expected = draws / len(seen)
    chi_square = sum((n - expected) ** 2 / expected for n in seen.values())
    degrees = len(seen) - 1
    assert chi_square < degrees + 4 * (2 * degrees) ** 0.5  # about the 99.99% quantile


def test_blocksworld__same_generator_state_same_pair():
    first, second = np.random.default_rng(7), np.random.default_rng(7)
    assert [generate(first, num_blocks=4) for _ in range(5)] == [
        generate(second, num_blocks=4) for _ in range(5)
    ]


@pytest.mark.parametrize("value", [1, 0, 9, -3, 3.0, "3", True, None])
def test_blocksworld__check_settings_names_the_argument(value):
    with pytest.raises(ValueError, match="num_blocks"):
        check_settings(num_blocks=value)
