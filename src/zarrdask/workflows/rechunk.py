"""``rechunk``: copy an array, a group or a Dataset to new chunks (and shards)
in parallel, with every worker's memory under ``max_mem``.

:func:`rechunk` only plans (see :mod:`zarrdask.workflows.plan` for the memory
model and the algorithm) and returns a :class:`RechunkPlan`: printing it shows
the stages, the number of tasks, the chunks and bytes moved and the peak memory
per task and per worker;
:meth:`RechunkPlan.to_dask` creates the target (and intermediate) metadata and
returns the dask graph; :meth:`RechunkPlan.execute` runs it with a progress bar.

Each task copies one block: it reads the block from the array it reads (source
or intermediate) through the chunk engine and writes it to the array it writes.
Blocks are unions of whole target shards (chunks, when unsharded), so no two
tasks write the same stored object, on the threaded scheduler or on a
distributed cluster, and no lock is needed.

Into a writable icechunk session whose tasks run in other processes, the
tasks writing the target write through forks of the session and exactly the
successful tasks' forks are merged into it (:mod:`zarrdask.dask.sessions`, as
:func:`zarrdask.to_zarr` does); the intermediate stays in ``temp_store``,
outside the session (:func:`.rechunk_stores.check_temp_reachable`), and
``resume=True`` is refused there (:func:`zarrdask.dask.write_record.check_resumable`).

This module plans arrays and groups (:class:`NodeRechunkPlan`) and hands
Datasets to :mod:`.rechunk_xarray`; what both plans share is in
:mod:`.rechunk_plan` (the summary, running the graph) and
:mod:`.rechunk_stores` (checking the stores, removing intermediates).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from ..core.api import check_create_array, create_array, open_array, open_group
from ..core.api import open as open_node
from ..core.array import Array
from ..core.group import Group
from ..core.nodes import node_name
from ..errors import ResumeRefusedError
from ..dask.alignment import is_aligned
from ..storage.keys import join_path, normalize_path
from ..dask.resume import ResumableWrite, mark_after
from ..dask.sessions import session_forks
from ._run import copy_block, copy_into, over_network
from .plan import ArrayPlan, RechunkPlanError, parse_max_mem, plan_array, worker_overhead
from .rechunk_plan import RechunkPlan
from .rechunk_resume import PlannedFor, open_record, planned_for, rechunk_identity, stage_number
from .rechunk_stores import check_free, check_temp_reachable, remove_array, target_and_temp
from .rechunk_xarray import plan_dataset

__all__ = ["rechunk", "RechunkPlan", "RechunkPlanError"]

#: source chunks a task reading a store whose requests wait on a network keeps in
#: flight, room permitting (``plan_array(read_ahead=...)``)
READ_AHEAD = 8
# create_array keywords the plan owns
_OWNED = frozenset({"shape", "chunks", "shards", "data", "name", "path", "store", "overwrite"})


def rechunk(
    source: Any,
    target_chunks: Any,
    target_store: Any,
    *,
    max_mem: int | str,
    target_shards: Any = None,
    temp_store: Any = None,
    target_path: str = "",
    target_options: Mapping[str, Any] | None = None,
    resume: bool = False,
) -> "RechunkPlan":
    """Plan copying ``source`` to ``target_store`` with new chunks (and shards),
    keeping every worker's memory under ``max_mem``.

    Nothing is written until :meth:`RechunkPlan.execute` (or the graph of
    :meth:`RechunkPlan.to_dask`) runs.

    Parameters
    ----------
    source : Array, Group, xarray.Dataset, store or path
        What to copy. A store or path is opened read-only (an array or a group).
        A Group is copied whole: every group (with its attributes) and every
        array below it.
    target_chunks : tuple, dict, int or None
        The target's chunk shape. For an array: a tuple (``None`` keeps the
        source's chunk length along a dimension, ``-1`` takes the whole
        dimension) or a dict ``{dimension name or index: length}`` (dimensions
        left out keep their chunk length). For a group: a dict ``{array path:
        tuple or dict}`` (arrays left out are copied with their chunks and
        shards), or a single tuple (applied to the arrays with as many
        dimensions), or a dict ``{dimension name: length}`` (applied to every
        array with that dimension, named by ``dimension_names`` or the
        ``_ARRAY_DIMENSIONS`` attribute). For a Dataset: ``{dimension: length}``.
        ``None`` keeps the source's chunks. A dimension's length may also be a
        sequence of chunk edge lengths (``((31, 28, 31), 180)``, a dask
        ``chunks`` entry): the target then has a rectilinear chunk grid
        (zarr-extensions ``chunk-grids/rectilinear``, Zarr v3 only), copied in
        one pass with one task per target chunk (shard, with ``target_shards``
        listing edge lengths); a rectilinear source keeps its grid when its
        chunks are kept.
    target_store : Store, str or path
        Where to write: anything :func:`zarrdask.create_array` accepts.
    max_mem : int or str
        The memory a worker may hold, in bytes or as a string (``"100MB"``,
        ``"1GiB"``): one task per thread of the worker — each its block
        expanded to the chunks it reads, plus chunks being decoded, encoded or
        in flight — and what the worker holds besides its tasks (see
        :mod:`zarrdask.workflows.plan`; ``print(plan)`` states the peak per
        worker). On dask's local schedulers each thread counts as a worker.
    target_shards : tuple, dict or None
        The target's shard shape, in the same forms as ``target_chunks``
        (``None`` along a dimension, or a dimension left out of a dict: one
        chunk per shard along it; ``-1``: the whole dimension). ``None``: no
        sharding (arrays a group copies unchanged keep their shards). Every
        shard is written by exactly one task.
    temp_store : Store, str or path, optional
        Where an intermediate array may go when a one-pass copy cannot keep a
        task under ``max_mem`` (or moves more bytes). Must be another store
        than ``target_store``; the intermediate arrays are created under
        ``target_path`` there, stored uncompressed, and removed once their
        target is written.
    target_path : str
        The path of the copy inside ``target_store``.
    target_options : dict, optional
        Keywords for :func:`zarrdask.create_array` that override what is copied
        from the source (``compressors``, ``filters``, ``serializer``,
        ``fill_value``, ``dtype``, ``attributes``, ``zarr_format`` — the latter
        also for the groups —, ``storage_options`` for a URL target, …).
        Without them every array keeps its dtype, fill value, attributes,
        dimension names and codecs (when the format is kept: changing
        ``zarr_format`` gives that format's default codecs).
    resume : bool
        ``True``: the copy can be finished after its process, its cluster or
        its machine died: run the same ``rechunk(...).execute()`` again with
        ``resume=True`` and only the blocks not recorded as copied are copied
        (the plan is made for the number of tasks recorded, whatever the
        cluster). A record is kept under ``.zarrdask-writes/`` in the target
        store until the copy completes (:mod:`zarrdask.workflows.rechunk_resume`);
        a resume of another copy into the same place is a
        :class:`~zarrdask.errors.WriteRecordMismatchError`.

    Returns
    -------
    RechunkPlan

    Raises
    ------
    RechunkPlanError
        (a ``ValueError``) when one source chunk or one target shard/chunk alone
        exceeds ``max_mem``, or a one-pass copy does not fit and no
        ``temp_store`` was given; the message names the sizes.
    ContainsArrayError, ContainsGroupError
        When something exists at ``target_path`` already.
    ResumeRefusedError
        ``resume=True`` with an icechunk session (or a zip archive) as the target.

    Notes
    -----
    Into a writable icechunk session on a ``distributed`` cluster (or the
    processes scheduler), the session is forked, the tasks write through their
    own copies of the fork and exactly the copies of the tasks that succeeded
    are merged into it (a task retried with ``execute(retries=...)`` leaves no
    duplicate or lost chunk); the user commits. ``temp_store`` must then be a
    store the workers reach, not a writable session
    (:class:`~zarrdask.errors.IcechunkSessionError`).

    Examples
    --------
    >>> import numpy as np, zarrdask
    >>> src = zarrdask.create_array(zarrdask.MemoryStore(), shape=(100, 100), dtype="f4",
    ...                             chunks=(1, 100), data=np.ones((100, 100), "f4"))
    >>> plan = zarrdask.rechunk(src, (100, 1), zarrdask.MemoryStore(), max_mem="4kB",
    ...                         temp_store=zarrdask.MemoryStore())
    >>> plan.nstages, all(t.memory <= 4000 for t in plan.tasks())
    (2, True)
    >>> float(plan.execute(progress=False)[...].sum())
    10000.0
    """
    max_mem = parse_max_mem(max_mem)
    options = _target_options(target_options)
    storage_options = options.pop("storage_options", None)
    if _is_dataset(source):
        return plan_dataset(
            source, target_chunks, target_store, max_mem=max_mem, target_shards=target_shards,
            temp_store=temp_store, target_path=target_path, options=options, storage_options=storage_options,
            resume=resume,
        )
    if not isinstance(source, (Array, Group)):
        source = open_node(source, mode="r")
    target_path = normalize_path(target_path)
    store, temp = target_and_temp(target_store, temp_store, target_path, storage_options, free=not resume)
    record = open_record(store, target_path) if resume else None
    fmt = options.get("zarr_format", source.zarr_format)
    cluster = planned_for(record)
    jobs, groups = _jobs_and_groups(source, target_chunks, target_shards, target_path, fmt, options, max_mem, temp,
                                    cluster, worker_overhead(over_network(source.store, store, temp)))
    if temp is not None and (record is None or record.found is None):
        for job in jobs:
            if job.temp_kwargs is not None:
                check_free(temp, job.path, "temp_store")
    plan = NodeRechunkPlan(
        jobs, groups, max_mem, store, temp, target_path, fmt if isinstance(source, Group) else None
    )
    plan.resume, plan.planned_for_cluster = record, cluster
    return plan


def _target_options(target_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``target_options`` as a new dict, without the keywords the plan sets itself."""
    options = dict(target_options or {})
    owned = sorted(_OWNED & set(options))
    if owned:
        raise TypeError(
            f"target_options: {owned} are set by rechunk itself; give chunks and shards as "
            "target_chunks= and target_shards=, the location as target_store= and target_path="
        )
    return options


def _jobs_and_groups(
    source: Array | Group, target_chunks: Any, target_shards: Any, target_path: str, fmt: int,
    options: dict[str, Any], max_mem: int, temp: Any, cluster: PlannedFor, overhead: int,
) -> tuple[list[ArrayJob], list[tuple[str, dict[str, Any]]]]:
    """The job of every array of ``source`` and the ``(path, attributes)`` of every group of the target."""
    groups: list[tuple[str, dict[str, Any]]] = []
    if isinstance(source, Array):
        members: list[tuple[str, Array | Group]] = [("", source)]
        choice = {"": _resolve_array(source, target_chunks, target_shards, fmt)}
    else:
        members = list(source.members(max_depth=None))
        choice = _resolve_group(members, target_chunks, target_shards, fmt)
        groups.append((target_path, source.attrs.asdict()))
    jobs = []
    for rel, node in members:
        path = join_path(target_path, rel) if rel else target_path
        if isinstance(node, Group):
            groups.append((path, node.attrs.asdict()))
        else:
            chunks, shards = choice[rel]
            jobs.append(_job(node, rel, path, chunks, shards, options, max_mem, temp, cluster, overhead))
    return jobs, groups


# -- the plan ----------------------------------------------------------------------------
@dataclass
class ArrayJob:
    """One array: its plan, its source, and how its target and intermediate are created."""

    plan: ArrayPlan
    source: Array
    path: str
    target_kwargs: dict[str, Any]
    temp_kwargs: dict[str, Any] | None
    target: Array | None = None
    temp: Array | None = None


class NodeRechunkPlan(RechunkPlan):
    """The :class:`~zarrdask.workflows.rechunk_plan.RechunkPlan` of an array or a
    group: one task per block of each stage, copying it through the chunk engine
    (:func:`~zarrdask.workflows._run.copy_block`)."""

    def to_dask(self) -> Any:
        """The copy as a ``dask.delayed.Delayed``: computing it runs every task.

        The first call creates the target's groups and arrays (metadata only)
        and the intermediate arrays; later calls return the same graph. Into a
        writable icechunk session that icechunk can fork, the tasks write
        through forks of it and the graph computes to a
        :class:`~zarrdask.storage.icechunk.PendingMerge` that merges them into
        the session when the value reaches this process (as a lazy
        :func:`zarrdask.to_zarr` does).
        """
        return self._prepare(compute=False)

    def _prepare(self, compute: bool, scheduler: Any = None) -> Any:
        """The graph, made on first use for a computation now (``compute``, on
        ``scheduler``) or later: through forks of an icechunk session target
        when the tasks run in other processes (:mod:`zarrdask.dask.sessions`)."""
        if self._graph is None and self.resume is not None:
            self._graph = self._build_resumable(self.resume)
        elif self._graph is None:
            if any(job.temp_kwargs is not None for job in self._jobs):
                check_temp_reachable(self.temp_store, scheduler)
            self._forks = session_forks(self.target_store, compute=compute, scheduler=scheduler)
            self._create(store=self.target_store if self._forks is None else self._forks.store)
            self._graph = self._build()
            if self._forks is not None:  # the metadata is merged into the session: the target over it
                self._target = open_node(self.target_store, path=self.target_path, mode="r+")
        return self._graph

    def _build_resumable(self, record: ResumableWrite) -> Any:
        """:meth:`to_dask` with ``resume=True``: the metadata made once, the tasks
        of the blocks not recorded as copied, the record removed last."""
        record.check(rechunk_identity(self._jobs, self._groups), self.planned_for_cluster.recorded(created=True))
        record.setup(lambda: self._create(again=record.found is not None), [self.target_path], replace=False)
        if self._target is None:  # the record says the metadata is made: open what it made
            self._target = open_node(self.target_store, path=self.target_path, mode="r+")
            for job in self._jobs:
                job.target = open_array(self.target_store, path=job.path, mode="r+")
                if job.temp_kwargs is not None:
                    job.temp = _open_or_none(self.temp_store, job.path)
        return self._build(record)

    def _create(self, again: bool = False, store: Any = None) -> None:
        """Create the intermediates, then the target's groups and arrays in
        ``store`` (the target store, or the template fork of its session)."""
        store = self.target_store if store is None else store
        for job in self._jobs:  # intermediates first: a clash there leaves the target untouched
            if job.temp_kwargs is not None and job.temp is None:  # again: the one a killed copy began is replaced
                job.temp = create_array(self.temp_store, path=job.path, overwrite=again, **job.temp_kwargs)
        for path, attrs in self._groups:
            node = open_group(store, path=path, mode="w-", zarr_format=self._group_format, attributes=attrs)
            if path == self.target_path:
                self._target = node
        for job in self._jobs:
            job.target = create_array(store, path=job.path, **job.target_kwargs)
            if job.path == self.target_path:
                self._target = job.target

    def _build(self, record: ResumableWrite | None = None) -> Any:
        """The graph; with a ``record``, only the blocks it does not list as copied,
        each task storing its marker, and the record removed last; with forks,
        the tasks writing the target return theirs, merged last."""
        token = tokenize([(j.source, j.target, j.temp, j.plan) for j in self._jobs])
        dsk: dict[Any, Any] = {}
        last: list[Any] = []
        forked: list[Any] = []  # the keys of the tasks whose values are forks
        for number, job in enumerate(self._jobs):
            after: tuple[Any, ...] = ()
            for s, stage in enumerate(job.plan.stages):
                reads = job.source if stage.reads == "source" else job.temp
                writes = job.target if stage.writes == "target" else job.temp
                indices = list(stage.indices())
                if record is not None:
                    indices = record.unfinished(stage_number(number, s), indices)
                if indices:
                    _check_stage(job, reads, writes, stage)
                name = f"rechunk-copy-{number}-{s}-{token}"
                keys = []
                for index in indices:
                    key = (name, *index)
                    if self._forks is not None and stage.writes == "target":
                        dsk[key] = self._forks.task(copy_into, writes, reads, stage.region(index),
                                                    stage.memory(index), *after)
                        forked.append(key)
                    else:
                        task = (copy_block, reads, writes, stage.region(index), stage.memory(index), *after)
                        dsk[key] = task if record is None else \
                            (mark_after, record.store, record.marker(stage_number(number, s), index), *task)
                    keys.append(key)
                if s + 1 < len(job.plan.stages):
                    barrier = f"rechunk-stage-{number}-{s}-{token}"
                    dsk[barrier] = (_done, keys)
                    after = (barrier,)
                elif job.temp is not None:  # the intermediate goes once the target is written
                    cleanup = f"rechunk-remove-intermediate-{number}-{token}"
                    dsk[cleanup] = (remove_array, job.temp, keys)
                    last.append(cleanup)
                else:
                    last.extend(keys)
        final = f"zarrdask-rechunk-{token}"
        dsk[final] = (_done, last)
        if record is not None:
            return record.finish(dsk, [final], ())
        graph = Delayed(final, HighLevelGraph.from_collections(final, dsk, dependencies=()))
        return graph if self._forks is None else self._forks.finish(graph, [*forked, final])


def _check_stage(job: ArrayJob, reads: Array | None, writes: Array | None, stage: Any) -> None:
    """A stage with blocks to copy has the arrays it reads and writes, aligned."""
    if reads is None or writes is None:  # only a resume can find the intermediate gone
        raise ResumeRefusedError(
            f"rechunk of {node_name(job.path)!r}: the intermediate array in temp_store is gone, but blocks of "
            "the stage that reads it are not recorded as copied; start the copy again without resume=True"
        )
    unit = writes.shards or writes.chunks
    assert is_aligned(stage.dask_chunks, unit, (0,) * len(unit)), (stage, unit)


def _open_or_none(store: Any, path: str) -> Array | None:
    try:
        return open_array(store, path=path, mode="r+")
    except KeyError:
        return None


def _done(_: Any) -> None:
    return None


# -- arrays ---------------------------------------------------------------------------
def _job(
    source: Array, rel: str, path: str, chunks: tuple[int, ...], shards: tuple[int, ...] | None,
    options: dict[str, Any], max_mem: int, temp: Any, cluster: PlannedFor, overhead: int,
) -> ArrayJob:
    fmt = options.get("zarr_format", source.zarr_format)
    kwargs: dict[str, Any] = {
        "dtype": source.dtype,
        "fill_value": source.fill_value,
        "attributes": source.attrs.asdict(),
        "zarr_format": fmt,
    }
    if fmt == source.zarr_format:
        kwargs.update(_codecs_of(source))
    if fmt == 3 and source.zarr_format == 2 and "_ARRAY_DIMENSIONS" in kwargs["attributes"]:
        # xarray's v2 convention becomes v3's dimension_names, as in zarrdask.convert
        kwargs["dimension_names"] = list(kwargs["attributes"].pop("_ARRAY_DIMENSIONS"))
    elif fmt == 3 and source.dimension_names is not None:
        kwargs["dimension_names"] = source.dimension_names
    elif fmt == 2 and source.zarr_format == 3 and source.dimension_names is not None:
        kwargs["attributes"].setdefault("_ARRAY_DIMENSIONS", list(source.dimension_names))
    kwargs.update(options)
    kwargs.update(shape=source.shape, chunks=chunks, shards=shards)
    check_create_array(f"target_options for array {node_name(path)!r}", **kwargs)
    itemsize = max(source.dtype.itemsize, np.dtype(kwargs["dtype"]).itemsize)
    # a source whose requests wait on a network: room for chunks in flight in each task
    read_ahead = READ_AHEAD if over_network(source.store) else 0
    plan = plan_array(
        rel or source.path, source.shape, source.dtype, source.chunks, chunks, shards, max_mem,
        itemsize=itemsize, intermediate=temp is not None, min_tasks=cluster.min_tasks, read_ahead=read_ahead,
        threads_per_worker=cluster.threads, worker_overhead=overhead, in_place=_encodes_in_place(kwargs),
    )
    temp_kwargs = None
    if plan.intermediate_chunks is not None:
        temp_kwargs = {
            "shape": source.shape,
            "dtype": source.dtype,
            "chunks": plan.intermediate_chunks,
            "fill_value": source.fill_value,
            "zarr_format": source.zarr_format,
            **_intermediate_codecs(source),
        }
        check_create_array(f"the intermediate array for array {node_name(path)!r}", **temp_kwargs)
    return ArrayJob(plan, source, path, kwargs, temp_kwargs)


def _encodes_in_place(kwargs: Mapping[str, Any]) -> bool:
    """Whether the array ``create_array(**kwargs)`` makes encodes a chunk
    straight from its place in a block: unsharded, C order, no filters, the
    ``bytes`` serializer (no contiguous copy first)."""
    if kwargs.get("shards") is not None or kwargs.get("filters") or kwargs.get("order") not in (None, "C"):
        return False
    serializer = kwargs.get("serializer")
    name = serializer.get("name") if isinstance(serializer, Mapping) else getattr(serializer, "name", serializer)
    return serializer is None or name in ("bytes", "auto")


def _intermediate_codecs(a: Array) -> dict[str, Any]:
    """The intermediate array's codecs: none for fixed-size data types (written
    once and read once, its bytes are cheapest stored as they are: no encoding
    or decoding beyond one copy), ``a``'s own for variable-length strings and
    bytes (which need their serializer)."""
    if a.dtype.hasobject or a.dtype.kind == "T":
        return _codecs_of(a)
    return {"filters": None, "compressors": None}


def _codecs_of(a: Array) -> dict[str, Any]:
    """The create_array keywords that reproduce ``a``'s encoding (in ``a``'s format)."""
    m = a.metadata
    if a.zarr_format == 2:
        return {
            "filters": list(a.filters) or None,
            "compressors": list(a.compressors) or None,
            "order": a.order,
            "dimension_separator": m.dimension_separator,
        }
    out: dict[str, Any] = {
        "chunk_key_encoding": {"name": m.chunk_key_encoding.name, "separator": m.chunk_key_encoding.separator},
    }
    out.update(filters=list(a.filters) or None, serializer=a.serializer, compressors=list(a.compressors) or None)
    return out


def _dim_names(a: Array) -> tuple[Any, ...] | None:
    names = a.dimension_names
    if names is None:
        names = a.attrs.get("_ARRAY_DIMENSIONS")
    return None if names is None else tuple(names)


def _per_dim(spec: Any, a: Array, what: str, used: set[Any] | None = None) -> list[int | None]:
    """``spec`` (int, tuple or ``{dimension: length}``) as one entry per dimension
    (``None``: not given). ``used`` collects the matched dict keys (a group's
    dimension dicts); without it an unknown key is an error."""
    nd, where = a.ndim, f"array {a.name!r}"
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return [int(spec)] * nd
    if isinstance(spec, (tuple, list)):
        if len(spec) != nd:
            raise ValueError(f"{what} {tuple(spec)} has {len(spec)} entries; {where} has {nd} dimensions")
        return [None if c is None else _length(c, what, where) for c in spec]
    if isinstance(spec, Mapping):
        names = _dim_names(a) or ()
        out: list[int | None] = [None] * nd
        for key, value in spec.items():
            if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and used is None:
                if not -nd <= key < nd:
                    raise ValueError(f"{what}: dimension {key} is out of range; {where} has {nd} dimensions")
                d = int(key) % nd
            elif key in names:
                d = names.index(key)
            elif used is None:
                raise ValueError(f"{what}: {where} has no dimension {key!r} (its dimensions: {list(names)})")
            else:
                continue
            if used is not None:
                used.add(key)
            out[d] = None if value is None else _length(value, what, where)
        return out
    raise TypeError(f"{what} must be a tuple, an int or a dict of dimension lengths, found {spec!r}")


def _length(c: Any, what: str, where: str) -> Any:
    if isinstance(c, (list, tuple)) and c and all(
            isinstance(e, (int, np.integer)) and not isinstance(e, bool) and e > 0 for e in c):
        return tuple(int(e) for e in c)  # edge lengths along the dimension: a rectilinear grid
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or (c <= 0 and c != -1):
        raise ValueError(f"{what} for {where}: lengths must be positive integers (or -1: whole dimension), found {c!r}")
    return int(c)


def _chunks_from(entries: list[Any] | None, a: Array) -> tuple:
    if entries is None:
        return a.chunks
    return tuple(
        c if e is None else (max(s, 1) if e == -1 else e) for e, c, s in zip(entries, a.chunks, a.shape)
    )


def _shards_from(entries: list[int | None], chunks: tuple[int, ...], a: Array) -> tuple[int, ...]:
    return tuple(
        c if e is None else (max(-(-s // c), 1) * c if e == -1 else e) for e, c, s in zip(entries, chunks, a.shape)
    )


def _resolve_array(
    a: Array, target_chunks: Any, target_shards: Any, fmt: int,
    used: tuple[set | None, set | None] = (None, None),
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Chunks and shards of one array; ``used`` as for :func:`_per_dim` (chunks, shards)."""
    chunk_entries = None if target_chunks is None else _per_dim(target_chunks, a, "target_chunks", used[0])
    chunks = _chunks_from(chunk_entries, a)
    if target_shards is not None:
        return chunks, _shards_from(_per_dim(target_shards, a, "target_shards", used[1]), chunks, a)
    keep = target_chunks is None and fmt == 3
    return chunks, a.shards if keep else None


def _resolve_group(
    members: list[tuple[str, Array | Group]], target_chunks: Any, target_shards: Any, fmt: int
) -> dict[str, tuple[tuple[int, ...], tuple[int, ...] | None]]:
    """Chunks and shards of every array of a group (see :func:`rechunk`)."""
    arrays = {rel: node for rel, node in members if isinstance(node, Array)}
    specs = [_group_spec(target_chunks, arrays, "target_chunks"), _group_spec(target_shards, arrays, "target_shards")]
    used: tuple[set, set] = (set(), set())
    lenient = tuple(u if _is_dims_dict(spec, arrays) else None for u, spec in zip(used, (target_chunks, target_shards)))
    out = {}
    for rel, a in arrays.items():
        chunk_spec, shard_spec = (s(rel, a) for s in specs)
        if chunk_spec is None and shard_spec is None:
            out[rel] = (a.chunks, a.shards if fmt == 3 else None)
            continue
        out[rel] = _resolve_array(a, chunk_spec, shard_spec, fmt, lenient)  # type: ignore[arg-type]
    for spec, seen, what in zip((target_chunks, target_shards), used, ("target_chunks", "target_shards")):
        if _is_dims_dict(spec, arrays):
            unknown = [k for k in spec if k not in seen]
            if unknown:
                raise ValueError(f"{what}: no array of the group has the dimension(s) {unknown}")
    return out


def _is_dims_dict(spec: Any, arrays: Mapping[str, Array]) -> bool:
    return isinstance(spec, Mapping) and not _is_per_array(spec, arrays)


def _is_per_array(spec: Mapping[Any, Any], arrays: Mapping[str, Array]) -> bool:
    """A dict of array paths (rather than of dimension names): some value is a
    shape, or no key names a dimension and every key names an array."""
    if any(isinstance(v, (tuple, list, Mapping)) for v in spec.values()):
        return True
    dims = {d for a in arrays.values() for d in _dim_names(a) or ()}
    if any(k in dims for k in spec):
        return False
    return bool(spec) and all(isinstance(k, str) and normalize_path(k) in arrays for k in spec)


def _group_spec(spec: Any, arrays: Mapping[str, Array], what: str) -> Any:
    """A function ``(path, array) -> the spec for that array or None``."""
    if spec is None:
        return lambda rel, a: None
    if isinstance(spec, Mapping) and _is_per_array(spec, arrays):
        by_path = {normalize_path(str(k)): v for k, v in spec.items()}
        unknown = sorted(set(by_path) - set(arrays))
        if unknown:
            raise ValueError(f"{what}: the group has no array(s) {unknown} (its arrays: {sorted(arrays)})")
        return lambda rel, a: by_path.get(rel)
    if isinstance(spec, (tuple, list)):
        if not any(a.ndim == len(spec) for a in arrays.values()):
            raise ValueError(f"{what} {tuple(spec)}: the group has no array with {len(spec)} dimensions")
        return lambda rel, a: spec if a.ndim == len(spec) else None
    if isinstance(spec, Mapping):
        return lambda rel, a: spec if set(spec) & set(_dim_names(a) or ()) else None
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return lambda rel, a: spec
    raise TypeError(f"{what} for a group must be a dict, a tuple or an int, found {spec!r}")


def _is_dataset(x: Any) -> bool:
    xr = sys.modules.get("xarray")
    return xr is not None and isinstance(x, xr.Dataset)
