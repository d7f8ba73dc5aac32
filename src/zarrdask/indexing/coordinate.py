"""Coordinate (point) and mask selections — zarr-python's ``vindex`` — projected onto chunks.

A *coordinate selection* gives one integer array per dimension (an integer
counts as an array of one element). The arrays are broadcast against each
other and select the points ``(sel[0][k], sel[1][k], ...)``; the result has the
broadcast shape, as numpy's vectorised indexing (``a[[0, 2], [1, 3]]`` is
``[a[0, 1], a[2, 3]]``). When every index is a scalar the result has shape
``(1,)``, as in zarr-python. A *mask selection* is one boolean array of the
array's shape; it selects the points where it is true, in C order (a 1-d
result), as :func:`numpy.nonzero` lists them.

:class:`CoordinateIndexer` groups the points by chunk with one stable sort of
their chunk numbers (numpy, no Python loop per point) and yields one
:class:`~.orthogonal.ChunkProjection` per chunk touched: its ``chunk_selection``
is one index array per dimension (the points inside the chunk), its
``out_selection`` where they go in the output. The points of a chunk keep their
order in the selection, so when a write names a point twice the last value
wins, as in numpy.

:func:`selection_kind` decides how ``a[selection]`` reads: as basic,
orthogonal, coordinate or mask selection (zarr-python 3's ``Array.__getitem__``
rule, where it agrees with numpy).
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np

from ..chunking.rectilinear import Axis, is_regular
from ..errors import SelectionError
from .orthogonal import ChunkProjection, check_index_array

__all__ = ["CoordinateIndexer", "PointProjection", "selection_kind"]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_index_free(x: Any) -> bool:
    """An int, a slice or Ellipsis: what basic selection takes."""
    return x is Ellipsis or isinstance(x, slice) or _is_int(x)


def _is_mask(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == bool


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of dtype {x.dtype} and shape {x.shape}"
    if isinstance(x, list):
        return f"a list of {len(x)} items"
    return repr(x) if isinstance(x, slice) or x is Ellipsis else type(x).__name__


def _as_tuple(selection: Any) -> tuple:
    """The selection as a tuple, lists turned into arrays (an empty list into an
    empty integer array, as numpy reads ``a[[]]``)."""
    sel = selection if isinstance(selection, tuple) else (selection,)
    return tuple(
        (np.asarray(s) if len(s) else np.zeros(0, dtype=np.intp)) if isinstance(s, list) else s
        for s in sel
    )


def _check_dims(shape: tuple[int, ...], what: str) -> None:
    if not shape:
        raise SelectionError(f"{what} selects points of an array with dimensions; the array is 0-d (use a[()])")


def normalize_coordinates(selection: Any, shape: tuple[int, ...]) -> tuple[tuple[np.ndarray, ...], tuple[int, ...]]:
    """The points of a coordinate selection, one flat ``intp`` array per dimension
    (negative indices wrapped around), and the shape of the result."""
    _check_dims(shape, "a coordinate selection")
    sel = _as_tuple(selection)
    if len(sel) != len(shape):
        raise SelectionError(
            f"a coordinate selection takes one integer array per dimension: the array has "
            f"{len(shape)} dimensions, the selection {len(sel)} ({', '.join(map(_describe, sel))})"
        )
    arrays = []
    for d, (s, n) in enumerate(zip(sel, shape)):
        if _is_int(s):
            s = np.asarray(s)
        if not (isinstance(s, np.ndarray) and s.dtype.kind in "iu"):
            hint = f" (a mask selection is one boolean array of the array's shape {shape})" if _is_mask(s) else ""
            raise SelectionError(
                f"dimension {d}: a coordinate selection takes an integer or an integer array, "
                f"found {_describe(s)}{hint}"
            )
        arrays.append(check_index_array(s, n, d))
    try:
        broadcast = np.broadcast_arrays(*arrays)
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise SelectionError(
            f"the coordinate arrays' shapes {shapes} do not broadcast to one shape"
        ) from None
    out_shape = broadcast[0].shape or (1,)  # scalars only: a 1-element result, as zarr-python's
    return tuple(b.reshape(-1) for b in broadcast), out_shape


def normalize_mask(mask: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The points (one ``intp`` array per dimension, C order) where a boolean
    mask of the array's shape is true."""
    _check_dims(shape, "a mask selection")
    sel = _as_tuple(mask)
    if len(sel) != 1 or not _is_mask(sel[0]):
        raise SelectionError(
            f"a mask selection is one boolean array of the array's shape {shape}, "
            f"found {', '.join(map(_describe, sel))}"
        )
    if sel[0].shape != shape:
        raise SelectionError(f"the boolean mask has shape {sel[0].shape}, the array {shape}")
    return tuple(np.nonzero(sel[0]))


