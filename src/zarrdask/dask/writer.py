"""``to_zarr``: write a dask array so that every stored object (a shard, or a
chunk when unsharded) is written by exactly one task.

dask's own ``to_zarr`` / ``store`` lets two tasks read-modify-write the same
shard when block edges cut through it, and one of the writes is lost. Here the
blocks are first aligned with the storage units (:mod:`zarrdask.dask.alignment`):
with ``align="auto"`` the array is rechunked to the minimal aligned chunking and
an :class:`~zarrdask.errors.AlignmentWarning` says so, with ``align="rechunk"``
the same happens silently (the caller asked for it), with ``align="error"`` a
misaligned array is refused.
Aligned, each unit belongs to one block; a unit cut by the edge of a ``region=``
belongs to the one block at that edge, whose task does the read-modify-write.
No locks are needed, on the threaded scheduler or on a distributed cluster.

Irregular blocks (the months of a year, the remainder of an append) need no
rechunk at all when the new array takes them as its chunks: ``chunks="dask"``
creates a rectilinear chunk grid (zarr-extensions ``chunk-grids/rectilinear``)
whose chunks are exactly the dask blocks, one task per chunk; ``shards="dask"``
does the same with the blocks as shards.
"""

from __future__ import annotations

import math
from typing import Any

import dask
import dask.array as da
from dask.base import tokenize

from ..core.api import create_array, open_array, resolve_store
from ..core.array import Array
from ..core.nodes import node_name
from ..errors import (
    AlignmentWarning,
    ReadOnlyError,
    RegionEdgeWarning,
    SelectionError,
    UnknownChunkSizesError,
    ZarrdaskError,
    warn,
)
from ..indexing import normalize_selection
from ..storage import MemoryStore
from ..storage.cache import invalidate_prefix
from ..storage.keys import normalize_path
from ..storage.zarr_python import zarr_python_location
from .alignment import Units, aligned_chunks, is_aligned, misaligned_blocks
from .graph import IN_TASK, BlockSource
from .keywords import check_existing, check_names, resolve_mode
from .resume import ResumableWrite, check_free, stored_array
from .sessions import SessionForks, session_forks
from .write_record import array_identity, check_resumable, record_id

_ALIGN = ("auto", "rechunk", "error")


class AlignmentError(ZarrdaskError, ValueError):
    """Dask blocks cut through shards (or chunks) and ``align="error"`` was asked."""


class BlockTarget(BlockSource):
    """What ``dask.array.store`` writes into (and, with ``return_stored=True``,
    reads the stored values back from): one zarrdask array."""

    def __setitem__(self, selection: Any, value: Any) -> None:
        self.array.set_basic_selection(selection, value, options=IN_TASK)


def _region(region: Any, shape: tuple[int, ...]) -> tuple[slice, ...]:
    if region is None:
        return tuple(slice(0, n) for n in shape)
    dims = normalize_selection(region, shape, allow_arrays=False)
    out = []
    for d, s in enumerate(dims):
        if isinstance(s, int) or s.step != 1:
            raise SelectionError(f"region: dimension {d} must be a slice with step 1, found {region!r}")
        out.append(s)
    return tuple(out)


