"""A dask array whose blocks cut through every shard, written from two worker
processes: with blocks aligned to shards no write is lost, run after run."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest

import zarrdask
from zarrdask.errors import AlignmentWarning, RegionEdgeWarning

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.mark.slow
def test_misaligned_blocks_written_on_a_cluster(client, tmp_path):
    for run in range(4):
        data = np.random.default_rng(run).random((96, 80)).astype("f4")
        x = da.from_array(data, chunks=(7, 9))  # cuts through every 16x16 shard
        path = tmp_path / f"run{run}.zarr"
        with pytest.warns(AlignmentWarning, match="cut through shards"):
            zarrdask.to_zarr(x, str(path), chunks=(4, 4), shards=(16, 16))
        np.testing.assert_array_equal(zarrdask.open_array(str(path))[...], data)
        back = zarrdask.from_zarr(str(path)).compute()
        np.testing.assert_array_equal(back, data)


@pytest.mark.slow
def test_region_write_on_a_cluster(client, tmp_path):
    path = str(tmp_path / "region.zarr")
    zarrdask.create_array(path, shape=(64, 64), dtype="i4", chunks=(4, 4), shards=(16, 16), fill_value=-1)
    vals = np.arange(50 * 45, dtype="i4").reshape(50, 45)
    with warnings.catch_warnings(record=True) as record:  # blocks and region edges inside shards: both said
        warnings.simplefilter("always")
        zarrdask.to_zarr(da.from_array(vals, chunks=(11, 6)), path, mode="r+", region=(slice(5, 55), slice(3, 48)))
    assert {w.category for w in record} == {RegionEdgeWarning, AlignmentWarning}
    expected = np.full((64, 64), -1, "i4")
    expected[5:55, 3:48] = vals
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], expected)


def test_progress_on_distributed(client, tmp_path):
    x = zarrdask.to_zarr(da.ones((8, 8), chunks=(4, 4)), str(tmp_path / "p.zarr"), chunks=(4, 4), compute=False)
    future = client.compute(x)
    distributed.progress(future)  # renders a text bar in a terminal; must not fail
    future.result()
    assert zarrdask.open_array(str(tmp_path / "p.zarr")).nchunks_initialized == 4