def is_mask_selection(selection: Any) -> bool:
    """One boolean array (alone, or alone in a tuple): what ``vindex`` reads as a mask."""
    sel = _as_tuple(selection)
    return len(sel) == 1 and _is_mask(sel[0])


def selection_kind(selection: Any, ndim: int) -> str:
    """How ``a[selection]`` reads: ``"basic"``, ``"orthogonal"``, ``"coordinate"``
    or ``"mask"``.

    As zarr-python 3's ``Array.__getitem__``: integers, slices and Ellipsis are
    basic; a boolean array of the array's dimensionality (2-d or more) is a mask;
    integer arrays (or lists) with integers, one per dimension, are a coordinate
    (vectorised) selection when there are several of them or one is
    multidimensional. A single 1-d array with integers and slices is orthogonal
    (numpy and zarr-python agree on its result). Several arrays mixed with slices
    or boolean arrays are refused: numpy and zarr-python read them differently,
    so ``oindex`` or ``vindex`` says which is meant.
    """
    sel = selection if isinstance(selection, tuple) else (selection,)
    if all(_is_index_free(s) for s in sel):
        return "basic"
    if len(sel) == 1 and _is_mask(sel[0]) and sel[0].ndim > 1 and ndim > 1:
        return "mask"
    arrays = [np.asarray(s) for s in sel if not _is_index_free(s)]
    if len(arrays) == 1 and arrays[0].ndim <= 1:
        return "orthogonal"
    sliced = any(s is Ellipsis or isinstance(s, slice) for s in sel)
    if not sliced and len(sel) == ndim and not any(a.dtype == bool for a in arrays):
        return "coordinate"  # the coordinate selection checks the arrays' dtypes
    raise SelectionError(
        "several index arrays (or a multidimensional one) mean vectorised indexing, which takes "
        f"one integer array or integer per dimension ({ndim}) and no slices or masks; found "
        f"{', '.join(map(_describe, sel))}. Use .oindex[...] for an orthogonal (per-dimension) "
        "selection or .vindex[...] for points"
    )


# -- the projection ------------------------------------------------------------
class PointProjection(ChunkProjection):
    """A chunk's points of a coordinate selection: ``chunk_selection`` and
    ``dims`` hold one index array per dimension."""

    def inner_indexer(self, shape: tuple[int, ...], inner_chunks: tuple[int, ...]) -> "CoordinateIndexer":
        return CoordinateIndexer.from_points(self.dims, shape, inner_chunks)


def _group_by_chunk(chunk_idx: list[np.ndarray], grid: tuple[int, ...]) -> tuple[np.ndarray | None, np.ndarray]:
    """The stable order that groups points by chunk (``None``: already grouped in
    C order of the chunk grid) and the index where each group starts."""
    n = len(chunk_idx[0])
    nchunks = math.prod(grid)
    if nchunks < 2**62:
        key = np.ravel_multi_index(chunk_idx, grid)
        order = None
        if not bool((key[1:] >= key[:-1]).all()):
            # numpy sorts 16-bit integers stably with a radix sort, ~15x faster than int64
            order = np.argsort(key.astype(np.uint16) if nchunks <= 1 << 16 else key, kind="stable")
            key = key[order]
        change = key[1:] != key[:-1]
    else:  # a grid too large to number its chunks in int64: sort by every coordinate
        order = np.lexsort(chunk_idx[::-1])
        change = np.zeros(n - 1, dtype=bool)
        for c in chunk_idx:
            c = c[order]
            change |= c[1:] != c[:-1]
    return order, np.flatnonzero(np.concatenate(([True], change)))


