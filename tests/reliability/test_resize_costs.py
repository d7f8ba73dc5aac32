"""Resizing costs what is stored, not the chunk grid; a failed resize changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import CorruptChunkError
from zarrdask.storage import CountingStore, MemoryStore


def _sparse(shape, chunks, fmt=3, **kwargs):
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=shape, dtype="i2", chunks=chunks, fill_value=0, zarr_format=fmt,
                              compressors=None, **kwargs)
    return store, a


@pytest.mark.parametrize("fmt", [2, 3])
def test_append_to_a_huge_grid_touches_only_what_is_stored(fmt):
    store, a = _sparse((10**6, 10**6), (1, 1), fmt)
    for i in range(4):
        a[i * 1000, i * 7] = i + 1
    store.reset()
    a.resize(10**6 + 5, 10**6)      # growing: nothing to cut
    assert a.shape == (10**6 + 5, 10**6)
    assert store.counts["keys_requested"] < 10 and store.counts["delete_calls"] == 0
    store.reset()
    a.resize(10**6, 10)             # shrinking a 10**12-cell grid with 4 stored chunks: list, not enumerate
    assert a.shape == (10**6, 10)
    assert store.counts["list_calls"] == 1 and store.counts["keys_requested"] < 10
    assert [int(a[i * 1000, i * 7]) for i in range(2)] == [1, 2]
    assert a.nchunks_initialized == 2  # the chunks at columns 14 and 21 were cut off and deleted


def test_append_a_row_to_a_billion_row_grid():
    store, a = _sparse((10**9, 10**6), (1, 10**6))
    a[123] = 7
    store.reset()
    assert a.append(np.ones((1, 10**6), "i2")) == (10**9 + 1, 10**6)
    assert store.counts["keys_written"] == 2  # the metadata and the new row's chunk
    assert int(a[10**9, 5]) == 1 and int(a[123, 0]) == 7


def test_resize_of_a_2_to_62_array():
    store, a = _sparse((2**62,), (2**20,))
    a[5] = 3
    a[2**40] = 4
    a.resize(10)
    assert a.shape == (10,) and int(a[5]) == 3
    assert len(list(store.list())) == 2  # zarr.json and c/0
    a.resize(2**40 + 1)
    assert int(a[2**40]) == 0  # the deleted chunk reads as the fill value


@pytest.mark.parametrize("sharded", [False, True])
def test_shrinking_resets_the_cut_part_of_straddling_chunks(sharded):
    store, a = _sparse((20, 20), (4, 4), shards=(8, 8) if sharded else None)
    if sharded:
        a = zarrdask.open_array(store, mode="r+")
    a[...] = np.arange(400, dtype="i2").reshape(20, 20) + 1
    a.resize(10, 7)
    a.resize(20, 20)
    expected = np.zeros((20, 20), "i2")
    expected[:10, :7] = (np.arange(400, dtype="i2").reshape(20, 20) + 1)[:10, :7]
    np.testing.assert_array_equal(a[...], expected)


def test_a_failed_shrinking_resize_changes_nothing():
    store, a = _sparse((12, 12), (4, 4))
    a[...] = np.arange(144, dtype="i2").reshape(12, 12) + 1
    before = {k: store.get(k) for k in store.list()}
    store.set("c/0/2", b"\x00" * 5)  # a corrupt chunk that only the second edge cuts
    before["c/0/2"] = b"\x00" * 5
    with pytest.raises(CorruptChunkError, match="c/0/2"):
        a.resize(6, 10)
    assert {k: store.get(k) for k in store.list()} == before
    assert zarrdask.open_array(store).shape == (12, 12)
