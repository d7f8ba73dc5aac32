"""Checking stored data: decode every stored chunk and verify every checksum.

:func:`verify_array` fetches every stored chunk (or shard) of an array and
decodes it with the array's codecs, so every check the codecs make runs:
``crc32c`` and the numcodecs checksum codecs compare their checksums, zstd frames
with a content checksum check it, decompressors reject malformed streams, and
the decoded size and shape must match the metadata.

Shards are checked piece by piece rather than as one value: the index is
decoded (checking its ``crc32c``), every index entry is checked against the
shard's size on its own, and every stored inner chunk is decoded on its own, so
one corrupt inner chunk is reported with its coordinates inside the shard and
does not hide the others. Nested shards are checked the same way, one level
down.

Strict verification (``read_missing_chunks=False``, the array option of
strict reads, docs/guarantees.md "Strict reads"; ``zarrdask verify --strict``)
also reports every chunk of the grid that is not stored, and every empty inner
chunk of a stored shard that lies within the array, as a problem
(``ChunkNotFoundError``): the keys checked are then the whole grid, not the
listing. By default a missing chunk reads as the fill value and is no problem.

Every finding is a :class:`Problem` naming the node, the store key, the inner
chunk (for shards) and the error; nothing raises for corrupt data.
:func:`verify_hierarchy` walks a group, reporting metadata documents that cannot
be read as problems too. :mod:`zarrdask.dask.verify` runs the same checks as a
dask graph, one task per batch of stored keys.

Examples
--------
>>> import numpy as np, zarrdask
>>> a = zarrdask.create_array({}, shape=(4,), dtype="i4", chunks=(2,))
>>> a[:] = np.arange(4)
>>> verify_array(a)
[]
>>> a.store.set("c/1", b"garbage")
>>> [p.key for p in verify_array(a)]
['c/1']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._pool import thread_map
from ..chunking import grid_for
from ..codecs.abc import ChunkSpec
from ..codecs.chain import CodecChain
from ..codecs.sharding import ShardingCodec
from ..errors import ChunkNotFoundError, CorruptChunkError
from ..storage.abc import Store
from ..storage.keys import METADATA_NAMES, join_path
from .array import Array
from .group import Group, node_from_docs
from .nodes import ZARR_JSON, ZARRAY, ZGROUP, key_of, node_name, read_node

__all__ = [
    "Problem",
    "VerifyReport",
    "collect_arrays",
    "key_batches",
    "stored_chunk_keys",
    "verify_array",
    "verify_hierarchy",
    "verify_keys",
    "with_strictness",
]


@dataclass(frozen=True)
class Problem:
    """One thing found wrong with stored data or metadata.

    Attributes
    ----------
    path : str
        The node (``"/group/array"``).
    key : str
        The store key holding the bad bytes: a chunk, a shard or a metadata document.
    error : str
        The name of the exception the check raised (``"ChecksumError"``, ...).
    message : str
        The exception's message.
    inner : tuple of tuple of int, optional
        For a shard, the coordinates of the corrupt inner chunk inside the shard
        (``((1, 0),)``), one entry per level for nested shards, outermost first;
        ``None`` when the stored value as a whole (a chunk, or a shard's index)
        is bad.
    """

    path: str
    key: str
    error: str
    message: str
    inner: tuple[tuple[int, ...], ...] | None = None

    @property
    def where(self) -> str:
        """The key, followed by the inner chunk's coordinates for a shard."""
        return self.key + "".join(f" inner chunk {c}" for c in self.inner or ())

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the fields."""
        inner = None if self.inner is None else [list(c) for c in self.inner]
        return {"path": self.path, "key": self.key, "inner": inner, "error": self.error, "message": self.message}

    def __str__(self) -> str:
        return f"{self.where}: {self.error}: {self.message}"


@dataclass
class VerifyReport:
    """What a verification checked and found.

    Attributes
    ----------
    arrays : list of str
        The paths of the arrays checked.
    keys_checked : int
        The number of stored chunks or shards decoded.
    problems : list of Problem
        Everything found wrong, sorted by path and key.
    """

    arrays: list[str] = field(default_factory=list)
    keys_checked: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """``True`` when no problem was found."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the report."""
        return {
            "ok": self.ok,
            "arrays": list(self.arrays),
            "keys_checked": self.keys_checked,
            "problems": [p.to_json() for p in self.problems],
        }


def _problem(path: str, key: str, exc: BaseException, inner: Any = None) -> Problem:
    return Problem(path, key, type(exc).__name__, str(exc), inner)


# -- which keys ----------------------------------------------------------------
def stored_chunk_keys(array: Array) -> list[str]:
    """The keys of the array's stored chunks (shards, for sharded arrays).

    From a store that cannot list its keys (HTTP), and for an array whose
    ``read_missing_chunks`` is false (strict verification: a missing key is a
    problem), every key of the chunk grid: those that are missing are found
    when they are fetched.

    Parameters
    ----------
    array : Array
        The array.

    Returns
    -------
    list of str
    """
    if array.store.listable and array.read_missing_chunks:
        return sorted(array.stored_keys())
    layout = array.layout
    return [layout.chunk_key(c) for c in grid_for(array.shape, array.unit_grid).all_chunk_coords()]


# -- decoding one stored value ----------------------------------------------------
def _check_shard(
    codec: ShardingCodec, data: Any, spec: ChunkSpec, path: str, key: str, outer: tuple,
    extent: tuple[int, ...] | None = None,
) -> list[Problem]:
    """Check one shard's bytes: index, entries, then every inner chunk on its own;
    with ``extent`` (strict: the shard's elements within the array, per
    dimension), its empty inner chunks within it are problems too."""
    mv = memoryview(data).cast("B")
    n = len(mv)
    problems: list[Problem] = []
    try:
        size = codec.index_size(spec)
        if n < size:
            raise CorruptChunkError(f"shard {key!r}: truncated: {n} bytes, shorter than its {size}-byte index")
        raw = mv[:size] if codec.index_location == "start" else mv[n - size :]
        index = codec._decode_index(raw, spec, key)
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        # an index that cannot be trusted says nothing about the inner chunks
        return [Problem(path, key, type(e).__name__, f"shard index: {e}", outer or None)]
    chunks_per_shard = codec.chunks_per_shard(spec)
    inner_spec = codec._inner_spec(spec)
    flat, empty = index.flat(), index.is_empty()
    todo: list[tuple[tuple[int, ...], int, int]] = []
    if extent is not None:
        problems.extend(_empty_inner(codec, chunks_per_shard, np.flatnonzero(empty), extent, path, key, outer))
    for i in np.flatnonzero(~empty):
        coords = tuple(int(c) for c in np.unravel_index(int(i), chunks_per_shard))
        off, nbytes = int(flat[i, 0]), int(flat[i, 1])
        if off > n or nbytes > n - off:
            err = CorruptChunkError(
                f"shard {key!r}: index entry {int(i)} (offset {off}, nbytes {nbytes}) "
                f"points outside a shard of {n} bytes"
            )
            problems.append(_problem(path, key, err, (*outer, coords)))
        else:
            todo.append((coords, off, nbytes))

    def check(item: tuple[tuple[int, ...], int, int]) -> list[Problem]:
        coords, off, nbytes = item
        where = (*outer, coords)
        return _check_value(codec.codec_chain, mv[off : off + nbytes], inner_spec, path, key, where)

    for found in thread_map(check, todo):
        problems.extend(found)
    return problems


def _empty_inner(codec: ShardingCodec, chunks_per_shard: tuple[int, ...], empty: Any, extent: tuple[int, ...],
                 path: str, key: str, outer: tuple) -> list[Problem]:
    """The empty inner chunks (flat ids ``empty``) that start within ``extent``, as problems."""
    problems = []
    for i in empty:
        coords = tuple(int(c) for c in np.unravel_index(int(i), chunks_per_shard))
        if all(c * n < e for c, n, e in zip(coords, codec.chunk_shape, extent)):
            err = ChunkNotFoundError(f"shard {key!r}: inner chunk {list(coords)} is not stored (an empty "
                                     "index entry; read_missing_chunks=False)")
            problems.append(_problem(path, key, err, (*outer, coords)))
    return problems


def _check_value(
    codec: Any, data: Any, spec: ChunkSpec, path: str, key: str, outer: tuple = (),
    extent: tuple[int, ...] | None = None,
) -> list[Problem]:
    """Decode one stored value (a chunk, a shard, or an inner chunk of a shard);
    ``extent``: see :func:`_check_shard` (array→array codecs before the shard:
    every empty inner chunk counts)."""
    if isinstance(codec, CodecChain) and isinstance(codec.array_bytes, ShardingCodec):
        shard_spec = codec.encoded_spec(spec)
        if extent is not None and codec.array_array:
            extent = shard_spec.shape
        try:
            # bytes→bytes codecs after the shard apply to the shard as a whole
            shard = codec._decode_bytes(data, shard_spec, key, 0)
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            return [_problem(path, key, e, outer or None)]
        problems = _check_shard(codec.array_bytes, shard, shard_spec, path, key, outer, extent)
        if problems or not codec.array_array:
            return problems
        # array→array codecs before the shard: they can only be checked on the whole
    try:
        codec.decode(data, spec, key)
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        return [_problem(path, key, e, outer or None)]
    return []


def verify_keys(array: Array, keys: Sequence[str]) -> tuple[list[Problem], int]:
    """Fetch the stored values of ``keys`` in one store call and check each.

    Keys that are missing when fetched are skipped (a chunk never written reads
    as the fill value, which is not a problem) — unless the array's
    ``read_missing_chunks`` is false: then each is a problem
    (``ChunkNotFoundError``), and so is every empty inner chunk of a shard
    within the array.

    Parameters
    ----------
    array : Array
        The array the keys belong to.
    keys : sequence of str
        Chunk (or shard) keys of the array, e.g. from :func:`stored_chunk_keys`.

    Returns
    -------
    problems : list of Problem
        In the order of ``keys``.
    checked : int
        How many of ``keys`` were found and checked.
    """
    layout = array.layout
    spec = layout.chunk_spec
    path = array.name
    try:
        values = array.store.get_many(list(keys))
    except Exception as e:  # noqa: BLE001 - a failing fetch is a finding too
        return [_problem(path, k, e) for k in keys], 0

    strict = not array.read_missing_chunks

    def check(i: int) -> list[Problem]:
        data = values[i]
        if data is None:
            return [_problem(path, keys[i], _not_stored(keys[i]))] if strict else []
        spec_i, extent = spec, None
        coords = layout.key_encoding.decode(keys[i][len(layout.prefix):])
        if not layout.regular and coords is not None:  # a rectilinear grid: the chunk's own shape
            spec_i = layout.spec_at(spec, coords)
        if strict and coords is not None:  # the chunk's elements within the array
            extent = tuple(max(0, min(r.stop, n) - r.start)
                           for r, n in zip(layout.grid.chunk_region(coords), array.shape))
        return _check_value(layout.codec, data, spec_i, path, keys[i], extent=extent)

    problems = [p for found in thread_map(check, range(len(keys))) for p in found]
    return problems, sum(v is not None for v in values)


def _not_stored(key: str) -> ChunkNotFoundError:
    return ChunkNotFoundError(f"chunk {key!r} is not stored (read_missing_chunks=False: a missing chunk is a "
                              "problem, not the fill value)", [(key, None)])


def with_strictness(arrays: list[Array], read_missing_chunks: bool | None) -> list[Array]:
    """``arrays`` with ``read_missing_chunks`` set (``None``: as they are)."""
    if read_missing_chunks is None:
        return arrays
    return [a.with_config({"read_missing_chunks": read_missing_chunks}) for a in arrays]


def key_batches(array: Array, keys: Sequence[str], batch_bytes: int = 8 << 20) -> list[list[str]]:
    """Split ``keys`` into batches of about ``batch_bytes`` decoded bytes.

    A shard (or a chunk) larger than ``batch_bytes`` is a batch of its own.
    """
    per = max(1, batch_bytes // max(array.layout.chunk_spec.nbytes, 1))
    return [list(keys[i : i + per]) for i in range(0, len(keys), per)]


def verify_array(array: Array, *, batch_bytes: int = 8 << 20,
                 read_missing_chunks: bool | None = None) -> list[Problem]:
    """Decode every stored chunk (or shard, inner chunk by inner chunk) of ``array``.

    Parameters
    ----------
    array : Array
        The array to check.
    batch_bytes : int, default 8 MiB
        About how many decoded bytes to fetch with one store call.
    read_missing_chunks : bool, optional
        ``False``: strict — every chunk of the grid that is not stored, and
        every empty inner chunk within the array, is a problem. ``None``: the
        array's own option (by default the ``zarrdask.config`` setting).

    Returns
    -------
    list of Problem
        Empty when every stored chunk decodes and every checksum matches.

    See Also
    --------
    zarrdask.dask.verify.verify : the same checks as a dask graph.
    """
    problems: list[Problem] = []
    array = with_strictness([array], read_missing_chunks)[0]
    for batch in key_batches(array, stored_chunk_keys(array), batch_bytes):
        problems.extend(verify_keys(array, batch)[0])
    return problems


# -- hierarchies ----------------------------------------------------------------
def _metadata_key(path: str, zarr_format: int | None) -> str:
    if zarr_format == 2:
        return key_of(path, ZARRAY) + " / " + key_of(path, ZGROUP)
    return key_of(path, ZARR_JSON)


def collect_arrays(node: Array | Group) -> tuple[list[Array], list[Problem]]:
    """Every array in and below ``node``, and the nodes whose metadata is unreadable.

    A member whose metadata cannot be parsed (or whose codecs cannot be built)
    becomes a :class:`Problem` naming its metadata key instead of stopping the
    walk.

    Parameters
    ----------
    node : Array or Group
        Where to start.

    Returns
    -------
    arrays : list of Array
        Sorted by path.
    problems : list of Problem
    """
    if isinstance(node, Array):
        return [node], []
    arrays: list[Array] = []
    problems: list[Problem] = []
    store: Store = node.store
    if not store.listable:
        # members come from consolidated metadata, if the group has any
        members = node.members(max_depth=None)
        return [m for _, m in members if isinstance(m, Array)], []

    def walk(group: Group) -> None:
        for name in sorted(n for n in store.list_dir(group.path) if n not in METADATA_NAMES):
            path = join_path(group.path, name)
            try:
                docs = read_node(store, path, group.zarr_format)
                if docs is None:
                    continue  # a directory that is no node (v3 has no implicit groups)
                child = node_from_docs(store, docs, read_only=True)
            except Exception as e:  # noqa: BLE001 - reported, the walk goes on
                problems.append(_problem(node_name(path), _metadata_key(path, group.zarr_format), e))
                continue
            if isinstance(child, Array):
                arrays.append(child)
            else:
                walk(child)

    walk(node)
    return arrays, problems


def verify_hierarchy(node: Array | Group, *, batch_bytes: int = 8 << 20,
                     read_missing_chunks: bool | None = None) -> VerifyReport:
    """Verify an array, or every array in and below a group, in this process.

    Parameters
    ----------
    node : Array or Group
        What to check.
    batch_bytes : int, default 8 MiB
        About how many decoded bytes to fetch with one store call.
    read_missing_chunks : bool, optional
        As for :func:`verify_array`.

    Returns
    -------
    VerifyReport
    """
    arrays, problems = collect_arrays(node)
    arrays = with_strictness(arrays, read_missing_chunks)
    report = VerifyReport(arrays=[a.name for a in arrays], problems=problems)
    for array in arrays:
        keys = stored_chunk_keys(array)
        for batch in key_batches(array, keys, batch_bytes):
            found, checked = verify_keys(array, batch)
            report.keys_checked += checked
            report.problems.extend(found)
    report.problems.sort(key=lambda p: (p.path, p.key))
    return report