class CoordinateIndexer:
    """A coordinate (or mask) selection projected onto a regular chunk grid.

    Parameters
    ----------
    selection
        One integer or integer array (or list) per dimension; see the module doc.
    shape, chunk_shape
        The array's shape and its chunk (or shard) shape.

    Iterating gives one :class:`PointProjection` per chunk touched, in C order of
    the chunk grid; ``out_shape`` is the result's shape.
    """

    def __init__(self, selection: Any, shape: tuple[int, ...], chunk_shape: tuple[int, ...]) -> None:
        points, out_shape = normalize_coordinates(selection, shape)
        self._project(points, out_shape, shape, chunk_shape)

    @classmethod
    def from_mask(cls, mask: Any, shape: tuple[int, ...], chunk_shape: tuple[int, ...]) -> "CoordinateIndexer":
        """The points where ``mask`` (a boolean array of ``shape``) is true, in C order."""
        points = normalize_mask(mask, shape)
        return cls.from_points(points, shape, chunk_shape)

    @classmethod
    def from_points(
        cls, points: tuple[np.ndarray, ...], shape: tuple[int, ...], chunk_shape: tuple[int, ...]
    ) -> "CoordinateIndexer":
        """Points already checked to lie inside ``shape`` (one flat ``intp`` array per
        dimension, e.g. a :class:`PointProjection`'s ``dims``); a 1-d result."""
        self = cls.__new__(cls)
        self._project(points, (len(points[0]),), shape, chunk_shape)
        return self

    def _project(
        self,
        points: tuple[np.ndarray, ...],
        out_shape: tuple[int, ...],
        shape: tuple[int, ...],
        chunk_shape: tuple[int, ...],
    ) -> None:
        self.shape, self.chunk_shape, self.out_shape = tuple(shape), tuple(chunk_shape), tuple(out_shape)
        n = len(points[0])
        self._runs: list[tuple[int, int]] = []  # each chunk's points: [start, stop) after grouping
        if n == 0:
            return
        if is_regular(chunk_shape):
            grid = tuple(-(-s // c) for s, c in zip(shape, chunk_shape))
            split = [np.divmod(p, c) for p, c in zip(points, chunk_shape)]
        else:  # rectilinear: each axis's chunk boundaries looked up
            axes = [Axis(c, s) for c, s in zip(chunk_shape, shape)]
            self._axes = axes
            grid = tuple(a.nchunks for a in axes)
            split = []
            for p, a in zip(points, axes):
                q = a.chunks_of(p)
                split.append((q, p - a.starts(q)))
        chunk_idx = [q for q, _ in split]
        order, starts = _group_by_chunk(chunk_idx, grid)
        self._runs = list(zip(starts.tolist(), starts[1:].tolist() + [n]))
        first = starts if order is None else order[starts]
        self._coords = np.stack([c[first] for c in chunk_idx], axis=1).tolist()
        within = [r for _, r in split]
        self._within = within if order is None else [w[order] for w in within]
        # where each point goes: a run of the output when the points come grouped
        # and the output is 1-d, else one index array per output dimension
        self._out_runs = order is None and len(out_shape) == 1
        if not self._out_runs:
            flat = np.arange(n) if order is None else order
            self._out = (flat,) if len(out_shape) == 1 else np.unravel_index(flat, out_shape)

    @property
    def nchunks(self) -> int:
        """The number of chunks the selection touches."""
        return len(self._runs)

    def _is_complete(self, coords: tuple[int, ...], within: tuple[np.ndarray, ...]) -> bool:
        """The points are every element of the chunk (within the array) once, in C order."""
        if is_regular(self.chunk_shape):
            region = tuple(min(c, n - i * c) for i, c, n in zip(coords, self.chunk_shape, self.shape))
        else:
            region = tuple(a.clipped(i) for i, a in zip(coords, self._axes))
        if len(within[0]) != math.prod(region):
            return False
        return bool((np.ravel_multi_index(within, region) == np.arange(len(within[0]))).all())

    def __iter__(self) -> Iterator[ChunkProjection]:
        for g, (a, b) in enumerate(self._runs):
            coords = tuple(self._coords[g])
            within = tuple(w[a:b] for w in self._within)
            out = (slice(a, b),) if self._out_runs else tuple(o[a:b] for o in self._out)
            yield PointProjection(
                coords, within, out, self._is_complete(coords, within), None, within
            )
