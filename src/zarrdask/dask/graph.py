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

import threading
import weakref
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from ..core.api import open_array
from ..core.array import Array
from ..core.options import EngineOptions
from ..storage.zarr_python import zarr_python_location


#: the engine's options inside a dask task: its thread pool off (dask runs the
#: tasks in parallel already)
IN_TASK = EngineOptions(threads=1)


class BlockSource:
    """What dask's tasks index: a zarrdask array read one block at a time (with
    the engine's thread pool off: dask runs the tasks in parallel)."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self.ndim = array.ndim

    def __getitem__(self, selection: Any) -> np.ndarray:
        return np.asarray(self.array.get_basic_selection(selection, options=IN_TASK))

    def __dask_tokenize__(self) -> Any:
        return (f"zarrdask.{type(self).__name__}", self.array.__dask_tokenize__())


class _Opened:
    """zarrdask's view of the zarr-python arrays a graph holds (``inline_array=False``),
    opened once per process and forgotten with the array."""

    def __init__(self) -> None:
        self._arrays: dict[int, tuple[weakref.ref, Array]] = {}
        self._lock = threading.Lock()

    def __call__(self, source: Any) -> Array:
        with self._lock:
            found = self._arrays.get(id(source))
            if found is not None and found[0]() is source:
                return found[1]
        array = open_array(source, mode="r")
        with self._lock:
            key = id(source)
            self._arrays[key] = (weakref.ref(source, lambda _: self._arrays.pop(key, None)), array)
        return array


_opened = _Opened()


def read_block(source: Any, selection: Any, asarray: bool = False, lock: Any = None) -> np.ndarray:
    """A block of ``source`` (a zarrdask or zarr-python array, or a
    :class:`BlockSource`), read through the chunk engine with its thread pool
    off: the getter of the graph's tasks (dask's ``getter`` signature)."""
    if isinstance(source, BlockSource):
        return source[selection]
    array = source if isinstance(source, Array) else _opened(source)
    return np.asarray(array.get_basic_selection(selection, options=IN_TASK))


def _graph_source(source: Any, array: Array, inline_array: bool) -> Any:
    """What the graph holds: with ``inline_array=False`` the array object it was
    given (a zarrdask or zarr-python ``Array``, as dask's graph holds it) — for
    strict reads, or a zarrdask ``Array`` of another ``read_missing_chunks``,
    ``array``, which carries the graph's value — else a small reader of ``array``."""
    if inline_array:
        return BlockSource(array)
    if isinstance(source, Array) or getattr(zarr_python_location(source), "node_type", None) == "array":
        same = array.read_missing_chunks and (not isinstance(source, Array) or source.read_missing_chunks)
        return source if same else array
    return BlockSource(array)


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
    read_missing_chunks: bool | None = None,
    cache: bool | str | None = None,
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
        (small, picklable) array reader. ``False``: the source is a key of its
        own (``"original-" + name``) that every task refers to, as
        ``dask.array.from_array(..., inline_array=False)`` does — the zarrdask or
        zarr-python ``Array`` given (read through zarrdask's engine all the
        same), or a reader of the array a path or store names. dask's own
        ``from_zarr`` defaults to ``False``.
    read_missing_chunks
        ``False``: strict reads — a task needing a chunk that is not stored
        (or a shard's inner chunk with an empty index entry) raises
        :class:`~zarrdask.errors.ChunkNotFoundError` at ``compute()``.
        ``None`` (default): the array's own option, else the
        ``zarrdask.config`` setting as it is when the graph is built; either
        way the graph carries the value, so workers in other processes read
        as this process would.
    cache
        Read through the chunk cache of the process running each task
        (``True``, ``"revalidate"``, ``False``; ``None``: the array's own
        setting, else the setting ``cache``): blocks of overlapping
        computations, and repeated computations, read each stored chunk once
        per process (docs/performance.md, "Chunk cache").

    Returns
    -------
    dask.array.Array
    """
    array = open_source(source, path, storage_options)
    strict = array.read_missing_chunks if read_missing_chunks is None else bool(read_missing_chunks)
    array = array.with_config({"read_missing_chunks": strict})  # the graph's own value, whatever the workers' config
    if cache is not None:  # the graph holds the array with its cache setting
        array = source = array.with_cache(cache)
    if chunks is None:
        chunks = array.shards or array.chunks
    if name is None:
        name = "zarrdask-from-zarr-" + tokenize(array, chunks, inline_array, *(() if strict else ("strict",)))
    return da.from_array(
        _graph_source(source, array, inline_array),
        chunks=chunks,
        name=name,
        lock=False,
        asarray=False,
        fancy=False,
        getitem=read_block,
        inline_array=inline_array,
        meta=np.empty((0,) * array.ndim, dtype=array.dtype),
    )
