"""Resizing an array at a cost proportional to what is stored, not to the chunk grid.

A new shape (Zarr v2 spec "Arrays" and zarr-specs v3 core "shape": only the
metadata changes; chunks keep their grid coordinates) *cuts* two kinds of
stored chunks (shards, when sharded):

- **stale** chunks, wholly outside the new shape: deleted;
- **straddling** chunks, cut by a shrunk edge: the cut-off part is reset to the
  fill value, so that growing the array again shows the fill value there, not
  old data.

Growing cuts nothing. When the cut part of the grid is small (at most
:data:`ENUMERATE_LIMIT` grid cells) its cells are enumerated; otherwise the
store's keys under the array are listed and only the stored chunks are looked
at, so shrinking a 2**62-element array or appending to a 10**12-chunk grid
costs what is stored. Every straddling chunk is re-encoded in memory before
anything is written: a chunk that cannot be decoded fails the resize and
changes nothing.
"""

from __future__ import annotations

import itertools
import math
from typing import Iterable, Iterator

import numpy as np

from ..chunking import grid_for
from ..chunking.rectilinear import Axis
from ..errors import StoreError
from ..storage.abc import Store
from . import engine
from .layout import ArrayLayout

__all__ = ["ENUMERATE_LIMIT", "Cut", "plan_cut"]

#: at most this many cut grid cells are enumerated; beyond, the store is listed
ENUMERATE_LIMIT = 1 << 16
#: a store that cannot list is refused beyond this many cut grid cells
_UNLISTABLE_LIMIT = 1 << 24


class Cut:
    """What a new shape cuts: stale chunk keys and straddling chunk coordinates."""

    def __init__(self, old_shape: tuple[int, ...], new_shape: tuple[int, ...], chunks: tuple) -> None:
        # (rectilinear grids: growing past the edges adds edges, so old chunks never move)
        self.old_grid = grid_for(old_shape, chunks).grid_shape
        self.new_grid = grid_for(new_shape, chunks).grid_shape
        self.kept = tuple(min(o, n) for o, n in zip(self.old_grid, self.new_grid))
        # dimension -> grid index of the chunk the new edge cuts (only for shrunk, unaligned edges)
        self.edges = {}
        for d, (o, n, c) in enumerate(zip(old_shape, new_shape, chunks)):
            if n >= o:
                continue
            ax = Axis(c, o)
            k = ax.chunk_of(n)
            if ax.start(k) != n:
                self.edges[d] = k

    def stale_count(self) -> int:
        return math.prod(self.old_grid) - math.prod(self.kept)

    def straddle_count(self) -> int:
        """An upper bound (corner chunks cut in two dimensions count twice)."""
        return sum(math.prod(k for j, k in enumerate(self.kept) if j != d) for d in self.edges)

    def is_stale(self, coords: tuple[int, ...]) -> bool:
        return any(i >= n for i, n in zip(coords, self.new_grid))

    def straddles(self, coords: tuple[int, ...]) -> bool:
        return not self.is_stale(coords) and any(coords[d] == k for d, k in self.edges.items())

    def stale_cells(self) -> Iterator[tuple[int, ...]]:
        """Every stale grid cell (disjoint ranges: first dimension out of the new grid)."""
        for d, (o, n) in enumerate(zip(self.old_grid, self.new_grid)):
            if o <= n:
                continue
            ranges = [range(k) for k in self.kept[:d]] + [range(n, o)] + [range(o2) for o2 in self.old_grid[d + 1:]]
            yield from itertools.product(*ranges)

    def straddling_cells(self) -> Iterator[tuple[int, ...]]:
        seen: set[tuple[int, ...]] = set()
        for d, k in self.edges.items():
            ranges = [range(n) if j != d else range(k, k + 1) for j, n in enumerate(self.kept)]
            for coords in itertools.product(*ranges):
                if coords not in seen:
                    seen.add(coords)
                    yield coords


def _stored_coords(store: Store, layout: ArrayLayout, grid: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    prefix = layout.prefix
    for key in store.list_prefix(prefix):
        coords = layout.key_encoding.decode(key[len(prefix):])
        if coords is not None and len(coords) == len(grid) and all(0 <= c < n for c, n in zip(coords, grid)):
            yield coords


def plan_cut(
    store: Store, layout: ArrayLayout, old_shape: tuple[int, ...], new_shape: tuple[int, ...], name: str
) -> tuple[list[str], list[tuple[int, ...]]]:
    """The stale keys to delete and the straddling chunk coordinates to reset
    when ``old_shape`` becomes ``new_shape`` (see the module documentation)."""
    cut = Cut(old_shape, new_shape, layout.chunk_shape)
    cells = cut.stale_count() + cut.straddle_count()
    if cells == 0:
        return [], []
    if cells <= ENUMERATE_LIMIT or not store.listable:
        if cells > _UNLISTABLE_LIMIT:
            raise StoreError(
                f"array {name!r}: resizing from {old_shape} to {new_shape} cuts {cells} grid cells, and "
                f"{store!r} cannot list its keys to find the stored ones; resize through a listable store"
            )
        stale: Iterable[tuple[int, ...]] = cut.stale_cells()
        straddling = list(cut.straddling_cells())
    else:
        stored = list(_stored_coords(store, layout, cut.old_grid))
        stale = [c for c in stored if cut.is_stale(c)]
        straddling = [c for c in stored if cut.straddles(c)]
    return [layout.chunk_key(c) for c in stale], straddling


def reset_cut_parts(
    store: Store, layout: ArrayLayout, straddling: list[tuple[int, ...]], new_shape: tuple[int, ...],
    *, write_empty_chunks: bool,
) -> dict[str, bytes | memoryview | None]:
    """The straddling chunks re-encoded with their part outside ``new_shape``
    set to the fill value (``None``: the chunk is now all fill value). Nothing
    is stored; chunks that are not stored are left out."""
    axes = [Axis(c, n) for c, n in zip(layout.chunk_shape, new_shape)]

    def reset(coords: tuple[int, ...], chunk: np.ndarray) -> None:
        for d, (i, ax, n) in enumerate(zip(coords, axes, new_shape)):
            local = n - ax.start(i)
            if 0 <= local < ax.size(i):
                chunk[(slice(None),) * d + (slice(local, None),)] = layout.fill_value

    return engine.rewrite(store, layout, straddling, reset, write_empty_chunks=write_empty_chunks)
