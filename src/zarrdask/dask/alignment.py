"""Which blocks of a dask array cut through storage units, and the minimal
chunking that does not (pure functions, no I/O).

A storage unit is a shard for sharded arrays and a chunk otherwise: the thing
one store write replaces. A dask chunking is *aligned* with a region of the
array when every block boundary inside the region falls on a unit boundary; then
every unit the region touches is written by exactly one block (units cut by the
region's own edges included), and no two tasks ever read-modify-write the same
stored object.

``unit`` gives one entry per axis: an ``int`` (a regular grid's unit size) or a
tuple of unit sizes along the axis (a rectilinear grid, as a dask ``chunks``
entry, starting at 0).
"""

from __future__ import annotations

import bisect
import itertools
from typing import Any, Sequence


def _boundaries(chunks: Sequence[int], start: int) -> list[int]:
    out, pos = [], start
    for c in chunks[:-1]:
        pos += c
        out.append(pos)
    return out


class Units:
    """Unit boundaries along one axis."""

    def __init__(self, unit: Any) -> None:
        if isinstance(unit, int):
            self.step, self.bounds = unit, None
        else:
            self.step, pos, self.bounds = None, 0, [0]
            for u in unit:
                pos += int(u)
                self.bounds.append(pos)

    def on_boundary(self, b: int) -> bool:
        if self.step is not None:
            return b % self.step == 0
        i = bisect.bisect_left(self.bounds, b)
        return i == len(self.bounds) or self.bounds[i] == b  # past the last unit: no unit to cut

    def next_boundary(self, b: int) -> int:
        """The first unit boundary at or after ``b``."""
        if self.step is not None:
            return -(-b // self.step) * self.step
        i = bisect.bisect_left(self.bounds, b)
        return self.bounds[i] if i < len(self.bounds) else b


def is_aligned(chunks: tuple[tuple[int, ...], ...], unit: Sequence[Any], start: Sequence[int]) -> bool:
    """Whether every interior block boundary falls on a unit boundary."""
    for dim, u, s in zip(chunks, unit, start):
        units = Units(u)
        if not all(units.on_boundary(b) for b in _boundaries(dim, s)):
            return False
    return True


def aligned_chunks(
    chunks: tuple[tuple[int, ...], ...], unit: Sequence[Any], start: Sequence[int]
) -> tuple[tuple[int, ...], ...]:
    """The aligned chunking closest to ``chunks``: each interior boundary moves up
    to the next unit boundary (boundaries that meet are merged). Blocks are never
    split, so no block gets smaller than the units it must own."""
    out = []
    for dim, u, s in zip(chunks, unit, start):
        units = Units(u)
        end = s + sum(dim)
        bounds = sorted({units.next_boundary(b) for b in _boundaries(dim, s)} - {s, end})
        bounds = [b for b in bounds if s < b < end]
        edges = [s, *bounds, end]
        out.append(tuple(b - a for a, b in zip(edges, edges[1:])) or (0,))
    return tuple(out)


def misaligned_blocks(
    chunks: tuple[tuple[int, ...], ...], unit: Sequence[Any], start: Sequence[int], limit: int = 5
) -> list[tuple[int, ...]]:
    """Indices of (up to ``limit``) blocks with an edge inside a storage unit."""
    bad_per_dim = []
    for dim, u, s in zip(chunks, unit, start):
        units = Units(u)
        bounds = _boundaries(dim, s)
        bad = set()
        for i, b in enumerate(bounds):
            if not units.on_boundary(b):
                bad.update((i, i + 1))
        bad_per_dim.append(bad)
    found = []
    for idx in itertools.product(*(range(len(dim)) for dim in chunks)):
        if any(i in bad for i, bad in zip(idx, bad_per_dim)):
            found.append(idx)
            if len(found) >= limit:
                break
    return found
