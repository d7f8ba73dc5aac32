"""Migrating whole hierarchies: Zarr v2 → v3 (optionally sharded), in parallel,
verified, resumable.

1. **Metadata** — the source's structure is read as a ZOM spec
   (:func:`zarrdask.zom.from_zarr`, one read with consolidated metadata) and
   converted with :func:`zarrdask.zom.convert_v2_to_v3` (dtype → data_type,
   filters + compressor → codecs, dimension_separator → the ``v2`` chunk key
   encoding, ``_ARRAY_DIMENSIONS`` → ``dimension_names``, fill value
   re-encoded). The layout options then change it: ``chunks`` sets the chunk
   shape, ``shards`` wraps the codecs in a ``sharding_indexed`` codec (v3 core,
   "Sharding codec"; index ``[bytes, crc32c]`` at the end, as zarr-python
   writes it) whose shards form the chunk grid, ``compressors`` replaces the
   bytes → bytes codecs. The target hierarchy is created with
   :func:`zarrdask.zom.to_zarr`, which accepts nodes that already exist
   identically — that is what makes a second run a resumption.
2. **Data** — one dask task per target shard (per block of target chunks when
   unsharded, about ``block_bytes`` each) reads its region from the source and
   writes it to the target. Stores write each key atomically, so a shard whose
   key exists is complete: a resumed conversion skips those.
3. **Verification** — shapes and dtypes compared, then every array's values
   hashed (SHA-256 over the blocks in C order, in parallel) on both sides.

Into a writable icechunk session from other processes (a ``distributed``
cluster, the processes scheduler) the copy tasks write through forks of the
session and exactly the successful tasks' forks are merged into it
(:mod:`zarrdask.dask.sessions`, as :func:`zarrdask.to_zarr` does); the
verification reads the target through the merged fork, and the user commits.
Every v3 array then gets the ``default`` chunk key encoding, the only one
icechunk stores.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import dask
import numpy as np
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph
from xarray.backends.zarr import FillValueCoder

from ..chunking.rectilinear import is_regular, normalize_chunks
from ..codecs.abc import ArrayBytesCodec, ChunkSpec
from ..codecs.chain_validate import assign_kinds
from ..codecs.registry import codec_from_json
from ..core.api import open as open_node
from ..core.array import Array
from ..core.consolidated import consolidate_metadata
from ..core.group import Group
from ..dask.sessions import SessionForks, session_forks
from ..errors import MetadataError, ZarrdaskError
from ..metadata import ArrayMetadataV3
from ..metadata.v3 import largest_chunk, rectilinear_json
from ..storage import store_from
from ..storage.icechunk import IcechunkSessionStore
from ..storage.keys import normalize_path
from ..zom import ArraySpecV2, ArraySpecV3, convert_v2_to_v3, from_flat, from_zarr, to_zarr
from ._run import copy_block, copy_into, run_graph

__all__ = ["convert", "ConversionResult", "ArrayCheck", "VerificationError"]

_DEFAULT_KEYS = {"name": "default", "configuration": {"separator": "/"}}
_INDEX_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


class VerificationError(ZarrdaskError, RuntimeError):
    """The converted hierarchy differs from the source (the message names the arrays)."""


@dataclass(frozen=True)
class ArrayCheck:
    """One array's verification: shape, dtype and value checksums on both sides."""

    path: str
    shape: tuple[int, ...]
    dtype: str
    source_sha256: str
    target_sha256: str
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems and self.source_sha256 == self.target_sha256


@dataclass
class ConversionResult:
    """What :func:`convert` did."""

    target: Group | Array
    arrays: list[ArrayCheck] = field(default_factory=list)
    tasks_run: int = 0
    tasks_skipped: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(a.ok for a in self.arrays)

    def __str__(self) -> str:
        lines = [f"converted to v{self.target.zarr_format} {self.target!r} in {self.seconds:.1f} s: "
                 f"{self.tasks_run} copy tasks run, {self.tasks_skipped} skipped (already complete)"]
        for a in self.arrays:
            state = "OK" if a.ok else "MISMATCH: " + "; ".join(a.problems or ("values differ",))
            lines.append(f"  {a.path or '/'} {a.shape} {a.dtype} sha256 {a.target_sha256[:16]}… {state}")
        return "\n".join(lines)


