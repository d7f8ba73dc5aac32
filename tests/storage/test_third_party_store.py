"""A third-party store written against the required Store interface only
(``get_many``, ``set``, ``delete``, ``list``; no capability declared) passes
the conformance suite and serves arrays, dask (threaded, and a cluster of
worker processes) and xarray."""

from __future__ import annotations

import multiprocessing

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarrdask
import zarrdask.xarray
from zarrdask.storage import Store, validate_key
from zarrdask.testing.store import StoreConformanceTests


class DictStore(Store):
    """Values in a mutable mapping (a ``dict``; a ``multiprocessing`` manager's
    dict to share them between processes): the required interface, nothing else."""

    def __init__(self, data=None):
        self.data = {} if data is None else data

    def get_many(self, keys):
        return [self.data.get(validate_key(key)) for key in keys]

    def set(self, key, value):
        self._check_writable(key)
        self.data[validate_key(key)] = bytes(value)

    def delete(self, key):
        self.data.pop(validate_key(key), None)

    def list(self):
        return iter(list(self.data.keys()))


class TestDictStore(StoreConformanceTests):
    @pytest.fixture
    def store(self):
        return DictStore()


def test_it_declares_nothing_beyond_the_required_interface():
    store = DictStore()
    assert store.capabilities == frozenset()
    assert not store.supports_partial_reads and store.writable and store.listable


def _data(shape=(60, 50)):
    return (np.arange(np.prod(shape), dtype="f4").reshape(shape) % 89) - 7


@pytest.mark.parametrize(
    "kw",
    [
        {"zarr_format": 2},
        {"zarr_format": 3},
        {"compressors": None},
        {"chunks": (4, 5), "shards": (16, 25)},
        {"compressors": [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                                             "typesize": 4, "blocksize": 0}}]},
    ],
    ids=["v2", "v3", "uncompressed", "sharded", "blosc"],
)
def test_arrays(kw):
    data = _data()
    store = DictStore()
    kw = {"chunks": (16, 10), **kw}
    a = zarrdask.create_array(store, shape=data.shape, dtype="f4", fill_value=0, **kw)
    a[...] = data
    a[3:7, 40:44] = -1  # a read-modify-write
    data[3:7, 40:44] = -1
    b = zarrdask.open_array(store, mode="r")
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[5:9, 3:8], data[5:9, 3:8])  # parts of chunks (and of shards)
    np.testing.assert_array_equal(b.oindex[[0, 17, 59], [1, 49]], data[np.ix_([0, 17, 59], [1, 49])])
    np.testing.assert_array_equal(b.vindex[[0, 17, 59], [1, 2, 49]], data[[0, 17, 59], [1, 2, 49]])
    assert b.nchunks_initialized == b.nchunks


def test_dask_threaded():
    data = _data()
    store = DictStore()
    zarrdask.to_zarr(da.from_array(data, chunks=(16, 25)), store, chunks=(4, 5), shards=(16, 25))
    with dask.config.set(scheduler="threads"):
        back = zarrdask.from_zarr(store).compute()
        total = zarrdask.from_zarr(store, chunks=(30, 25)).sum().compute()
    np.testing.assert_array_equal(back, data)
    assert total == data.sum()


@pytest.mark.slow
def test_dask_on_a_cluster_of_processes():
    distributed = pytest.importorskip("distributed")
    data = _data()
    with multiprocessing.Manager() as manager:
        store = DictStore(manager.dict())  # every worker process sees the same values
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                           dashboard_address=":0", silence_logs=40)
        with cluster, distributed.Client(cluster):
            zarrdask.to_zarr(da.from_array(data, chunks=(16, 25)), store, chunks=(4, 5), shards=(16, 25))
            back = zarrdask.from_zarr(store, chunks=(20, 25)).compute()
        np.testing.assert_array_equal(back, data)
        np.testing.assert_array_equal(zarrdask.open_array(store)[...], data)


def test_xarray():
    ds = xr.Dataset(
        {"t": (("time", "x"), _data((12, 8)), {"units": "K"}), "name": ("x", np.array(list("abcdefgh")))},
        coords={"time": np.arange(12), "x": np.arange(8) * 10.0},
    )
    store = DictStore()
    zarrdask.xarray.to_zarr(ds, store, encoding={"t": {"chunks": (4, 4)}})
    back = xr.open_dataset(store, engine="zarrdask")
    xr.testing.assert_identical(back.load(), ds)
    lazy = xr.open_dataset(store, engine="zarrdask", chunks={})
    xr.testing.assert_identical(lazy.compute(), ds)
    zarrdask.xarray.to_zarr(ds.chunk({"time": 4}), DictStore())  # dask variables: written in parallel
