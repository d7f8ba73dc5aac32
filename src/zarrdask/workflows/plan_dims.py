"""The per-dimension arithmetic of rechunk plans (:mod:`zarrdask.workflows.plan`):
along one dimension cut into blocks and read in chunks, how many blocks, how
far each reaches once expanded to the chunks it reads, and how many chunks the
blocks touch — exactly, in closed form for dimensions with many blocks."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["block_extent", "dim_reads", "dim_stats", "edge_bounds", "edges_stats"]

#: dimensions with at most this many blocks get their extents computed one by one
_EXACT_BLOCKS = 4096


def _floor_sum(n: int, m: int, a: int, b: int) -> int:
    """``sum(floor((a*i + b) / m) for i in range(n))`` for ``n, a, b >= 0``, ``m > 0``,
    in O(log) steps (the Euclid-like reduction)."""
    total = 0
    while n > 0:
        if a >= m:
            total += (n - 1) * n // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y = a * n + b
        if y < m:
            break
        n, b = divmod(y, m)
        m, a = a, m
    return total


def block_extent(index: int, size: int, block: int, read: int) -> tuple[int, int]:
    """``(start, stop)`` of block ``index`` along one dimension, expanded to the read chunks."""
    start = index * block
    stop = min(start + block, size)
    return start // read * read, min(-(-stop // read) * read, size)


@lru_cache(maxsize=1 << 16)
def dim_stats(size: int, block: int, read: int) -> tuple[int, int, int]:
    """Along one dimension of length ``size`` cut into blocks of ``block`` and read
    in chunks of ``read``: ``(number of blocks, largest expanded block, sum of the
    expanded blocks)``.

    The largest expanded block is exact up to :data:`_EXACT_BLOCKS` blocks and
    an upper bound beyond (exact as soon as the blocks meet the read chunks at
    every possible offset); the sum is always exact.
    """
    if size <= 0:
        return 0, 0, 0
    block, read = min(block, size), min(read, size)
    n = -(-size // block)
    if n <= _EXACT_BLOCKS:
        starts = np.arange(n, dtype=np.int64) * block
        stops = np.minimum(starts + block, size)
        ext = np.minimum(-(-stops // read) * read, size) - starts // read * read
        return n, int(ext.max()), int(ext.sum())
    ceil_size = -(-size // read)
    lo = _floor_sum(n, read, block, 0)
    # block i < n-1 ends at (i+1)*block; ceil(x/read) = floor((x + read - 1)/read)
    hi = _floor_sum(n - 1, read, block, block + read - 1) + ceil_size
    total = read * (hi - lo)
    pad = ceil_size * read - size
    if pad:  # blocks ending inside the last, partial read chunk expand only to the array's end
        last_full = size // read * read
        total -= pad * (max(0, n - 1 - last_full // block) + 1)
    g = math.gcd(block, read)
    largest = min(read * -(-(block + read - g) // read), size)
    return n, largest, total


def edge_bounds(size: int, edges: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Starts and stops (clipped to ``size``) of explicit blocks overlapping ``[0, size)``."""
    stops = np.cumsum(np.asarray(edges, dtype=np.int64))
    starts = stops - np.asarray(edges, dtype=np.int64)
    keep = starts < size
    return starts[keep], np.minimum(stops[keep], size)


def dim_reads(size: int, block: int | tuple[int, ...], read: int) -> int:
    """Along one dimension of length ``size`` cut into blocks of ``block`` (or
    explicit edge lengths) and read in chunks of ``read``: the chunks the blocks
    touch, summed over the blocks (a chunk cut by a block edge counts once per
    block)."""
    if size <= 0:
        return 0
    read = min(read, size)
    if not isinstance(block, int):
        starts, stops = edge_bounds(size, block)
        return int((-(-stops // read) - starts // read).sum())
    block = min(block, size)
    n = -(-size // block)
    # sum of ceil(stop / read) minus sum of floor(start / read), as in dim_stats
    return _floor_sum(n - 1, read, block, block + read - 1) + -(-size // read) - _floor_sum(n, read, block, 0)


def edges_stats(size: int, edges: tuple[int, ...], read: int) -> tuple[int, int, int]:
    """:func:`dim_stats` for explicit block edge lengths (a rectilinear target)."""
    if size <= 0:
        return 0, 0, 0
    read = min(read, size)
    starts, stops = edge_bounds(size, edges)
    ext = np.minimum(-(-stops // read) * read, size) - starts // read * read
    return len(starts), int(ext.max()), int(ext.sum())
