"""Chunk grids: which part of an array each chunk covers.

:class:`ChunkGrid` is the grid of an array of a given shape; its two kinds are
:class:`RegularGrid` (zarr-specs ``v3-chunk-grids-regular-grid``; the v2
spec's "Chunks" section describes the same grid) and
:class:`~zarrdask.chunking.rectilinear.RectilinearGrid` (zarr-extensions
``chunk-grids/rectilinear``). A grid is described per axis by ``chunks``: an
``int`` (a regular step along the axis) or a tuple of chunk edge lengths;
a regular grid has an ``int`` on every axis. Every piece of chunk arithmetic
(how many chunks, where chunk ``(i, j, ...)`` lies, its shape, the grid as
dask ``chunks``, the largest chunk, the grid after a resize) is a method here,
so the rest of zarrdask asks the grid rather than computing it.

Chunk ``(i, j, ...)`` of a regular grid covers ``[i*c0, (i+1)*c0) x [j*c1,
(j+1)*c1) x ...``; chunks at the upper edge overhang the array, and their
overhanging part is undefined.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator, Sequence


def largest_chunk(chunks: Sequence) -> tuple[int, ...]:
    """The largest edge along each axis of per-axis ``chunks`` (the chunk shape
    of a regular grid): what a chunk buffer must hold."""
    return tuple(c if isinstance(c, int) else max(c, default=1) for c in chunks)


class ChunkGrid:
    """The chunk grid of an array of ``shape``; see the module documentation.

    Subclasses set :attr:`name` and :attr:`chunks`, and implement
    :attr:`grid_shape`, :meth:`chunk_region`, :meth:`chunk_shape_at` and
    :meth:`dask_chunks`.
    """

    #: the grid's name in Zarr v3 metadata
    name: str = ""
    shape: tuple[int, ...]
    #: per axis: an ``int`` (a regular step) or the tuple of edge lengths
    chunks: tuple

    @property
    def regular(self) -> bool:
        """Whether every axis is a regular step."""
        return self.name == "regular"

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The number of chunks along each axis (chunks inside the array only)."""
        raise NotImplementedError

    @property
    def nchunks(self) -> int:
        return math.prod(self.grid_shape)

    def chunk_region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The part of the array chunk ``coords`` covers, clipped to the array."""
        raise NotImplementedError

    def chunk_shape_at(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        """The full shape of chunk ``coords``: the shape it is encoded with."""
        raise NotImplementedError

    def all_chunk_coords(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(n) for n in self.grid_shape))

    def dask_chunks(self) -> tuple[tuple[int, ...], ...]:
        """The grid as a dask ``chunks`` tuple: every chunk's extent per axis,
        clipped to the shape."""
        raise NotImplementedError

    def largest_chunk(self) -> tuple[int, ...]:
        """The largest chunk shape (the chunk shape of a regular grid)."""
        return largest_chunk(self.chunks)

    def compact(self) -> tuple:
        """Per axis as xarray's engine reports a grid: an ``int`` for a regular
        axis, else the chunks' extents inside the array."""
        return tuple(c if isinstance(c, int) else sizes for c, sizes in zip(self.chunks, self.dask_chunks()))


def regular_axis(size: int, chunk: int) -> tuple[int, ...]:
    """The extents of the chunks of a regular axis of ``size``, clipped to it
    (its entry in a dask ``chunks`` tuple)."""
    full, rest = divmod(size, chunk) if chunk else (0, 0)
    return (chunk,) * full + ((rest,) if rest else ()) or (0,)


@dataclass(frozen=True)
class RegularGrid(ChunkGrid):
    """A regular grid of ``chunk_shape`` chunks over an array of ``shape``."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    name = "regular"

    @property
    def chunks(self) -> tuple[int, ...]:
        return self.chunk_shape

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(math.ceil(s / c) if c else 0 for s, c in zip(self.shape, self.chunk_shape))

    def chunk_region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(
            slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, self.chunk_shape, self.shape)
        )

    def chunk_shape_at(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        return self.chunk_shape

    def dask_chunks(self) -> tuple[tuple[int, ...], ...]:
        return tuple(regular_axis(s, c) for s, c in zip(self.shape, self.chunk_shape))
