"""EngineOptions travel with each call: threads=1 runs a read or write, and
everything its codecs and store fan out, in the calling thread (as inside a
dask task); one_chunk makes one chunk per store call."""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest

import zarrdask
from zarrdask import EngineOptions
from zarrdask.codecs.chain import CodecChain
from zarrdask.storage import CountingStore, LocalStore


@pytest.fixture
def decoding_threads(monkeypatch):
    """The names of the threads that decode (shards: every inner chunk)."""
    names: set[str] = set()
    real = CodecChain.decode_into

    def spy(self, *args, **kwargs):
        names.add(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CodecChain, "decode_into", spy)
    return names


def _sharded(tmp_path):
    data = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype="f4", chunks=(8, 8), shards=(32, 32))
    a[...] = data
    return zarrdask.open_array(str(tmp_path / "a.zarr")), data


def test_one_thread_runs_everything_in_the_calling_thread(tmp_path, decoding_threads):
    a, data = _sharded(tmp_path)
    with zarrdask.config.set(threads=4):
        np.testing.assert_array_equal(a.get_basic_selection(..., options=EngineOptions(threads=1)), data)
        assert decoding_threads == {threading.current_thread().name}
        a.set_basic_selection((slice(3, 40), slice(5, 60)), 1.0, options=EngineOptions(threads=1))
        decoding_threads.clear()
        np.testing.assert_array_equal(a[...][3:40, 5:60], 1.0)  # the default: the engine's pool
        assert any(name.startswith("zarrdask") for name in decoding_threads)


def test_dask_tasks_never_use_the_engine_pool(tmp_path, decoding_threads):
    a, data = _sharded(tmp_path)
    with zarrdask.config.set(threads=4), dask.config.set(scheduler="threads", num_workers=2):
        np.testing.assert_array_equal(zarrdask.from_zarr(a, chunks=(32, 32)).compute(), data)
    assert decoding_threads and not any(name.startswith("zarrdask") for name in decoding_threads)


def test_one_chunk_per_store_call(tmp_path):
    data = np.arange(40 * 40, dtype="i2").reshape(40, 40)
    zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype="i2", chunks=(10, 10))[...] = data
    store = CountingStore(LocalStore(str(tmp_path / "a.zarr")))
    a = zarrdask.open_array(store)
    store.reset()
    np.testing.assert_array_equal(a.get_basic_selection(..., options=EngineOptions(one_chunk=True)), data)
    assert store.counts["get_many_calls"] == 16 and store.counts["keys_requested"] == 16
    store.reset()
    a.set_basic_selection(..., data + 1, options=EngineOptions(one_chunk=True))
    assert store.counts["set_calls"] == 16
    store.reset()
    np.testing.assert_array_equal(a[...], data + 1)
    assert store.counts["get_many_calls"] == 1


@pytest.mark.parametrize("bad", [{"threads": 0}, {"threads": True}, {"io_concurrency": -1}, {"threads": 1.5}])
def test_options_are_checked(bad):
    with pytest.raises(ValueError, match="EngineOptions"):
        EngineOptions(**bad)


def test_xarray_tasks_hand_a_shards_inner_chunks_to_the_engine_pool(tmp_path, monkeypatch):
    """xarray calls the backend inside a dask task as it would outside dask:
    the task's shard's inner chunks are decoded on the engine's pool (at most
    ``threads`` threads), not in the task's thread (docs/performance.md)."""
    xr = pytest.importorskip("xarray")
    data = np.arange(64 * 64, dtype="f4").reshape(64, 64)
    g = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    g.create_array("v", shape=data.shape, dtype="f4", chunks=(8, 8), shards=(32, 32),
                   dimension_names=["y", "x"])[...] = data
    inner: set[str] = set()
    real = CodecChain.decode_pieces_into

    def spy(self, source, pieces, spec, key=""):
        if spec.shape == (8, 8):
            inner.add(threading.current_thread().name)
        return real(self, source, pieces, spec, key)

    monkeypatch.setattr(CodecChain, "decode_pieces_into", spy)
    ds = xr.open_dataset(str(tmp_path / "g.zarr"), engine="zarrdask", chunks={}, consolidated=False)
    assert ds.v.data.numblocks == (2, 2)  # one task per shard
    with zarrdask.config.set(threads=2), dask.config.set(scheduler="threads", num_workers=2):
        np.testing.assert_array_equal(ds.v.values, data)
    assert inner and len(inner) <= 2 and all(name.startswith("zarrdask_") for name in inner), inner