def convert(
    source: Any,
    target: Any,
    *,
    zarr_format: int = 3,
    shards: Any = None,
    chunks: Any = None,
    compressors: Any = None,
    source_path: str = "",
    target_path: str = "",
    overwrite: bool = False,
    verify: bool = True,
    block_bytes: int = 64 << 20,
    progress: bool = False,
    storage_options: dict[str, Any] | None = None,
    **compute_kwargs: Any,
) -> ConversionResult:
    """Migrate a hierarchy (or one array) to Zarr v3, copying the data in parallel.

    Parameters
    ----------
    source : Group, Array, store or path
        What to convert (opened read-only).
    target : store or path
        Where to write it. Running ``convert`` again with the same arguments after
        an interruption resumes: nodes already created are kept, shards (chunks)
        already written are not rewritten.
    zarr_format : {3, 2}
        The target's format (a v2 source can also be re-laid out as v2; a v3
        source cannot become v2).
    shards : tuple, dict or None
        The target shard shape: a tuple for every array of that many dimensions,
        or ``{array path: tuple or None}``. Rounded down to whole chunks and
        clipped to the array. ``None``: not sharded.
    chunks : tuple, dict or None
        The target chunk shape (inner chunks when sharded), as for ``shards``;
        ``None`` keeps the source's chunks (a rectilinear grid stays one). An
        entry listing edge lengths (``((31, 28, 31), 180)``) makes a rectilinear
        chunk grid (v3, unsharded); ``shards`` listing edge lengths make a
        rectilinear grid of shards, each edge a multiple of the inner chunk.
    compressors : list, dict or None
        The target's bytes → bytes codecs (v3 JSON, zarrdask codecs or numcodecs
        objects), replacing the source's; ``[]`` for none; ``None`` keeps them.
    source_path, target_path : str
        Paths inside the source and target stores.
    overwrite : bool
        Replace target nodes whose metadata differs (otherwise that is an error
        naming them).
    verify : bool
        Compare shapes, dtypes and a SHA-256 of every array's values.
    block_bytes : int
        About how many bytes one copy task moves for unsharded targets.
    progress : bool
        Show a progress bar.
    storage_options : dict, optional
        For fsspec URLs (used for both source and target).
    **compute_kwargs
        Passed to ``dask.compute`` (``scheduler=...``) or the distributed client.

    Returns
    -------
    ConversionResult
        The target node, per-array checks, how many tasks ran and were skipped.

    Raises
    ------
    VerificationError
        When ``verify`` and an array differs (nothing is deleted).
    zarrdask.errors.IcechunkSessionError
        Into an icechunk session from other processes, when icechunk cannot fork
        it (icechunk 1.x: it has uncommitted changes); nothing is written.

    Notes
    -----
    Into a writable icechunk session on a ``distributed`` cluster (or the
    processes scheduler) the tasks write through forks of the session, and the
    forks of exactly the tasks that succeeded are merged into it before
    ``convert`` returns (a task retried with ``retries=`` leaves no duplicate or
    lost chunk); commit the session afterwards. The arrays get the ``default``
    chunk key encoding (icechunk stores no other).
    """
    t0 = time.perf_counter()
    src = _open_source(source, source_path, storage_options)
    tstore = store_from(target, mode="a", storage_options=storage_options)
    spec = _target_spec(src, zarr_format, chunks, shards, compressors,
                        default_keys=isinstance(tstore, IcechunkSessionStore))
    target_path = normalize_path(target_path)
    forks = session_forks(tstore, compute=True, scheduler=compute_kwargs.get("scheduler"))
    wstore = tstore if forks is None else forks.store  # an icechunk session from a cluster: its template fork
    to_zarr(spec, wstore, path=target_path, overwrite=overwrite)
    if isinstance(src, Group) and src.consolidated:
        consolidate_metadata(wstore, target_path)
    dst = open_node(wstore, path=target_path, mode="r+")

    pairs = list(_array_pairs(src, dst))
    tasks, skipped = _copy_tasks(pairs, block_bytes)
    if forks is not None:
        view = _copy_through_forks(forks, tasks, progress, compute_kwargs)
        dst = open_node(tstore, path=target_path, mode="r+")
        pairs = list(_array_pairs(src, open_node(view, path=target_path, mode="r")))  # verified from any process
    elif tasks:
        run_graph([dask.delayed(copy_block)(s, d, region) for s, d, region in tasks], progress, **compute_kwargs)
    result = ConversionResult(dst, tasks_run=len(tasks), tasks_skipped=skipped)
    if verify:
        result.arrays = _verify(pairs, block_bytes, progress, compute_kwargs)
        bad = [a for a in result.arrays if not a.ok]
        if bad:
            raise VerificationError(
                "the converted arrays differ from the source: "
                + "; ".join(f"{a.path!r}: {', '.join(a.problems) or 'values differ'}" for a in bad)
            )
    result.seconds = time.perf_counter() - t0
    return result