def to_zarr(
    x: Any,
    store: Any,
    *,
    path: str = "",
    name: str | None = None,
    mode: str | None = None,
    overwrite: bool | None = None,
    region: Any = None,
    compute: bool = True,
    return_stored: bool = False,
    align: str = "auto",
    storage_options: dict[str, Any] | None = None,
    store_kwargs: dict[str, Any] | None = None,
    resume: bool = False,
    **create_array_kwargs: Any,
) -> Any:
    """Write the dask array ``x`` into a Zarr array.

    Parameters
    ----------
    x
        A dask array (anything else goes through ``dask.array.asarray``). Its
        chunk sizes must be known (after boolean indexing, call
        ``x.compute_chunk_sizes()`` first).
    store, path
        Where: a store, a local path or a URL (or a zarr-python store or
        ``Group``, or an icechunk ``Session`` or its ``store``), and the
        array's path inside it; or an open
        :class:`~zarrdask.Array` or zarr-python ``Array`` (written into, as with
        mode ``"r+"``).
    name
        zarr-python's (and dask's ``**zarr_array_kwargs``') spelling of ``path``;
        give one of them.
    mode
        ``"w-"`` (the default for a store or path): create the array, failing if
        one exists; ``"w"``: create it, replacing what is there; ``"a"``: write
        into the existing array, creating it if missing; ``"r+"`` (the default
        for an open array): write into the existing array. ``"r"`` is a ``ValueError``.
    overwrite
        dask's spelling of the mode of a new array: ``True`` is mode ``"w"``
        (replace an existing array), ``False`` mode ``"w-"`` (fail if one exists).
        Giving a different ``mode`` too, or an open array as ``store``, is a ``ValueError``.
    region
        A tuple of slices (step 1) of the target array to write ``x`` into; the
        default is the whole array. Only with an existing array (``"a"``/``"r+"``,
        or an open array); otherwise a ``ValueError``.
    compute
        ``False``: return the lazy write, a dask collection (what
        ``dask.array.store`` returns) that writes when computed; the array's
        metadata is created now, no chunk is written before then.
    return_stored
        ``True``: return a dask array of the values as stored, chunked as the
        blocks written (``x``'s blocks, after any alignment rechunk). With
        ``compute=True`` the write is done first and the array reads them back
        from the Zarr array; with ``compute=False`` each of its tasks writes a
        block and reads it back.
    align
        ``"auto"``: rechunk ``x`` to the minimal chunking whose blocks cover whole
        shards (whole chunks when unsharded), with an
        :class:`~zarrdask.errors.AlignmentWarning` saying so; ``"rechunk"``: the
        same without the warning; ``"error"``: raise :class:`AlignmentError`
        naming the offending blocks.
    storage_options
        fsspec options for URLs.
    store_kwargs
        Passed on to ``dask.array.store`` (for example ``scheduler=``, used when
        ``compute=True``; ``retries=`` on a distributed cluster runs a task that
        raised again). ``lock`` is ignored: no two tasks share a stored object.
    resume
        ``True``: the write can be finished after its process, its cluster or its
        machine died: run the same call again with ``resume=True`` and only the
        blocks not recorded as written are computed and written. The write keeps a
        record under ``.zarrdask-writes/`` in the store while it runs and removes it
        when it completes (see :mod:`zarrdask.dask.write_record`); a resume of other
        data or settings is a :class:`~zarrdask.errors.WriteRecordMismatchError`,
        and a zip store a :class:`~zarrdask.errors.ResumeRefusedError`. Costs a few
        small requests per write, and writing into an existing array (or on a
        store whose keys are not written whole) one small write per block.
        ``compute=False`` returns the lazy write as a dask array, as without
        ``resume``; computing it finishes the write.
    **create_array_kwargs
        Passed to :func:`zarrdask.create_array` when the array is created
        (``chunks`` defaults to ``x``'s block shape, at least 1 along a
        zero-length axis, as zarr-python chooses there; ``dtype`` to ``x``'s dtype).
        ``chunks="dask"``: the chunks are ``x``'s blocks as they are — a
        rectilinear chunk grid when they are irregular (an axis whose blocks are
        equal but for a smaller last one stays a regular step), so nothing is
        rechunked and each chunk is written by one task; ``shards="dask"``: the
        blocks become the shards (each a multiple of ``chunks``);
        ``chunk_grid="rectilinear"`` without ``chunks`` does what ``chunks="dask"``
        does and stores even regular blocks as a rectilinear grid. A rectilinear
        array needs a reader that knows the extension (zarrdask, zarr-python ≥ 3.4
        with ``array.rectilinear_chunks`` on, zarrs); see :doc:`/rectilinear`.

        A keyword ``create_array`` does not take is a ``TypeError`` in every mode.
        Writing into an existing array, ``write_empty_chunks`` applies; ``chunks``,
        ``shards``, ``dtype``, ``fill_value``, ``order``, ``zarr_format``,
        ``dimension_names`` and ``chunk_grid`` must match the array, and the other
        creation keywords (codecs, ``attributes``, key encoding) cannot be given
        (:class:`~zarrdask.errors.ArrayMismatchError`, a ``ValueError``).

    Returns
    -------
    The target :class:`~zarrdask.Array` when ``compute=True``; the dask array of
    stored values with ``return_stored=True``; else the lazy write (into an
    icechunk session through forks, a ``Delayed`` that computes to a
    :class:`~zarrdask.storage.icechunk.PendingMerge`: see Notes).

    Raises
    ------
    UnknownChunkSizesError
        ``x`` has unknown (NaN) chunk sizes (a ``ValueError``).
    TypeError
        An unknown keyword.
    ValueError
        A mode, ``overwrite``, ``region`` or keyword that does not fit the target
        (:class:`~zarrdask.errors.ArrayMismatchError` for keywords that describe
        another array than the existing one).
    zarrdask.errors.ReadOnlyError
        The store is read-only (a read-only icechunk session, for one); nothing is written.
    zarrdask.errors.IcechunkSessionError
        An icechunk session that icechunk cannot fork (1.x: it has uncommitted
        changes), written from other processes; nothing is written.

    Notes
    -----
    Concurrent writers: this is the safe way to write one array from many
    threads, processes or machines. Every shard (chunk, when unsharded) is
    written by exactly one task; only a ``region`` whose edges cut through
    shards makes the edge tasks read-modify-write, which is safe across
    processes on a ``LocalStore`` only — keep separate jobs' regions on shard
    boundaries (``align="error"`` checks the dask blocks, not the region's
    edges). See :ref:`concurrent-writes`.

    icechunk sessions (:mod:`zarrdask.dask.sessions`): on the threaded or
    synchronous scheduler with ``compute=True`` the tasks write through the
    session. Otherwise (a ``distributed`` cluster, the processes scheduler, or
    ``compute=False``) the session is forked before anything is written, each
    task writes through its own copy of the fork and returns it, and exactly
    the copies returned by the tasks that succeeded are merged into the
    session: before ``to_zarr`` returns, or, with ``compute=False``, when the
    lazy write's value reaches the process holding the session
    (``dask.compute``, ``.compute()``, ``client.compute(...).result()``). The
    new array's metadata is in the session when ``to_zarr`` returns. icechunk
    1.x forks only a session without uncommitted changes: commit between such
    writes (or write on the threaded scheduler). The user commits afterwards.
    """
    check_names(create_array_kwargs)
    if align not in _ALIGN:
        raise ValueError(f"align must be one of {_ALIGN}, found {align!r}")
    if not isinstance(x, da.Array):
        x = da.asarray(x)
    _check_known_chunks(x)
    if name is not None and path:
        raise TypeError("give the array's location as name= or path=, not both")
    path = normalize_path(name if name is not None else path)
    store = _open_if_array(store, create_array_kwargs.get("write_empty_chunks"))
    mode = resolve_mode(mode, overwrite, into_array=isinstance(store, Array))
    kwargs = {k: v for k, v in (store_kwargs or {}).items() if k not in ("lock", "flush")}
    if resume:
        return _write_resumable(x, store, path, mode, region, align, compute, return_stored, storage_options,
                                kwargs, create_array_kwargs)
    store, path, forks = _destination(x, store, path, mode, region, storage_options, compute, return_stored, kwargs)
    target = _target(x, store, path, mode, region, None, create_array_kwargs)
    region_slices, x = place_blocks(x, target, region, align, new=mode in ("w", "w-"))
    if forks is not None:
        forks.add(x, target, region_slices)
        lazy = forks.finish()
        if not compute:
            return lazy
        forks.compute(lazy, kwargs)
        return forks.in_session(target)
    stored = da.store(
        x,
        BlockTarget(target),
        regions=region_slices if region is not None else None,
        lock=False,
        compute=compute,
        return_stored=return_stored,
        **kwargs,
    )
    if compute:  # written by other processes too (a cluster): this process's cache drops the array's chunks
        invalidate_prefix(target.store, target.layout.prefix)
    return target if compute and not return_stored else stored


