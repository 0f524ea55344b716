"""The piece sequence: which piece comes next and where it spawns, from an explicit Generator.

Orders (``sequence``):

* ``"bag"`` (default): the pieces of the set are dealt in bags, each a uniformly shuffled
  permutation of the whole set, so every window of the sequence aligned on a bag holds each
  piece exactly once (the guideline "7-bag" for tetrominoes; a 2-bag for GRL's dominoes).
* ``"balanced"``: GRL's draw: each piece independently, piece ``i`` with weight
  ``5 + max(counts) - counts[i]`` where ``counts`` are the pieces dealt so far.

Columns: centred (`dynamics.center_left`) or, with ``rules.random_spawn`` (GRL), drawn
uniformly from the columns where the piece's spawn orientation fits, right after its piece.

The sequence depends only on the Generator's state, so a seed fixes it.
"""

from __future__ import annotations

import numpy as np

from agent_envs.envs.tetris.constants import SEQUENCES
from agent_envs.envs.tetris.dynamics import center_left, spawn_lefts
from agent_envs.envs.tetris.types import Game

__all__ = ["PieceQueue", "check_sequence"]

BALANCE_WEIGHT = 5
"""GRL's base weight in the balanced draw."""


def check_sequence(sequence: object) -> None:
    """Raise ``ValueError`` naming `sequence` unless it is one of `SEQUENCES`."""
    if sequence not in SEQUENCES:
        raise ValueError(f"sequence must be one of {SEQUENCES}, got {sequence!r}")


class PieceQueue:
    """The pieces still to come, as ``(kind, left)`` pairs, dealt from `rng` on demand.

    Args:
        rng: the only source of randomness (the env passes its ``np_random``).
        game: board size, piece set and rules (for the spawn columns).
        sequence: ``"bag"`` or ``"balanced"`` (see the module docstring).
    """

    def __init__(self, rng: np.random.Generator, game: Game, sequence: str = "bag") -> None:
        check_sequence(sequence)
        self._rng = rng
        self._sequence = sequence
        self._random_spawn = game.rules.random_spawn
        self._lefts = [spawn_lefts(game, kind) for kind in range(len(game.pieces))]
        self._centers = [center_left(game, kind) for kind in range(len(game.pieces))]
        self._counts = [0] * len(game.pieces)
        self._upcoming: list[tuple[int, int]] = []
        self._deal()

    def peek(self) -> tuple[int, int]:
        """The next piece, without taking it."""
        return self._upcoming[0]

    def upcoming(self, count: int) -> list[tuple[int, int]]:
        """The next `count` pieces, without taking them (deals ahead as needed; the sequence
        is the same whether or not anyone looked ahead)."""
        while len(self._upcoming) < count:
            self._deal()
        return self._upcoming[:count]

    def pop(self) -> tuple[int, int]:
        """Take the next piece."""
        head = self._upcoming.pop(0)
        if not self._upcoming:
            self._deal()
        return head

    def _deal(self) -> None:
        rng = self._rng
        if self._sequence == "bag":
            kinds = rng.permutation(len(self._counts)).tolist()
        else:
            counts = self._counts
            most = max(counts)
            weights = [BALANCE_WEIGHT + most - count for count in counts]
            draw = int(rng.integers(1, sum(weights) + 1))
            kind = 0
            while draw > weights[kind]:
                draw -= weights[kind]
                kind += 1
            counts[kind] += 1
            kinds = [kind]
        for kind in kinds:
            if self._random_spawn:
                lefts = self._lefts[kind]
                left = lefts[int(rng.integers(len(lefts)))] if len(lefts) > 1 else lefts[0]
            else:
                left = self._centers[kind]
            self._upcoming.append((kind, left))