def _open_source(source: Any, source_path: str, storage_options: dict[str, Any] | None) -> Array | Group:
    """The node to convert: ``source`` itself (or its member ``source_path``), or opened read-only."""
    src = source if isinstance(source, (Array, Group)) else open_node(
        source, path=source_path, mode="r", storage_options=storage_options)
    if isinstance(source, Group) and source_path:
        src = source[source_path]
    return src


# --------------------------------------------------------------------------- metadata
def _target_spec(src: Array | Group, zarr_format: int, chunks: Any, shards: Any, compressors: Any,
                 default_keys: bool = False) -> Any:
    """The spec of the target hierarchy: the source's, converted to v3 when asked,
    with the layout options applied to every array; with ``default_keys``, every
    v3 array with the ``default`` chunk key encoding (``c/`` and ``/``: the only
    one icechunk stores)."""
    spec = from_zarr(src)
    converting = zarr_format == 3 and spec.zarr_format == 2
    if converting:
        spec = convert_v2_to_v3(spec)
    elif zarr_format not in (2, 3) or zarr_format < spec.zarr_format:
        raise ValueError(f"cannot convert a v{spec.zarr_format} hierarchy to zarr_format={zarr_format!r}")
    flat = {p: _relayout(p, node, chunks, shards, compressors) for p, node in spec.to_flat().items()}
    if converting:
        sources = {"/" + name: a for name, a in src.members(max_depth=None)} if isinstance(src, Group) else {"/": src}
        flat = {p: _keep_xarray_fill(node, sources.get(p)) for p, node in flat.items()}
    if default_keys:
        flat = {p: node.replace(chunk_key_encoding=_DEFAULT_KEYS) if isinstance(node, ArraySpecV3) else node
                for p, node in flat.items()}
    return from_flat(flat)


def _for(path: str, node: Any, option: Any) -> Any:
    """The layout option that applies to the array at ``path``."""
    if isinstance(option, Mapping):
        rel = path.strip("/")
        return option.get(rel, option.get("/" + rel))
    if option is not None and len(tuple(option)) != len(node.shape):
        return None
    return option