def _destination(x: da.Array, store: Any, path: str, mode: str, region: Any,
                 storage_options: dict[str, Any] | None, compute: bool, return_stored: bool,
                 kwargs: dict[str, Any]) -> tuple[Any, str, SessionForks | None]:
    """The open array or the store to write into (resolved, and checked writable
    before anything is written), the path in it, and the forks the write goes
    through when it is an icechunk session written from other processes
    (:mod:`zarrdask.dask.sessions`), with ``store`` then over the fork."""
    if isinstance(store, Array):
        home = store.store
    else:
        _check_region_mode(region, mode)
        store, path = resolve_store(store, path, mode, storage_options)
        home = store
    if not home.writable:
        raise ReadOnlyError(f"to_zarr: {home!r} is read-only; writing needs a writable store")
    forks = session_forks(home, compute=compute, scheduler=kwargs.get("scheduler"), collections=[x])
    if forks is None:
        return store, path, None
    if return_stored:
        raise ValueError(
            f"return_stored=True cannot be used when writing into {home!r} from other processes: the tasks "
            "write through forks of the session, which holds the values only once they are merged; read "
            "them back with zarrdask.from_zarr after the write (or commit and read a read-only session)"
        )
    return (forks.bind(store) if isinstance(store, Array) else forks.store), path, forks


