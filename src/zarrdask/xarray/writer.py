"""Writing xarray Datasets as Zarr groups with zarrdask.

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
- the Dataset's attributes are the group's.

Dask-backed variables are written by :func:`zarrdask.dask.to_zarr`, which gives
each shard (each chunk, when unsharded) to exactly one task: dask chunks that
cut through shards are rechunked to the minimal shard-aligned chunking first.
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping

import dask
import dask.array as da
import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends.zarr import FillValueCoder, encode_zarr_attr_value, encode_zarr_variable
from xarray.core.variable import Variable

from ..core.api import check_create_array, open_group, resolve_store
from ..core.array import Array
from ..core.consolidated import consolidate_metadata
from ..core.group import Group
from ..core.nodes import node_name, prepare_node
from ..dask import aligned_chunks, is_aligned, misaligned_blocks
from ..dask.alignment import Units
from ..dask.writer import block_grid
from ..dask import to_zarr as dask_to_zarr
from ..errors import GroupNotFoundError
from ..storage import MemoryStore
from ..storage.keys import normalize_path
from .backend import DIMENSION_KEY, array_variable, dims_and_attrs

_MODES = ("w", "w-", "a", "a-", "r+")
_SAFE_TO_DROP = {"source", "original_shape", "preferred_chunks"}
# encoding keys that configure the Zarr array (CF keys such as units, dtype,
# scale_factor or _FillValue are consumed by the CF encoding before this)
_ARRAY_ENCODINGS = {
    "chunks", "shards", "compressors", "compressor", "filters", "serializer",
    "write_empty_chunks", "chunk_key_encoding", "dimension_separator", "order",
}


def to_zarr(
    ds: xr.Dataset,
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
) -> Any:
    """Write a Dataset to a Zarr group, as xarray's ``Dataset.to_zarr`` does
    (same keywords, same meaning; see below where zarrdask is stricter).

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset. Dask-backed variables are written in parallel, one task per
        shard (per chunk when unsharded).
    store : Store, str, path or mapping, optional
        Where: anything :func:`zarrdask.open_group` accepts (a local path, a
        ``.zip`` path, an fsspec URL, a zarrdask or zarr-python store or group,
        a mapping); ``None`` is a new in-memory store.
    mode : {"w-", "w", "a", "a-", "r+"}, optional
        ``"w-"`` creates, failing if the group exists; ``"w"`` creates,
        replacing it; ``"a"`` adds or overwrites variables (and appends along
        ``append_dim``); ``"a-"`` is ``"a"`` but with ``append_dim`` leaves the
        existing variables without that dimension alone; ``"r+"`` writes into
        existing variables only (``region``). The default is ``"a"`` with
        ``append_dim`` or when ``store`` is a group object, ``"r+"`` with
        ``region`` and ``"w-"`` otherwise.
    group : str, optional
        The group's path inside the store (default: the root).
    encoding : dict, optional
        Per variable: ``{"name": {"chunks": ..., "shards": ..., "compressors": ...,
        "filters": ..., "serializer": ..., "dtype": ..., "_FillValue": ...,
        "scale_factor": ..., "add_offset": ..., "units": ..., "calendar": ...,
        "fill_value": ... (v3), "chunk_key_encoding": ..., "write_empty_chunks":
        ...}}``. The ``encoding`` engine="zarrdask" (or engine="zarr") gives a
        variable is accepted as it is. Unknown keys for a named variable are an error.
        ``"chunks"`` may list edge lengths per dimension (``((31, 28, 31), 180)``)
        or be ``"dask"`` (the variable's dask blocks as they are): irregular
        chunks make a rectilinear chunk grid, written with no rechunk (see
        :doc:`/rectilinear`); ``"shards": "dask"`` makes the blocks the shards.
    compute : bool
        ``False``: write the metadata (and numpy-backed variables) now and
        return a ``dask.delayed`` that writes the dask-backed variables.
    consolidated : bool or None
        Write consolidated metadata at the store's root after the metadata:
        ``None`` (default) and ``True`` do, unless the store says it does not
        support it (``supports_consolidated_metadata = False``); ``False`` does not.
    append_dim : str, optional
        Append along this dimension of the existing group.
    region : dict or "auto", optional
        ``{dim: slice(start, stop)}`` (or ``"auto"`` per dimension, or for all of
        them) of the existing arrays to write into; every variable must have at
        least one of these dimensions.
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
        The format of a new group (default 3; an existing one keeps its own).
    write_empty_chunks : bool, optional
        Store chunks equal to the fill value (default: don't).
    chunkmanager_store_kwargs : dict, optional
        Passed to the dask computation of the writes (``scheduler=``,
        ``num_workers=``, ...). ``lock`` and ``flush`` are accepted and have
        nothing to do: no two tasks share a stored object.

    Returns
    -------
    zarrdask.Group or dask.delayed.Delayed
        The group written (``compute=True``), or the pending writes.

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
    if mode is None and append_dim is None and region is None and _is_group_object(store):
        mode = "a"  # the variables go into the group given, which exists
    mode = _resolve_mode(mode, append_dim, region)
    if zarr_format not in (None, 2, 3):
        raise ValueError(f"zarr_format must be 2 or 3, found {zarr_format!r}")
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"to_zarr writes an xarray.Dataset, found {type(ds).__name__}")
    for name in ds.variables:
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"variable name {name!r} is not a valid Zarr array name (a non-empty str without '/')")
    if store is None:
        store = MemoryStore()
    resolved, base = _resolve_target(store, mode, storage_options)
    path = normalize_path("/".join(p for p in (base, normalize_path(group)) if p))
    # Nothing is written until every variable has been checked: the group is
    # created (or replaced, for mode "w") only then.
    root = _existing_group(resolved, path, mode, zarr_format or 3)
    fmt = root.zarr_format if root is not None else (zarr_format or 3)
    members = dict(root.members()) if root is not None else {}
    existing = {n: a for n, a in members.items() if isinstance(a, Array)}
    where = node_name(path)

    variables, attributes = conventions.encode_dataset_coordinates(ds)
    variables = dict(variables)
    encoding = dict(encoding or {})
    unknown = [k for k in encoding if k not in variables]
    if unknown:
        raise ValueError(f"encoding names variables that are not in the dataset: {unknown!r}")
    for k, enc in encoding.items():
        v = variables[k].copy(deep=False)
        v.encoding = dict(enc)
        variables[k] = v

    if mode == "r+":
        new = [k for k in variables if k not in existing]
        if new:
            raise ValueError(
                f"mode='r+' writes into existing arrays only, but {new!r} are not in group "
                f"{where!r}; use mode='a' to add variables"
            )
    write_region = _resolve_region(region, ds, existing, where)
    if append_dim is not None:
        known = {d for a in existing.values() for d in dims_and_attrs(a)[0]}
        if append_dim not in known:
            raise ValueError(
                f"append_dim={append_dim!r} is not a dimension of the arrays in group {where!r} "
                f"(found {sorted(known)!r})"
            )

    encoded = {k: encode_zarr_variable(v, name=k, zarr_format=fmt) for k, v in variables.items() if k not in existing}
    encoded.update(_encode_like_existing(variables, existing, fmt))

    # Check every variable against what is stored before anything is written.
    taken = [k for k in encoded if k not in existing and k in members]
    if taken:
        raise ValueError(f"group {where!r} has groups named {taken!r}; a variable cannot replace a group")
    plans = [
        _plan(name, v, existing.get(name), fmt, mode, append_dim, write_region, strict=name in encoding,
              safe_chunks=bool(safe_chunks) and not align_chunks)
        for name, v in encoded.items()
        if not (mode == "a-" and name in existing and append_dim not in v.dims)
    ]

    group_attrs = {k: encode_zarr_attr_value(v) for k, v in attributes.items()}
    if root is None:
        root = open_group(resolved, path=path, mode="w" if mode == "w" else "w-", zarr_format=fmt,
                          attributes=group_attrs)
    elif mode != "r+":
        root.attrs.put(group_attrs)
    pending = []
    for plan in plans:
        target = plan.materialize(root, write_empty_chunks)
        data = plan.variable.data
        if isinstance(data, da.Array):
            pending.append(dask_to_zarr(data, target, mode="r+", region=plan.region, compute=False,
                                        align="rechunk" if align_chunks else "auto"))
        else:
            target[plan.region] = np.asarray(data)

    if consolidated is not False and getattr(resolved, "supports_consolidated_metadata", True):
        consolidate_metadata(resolved)  # at the store's root, as xarray does, so every group is listed
    if not compute:
        return dask.delayed(_done)(pending)
    if pending:
        kwargs = {k: v for k, v in (chunkmanager_store_kwargs or {}).items() if k not in ("lock", "flush")}
        dask.compute(*pending, **kwargs)
    return open_group(resolved, path=path, mode="r+" if resolved.writable else "r")


