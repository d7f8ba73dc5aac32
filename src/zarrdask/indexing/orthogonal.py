"""Selections and their projection onto the chunk grid.

A selection is normalised per dimension into one of: an integer (the axis is
dropped), a slice with a positive step, or a 1-d array of integer indices (from
an integer array, a boolean mask, or a slice with a negative step). Basic
indexing (``a[1, ::2, ...]``) is the special case without arrays; orthogonal
indexing (``a.oindex[[0, 3], mask]``) applies each dimension's selection
independently, as zarr-python's ``oindex`` and numpy's ``np.ix_`` do.

:func:`project` yields, for every chunk the selection touches,
``(chunk_coords, chunk_selection, out_selection)``: apply ``chunk_selection`` to
the decoded chunk and store the result at ``out_selection`` of the output.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass
from typing import Any, Iterator, Protocol, Sequence, Union

import numpy as np

from ..chunking.rectilinear import Axis, is_regular
from ..errors import BoundsCheckError, SelectionError

DimSel = Union[int, slice, np.ndarray]


def _check_int(i: Any, length: int, dim: int) -> int:
    i = int(i)
    if i < -length or i >= length:
        raise BoundsCheckError(
            f"index {i} is out of bounds for dimension {dim} of length {length}"
        )
    return i + length if i < 0 else i


def _normalize_dim(sel: Any, length: int, dim: int, allow_arrays: bool) -> DimSel:
    if isinstance(sel, (int, np.integer)) and not isinstance(sel, (bool, np.bool_)):
        return _check_int(sel, length, dim)
    if isinstance(sel, slice):
        start, stop, step = sel.indices(length)
        if step > 0:
            return slice(start, max(start, stop), step)
        return np.arange(start, stop, step, dtype=np.intp)
    if not allow_arrays:
        raise SelectionError(
            f"dimension {dim}: basic selection takes integers, slices and Ellipsis, found "
            f"{type(sel).__name__}; use .oindex for integer arrays and boolean masks"
        )
    arr = np.asarray(sel)
    if arr.dtype == bool:
        if arr.shape != (length,):
            raise SelectionError(
                f"dimension {dim}: boolean mask of shape {arr.shape} does not match the "
                f"dimension length {length}"
            )
        return np.flatnonzero(arr)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        if arr.ndim == 0 and arr.dtype.kind in "iu":
            return _check_int(arr, length, dim)
        raise SelectionError(
            f"dimension {dim}: expected an integer, slice, 1-d integer array or boolean "
            f"mask, found an array of dtype {arr.dtype} and shape {arr.shape}"
        )
    return check_index_array(arr, length, dim)


def check_index_array(arr: np.ndarray, length: int, dim: int) -> np.ndarray:
    """An integer array of indices along dimension ``dim`` as a new ``intp`` array
    with negative indices wrapped around; :class:`BoundsCheckError` naming the
    first index outside ``[-length, length)``. Checked before the cast, so a huge
    unsigned index cannot wrap into a valid one."""
    bad = (arr >= length) if arr.dtype.kind == "u" else (arr < -length) | (arr >= length)
    if bad.any():
        raise BoundsCheckError(
            f"index {int(arr[bad][0])} is out of bounds for dimension {dim} of length {length}"
        )
    out = arr.astype(np.intp, copy=True)
    out[out < 0] += length
    return out


def normalize_selection(
    selection: Any, shape: tuple[int, ...], *, allow_arrays: bool
) -> tuple[DimSel, ...]:
    """One :data:`DimSel` per dimension; Ellipsis expanded, missing trailing dims filled."""
    if not isinstance(selection, tuple):
        selection = (selection,)
    n_ellipsis = sum(1 for s in selection if s is Ellipsis)
    if n_ellipsis > 1:
        raise SelectionError("a selection may contain at most one Ellipsis")
    if n_ellipsis:
        i = next(i for i, s in enumerate(selection) if s is Ellipsis)
        fill = len(shape) - (len(selection) - 1)
        selection = selection[:i] + (slice(None),) * max(fill, 0) + selection[i + 1 :]
    if len(selection) > len(shape):
        raise SelectionError(
            f"too many indices: the array has {len(shape)} dimensions, the selection {len(selection)}"
        )
    if any(s is None for s in selection):
        raise SelectionError("np.newaxis (None) is not supported in a selection")
    selection = selection + (slice(None),) * (len(shape) - len(selection))
    return tuple(
        _normalize_dim(s, n, d, allow_arrays) for d, (s, n) in enumerate(zip(selection, shape))
    )


@dataclass(frozen=True)
class _DimProjection:
    """A selection along one dimension, split by chunk."""

    # (chunk index, selection within the chunk, selection within the output,
    # whether that selection covers the chunk along this dimension, in order)
    parts: list[tuple[int, DimSel, DimSel | None, bool]]
    out_len: int | None  # None: the axis is dropped


def _covers(sel: DimSel, extent: int) -> bool:
    """Whether ``sel``, within a chunk of ``extent`` elements (inside the
    array) along its dimension, selects all of them in order."""
    return isinstance(sel, slice) and sel.step in (None, 1) and sel.start == 0 and sel.stop >= extent


def _project_dim(sel: DimSel, ax: Axis) -> _DimProjection:
    """Split one dimension's selection by the chunks of ``ax`` (a regular step
    or explicit edges)."""
    if isinstance(sel, int):
        c = ax.chunk_of(sel)
        return _DimProjection([(c, sel - ax.start(c), None, False)], None)
    if isinstance(sel, slice):
        start, stop, step = sel.start, sel.stop, sel.step
        n = len(range(start, stop, step))
        parts = []
        if n:
            last = start + (n - 1) * step
            size = ax.step  # a regular axis: its chunks' bounds by arithmetic, not a method call each
            first_chunk, last_chunk = (start // size, last // size) if size else (ax.chunk_of(start), ax.chunk_of(last))
            for c in range(first_chunk, last_chunk + 1):
                c0 = c * size if size else ax.start(c)
                c1 = c0 + (size or ax.size(c))
                first = start if start >= c0 else start + -(-(c0 - start) // step) * step
                if first >= c1 or first > last:
                    continue
                end = min(c1, last + 1)
                k0 = (first - start) // step
                k = len(range(first, end, step))
                within = slice(first - c0, end - c0, step)
                # the chunk's extent in the array (`first` lies in it, so c0 < length)
                parts.append((c, within, slice(k0, k0 + k), _covers(within, min(c1, ax.length) - c0)))
        return _DimProjection(parts, n)
    arr = sel
    n = len(arr)
    if n == 0:
        return _DimProjection([], 0)
    ordered = bool(np.all(arr[1:] >= arr[:-1]))
    order = None if ordered else np.argsort(arr, kind="stable")
    sorted_arr = arr if ordered else arr[order]
    chunk_ids = ax.chunks_of(sorted_arr)
    bounds = np.flatnonzero(np.diff(chunk_ids)) + 1
    starts = np.concatenate(([0], bounds))
    stops = np.concatenate((bounds, [n]))
    parts = []
    for a, b in zip(starts.tolist(), stops.tolist()):
        c = int(chunk_ids[a])
        within = sorted_arr[a:b] - ax.start(c)
        out = slice(a, b) if ordered else order[a:b]
        if b - a > 1 and within[-1] - within[0] == b - a - 1 and np.all(np.diff(within) == 1):
            within = slice(int(within[0]), int(within[-1]) + 1, 1)  # normalised (what inner_indexer takes as it is)
        parts.append((c, within, out, _covers(within, ax.clipped(c))))
    return _DimProjection(parts, n)


@dataclass(frozen=True)
class ChunkProjection:
    """Where one chunk's part of a selection comes from and goes to.

    Read with ``out[out_selection] = proj.select(chunk)``; write with
    ``proj.assign(chunk, value[out_selection])``.
    """

    coords: tuple[int, ...]
    chunk_selection: tuple
    out_selection: tuple
    #: the selection covers the whole chunk (within the array) in order
    is_complete: bool
    #: integer indices applied first when arrays are mixed with integers
    #: (numpy would otherwise move the advanced axes to the front)
    pre_selection: tuple | None = None
    #: the selection within the chunk, one int / slice / int array per dimension
    #: (what an :class:`Indexer` over the chunk accepts)
    dims: tuple = ()

    def select(self, chunk: np.ndarray) -> np.ndarray:
        if self.pre_selection is not None:
            chunk = chunk[self.pre_selection]
        return chunk[self.chunk_selection]

    def assign(self, chunk: np.ndarray, value: Any) -> None:
        if self.pre_selection is not None:
            chunk = chunk[self.pre_selection]  # a view: ints with at least one slice
        chunk[self.chunk_selection] = value

    def inner_indexer(self, shape: tuple[int, ...], inner_chunks: tuple[int, ...]) -> "ChunkIndexer":
        """This projection's selection within its chunk (of ``shape``), projected
        onto a grid of ``inner_chunks`` (a shard's inner chunks); its output is
        what :meth:`select` gives for the whole chunk."""
        return Indexer(self.dims, shape, inner_chunks, allow_arrays=True, normalized=True)


class ChunkIndexer(Protocol):
    """What the chunk engine and the sharding codec take: a selection projected
    onto a chunk grid (:class:`Indexer`, :class:`~.coordinate.CoordinateIndexer`)."""

    #: the shape of the selection's result
    out_shape: tuple[int, ...]

    def __iter__(self) -> Iterator[ChunkProjection]:
        """One projection per chunk the selection touches."""
        ...


def _as_index(parts: Sequence[DimSel]) -> tuple:
    """Turn per-dim selections into one numpy index with orthogonal semantics."""
    n_arrays = sum(isinstance(p, np.ndarray) for p in parts)
    if n_arrays <= 1:
        return tuple(parts)
    # several arrays: np.ix_ semantics; slices become aranges (ints are dropped first)
    kept = [p for p in parts if not isinstance(p, int)]
    arrays = [
        np.arange(p.start, p.stop, p.step) if isinstance(p, slice) else np.asarray(p) for p in kept
    ]
    grids = np.ix_(*arrays)
    it = iter(grids)
    return tuple(p if isinstance(p, int) else next(it) for p in parts)


class Indexer:
    """A normalised selection over an array's chunk grid: ``chunk_shape`` is a
    regular chunk shape, or per-axis chunks of a rectilinear grid (an ``int`` or
    a tuple of edge lengths per axis)."""

    def __init__(
        self,
        selection: Any,
        shape: tuple[int, ...],
        chunk_shape: tuple[int, ...],
        *,
        allow_arrays: bool = False,
        normalized: bool = False,
    ) -> None:
        """``normalized=True``: ``selection`` is a tuple of :data:`DimSel`
        already normalised within ``shape`` (a :class:`ChunkProjection`'s
        ``dims``), taken as it is."""
        self.shape = shape
        self.chunk_shape = chunk_shape
        self.dims = tuple(selection) if normalized else normalize_selection(selection, shape, allow_arrays=allow_arrays)
        self._regular = is_regular(chunk_shape)
        axes = chunk_shape if self._regular else [c if isinstance(c, int) else Axis(c, n)
                                                   for c, n in zip(chunk_shape, shape)]
        self._proj = [_project_dim(s, c if isinstance(c, Axis) else Axis(c, n))
                      for s, c, n in zip(self.dims, axes, shape)]
        self.out_shape: tuple[int, ...] = tuple([p.out_len for p in self._proj if p.out_len is not None])

    @property
    def nchunks(self) -> int:
        return math.prod(len(p.parts) for p in self._proj)

    def __iter__(self) -> Iterator[ChunkProjection]:
        arrays = any(map(isinstance, self.dims, itertools.repeat(np.ndarray)))
        for combo in itertools.product(*[p.parts for p in self._proj]):
            coords, dims, outs, covers = zip(*combo) if combo else ((), (), (), ())  # () for a 0-d array
            if any(map(operator.is_, outs, itertools.repeat(None))):  # an int drops its axis
                outs = tuple(o for o in outs if o is not None)
            complete = all(covers)
            if not arrays:  # ints and slices: the selections are numpy indices as they are
                yield ChunkProjection(coords, dims, outs, complete, None, dims)
                continue
            chunk_sel = list(dims)
            pre = None
            if any(isinstance(s, np.ndarray) for s in chunk_sel) and any(isinstance(s, int) for s in chunk_sel):
                pre = tuple(s if isinstance(s, int) else slice(None) for s in chunk_sel)
                chunk_sel = [s for s in chunk_sel if not isinstance(s, int)]
            yield ChunkProjection(coords, _as_index(chunk_sel), _as_index(outs), complete, pre, dims)
