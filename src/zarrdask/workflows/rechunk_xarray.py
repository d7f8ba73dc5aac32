"""``rechunk`` for xarray Datasets: the same plans, written by
:func:`zarrdask.xarray.to_zarr` so that coordinates, attributes and CF
encodings are kept.

Every variable is planned like an array (:func:`zarrdask.workflows.plan.plan_array`)
with these read chunks: its dask chunks when it is dask-backed (the largest
block along each dimension: irregular dask chunks are approximated by it), its
stored chunks (``encoding["chunks"]``) when it is a lazily opened Zarr array,
and single elements otherwise (data already in memory, or a backend without
chunks, costs only the block it reads). Its blocks become dask chunks: a
lazily opened variable is chunked straight to the blocks (each task reads its
block), a dask variable is rechunked to them.

A variable planned in two stages is written to the intermediate group in
``temp_store`` first (in the stage-1 blocks, with the intermediate chunks and
its CF encoding), then read back — CF-decoded, lazily, in the stage-2 blocks,
each read waiting for stage 1 to finish — and written to the target with the
rest. Dimension coordinates stay in memory (xarray keeps indexes loaded) and
are written when the target's metadata is created; they are not tasks.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

import dask
import dask.array as da
import xarray as xr
from dask.base import tokenize

from ..core.api import open_group
from ..core.nodes import ZARR_JSON, ZATTRS, ZGROUP, ZMETADATA
from ..dask.resume import mark_after
from ..errors import GroupNotFoundError
from ..storage.icechunk import PendingMerge
from ..storage.keys import join_path, normalize_path
from ..xarray import to_zarr
from ._run import over_network
from .plan import ArrayPlan, plan_array, worker_overhead
from .rechunk_plan import RechunkPlan
from .rechunk_resume import open_record, planned_for
from .rechunk_stores import check_free, check_temp_reachable, remove_array, target_and_temp

# encoding keys describing the stored array's codecs, kept only when the format is kept
_CODEC_KEYS = ("compressors", "compressor", "filters", "serializer", "chunk_key_encoding",
               "dimension_separator", "order")
_DROP = ("chunks", "shards", "preferred_chunks", "source", "original_shape")


class _VarJob:
    """One variable's plan, under the name the summary shows."""

    def __init__(self, plan: ArrayPlan, path: str) -> None:
        self.plan, self.path = plan, path


def plan_dataset(
    ds: Any,
    target_chunks: Any,
    target_store: Any,
    *,
    max_mem: int,
    target_shards: Any,
    temp_store: Any,
    target_path: str,
    options: dict[str, Any],
    storage_options: dict[str, Any] | None,
    resume: bool = False,
) -> "DatasetRechunkPlan":
    """The plan for a Dataset (see :func:`zarrdask.rechunk`)."""
    target_path = normalize_path(target_path)
    options = dict(options)
    fmt = options.pop("zarr_format", 3)
    store, temp = target_and_temp(target_store, temp_store, target_path, storage_options, free=not resume)
    record = open_record(store, target_path, "rechunk-dataset") if resume else None
    chunks_by_dim = _dims_dict(target_chunks, ds, "target_chunks")
    shards_by_dim = None if target_shards is None else _dims_dict(target_shards, ds, "target_shards")
    encodings, jobs, plans = {}, [], {}
    cluster = planned_for(record)
    overhead = worker_overhead(over_network(store, temp))
    for name, v in ds.variables.items():
        read = _read_chunks(v)
        kept = _kept_chunks(v, read)
        chunks = tuple(
            kept[d] if chunks_by_dim.get(dim) is None else (max(n, 1) if chunks_by_dim[dim] == -1 else chunks_by_dim[dim])
            for d, (dim, n) in enumerate(zip(v.dims, v.shape))
        )
        shards = _shards(v, chunks, chunks_by_dim, shards_by_dim, fmt)
        encodings[name] = _encoding(v, chunks, shards, fmt, options)
        if name in ds.indexes and name in v.dims:
            continue  # a dimension coordinate: in memory, written with the metadata
        itemsize = max(v.dtype.itemsize, np.dtype(encodings[name].get("dtype", v.dtype)).itemsize)
        plan = plan_array(
            str(name), v.shape, v.dtype, read, chunks, shards, max_mem,
            itemsize=itemsize, intermediate=temp is not None, min_tasks=cluster.min_tasks,
            threads_per_worker=cluster.threads, worker_overhead=overhead,
        )
        plans[name] = plan
        jobs.append(_VarJob(plan, join_path(target_path, str(name)) if target_path else str(name)))
    if temp is not None and any(p.intermediate_chunks is not None for p in plans.values()) and \
            (record is None or record.found is None):
        check_free(temp, target_path, "temp_store")
    plan = DatasetRechunkPlan(ds, jobs, plans, encodings, fmt, max_mem, store, temp, target_path)
    plan.resume, plan.planned_for_cluster = record, cluster
    return plan


