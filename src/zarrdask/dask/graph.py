"""``from_zarr``: a Zarr array as a dask array, one task per shard (sharded
arrays) or per chunk by default.

The graph is a single Blockwise layer (dask's ``from_array`` with the source
inlined), so it is built lazily: an array with a million chunks costs a few
tuples of chunk sizes, not a million Python objects, until dask materialises
the tasks it runs. Each task reads its block through the chunk engine
(batched fetches, coalesced range requests for parts of shards, decoding into
the block) with the engine's own thread pool switched off: dask already runs
tasks in parallel.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from .._pool import single_threaded
from ..core.api import open_array
from ..core.array import Array


class BlockSource:
    """What dask's tasks index: a zarrdask array read one block at a time (with
    the engine's thread pool off: dask runs the tasks in parallel)."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self.ndim = array.ndim

    def __getitem__(self, selection: Any) -> np.ndarray:
        with single_threaded():
            return np.asarray(self.array.get_basic_selection(selection))

    def __dask_tokenize__(self) -> Any:
        return (f"zarrdask.{type(self).__name__}", self.array.__dask_tokenize__())


def open_source(source: Any, path: str = "", storage_options: dict[str, Any] | None = None) -> Array:
    """A zarrdask Array from an Array, a store, a path or a URL, or a zarr-python
    Array or Group (with ``path`` inside the group)."""
    if isinstance(source, Array):
        if path:
            raise TypeError("path= is for stores and URLs; an Array is already at its path")
        return source
    return open_array(source, path=path, mode="r", storage_options=storage_options)


def from_zarr(
    source: Any,
    *,
    path: str = "",
    chunks: Any = None,
    storage_options: dict[str, Any] | None = None,
    name: str | None = None,
    inline_array: bool = True,
) -> da.Array:
    """A dask array reading a Zarr array.

    Parameters
    ----------
    source
        A zarrdask :class:`~zarrdask.Array`, a store, a local path or a URL, a
        zarr-python store, or a zarr-python ``Array`` or ``Group``.
    path
        The array's path inside the store (inside the group for a zarr-python ``Group``).
    chunks
        The dask block shape. Default: the shard shape for sharded arrays, the
        chunk shape otherwise (one task per stored object). Multiples group
        several; smaller blocks split a shard for reading. Anything
        ``dask.array.from_array`` accepts (``"auto"``, tuples, dicts).
    storage_options
        fsspec options for URLs.
    name
        The dask name; by default a deterministic token of the array, the
        chunks and ``inline_array``.
    inline_array
        ``True`` (default): the graph is one layer whose tasks each hold the
        (small, picklable) array reader. ``False``: the reader is a key of its
        own (``"original-" + name``) that every task refers to, as
        ``dask.array.from_array(..., inline_array=False)`` does. dask's own
        ``from_zarr`` defaults to ``False``.

    Returns
    -------
    dask.array.Array
    """
    array = open_source(source, path, storage_options)
    if chunks is None:
        chunks = array.shards or array.chunks
    if name is None:
        name = "zarrdask-from-zarr-" + tokenize(array, chunks, inline_array)
    return da.from_array(
        BlockSource(array),
        chunks=chunks,
        name=name,
        lock=False,
        asarray=False,
        fancy=False,
        inline_array=inline_array,
        meta=np.empty((0,) * array.ndim, dtype=array.dtype),
    )