def place_blocks(x: da.Array, target: Array, region: Any, align: str, new: bool) -> tuple[tuple[slice, ...], da.Array]:
    """The region of ``target`` that ``x`` goes to, and ``x`` aligned with its
    shards (chunks) there (per ``align``)."""
    region_slices = _region(region, target.shape)
    want = tuple(s.stop - s.start for s in region_slices)
    if tuple(x.shape) != want:
        raise SelectionError(
            f"array {target.name!r}: the dask array's shape {x.shape} does not match the "
            f"region's shape {want}"
        )
    if region is not None:
        _warn_region_edges(target, region_slices)
    return region_slices, _aligned(x, target, tuple(s.start for s in region_slices), align, new=new)


def _write_resumable(
    x: da.Array, store: Any, path: str, mode: str, region: Any, align: str, compute: bool, return_stored: bool,
    storage_options: dict[str, Any] | None, compute_kwargs: dict[str, Any], kwargs: dict[str, Any],
) -> Any:
    """:func:`to_zarr` with ``resume=True``: the write as
    :class:`~zarrdask.dask.resume.ResumableWrite` runs it."""
    check_resumable(store)
    resolved, where = (store.store, store.path) if isinstance(store, Array) else \
        resolve_store(store, path, mode, storage_options)
    job = ResumableWrite(resolved, record_id("array", where, region=repr(region)), f"array {node_name(where)!r}")
    existing = None
    if not job.plan.get("created"):  # not an array this write recorded creating: as without resume
        existing, resolved, where = _existing(x, store, path, mode, region, storage_options, kwargs)
    create = _create_kwargs(x, kwargs) if existing is None else {}
    preview = existing if existing is not None else create_array(MemoryStore(), path=where, shape=x.shape, **create)
    if existing is None and job.found is None and mode != "w":
        check_free(resolved, where, preview.zarr_format)
    region_slices, aligned = place_blocks(x, preview, region, align, new=existing is None)
    start = tuple(s.start for s in region_slices)
    metadata = preview.metadata.to_json()
    identity = {"arrays": [array_identity(where, tokenize(x), metadata, preview.attrs.asdict(), region_slices)]}
    job.check(identity, {"created": existing is None})
    if existing is None:
        made = job.setup(lambda: create_array(resolved, path=where, shape=x.shape, **create), [where], mode == "w")
        target = made if made is not None else job.target(where, metadata, kwargs.get("write_empty_chunks"))
    else:
        job.setup(lambda: None, [], replace=False)
        target = existing
    written, keys = job.tasks(aligned, target, start, 0, created=existing is None)
    final = job.finish_array([written], keys)
    if return_stored:
        stored = stored_array(target, aligned.chunks, start, None if compute else final)
        if compute:
            dask.compute(final, **compute_kwargs)
            invalidate_prefix(target.store, target.layout.prefix)
        return stored
    if compute:
        dask.compute(final, **compute_kwargs)
        invalidate_prefix(target.store, target.layout.prefix)
        return target
    return final


def _check_known_chunks(x: da.Array) -> None:
    axes = [i for i, dim in enumerate(x.chunks) if any(math.isnan(c) for c in dim)]
    if axes:
        raise UnknownChunkSizesError(
            f"cannot write a dask array with unknown chunk sizes: found NaN sizes along axis "
            f"{', '.join(map(str, axes))} (shape {x.shape}), expected integers, so where each block goes "
            "in the Zarr array is not known. Call x.compute_chunk_sizes() first"
        )


