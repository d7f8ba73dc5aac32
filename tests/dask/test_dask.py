"""from_zarr and the shard-aligned to_zarr on the threaded scheduler."""

from __future__ import annotations

import warnings
import pickle
import time

import dask
import dask.array as da
import numpy as np
import pytest

import zarrdask
from zarrdask.dask import AlignmentError
from zarrdask.errors import AlignmentWarning, RegionEdgeWarning
from zarrdask.storage import CountingStore, MemoryStore


def _data(shape=(40, 30), seed=0):
    return np.random.default_rng(seed).random(shape).astype("f4")


def test_from_zarr_blocks_follow_shards_and_chunks(tmp_path):
    data = _data()
    sharded = zarrdask.create_array(tmp_path / "s.zarr", shape=data.shape, dtype="f4", chunks=(5, 5),
                                    shards=(20, 10), data=data)
    x = zarrdask.from_zarr(sharded)
    assert x.chunks == ((20, 20), (10, 10, 10))
    np.testing.assert_array_equal(x.compute(), data)
    np.testing.assert_array_equal(x[3:37:3, 5].compute(), data[3:37:3, 5])
    zarrdask.create_array(tmp_path / "p.zarr", shape=data.shape, dtype="f4", chunks=(7, 8), data=data,
                                  zarr_format=2)
    y = zarrdask.from_zarr(str(tmp_path / "p.zarr"))
    assert y.chunks == ((7, 7, 7, 7, 7, 5), (8, 8, 8, 6))
    np.testing.assert_array_equal(y.compute(), data)
    # other block shapes: groups of units, and smaller blocks splitting a shard
    assert zarrdask.from_zarr(sharded, chunks=(40, 30)).numblocks == (1, 1)
    small = zarrdask.from_zarr(sharded, chunks=(5, 5))
    assert small.numblocks == (8, 6)
    np.testing.assert_array_equal(small.compute(), data)


def test_from_zarr_names_are_deterministic(tmp_path):
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=(10,), dtype="i4", chunks=(5,))
    assert zarrdask.from_zarr(a).name == zarrdask.from_zarr(str(tmp_path / "a.zarr")).name
    assert zarrdask.from_zarr(a).name != zarrdask.from_zarr(a, chunks=(2,)).name


def test_from_zarr_reads_part_of_a_shard_with_ranges():
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=(64, 64), dtype="u2", chunks=(8, 8), shards=(64, 64))
    a[...] = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    store.reset()
    x = zarrdask.from_zarr(a, chunks=(8, 8))
    assert x[0:8, 0:8].compute().sum() == np.arange(64 * 64).reshape(64, 64)[:8, :8].sum()
    assert store.counts["get_ranges_calls"] == 2 and store.counts["keys_requested"] == 0


def test_graph_for_a_million_chunks_is_lazy():
    a = zarrdask.create_array(MemoryStore(), shape=(1000, 1000), dtype="u1", chunks=(1, 1))
    t = time.perf_counter()
    x = zarrdask.from_zarr(a)
    assert x.npartitions == 1_000_000
    assert time.perf_counter() - t < 30  # a sanity bound, not a timing assertion
    assert len(x.dask.layers) == 1


def test_to_zarr_aligns_blocks_that_cut_shards(tmp_path):
    data = _data((50, 50), seed=1)
    x = da.from_array(data, chunks=(7, 13))
    with pytest.warns(AlignmentWarning, match=r"rechunking the dask array from \(7, 13\) to \(10, \(20, 10, 10, 10\)\) "
                      r"so that each of its shards of shape \(10, 10\) is written by one task") as record:
        arr = zarrdask.to_zarr(x, tmp_path / "t.zarr", chunks=(5, 5), shards=(10, 10))
    assert record[0].filename == __file__  # attributed to the caller's line
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "t.zarr")[...], data)
    assert arr.shards == (10, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # align="rechunk": asked for, so silent
        zarrdask.to_zarr(x, tmp_path / "s.zarr", chunks=(5, 5), shards=(10, 10), align="rechunk")
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "s.zarr")[...], data)
    with pytest.raises(AlignmentError, match=r"cut through shards.*rechunk"):
        zarrdask.to_zarr(x, tmp_path / "u.zarr", chunks=(5, 5), shards=(10, 10), align="error")


def test_region_writes_cut_through_shards(tmp_path):
    path = tmp_path / "r.zarr"
    base = np.full((40, 40), -1.0)
    zarrdask.create_array(path, shape=(40, 40), dtype="f8", chunks=(4, 4), shards=(8, 8), fill_value=-1.0)
    for region, seed in [((slice(3, 29), slice(5, 38)), 2), ((slice(0, 13), slice(11, 12)), 3)]:
        shape = tuple(s.stop - s.start for s in region)
        vals = np.random.default_rng(seed).random(shape)
        # blocks and region edges inside shards: both said, and the write is still right
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            zarrdask.to_zarr(da.from_array(vals, chunks=(5, 3)), path, mode="r+", region=region)
        assert {w.category for w in record} == {RegionEdgeWarning, AlignmentWarning}
        base[region] = vals
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], base)


def test_compute_false_writes_nothing_until_computed():
    store = MemoryStore()
    x = da.ones((20, 20), chunks=(10, 10), dtype="i2")
    delayed = zarrdask.to_zarr(x, store, chunks=(10, 10), compute=False)
    assert [k for k in store.list() if not k.endswith("zarr.json")] == []
    dask.compute(delayed)
    assert len([k for k in store.list() if k.startswith("c/")]) == 4
    np.testing.assert_array_equal(zarrdask.open_array(store)[...], np.ones((20, 20)))


def test_empty_blocks_leave_no_shard(tmp_path):
    x = da.zeros((40, 40), chunks=(10, 10), dtype="f4")
    x = da.concatenate([x[:20], da.ones((20, 40), chunks=(10, 10), dtype="f4")])
    arr = zarrdask.to_zarr(x, tmp_path / "e.zarr", chunks=(5, 5), shards=(20, 20), align="rechunk")
    assert arr.nshards_initialized == 2  # the two all-fill shards are not stored


def test_pickling_roundtrips(tmp_path):
    a = zarrdask.create_array(tmp_path / "k.zarr", shape=(8,), dtype="i4", chunks=(2,), shards=(4,),
                              data=np.arange(8))
    x = zarrdask.from_zarr(a)
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(y.compute(), np.arange(8))
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(b[...], np.arange(8))


def test_progress_bar(tmp_path, capsys):
    from dask.diagnostics import ProgressBar

    with ProgressBar():
        zarrdask.to_zarr(da.ones((16, 16), chunks=(4, 4)), tmp_path / "pb.zarr", chunks=(4, 4))
    assert "100%" in capsys.readouterr().out
