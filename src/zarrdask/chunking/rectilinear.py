"""The rectilinear chunk grid (zarr-extensions ``chunk-grids/rectilinear``).

Each axis has its own chunk edge lengths: an ``int`` is a regular step along the
axis (repeated until it covers the axis), a tuple lists every edge (run-length
pairs already expanded by the metadata layer). Chunk ``i`` of an axis covers
``[C[i-1], C[i])`` where ``C`` is the cumulative sum of the edges (``C[-1] = 0``);
array index ``j`` is in the first chunk whose ``C`` exceeds ``j`` (the
extension's "Indexing" section). Edges may run past the axis (overflow chunks):
chunks starting at or beyond the axis length are not part of the array.

A dask ``chunks`` tuple is such a grid; :func:`dask_chunks` turns a grid into one.

Mixed per-axis chunks (``int`` or a tuple of edges) are what the indexing, the
chunk engine and the dask integration take wherever a regular chunk shape was
taken before; an all-``int`` tuple is a regular grid.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence, Union

import numpy as np

from .grid import ChunkGrid, RegularGrid, largest_chunk

AxisChunks = Union[int, tuple]
GridChunks = tuple

__all__ = ["AxisChunks", "GridChunks", "RectilinearGrid", "Axis", "axis", "dask_chunks", "is_regular",
           "grid_for", "boundaries", "grow_edges", "normalize_chunks", "largest_chunk"]


def is_regular(chunks: Sequence[AxisChunks]) -> bool:
    """Whether every axis is an ``int`` (a regular grid)."""
    return all(map(isinstance, chunks, itertools.repeat((int, np.integer))))


class Axis:
    """One axis of a grid: chunk index ↔ array index."""

    def __init__(self, chunks: AxisChunks, length: int) -> None:
        self.length = int(length)
        if isinstance(chunks, (int, np.integer)):
            self.step: int | None = int(chunks)
            self.edges: tuple[int, ...] | None = None
        else:
            self.step, self.edges = None, tuple(int(e) for e in chunks)

    @cached_property
    def offsets(self) -> np.ndarray:
        """``[0, C[0], C[1], ...]`` for explicit edges (int64)."""
        return np.concatenate(([0], np.cumsum(np.asarray(self.edges, dtype=np.int64))))

    @cached_property
    def _offsets_list(self) -> list[int]:
        return self.offsets.tolist()

    @property
    def nchunks(self) -> int:
        """Chunks overlapping ``[0, length)`` (overflow chunks beyond it not counted)."""
        if self.step is not None:
            return -(-self.length // self.step)
        if self.length == 0:
            return 0
        return bisect.bisect_left(self._offsets_list, self.length)

    def chunk_of(self, i: int) -> int:
        if self.step is not None:
            return i // self.step
        return bisect.bisect_right(self._offsets_list, i) - 1

    def chunks_of(self, arr: np.ndarray) -> np.ndarray:
        if self.step is not None:
            return arr // self.step
        return np.searchsorted(self.offsets, arr, side="right") - 1

    def start(self, c: int) -> int:
        return c * self.step if self.step is not None else self._offsets_list[c]

    def starts(self, cs: np.ndarray) -> np.ndarray:
        return cs * self.step if self.step is not None else self.offsets[cs]

    def size(self, c: int) -> int:
        """The chunk's full edge length (its stored extent, overhang included)."""
        return self.step if self.step is not None else self.edges[c]

    def clipped(self, c: int) -> int:
        """The chunk's extent inside the array."""
        return max(0, min(self.size(c), self.length - self.start(c)))

    def dask_chunks(self) -> tuple[int, ...]:
        n = self.nchunks
        if n == 0:
            return (0,)
        return tuple(self.clipped(c) for c in range(n))


def axis(chunks: AxisChunks, length: int) -> Axis:
    return Axis(chunks, length)


@dataclass(frozen=True)
class RectilinearGrid(ChunkGrid):
    """A grid of per-axis ``chunks`` (``int`` or edge tuples) over an array of ``shape``."""

    shape: tuple[int, ...]
    chunks: tuple
    name = "rectilinear"

    @cached_property
    def axes(self) -> tuple[Axis, ...]:
        return tuple(Axis(c, n) for c, n in zip(self.chunks, self.shape))

    @property
    def regular(self) -> bool:
        return is_regular(self.chunks)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(a.nchunks for a in self.axes)

    def chunk_shape_at(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(a.size(c) for a, c in zip(self.axes, coords))

    def chunk_region(self, coords: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(a.start(c), a.start(c) + a.clipped(c)) for a, c in zip(self.axes, coords))

    def dask_chunks(self) -> tuple[tuple[int, ...], ...]:
        return tuple(a.dask_chunks() for a in self.axes)


def grid_for(shape: tuple[int, ...], chunks: Sequence[AxisChunks]) -> ChunkGrid:
    """The grid of ``chunks`` over ``shape``: a :class:`RegularGrid` when every axis is an ``int``."""
    if is_regular(chunks):
        return RegularGrid(tuple(shape), tuple(int(c) for c in chunks))
    return RectilinearGrid(tuple(shape), tuple(chunks))


def dask_chunks(shape: tuple[int, ...], chunks: Sequence[AxisChunks]) -> tuple[tuple[int, ...], ...]:
    """The grid as a dask ``chunks`` tuple (edges clipped to the shape)."""
    return grid_for(shape, chunks).dask_chunks()


def boundaries(chunks: AxisChunks, length: int) -> Iterator[int]:
    """The interior chunk boundaries of an axis, ascending."""
    a = Axis(chunks, length)
    return (a.start(c) for c in range(1, a.nchunks))


def normalize_chunks(chunks: Sequence) -> tuple:
    """Per-axis chunks from user input: an int stays an int, a sequence of edges becomes a tuple."""
    out = []
    for c in chunks:
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            out.append(int(c))
        else:
            out.append(tuple(int(e) for e in c))
    return tuple(out)


def grow_edges(chunks: tuple, old_shape: tuple[int, ...], new_shape: tuple[int, ...],
               multiple_of: Sequence[int] | None = None) -> tuple:
    """The grid after a resize: an explicit axis that no longer covers its new
    length gets one more edge covering the rest (``append`` adds edges); edges
    already there — overflow included — are kept, so stored chunks keep their
    coordinates and shapes. ``multiple_of`` (a sharded array's inner chunk
    shape) rounds the new edge up to whole inner chunks, overflowing the shape."""
    out = []
    for d, (c, o, n) in enumerate(zip(chunks, old_shape, new_shape)):
        if isinstance(c, int):
            out.append(c)
            continue
        total = sum(c)
        if n <= total:
            out.append(c)
            continue
        edge = n - total
        if multiple_of is not None:
            m = multiple_of[d]
            edge = -(-edge // m) * m
        out.append(c + (edge,))
    return tuple(out)
