"""Writes into icechunk sessions on a ``distributed`` cluster of worker processes
(one cluster for the module): the session is forked, the tasks' forks merged
back exactly once, retried tasks leave no duplicate or lost chunk, and every
mode of the Dataset writer works; read-only sessions serve graphs on workers."""

from __future__ import annotations

import os

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import IcechunkSessionError
from zarrdask.storage import IcechunkSessionStore

from .conftest import fail_first_chunk_write, forks_sessions_with_changes, restore_set_many, snapshot_count

icechunk = pytest.importorskip("icechunk")
distributed = pytest.importorskip("distributed")


def _chunks(repo, path):
    """The stored objects of an array in the branch's last snapshot, as icechunk lists them."""
    session = repo.readonly_session("main")
    return sorted(zarrdask.open_array(session, path=path).stored_keys())


def test_dask_array_written_on_the_cluster_reads_back_exactly(client, repo):
    data = np.random.default_rng(0).random((60, 45)).astype("f4")
    session = repo.writable_session("main")
    array = zarrdask.to_zarr(da.from_array(data, chunks=(20, 15)), session, path="a/x", chunks=(10, 15),
                             shards=(20, 15))
    assert isinstance(array.store, IcechunkSessionStore) and array.store.session is not None
    np.testing.assert_array_equal(array[...], data)  # merged into the session before to_zarr returned
    session.commit("cluster")
    ro = repo.readonly_session("main")
    back = zarrdask.from_zarr(ro, path="a/x")  # the read-only session pickles: read on the workers
    np.testing.assert_array_equal(back.compute(), data)
    assert len(_chunks(repo, "a/x")) == 9

    session = repo.writable_session("main")  # into an open array: a region, edges inside shards
    target = zarrdask.open_array(session, path="a/x", mode="r+")
    with pytest.warns(zarrdask.errors.RegionEdgeWarning):
        zarrdask.to_zarr(da.zeros((25, 45), dtype="f4", chunks=(5, 15)), target, region=(slice(5, 30), slice(0, 45)),
                         align="rechunk")
    data[5:30] = 0
    np.testing.assert_array_equal(target[...], data)
    session.commit("region")
    np.testing.assert_array_equal(zarrdask.open_array(repo.readonly_session("main"), path="a/x")[...], data)


def test_lazy_write_merged_when_computed_on_the_cluster(client, repo):
    data = np.arange(1000, dtype="i8")
    session = repo.writable_session("main")
    lazy = zarrdask.to_zarr(da.from_array(data, chunks=100), session, path="x", chunks=(50,), compute=False)
    assert zarrdask.open_array(session, path="x").nchunks_initialized == 0
    dask.compute(lazy)  # the value comes back to this process, which merges it
    np.testing.assert_array_equal(zarrdask.open_array(session, path="x")[...], data)
    if not forks_sessions_with_changes():  # icechunk 1.x: merged, not committed, so no fork
        with pytest.raises(IcechunkSessionError, match="cannot fork"):
            zarrdask.to_zarr(da.from_array(data, chunks=100), session, path="z", compute=False)
    else:  # icechunk 2.x forks it: a second write before the commit
        zarrdask.to_zarr(da.from_array(data * 3, chunks=100), session, path="z", chunks=(100,))
        np.testing.assert_array_equal(zarrdask.open_array(session, path="z")[...], data * 3)
    session.commit("x")
    session = repo.writable_session("main")
    lazy = zarrdask.to_zarr(da.from_array(data + 1, chunks=500), session.store, path="y", chunks=(500,),
                            compute=False)
    client.compute(lazy).result()  # the same, through a future
    session.commit("y")
    ro = repo.readonly_session("main")
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="y")[...], data + 1)
    assert len(_chunks(repo, "x")) == 20


def _fail_first_attempt(block, marker, block_info=None):
    """Raise on the first attempt at block 1 (a marker file remembers it across processes)."""
    if block_info[0]["chunk-location"][0] == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("first attempt fails")
    return block


