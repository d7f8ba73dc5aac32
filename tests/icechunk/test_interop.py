"""Both directions: what zarr-python and xarray write into a session
zarrdask reads, and what zarrdask writes they read; virtual chunks
(VirtualiZarr → icechunk) read through zarrdask."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import zarrdask

icechunk = pytest.importorskip("icechunk")
zarr = pytest.importorskip("zarr")



def _local_access():
    """The credentials of a local virtual-chunk container: icechunk 2 names them
    (``None`` is deprecated there); icechunk 1 has only ``None``."""
    return getattr(icechunk.credentials, "LocalFileSystemAccess", None)

def test_zarrdask_reads_what_zarr_python_wrote(repo):
    session = repo.writable_session("main")
    data = np.arange(20 * 12, dtype="f8").reshape(20, 12)
    group = zarr.open_group(session.store, mode="w")
    group.create_array("plain", shape=data.shape, chunks=(5, 4), dtype="f8")[...] = data
    group.create_array("sharded", shape=data.shape, chunks=(5, 4), shards=(10, 12), dtype="f8")[...] = data
    session.commit("zarr-python")
    ro = repo.readonly_session("main")
    for name in ("plain", "sharded"):
        np.testing.assert_array_equal(zarrdask.open_array(ro, path=name)[...], data)
        np.testing.assert_array_equal(zarrdask.from_zarr(ro.store, path=name).compute(), data)
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="sharded")[3:17, 5:9], data[3:17, 5:9])
    # a zarr-python array of an icechunk store stands for itself
    np.testing.assert_array_equal(zarrdask.open_array(zarr.open_array(ro.store, path="plain"))[...], data)


def test_zarr_python_reads_what_zarrdask_wrote(repo):
    session = repo.writable_session("main")
    data = np.random.default_rng(1).integers(0, 1000, (30, 7)).astype("i4")
    zarrdask.create_array(session, path="s", shape=data.shape, chunks=(5, 7), shards=(15, 7),
                          dtype="i4", fill_value=-1)[...] = data
    zarrdask.to_zarr(zarrdask.from_zarr(session, path="s") * 2, session, path="d", chunks=(15, 7),
                     store_kwargs={"scheduler": "threads"})
    session.commit("zarrdask")
    ro = repo.readonly_session("main")
    np.testing.assert_array_equal(zarr.open_array(ro.store, path="s", mode="r")[...], data)
    np.testing.assert_array_equal(zarr.open_array(ro.store, path="d", mode="r")[...], data * 2)


def _dataset():
    rng = np.random.default_rng(2)
    return xr.Dataset(
        {"temp": (("time", "x"), rng.random((12, 5)).astype("f4"), {"units": "K"}),
         "flag": (("x",), np.arange(5, dtype="i1"))},
        coords={"time": np.arange(np.datetime64("2000-01-01"), np.datetime64("2000-01-13")), "x": np.arange(5) * 10},
        attrs={"title": "t"},
    )


def test_datasets_both_ways(repo):
    ds = _dataset()
    session = repo.writable_session("main")
    # (icechunk 1.1.21's own to_icechunk passes xarray >= 2026.x a keyword it no
    # longer takes; xarray's zarr engine writes into the session's store as well)
    ds.to_zarr(session.store, group="by_xarray", consolidated=False)
    zarrdask.xarray.to_zarr(ds.chunk({"time": 4}), session, group="by_zarrdask", mode="w")
    session.commit("both")
    ro = repo.readonly_session("main")
    for group in ("by_xarray", "by_zarrdask"):
        xr.testing.assert_identical(xr.open_dataset(ro, engine="zarrdask", group=group).load(), ds)
        xr.testing.assert_identical(xr.open_zarr(ro.store, group=group, consolidated=False).load(), ds)


def _virtual_repository(tmp_path):
    """A netCDF4 file referenced by a VirtualiZarr dataset committed to an
    icechunk repository whose virtual chunk container is the file's directory."""
    pytest.importorskip("h5netcdf")
    virtualizarr = pytest.importorskip("virtualizarr")
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr.parsers import HDFParser

    data_dir = tmp_path / "files"
    data_dir.mkdir()
    ds = xr.Dataset({"t": (("y", "x"), np.arange(60, dtype="f4").reshape(6, 10))}, coords={"y": np.arange(6)})
    ds.to_netcdf(data_dir / "data.nc", engine="h5netcdf", encoding={"t": {"chunksizes": (2, 10)}})
    prefix = f"file://{data_dir}/"
    vds = virtualizarr.open_virtual_dataset(f"{prefix}data.nc", registry=ObjectStoreRegistry({"file://": LocalStore()}),
                                            parser=HDFParser())
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(data_dir))))
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")), config=config,
                                      authorize_virtual_chunk_access={prefix: _local_access()})
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store)
    session.commit("virtual")
    return repo, ds


def test_virtual_chunks_read_through_zarrdask(tmp_path):
    repo, ds = _virtual_repository(tmp_path)
    ro = repo.readonly_session("main")
    assert ro.all_virtual_chunk_locations()  # the chunks really are references into the file
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="t")[1:5, 2:7], ds.t.values[1:5, 2:7])
    np.testing.assert_array_equal(zarrdask.from_zarr(ro, path="t").compute(), ds.t.values)
    back = xr.open_dataset(ro, engine="zarrdask", chunks={})
    xr.testing.assert_equal(back.t.compute(), ds.t)
