"""Reproducible episode seeds for sub-envs: one stream per group, drawn from a SeedSequence."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SeedStream", "group_streams"]

_BLOCK = 256  # seeds per SeedSequence (one call costs ~20 µs, a seed ~0.1 µs)
_FIRST = 8  # words made on a block's first draw (most envs never play more episodes)


@dataclass
class SeedStream:
    """The k-th call to :meth:`next` returns the k-th episode seed of one group.

    Seed k is word ``k % 256`` of ``SeedSequence(entropy, spawn_key=(*key, k // 256))``
    (shifted right by one bit), so seeds depend only on ``(entropy, key, k)``, never on how
    long episodes ran or on which process draws them: members of a group (same ``entropy``
    and ``key``) start every episode identically and autoresets reproduce across runs.
    A block's first 8 words are made first and the rest on the 9th draw (the words of
    ``generate_state(n)`` are a prefix of those of ``generate_state(256)``), so an env that
    plays few episodes holds 64 bytes of seeds instead of 2 KiB.
    """

    entropy: int
    key: tuple[int, ...] = ()
    count: int = 0
    _block: np.ndarray | None = field(default=None, repr=False, compare=False)
    _block_index: int = field(default=-1, repr=False, compare=False)

    def next(self) -> int:
        index, offset = divmod(self.count, _BLOCK)
        block = self._block
        if block is None or self._block_index != index or offset >= len(block):
            sequence = np.random.SeedSequence(self.entropy, spawn_key=(*self.key, index))
            size = _FIRST if offset < _FIRST else _BLOCK
            block = self._block = sequence.generate_state(size, np.uint64) >> np.uint64(1)
            self._block_index = index
        self.count += 1
        return int(block[offset])

    def copy(self) -> SeedStream:
        """A stream at the same position (the block is made again on the next draw)."""
        return SeedStream(self.entropy, self.key, self.count)


def group_streams(entropy: int, num_envs: int, group_size: int) -> list[SeedStream]:
    """One stream per env; the ``group_size`` envs of a group get equal streams."""
    return [SeedStream(entropy, (index // group_size,)) for index in range(num_envs)]
