"""(start, goal) pairs drawn from an explicit `np.random.Generator`.

Both states are drawn uniformly from all states of ``num_blocks`` blocks (the classic
``bwstates`` distribution), the goal again until it differs from the start. A uniform state
is drawn without listing the states: a state with ``k`` towers is a set of ``k`` non-empty
sequences, and there are ``L(n, k) = C(n - 1, k - 1) * n! / k!`` of them (Lah numbers).
Draw ``k`` with probability ``L(n, k) / sum_k L(n, k)``, then a random order of the blocks
cut at ``k - 1`` random places: each state with ``k`` towers comes from exactly ``k!``
(order, cuts) pairs, so all are equally likely.
"""

from __future__ import annotations

from math import comb, factorial

import numpy as np

from agent_envs.envs.blocksworld.constants import MAX_BLOCKS, MIN_BLOCKS, TABLE
from agent_envs.envs.blocksworld.types import State

__all__ = ["check_settings", "count_states", "generate", "random_state"]


def check_settings(*, num_blocks: object) -> None:
    """Raise ``ValueError`` naming the argument if ``num_blocks`` is out of range."""
    if (
        isinstance(num_blocks, bool)
        or not isinstance(num_blocks, int)
        or not MIN_BLOCKS <= num_blocks <= MAX_BLOCKS
    ):
        raise ValueError(
            f"num_blocks must be an int from {MIN_BLOCKS} to {MAX_BLOCKS}, got {num_blocks!r}"
        )


def _towers_weights(num_blocks: int) -> list[int]:
    """``L(n, k)`` for ``k = 1..n``: the number of states with ``k`` towers."""
    n = num_blocks
    return [comb(n - 1, k - 1) * factorial(n) // factorial(k) for k in range(1, n + 1)]


def count_states(num_blocks: int) -> int:
    """The number of states of ``num_blocks`` blocks (3: 13, 4: 73, 5: 501)."""
    return sum(_towers_weights(num_blocks))


def random_state(rng: np.random.Generator, num_blocks: int) -> State:
    """A state drawn uniformly from all states of ``num_blocks`` blocks."""
    weights = np.array(_towers_weights(num_blocks), dtype=float)
    towers = int(rng.choice(num_blocks, p=weights / weights.sum())) + 1
    order = [int(block) for block in rng.permutation(num_blocks) + 1]
    cuts = {int(cut) for cut in rng.choice(num_blocks - 1, towers - 1, replace=False) + 1}
    state = [TABLE] * num_blocks
    for position in range(1, num_blocks):
        if position not in cuts:
            state[order[position] - 1] = order[position - 1]
    return tuple(state)


def generate(rng: np.random.Generator, *, num_blocks: int) -> tuple[State, State]:
    """A (start, goal) pair of independent uniform states with ``start != goal``."""
    check_settings(num_blocks=num_blocks)
    start = random_state(rng, num_blocks)
    goal = random_state(rng, num_blocks)
    while goal == start:
        goal = random_state(rng, num_blocks)
    return start, goal