def _relayout(path: str, node: Any, chunks: Any, shards: Any, compressors: Any) -> Any:
    if not isinstance(node, (ArraySpecV2, ArraySpecV3)):
        return node
    chunk = _for(path, node, chunks)
    shard = _for(path, node, shards)
    if isinstance(node, ArraySpecV2):
        if shard is not None:
            raise ValueError(f"array {path!r}: Zarr v2 has no shards; convert with zarr_format=3")
        changes: dict[str, Any] = {}
        if chunk is not None:
            if not is_regular(_grid_option(chunk)):
                raise ValueError(f"array {path!r}: irregular chunks {chunk} need the rectilinear chunk grid, "
                                 "a Zarr v3 extension; convert with zarr_format=3")
            changes["chunks"] = tuple(int(c) for c in chunk)
        if compressors is not None:
            comps = _codec_list(compressors, v2=True)
            if len(comps) > 1:
                raise ValueError(f"array {path!r}: a Zarr v2 array takes one compressor, found {len(comps)}")
            changes["compressor"] = comps[0] if comps else None
        return node.replace(**changes) if changes else node
    doc = node.to_json()
    source_grid = ArrayMetadataV3.from_json(node.metadata_document(), key=f"{path}/zarr.json").chunk_shape
    inner = _grid_option(chunk) if chunk is not None else source_grid
    codecs = list(doc["codecs"])
    if codecs and codecs[0].get("name") == "sharding_indexed" and (shard is not None or chunk is not None):
        conf = codecs[0]["configuration"]
        inner = inner if chunk is not None else tuple(conf["chunk_shape"])
        codecs = list(conf["codecs"])
    if compressors is not None:
        at = _serializer_index(node, codecs, largest_chunk(inner), path)
        codecs = codecs[: at + 1] + _codec_list(compressors, v2=False)
    grid = inner
    if shard is not None and len(node.shape):
        if not is_regular(inner):
            raise ValueError(f"array {path!r}: irregular chunks {inner} cannot be inner chunks of shards "
                             "(sharding_indexed has one regular chunk_shape); give the irregular edges as shards")
        grid = tuple(_whole_chunks(s, c, n) if isinstance(s, int) else _whole_edges(s, c, path)
                     for s, c, n in zip(_grid_option(shard), inner, node.shape))
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner), "codecs": codecs, "index_codecs": _INDEX_CODECS,
            "index_location": "end"}}]
    if grid == source_grid and chunk is None and shard is None:
        chunk_grid = doc["chunk_grid"]  # kept as it is (a rectilinear grid stays one)
    elif is_regular(grid):
        chunk_grid = {"name": "regular", "configuration": {"chunk_shape": list(grid)}}
    else:
        chunk_grid = rectilinear_json(grid)
    return node.replace(chunk_grid=chunk_grid, codecs=tuple(codecs))


def _grid_option(option: Any) -> tuple:
    """``chunks`` / ``shards`` for one array: a shape, or per-axis edge lengths (rectilinear)."""
    return normalize_chunks(option)


def _whole_edges(edges: tuple[int, ...], chunk: int, path: str) -> tuple[int, ...]:
    """Irregular shard edges must each be whole inner chunks (the sharding codec's rule)."""
    if any(e % chunk for e in edges):
        raise ValueError(f"array {path!r}: shard edge lengths {list(edges)} must each be a multiple of the "
                         f"inner chunk length {chunk} (sharding_indexed)")
    return tuple(edges)


def _keep_xarray_fill(node: Any, source: Any) -> Any:
    """xarray reads a v2 array's ``fill_value`` as its CF ``_FillValue`` (values
    equal to it become missing), but a v3 array's only from a ``_FillValue``
    attribute. For arrays xarray wrote (they have ``_ARRAY_DIMENSIONS``), write
    that attribute as xarray encodes it, so the converted dataset opens the same."""
    if not isinstance(node, ArraySpecV3) or not isinstance(source, Array) or source.zarr_format != 2:
        return node
    attrs = dict(source.attrs)
    fill = source.metadata.fill_value
    if "_ARRAY_DIMENSIONS" not in attrs or "_FillValue" in attrs or fill is None or source.dtype.kind not in "biufc":
        return node  # xarray's v3 reader decodes _FillValue for numbers and booleans only
    try:
        encoded = FillValueCoder.encode(source.fill_value, source.dtype)
    except (TypeError, ValueError):
        return node
    return node.replace(attributes={**dict(node.attributes), "_FillValue": encoded})