def _warn_region_edges(target: Array, region: tuple[slice, ...]) -> None:
    """A :class:`~zarrdask.errors.RegionEdgeWarning` when ``region``'s edges
    cut through the array's shards (chunks), as dask warns for such regions."""
    unit = target.shards or target.chunks
    cut = [d for d, (r, u, n) in enumerate(zip(region, unit, target.shape))
           if not Units(u).on_boundary(r.start) or not (Units(u).on_boundary(r.stop) or r.stop == n)]
    if cut:
        kind = "shards" if target.shards else "chunks"
        warn(
            f"array {target.name!r}: the region {_region_text(region)} starts or ends inside {kind} of shape "
            f"{_short_unit(unit)} along axis {', '.join(map(str, cut))}: the edge {kind} are read, merged and "
            "written back by the task that writes them, which is safe within this write but not against another "
            "job writing the neighbouring region at the same time. Write regions on multiples of the "
            f"{kind} to avoid it",
            RegionEdgeWarning,
        )


def _region_text(region: tuple[slice, ...]) -> str:
    return "(" + ", ".join(f"{r.start}:{r.stop}" for r in region) + ")"


def align_blocks(x: da.Array, target: Array, region: tuple[slice, ...], align: str = "auto") -> da.Array:
    """``x`` with blocks aligned to the storage units of the existing array
    ``target`` for a write into ``region`` (slices with step 1): rechunked as
    ``align`` says (``"auto"``: with an :class:`~zarrdask.errors.AlignmentWarning`,
    ``"rechunk"``: silently, ``"error"``: :class:`AlignmentError`), as
    :func:`to_zarr` aligns them."""
    if align not in _ALIGN:
        raise ValueError(f"align must be one of {_ALIGN}, found {align!r}")
    return _aligned(x, target, tuple(r.start for r in region), align, new=False)


def _aligned(x: da.Array, target: Array, start: tuple[int, ...], align: str, new: bool) -> da.Array:
    """``x``, rechunked (per ``align``) so that no two blocks write the same stored object."""
    unit = target.shards or target.chunks
    if is_aligned(x.chunks, unit, start):
        return x
    bad = misaligned_blocks(x.chunks, unit, start)
    fixed = aligned_chunks(x.chunks, unit, start)
    kind = "shards" if target.shards else "chunks"
    if align == "error":
        raise AlignmentError(
            f"array {target.name!r}: dask blocks {bad} (and maybe more) cut through {kind} of "
            f"shape {unit}, so two tasks would write the same stored object. Rechunk first, "
            f"e.g. x.rechunk({_short(fixed)}), or pass align='auto'"
        )
    if align == "auto":
        warn(_rechunk_message(target, x, fixed, unit, kind, bad, new), AlignmentWarning)
    return x.rechunk(fixed)


def _rechunk_message(target: Array, x: da.Array, fixed: tuple, unit: tuple, kind: str, bad: list, new: bool
                     ) -> str:
    """The AlignmentWarning's message. Its second sentence is in dask's own words
    ("The input Dask array will be rechunked along axis", and "The array uses
    irregular chunk sizes" when the blocks are), so that warning filters written
    for dask's ``to_zarr`` apply to it too."""
    axes = " and axis ".join(str(i) for i, (a, b) in enumerate(zip(x.chunks, fixed)) if a != b)
    irregular = not all(_regular(dim) for dim in x.chunks)
    lead = "The array uses irregular chunk sizes: the input" if irregular else "The input"
    hint = (" or, for a new array, chunks='dask' to store the blocks as they are (a rectilinear "
            "chunk grid)," if new else "")
    return (
        f"array {target.name!r}: rechunking the dask array from {_short(x.chunks)} to {_short(fixed)} so that "
        f"each of its {kind} of shape {_short_unit(unit)} is written by one task (dask blocks {bad} cut through "
        f"{kind}). {lead} Dask array will be rechunked along axis {axes}; rechunk first to avoid the extra "
        f"step,{hint} or pass align='rechunk' to do this without a warning"
    )


def _short_unit(unit: tuple) -> Any:
    return unit if all(isinstance(u, int) for u in unit) else _short(unit)


def _regular(sizes: tuple[int, ...]) -> bool:
    """Whether blocks of these sizes along an axis are equal, the last one no larger."""
    return len(sizes) <= 1 or (len(set(sizes[:-1])) == 1 and sizes[-1] <= sizes[0])


def block_grid(x: da.Array) -> tuple:
    """``x``'s blocks as per-axis chunks: an ``int`` where the blocks are regular
    (equal, the last one no larger), else the tuple of block sizes. Empty blocks
    (boolean indexing leaves them) hold nothing and make no chunk."""
    out: list[Any] = []
    for dim in x.chunks:
        sizes = tuple(int(c) for c in dim if c) or (0,)
        out.append(max(sizes[0], 1) if _regular(sizes) else sizes)
    return tuple(out)


