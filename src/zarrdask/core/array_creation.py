"""Creating arrays: :func:`create_array`'s arguments checked and turned into
the array's metadata document, which is then stored.

The arguments are checked in full before anything is written: the chunk
layout (chunks, shards, a regular or rectilinear grid) against the shape,
the codecs by building them (:class:`~zarrdask.codecs.chain.CodecChain`,
bound to the chunk they will encode), the document by parsing it as
:mod:`zarrdask.metadata` reads stored ones. :func:`check_create_array` runs
all of that against memory only.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numcodecs.abc import Codec as NumcodecsCodec

from .. import config
from ..chunking.rectilinear import is_regular, normalize_chunks
from ..codecs.abc import BytesBytesCodec, ChunkSpec, Codec
from ..codecs.bytes_codec import BytesCodec
from ..codecs.chain import CodecChain
from ..codecs.numcodecs_v2 import is_object_codec, numcodecs_from_config
from ..codecs.registry import codec_from_json
from ..codecs.sharding import ShardingCodec
from ..codecs.vlen import VlenBytesCodec, VlenUtf8Codec
from ..codecs.zstd_codec import ZstdCodec
from ..errors import MetadataError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..metadata.dtypes import (
    data_type_to_v3,
    default_fill_value,
    dtype_to_v2,
    encode_fill_value_v2,
    encode_fill_value_v3,
    normalize_dtype,
)
from ..metadata.v3 import largest_chunk, rectilinear_json
from ..storage import MemoryStore
from .array import Array
from .location import resolve_store
from .nodes import key_of, node_name, write_node

__all__ = ["check_create_array", "create_array", "guess_chunks", "new_node_format"]


def guess_chunks(shape: tuple[int, ...], itemsize: int, target: int = 1 << 20) -> tuple[int, ...]:
    """A chunk shape of about ``target`` bytes: halve the longest dimension until it fits."""
    chunks = [max(s, 1) for s in shape]
    while math.prod(chunks) * itemsize > target and max(chunks) > 1:
        i = int(np.argmax(chunks))
        chunks[i] = -(-chunks[i] // 2)
    return tuple(chunks)


def _normalize_shape(shape: Any, name: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{name} must be an integer or a sequence of integers, found {shape!r}") from None


def _grid_arg(value: Any, name: str) -> tuple:
    """``chunks`` / ``shards``: a shape, or per-axis chunk sizes (an int or a
    sequence of edge lengths per axis, as a dask ``chunks`` tuple) for a rectilinear grid."""
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, a sequence of integers or a sequence of per-axis "
                        f"edge lengths, found {value!r}") from None
    if not any(isinstance(v, (list, tuple, np.ndarray)) for v in items):
        return _normalize_shape(items, name)
    try:
        return normalize_chunks(items)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected an integer or a sequence of edge lengths per axis, "
                        f"found {value!r}") from None


def _rectilinear_arg(chunks: tuple, shape: tuple[int, ...], name: str, path: str) -> None:
    """Per-axis edge lengths must cover the shape (overflow is allowed, as the extension allows it)."""
    for d, (c, n) in enumerate(zip(chunks, shape)):
        if not isinstance(c, int) and sum(c) < n:
            raise MetadataError(
                f"{node_name(path)}: {name}[{d}]: edge lengths {list(c)} sum to {sum(c)}, expected at least "
                f"the dimension's length {n}")


# -- codec arguments ---------------------------------------------------------------
def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _v2_codec_config(c: Any, what: str) -> dict[str, Any]:
    """A v2 filter's or compressor's numcodecs configuration: from a numcodecs
    codec, an ``{"id": ...}`` dict, or a v3 compressor (a zarrdask or zarr-python
    codec object, or its ``{"name": ...}`` document) that numcodecs writes the
    same bytes with (``blosc``, ``gzip``, ``zstd``)."""
    if isinstance(c, NumcodecsCodec):
        return c.get_config()
    if isinstance(c, dict) and isinstance(c.get("id"), str):
        return dict(c)
    v3 = _v3_codec(c, what)
    config = v3.numcodecs_config() if isinstance(v3, BytesBytesCodec) else None
    if config is None:
        raise TypeError(
            f"{what}: expected a numcodecs codec or an {{'id': ...}} dict, found {c!r}"
            + (" (a v3 codec with no numcodecs equivalent)" if v3 is not None else "")
        )
    return config


def _v3_codec(c: Any, what: str) -> Any:
    """``c`` as a zarrdask v3 codec, or ``None`` when it is not one."""
    is_document = isinstance(c, dict) and "name" in c
    if not (is_document or isinstance(c, Codec) or callable(getattr(c, "to_dict", None))):
        return None
    try:
        return codec_from_json(c, key=what)
    except (TypeError, ValueError):
        return None


def _v2_object_codec(zarr_format: int, dtype: Any, filters: Any) -> bool:
    """Whether a new v2 array of ``dtype=object`` gets its object codec as the
    first of ``filters`` (one that is not ``vlen-utf8``, whose elements are strings)."""
    if zarr_format != 2 or dtype is not object and not (isinstance(dtype, np.dtype) and dtype == object):
        return False
    fs = _as_list(filters)
    if not fs:
        return False
    first = numcodecs_from_config(_v2_codec_config(fs[0], "filters"))
    return first.codec_id != "vlen-utf8" and is_object_codec(first)


def _v3_codecs(
    dtype: np.dtype, native: np.dtype, chunks: tuple[int, ...], shards: tuple[int, ...] | None,
    fill_value: Any, filters: Any, serializer: Any, compressors: Any, key: str,
) -> list[Codec]:
    """The ``codecs`` of a new v3 array, with dtype-dependent settings filled in
    (as objects, which keep what their JSON does not hold: a ``conditional``
    codec's decision). With ``shards``, they become the inner codecs of a
    ``sharding_indexed`` codec."""
    if isinstance(serializer, str) and serializer == "auto":
        if dtype.kind == "T":  # as zarr-python 3: string → vlen-utf8, bytes → vlen-bytes
            serializer = VlenUtf8Codec()
        elif dtype.kind == "O":
            serializer = VlenBytesCodec()
        else:
            serializer = BytesCodec(endian="big" if dtype.byteorder == ">" else "little")
    if isinstance(compressors, str) and compressors == "auto":
        compressors = [ZstdCodec(level=0, checksum=False)]
    # the argument a codec is given in says its kind (decides numcodecs.<id> codecs)
    codecs = [
        *(codec_from_json(c, key=key, kind="array_array") for c in _as_list(filters)),
        codec_from_json(serializer, key=key, kind="array_bytes"),
        *(codec_from_json(c, key=key, kind="bytes_bytes") for c in _as_list(compressors)),
    ]
    if shards is not None:
        codecs = [ShardingCodec(chunks, CodecChain.from_codecs(codecs, key=key))]
        chunks = shards
    spec = ChunkSpec(largest_chunk(chunks), native, fill_value)
    chain = CodecChain.from_codecs(codecs, key=key, spec=spec)
    chain.validate(spec)
    return list(chain.complete(spec).codecs)


def _array_document(
    *,
    path: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    chunks: tuple[int, ...],
    shards: tuple[int, ...] | None,
    filters: Any,
    compressors: Any,
    serializer: Any,
    fill_value: Any,
    order: str,
    zarr_format: int,
    attributes: dict[str, Any],
    chunk_key_encoding: Any,
    dimension_separator: str | None,
    dimension_names: Sequence[str | None] | None,
    chunk_grid: str = "regular",
) -> tuple[ArrayMetadataV2 | ArrayMetadataV3, list[Codec] | None]:
    """The metadata document of a new array, checked (see :func:`create_array`),
    and the v3 codec objects it was made from (``None`` for v2)."""
    if zarr_format == 2:
        key = key_of(path, ".zarray")
        if serializer != "auto" and serializer is not None:
            raise TypeError(f"{key}: Zarr v2 arrays have no serializer; pass filters and compressors")
        if shards is not None:
            raise ValueError(f"{key}: Zarr v2 has no sharding; use zarr_format=3 for shards=")
        comps = _v2_compressors(compressors, key)
        fs = _v2_filters(filters, dtype, fill_value, key)
        if dimension_separator is None and isinstance(chunk_key_encoding, dict):
            dimension_separator = chunk_key_encoding.get("separator")
        doc = {
            "zarr_format": 2,
            "shape": list(shape),
            "chunks": list(chunks),
            "dtype": dtype_to_v2(dtype),
            "compressor": _v2_codec_config(comps[0], "compressors") if comps else None,
            # None stays null, as zarr-python writes it (unwritten elements then read as zero)
            "fill_value": None if fill_value is None else encode_fill_value_v2(fill_value, dtype),
            "filters": fs or None,
            "order": order,
            "dimension_separator": dimension_separator or ".",
        }
        return ArrayMetadataV2.from_json(doc, key=key), None
    if zarr_format != 3:
        raise ValueError(f"zarr_format must be 2 or 3, found {zarr_format!r}")
    key = key_of(path, "zarr.json")
    if dimension_separator is not None and chunk_key_encoding is None:
        chunk_key_encoding = {"name": "default", "separator": dimension_separator}
    cke = _chunk_key_encoding_json(chunk_key_encoding)
    native = dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype
    fill = default_fill_value(native) if fill_value is None else fill_value
    codecs = _v3_codecs(dtype, native, chunks, shards, fill, filters, serializer, compressors, key)
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        # object = Zarr "bytes", under its registered name (zarr-python 3.1 writes the older
        # "variable_length_bytes" and reads both)
        "data_type": "bytes" if native.kind == "O" else data_type_to_v3(native),
        "chunk_grid": _grid_json(shards or chunks, chunk_grid),
        "chunk_key_encoding": cke,
        "fill_value": encode_fill_value_v3(fill, native),
        "codecs": [c.to_json() for c in codecs],
        "attributes": attributes,
    }
    if dimension_names is not None:
        doc["dimension_names"] = list(dimension_names)
    return ArrayMetadataV3.from_json(doc, key=key), codecs


def _v2_compressors(compressors: Any, key: str) -> list[Any]:
    """A v2 array's ``compressors`` argument as a list of at most one (``"auto"``: zstd at its default level)."""
    if compressors == "auto":
        compressors = [{"id": "zstd", "level": 0}]
    comps = _as_list(compressors)
    if len(comps) > 1:
        raise ValueError(f"{key}: a Zarr v2 array takes at most one compressor, found {len(comps)}")
    return comps


def _v2_filters(filters: Any, dtype: np.dtype, fill_value: Any, key: str) -> list[dict[str, Any]]:
    """A v2 array's filters as numcodecs configurations: strings and objects get
    the object codec ``vlen-utf8`` / ``vlen-bytes`` first unless a filter is one,
    and a fill value of that codec's element type."""
    fs = [_v2_codec_config(f, "filters") for f in _as_list(filters)]
    if dtype.kind in "TO" and not (fs and is_object_codec(numcodecs_from_config(fs[0], key=key))):
        # "|O" needs an object codec first: vlen-utf8 / vlen-bytes, as zarr-python writes
        fs.insert(0, {"id": "vlen-utf8" if dtype.kind == "T" else "vlen-bytes"})
    if dtype.kind in "TO" and fs[0]["id"] in ("vlen-utf8", "vlen-bytes") and fill_value is not None:
        # (None stays null, as for other types: it reads as "" / b"")
        want = str if fs[0]["id"] == "vlen-utf8" else (bytes, bytearray)
        if not isinstance(fill_value, want):
            raise MetadataError(
                f"{key}: field 'fill_value': found {fill_value!r}, expected "
                f"{'a str' if want is str else 'bytes'} for an array with the filter {fs[0]['id']!r}"
            )
    return fs


def _grid_json(chunks: tuple, name: str) -> dict[str, Any]:
    if name == "rectilinear":
        return rectilinear_json(chunks)
    return {"name": "regular", "configuration": {"chunk_shape": list(chunks)}}


def _chunk_key_encoding_json(cke: Any) -> dict[str, Any]:
    if cke is None:
        return {"name": "default", "configuration": {"separator": "/"}}
    if isinstance(cke, str):
        cke = {"name": cke}
    if isinstance(cke, dict):
        name = cke.get("name")
        sep = cke.get("separator", cke.get("configuration", {}).get("separator"))
        if sep is None:
            sep = "/" if name == "default" else "."
        return {"name": name, "configuration": {"separator": sep}}
    if hasattr(cke, "name") and hasattr(cke, "separator"):
        return {"name": cke.name, "configuration": {"separator": cke.separator}}
    raise TypeError(f"chunk_key_encoding: expected a name, a dict or a ChunkKeyEncoding, found {cke!r}")


def new_node_format(zarr_format: int | None) -> int:
    """The format of a new node: ``zarr_format``, or the ``default_zarr_format``
    setting (:mod:`zarrdask.config`) when it is ``None``."""
    return zarr_format or config.get("default_zarr_format")


# -- arrays ----------------------------------------------------------------------------
def create_array(
    store: Any,
    *,
    name: str | None = None,
    path: str = "",
    shape: Any,
    dtype: Any,
    chunks: Any = None,
    shards: Any = None,
    filters: Any = None,
    compressors: Any = "auto",
    serializer: Any = "auto",
    fill_value: Any = None,
    order: str = "C",
    zarr_format: int | None = None,
    attributes: dict[str, Any] | None = None,
    chunk_key_encoding: Any = None,
    dimension_separator: str | None = None,
    dimension_names: Sequence[str | None] | None = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
    write_empty_chunks: bool | None = None,
    cache: bool | str | None = None,
    data: Any = None,
    chunk_grid: str | None = None,
) -> Array:
    """Create an array.

    Parameters
    ----------
    store
        A :class:`~zarrdask.storage.Store`, a path (``.zip`` opens a ZipStore), an
        fsspec URL, a ``pathlib.Path``, a zarr-python store, an fsspec mapper, a
        mapping, or a zarr-python ``Group`` to create the array in.
    name, path
        Where in the store (``name`` is zarr-python's spelling; give one of them);
        relative to the group when ``store`` is a zarr-python ``Group``.
    shape, dtype
        The array's shape and numpy data type.
    chunks
        The chunk shape (the inner chunk shape when sharded); ``None`` or
        ``"auto"`` chooses chunks of about 1 MiB. v3, unsharded: per-axis chunk
        sizes (an integer, or a sequence of edge lengths, per axis — a dask
        ``chunks`` tuple such as ``((31, 28, 31), 180)``) make a rectilinear chunk
        grid (see ``chunk_grid``).
    shards
        v3 only: the shard shape, a multiple of ``chunks``; ``"auto"``: two
        chunks per shard along every axis with more than 8 chunks (as
        zarr-python 3.4 chooses); or per-axis shard
        sizes (a rectilinear grid of shards, every edge a multiple of ``chunks``). Each shard is one
        stored object holding its chunks (the ``sharding_indexed`` codec with the
        given filters, serializer and compressors inside and a ``bytes`` +
        ``crc32c`` index at the end). For full control pass a sharding codec as
        ``serializer`` instead; ``chunks`` is then the shard shape.
    filters
        v2: numcodecs filters (or their ``{"id": ...}`` dicts); with ``dtype=object``
        a first filter that is an object codec (``json2``, ``pickle``, ``vlen-array``,
        ...) keeps the elements plain objects. v3: array→array codecs.
    compressors
        v2: one numcodecs compressor; v3: bytes→bytes codecs. ``"auto"`` is zstd
        (level 0, i.e. zstd's default level) in both formats, as in zarr-python.
        ``None`` stores chunks uncompressed.
    serializer
        v3 only: the array→bytes codec; ``"auto"`` is ``bytes`` (little-endian).

        In v3, ``filters``, ``serializer`` and ``compressors`` take zarrdask codecs,
        the spec's JSON, zarr-python codec objects, numcodecs codec objects or
        ``{"name": "numcodecs.<id>", ...}`` for any codec numcodecs can make; the
        argument a numcodecs codec is given in is its kind (``serializer=`` for
        ``zfpy`` or ``pcodec``).
    fill_value
        The value of unwritten elements; ``None`` means the type's zero (in v2
        it is stored as ``null``, as zarr-python does).
    order
        v2 only: chunk memory layout ``"C"`` or ``"F"``.
    zarr_format
        2 or 3; ``None`` (default): the ``default_zarr_format`` setting
        (:mod:`zarrdask.config`, 3 unless changed).
    attributes
        User attributes.
    chunk_key_encoding, dimension_separator
        v3: ``{"name": "default"|"v2", "separator": "/"|"."}``; v2: ``"."`` or ``"/"``.
    dimension_names
        v3: one name (or ``None``) per dimension.
    overwrite
        Replace whatever exists at the path; otherwise an existing node is an error.
    storage_options
        Passed to fsspec for URLs.
    write_empty_chunks
        Store chunks equal to the fill value (default: don't, and delete stale ones).
    cache
        Read through the process's chunk cache: ``True``, ``"revalidate"`` or
        ``False``; ``None``: the setting ``cache`` (:attr:`Array.cache`).
    data
        Values to write after creating the array.
    chunk_grid
        v3 only: ``"regular"`` or ``"rectilinear"`` (zarr-extensions
        ``chunk-grids/rectilinear``; readers older than zarr-python 3.4 cannot open
        it, see :doc:`/rectilinear`). ``None`` (default): rectilinear exactly when
        ``chunks`` (or ``shards``) list edge lengths for some axis. Edge lengths
        must add up to at least the axis length; more is allowed (overflow chunks).

    Notes
    -----
    Concurrent writers: creating an array writes its metadata (and with
    ``data``, its chunks) with no lock; two processes creating the same array
    race, last writer wins. Writes into an existing array: see
    :meth:`Array.set_basic_selection <zarrdask.Array.set_basic_selection>` and
    :ref:`concurrent-writes`.
    """
    if name is not None and path:
        raise TypeError("give the array's location as name= or path=, not both")
    store, path = resolve_store(store, name if name is not None else path, "a", storage_options)
    zarr_format = new_node_format(zarr_format)
    if data is not None:
        data = np.asarray(data)
        if shape is None:
            shape = data.shape
        if dtype is None:
            dtype = data.dtype
    shape = _normalize_shape(shape)
    dtype = _array_dtype(dtype, data, zarr_format, filters)
    chunks, shards, chunk_grid = _chunk_layout(chunks, shards, chunk_grid, shape, dtype, zarr_format, path)
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', found {order!r}")
    attributes = dict(attributes or {})
    metadata, codecs = _array_document(
        path=path,
        shape=shape,
        dtype=dtype,
        chunks=chunks,
        shards=shards,
        filters=filters,
        compressors=compressors,
        serializer=serializer,
        fill_value=fill_value,
        order=order,
        zarr_format=zarr_format,
        attributes=attributes,
        chunk_key_encoding=chunk_key_encoding,
        dimension_separator=dimension_separator,
        dimension_names=dimension_names,
        chunk_grid=chunk_grid,
    )
    # building the Array builds and checks the codecs: a bad configuration fails before anything is written
    # codec objects given keep what their JSON does not hold (a conditional codec's decision)
    given = [*_as_list(filters), *_as_list(serializer), *_as_list(compressors)]
    live = codecs if any(isinstance(c, Codec) for c in given) else None
    array = Array(store, path, metadata, attributes, write_empty_chunks=write_empty_chunks, codecs=live, cache=cache)
    write_node(store, path, zarr_format, metadata, attributes, overwrite=overwrite, kind="an array")
    if data is not None:
        array[...] = data
    return array


def _array_dtype(dtype: Any, data: Any, zarr_format: int, filters: Any) -> np.dtype:
    """The data type of a new array: ``object`` for a v2 array whose first filter
    is an object codec (its elements are objects of any kind), else ``dtype``
    normalised (``str`` → StringDType, the Zarr string; ``bytes`` → object, the Zarr bytes)."""
    if _v2_object_codec(zarr_format, dtype, filters):
        return np.dtype(object)
    return normalize_dtype(dtype, data)


def _chunk_layout(
    chunks: Any, shards: Any, chunk_grid: str | None, shape: tuple[int, ...], dtype: np.dtype, zarr_format: int,
    path: str,
) -> tuple[tuple, tuple | None, str]:
    """``(chunks, shards, chunk grid name)`` of a new array, checked against
    its shape and each other (see :func:`create_array`)."""
    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
        chunks = guess_chunks(shape, dtype.itemsize)
    chunks = _grid_arg(chunks, "chunks")
    if chunk_grid not in (None, "regular", "rectilinear"):
        raise ValueError(f"chunk_grid must be None, 'regular' or 'rectilinear', found {chunk_grid!r}")
    if isinstance(shards, str) and shards == "auto":
        shards = auto_shards(chunks, shape)
    if shards is not None:
        shards = _grid_arg(shards, "shards")
        _check_shards(shards, chunks, shape, path)
    if len(chunks) != len(shape):
        raise MetadataError(
            f"{node_name(path)}: chunks {chunks} have {len(chunks)} dimensions, shape {shape} has {len(shape)}"
        )
    grid_chunks = shards if shards is not None else chunks
    if chunk_grid is None:
        chunk_grid = "regular" if is_regular(grid_chunks) else "rectilinear"
    if chunk_grid == "rectilinear":
        if zarr_format != 3:
            raise ValueError(f"{node_name(path)}: the rectilinear chunk grid is a Zarr v3 extension; "
                             "use zarr_format=3 for irregular chunks")
        _rectilinear_arg(grid_chunks, shape, "shards" if shards is not None else "chunks", path)
    elif not is_regular(grid_chunks):
        raise ValueError(f"{node_name(path)}: irregular chunks {grid_chunks} need chunk_grid='rectilinear'")
    return chunks, shards, chunk_grid


def auto_shards(chunks: tuple, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shards="auto"``: two chunks per shard along every axis that has more
    than 8 chunks, one along the others (zarr-python 3.4's rule without a
    target shard size)."""
    if not is_regular(chunks):
        raise ValueError(f"shards='auto' needs a regular chunk shape, found chunks {chunks}")
    return tuple(c * 2 if c and n // c > 8 else c for c, n in zip(chunks, shape))


def _check_shards(shards: tuple, chunks: tuple, shape: tuple[int, ...], path: str) -> None:
    """Shards are made of whole regular inner chunks (every edge length, for irregular shards)."""
    if not is_regular(chunks):
        raise MetadataError(
            f"{node_name(path)}: chunks {chunks} are irregular, but inner chunks of shards are one regular "
            "grid (the sharding_indexed codec has one 'chunk_shape'); give irregular shards= instead")
    if len(shards) != len(shape) or any(
            (s % c if isinstance(s, int) else any(e % c for e in s)) for s, c in zip(shards, chunks)):
        raise MetadataError(
            f"{node_name(path)}: shards {shards} must have the array's {len(shape)} dimensions "
            f"and be a multiple of chunks {chunks} (every shard edge length, for irregular shards)"
        )


def check_create_array(what: str, **kwargs: Any) -> None:
    """Create the array ``kwargs`` describe in memory only, so that a bad argument
    fails now, before anything is written; the error then starts with ``what``."""
    try:
        create_array(MemoryStore(), **kwargs)
    except (TypeError, ValueError) as e:
        try:
            again = type(e)(f"{what}: {e}")
        except TypeError:  # an exception type that wants other arguments
            raise e from None
        raise again from e