def _whole_chunks(shard: int, chunk: int, extent: int) -> int:
    """A shard size made of whole chunks: rounded down to a multiple of the chunk,
    at least one chunk, at most what covers the array."""
    covering = max(1, math.ceil(extent / chunk)) * chunk
    return max(chunk, min(int(shard) // chunk * chunk, covering))


def _serializer_index(node: ArraySpecV3, codecs: list[dict[str, Any]], chunks: tuple[int, ...], path: str) -> int:
    """Where the array → bytes codec is in ``codecs`` (placing ``numcodecs.<id>``
    codecs as an opened array does)."""
    dtype = ArrayMetadataV3.from_json(node.metadata_document(), key=f"{path}/zarr.json").dtype
    where = f"array {path!r}"
    placed = assign_kinds([codec_from_json(c, key=where) for c in codecs], key=where, spec=ChunkSpec(chunks, dtype, None))
    for i, c in enumerate(placed or ()):
        if isinstance(c, ArrayBytesCodec):
            return i
    raise MetadataError(f"{where}: no array → bytes codec in {codecs!r}")


def _codec_list(compressors: Any, *, v2: bool) -> list[dict[str, Any]]:
    items = compressors if isinstance(compressors, (list, tuple)) else [compressors]
    out = []
    for c in items:
        if v2:  # numcodecs configurations
            if isinstance(c, str):
                out.append({"id": c})
            elif isinstance(c, Mapping) and "id" in c:
                out.append(dict(c))
            elif hasattr(c, "get_config"):
                out.append(c.get_config())
            else:
                raise ValueError(
                    f"a Zarr v2 compressor is a numcodecs configuration such as {{'id': 'zstd', 'level': 3}}, "
                    f"a numcodecs codec or a codec id; found {c!r}"
                )
        else:
            out.append(codec_from_json(c).to_json())
    return out


# --------------------------------------------------------------------------- data
def _copy_through_forks(forks: SessionForks, tasks: list[tuple[Array, Array, Any]], progress: bool,
                        compute_kwargs: dict[str, Any]) -> Any:
    """Run the copy tasks into an icechunk session from other processes, each
    through its own copy of the template fork, and merge the forks of the
    tasks that succeeded into the session (:mod:`zarrdask.dask.sessions`);
    return a read-only store over what was merged, which workers can read."""
    name = f"zarrdask-convert-{uuid.uuid4().hex}"
    dsk = {(name, i): forks.task(copy_into, d, s, region) for i, (s, d, region) in enumerate(tasks)}
    after = Delayed((name, 0), HighLevelGraph.from_collections(name, dsk, dependencies=()), layer=name) if dsk else None
    merge = forks.check_merged(run_graph(forks.finish(after, list(dsk)), progress, **compute_kwargs))
    return forks.merged_view(merge)


def _copy_tasks(pairs: list[tuple[Array, Array]], block_bytes: int) -> tuple[list[tuple[Array, Array, Any]], int]:
    """The copy tasks ``(source, target, region)`` still to run, and how many
    blocks are skipped because every key they write exists (a resumed conversion)."""
    tasks, skipped = [], 0
    for s, d in pairs:
        done = set(d.stored_keys())
        for region, keys in _blocks(d, block_bytes):
            if keys and all(k in done for k in keys):
                skipped += 1
            else:
                tasks.append((s, d, region))
    return tasks, skipped


def _array_pairs(src: Array | Group, dst: Array | Group) -> Iterator[tuple[Array, Array]]:
    if isinstance(src, Array):
        assert isinstance(dst, Array)
        yield src, dst
        return
    assert isinstance(dst, Group)
    targets = {n: a for n, a in dst.members(max_depth=None) if isinstance(a, Array)}
    for name, node in src.members(max_depth=None):
        if isinstance(node, Array):
            yield node, targets[name]


def _blocks(array: Array, block_bytes: int) -> Iterator[tuple[tuple[slice, ...], list[str]]]:
    """The array's copy blocks (one per shard; whole chunks up to ``block_bytes``
    when unsharded) and the keys each one writes."""
    layout = array.layout
    if array.chunk_grid == "rectilinear":  # one block per stored chunk (shard)
        rgrid = array.layout.grid
        for coords in rgrid.all_chunk_coords():
            yield rgrid.chunk_region(coords), [layout.chunk_key(coords)]
        return
    unit = array.shards or array.chunks
    if not array.shards:
        unit = _grow(unit, array.shape, array.dtype.itemsize, block_bytes)
    grid = array.shards or array.chunks
    counts = [max(1, math.ceil(n / u)) if n else 0 for n, u in zip(array.shape, unit)]
    for idx in itertools.product(*(range(c) for c in counts)):
        region = tuple(slice(i * u, min((i + 1) * u, n)) for i, u, n in zip(idx, unit, array.shape))
        keys = [layout.chunk_key(c) for c in itertools.product(
            *(range(r.start // g, math.ceil(r.stop / g)) for r, g in zip(region, grid)))]
        yield region, keys


def _grow(unit: Sequence[int], shape: Sequence[int], itemsize: int, limit: int) -> tuple[int, ...]:
    """Whole chunks per block, grown from the last dimension while under ``limit`` bytes."""
    block = list(unit)
    for d in reversed(range(len(block))):
        while block[d] < shape[d] and math.prod(block) * 2 * itemsize <= limit:
            block[d] = min(block[d] * 2, max(unit[d], math.ceil(shape[d] / unit[d]) * unit[d]))
    return tuple(block)


def _native(dtype: np.dtype) -> Any:
    """The dtype in native byte order; strings and bytes of any kind compare as such."""
    if dtype.kind in "OT":
        return "variable-length"
    return dtype.newbyteorder("=") if dtype.byteorder not in ("|", "=") else dtype


def _digest(block: Any) -> bytes:
    block = np.asarray(block)
    h = hashlib.sha256()
    h.update(repr(block.shape).encode())
    if block.dtype.kind in "OTUS":
        for item in block.ravel():
            raw = item.encode() if isinstance(item, str) else bytes(item)
            h.update(len(raw).to_bytes(8, "little"))
            h.update(raw)
    else:
        h.update(np.ascontiguousarray(block, dtype=_native(block.dtype)).tobytes())
    return h.digest()


def _digests(src: Array, dst: Array, region: tuple[slice, ...]) -> tuple[bytes, bytes]:
    from ..core.options import EngineOptions

    serial = EngineOptions(threads=1)  # a dask task: dask runs the tasks in parallel
    return (_digest(src.get_basic_selection(region, options=serial)),
            _digest(dst.get_basic_selection(region, options=serial)))


def _verify(pairs: list[tuple[Array, Array]], block_bytes: int, progress: bool,
            compute_kwargs: dict[str, Any]) -> list[ArrayCheck]:
    jobs = []
    for s, d in pairs:
        regions = [r for r, _ in _blocks(d, block_bytes)]
        jobs.append([dask.delayed(_digests)(s, d, r) for r in regions])
    results = run_graph(jobs, progress, **compute_kwargs) if jobs else []
    checks = []
    for (s, d), digests in zip(pairs, results):
        problems = []
        if s.shape != d.shape:
            problems.append(f"shape {d.shape} != source {s.shape}")
        if _native(s.dtype) != _native(d.dtype):
            problems.append(f"dtype {d.dtype} != source {s.dtype}")
        hs, hd = hashlib.sha256(), hashlib.sha256()
        for a, b in digests:
            hs.update(a)
            hd.update(b)
        checks.append(ArrayCheck(d.path, d.shape, str(d.dtype), hs.hexdigest(), hd.hexdigest(), tuple(problems)))
    return checks
