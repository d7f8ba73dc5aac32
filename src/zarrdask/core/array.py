"""The Array: a Zarr v2 or v3 array in a store, indexed like numpy.

Selections (zarr-python's names): ``a[...]`` / ``a[...] = v`` for basic
selections (integers, slices with steps, Ellipsis), ``a.oindex[...]`` for
orthogonal selections (integer arrays and boolean masks per dimension),
``a.vindex[...]`` for points (coordinate arrays broadcast against each other, or
one boolean mask of the array's shape). ``a[...]`` with several integer arrays
is a point selection, as in numpy and zarr-python.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cached_property
from typing import Any, Callable

import numpy as np

from .. import config
from ..chunking.rectilinear import grow_edges
from ..codecs.abc import ArrayBytesCodec
from ..indexing import CoordinateIndexer, Indexer, selection_kind
from ..indexing.coordinate import is_mask_selection
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..metadata.dtypes import display_name
from ..storage.abc import Store
from ..storage.cache import invalidate
from ..storage.caching import caching
from .._pool import thread_map
from . import engine
from .layout import ArrayLayout, resolve
from .array_info import ArrayInfo
from .nodes import ZARRAY, Node, NodeDocs
from .options import EngineOptions


class _Accessor:
    """``a.oindex[...]`` / ``a.vindex[...]``: one kind of selection behind ``[]``."""

    def __init__(self, get: Callable[[Any], Any], set_: Callable[[Any, Any], None]) -> None:
        self._get, self._set = get, set_

    def __getitem__(self, selection: Any) -> Any:
        return self._get(selection)

    def __setitem__(self, selection: Any, value: Any) -> None:
        self._set(selection, value)


def _materialise(selection: Any) -> Any:
    """An index array stored as a Zarr array is read first (as zarr-python does)."""
    return selection[...] if isinstance(selection, Array) else selection


def _points_kind(selection: Any) -> str:
    """``vindex``'s two kinds: ``"mask"`` (one boolean array) or ``"coordinate"``."""
    return "mask" if is_mask_selection(selection) else "coordinate"


