"""The shard index (zarr-specs ``v3-codecs-sharding-indexed``, "Binary shard format").

An array of uint64 ``(offset, nbytes)`` pairs, one per inner chunk, of shape
``chunks_per_shard + (2,)`` in C order; an empty inner chunk is ``2^64 - 1``
twice. Offsets are absolute positions in the shard, whether the index sits at
its start or its end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import CorruptChunkError

MAX_UINT64 = np.uint64(2**64 - 1)


@dataclass
class ShardIndex:
    """``entries[..., 0]`` offsets and ``entries[..., 1]`` byte counts."""

    entries: np.ndarray  # uint64, shape chunks_per_shard + (2,)

    @classmethod
    def empty(cls, chunks_per_shard: tuple[int, ...]) -> "ShardIndex":
        return cls(np.full((*chunks_per_shard, 2), MAX_UINT64, dtype=np.uint64))

    @property
    def chunks_per_shard(self) -> tuple[int, ...]:
        return self.entries.shape[:-1]

    def flat(self) -> np.ndarray:
        """The entries as an ``(n, 2)`` view in C order."""
        return self.entries.reshape(-1, 2)

    def is_empty(self) -> np.ndarray:
        """A flat boolean mask of the empty inner chunks."""
        flat = self.flat()
        return (flat[:, 0] == MAX_UINT64) & (flat[:, 1] == MAX_UINT64)

    def check(self, shard_size: int | None, key: str) -> np.ndarray:
        """Every non-empty entry must lie inside a shard of ``shard_size`` bytes
        (``None``: of unknown size; an entry must then not run past 2^64 - 1);
        the flat mask of the empty entries (:meth:`is_empty`)."""
        flat = self.flat()
        offsets, sizes = flat[:, 0], flat[:, 1]
        empty = (offsets == MAX_UINT64) & (sizes == MAX_UINT64)
        ends = offsets + sizes  # uint64: an entry running past 2^64 - 1 wraps around below its offset
        bad = ends < offsets
        if shard_size is not None:
            bad |= ends > np.uint64(shard_size)
        bad &= ~empty
        if bad.any():
            i = int(np.argmax(bad))
            off, n = (int(v) for v in flat[i])
            where = f"a shard of {shard_size} bytes" if shard_size is not None else "the shard"
            raise CorruptChunkError(
                f"shard {key!r}: index entry {i} (offset {off}, nbytes {n}) points outside {where}"
            )
        return empty
