"""One Dataset written into one Zarr group: checked in full first, then written.

:class:`DatasetWrite` does the work of :func:`zarrdask.xarray.to_zarr` for one
group. :meth:`DatasetWrite.prepare` reads the group (if there is one), checks
every variable against it and against the call, and works out each variable's
write; it writes nothing, so a refused write leaves the store as it was.
:meth:`DatasetWrite.commit` then creates (or replaces) the group and its
arrays, writes the numpy-backed variables and returns the dask writes, one
task per shard (per chunk when unsharded). A DataTree write prepares every
group before it commits any.

The layout is the one xarray's own zarr engine writes (see
:mod:`zarrdask.xarray.encoding`), so ``engine="zarr"`` and ``engine="zarrdask"``
read the result identically.
"""

from __future__ import annotations

import warnings
from typing import Any, Hashable, Mapping

import dask.array as da
import numpy as np
import xarray as xr
from xarray import conventions
from xarray.backends.zarr import encode_zarr_attr_value
from xarray.core.variable import Variable

from ..core.api import check_create_array, open_group
from ..core.array import Array
from ..core.group import Group
from ..core.nodes import node_name, prepare_node
from ..dask import aligned_chunks, is_aligned, misaligned_blocks
from ..dask import to_zarr as dask_to_zarr
from ..dask.alignment import Units
from ..dask.sessions import SessionForks
from ..dask.writer import align_blocks
from ..errors import GroupNotFoundError, RegionEdgeWarning
from ..storage.abc import Store
from ..storage.keys import join_path
from .backend import array_variable, dims_and_attrs
from .encoding import (
    array_name,
    check_name,
    creation_arguments,
    encode_like_existing,
    encode_new,
    variable_name,
    with_encodings,
)
from .regions import resolve_region


class VariableWrite:
    """One variable's write: the array (existing, or to create), the region of
    it the variable's values go to, and a resize for appends."""

    def __init__(self, name: str, variable: Variable, region: tuple[slice, ...], *,
                 array: Array | None = None, create: dict[str, Any] | None = None,
                 new_shape: tuple[int, ...] | None = None) -> None:
        self.name, self.variable, self.region = name, variable, region
        self.array, self.create, self.new_shape = array, create, new_shape

    def target(self, group: Group, write_empty_chunks: bool | None) -> Array:
        """The array to write into, created or resized now."""
        if self.create is not None:
            kwargs = dict(self.create)
            if write_empty_chunks is not None:
                kwargs["write_empty_chunks"] = write_empty_chunks
            return group.create_array(self.name, **kwargs)
        assert self.array is not None
        if self.new_shape is not None:
            self.array.resize(self.new_shape)
        if write_empty_chunks is not None and write_empty_chunks != self.array.write_empty_chunks:
            return Array(self.array.store, self.array.path, self.array.metadata, dict(self.array.attrs),
                         write_empty_chunks=write_empty_chunks)
        return self.array


