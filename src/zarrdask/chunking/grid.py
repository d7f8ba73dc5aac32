"""The regular chunk grid (zarr-specs ``v3-chunk-grids-regular-grid``; the v2
spec's "Chunks" section describes the same grid).

Chunk ``(i, j, ...)`` covers ``[i*c0, (i+1)*c0) x [j*c1, (j+1)*c1) x ...``; chunks at
the upper edge overhang the array, and their overhanging part is undefined.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class RegularGrid:
    """A regular grid of ``chunk_shape`` chunks over an array of ``shape``."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Number of chunks along each dimension."""
        return tuple(math.ceil(s / c) if c else 0 for s, c in zip(self.shape, self.chunk_shape))

    @property
    def nchunks(self) -> int:
        return math.prod(self.grid_shape)

    def chunk_region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The part of the array chunk ``coords`` covers, clipped to the array."""
        return tuple(
            slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, self.chunk_shape, self.shape)
        )

    def all_chunk_coords(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(n) for n in self.grid_shape))
