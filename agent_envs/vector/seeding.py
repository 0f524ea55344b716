"""Reproducible episode seeds for sub-envs: one stream per group, drawn from a SeedSequence."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SeedStream", "group_streams"]

_BLOCK = 256  # seeds generated per SeedSequence call (one call costs ~20 µs, a seed ~0.1 µs)


@dataclass
class SeedStream:
    """The k-th call to :meth:`next` returns the k-th episode seed of one group.

    Seed k is word ``k % 256`` of ``SeedSequence(entropy, spawn_key=(*key, k // 256))``, so
    seeds depend only on ``(entropy, key, k)``, never on how long episodes ran or on which
    process draws them: members of a group (same ``entropy`` and ``key``) start every episode
    identically and autoresets reproduce across runs.
    """

    entropy: int
    key: tuple[int, ...] = ()
    count: int = 0
    # the current block as a uint64 array (2 KiB; a list of Python ints would take 11 KiB)
    _block: np.ndarray | None = field(default=None, repr=False, compare=False)

    def next(self) -> int:
        offset = self.count % _BLOCK
        if offset == 0 or self._block is None:
            sequence = np.random.SeedSequence(
                self.entropy, spawn_key=(*self.key, self.count // _BLOCK)
            )
            self._block = sequence.generate_state(_BLOCK, np.uint64) >> np.uint64(1)
        self.count += 1
        return int(self._block[offset])

    def copy(self) -> SeedStream:
        """A stream at the same position (the block is made again on the next draw)."""
        return SeedStream(self.entropy, self.key, self.count)


def group_streams(entropy: int, num_envs: int, group_size: int) -> list[SeedStream]:
    """One stream per env; the ``group_size`` envs of a group get equal streams."""
    return [SeedStream(entropy, (index // group_size,)) for index in range(num_envs)]
