"""Array behaviour over stores x zarr_format: selections, writes, resize, attrs, errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import (
    ArrayNotFoundError,
    BoundsCheckError,
    ContainsArrayError,
    ContainsGroupError,
    ReadOnlyError,
    SelectionError,
)
from zarrdask.storage import CountingStore, LocalStore, MemoryStore, ZipStore

FORMATS = [2, 3]


@pytest.fixture(params=["memory", "local", "zip"])
def store(request, tmp_path):
    if request.param == "memory":
        return MemoryStore()
    if request.param == "local":
        return LocalStore(tmp_path / "data.zarr")
    return ZipStore(tmp_path / "data.zip", mode="w")


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_write_read_roundtrip(store, zarr_format):
    data = np.arange(7 * 11, dtype="i4").reshape(7, 11)
    a = zarrdask.create_array(store, path="x", shape=data.shape, dtype=data.dtype, chunks=(3, 4),
                              zarr_format=zarr_format, fill_value=-1)
    assert (a[...] == -1).all()
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[2:6:3, ::-2], data[2:6:3, ::-2])
    assert a[-1, -1] == data[-1, -1]
    assert isinstance(a[0, 0], np.integer)
    np.testing.assert_array_equal(a[..., 3], data[..., 3])
    np.testing.assert_array_equal(a.oindex[[5, 0, 0], data[0] % 2 == 0], data[[5, 0, 0]][:, data[0] % 2 == 0])
    b = zarrdask.open_array(store, path="x", mode="r")
    np.testing.assert_array_equal(b[...], data)
    assert b.nchunks == 9 and b.nchunks_initialized == 9


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_partial_writes_and_scalar_broadcast(zarr_format):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(10, 10), dtype="f8", chunks=(4, 4), zarr_format=zarr_format)
    ref = np.zeros((10, 10))
    a[1:9:2, 3] = 5.0
    ref[1:9:2, 3] = 5.0
    a.oindex[[9, 0], [1, 2, 8]] = np.arange(6.0).reshape(2, 3)
    ref[np.ix_([9, 0], [1, 2, 8])] = np.arange(6.0).reshape(2, 3)
    a[::-3, ::-1] = np.arange(40.0).reshape(4, 10)
    ref[::-3, ::-1] = np.arange(40.0).reshape(4, 10)
    np.testing.assert_array_equal(a[...], ref)


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_empty_chunks_are_not_stored_and_stale_ones_deleted(zarr_format):
    store = MemoryStore()
    a = zarrdask.create_array(store, path="a", shape=(8,), dtype="f4", chunks=(4,), fill_value=np.nan,
                              zarr_format=zarr_format)
    a[...] = np.nan
    assert a.nchunks_initialized == 0
    a[0] = 1
    assert a.nchunks_initialized == 1
    a[0] = np.nan
    assert a.nchunks_initialized == 0
    b = zarrdask.create_array(store, path="b", shape=(8,), dtype="f4", chunks=(4,), zarr_format=zarr_format,
                              write_empty_chunks=True)
    b[...] = 0
    assert b.nchunks_initialized == 2


def test_full_chunk_writes_do_not_read():
    inner = MemoryStore()
    store = CountingStore(inner)
    a = zarrdask.create_array(store, shape=(8, 8), dtype="i2", chunks=(4, 4))
    store.reset()
    a[...] = np.ones((8, 8), "i2")
    assert store.counts["keys_requested"] == 0
    a[0:2, 0:2] = 7  # partial: one chunk read, in one batched call
    assert store.counts["get_many_calls"] == 1 and store.counts["keys_requested"] == 1


def test_reads_are_batched():
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=(30, 30), dtype="u1", chunks=(10, 10), fill_value=3)
    a[...] = 1
    store.reset()
    a[5:25, 5:25]
    assert store.counts["get_many_calls"] == 1 and store.counts["keys_requested"] == 9


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_edge_chunks_and_0d(zarr_format):
    store = MemoryStore()
    a = zarrdask.create_array(store, path="a", shape=(5, 3), dtype="u2", chunks=(4, 2), zarr_format=zarr_format)
    data = np.arange(15, dtype="u2").reshape(5, 3)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    z = zarrdask.create_array(store, path="z", shape=(), dtype="f8", chunks=(), zarr_format=zarr_format, fill_value=2.5)
    assert z[()] == 2.5
    z[...] = 7.0
    assert z[...] == 7.0
    assert store.exists("z/c" if zarr_format == 3 else "z/0")


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_resize_and_append(zarr_format):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(6, 4), dtype="i4", chunks=(4, 4), zarr_format=zarr_format)
    a[...] = 1
    a.resize(5, 4)
    assert a.shape == (5, 4)
    a.resize((9, 4))
    ref = np.zeros((9, 4), "i4")
    ref[:5] = 1
    np.testing.assert_array_equal(a[...], ref)  # cut-off values do not come back
    a.resize(2, 4)
    assert a.nchunks_initialized == 1
    assert a.append(np.full((3, 4), 2, "i4")) == (5, 4)
    np.testing.assert_array_equal(a[...], np.r_[np.ones((2, 4), "i4"), np.full((3, 4), 2, "i4")])
    b = zarrdask.open_array(store, mode="r")
    assert b.shape == (5, 4)
    with pytest.raises(ValueError, match="dimensions"):
        a.resize(3)


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_attrs_persist(zarr_format):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(2,), dtype="i1", chunks=(2,), zarr_format=zarr_format, attributes={"a": 1})
    a.attrs["b"] = [1, 2]
    a.attrs.update({"c": "x", "d": None})
    del a.attrs["a"]
    b = zarrdask.open_array(store)
    assert dict(b.attrs) == {"b": [1, 2], "c": "x", "d": None}


def test_read_only_and_errors():
    store = MemoryStore()
    zarrdask.create_array(store, shape=(4,), dtype="i1", chunks=(2,))
    a = zarrdask.open_array(store, mode="r")
    before = dict(store._data) if hasattr(store, "_data") else None
    with pytest.raises(ReadOnlyError, match="read-only"):
        a[0] = 1
    with pytest.raises(ReadOnlyError):
        a.attrs["x"] = 1
    with pytest.raises(ReadOnlyError):
        a.resize(8)
    if before is not None:
        assert dict(store._data) == before
    with pytest.raises(BoundsCheckError, match="out of bounds"):
        a[4]
    with pytest.raises(SelectionError):
        a[[0, 1]] if False else a.get_basic_selection([0, 1])
    with pytest.raises(ArrayNotFoundError):
        zarrdask.open_array(store, path="nope", mode="r")
    with pytest.raises(ContainsArrayError):
        zarrdask.create_array(store, shape=(4,), dtype="i1", chunks=(2,))
    zarrdask.create_array(store, shape=(4,), dtype="i1", chunks=(2,), overwrite=True)


def test_failed_write_changes_nothing():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(4, 4), dtype="i4", chunks=(2, 2))
    a[...] = 3
    snapshot = {k: store.get(k) for k in store.list()}
    with pytest.raises(SelectionError):
        a[0:2, 0:2] = np.zeros((3, 3))
    with pytest.raises(SelectionError):
        a[...] = "not a number"
    assert {k: store.get(k) for k in store.list()} == snapshot


def test_array_under_array_refused():
    store = MemoryStore()
    zarrdask.create_array(store, path="a", shape=(1,), dtype="i1", chunks=(1,))
    with pytest.raises(ContainsArrayError, match="parent"):
        zarrdask.create_array(store, path="a/b", shape=(1,), dtype="i1", chunks=(1,))
    zarrdask.open_group(store, path="g", mode="w")
    with pytest.raises(ContainsGroupError):
        zarrdask.create_array(store, path="g", shape=(1,), dtype="i1", chunks=(1,))


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_pickle(zarr_format, tmp_path):
    a = zarrdask.create_array(tmp_path / "p.zarr", shape=(4,), dtype="i8", chunks=(2,), zarr_format=zarr_format)
    a[...] = [1, 2, 3, 4]
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(b[...], [1, 2, 3, 4])


def test_order_f_v2():
    store = MemoryStore()
    data = np.arange(12, dtype="<i4").reshape(3, 4)
    a = zarrdask.create_array(store, shape=(3, 4), dtype="<i4", chunks=(3, 4), zarr_format=2, order="F", compressors=None)
    a[...] = data
    assert store.get("0.0") == np.asfortranarray(data).tobytes(order="F")
    np.testing.assert_array_equal(a[...], data)


def test_info_and_repr():
    a = zarrdask.create_array(MemoryStore(), shape=(100,), dtype="f4", chunks=(10,))
    a[:50] = np.linspace(0, 1, 50)
    info = a.info
    assert info["Chunks initialized"] == "5 of 10"
    assert "Shape" in repr(info)
    assert "zarrdask.Array" in repr(a)
