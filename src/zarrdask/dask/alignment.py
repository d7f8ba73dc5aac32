"""Which blocks of a dask array cut through storage units, and the minimal
chunking that does not (pure functions, no I/O).

A storage unit is a shard for sharded arrays and a chunk otherwise: the thing
one store write replaces. A dask chunking is *aligned* with a region of the
array when every block boundary inside the region falls on a unit boundary; then
every unit the region touches is written by exactly one block (units cut by the
region's own edges included), and no two tasks ever read-modify-write the same
stored object.
"""

from __future__ import annotations

import itertools
from typing import Sequence


def _boundaries(chunks: Sequence[int], start: int) -> list[int]:
    out, pos = [], start
    for c in chunks[:-1]:
        pos += c
        out.append(pos)
    return out


def is_aligned(chunks: tuple[tuple[int, ...], ...], unit: Sequence[int], start: Sequence[int]) -> bool:
    """Whether every interior block boundary falls on a unit boundary."""
    return all(
        b % u == 0 for dim, u, s in zip(chunks, unit, start) for b in _boundaries(dim, s)
    )


def aligned_chunks(
    chunks: tuple[tuple[int, ...], ...], unit: Sequence[int], start: Sequence[int]
) -> tuple[tuple[int, ...], ...]:
    """The aligned chunking closest to ``chunks``: each interior boundary moves up
    to the next unit boundary (boundaries that meet are merged). Blocks are never
    split, so no block gets smaller than the units it must own."""
    out = []
    for dim, u, s in zip(chunks, unit, start):
        end = s + sum(dim)
        bounds = sorted({-(-b // u) * u for b in _boundaries(dim, s)} - {s, end})
        bounds = [b for b in bounds if s < b < end]
        edges = [s, *bounds, end]
        out.append(tuple(b - a for a, b in zip(edges, edges[1:])) or (0,))
    return tuple(out)


def misaligned_blocks(
    chunks: tuple[tuple[int, ...], ...], unit: Sequence[int], start: Sequence[int], limit: int = 5
) -> list[tuple[int, ...]]:
    """Indices of (up to ``limit``) blocks with an edge inside a storage unit."""
    bad_per_dim = []
    for dim, u, s in zip(chunks, unit, start):
        bounds = _boundaries(dim, s)
        bad = set()
        for i, b in enumerate(bounds):
            if b % u:
                bad.update((i, i + 1))
        bad_per_dim.append(bad)
    found = []
    for idx in itertools.product(*(range(len(dim)) for dim in chunks)):
        if any(i in bad for i, bad in zip(idx, bad_per_dim)):
            found.append(idx)
            if len(found) >= limit:
                break
    return found
