"""Irregular dask chunks stored as they are: to_zarr(chunks="dask") writes a
rectilinear chunk grid with no rechunk and one task per chunk; from_zarr gives
exactly the stored chunks."""

from __future__ import annotations

import threading
import warnings
from collections import Counter

import dask
import dask.array as da
import numpy as np
import pytest

import zarrdask
from zarrdask.dask import AlignmentError, from_zarr, to_zarr
from zarrdask.errors import AlignmentWarning
from zarrdask.storage import MemoryStore

MONTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class RecordingStore(MemoryStore):
    """Counts how often each key is written."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: Counter = Counter()
        self._rec_lock = threading.Lock()

    def set_many(self, items):
        with self._rec_lock:
            self.writes.update(items.keys())
        super().set_many(items)


def _months(seed=0):
    return da.random.default_rng(seed).random((365, 360), chunks=(MONTHS, (180, 180)))


def _no_rechunk(graph) -> None:
    names = [name for name in graph.layers]
    assert not any("rechunk" in n for n in names), names


def test_done_when_months_written_without_rechunk_and_each_key_once():
    x = _months()
    store = RecordingStore()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AlignmentWarning)  # no rechunk, so no warning either
        delayed = to_zarr(x, store, chunks="dask", compute=False)
    _no_rechunk(delayed.__dask_graph__())
    store_layers = [n for n in delayed.__dask_graph__().layers if n.startswith("store")]
    assert len(store_layers) == 1
    # one write task per chunk
    store_tasks = [k for k in dict(delayed.__dask_graph__()) if isinstance(k, tuple) and k[0] in store_layers]
    assert len(store_tasks) == 12 * 2
    delayed.compute()
    chunk_writes = {k: n for k, n in store.writes.items() if not k.endswith("zarr.json")}
    assert len(chunk_writes) == 24 and set(chunk_writes.values()) == {1}
    a = zarrdask.open_array(store)
    assert a.chunk_grid == "rectilinear"
    assert a.chunks == (MONTHS, (180, 180))
    np.testing.assert_array_equal(a[...], x.compute())


def test_from_zarr_gives_the_stored_chunks_one_task_each():
    x = _months(1)
    store = MemoryStore()
    to_zarr(x, store, chunks="dask")
    y = from_zarr(store)
    assert y.chunks == x.chunks
    assert len(y.__dask_graph__()) == 24
    np.testing.assert_array_equal(y.compute(), x.compute())


def test_sharded_rectilinear_from_zarr_one_task_per_shard():
    x = _months(2)
    store = MemoryStore()
    to_zarr(x, store, shards="dask", chunks=(1, 36))
    a = zarrdask.open_array(store)
    assert a.shards == (MONTHS, (180, 180)) and a.chunks == (1, 36)
    y = from_zarr(store)
    assert y.chunks == x.chunks
    np.testing.assert_array_equal(y.compute(), x.compute())


def test_regular_blocks_stay_a_regular_grid():
    x = da.ones((100, 10), chunks=(30, 10))
    a = to_zarr(x, MemoryStore(), chunks="dask")
    assert a.chunk_grid == "regular" and a.chunks == (30, 10)


def test_align_error_accepts_the_rectilinear_target_and_auto_hints():
    x = _months(3)
    to_zarr(x, MemoryStore(), chunks="dask", align="error")
    with pytest.warns(AlignmentWarning, match="chunks='dask'"):
        to_zarr(x, MemoryStore(), chunks=(31, 180))
    with pytest.raises(AlignmentError):
        to_zarr(x, MemoryStore(), chunks=(31, 180), align="error")


def test_writing_into_an_existing_rectilinear_array_aligns_to_its_chunks():
    x = _months(4)
    store = MemoryStore()
    to_zarr(x, store, chunks="dask")
    # blocks that straddle the months: rechunked to the months' boundaries, never split inside one
    y = x.rechunk((100, 360))
    with pytest.warns(AlignmentWarning):
        to_zarr(y, store, mode="r+")
    np.testing.assert_array_equal(zarrdask.open_array(store)[...], x.compute())
    # a region aligned to the months
    z = da.zeros((59, 360), chunks=((31, 28), 360))
    to_zarr(z, store, mode="r+", region=(slice(0, 59),), align="error")
    assert (zarrdask.open_array(store)[:59] == 0).all()


def test_alignment_against_rectilinear_units():
    from zarrdask.dask import aligned_chunks, is_aligned, misaligned_blocks

    unit = ((31, 28, 31), 10)
    assert is_aligned(((59, 31), (10, 10)), unit, (0, 0))
    assert not is_aligned(((40, 50), (10, 10)), unit, (0, 0))
    assert aligned_chunks(((40, 50), (10, 10)), unit, (0, 0)) == ((59, 31), (10, 10))
    assert misaligned_blocks(((40, 50), (20,)), unit, (0, 0)) == [(0, 0), (1, 0)]


def test_distributed_style_pickling_of_a_rectilinear_array(tmp_path):
    import pickle

    x = _months(5)
    a = to_zarr(x, str(tmp_path / "m.zarr"), chunks="dask")
    b = pickle.loads(pickle.dumps(a))
    assert b.chunks == a.chunks
    want = a[...].sum(axis=1)
    with dask.config.set(scheduler="processes", num_workers=2):
        got = from_zarr(str(tmp_path / "m.zarr")).sum(axis=1).compute()
    np.testing.assert_allclose(got, want)


def test_chunk_grid_rectilinear_takes_the_blocks():
    x = _months(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AlignmentWarning)
        a = to_zarr(x, MemoryStore(), chunk_grid="rectilinear")
    assert a.chunks == (MONTHS, (180, 180))
    b = to_zarr(da.ones((10,), chunks=5), MemoryStore(), chunk_grid="rectilinear")
    assert b.metadata.to_json()["chunk_grid"]["name"] == "rectilinear"
