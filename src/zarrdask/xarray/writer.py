"""Writing xarray Datasets, DataArrays and DataTrees as Zarr groups with zarrdask.

The layout is the one xarray's own zarr engine writes, so ``engine="zarr"`` and
``engine="zarrdask"`` read the result identically:

- every variable (data variables and coordinates) is an array of the group,
  CF-encoded by xarray's encoders (``xarray.backends.zarr.encode_zarr_variable``:
  times and timedeltas, ``scale_factor``/``add_offset``, ``_FillValue``,
  ``dtype``, strings, the ``coordinates`` attribute);
- dimension names are the ``_ARRAY_DIMENSIONS`` attribute in Zarr v2 and the
  array's ``dimension_names`` in Zarr v3;
- the fill value follows xarray: in v2 the CF ``_FillValue`` becomes the array's
  ``fill_value``; in v3 ``_FillValue`` stays a (JSON-encoded) attribute and the
  array's ``fill_value`` comes from ``encoding["fill_value"]`` (NaN for floats);
- the Dataset's attributes are the group's; a DataTree's groups are its nodes.

Dask-backed variables are written by :func:`zarrdask.dask.to_zarr`, which gives
each shard (each chunk, when unsharded) to exactly one task: dask chunks that
cut through shards are rechunked to the minimal shard-aligned chunking first.
Every group of a write is checked before any is written
(:mod:`zarrdask.xarray.dataset_write`).
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping

import dask
import xarray as xr

from ..core.api import open_group, resolve_store
from ..core.consolidated import consolidate_metadata
from ..core.group import Group
from ..dask.sessions import session_forks
from ..errors import ReadOnlyError
from ..storage import MemoryStore
from ..storage.abc import Store
from ..storage.keys import join_path, normalize_path
from ..storage.zarr_python import zarr_python_location
from .. import config
from ..dask.write_record import check_resumable
from .dataset_resume import resumable_write
from .dataset_write import DatasetWrite
from .regions import resolve_mode

#: the variable name xarray's convention gives a DataArray written as a Dataset
#: without a usable name, and the attribute that keeps its real name
DATAARRAY_VARIABLE = "__xarray_dataarray_variable__"
DATAARRAY_NAME = "__xarray_dataarray_name__"


def to_zarr(
    obj: xr.Dataset | xr.DataArray | xr.DataTree,
    store: Any = None,
    mode: str | None = None,
    group: str | None = None,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    *,
    compute: bool = True,
    consolidated: bool | None = None,
    append_dim: Hashable | None = None,
    region: Mapping[Hashable, Any] | str | None = None,
    safe_chunks: bool | None = None,
    align_chunks: bool | None = None,
    storage_options: dict[str, Any] | None = None,
    zarr_format: int | None = None,
    write_empty_chunks: bool | None = None,
    chunkmanager_store_kwargs: dict[str, Any] | None = None,
    write_inherited_coords: bool = False,
    resume: bool = False,
) -> Any:
    """Write a Dataset, DataArray or DataTree to a Zarr group, as xarray's
    ``Dataset.to_zarr``, ``DataArray.to_zarr`` and ``DataTree.to_zarr`` do
    (same keywords, same meaning, errors of the same types; see below where
    zarrdask is stricter).

    Parameters
    ----------
    obj : xarray.Dataset, xarray.DataArray or xarray.DataTree
        What to write. Dask-backed variables are written in parallel, one task per
        shard (per chunk when unsharded). A DataArray is written as the Dataset
        xarray writes for it (an unnamed one as ``__xarray_dataarray_variable__``),
        which ``xr.open_dataarray`` reads back. A DataTree is written one group per
        node, every group checked before any is written.
    store : Store, str, path or mapping, optional
        Where: anything :func:`zarrdask.open_group` accepts (a local path, a
        ``.zip`` path, an fsspec URL, a zarrdask or zarr-python store or group,
        a mapping, an icechunk ``Session`` or its ``store``); ``None`` is a new
        in-memory store. Into an icechunk session, dask-backed variables are
        written as :func:`zarrdask.dask.to_zarr` writes them: through the
        session on the threaded scheduler, through forks merged back into it
        on a cluster (icechunk 1.x forks only a session without uncommitted
        changes); the caller commits.
    mode : {"w-", "w", "a", "a-", "r+"}, optional
        ``"w-"`` creates, failing if the group exists; ``"w"`` creates,
        replacing it; ``"a"`` adds or overwrites variables (and appends along
        ``append_dim``); ``"a-"`` is ``"a"`` but with ``append_dim`` leaves the
        existing variables without that dimension alone; ``"r+"`` writes into
        existing variables only (``region``). The default is ``"a"`` with
        ``append_dim`` or when ``store`` is a group object, ``"r+"`` with
        ``region`` and ``"w-"`` otherwise. For a DataTree, ``"w"`` replaces the
        whole tree under ``group``.
    group : str, optional
        The group's path inside the store (default: the root).
    encoding : dict, optional
        For a DataTree, per group path: ``{"/": {...}, "/child": {...}}``, each
        as for a Dataset. Per variable: ``{"name": {"chunks": ..., "shards": ..., "compressors": ...,
        "filters": ..., "serializer": ..., "dtype": ..., "_FillValue": ...,
        "scale_factor": ..., "add_offset": ..., "units": ..., "calendar": ...,
        "fill_value": ... (v3), "chunk_key_encoding": ..., "write_empty_chunks":
        ...}}``. The ``encoding`` engine="zarrdask" (or engine="zarr") gives a
        variable is accepted as it is; keys of it that no longer fit (``chunks``
        of another rank after ``isel``) are dropped, as xarray drops them.
        Unknown keys, and ``chunks`` of the wrong rank, for a variable named here
        are an error; so is an entry for a variable that already exists in
        modes ``"a"``, ``"a-"`` and ``"r+"`` (it keeps its stored encoding).
        ``"chunks"`` may list edge lengths per dimension (``((31, 28, 31), 180)``)
        or be ``"dask"`` (the variable's dask blocks as they are): irregular
        chunks make a rectilinear chunk grid, written with no rechunk (see
        :doc:`/rectilinear`); ``"shards": "dask"`` makes the blocks the shards.
    compute : bool
        ``False``: write the metadata (and numpy-backed variables) now and
        return a ``dask.delayed`` that writes the dask-backed variables (into
        an icechunk session with dask variables, one that computes to a
        :class:`~zarrdask.storage.icechunk.PendingMerge`, which merges the
        tasks' forks into the session when the computed value reaches the
        process holding the session).
    consolidated : bool or None
        Write consolidated metadata at the store's root after the metadata:
        ``None`` (default) and ``True`` do, unless the store says it does not
        support it (``supports_consolidated_metadata = False``); ``False`` does not.
    append_dim : str, optional
        Append along this dimension of the existing group. Fixed-length strings
        and bytes are appended only at their stored length: longer ones would be
        cut, so they are refused (``ValueError``) before anything is written.
        Times go in with the stored units and calendar (``noleap`` too). For a
        DataTree, the groups without this dimension are rewritten (left alone
        with ``mode="a-"``).
    region : dict or "auto", optional
        ``{dim: slice(start, stop)}`` (or ``"auto"`` per dimension, or for all of
        them) of the existing arrays to write into; every variable must have at
        least one of these dimensions (``{}``: every variable is written whole).
        Index coordinates are not written: they locate the region.
    safe_chunks : bool, optional
        ``True``: refuse (``ValueError`` naming the variable, its dask chunks and
        the fix) a dask variable whose blocks cut through the array's shards
        (chunks when unsharded), and in mode ``"r+"`` a region whose edges cut
        through them, as xarray does. ``None`` (default) or ``False``: zarrdask
        rechunks such a variable to the minimal aligned chunking, with an
        :class:`~zarrdask.errors.AlignmentWarning`, so no two tasks ever write
        one stored object (unlike xarray, ``False`` never allows unsafe writes).
    align_chunks : bool, optional
        ``True``: rechunk misaligned dask variables without a warning (and
        without the ``safe_chunks`` refusal), as xarray's ``align_chunks`` does.
    storage_options : dict, optional
        Passed to fsspec for URLs.
    zarr_format : {2, 3}, optional
        The format of a new group (default: the ``default_zarr_format`` setting
        of :mod:`zarrdask.config`, 3 unless changed; an existing group keeps its own).
    write_empty_chunks : bool, optional
        Store chunks equal to the fill value (default: don't).
    chunkmanager_store_kwargs : dict, optional
        Passed to the dask computation of the writes (``scheduler=``,
        ``num_workers=``, ``retries=`` on a distributed cluster, ...). ``lock``
        and ``flush`` are accepted and have nothing to do: no two tasks share a
        stored object.
    write_inherited_coords : bool
        DataTree only: write the coordinates a group inherits from its parents
        into it too (so it opens alone with them); by default only the group
        that defines a coordinate stores it.
    resume : bool
        ``True``: the write can be finished after its process, its cluster or
        its machine died — run the same call again with ``resume=True`` and only
        the dask blocks not recorded as written are computed and written; the
        groups and arrays it creates, the resizes of an append and the variables
        held in memory are made once (again only if the setup itself was cut
        short). The write keeps a record under ``.zarrdask-writes/`` at the
        store's root while it runs and removes it when it completes
        (:mod:`zarrdask.xarray.dataset_resume`). A resume with other data or
        settings is a :class:`~zarrdask.errors.WriteRecordMismatchError`; a zip
        store, and an append the store already holds (or whose ``append_dim``
        has no index coordinate to tell), a
        :class:`~zarrdask.errors.ResumeRefusedError`.

    Returns
    -------
    zarrdask.Group or dask.delayed.Delayed
        The group written (the tree's root group; ``compute=True``), or the
        pending writes.

    Raises
    ------
    TypeError
        A variable name that is neither a ``str`` nor ``None``, a chunk size that
        is not an ``int``, a region that is not a dict of slices, an unknown keyword.
    KeyError
        ``encoding`` names a variable the dataset does not have; ``region="auto"``
        with values the stored coordinate does not hold.
    ValueError
        Everything else the write cannot do as asked (modes, shapes, dtypes).
    zarrdask.errors.ReadOnlyError
        The store is read-only (a read-only icechunk session, for one); nothing is written.
    zarrdask.errors.IcechunkSessionError
        Dask variables written from other processes (a cluster) into an
        icechunk session icechunk cannot fork (1.x: it has uncommitted
        changes); nothing is written.

    Notes
    -----
    Concurrent writers: every shard (chunk, when unsharded) of a dask-backed
    variable is written by exactly one task, on any scheduler. Separate jobs
    writing regions (``region``) of one store are safe when the regions' edges fall on
    shard boundaries (``safe_chunks=True`` refuses edges that do not, in mode
    ``"r+"``); otherwise the edge shards are read-modify-written, which is
    safe across processes on a local directory only. Two jobs appending
    (``append_dim``) to one store at once lose data. See
    :ref:`concurrent-writes`.
    """
    if isinstance(obj, xr.DataArray):
        obj = dataarray_as_dataset(obj)
    if not isinstance(obj, (xr.Dataset, xr.DataTree)):
        raise TypeError(f"to_zarr writes an xarray Dataset, DataArray or DataTree, found {type(obj).__name__}")
    if mode is None and append_dim is None and region is None and _is_group_object(store):
        mode = "a"  # the variables go into the group given, which exists
    mode = resolve_mode(mode, append_dim, region)
    if zarr_format not in (None, 2, 3):
        raise ValueError(f"zarr_format must be 2 or 3, found {zarr_format!r}")
    if resume:
        check_resumable(store)
    resolved, base = _resolve_target(store, mode, storage_options)
    if not resolved.writable:
        raise ReadOnlyError(f"to_zarr: {resolved!r} is read-only; writing needs a writable store")
    kwargs = {k: v for k, v in (chunkmanager_store_kwargs or {}).items() if k not in ("lock", "flush")}
    lazy = _dask_arrays(obj)
    forks = session_forks(resolved, compute=compute, scheduler=kwargs.get("scheduler"), collections=lazy) \
        if lazy else None
    target = forks.store if forks is not None else resolved  # an icechunk session's writes go through its fork
    path = normalize_path(join_path(base, normalize_path(group)))
    options = dict(mode=mode, zarr_format=zarr_format or config.get("default_zarr_format"), append_dim=append_dim,
                   region=region, safe_chunks=bool(safe_chunks) and not align_chunks,
                   align_chunks=bool(align_chunks), write_empty_chunks=write_empty_chunks)
    if isinstance(obj, xr.DataTree):
        writes = _tree_writes(obj, target, path, encoding, write_inherited_coords, options)
    else:
        writes = [DatasetWrite(obj, target, path, encoding=encoding, **options)]
    consolidate = consolidated is not False and mode != "r+" and getattr(target, "supports_consolidated_metadata",
                                                                            True)
    if resume:  # never through forks: check_resumable refuses icechunk sessions
        pending = resumable_write(writes, resolved, path, append_dim=append_dim, region=region,
                                  consolidate=consolidate, replace=mode == "w")
    else:
        for write in writes:  # every group checked before any is written
            write.prepare()
        pending = [task for write in writes for task in write.commit(forks)]
        if consolidate:
            consolidate_metadata(target)  # at the store's root, as xarray does, so every group is listed
    if forks is not None:
        merge = forks.finish()
        if not compute:
            return merge
        forks.compute(merge, kwargs)
    elif not compute:
        return dask.delayed(_flush)(pending, resolved)
    elif pending:
        dask.compute(*pending, **kwargs)
    resolved.flush()
    return open_group(resolved, path=path, mode="r+" if resolved.writable else "r")


def dataarray_as_dataset(array: xr.DataArray) -> xr.Dataset:
    """The Dataset a DataArray is written as, in xarray's convention: its own
    name, or ``__xarray_dataarray_variable__`` when it has none or its name is
    also a coordinate's or dimension's (the real name then kept in the
    ``__xarray_dataarray_name__`` attribute), so that ``xr.open_dataarray``
    reads it back."""
    if array.name is None:
        return array.to_dataset(name=DATAARRAY_VARIABLE)
    if array.name in array.coords or array.name in array.dims:
        ds = array.to_dataset(name=DATAARRAY_VARIABLE)
        ds.attrs[DATAARRAY_NAME] = array.name
        return ds
    return array.to_dataset()


def _tree_writes(tree: xr.DataTree, store: Store, root: str, encoding: Mapping[str, Any] | None,
                 write_inherited_coords: bool, options: dict[str, Any]) -> list[DatasetWrite]:
    """One :class:`DatasetWrite` per node of ``tree``, the root first (its mode
    ``"w"`` replaces the whole tree), every node at its path under ``root``."""
    encoding = dict(encoding or {})
    unknown = sorted(set(encoding) - set(tree.groups))
    if unknown:
        raise ValueError(
            f"encoding names groups that are not in the tree: {unknown!r} (its groups: {list(tree.groups)!r}); "
            "encoding for a DataTree is {group path: {variable: {...}}}"
        )
    writes = []
    for node in tree.subtree:
        at_root = node is tree
        ds = node.to_dataset(inherit=write_inherited_coords or at_root)
        rel = "" if at_root else node.relative_to(tree)
        node_options = dict(options)
        append_dim = options["append_dim"]
        if append_dim is not None and append_dim not in ds.dims:
            if options["mode"] == "a-":
                continue  # nothing of this group has the dimension: left as it is
            node_options["append_dim"] = None  # its variables are rewritten, as in a Dataset append
        writes.append(DatasetWrite(ds, store, join_path(root, rel), encoding=encoding.get(node.path), **node_options))
    return writes


def _dask_arrays(obj: xr.Dataset | xr.DataTree) -> list[Any]:
    """The dask arrays behind ``obj``'s variables (every node's, for a tree)."""
    datasets = [node.dataset for node in obj.subtree] if isinstance(obj, xr.DataTree) else [obj]
    return [v.data for ds in datasets for v in ds.variables.values() if dask.is_dask_collection(v.data)]


def _flush(_: Any, store: Store) -> None:
    """Once the dask writes are done: make them complete for other readers."""
    store.flush()


def _is_group_object(store: Any) -> bool:
    location = zarr_python_location(store)
    return isinstance(store, Group) or (location is not None and location.node_type == "group")


def _resolve_target(store: Any, mode: str, storage_options: dict[str, Any] | None) -> tuple[Store, str]:
    """The store to write into and the path inside it that ``store`` points at
    (a zarrdask or zarr-python group is its store at its path; ``None`` is a new
    in-memory store)."""
    if store is None:
        return MemoryStore(), ""
    if isinstance(store, Group):
        return store.store, store.path
    return resolve_store(store, "", "r+" if mode in ("a", "a-", "r+") else "w", storage_options)