def _done(_: Any) -> None:
    return None


def _is_group_object(store: Any) -> bool:
    from ..storage.zarr_python import zarr_python_location

    location = zarr_python_location(store)
    return isinstance(store, Group) or (location is not None and location.node_type == "group")


def _resolve_target(store: Any, mode: str, storage_options: dict[str, Any] | None) -> tuple[Any, str]:
    """The store to write into and the path inside it that ``store`` points at
    (a zarrdask or zarr-python group is its store at its path)."""
    if isinstance(store, Group):
        return store.store, store.path
    return resolve_store(store, "", "r+" if mode in ("a", "a-", "r+") else "w", storage_options)


def _resolve_mode(mode: str | None, append_dim: Any, region: Any) -> str:
    if append_dim is not None and region is not None:
        raise ValueError("give append_dim or region, not both")
    if mode is None:
        mode = "w-"
    if mode == "w-" and append_dim is not None:
        mode = "a"
    elif mode == "w-" and region is not None:
        mode = "r+"
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES!r}, found {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise ValueError(f"append_dim needs mode 'a' or 'a-', found {mode!r}")
    if region is not None and mode not in ("a", "r+"):
        raise ValueError(f"region needs mode 'r+' or 'a', found {mode!r}")
    return mode


def _existing_group(store: Any, path: str, mode: str, zarr_format: int) -> Group | None:
    """The group to write into, or ``None`` when it is to be created (checking,
    for ``"w-"``, that nothing is there)."""
    if mode == "w":
        return None
    if mode == "w-":
        prepare_node(store, path, zarr_format, overwrite=False, kind="a dataset's group")
        return None
    try:
        return open_group(store, path=path, mode="r+", consolidated=False)
    except GroupNotFoundError:
        if mode == "r+":
            raise
        return None


def _resolve_region(
    region: Any, ds: xr.Dataset, existing: dict[str, Array], where: str
) -> dict[Hashable, slice]:
    """``{dim: slice}`` for a region write (``"auto"`` looked up in the stored
    coordinate), checked against the dataset."""
    if region is None:
        return {}
    if region == "auto":
        region = {d: "auto" for d in ds.dims}
    if not isinstance(region, Mapping):
        raise TypeError(f"region must be a dict of dimension → slice or 'auto', found {type(region).__name__}")
    out: dict[Hashable, slice] = {}
    for dim, sel in region.items():
        if dim not in ds.dims:
            raise ValueError(f"region names dimension {dim!r}, which the dataset does not have (it has {list(ds.dims)!r})")
        if isinstance(sel, str) and sel == "auto":
            sel = _auto_region(dim, ds, existing, where)
        if not isinstance(sel, slice) or sel.step not in (None, 1):
            raise ValueError(f"region[{dim!r}] must be a slice with step 1 or 'auto', found {sel!r}")
        out[dim] = sel
    unrelated = [k for k, v in ds.variables.items() if not set(out).intersection(v.dims)]
    if unrelated:
        raise ValueError(
            f"variables {unrelated!r} have none of the region's dimensions {list(out)!r}, so a region "
            f"write would overwrite them whole; drop them first (ds.drop_vars({unrelated!r}))"
        )
    return out


def _auto_region(dim: Hashable, ds: xr.Dataset, existing: dict[str, Array], where: str) -> slice:
    import pandas as pd

    if dim not in ds.indexes:
        return slice(0, ds.sizes[dim])
    if dim not in existing:
        raise ValueError(f"region[{dim!r}]='auto' needs the coordinate {dim!r} in group {where!r}, but it is not stored")
    stored = conventions.decode_cf_variable(dim, array_variable(existing[dim]))
    positions = pd.Index(np.asarray(stored.values)).get_indexer(ds.indexes[dim])
    if (positions < 0).any():
        raise KeyError(f"region[{dim!r}]='auto': some of the dataset's {dim!r} values are not in the stored coordinate")
    if len(positions) and (np.diff(positions) != 1).any():
        raise ValueError(f"region[{dim!r}]='auto': the dataset's {dim!r} values are not a contiguous run of the stored ones")
    start = int(positions[0]) if len(positions) else 0
    return slice(start, start + len(positions))


def _encode_like_existing(
    variables: dict[Hashable, Variable], existing: dict[str, Array], fmt: int
) -> dict[Hashable, Variable]:
    """Variables that already have an array, encoded exactly as the stored ones
    (same units, dtype, scale, fill value), in the stored dimension order."""
    names = [k for k in variables if k in existing]
    if not names:
        return {}
    stored_vars, _, _ = conventions.decode_cf_variables(
        {k: array_variable(existing[k]) for k in names},
        {},
    )
    out = {}
    for k in names:
        new, old = variables[k], stored_vars[k]
        if new.dims != old.dims:
            if set(new.dims) != set(old.dims):
                raise ValueError(
                    f"variable {k!r} has dimensions {new.dims!r}, but the stored array has {old.dims!r}"
                )
            new = new.transpose(*old.dims)
        numeric = "biufcmM"
        if (new.dtype.kind in numeric) != (old.dtype.kind in numeric):
            raise ValueError(
                f"variable {k!r} of dtype {new.dtype} cannot be written into the stored array of dtype {old.dtype}"
            )
        new = new.copy(deep=False)
        new.encoding = dict(old.encoding)
        enc = encode_zarr_variable(new, name=k, zarr_format=fmt)
        stored_units = old.encoding.get("units")  # CF decoding moved the stored time units here
        if stored_units is not None and not _same_units(enc.attrs.get("units", stored_units), stored_units):
            raise ValueError(
                f"variable {k!r}: the new values cannot be encoded in the stored units {stored_units!r} "
                f"(they need {enc.attrs['units']!r}); writing them into the stored array would corrupt them. "
                "Rewrite the variable with units that fit every value (encoding={'units': ...})"
            )
        out[k] = enc
    return out


def _same_units(a: Any, b: Any) -> bool:
    """Whether two CF units strings mean the same (``"days since 2000-01-01"`` is
    ``"days since 2000-01-01 00:00:00"``)."""
    if a == b:
        return True
    if not (isinstance(a, str) and isinstance(b, str)) or " since " not in a or " since " not in b:
        return False
    import pandas as pd

    (ua, _, ra), (ub, _, rb) = a.partition(" since "), b.partition(" since ")
    try:
        return ua.strip().lower() == ub.strip().lower() and pd.Timestamp(ra.strip()) == pd.Timestamp(rb.strip())
    except (ValueError, TypeError):
        return False


class _Plan:
    """One variable's write: where it goes, and the array to create if new."""

    def __init__(self, name: str, variable: Variable, array: Array | None, region: tuple[slice, ...],
                 create: dict[str, Any] | None, new_shape: tuple[int, ...] | None) -> None:
        self.name, self.variable, self.array, self.region = name, variable, array, region
        self.create, self.new_shape = create, new_shape

    def materialize(self, root: Group, write_empty_chunks: bool | None) -> Array:
        if self.create is not None:
            kwargs = dict(self.create)
            if write_empty_chunks is not None:
                kwargs.setdefault("write_empty_chunks", write_empty_chunks)
            return root.create_array(self.name, **kwargs)
        assert self.array is not None
        if self.new_shape is not None:
            self.array.resize(self.new_shape)
        return self.array


def _plan(
    name: str, v: Variable, array: Array | None, fmt: int, mode: str, append_dim: Any,
    write_region: dict[Hashable, slice], strict: bool, safe_chunks: bool = False,
) -> _Plan:
    """Check one encoded variable against the stored array (if any) and work
    out its write: the region, a resize for appends, or the array to create.
    With ``safe_chunks``, dask blocks (and ``"r+"`` regions) that cut through
    the storage units are refused here, before anything is written."""
    attrs = dict(v.attrs)
    enc = dict(v.encoding)
    if fmt == 2:
        fill_value = attrs.pop("_FillValue", None)
    else:
        fill_value = enc.pop("fill_value", None)
        if fill_value is None and v.dtype.kind == "f":
            fill_value = np.nan  # as xarray: floats default to NaN, not Zarr's 0
        if "_FillValue" in attrs:
            fv = attrs.pop("_FillValue")
            if fv is not None:
                attrs["_FillValue"] = FillValueCoder.encode(fv, v.dtype)
    if enc.pop("_FillValue", None) is not None:
        raise ValueError(f"variable {name!r}: _FillValue in encoding was not consumed by the CF encoding")
    for k in _SAFE_TO_DROP:
        enc.pop(k, None)
    invalid = [k for k in enc if k not in _ARRAY_ENCODINGS]
    if strict and invalid:
        raise ValueError(
            f"variable {name!r}: unexpected encoding keys {invalid!r} (valid: the CF keys, and "
            f"{sorted(_ARRAY_ENCODINGS | ({'fill_value'} if fmt == 3 else set()))!r})"
        )
    enc = {k: val for k, val in enc.items() if k in _ARRAY_ENCODINGS}
    dims = v.dims

    if array is not None:  # an existing array: check the shapes now, write later
        region = {d: write_region.get(d, slice(None)) for d in dims}
        new_shape = None
        if append_dim is not None and append_dim in dims:
            axis = dims.index(append_dim)
            old = array.shape
            if old[:axis] + old[axis + 1:] != v.shape[:axis] + v.shape[axis + 1:]:
                raise ValueError(
                    f"variable {name!r}: appending shape {v.shape} along {append_dim!r} to the stored shape {old}"
                    " needs every other dimension to match"
                )
            region[append_dim] = slice(old[axis], old[axis] + v.shape[axis])
            new_shape = old[:axis] + (old[axis] + v.shape[axis],) + old[axis + 1:]
        shape = new_shape or array.shape
        slices = tuple(region[d].indices(n)[:2] for d, n in zip(dims, shape))
        want = tuple(stop - start for start, stop in slices)
        if want != v.shape:
            raise ValueError(
                f"variable {name!r} has shape {v.shape}, but its region of the stored array "
                f"(shape {shape}) has shape {want}"
            )
        region_slices = tuple(slice(a, b) for a, b in slices)
        if safe_chunks:
            _check_safe_chunks(name, v, array.shards or array.chunks, region_slices, shape, mode,
                               "shards" if array.shards else "chunks")
        return _Plan(name, v, array, region_slices, None, new_shape)

    chunks = _chunks(name, enc.pop("chunks", None), v)
    if isinstance(enc.get("shards"), str) and enc["shards"] == "dask" and isinstance(v.data, da.Array):
        enc["shards"] = block_grid(v.data)
    if "compressor" in enc:
        enc["compressors"] = enc.pop("compressor")
    encoded_attrs = {k: encode_zarr_attr_value(val) for k, val in attrs.items()}
    create: dict[str, Any] = dict(enc, shape=v.shape, dtype=_dtype(v.dtype), chunks=chunks,
                                  fill_value=fill_value, zarr_format=fmt)
    if fmt == 3:
        create["dimension_names"] = list(dims)
    else:
        encoded_attrs[DIMENSION_KEY] = list(dims)
    create["attributes"] = encoded_attrs
    check_create_array(f"variable {name!r}", **create)
    region_slices = tuple(slice(0, n) for n in v.shape)
    if safe_chunks and isinstance(chunks, tuple):
        shards = enc.get("shards")
        unit = tuple(int(s) if isinstance(s, (int, np.integer)) else tuple(s) for s in shards) \
            if shards is not None else chunks
        _check_safe_chunks(name, v, unit, region_slices, v.shape, mode, "shards" if shards is not None else "chunks")
    return _Plan(name, v, None, region_slices, create, None)


def _check_safe_chunks(
    name: str, v: Variable, unit: tuple[int, ...], region: tuple[slice, ...], shape: tuple[int, ...],
    mode: str, kind: str,
) -> None:
    """``safe_chunks=True``: refuse dask blocks that cut through a stored unit
    (and, in mode ``"r+"``, region edges that do), as xarray refuses them."""
    if not isinstance(v.data, da.Array):
        return
    start = tuple(r.start for r in region)
    if not is_aligned(v.data.chunks, unit, start):
        bad = misaligned_blocks(v.data.chunks, unit, start)
        fixed = aligned_chunks(v.data.chunks, unit, start)
        raise ValueError(
            f"variable {name!r}: its dask chunks {v.data.chunks} cut through the array's {kind} of shape "
            f"{unit} (blocks {bad}), and safe_chunks=True refuses writes where two tasks would write "
            f"one stored object. Rechunk first, e.g. ds[{name!r}].chunk({dict(zip(v.dims, fixed))}), pass "
            "align_chunks=True to let zarrdask rechunk it, or leave safe_chunks unset (zarrdask then "
            "rechunks with a warning)"
        )
    if mode == "r+":
        for dim, r, u, n in zip(v.dims, region, unit, shape):
            units = Units(u)
            if not units.on_boundary(r.start) or (not units.on_boundary(r.stop) and r.stop != n):
                raise ValueError(
                    f"variable {name!r}: the region {dim}={r} starts or ends inside one of the array's "
                    f"{kind} (size {u} along {dim!r}); with mode='r+' and safe_chunks=True that is refused, "
                    "as another writer of the neighbouring region would write the same stored object. "
                    f"Write regions aligned to multiples of {u}, or pass safe_chunks=False"
                )


def _dtype(dtype: np.dtype) -> Any:
    from xarray.coding.strings import check_vlen_dtype

    return str if check_vlen_dtype(dtype) is str else dtype


def _chunks(name: str, enc_chunks: Any, v: Variable) -> Any:
    """The chunk shape: ``encoding["chunks"]``, else the dask chunks (the first of
    each dimension; the writer aligns the rest), else chosen automatically."""
    if isinstance(enc_chunks, str) and enc_chunks == "dask":  # the dask blocks as they are
        if isinstance(v.data, da.Array):
            return block_grid(v.data)
        enc_chunks = None
    if enc_chunks is not None and enc_chunks != "auto":
        if isinstance(enc_chunks, (int, np.integer)):
            return (int(enc_chunks),) * v.ndim
        chunks = tuple(enc_chunks)
        ok = all(isinstance(c, (int, np.integer)) or (
            isinstance(c, (list, tuple)) and all(isinstance(e, (int, np.integer)) for e in c)) for c in chunks)
        if len(chunks) != v.ndim or not ok:
            raise ValueError(
                f"variable {name!r}: encoding['chunks'] must be an int, {v.ndim} ints, or {v.ndim} entries "
                f"that are ints or sequences of edge lengths (a rectilinear grid), or 'dask'; found {enc_chunks!r}"
            )
        return tuple(int(c) if isinstance(c, (int, np.integer)) else tuple(int(e) for e in c) for c in chunks)
    if v.chunks:
        return tuple(max(1, c[0]) for c in v.chunks)
    return "auto"