def _short(chunks: tuple[tuple[int, ...], ...]) -> str:
    """Chunks as dask prints them, shortened for messages."""
    parts = []
    for dim in chunks:
        sizes = set(dim[:-1])
        parts.append(str(dim[0]) if len(sizes) <= 1 and (len(dim) == 1 or dim[-1] <= dim[0]) else str(dim))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _open_if_array(store: Any, write_empty_chunks: bool | None) -> Any:
    """``store``, or the zarrdask Array a zarr-python ``Array`` opens as; an open
    Array reopened when ``write_empty_chunks`` asks for another setting."""
    location = zarr_python_location(store)
    if location is not None and location.node_type == "array":
        return open_array(store, mode="r+", write_empty_chunks=write_empty_chunks)
    if isinstance(store, Array) and write_empty_chunks is not None and write_empty_chunks != store.write_empty_chunks:
        store._check_writable()
        return open_array(store.store, path=store.path, mode="r+", write_empty_chunks=write_empty_chunks)
    return store


def _block_keywords(x: da.Array, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``chunks="dask"`` / ``shards="dask"`` (and a rectilinear
    ``chunk_grid`` without chunks) replaced by ``x``'s blocks."""
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("shards"), str) and kwargs["shards"] == "dask":
        kwargs["shards"] = block_grid(x)
        if kwargs.get("chunks") is None or kwargs.get("chunks") == "dask":
            raise ValueError("shards='dask' takes the inner chunk shape as chunks= (a divisor of every block)")
    elif isinstance(kwargs.get("chunks"), str) and kwargs["chunks"] == "dask":
        kwargs["chunks"] = block_grid(x)
    elif kwargs.get("chunk_grid") == "rectilinear" and kwargs.get("chunks") is None and kwargs.get("shards") is None:
        kwargs["chunks"] = block_grid(x)  # asked for a rectilinear grid: the blocks, no rechunk
    return kwargs


def _target(
    x: da.Array, store: Any, path: str, mode: str, region: Any,
    storage_options: dict[str, Any] | None, kwargs: dict[str, Any],
) -> Array:
    existing, resolved, path = _existing(x, store, path, mode, region, storage_options, kwargs)
    if existing is not None:
        return existing
    return create_array(resolved, path=path, shape=x.shape, overwrite=mode == "w", **_create_kwargs(x, kwargs))


def _check_region_mode(region: Any, mode: str) -> None:
    if region is not None and mode in ("w", "w-"):
        raise ValueError(f"region= writes into an existing array: use mode 'a' or 'r+' (found mode {mode!r}, "
                         "which creates one)")


def _existing(
    x: da.Array, store: Any, path: str, mode: str, region: Any,
    storage_options: dict[str, Any] | None, kwargs: dict[str, Any],
) -> tuple[Array | None, Any, str]:
    """The existing array the write goes into (``None``: the write creates one),
    and the store and path of the target."""
    if isinstance(store, Array):
        if mode not in ("a", "r+") or path:
            raise ValueError(
                f"writing into the existing array {store.name!r} takes mode 'a' or 'r+' and no path "
                f"(found mode={mode!r}, path={path!r})"
            )
        store._check_writable()
        check_existing(store, _block_keywords(x, kwargs), mode)
        return store, store.store, store.path
    _check_region_mode(region, mode)
    resolved, path = resolve_store(store, path, mode, storage_options)
    if mode in ("a", "r+"):
        try:
            array = open_array(resolved, path=path, mode="r+", write_empty_chunks=kwargs.get("write_empty_chunks"))
        except KeyError:
            if mode == "r+":
                raise
        else:
            check_existing(array, _block_keywords(x, kwargs), mode)
            return array, resolved, path
    if region is not None:
        raise ValueError(f"region= writes into an existing array, and there is none at '/{path}' (mode 'a')")
    return None, resolved, path


def _create_kwargs(x: da.Array, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keywords :func:`zarrdask.create_array` creates the target with."""
    kwargs = _block_keywords(x, kwargs)
    # a zero-length axis has chunks of 1, as zarr-python (and dask's to_zarr) choose there
    kwargs.setdefault("chunks", tuple(max(int(c), 1) for c in x.chunksize))
    kwargs.setdefault("dtype", x.dtype)
    return kwargs
