"""``Array.vindex`` and the coordinate / mask selection methods: against numpy over
v2, v3, sharded and F-order arrays, against zarr-python 3 in both directions, and
the store requests they make."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrdask
from zarrdask import config
from zarrdask.errors import BoundsCheckError, ReadOnlyError, SelectionError
from zarrdask.storage import CountingStore, LocalStore, MemoryStore

SHAPE = (23, 17)  # edge chunks in both dimensions
LAYOUTS = {
    "v2": dict(zarr_format=2, chunks=(5, 4)),
    "v2-F": dict(zarr_format=2, chunks=(5, 4), order="F"),
    "v3": dict(zarr_format=3, chunks=(5, 4)),
    "v3-sharded": dict(zarr_format=3, chunks=(3, 4), shards=(6, 8)),
}


def make(layout: str, store=None, *, dtype="i4", fill_value=-1, data=True):
    a = zarrdask.create_array(store if store is not None else MemoryStore(), shape=SHAPE, dtype=dtype,
                              fill_value=fill_value, **LAYOUTS[layout])
    ref = np.full(SHAPE, fill_value, dtype=dtype)
    if data:
        ref[...] = np.arange(np.prod(SHAPE)).reshape(SHAPE)
        a[...] = ref
    return a, ref


RNG = np.random.default_rng(7)
ROWS, COLS = RNG.integers(-SHAPE[0], SHAPE[0], 60), RNG.integers(-SHAPE[1], SHAPE[1], 60)
SELECTIONS = [
    (ROWS, COLS),  # unsorted, negative, repeated
    (ROWS.reshape(6, 10), COLS.reshape(6, 10)),
    (np.array([[0], [22], [-1]]), [16, 0, 3, 3]),  # broadcast to (3, 4)
    ([3, 3, 3], 5),
    (np.array([22, 0], dtype=np.uint16), np.array([0, 16], dtype=np.int8)),
    (np.arange(23), np.arange(23) % 17),  # sorted by chunk: output runs
]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_get_matches_numpy(layout):
    a, ref = make(layout)
    for sel in SELECTIONS:
        np.testing.assert_array_equal(a.vindex[sel], ref[sel])
        np.testing.assert_array_equal(a.get_coordinate_selection(sel), ref[sel])
    mask = (ref % 3 == 0) & (ref % 5 != 0)
    np.testing.assert_array_equal(a.vindex[mask], ref[mask])
    np.testing.assert_array_equal(a.get_mask_selection(mask), ref[mask])
    np.testing.assert_array_equal(a.vindex[np.ones(SHAPE, bool)], ref.reshape(-1))
    assert a.vindex[4, -2].shape == (1,) and a.vindex[4, -2][0] == ref[4, -2]  # as zarr-python
    assert a.vindex[[], []].shape == (0,)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_set_matches_numpy(layout):
    a, ref = make(layout)
    for i, sel in enumerate(SELECTIONS):
        shape = ref[sel].shape
        value = (np.arange(np.prod(shape)) * 7 + 1000 * i).reshape(shape)
        a.vindex[sel] = value
        ref[sel] = value  # repeated points: the last value wins in both
        np.testing.assert_array_equal(a[...], ref)
    a.vindex[ROWS, COLS] = -5  # a scalar
    ref[ROWS, COLS] = -5
    a.vindex[np.array([[1], [2]]), [4, 5, 6]] = [7, 8, 9]  # broadcast to (2, 3)
    ref[np.array([[1], [2]]), [4, 5, 6]] = [7, 8, 9]
    a.set_coordinate_selection((np.array([[1], [2]]), [4, 5, 6]), np.arange(6))  # flat, as zarr-python takes
    ref[np.array([[1], [2]]), [4, 5, 6]] = np.arange(6).reshape(2, 3)
    mask = ref % 4 == 1
    a.vindex[mask] = -ref[mask]
    ref[mask] = -ref[mask]
    a.set_mask_selection(ref == 0, 99)
    ref[ref == 0] = 99
    np.testing.assert_array_equal(a[...], ref)


def test_last_write_wins_for_repeated_points():
    for layout in LAYOUTS:
        a, _ = make(layout)
        a.vindex[[2, 9, 2, 2], [3, 1, 3, 3]] = [1, 2, 3, 4]
        assert a[2, 3] == 4 and a[9, 1] == 2


@pytest.mark.parametrize("layout", LAYOUTS)
def test_missing_chunks_read_as_fill_value(layout):
    a, ref = make(layout, data=False, fill_value=-7)
    np.testing.assert_array_equal(a.vindex[ROWS, COLS], np.full(60, -7))
    a.vindex[[0, 22], [0, 16]] = [1, 2]  # two chunks stored, the rest missing
    ref[[0, 22], [0, 16]] = [1, 2]
    np.testing.assert_array_equal(a.vindex[ROWS, COLS], ref[ROWS, COLS])
    np.testing.assert_array_equal(a[...], ref)
    a.vindex[[0, 22], [0, 16]] = -7  # back to the fill value: nothing stored
    assert a.nchunks_initialized == 0


def test_full_cover_writes_do_not_read():
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=(8, 8), dtype="i2", chunks=(4, 4), fill_value=0)
    store.reset()
    a.vindex[np.ones((8, 8), bool)] = np.arange(64)
    assert store.counts["keys_requested"] == 0 and store.counts["keys_written"] == 4
    np.testing.assert_array_equal(a[...], np.arange(64).reshape(8, 8))


@pytest.mark.parametrize("shards", [None, (8,)])
def test_1d_whole_chunks_in_order(shards):
    # points covering whole chunks in order decode straight into the output and
    # are written without reading
    store = CountingStore(MemoryStore())
    b = zarrdask.create_array(store, shape=(10,), dtype="i4", chunks=(4,), shards=shards, fill_value=-1)
    store.reset()
    b.vindex[np.arange(10)] = np.arange(10) * 2
    assert store.counts["keys_requested"] == 0
    np.testing.assert_array_equal(b.vindex[np.arange(10)], np.arange(10) * 2)
    np.testing.assert_array_equal(b.vindex[np.arange(1, 9)], np.arange(1, 9) * 2)
    np.testing.assert_array_equal(b.vindex[np.arange(10)[::-1]], np.arange(10)[::-1] * 2)


def test_out_and_zarr_array_selections():
    a, ref = make("v3")
    out = np.zeros((6, 10), dtype="i4")
    assert a.get_coordinate_selection((ROWS.reshape(6, 10), COLS.reshape(6, 10)), out=out) is out
    np.testing.assert_array_equal(out, ref[ROWS, COLS].reshape(6, 10))
    mask = zarrdask.create_array(MemoryStore(), shape=SHAPE, dtype=bool, chunks=(8, 8))
    mask[3:5, 2:4] = True
    np.testing.assert_array_equal(a.vindex[mask], ref[3:5, 2:4].reshape(-1))
    a.vindex[mask] = 0
    assert (a[3:5, 2:4] == 0).all()


def test_strings():
    a = zarrdask.create_array(MemoryStore(), shape=(6, 5), dtype=str, chunks=(4, 2))
    ref = np.array([[f"{i}-{j}" * (i % 3) for j in range(5)] for i in range(6)], dtype=object)
    a[...] = ref
    assert a.vindex[[5, 0, 5], [4, 1, 4]].tolist() == [ref[5, 4], ref[0, 1], ref[5, 4]]
    a.vindex[[1, 2], [3, 3]] = ["x", "yz"]
    assert a[1, 3] == "x" and a[2, 3] == "yz"


# -- a[...] with several arrays --------------------------------------------------
def test_getitem_and_setitem_with_integer_arrays_are_points():
    a, ref = make("v3")
    np.testing.assert_array_equal(a[ROWS, COLS], ref[ROWS, COLS])
    np.testing.assert_array_equal(a[np.array([[1, 2], [3, 4]]), 5], ref[np.array([[1, 2], [3, 4]]), 5])
    mask = ref % 7 == 0
    np.testing.assert_array_equal(a[mask], ref[mask])
    np.testing.assert_array_equal(a[[3, 1], :], ref[[3, 1], :])  # still orthogonal
    a[[1, 2], [3, 4]] = [-1, -2]
    ref[[1, 2], [3, 4]] = [-1, -2]
    a[mask] = 0
    ref[mask] = 0
    np.testing.assert_array_equal(a[...], ref)
    b = zarrdask.create_array(MemoryStore(), shape=(10,), dtype="i4", chunks=(3,))
    b[...] = np.arange(10)
    np.testing.assert_array_equal(b[np.array([[1, 9], [0, 4]])], [[1, 9], [0, 4]])
    with pytest.raises(SelectionError, match=r"\.oindex.*\.vindex"):
        a[[1, 2], [3, 4], ...]


# -- errors ------------------------------------------------------------------------
def test_errors_and_nothing_written():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=SHAPE, dtype="i4", chunks=(5, 4))
    a[...] = 3
    snapshot = {k: store.get(k) for k in store.list()}
    with pytest.raises(BoundsCheckError, match="index 23 is out of bounds for dimension 0 of length 23"):
        a.vindex[[0, 23], [0, 0]]
    with pytest.raises(BoundsCheckError, match="index -18 .* dimension 1 of length 17"):
        a.vindex[[0], [-18]] = 1
    with pytest.raises(SelectionError, match="one integer array per dimension"):
        a.vindex[[0, 1]]
    with pytest.raises(SelectionError, match="dimension 1: .*slice"):
        a.vindex[[0, 1], :]
    with pytest.raises(SelectionError, match="dimension 0: .*float64"):
        a.vindex[np.array([1.0]), [2]]
    with pytest.raises(SelectionError, match=r"mask has shape \(23,\), the array \(23, 17\)"):
        a.vindex[np.ones(23, bool)]
    with pytest.raises(SelectionError, match="do not broadcast"):
        a.vindex[[1, 2], [1, 2, 3]]
    with pytest.raises(SelectionError, match=r"cannot broadcast a value of shape \(3,\)"):
        a.vindex[[1, 2, 3, 4], [1, 5, 9, 13]] = [1, 2, 3]  # the first chunks would be fine
    with pytest.raises(SelectionError, match="cannot convert"):
        a.vindex[[1, 2], [1, 5]] = ["x", "y"]
    assert {k: store.get(k) for k in store.list()} == snapshot
    with pytest.raises(ReadOnlyError):
        zarrdask.open_array(store, mode="r").vindex[[0], [0]] = 1
    zero_d = zarrdask.create_array(MemoryStore(), shape=(), dtype="i4", chunks=())
    with pytest.raises(SelectionError, match="0-d"):
        zero_d.vindex[()]


# -- store requests ------------------------------------------------------------------
def test_reads_fetch_every_chunk_in_one_call():
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=(40, 40), dtype="u1", chunks=(10, 10), fill_value=3)
    a[...] = 1
    store.reset()
    rows, cols = np.array([39, 0, 15, 0, 39, 15]), np.array([39, 0, 15, 1, 38, 16])
    np.testing.assert_array_equal(a.vindex[rows, cols], np.ones(6))
    assert store.counts["get_many_calls"] == 1 and store.counts["keys_requested"] == 3
    store.reset()
    a.vindex[rows, cols] = 9  # read-modify-write: one fetch, one store call
    assert store.counts["get_many_calls"] == 1 and store.counts["keys_requested"] == 3
    assert store.counts["set_calls"] == 1 and store.counts["keys_written"] == 3


def test_sharded_reads_fetch_only_inner_chunks_touched():
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=(32, 32), dtype="i4", chunks=(4, 4), shards=(16, 16),
                              compressors=None)
    data = np.arange(32 * 32).reshape(32, 32)
    a[...] = data
    shard_bytes = store.store.getsize("c/0/0")
    # three points in one inner chunk of shard (0, 0), one in an inner chunk of shard (1, 1)
    rows, cols = np.array([1, 30, 2, 3]), np.array([1, 17, 2, 0])
    with config.set(coalesce_gap=0):
        store.reset()
        np.testing.assert_array_equal(a.vindex[rows, cols], data[rows, cols])
    assert store.counts["get_many_calls"] == 0
    # per shard: the index, then the one inner chunk holding its points
    assert store.counts["get_ranges_calls"] == 4 and store.counts["ranges_requested"] == 4
    assert store.bytes_read < shard_bytes
    with config.set(coalesce_gap=0):
        store.reset()
        a.vindex[rows, cols] = -1
    assert store.counts["get_many_calls"] == 1 and store.counts["keys_requested"] == 2
    data[rows, cols] = -1
    np.testing.assert_array_equal(a[...], data)


# -- zarr-python 3 ---------------------------------------------------------------
zarr = pytest.importorskip("zarr")


def _zp(path, layout, data):
    kw = dict(LAYOUTS[layout])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(str(path), shape=SHAPE, dtype="i4", fill_value=-1,
                              zarr_format=kw.pop("zarr_format"), **kw)
        z[...] = data
    return z


ZP_SELECTIONS = [
    (ROWS, COLS),
    (ROWS.reshape(6, 10), COLS.reshape(6, 10)),
    ([[0], [22], [-1]], [16, 0, 3, 3]),
    (4, -2),
]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_zarr_python_writes_zarrdask_reads_the_same_points(layout, tmp_path):
    data = np.arange(np.prod(SHAPE), dtype="i4").reshape(SHAPE)[::-1]
    z = _zp(tmp_path / "a.zarr", layout, data)
    a = zarrdask.open_array(LocalStore(tmp_path / "a.zarr"), mode="r")
    for sel in ZP_SELECTIONS:
        expected = z.vindex[tuple(np.array(s) for s in sel)]  # zarr-python wraps negatives in place
        got = a.vindex[sel]
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    mask = data % 3 == 0
    np.testing.assert_array_equal(a.vindex[mask], z.vindex[mask])
    np.testing.assert_array_equal(a[[1, 2], [3, 4]], z[[1, 2], [3, 4]])
    np.testing.assert_array_equal(a[mask], z[mask])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_zarrdask_sets_points_zarr_python_reads_them(layout, tmp_path):
    a, ref = make(layout, LocalStore(tmp_path / "a.zarr"))
    a.vindex[ROWS, COLS] = np.arange(60)
    ref[ROWS, COLS] = np.arange(60)
    mask = ref % 5 == 2
    a.vindex[mask] = 1234
    ref[mask] = 1234
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
        np.testing.assert_array_equal(z[...], ref)
        np.testing.assert_array_equal(z.vindex[np.array(ROWS), np.array(COLS)], a.vindex[ROWS, COLS])
