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

from typing import Any

import dask.array as da

from .._pool import single_threaded
from ..core.api import create_array, open_array, resolve_store
from ..core.array import Array
from ..errors import AlignmentWarning, SelectionError, ZarrdaskError, warn
from ..indexing import normalize_selection
from ..storage.keys import normalize_path
from ..storage.zarr_python import zarr_python_location
from .alignment import aligned_chunks, is_aligned, misaligned_blocks

_ALIGN = ("auto", "rechunk", "error")


class AlignmentError(ZarrdaskError, ValueError):
    """Dask blocks cut through shards (or chunks) and ``align="error"`` was asked."""


class BlockTarget:
    """What ``dask.array.store`` writes into: one zarrdask array."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self.ndim = array.ndim

    def __setitem__(self, selection: Any, value: Any) -> None:
        with single_threaded():
            self.array.set_basic_selection(selection, value)

    def __dask_tokenize__(self) -> Any:
        return ("zarrdask.BlockTarget", self.array.__dask_tokenize__())


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
    mode: str = "w-",
    region: Any = None,
    compute: bool = True,
    align: str = "auto",
    storage_options: dict[str, Any] | None = None,
    store_kwargs: dict[str, Any] | None = None,
    **create_array_kwargs: Any,
) -> Any:
    """Write the dask array ``x`` into a Zarr array.

    Parameters
    ----------
    x
        A dask array (anything else goes through ``dask.array.asarray``).
    store, path
        Where: a store, a local path or a URL (or a zarr-python store or
        ``Group``), and the array's path inside it; or an open
        :class:`~zarrdask.Array` or zarr-python ``Array`` (with mode ``"a"``/``"r+"``).
    mode
        ``"w-"`` (default): create the array, failing if one exists; ``"w"``:
        create it, replacing what is there; ``"a"``: write into the existing
        array, creating it if missing; ``"r+"``: write into the existing array.
    region
        A tuple of slices (step 1) of the target array to write ``x`` into; the
        default is the whole array. Only with an existing array (``"a"``/``"r+"``).
    compute
        ``False``: return a ``dask.delayed`` that writes when computed (the array's
        metadata is created now; no chunk is written before then).
    align
        ``"auto"``: rechunk ``x`` to the minimal chunking whose blocks cover whole
        shards (whole chunks when unsharded), with an
        :class:`~zarrdask.errors.AlignmentWarning` saying so; ``"rechunk"``: the
        same without the warning; ``"error"``: raise :class:`AlignmentError`
        naming the offending blocks.
    store_kwargs
        Passed on to ``dask.array.store`` (for example ``scheduler=``, used when
        ``compute=True``). ``lock`` is ignored: no two tasks share a stored object.
    **create_array_kwargs
        Passed to :func:`zarrdask.create_array` when the array is created
        (``chunks`` defaults to ``x``'s block shape, ``dtype`` to ``x``'s dtype).
        ``chunks="dask"``: the chunks are ``x``'s blocks as they are — a
        rectilinear chunk grid when they are irregular (an axis whose blocks are
        equal but for a smaller last one stays a regular step), so nothing is
        rechunked and each chunk is written by one task; ``shards="dask"``: the
        blocks become the shards (each a multiple of ``chunks``);
        ``chunk_grid="rectilinear"`` without ``chunks`` does what ``chunks="dask"``
        does and stores even regular blocks as a rectilinear grid. A rectilinear
        array needs a reader that knows the extension (zarrdask, zarr-python ≥ 3.4
        with ``array.rectilinear_chunks`` on, zarrs); see :doc:`/rectilinear`.

    Returns
    -------
    The target :class:`~zarrdask.Array` when ``compute=True``, else the delayed write.

    Notes
    -----
    Concurrent writers: this is the safe way to write one array from many
    threads, processes or machines. Every shard (chunk, when unsharded) is
    written by exactly one task; only a ``region`` whose edges cut through
    shards makes the edge tasks read-modify-write, which is safe across
    processes on a ``LocalStore`` only — keep separate jobs' regions on shard
    boundaries (``align="error"`` checks the dask blocks, not the region's
    edges). See :ref:`concurrent-writes`.
    """
    if align not in _ALIGN:
        raise ValueError(f"align must be one of {_ALIGN}, found {align!r}")
    if not isinstance(x, da.Array):
        x = da.asarray(x)
    path = normalize_path(path)
    target = _target(x, store, path, mode, region, storage_options, create_array_kwargs)
    region_slices = _region(region, target.shape)
    want = tuple(s.stop - s.start for s in region_slices)
    if tuple(x.shape) != want:
        raise SelectionError(
            f"array {target.name!r}: the dask array's shape {x.shape} does not match the "
            f"region's shape {want}"
        )
    unit = target.shards or target.chunks
    start = tuple(s.start for s in region_slices)
    if not is_aligned(x.chunks, unit, start):
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
            hint = (" or, for a new array, chunks='dask' to store the blocks as they are (a rectilinear "
                    "chunk grid)," if mode in ("w", "w-") else "")
            warn(
                f"array {target.name!r}: rechunking the dask array from {_short(x.chunks)} to "
                f"{_short(fixed)} so that each of its {kind} of shape {_short_unit(unit)} is written by one "
                f"task (dask blocks {bad} cut through {kind}). Rechunk first to avoid the extra step,{hint} "
                "or pass align='rechunk' to do this without a warning",
                AlignmentWarning,
            )
        x = x.rechunk(fixed)
    kwargs = {k: v for k, v in (store_kwargs or {}).items() if k not in ("lock", "flush")}
    stored = da.store(
        x,
        BlockTarget(target),
        regions=region_slices if region is not None else None,
        lock=False,
        compute=compute,
        return_stored=False,
        **kwargs,
    )
    return target if compute else stored


def _short_unit(unit: tuple) -> Any:
    return unit if all(isinstance(u, int) for u in unit) else _short(unit)


def block_grid(x: da.Array) -> tuple:
    """``x``'s blocks as per-axis chunks: an ``int`` where the blocks are regular
    (equal, the last one no larger), else the tuple of block sizes."""
    out: list[Any] = []
    for dim in x.chunks:
        if len(dim) == 1 or (len(set(dim[:-1])) == 1 and dim[-1] <= dim[0]):
            out.append(max(int(dim[0]), 1))
        else:
            out.append(tuple(int(c) for c in dim))
    return tuple(out)


def _short(chunks: tuple[tuple[int, ...], ...]) -> str:
    """Chunks as dask prints them, shortened for messages."""
    parts = []
    for dim in chunks:
        sizes = set(dim[:-1])
        parts.append(str(dim[0]) if len(sizes) <= 1 and (len(dim) == 1 or dim[-1] <= dim[0]) else str(dim))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _target(
    x: da.Array, store: Any, path: str, mode: str, region: Any,
    storage_options: dict[str, Any] | None, kwargs: dict[str, Any],
) -> Array:
    if mode not in ("w", "w-", "a", "r+"):
        raise ValueError(f"mode must be 'w', 'w-', 'a' or 'r+', found {mode!r}")
    location = zarr_python_location(store)
    if location is not None and location.node_type == "array":
        store = open_array(store, mode="r+")  # a zarr-python array: as the zarrdask one it opens
    if isinstance(store, Array):
        if mode not in ("a", "r+") or path:
            raise ValueError(
                f"writing into the existing array {store.name!r} takes mode 'a' or 'r+' and no path "
                f"(found mode={mode!r}, path={path!r})"
            )
        store._check_writable()
        return store
    resolved, path = resolve_store(store, path, mode, storage_options)
    if mode in ("a", "r+"):
        try:
            return open_array(resolved, path=path, mode="r+")
        except KeyError:
            if mode == "r+":
                raise
    if region is not None:
        raise SelectionError("region= writes into an existing array: use mode='a' or 'r+'")
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("shards"), str) and kwargs["shards"] == "dask":
        kwargs["shards"] = block_grid(x)
        if kwargs.get("chunks") is None or kwargs.get("chunks") == "dask":
            raise ValueError("shards='dask' takes the inner chunk shape as chunks= (a divisor of every block)")
    elif isinstance(kwargs.get("chunks"), str) and kwargs["chunks"] == "dask":
        kwargs["chunks"] = block_grid(x)
    elif kwargs.get("chunk_grid") == "rectilinear" and kwargs.get("chunks") is None and kwargs.get("shards") is None:
        kwargs["chunks"] = block_grid(x)  # asked for a rectilinear grid: the blocks, no rechunk
    kwargs.setdefault("chunks", tuple(int(c) for c in x.chunksize))
    kwargs.setdefault("dtype", x.dtype)
    return create_array(resolved, path=path, shape=x.shape, overwrite=mode == "w", **kwargs)