class DatasetRechunkPlan(RechunkPlan):
    """A :class:`RechunkPlan` over the variables of a Dataset; :meth:`execute`
    returns the target :class:`~zarrdask.Group`."""

    _what = "variable"

    def __init__(
        self, ds: Any, jobs: list[_VarJob], plans: dict[Any, ArrayPlan], encodings: dict[Any, dict[str, Any]],
        fmt: int, max_mem: int, target_store: Any, temp_store: Any, target_path: str,
    ) -> None:
        super().__init__(jobs, [], max_mem, target_store, temp_store, target_path, fmt)  # type: ignore[arg-type]
        self._ds, self._plans, self._encodings, self._fmt = ds, plans, encodings, fmt

    def to_dask(self) -> Any:
        """The copy as a ``dask.delayed.Delayed``. The first call writes the
        metadata of the target (and intermediate) group and its in-memory
        dimension coordinates; later calls return the same graph."""
        if self._graph is None:
            self._graph = self._setup()
        return self._graph

    def _setup(self) -> Any:
        ds, group = self._ds, self.target_path or None
        record = self.resume
        if record is not None:
            identity = {"source": tokenize(ds), "target": tokenize(self._encodings, self._fmt, self.target_path),
                        "stages": {str(n): [[s.reads, s.writes, list(s.block)] for s in p.stages]
                                   for n, p in self._plans.items()}}
            record.check(identity, self.planned_for_cluster.recorded())
            record.setup(lambda: None, [], replace=False)
            if not record.unfinished(0, [()]):  # the target is written: the intermediate may be left to remove
                self._target = open_group(self.target_store, path=self.target_path, mode="r+")
                temp = (self.temp_store, self.target_path) if self.temp_store is not None else None
                return record.finish({"zarrdask-rechunk-remove-intermediate": (_finish, None, temp)},
                                     ["zarrdask-rechunk-remove-intermediate"], ())
        resume = record is not None
        out: dict[Any, Any] = {}
        staged = {}
        for name, v in ds.variables.items():
            plan = self._plans.get(name)
            if plan is None:
                out[name] = _with_encoding(v, self._encodings[name])
            elif len(plan.stages) == 1:
                out[name] = _with_encoding(v.chunk(_blocks(v, plan.stages[0].block)), self._encodings[name])
            else:
                staged[name] = plan
        pending = []
        if staged:
            check_temp_reachable(self.temp_store)
            first = {}
            for name, plan in staged.items():
                v = ds.variables[name]
                enc = {k: val for k, val in self._encodings[name].items() if k not in _CODEC_KEYS + ("fill_value",)}
                enc.update(chunks=plan.intermediate_chunks)
                enc.pop("shards", None)
                if not (v.dtype.hasobject or v.dtype.kind == "T"):  # stored as it is: written once, read once
                    enc.update(compressors=None, filters=None)
                first[name] = _with_encoding(v.chunk(_blocks(v, plan.stages[0].block)), enc)
            stage1 = to_zarr(xr.Dataset(first), self.temp_store, group=group, mode="w-", compute=False,
                             resume=resume)
            pending.append(stage1)
            back = xr.open_dataset(self.temp_store, engine="zarrdask", group=group, chunks=None, cache=False)
            for name, plan in staged.items():
                v, read = ds.variables[name], back.variables[name]
                # named after what stage 1 writes, not after the write itself (its key is new in
                # every call): a resumed copy must plan the same stage-2 blocks as the first
                token = tokenize(first[name].data.name, plan.stages[1].block, name)
                data = _read_after(read, plan.stages[1].block, stage1, token)
                out[name] = xr.Variable(v.dims, data, dict(v.attrs), dict(self._encodings[name]))
        coords = {n: out[n] for n in ds.coords}
        data_vars = {n: out[n] for n in ds.data_vars}
        final = xr.Dataset(data_vars, coords=coords, attrs=dict(ds.attrs))
        pending.append(to_zarr(final, self.target_store, group=group, mode="w-", zarr_format=self._fmt,
                               compute=False, resume=resume))
        self._target = open_group(self.target_store, path=self.target_path, mode="r+")
        temp = (self.temp_store, self.target_path) if staged else None
        if record is None:
            return dask.delayed(_finish, pure=False)(pending, temp)
        written = dask.delayed(mark_after, pure=False)(record.store, record.marker(0, ()), _finish, pending, temp)
        return record.finish({}, [written.key], [written])


def _read_after(read: Any, block: tuple[int, ...], stage1: Any, token: str) -> da.Array:
    """The variable ``read`` (lazily opened from the intermediate) as a dask array
    of ``block``-sized blocks, each read inside a task that waits for ``stage1``
    (the read itself, not only its value: a graph computed without dask's array
    optimizations keeps the reads apart, and they would race the stage-1 writes).
    ``token`` names the blocks (tokenizing ``read`` would read it)."""
    sizes = _blocks(read, block)
    chunks = tuple(tuple(min(b, n - i) for i in range(0, n, b)) or (0,) for b, n in
                   ((sizes[d], n) for d, n in zip(read.dims, read.shape)))
    meta = np.empty((0,) * read.ndim, dtype=read.dtype)
    return da.map_blocks(_read_block, stage1, read, chunks=chunks, dtype=read.dtype, meta=meta,
                         name=f"rechunk-read-intermediate-{token}")


