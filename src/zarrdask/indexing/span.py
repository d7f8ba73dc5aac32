"""The span of elements a small selection needs from one chunk.

A chunk stored as its elements one after another in C order (the ``bytes``
codec; a v2 array without filters) can be read, or decompressed (``blosc``
decodes byte ranges), from the first element a projection selects to the
last one only. :class:`ElementSpan` is that span and the strided view that
picks the selection out of it.
"""

from __future__ import annotations

import math

import numpy as np

from .orthogonal import ChunkProjection

__all__ = ["ElementSpan"]


class ElementSpan:
    """The elements of a chunk (C order) from the first to the last one a
    projection selects by slices and integers, and how to pick the selection
    out of them.

    Attributes
    ----------
    first, count : int
        The span: elements ``first`` to ``first + count`` of the chunk, in C order.
    """

    __slots__ = ("first", "count", "shape", "strides", "index")

    def __init__(self, first: int, count: int, shape: list[int], strides: list[int], index: tuple) -> None:
        self.first, self.count, self.shape, self.strides, self.index = first, count, shape, strides, index

    @staticmethod
    def of(proj: ChunkProjection, shape: tuple[int, ...]) -> "ElementSpan | None":
        """``proj``'s span in a chunk of ``shape``; ``None`` for selections by
        index arrays, empty ones, and spans of more than half the chunk (a
        whole read is as cheap)."""
        if proj.pre_selection is not None:
            return None
        lens, steps, index, first, last = [], [], [], 0, 0
        stride = math.prod(shape)
        total = stride
        for d, sel in enumerate(proj.chunk_selection):
            stride //= shape[d]
            if isinstance(sel, (int, np.integer)):
                start, n, step = int(sel), 1, 1
                index.append(0)  # an integer drops its dimension
            elif isinstance(sel, slice) and (sel.step or 1) > 0:
                step = sel.step or 1
                start, n = sel.start, len(range(sel.start, sel.stop, step))
                index.append(slice(None))
            else:
                return None
            if n == 0:
                return None
            lens.append(n)
            steps.append(step * stride)
            first += start * stride
            last += (start + (n - 1) * step) * stride
        count = last - first + 1
        if 2 * count > total:
            return None
        return ElementSpan(first, count, lens, steps, tuple(index))

    def select(self, elements: np.ndarray) -> np.ndarray:
        """The selection (what ``proj.select`` gives for the whole chunk), a
        view of the span's ``elements``."""
        size = elements.itemsize
        # strided as raw bytes, then viewed back: numpy's as_strided cannot rebuild
        # every dtype from its typestr (ml_dtypes' float8_e5m2 is "<f1")
        part = np.lib.stride_tricks.as_strided(
            elements.view(f"V{size}"), shape=self.shape, strides=[s * size for s in self.strides], writeable=False
        ).view(elements.dtype)
        return part[self.index]