def test_retried_task_leaves_no_duplicate_or_lost_chunk(client, repo, tmp_path):
    data = np.arange(80, dtype="i4")
    session = repo.writable_session("main")
    x = da.from_array(data, chunks=10).map_blocks(_fail_first_attempt, str(tmp_path / "raised"), dtype="i4",
                                                   meta=np.array((), "i4"))
    zarrdask.to_zarr(x, session, path="x", chunks=(5,), fill_value=-1, store_kwargs={"retries": 1})
    assert os.path.exists(tmp_path / "raised")
    session.commit("x, retried")
    session = repo.writable_session("main")
    client.run(fail_first_chunk_write, str(tmp_path / "half-written"), "x/c/7")
    try:
        ds = xr.Dataset({"v": ("d", da.from_array(data * 3, chunks=20))})
        zarrdask.xarray.to_zarr(ds, session, group="g", mode="w", encoding={"v": {"chunks": (10,)}},
                                chunkmanager_store_kwargs={"retries": 1})
    finally:
        client.run(restore_set_many)
    assert os.path.exists(tmp_path / "half-written")
    session.commit("g, retried")
    ro = repo.readonly_session("main")
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="x")[...], data)
    assert _chunks(repo, "x") == sorted(f"x/c/{i}" for i in range(16))
    np.testing.assert_array_equal(xr.open_dataset(ro, engine="zarrdask", group="g").v.values, data * 3)
    assert zarrdask.open_array(ro, path="g/v").nchunks_initialized == 8


def test_dataset_writer_modes_on_the_cluster(client, repo):
    rng = np.random.default_rng(3)
    full = xr.Dataset(
        {"temp": (("time", "x"), rng.random((24, 6))), "mask": (("x",), np.arange(6) % 2 == 0)},
        coords={"time": np.arange(24), "x": np.arange(6) * 10.0}, attrs={"source": "test"},
    )
    session = repo.writable_session("main")
    zarrdask.xarray.to_zarr(full.isel(time=slice(0, 12)).chunk({"time": 4}), session, mode="w",
                            encoding={"temp": {"chunks": (4, 6)}})
    session.commit("w")
    session = repo.writable_session("main")
    zarrdask.xarray.to_zarr(full.isel(time=slice(12, 24)).chunk({"time": 4}), session, append_dim="time")
    session.commit("append_dim")
    session = repo.writable_session("main")
    zarrdask.xarray.to_zarr(full[["temp"]].rename(temp="extra").chunk({"time": 8}), session, mode="a")
    session.commit("a")
    ro = repo.readonly_session("main")
    back = xr.open_dataset(ro, engine="zarrdask", chunks={}).compute()
    xr.testing.assert_identical(back[["temp", "mask"]], full)
    np.testing.assert_array_equal(back.extra.values, full.temp.values)

    changed = full.temp.values.copy()
    changed[4:12] = -1
    changed[16:20] = -2
    session = repo.writable_session("main")
    patch = full[["temp"]].isel(time=slice(4, 12)).chunk({"time": 4}) * 0 - 1
    zarrdask.xarray.to_zarr(patch.drop_vars("x"), session, region={"time": slice(4, 12)})
    session.commit("region")
    session = repo.writable_session("main")
    patch = full[["temp"]].isel(time=slice(16, 20)).chunk({"time": 4}) * 0 - 2
    zarrdask.xarray.to_zarr(patch, session, region="auto")
    session.commit("region auto")
    assert snapshot_count(repo) == 6
    back = xr.open_dataset(repo.readonly_session("main"), engine="zarrdask").load()
    np.testing.assert_array_equal(back.temp.values, changed)
    np.testing.assert_array_equal(back.extra.values, full.temp.values)
    xr.testing.assert_identical(back.mask, full.mask)


def test_virtual_chunks_read_on_the_cluster(client, tmp_path):
    from .test_interop import _virtual_repository

    repo, ds = _virtual_repository(tmp_path)
    ro = repo.readonly_session("main")
    np.testing.assert_array_equal(zarrdask.from_zarr(ro, path="t", chunks=(2, 10)).compute(), ds.t.values)