def _read_block(_stage: Any, read: Any, block_info: dict | None = None) -> np.ndarray:
    """One task, after stage 1: the block of ``read`` at its place in the array."""
    assert block_info is not None
    where = tuple(slice(a, b) for a, b in block_info[None]["array-location"])
    return np.asarray(read[where].values)


def _finish(written: Any, temp: tuple[Any, str] | None) -> list[PendingMerge]:
    """After the target is written: remove the intermediate group's arrays and
    metadata; return the merges of the writes into an icechunk session (their
    forks merge into it when the value reaches the session's process)."""
    merges = [w for w in (written or ()) if isinstance(w, PendingMerge)]
    if temp is not None:
        _remove_intermediate(*temp)
    return merges


def _remove_intermediate(store: Any, path: str) -> None:
    """Remove the intermediate group at ``path`` of ``store``: its arrays and metadata."""
    try:
        group = open_group(store, path=path, mode="r+")
    except GroupNotFoundError:  # removed already (a resumed copy)
        return
    for _name, member in group.members(max_depth=None):
        if not hasattr(member, "members"):
            remove_array(member)
    _remove_group_metadata(store, path)


def _remove_group_metadata(store: Any, path: str) -> None:
    store.delete_many([join_path(path, k) for k in (ZARR_JSON, ZGROUP, ZATTRS, ZMETADATA)])


def _with_encoding(v: Any, encoding: dict[str, Any]) -> Any:
    v = v.copy(deep=False)
    v.encoding = dict(encoding)
    return v


def _blocks(v: Any, block: tuple[int, ...]) -> dict[Any, int]:
    return {dim: max(1, min(b, n)) for dim, b, n in zip(v.dims, block, v.shape)}


def _dims_dict(spec: Any, ds: Any, what: str) -> dict[Any, int | None]:
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise TypeError(f"{what} for a Dataset must be a dict {{dimension: length}}, found {spec!r}")
    unknown = [d for d in spec if d not in ds.dims]
    if unknown:
        raise ValueError(f"{what}: the Dataset has no dimension(s) {unknown} (its dimensions: {list(ds.dims)})")
    for d, c in spec.items():
        if c is not None and (isinstance(c, bool) or not isinstance(c, (int, np.integer)) or (c <= 0 and c != -1)):
            raise ValueError(f"{what}[{d!r}]: lengths must be positive integers (or -1: whole dimension), found {c!r}")
    return {d: None if c is None else int(c) for d, c in spec.items()}


def _read_chunks(v: Any) -> tuple[int, ...]:
    """What reading a block of ``v`` decodes whole (see the module documentation)."""
    if v.chunks:
        return tuple(max(max(c), 1) for c in v.chunks)
    enc = v.encoding.get("chunks")
    if isinstance(enc, (tuple, list)) and len(enc) == v.ndim and v.ndim:
        return tuple(int(c) for c in enc)
    return (1,) * v.ndim


def _kept_chunks(v: Any, read: tuple[int, ...]) -> tuple[int, ...]:
    """The chunk length along a dimension target_chunks leaves alone."""
    if v.chunks or v.encoding.get("chunks") is not None:
        return read
    return tuple(max(n, 1) for n in v.shape)


def _shards(v: Any, chunks: tuple[int, ...], chunks_by_dim: dict, shards_by_dim: dict | None, fmt: int) -> Any:
    if shards_by_dim is None:
        kept = v.encoding.get("shards")
        untouched = not any(chunks_by_dim.get(d) is not None for d in v.dims)
        if fmt == 3 and kept is not None and untouched and len(kept) == v.ndim:
            return tuple(kept)
        return None
    if not set(shards_by_dim) & set(v.dims):
        return None
    return tuple(
        c if shards_by_dim.get(dim) is None
        else (max(-(-n // c), 1) * c if shards_by_dim[dim] == -1 else shards_by_dim[dim])
        for dim, c, n in zip(v.dims, chunks, v.shape)
    )


def _encoding(v: Any, chunks: tuple[int, ...], shards: Any, fmt: int, options: dict[str, Any]) -> dict[str, Any]:
    """The target encoding: the CF keys kept, codecs kept when the format is, chunks and shards new."""
    enc = {k: val for k, val in v.encoding.items() if k not in _DROP}
    source_fmt = 3 if "serializer" in enc else 2 if any(k in enc for k in _CODEC_KEYS) else None
    if source_fmt != fmt:
        for k in _CODEC_KEYS:
            enc.pop(k, None)
    serializer = enc.get("serializer")
    inner = getattr(serializer, "codec_chain", None)
    if inner is not None:  # a sharded source: its inner codecs become the target's
        enc["serializer"] = inner.array_bytes
        enc["compressors"] = list(inner.bytes_bytes) or None
        enc["filters"] = [*(enc.get("filters") or ()), *inner.array_array] or None
    if fmt == 2:
        enc.pop("fill_value", None)
    enc.update(options)
    enc["chunks"] = chunks
    if shards is not None:
        enc["shards"] = shards
    return enc