class DatasetWrite:
    """The write of ``ds`` into the group at ``path`` of ``store``, with the
    keywords of :func:`zarrdask.xarray.to_zarr` (``mode`` already resolved)."""

    def __init__(self, ds: xr.Dataset, store: Store, path: str, *, mode: str,
                 encoding: Mapping[Hashable, Any] | None = None, zarr_format: int, append_dim: Hashable | None = None,
                 region: Any = None, safe_chunks: bool = False, align_chunks: bool = False,
                 write_empty_chunks: bool | None = None) -> None:
        self.ds, self.store, self.path, self.mode = ds, store, path, mode
        self.encoding = dict(encoding or {})
        self.zarr_format, self.append_dim, self.region = zarr_format, append_dim, region
        self.safe_chunks, self.align_chunks = safe_chunks, align_chunks
        self.write_empty_chunks = write_empty_chunks
        self.group: Group | None = None
        self.writes: list[VariableWrite] = []
        self.attributes: dict[str, Any] = {}
        self.recorded: Mapping[str, Any] = {}

    @property
    def where(self) -> str:
        return node_name(self.path)

    # -- checks: nothing is written ----------------------------------------------------
    def prepare(self, recorded: Mapping[str, Any] | None = None) -> "DatasetWrite":
        """Check everything against the store and the call; plan each variable's write.

        ``recorded``: what the record of an unfinished resumable write says of
        the store before it (:mod:`zarrdask.xarray.dataset_resume`): the groups
        and arrays it creates (planned as new, though they exist by now) and the
        shapes of arrays before an append (planned from them).
        """
        for name in self.ds.variables:
            check_name(name)
        self.recorded = recorded or {}
        self.group = self._existing_group()
        fmt = self.group.zarr_format if self.group is not None else self.zarr_format
        members = dict(self.group.members()) if self.group is not None else {}
        created = set(self.recorded.get("arrays created", ()))
        members = {n: a for n, a in members.items() if join_path(self.path, n) not in created}
        existing = {variable_name(n): a for n, a in members.items() if isinstance(a, Array)}
        ds = self.ds
        region = resolve_region(self.region, ds, self.mode, self.append_dim,
                                lambda dim: _stored_coordinate(existing, dim))
        if region is not None:
            ds = ds.drop_vars(list(ds.indexes))  # index coordinates locate a region; they are not rewritten
        self._check_encoding_of_existing(existing)
        variables, attributes = conventions.encode_dataset_coordinates(ds)
        variables = with_encodings(dict(variables), self.encoding)
        self._check_names_against_store(variables, existing, members)
        old = {k: v for k, v in variables.items() if k in existing}
        encoded = {k: encode_new(v, k, fmt) for k, v in variables.items() if k not in existing}
        encoded.update(encode_like_existing(old, existing, fmt))
        self.writes = [
            self._plan(name, v, existing.get(name), fmt, region or {})
            for name, v in encoded.items()
            if not (self.mode == "a-" and name in existing and self.append_dim is not None
                    and self.append_dim not in v.dims)
        ]
        self.attributes = {k: encode_zarr_attr_value(v) for k, v in attributes.items()}
        return self

    def _existing_group(self) -> Group | None:
        """The group to write into, or ``None`` when it is to be created (checking,
        for ``"w-"``, that nothing is there)."""
        if self.mode == "w" or self.path in self.recorded.get("groups created", ()):
            return None
        if self.mode == "w-":
            prepare_node(self.store, self.path, self.zarr_format, overwrite=False, kind="a dataset's group")
            return None
        try:
            return open_group(self.store, path=self.path, mode="r+", consolidated=False)
        except GroupNotFoundError:
            if self.mode == "r+":
                raise
            return None

    def _check_encoding_of_existing(self, existing: Mapping[Hashable, Array]) -> None:
        if self.mode in ("a", "a-", "r+"):
            named = [k for k in self.encoding if k in existing]
            if named:
                raise ValueError(
                    f"variables {named!r} already exist in group {self.where!r}, but encoding was provided for "
                    "them; an existing variable keeps its stored encoding (drop them from encoding=)"
                )
        if self.write_empty_chunks is not None:
            for k, enc in self.encoding.items():
                if isinstance(enc, Mapping) and enc.get("write_empty_chunks", self.write_empty_chunks) \
                        != self.write_empty_chunks:
                    raise ValueError(
                        f"variable {k!r}: differing write_empty_chunks values in encoding "
                        f"({enc['write_empty_chunks']!r}) and parameters ({self.write_empty_chunks!r})"
                    )

    def _check_names_against_store(self, variables: Mapping[Hashable, Variable],
                                   existing: Mapping[Hashable, Array], members: Mapping[str, Any]) -> None:
        if self.mode == "r+":
            new = [k for k in variables if k not in existing]
            if new:
                raise ValueError(
                    f"mode='r+' writes into existing arrays only, but {new!r} are not in group "
                    f"{self.where!r}; use mode='a' to add variables"
                )
        if self.append_dim is not None:
            known = {d for a in existing.values() for d in dims_and_attrs(a)[0]}
            if self.append_dim not in known:
                raise ValueError(
                    f"append_dim={self.append_dim!r} does not match any existing dimension of the arrays in "
                    f"group {self.where!r} (found {sorted(map(str, known))!r})"
                )
        taken = [k for k in variables if k not in existing and array_name(k) in members]
        if taken:
            raise ValueError(f"group {self.where!r} has groups named {taken!r}; a variable cannot replace a group")

    def _plan(self, name: Hashable, v: Variable, array: Array | None, fmt: int,
              region: dict[Hashable, slice]) -> VariableWrite:
        """Check one encoded variable against its stored array (if any) and work
        out its write: a region, a resize for appends, or the array to create.
        With ``safe_chunks``, dask blocks (and ``"r+"`` regions) that cut through
        the storage units are refused here, before anything is written."""
        if array is not None:
            return self._plan_existing(name, v, array, region)
        create = creation_arguments(name, v, fmt, strict=name in self.encoding)
        check_create_array(f"variable {name!r}", **create)
        slices = tuple(slice(0, n) for n in v.shape)
        chunks, shards = create["chunks"], create.get("shards")
        if self.safe_chunks and isinstance(chunks, tuple):
            unit = tuple(int(s) if isinstance(s, (int, np.integer)) else tuple(s) for s in shards) \
                if shards is not None else chunks
            self._check_safe_chunks(name, v, unit, slices, v.shape, "shards" if shards is not None else "chunks")
        return VariableWrite(array_name(name), v, slices, create=create)

    def _plan_existing(self, name: Hashable, v: Variable, array: Array,
                       region: dict[Hashable, slice]) -> VariableWrite:
        dims = v.dims
        where = {d: region.get(d, slice(None)) for d in dims}
        new_shape = None
        if self.append_dim is not None and self.append_dim in dims:
            axis = dims.index(self.append_dim)
            old = tuple(self.recorded.get("shapes before", {}).get(array.path, array.shape))
            if old[:axis] + old[axis + 1:] != v.shape[:axis] + v.shape[axis + 1:]:
                raise ValueError(
                    f"variable {name!r}: appending shape {v.shape} along {self.append_dim!r} to the stored shape "
                    f"{old} needs every other dimension to match"
                )
            where[self.append_dim] = slice(old[axis], old[axis] + v.shape[axis])
            new_shape = old[:axis] + (old[axis] + v.shape[axis],) + old[axis + 1:]
        shape = new_shape or array.shape
        bounds = tuple(where[d].indices(n)[:2] for d, n in zip(dims, shape))
        want = tuple(stop - start for start, stop in bounds)
        if want != v.shape:
            raise ValueError(
                f"variable {name!r} already exists with shape {array.shape} and has shape {v.shape} in the dataset; "
                f"its region of the stored array has shape {want}. to_zarr changes sizes only along append_dim; "
                "to write a part of the stored array, use region="
            )
        slices = tuple(slice(a, b) for a, b in bounds)
        if self.safe_chunks:
            unit = array.shards or array.chunks
            self._check_safe_chunks(name, v, unit, slices, shape, "shards" if array.shards else "chunks")
        return VariableWrite(array_name(name), v, slices, array=array, new_shape=new_shape)

    def _check_safe_chunks(self, name: Hashable, v: Variable, unit: tuple, region: tuple[slice, ...],
                           shape: tuple[int, ...], kind: str) -> None:
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
        if self.mode == "r+":
            for dim, r, u, n in zip(v.dims, region, unit, shape):
                units = Units(u)
                if not units.on_boundary(r.start) or (not units.on_boundary(r.stop) and r.stop != n):
                    raise ValueError(
                        f"variable {name!r}: the region {dim}={r} starts or ends inside one of the array's "
                        f"{kind} (size {u} along {dim!r}); with mode='r+' and safe_chunks=True that is refused, "
                        "as another writer of the neighbouring region would write the same stored object. "
                        f"Write regions aligned to multiples of {u}, or pass safe_chunks=False"
                    )

    # -- the write ----------------------------------------------------------------------
    def commit(self, forks: SessionForks | None = None) -> list[Any]:
        """Create (or replace) the group and its arrays and write the numpy-backed
        variables; return the dask writes (``dask.delayed`` objects) still to compute.
        With ``forks`` (an icechunk write from other processes; the store is its
        template) the dask writes are added to ``forks`` instead, which merges them."""
        pending = []
        align = "rechunk" if self.align_chunks else "auto"
        for write, target in self.make():
            data = write.variable.data
            with warnings.catch_warnings():  # xarray's rules for regions are safe_chunks' (checked above)
                warnings.simplefilter("ignore", RegionEdgeWarning)
                if forks is not None:
                    forks.add(align_blocks(data, target, write.region, align), target, write.region)
                else:
                    pending.append(dask_to_zarr(data, target, mode="r+", region=write.region, compute=False,
                                                align=align))
        return pending

    def make(self, replace: bool | None = None) -> list[tuple[VariableWrite, Array]]:
        """Create the group (replacing it in mode ``"w"``, unless ``replace`` is
        ``False``: a resumable write cleared it itself) and its arrays, resize the
        appended ones and write the numpy-backed variables; return the writes of
        the dask-backed variables with their target arrays."""
        group = self.group
        if group is None:
            replace = self.mode == "w" if replace is None else replace
            group = open_group(self.store, path=self.path, mode="w" if replace else "w-",
                               zarr_format=self.zarr_format, attributes=self.attributes)
        elif self.mode != "r+":
            group.attrs.put(self.attributes)
        out = []
        for write in self.writes:
            target = write.target(group, self.write_empty_chunks)
            if isinstance(write.variable.data, da.Array):
                out.append((write, target))
            else:
                target[write.region] = np.asarray(write.variable.data)
        return out


def _stored_coordinate(existing: Mapping[Hashable, Array], dim: Hashable) -> Variable | None:
    if dim not in existing:
        return None
    return conventions.decode_cf_variable(dim, array_variable(existing[dim]))
