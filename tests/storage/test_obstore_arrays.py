"""obstore store objects used directly as zarrdask stores: arrays (v2, v3,
sharded with partial writes), dask, xarray — over obstore's MemoryStore,
LocalStore and S3Store (the moto server on 127.0.0.1) — and interoperability
with zarr-python's ObjectStore in both directions."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarrdask
import zarrdask.xarray
from zarrdask.storage import ObstoreStore, store_from

from .test_obstore import s3_store

obstore = pytest.importorskip("obstore")
from obstore.store import LocalStore as ObLocalStore
from obstore.store import MemoryStore

BACKENDS = ["memory", "local", pytest.param("s3", marks=pytest.mark.network)]


@pytest.fixture(params=BACKENDS)
def make_backend(request, tmp_path):
    """``make()`` → a fresh, empty obstore store of the parametrised kind."""
    count = iter(range(1000))

    def memory():
        return MemoryStore()

    def local():
        return ObLocalStore(tmp_path / f"root{next(count)}", mkdir=True)

    def s3():
        endpoint = request.getfixturevalue("s3_endpoint")
        bucket = request.getfixturevalue("s3_bucket")
        return s3_store(endpoint, bucket, prefix=f"data{next(count)}.zarr")

    return {"memory": memory, "local": local, "s3": s3}[request.param]


def _data(shape=(60, 50)):
    return np.random.default_rng(26).integers(-50, 50, shape).astype("f4")


@pytest.mark.parametrize(
    "kw",
    [
        {"zarr_format": 2},
        {"zarr_format": 3},
        {"chunks": (4, 5), "shards": (16, 25)},
    ],
    ids=["v2", "v3", "sharded"],
)
def test_arrays(make_backend, kw):
    inner = make_backend()
    data = _data()
    kw = {"chunks": (16, 10), **kw}
    a = zarrdask.create_array(inner, shape=data.shape, dtype="f4", fill_value=0, **kw)
    a[...] = data
    a[3:7, 40:44] = -1  # part of a chunk (of a shard): read, modify, write
    data[3:7, 40:44] = -1
    a[20, :] = 5
    data[20, :] = 5
    b = zarrdask.open_array(inner, mode="r")
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[5:9, 3:8], data[5:9, 3:8])  # parts of chunks (and shards)
    np.testing.assert_array_equal(b.oindex[[0, 17, 59], [1, 49]], data[np.ix_([0, 17, 59], [1, 49])])
    assert b.nchunks_initialized == b.nchunks
    with pytest.raises(zarrdask.errors.ReadOnlyError):
        b[0, 0] = 1


def test_sharded_array_written_in_parts(make_backend):
    """Partial writes into shards, a shard emptied back to the fill value,
    and a group around them, all on the obstore store."""
    inner = make_backend()
    group = zarrdask.open_group(inner, mode="w")
    a = group.create_array("x", shape=(32, 32), dtype="i2", chunks=(4, 4), shards=(16, 16), fill_value=-1)
    expected = np.full((32, 32), -1, dtype="i2")
    for i, (rows, cols) in enumerate([(slice(0, 3), slice(0, 5)), (slice(2, 10), slice(14, 18)),
                                      (slice(30, 32), slice(0, 32)), (slice(5, 6), slice(5, 6))]):
        a[rows, cols] = i
        expected[rows, cols] = i
    np.testing.assert_array_equal(zarrdask.open_array(inner, path="x", mode="r")[...], expected)
    a[16:32, 0:16] = -1  # a whole shard back to the fill value: deleted
    expected[16:32, 0:16] = -1
    assert "x/c/1/0" not in set(ObstoreStore(inner).list())
    np.testing.assert_array_equal(zarrdask.open_group(inner, mode="r")["x"][...], expected)


def test_dask(make_backend):
    inner = make_backend()
    data = _data()
    zarrdask.to_zarr(da.from_array(data, chunks=(16, 25)), inner, chunks=(4, 5), shards=(16, 25))
    with dask.config.set(scheduler="threads"):
        back = zarrdask.from_zarr(inner).compute()
        total = zarrdask.from_zarr(inner, chunks=(30, 25)).sum().compute()
    np.testing.assert_array_equal(back, data)
    assert total == data.sum()


def test_xarray(make_backend):
    ds = xr.Dataset(
        {"t": (("time", "x"), _data((12, 8)), {"units": "K"}), "name": ("x", np.array(list("abcdefgh")))},
        coords={"time": np.arange(12), "x": np.arange(8) * 10.0},
    )
    inner = make_backend()
    zarrdask.xarray.to_zarr(ds, inner, encoding={"t": {"chunks": (4, 4)}})
    xr.testing.assert_identical(xr.open_dataset(inner, engine="zarrdask").load(), ds)
    xr.testing.assert_identical(xr.open_dataset(inner, engine="zarrdask", chunks={}).compute(), ds)
    other = make_backend()
    zarrdask.xarray.to_zarr(ds.chunk({"time": 4}), other)  # dask variables: written in parallel
    xr.testing.assert_identical(xr.open_dataset(other, engine="zarrdask").load(), ds)


@pytest.mark.slow
@pytest.mark.network
def test_dask_on_a_cluster_of_processes(s3_endpoint, s3_bucket):
    """The store travels to worker processes (obstore's S3Store pickles with its configuration)."""
    distributed = pytest.importorskip("distributed")
    inner = s3_store(s3_endpoint, s3_bucket)
    data = _data()
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    with cluster, distributed.Client(cluster):
        zarrdask.to_zarr(da.from_array(data, chunks=(16, 25)), inner, chunks=(4, 5), shards=(16, 25))
        back = zarrdask.from_zarr(inner, chunks=(20, 25)).compute()
    np.testing.assert_array_equal(back, data)
    np.testing.assert_array_equal(zarrdask.open_array(inner)[...], data)


# -- zarr-python through its own ObjectStore ---------------------------------------
def test_zarr_python_reads_what_zarrdask_wrote(make_backend):
    zarr = pytest.importorskip("zarr")
    inner = make_backend()
    data = _data()
    a = zarrdask.create_array(inner, shape=data.shape, dtype="f4", chunks=(4, 5), shards=(16, 25))
    a[...] = data
    a[1:3, 1:3] = 0
    data[1:3, 1:3] = 0
    theirs = zarr.open_array(zarr.storage.ObjectStore(inner, read_only=True), mode="r")
    np.testing.assert_array_equal(theirs[...], data)


def test_zarrdask_reads_what_zarr_python_wrote(make_backend):
    zarr = pytest.importorskip("zarr")
    inner = make_backend()
    data = _data()
    theirs = zarr.create_array(zarr.storage.ObjectStore(inner), shape=data.shape, dtype="f4",
                               chunks=(4, 5), shards=(16, 25), zarr_format=3)
    theirs[...] = data
    np.testing.assert_array_equal(zarrdask.open_array(inner, mode="r")[...], data)
    np.testing.assert_array_equal(zarrdask.open_array(inner, mode="r")[7:9, 3:30], data[7:9, 3:30])


# -- requests ------------------------------------------------------------------------
@pytest.fixture
def proxied(s3_endpoint, s3_bucket):
    """``(proxy, S3Store)``: obstore reaching moto through the logging proxy."""
    from zarrdask.testing.servers import serve_proxy

    with serve_proxy(s3_endpoint) as proxy:
        yield proxy, s3_store(proxy.url, s3_bucket)


@pytest.mark.network
def test_a_partial_shard_read_is_range_requests(proxied):
    proxy, inner = proxied
    data = _data((64, 64))
    a = zarrdask.create_array(inner, shape=data.shape, dtype="f4", chunks=(8, 8), shards=(32, 32),
                              compressors=None)
    a[...] = data
    b = zarrdask.open_array(inner, mode="r")
    proxy.log.clear()
    np.testing.assert_array_equal(b[3:5, 40:42], data[3:5, 40:42])
    gets = [r for r in proxy.log.requests if r.method == "GET" and "/c/" in r.path]
    assert gets and all(r.range is not None for r in gets), [(r.path, r.range) for r in gets]
    assert len(gets) == 2  # the shard's index, then the one inner chunk
    assert gets[1].if_match is not None  # from the version the index came from
    assert sum(r.bytes_sent for r in gets) < 8 * 8 * 4 + 1024


@pytest.mark.network
def test_store_from_keeps_the_obstore_configuration(proxied):
    proxy, inner = proxied
    store = store_from(inner, mode="w")
    store.set("k", b"v")
    assert proxy.log.count("PUT") == 1
    assert store.location == ObstoreStore(inner).location