def _points_value(value: Any, out_shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """The value of a coordinate selection's write: anything that broadcasts to
    ``out_shape``, or (as zarr-python takes it) one value per point in a flat array."""
    if len(out_shape) < 2 or np.ndim(value) != 1:
        return value
    n = math.prod(out_shape)
    if len(value) != n or n == out_shape[-1]:
        return value
    if not isinstance(value, np.ndarray):  # object: bytes stay bytes (no "S" trimming)
        value = np.asarray(value, dtype=object if dtype.hasobject else None)
    return value.reshape(out_shape)


#: the options an array reads and writes with that the metadata does not hold
#: (``Array.with_config``); each falls back to the ``zarrdask.config`` setting of its name
RUN_TIME_OPTIONS = ("write_empty_chunks", "read_missing_chunks", "cache")


class Array(Node):
    """A Zarr array. Create one with :func:`zarrdask.create_array` or open one
    with :func:`zarrdask.open_array`; don't call the constructor directly.
    """

    _kind = "array"

    def __init__(
        self,
        store: Store,
        path: str,
        metadata: ArrayMetadataV2 | ArrayMetadataV3,
        attributes: dict[str, Any],
        *,
        read_only: bool = False,
        write_empty_chunks: bool | None = None,
        read_missing_chunks: bool | None = None,
        codecs: Any = None,
        cache: bool | str | None = None,
    ) -> None:
        super().__init__(store, path, metadata, attributes, read_only=read_only)
        # the run-time options (RUN_TIME_OPTIONS), None: the zarrdask.config setting of that name
        self._options = {"write_empty_chunks": write_empty_chunks, "read_missing_chunks": read_missing_chunks,
                         "cache": None if cache is None else config.parse_cache(cache, "the keyword 'cache'")}
        self._codecs = None if codecs is None else tuple(codecs)
        self.layout  # resolve now: a bad codec configuration fails at open

    @classmethod
    def _from_node(cls, store: Store, node: NodeDocs, *, read_only: bool, **kwargs: Any) -> "Array":
        return cls(store, node.path, node.metadata, node.attributes, read_only=read_only, **kwargs)

    @cached_property
    def layout(self) -> ArrayLayout:
        """The array resolved (:mod:`zarrdask.core.layout`): grid, data type,
        codecs, fill value, chunk keys — what the chunk engine works on."""
        return resolve(self._metadata, self._path, self._codecs)

    def with_codecs(self, codecs: Any) -> "Array":
        """This array (same store, path, metadata) running the codec objects
        ``codecs`` — the metadata's ``codecs`` list as objects carrying settings
        that are not stored in the metadata, such as a ``conditional`` codec's
        decision. Their JSON must equal the stored codecs (else
        :class:`~zarrdask.errors.MetadataError`); Zarr v3 only. The objects go
        along when the array is pickled (dask); re-opening the array from the
        store builds its codecs from the metadata again."""
        return Array(self._store, self._path, self._metadata, self._attrs.asdict(), read_only=self._read_only,
                     codecs=codecs, **self._options)

    def with_config(self, config: Any) -> "Array":
        """This array (same store, path, metadata, codecs) with other run-time
        options, as zarr-python's ``Array.with_config``: a mapping of
        ``write_empty_chunks``, ``read_missing_chunks`` and ``cache`` (``None``:
        the ``zarrdask.config`` setting). Options not given keep their value."""
        unknown = sorted(set(config) - set(RUN_TIME_OPTIONS))
        if unknown:
            raise ValueError(f"Array.with_config: unknown option(s) {unknown}; known: {sorted(RUN_TIME_OPTIONS)}")
        return Array(self._store, self._path, self._metadata, self._attrs.asdict(), read_only=self._read_only,
                     codecs=self._codecs, **{**self._options, **config})

    def with_cache(self, cache: bool | str | None) -> "Array":
        """This array read through the process's chunk cache as ``cache`` says
        (``True``, ``"revalidate"``, ``False``; ``None``: the setting
        ``cache``; see :attr:`cache`); ``self`` when that is already so."""
        mode = None if cache is None else config.parse_cache(cache, "the keyword 'cache'")
        return self if mode == self._options["cache"] else self.with_config({"cache": mode})

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the data in memory: ``StringDType`` for strings (v3
        ``string``; v2 ``"|O"`` with ``vlen-utf8``), ``object`` for bytes."""
        return self.layout.dtype

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def unit_grid(self) -> tuple:
        """The chunk grid as stored: per axis, the size of the stored units
        (shards when sharded, else chunks) — an ``int`` where the axis is regular,
        the tuple of edge lengths where it is rectilinear (zarr-extensions
        ``chunk-grids/rectilinear``; the last edge may reach past the shape)."""
        return self.layout.grid.chunks

    @property
    def chunk_grid(self) -> str:
        """``"regular"`` or ``"rectilinear"`` (zarr-extensions ``chunk-grids/rectilinear``)."""
        return self.layout.grid.name

    @property
    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The extent of every stored unit (shard when sharded, else chunk) along
        each axis, clipped to the shape: a dask ``chunks`` tuple (zarr-python 3.4's name)."""
        return self.layout.grid.dask_chunks()

    @property
    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """The extent of every chunk (inner chunk when sharded) along each axis,
        clipped to the shape (zarr-python 3.4's name)."""
        return self.layout.read_grid.dask_chunks()

    @property
    def chunks(self) -> tuple:
        """The chunk shape (the inner chunk shape for sharded arrays).

        For an unsharded array with a rectilinear chunk grid: the chunk sizes
        along each axis clipped to the shape, a dask ``chunks`` tuple (as
        :attr:`read_chunk_sizes`; zarr-python 3.4 raises here instead).
        """
        return self.layout.chunks

    @property
    def shards(self) -> tuple | None:
        """The shard shape, or ``None`` when the array is not sharded (for a
        rectilinear grid of shards, their sizes per axis as a dask ``chunks`` tuple)."""
        return self.layout.shards

    @property
    def fill_value(self) -> Any:
        """The fill value; for v2 variable-length strings and bytes the value it
        stands for (zarr-python 2's legacy ``0`` is ``""`` / ``b""``)."""
        stored = self._metadata.fill_value
        return self.layout.fill_value if self.dtype.kind in "OT" and stored is not None else stored

    @property
    def order(self) -> str:
        return self.layout.order

    @property
    def filters(self) -> tuple[Any, ...]:
        """The v2 filters (numcodecs codecs) or the v3 array→array codecs (for a
        sharded array, those before the sharding codec and those inside it)."""
        return self.layout.filters

    @property
    def serializer(self) -> ArrayBytesCodec | None:
        """The v3 array→bytes codec — for a sharded array the one inside the
        shards, as zarr-python reports it (``None`` for v2 arrays)."""
        return self.layout.serializer

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The v2 compressor (numcodecs) or the v3 bytes→bytes codecs (for a
        sharded array, those compressing the inner chunks, as zarr-python reports them)."""
        return self.layout.compressors

    @property
    def compressor(self) -> Any:
        """The v2 compressor (or the first v3 bytes→bytes codec), or ``None``."""
        c = self.compressors
        return c[0] if c else None

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return self.layout.dimension_names

    @property
    def cache(self) -> bool | str:
        """How reads use the process's chunk cache (docs/performance.md, "Chunk
        cache"): ``False`` (not at all), ``True`` (values read once are served
        from memory until a write through zarrdask in this process replaces
        them) or ``"revalidate"`` (served after the store confirmed they are
        current); the ``cache`` the array was opened with, else the setting
        ``cache``. The budget is the setting ``cache_bytes`` (``0``: off)."""
        return self._option("cache")

    @property
    def _reads(self) -> Store:
        """The store reads go through: the array's, through the chunk cache where :attr:`cache` says."""
        return caching(self._store, self.cache)

    def _option(self, name: str) -> Any:
        value = self._options[name]
        return config.get(name) if value is None else value

    @property
    def write_empty_chunks(self) -> bool:
        return bool(self._option("write_empty_chunks"))

    @property
    def read_missing_chunks(self) -> bool:
        """Whether a chunk that is not stored (for sharded arrays also an inner
        chunk with an empty index entry) reads as the fill value; ``False``:
        reads needing one raise :class:`~zarrdask.errors.ChunkNotFoundError`
        (docs/guarantees.md, "Strict reads"). Opened with ``None``: the
        setting ``read_missing_chunks``, looked at on every read."""
        return bool(self._option("read_missing_chunks"))

    @property
    def _codec(self) -> Any:
        return self.layout.codec

    @property
    def _sharding(self) -> Any:
        return self.layout.sharding

    @property
    def _fill_for_read(self) -> Any:
        return self.layout.fill_value

    @property
    def nchunks(self) -> int:
        """The number of chunks (inner chunks, for sharded arrays)."""
        return self.layout.read_grid.nchunks

    @property
    def nshards(self) -> int | None:
        """The number of shards, or ``None`` when the array is not sharded."""
        return self.layout.grid.nchunks if self.shards else None

    def stored_keys(self) -> list[str]:
        """The keys of the stored chunks (shards, when sharded) inside the grid."""
        layout = self.layout
        grid = layout.grid.grid_shape
        keys = []
        for key in self._store.list_prefix(layout.prefix):
            coords = layout.key_encoding.decode(key[len(layout.prefix):])
            if coords is not None and len(coords) == len(grid) and all(0 <= c < n for c, n in zip(coords, grid)):
                keys.append(key)
        return keys

    @property
    def nshards_initialized(self) -> int | None:
        """The number of stored shards, or ``None`` when the array is not sharded."""
        return len(self.stored_keys()) if self.shards else None

    @property
    def nchunks_initialized(self) -> int:
        """The number of chunks that hold a stored value (for sharded arrays, the
        non-empty inner chunks, counted from every stored shard's index)."""
        keys = self.stored_keys()
        sharding = self._sharding
        if sharding is None:
            return len(keys)
        layout = self.layout
        shard_spec = layout.chunk_spec
        prefix = len(layout.prefix)
        grid = layout.grid

        def count(key: str) -> int:
            # only inner chunks overlapping the array count (the index may list others)
            shard = layout.key_encoding.decode(key[prefix:]) or ()
            shard_shape = grid.chunk_shape_at(shard)
            spec = layout.spec_at(shard_spec, shard)
            region = grid.chunk_region(shard)
            inside = np.ones(tuple(s // c for s, c in zip(shard_shape, self.chunks)), dtype=bool)
            for d, (r, c, n) in enumerate(zip(region, self.chunks, self.shape)):
                starts = r.start + np.arange(inside.shape[d]) * c
                inside &= (starts < n).reshape([-1 if k == d else 1 for k in range(inside.ndim)])
            with self._store.reader(key) as reader:
                return sharding.count_chunks(reader, spec, key, inside)

        return sum(thread_map(count, keys))

    @property
    def nbytes_stored(self) -> int:
        """Bytes stored for this array's chunks and metadata."""
        prefix = self.layout.prefix
        keys = list(self._store.list_prefix(prefix)) if prefix else list(self._store.list())
        return sum(self._store.getsize(k) or 0 for k in keys)

    @property
    def info(self) -> Any:
        """A summary of the array (:class:`~zarrdask.core.array_info.ArrayInfo`)."""
        return ArrayInfo(self)

    # -- persistence -----------------------------------------------------------
    def _replace_metadata(self, metadata: Any) -> None:
        self._write_metadata(metadata, self._attrs.asdict(), only=ZARRAY)
        self._metadata = metadata
        self.__dict__.pop("layout", None)

    # -- reading -------------------------------------------------------------
    def get_basic_selection(
        self, selection: Any = Ellipsis, *, out: np.ndarray | None = None, options: EngineOptions | None = None
    ) -> Any:
        """Read integers, slices and ``...`` (as numpy basic indexing reads them);
        ``options`` (:class:`~zarrdask.EngineOptions`): how the engine runs the read."""
        indexer = Indexer(selection, self.shape, self.unit_grid, allow_arrays=False)
        result = engine.read(self._reads, self.layout, indexer, out, options, read_missing_chunks=self.read_missing_chunks)
        return result[()] if result.ndim == 0 and out is None else result

    def get_orthogonal_selection(
        self, selection: Any, *, out: np.ndarray | None = None, options: EngineOptions | None = None
    ) -> Any:
        """Read the outer product of per-dimension selections, as zarr-python's
        ``oindex``; ``options`` as for :meth:`get_basic_selection`."""
        indexer = Indexer(selection, self.shape, self.unit_grid, allow_arrays=True)
        result = engine.read(self._reads, self.layout, indexer, out, options, read_missing_chunks=self.read_missing_chunks)
        return result[()] if result.ndim == 0 and out is None else result

    def get_coordinate_selection(
        self, selection: Any, *, out: np.ndarray | None = None, options: EngineOptions | None = None
    ) -> np.ndarray:
        """Read individual points, given one integer array per dimension.

        Parameters
        ----------
        selection : tuple
            One integer array (or list, or integer) per dimension. The arrays are
            broadcast against each other; point ``k`` is ``(sel[0][k], sel[1][k], ...)``.
            Negative indices count from the end; indices may repeat and come in
            any order.
        out : numpy.ndarray, optional
            Read into this array (of the result's shape) instead of a new one.
        options : EngineOptions, optional
            How the engine runs the read (threads, one chunk per store call).

        Returns
        -------
        numpy.ndarray
            The points, in the broadcast shape of the arrays (``(1,)`` when every
            index is an integer, as in zarr-python). Points in missing chunks read
            as the fill value.

        Raises
        ------
        zarrdask.errors.SelectionError
            Not one integer array per dimension, or arrays that do not broadcast.
        zarrdask.errors.BoundsCheckError
            An index outside the array.

        Notes
        -----
        The points are grouped by chunk; every chunk touched is fetched in one
        batched store call and decoded once (for a sharded array, only the inner
        chunks holding points are read).

        Examples
        --------
        >>> a = zarrdask.create_array(zarrdask.storage.MemoryStore(), shape=(10, 10), dtype="i4", chunks=(3, 3))
        >>> a[...] = np.arange(100).reshape(10, 10)
        >>> a.get_coordinate_selection(([1, 4, -1], [1, 4, 0]))
        array([11, 44, 90], dtype=int32)
        """
        indexer = CoordinateIndexer(selection, self.shape, self.unit_grid)
        return engine.read(self._reads, self.layout, indexer, out, options, read_missing_chunks=self.read_missing_chunks)

    def get_mask_selection(
        self, mask: Any, *, out: np.ndarray | None = None, options: EngineOptions | None = None
    ) -> np.ndarray:
        """Read the points where a boolean mask of the array's shape is true.

        Parameters
        ----------
        mask : numpy.ndarray of bool
            Of the array's shape.
        out : numpy.ndarray, optional
            Read into this 1-d array instead of a new one.
        options : EngineOptions, optional
            How the engine runs the read.

        Returns
        -------
        numpy.ndarray
            1-d, the selected points in C order (as ``data[mask]`` in numpy).

        Raises
        ------
        zarrdask.errors.SelectionError
            ``mask`` is not a boolean array of the array's shape.

        Examples
        --------
        >>> a = zarrdask.create_array(zarrdask.storage.MemoryStore(), shape=(4, 4), dtype="i4", chunks=(2, 2))
        >>> a[...] = np.arange(16).reshape(4, 4)
        >>> a.get_mask_selection(np.eye(4, dtype=bool))
        array([ 0,  5, 10, 15], dtype=int32)
        """
        indexer = CoordinateIndexer.from_mask(mask, self.shape, self.unit_grid)
        return engine.read(self._reads, self.layout, indexer, out, options, read_missing_chunks=self.read_missing_chunks)

    def _get_points(self, selection: Any) -> np.ndarray:
        selection = _materialise(selection)
        return getattr(self, f"get_{_points_kind(selection)}_selection")(selection)

    def __getitem__(self, selection: Any) -> Any:
        """``a[...]``: basic selection; one integer array or mask among integers and
        slices is orthogonal; several integer arrays (one per dimension) are points
        and a boolean array of the array's shape is a mask, as in numpy and
        zarr-python (see :func:`zarrdask.indexing.selection_kind`)."""
        return getattr(self, f"get_{selection_kind(selection, self.ndim)}_selection")(selection)

    @property
    def oindex(self) -> _Accessor:
        """Orthogonal selection: ``a.oindex[[0, 2], mask]`` reads and writes each
        dimension's selection independently (like ``np.ix_``)."""
        return _Accessor(self.get_orthogonal_selection, self.set_orthogonal_selection)

    @property
    def vindex(self) -> _Accessor:
        """Vectorised (point) selection, read and write, as zarr-python's ``vindex``.

        ``a.vindex[rows, cols]`` with one integer array per dimension reads the
        points ``(rows[k], cols[k])`` (the arrays broadcast against each other;
        :meth:`get_coordinate_selection`); ``a.vindex[mask]`` with a boolean array
        of the array's shape reads the points where it is true, in C order
        (:meth:`get_mask_selection`). ``a.vindex[...] = value`` writes them
        (:meth:`set_coordinate_selection`, :meth:`set_mask_selection`).

        Examples
        --------
        >>> a = zarrdask.create_array(zarrdask.storage.MemoryStore(), shape=(10, 10), dtype="i4", chunks=(3, 3))
        >>> a.vindex[[1, 4], [1, 4]] = [7, 8]
        >>> a.vindex[[[1], [4]], [1, 4]]
        array([[7, 0],
               [0, 8]], dtype=int32)
        """
        return _Accessor(self._get_points, self._set_points)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self[...]
        a = np.asarray(a)
        return a if dtype is None else a.astype(dtype)

    def to_arrow(self, selection: Any = Ellipsis, *, validate: bool = True) -> Any:
        """Read strings or bytes as a ``pyarrow.ChunkedArray`` (elements in C order).

        With the ``zarrdask.vlen-offsets`` serializer (draft ZEP 7 layout; also
        inside shards) nothing is copied: each piece of the result views the
        decoded bytes of one stored chunk (:func:`zarrdask.codecs.vlen_offsets.chunk_to_arrow`),
        and its type is ``pa.string()`` / ``pa.binary()`` (``large_`` for int64
        offsets). Other serializers (``vlen-utf8``, ``vlen-bytes``, v2 arrays) are
        decoded and converted, one copy.

        Parameters
        ----------
        selection
            Slices with step 1. Zero-copy reads select along the first dimension
            only (whole trailing dimensions) and need chunks (and inner chunks)
            spanning the trailing dimensions, so that chunk after chunk is C order;
            other selections are decoded and converted.
        validate
            Check offsets and UTF-8 of every chunk (no copy; see ``chunk_to_arrow``).

        Returns
        -------
        pyarrow.ChunkedArray
            The flattened selection. Missing chunks read as the fill value
            (with ``read_missing_chunks=False``: ``ChunkNotFoundError``).

        Raises
        ------
        TypeError
            The array's data type is not ``string`` or ``bytes``.
        zarrdask.errors.CorruptChunkError
            A chunk's offsets or UTF-8 are invalid (the message names its key).
        """
        from .arrow import array_to_arrow

        return array_to_arrow(self, selection, validate)

    # -- writing -------------------------------------------------------------
    def set_basic_selection(self, selection: Any, value: Any, *, options: EngineOptions | None = None) -> None:
        """Write integers, slices and ``...`` (as numpy basic indexing reads them);
        ``options`` (:class:`~zarrdask.EngineOptions`): how the engine runs the write.

        Notes
        -----
        Chunks the selection covers whole are encoded without being read; the
        others are read, updated and encoded, per batch, before the first store
        call, so a chunk that cannot be decoded changes nothing.

        Concurrent writers: safe from threads of one process. From several
        processes, writes that cover only part of a chunk (of a shard, when
        sharded) are safe on a ``LocalStore`` only; elsewhere give every chunk
        or shard to one process, as :func:`zarrdask.dask.to_zarr` does. See
        :ref:`concurrent-writes`.
        """
        self._check_writable()
        self._write(Indexer(selection, self.shape, self.unit_grid, allow_arrays=False), value, options)

    def set_orthogonal_selection(self, selection: Any, value: Any, *, options: EngineOptions | None = None) -> None:
        """Write the outer product of per-dimension selections (integer arrays,
        boolean arrays, slices, integers), as zarr-python's ``oindex``;
        ``options`` as for :meth:`set_basic_selection`.

        Notes
        -----
        As :meth:`set_basic_selection`.

        Concurrent writers: safe from threads of one process. From several
        processes, writes that cover only part of a chunk (of a shard, when
        sharded) are safe on a ``LocalStore`` only; elsewhere give every chunk
        or shard to one process, as :func:`zarrdask.dask.to_zarr` does. See
        :ref:`concurrent-writes`.
        """
        self._check_writable()
        self._write(Indexer(selection, self.shape, self.unit_grid, allow_arrays=True), value, options)

    def set_coordinate_selection(self, selection: Any, value: Any) -> None:
        """Write individual points, given one integer array per dimension.

        Parameters
        ----------
        selection : tuple
            As for :meth:`get_coordinate_selection`.
        value
            A scalar, an array that broadcasts to the selection's shape, or (as
            zarr-python takes it) a flat array with one value per point. When a
            point is named more than once, the last value wins, as in numpy.

        Raises
        ------
        zarrdask.errors.SelectionError
            A bad selection, or a value that does not fit it or the dtype (then
            nothing is written).
        zarrdask.errors.BoundsCheckError
            An index outside the array.

        Notes
        -----
        Every chunk touched is read (unless the points cover it completely),
        updated and encoded before the first store call, so a failure changes
        nothing.

        Concurrent writers: safe from threads of one process. From several
        processes, writes that cover only part of a chunk (of a shard, when
        sharded) are safe on a ``LocalStore`` only; elsewhere give every chunk
        or shard to one process, as :func:`zarrdask.dask.to_zarr` does. See
        :ref:`concurrent-writes`.
        """
        self._check_writable()
        indexer = CoordinateIndexer(selection, self.shape, self.unit_grid)
        self._write(indexer, _points_value(value, indexer.out_shape, self.dtype))

    def set_mask_selection(self, mask: Any, value: Any) -> None:
        """Write the points where a boolean mask of the array's shape is true.

        Parameters
        ----------
        mask : numpy.ndarray of bool
            Of the array's shape.
        value
            A scalar, or a 1-d array with one value per selected point, in C order.

        Raises
        ------
        zarrdask.errors.SelectionError
            ``mask`` is not a boolean array of the array's shape, or the value does
            not fit (then nothing is written).

        Notes
        -----
        Concurrent writers: safe from threads of one process. From several
        processes, writes that cover only part of a chunk (of a shard, when
        sharded) are safe on a ``LocalStore`` only; elsewhere give every chunk
        or shard to one process, as :func:`zarrdask.dask.to_zarr` does. See
        :ref:`concurrent-writes`.
        """
        self._check_writable()
        self._write(CoordinateIndexer.from_mask(mask, self.shape, self.unit_grid), value)

    def _set_points(self, selection: Any, value: Any) -> None:
        selection = _materialise(selection)
        getattr(self, f"set_{_points_kind(selection)}_selection")(selection, value)

    def _write(self, indexer: Any, value: Any, options: EngineOptions | None = None) -> None:
        engine.write(self._store, self.layout, indexer, value, write_empty_chunks=self.write_empty_chunks,
                     options=options)

    def __setitem__(self, selection: Any, value: Any) -> None:
        """``a[...] = value``: the selection is read as :meth:`__getitem__` reads it.

        Notes
        -----
        Concurrent writers: safe from threads of one process. From several
        processes, writes that cover only part of a chunk (of a shard, when
        sharded) are safe on a ``LocalStore`` only; elsewhere give every chunk
        or shard to one process, as :func:`zarrdask.dask.to_zarr` does. See
        :ref:`concurrent-writes`.
        """
        getattr(self, f"set_{selection_kind(selection, self.ndim)}_selection")(selection, value)

    def resize(self, *shape: Any) -> None:
        """Change the shape.

        Chunks wholly outside the new shape are deleted; the cut-off part of
        chunks straddling a shrunk edge is reset to the fill value, so growing
        again shows the fill value there, not old data. The cost is
        proportional to the chunks stored, not to the chunk grid (see
        :mod:`zarrdask.core.resize`). Every straddling chunk is re-encoded
        before anything is written, so a chunk that cannot be decoded fails
        the resize with nothing changed.

        Notes
        -----
        Not ordered against concurrent writers of this array (in this process
        or others): resize while nobody else writes. A store failure after the
        metadata is written can leave cut-off data outside the new shape; see
        :doc:`/guarantees` ("Resizing").
        """
        from .resize import plan_cut, reset_cut_parts

        self._check_writable()
        new_shape = tuple(int(s) for s in (shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape))
        if len(new_shape) != self.ndim:
            raise ValueError(
                f"array {self.name!r}: new shape {new_shape} has {len(new_shape)} dimensions, "
                f"the array has {self.ndim}"
            )
        if any(s < 0 for s in new_shape):
            raise ValueError(f"array {self.name!r}: new shape {new_shape} has a negative length")
        if not self.layout.regular:  # edges that no longer cover an axis get one more edge
            metadata = replace(self._metadata, shape=new_shape,
                               chunk_shape=grow_edges(self.unit_grid, self.shape, new_shape,
                                                      self.chunks if self._sharding is not None else None))
        else:
            metadata = replace(self._metadata, shape=new_shape)
        stale, straddling = plan_cut(self._store, self.layout, self.shape, new_shape, self.name)
        rewritten = reset_cut_parts(self._store, self.layout, straddling, new_shape,
                                    write_empty_chunks=self.write_empty_chunks)
        self._replace_metadata(metadata)
        engine.store_encoded(self._store, rewritten)
        if stale:
            self._store.delete_many(stale)
            invalidate(self._store, stale)

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Append ``data`` along ``axis``; returns the new shape.

        Notes
        -----
        A :meth:`resize` followed by a write of the new region: not ordered
        against concurrent writers of this array; two processes appending to
        one array at once lose data. See :ref:`concurrent-writes`.
        """
        self._check_writable()
        data = np.asarray(data)
        if data.ndim != self.ndim:
            raise ValueError(f"array {self.name!r}: cannot append {data.ndim}-d data to a {self.ndim}-d array")
        axis = axis + self.ndim if axis < 0 else axis
        for d, (a, b) in enumerate(zip(self.shape, data.shape)):
            if d != axis and a != b:
                raise ValueError(
                    f"array {self.name!r}: data of shape {data.shape} does not match the array's "
                    f"shape {self.shape} outside axis {axis}"
                )
        old = self.shape[axis]
        new_shape = tuple(s + data.shape[axis] if d == axis else s for d, s in enumerate(self.shape))
        self.resize(new_shape)
        region = tuple(slice(old, None) if d == axis else slice(None) for d in range(self.ndim))
        self[region] = data
        return new_shape

    # -- dunder ------------------------------------------------------------------
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<zarrdask.Array {self.name!r} v{self.zarr_format} shape={self.shape} dtype={display_name(self.dtype, self.zarr_format)}>"

    def __dask_tokenize__(self) -> Any:
        import json

        # where the data lives (not how it was opened: read-only or not reads the same)
        meta = json.dumps(self._metadata.to_json(), sort_keys=True, default=str)
        return ("zarrdask.Array", self._store.location, self._path, meta)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "store": self._store,
            "path": self._path,
            "metadata": self._metadata,
            "attributes": self._attrs.asdict(),
            "read_only": self._read_only,
            "codecs": self._codecs,
            **self._options,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["store"],
            state["path"],
            state["metadata"],
            state["attributes"],
            read_only=state["read_only"],
            codecs=state.get("codecs"),
            **{name: state.get(name) for name in RUN_TIME_OPTIONS},
        )
