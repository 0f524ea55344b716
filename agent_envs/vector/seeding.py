"""Reproducible episode seeds for sub-envs: one stream per group, drawn from a SeedSequence."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SeedStream", "group_streams"]


@dataclass
class SeedStream:
    """The k-th call to :meth:`next` returns the k-th episode seed of one group.

    Seeds depend only on ``(entropy, key, k)``, never on how long episodes ran or on which
    process draws them, so members of a group (same ``entropy`` and ``key``) start every
    episode identically and autoresets reproduce across runs.
    """

    entropy: int
    key: tuple[int, ...] = ()
    count: int = 0

    def next(self) -> int:
        sequence = np.random.SeedSequence(self.entropy, spawn_key=(*self.key, self.count))
        self.count += 1
        return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(1))


def group_streams(entropy: int, num_envs: int, group_size: int) -> list[SeedStream]:
    """One stream per env; the ``group_size`` envs of a group get equal streams."""
    return [SeedStream(entropy, (index // group_size,)) for index in range(num_envs)]
