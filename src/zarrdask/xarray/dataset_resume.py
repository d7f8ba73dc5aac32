"""The Dataset writer with ``resume=True``: one write record for the whole call
(docs/guarantees.md, "Resumable writes"; the layout written is xarray's, see
:mod:`zarrdask.xarray.writer`).

:func:`zarrdask.xarray.to_zarr` with ``resume=True`` runs its
:class:`~zarrdask.xarray.dataset_write.DatasetWrite` objects (one per group)
through a :class:`~zarrdask.dask.resume.ResumableWrite`
(:mod:`zarrdask.dask.resume`, :mod:`zarrdask.dask.write_record`):

- the record's *plan* keeps what the store looked like before the write — the
  groups and arrays it creates, the shapes of the arrays it appends to — so a
  resume plans the same write although those groups and arrays exist by now,
  and an append killed after its resize appends into the region it recorded,
  neither twice nor around holes;
- the *identity* is every variable's data (its dask token, or a hash of its
  values), its target array's metadata, region and append, and the groups'
  attributes: a resume that differs is refused before anything is written;
- the *setup* creates the groups and arrays, resizes the appended ones, writes
  the variables held in memory and consolidates the metadata; then one task
  per dask block not recorded as written, and the record is removed.

A finished write keeps no record, so a finished append looks like a new one:
with ``resume=True``, an append whose values along ``append_dim`` (its index
coordinate) are already the last ones stored is refused
(:class:`~zarrdask.errors.ResumeRefusedError`), and an append without such a
coordinate cannot be told apart from a new one and is refused too.
"""

from __future__ import annotations

import warnings
from typing import Any, Hashable

import dask.array as da
import numpy as np
import pandas as pd
from dask.base import tokenize
from xarray import conventions

from ..core.api import create_array
from ..core.consolidated import consolidate_metadata
from ..core.nodes import node_name
from ..dask.resume import ResumableWrite
from ..dask.write_record import array_identity, record_id
from ..dask.writer import place_blocks
from ..errors import RegionEdgeWarning, ResumeRefusedError
from ..storage import MemoryStore
from ..storage.abc import Store
from ..storage.keys import join_path
from .backend import array_variable
from .dataset_write import DatasetWrite, VariableWrite
from .encoding import array_name

__all__ = ["resumable_write"]


def resumable_write(writes: list[DatasetWrite], store: Store, path: str, *, append_dim: Hashable | None,
                    region: Any, consolidate: bool, replace: bool) -> list[Any]:
    """Prepare, check and set up ``writes`` as one resumable write; return the
    pending dask write (a one-element dask array: the unfinished blocks, then the record's removal)."""
    job = ResumableWrite(store, record_id("dataset", path, append_dim=repr(append_dim), region=repr(region)),
                         f"group {node_name(path)!r}")
    for write in writes:  # every group checked before any is written
        write.prepare(job.plan or None)
    if job.found is None and append_dim is not None:
        for write in writes:
            _refuse_finished_append(write)
    planned = [(w, v, _expected(w, v, job.plan)) for w in writes for v in w.writes]
    job.check(_identity(planned), _plan(writes))

    def make() -> None:
        for write in writes:
            write.make(replace=False)
        if consolidate:
            consolidate_metadata(store)  # at the store's root, as xarray does

    job.setup(make, [*job.plan["groups created"], *job.plan["arrays created"]], replace)
    written: list[Any] = []
    keys: list[Any] = []
    dask_writes = [(w, v, meta) for w, v, (meta, _) in planned if isinstance(v.variable.data, da.Array)]
    for n, (write, variable_write, metadata) in enumerate(dask_writes):
        target = job.target(join_path(write.path, variable_write.name), metadata, write.write_empty_chunks)
        with warnings.catch_warnings():  # xarray's rules for regions are safe_chunks' (checked in prepare)
            warnings.simplefilter("ignore", RegionEdgeWarning)
            region_slices, aligned = place_blocks(variable_write.variable.data, target, variable_write.region,
                                                  "rechunk" if write.align_chunks else "auto", new=False)
        array, array_keys = job.tasks(aligned, target, tuple(s.start for s in region_slices), n,
                                      created=variable_write.create is not None)
        written.append(array)
        keys.extend(array_keys)
    return [job.finish_array(written, keys)]


def _expected(write: DatasetWrite, v: VariableWrite, plan: dict[str, Any]) -> tuple[dict[str, Any], dict]:
    """The metadata document of ``v``'s array once the setup is done, and its identity."""
    path = join_path(write.path, v.name)
    if v.create is not None:
        preview = create_array(MemoryStore(), path=path, **v.create)
        metadata, attributes, before = preview.metadata.to_json(), preview.attrs.asdict(), None
    else:
        assert v.array is not None
        metadata, attributes = v.array.metadata.to_json(), v.array.attrs.asdict()
        before = tuple(plan.get("shapes before", {}).get(path, v.array.shape))
        metadata = dict(metadata, shape=list(v.new_shape or before))
    append = None if v.new_shape is None else {"new shape": list(v.new_shape)}
    identity = array_identity(path, tokenize(v.variable.data), metadata, attributes, v.region,
                              shape=before, append=append)
    return metadata, identity


def _identity(planned: list[tuple[DatasetWrite, VariableWrite, tuple[dict, dict]]]) -> dict[str, Any]:
    groups = {w.path: w for w, _, _ in planned}
    return {
        "groups": [{"path": p, "attributes": w.attributes} for p, w in sorted(groups.items())],
        "arrays": [identity for _, _, (_, identity) in planned],
    }


def _plan(writes: list[DatasetWrite]) -> dict[str, Any]:
    """What the store holds before the write, as far as a resume must know it."""
    groups = [w.path for w in writes if w.group is None]
    arrays = [join_path(w.path, v.name) for w in writes if w.group is not None for v in w.writes
              if v.create is not None]
    before = {}
    for w in writes:
        for v in w.writes:
            if v.array is not None and v.new_shape is not None:
                before[v.array.path] = list(w.recorded.get("shapes before", {}).get(v.array.path, v.array.shape))
    return {"groups created": groups, "arrays created": arrays, "shapes before": before}


def _refuse_finished_append(write: DatasetWrite) -> None:
    """Refuse an append with ``resume=True`` and no record when the store holds
    it already (or cannot tell: no index coordinate along ``append_dim``)."""
    dim = write.append_dim
    if dim is None or not any(v.new_shape is not None for v in write.writes):
        return
    where = f"group {node_name(write.path)!r}"
    if dim not in write.ds.indexes:
        raise ResumeRefusedError(
            f"{where}: resume=True with append_dim={dim!r} needs an index coordinate {dim!r}: a finished "
            "write keeps no record, and only the coordinate's stored values tell a finished append from a new "
            "one. Give the dataset a coordinate along it, or append without resume=True"
        )
    assert write.group is not None
    stored = conventions.decode_cf_variable(dim, array_variable(write.group[array_name(dim)]))
    new = write.ds.indexes[dim]
    tail = pd.Index(np.asarray(stored.values)[max(0, stored.shape[0] - len(new)):])
    if len(new) and tail.equals(new):
        raise ResumeRefusedError(
            f"{where}: the stored coordinate {dim!r} already ends with the {len(new)} values this call appends "
            f"({new[0]} ... {new[-1]}), and there is no record of an unfinished write: the append finished "
            "earlier (a finished write keeps no record). Nothing was written"
        )
