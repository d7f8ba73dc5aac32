"""Arrays with a rectilinear chunk grid (zarr-extensions chunk-grids/rectilinear)
through the core: selections, writes, sharding, resize/append, consolidation."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import MetadataError
from zarrdask.storage import MemoryStore
from zarrdask.storage.capabilities import BackgroundUploads, StreamingReads

MONTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("f8")


@pytest.fixture(params=["memory", "local"])
def store(request, tmp_path):
    return MemoryStore() if request.param == "memory" else str(tmp_path / "a.zarr")


@pytest.fixture(params=["unsharded", "sharded"])
def array(request, store):
    x = _data((365, 12))
    if request.param == "unsharded":
        a = zarrdask.create_array(store, shape=x.shape, chunks=(MONTHS, (5, 7)), dtype="f8")
    else:
        a = zarrdask.create_array(store, shape=x.shape, chunks=(1, 4), shards=(MONTHS, 12), dtype="f8")
    a[...] = x
    return a, x


def test_metadata_is_the_extensions(array):
    a, _ = array
    grid = a.metadata.to_json()["chunk_grid"]
    assert grid["name"] == "rectilinear" and grid["configuration"]["kind"] == "inline"
    shapes = grid["configuration"]["chunk_shapes"]
    assert shapes[0] == [31, 28, 31, 30, 31, 30, [31, 2], 30, 31, 30, 31]
    assert a.chunk_grid == "rectilinear"


@pytest.mark.parametrize("sel", [
    np.s_[...], np.s_[30:60], np.s_[29:33, 3:9], np.s_[::7, ::5], np.s_[364, :], np.s_[58, 4],
    np.s_[-40:-1:3, 11], np.s_[::-3, 2:],
])
def test_basic_selections(array, sel):
    a, x = array
    np.testing.assert_array_equal(a[sel], x[sel])


def test_orthogonal_and_points(array):
    a, x = array
    rows = np.array([0, 30, 31, 58, 59, 364, 100, 5])
    cols = np.array([11, 0, 4, 5])
    np.testing.assert_array_equal(a.oindex[rows, cols], x[np.ix_(rows, cols)])
    pts = (np.array([0, 30, 31, 364, 200]), np.array([0, 4, 5, 11, 6]))
    np.testing.assert_array_equal(a.vindex[pts], x[pts])
    mask = x > 1.5
    np.testing.assert_array_equal(a.vindex[mask], x[mask])


def test_partial_writes_and_points_write(array):
    a, x = array
    x = x.copy()
    x[25:65, 3:8] = -1.0
    a[25:65, 3:8] = -1.0
    pts = (np.array([0, 59, 364]), np.array([11, 5, 0]))
    x[pts] = 7.0
    a.vindex[pts] = 7.0
    np.testing.assert_array_equal(a[...], x)


def test_one_key_per_chunk(store):
    a = zarrdask.create_array(store, shape=(59, 10), chunks=((31, 28), (4, 6)), dtype="i2")
    a[...] = 1
    keys = sorted(k for k in a.store.list() if not k.endswith("zarr.json"))
    assert keys == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    assert a.nchunks == 4 and a.nchunks_initialized == 4
    assert a.chunks == ((31, 28), (4, 6)) == a.read_chunk_sizes == a.write_chunk_sizes


def test_each_chunk_is_encoded_with_its_own_shape():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(5,), chunks=((2, 3),), dtype="u1", compressors=None)
    a[...] = np.arange(5)
    assert store.get_many(["c/0", "c/1"]) == [bytes([0, 1]), bytes([2, 3, 4])]


def test_integer_axes_and_overflow():
    # the extension's example: 4 → [4, 4]; [[1, 3], 3] → [1, 1, 1, 3]; [4, 4, 4] overflows
    a = zarrdask.create_array(MemoryStore(), shape=(6, 6, 6), chunks=(4, (1, 1, 1, 3), (4, 4, 4)),
                              chunk_grid="rectilinear", dtype="i4")
    x = np.arange(216).reshape(6, 6, 6)
    a[...] = x
    np.testing.assert_array_equal(a[...], x)
    assert a.chunks == ((4, 2), (1, 1, 1, 3), (4, 2))
    assert a.nchunks == 2 * 4 * 2
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == [4, [[1, 3], 3], [[4, 3]]]


def test_regular_chunks_can_be_stored_as_rectilinear():
    a = zarrdask.create_array(MemoryStore(), shape=(10,), chunks=(3,), chunk_grid="rectilinear", dtype="i4")
    assert a.metadata.to_json()["chunk_grid"] == {
        "name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [3]}}
    assert a.chunks == (3,)  # a regular grid after all
    assert a.read_chunk_sizes == ((3, 3, 3, 1),)


def test_append_adds_an_edge_and_resize_keeps_edges(store):
    a = zarrdask.create_array(store, shape=(59, 4), chunks=((31, 28), 4), dtype="f8")
    x = _data((59, 4))
    a[...] = x
    more = _data((31, 4), 1)
    a.append(more)
    assert a.chunks == ((31, 28, 31), (4,))
    np.testing.assert_array_equal(a[...], np.concatenate([x, more]))
    a.resize(40, 4)  # shrink: the edges stay (overflow), cut-off data is reset
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"][0] == [31, 28, 31]
    assert sorted(k for k in a.store.list() if k.startswith("c/")) == ["c/0/0", "c/1/0"]
    a.resize(70, 4)
    np.testing.assert_array_equal(a[40:70], 0)
    np.testing.assert_array_equal(a[:40], x[:40])
    assert a.chunks == ((31, 28, 11), (4,))
    a.resize(95, 4)  # past the edges: one more edge
    assert a.chunks == ((31, 28, 31, 5), (4,))
    again = zarrdask.open_array(a.store, path=a.path)
    assert again.chunks == a.chunks


def test_sharded_rectilinear_outer_grid(store):
    a = zarrdask.create_array(store, shape=(365, 12), chunks=(1, 4), shards=(MONTHS, 12), dtype="f8")
    assert a.shards == (MONTHS, (12,))
    assert a.chunks == (1, 4)
    assert a.nshards == 12 and a.nchunks == 365 * 3
    a[...] = _data((365, 12))
    assert a.nshards_initialized == 12 and a.nchunks_initialized == 365 * 3
    doc = a.metadata.to_json()
    assert doc["codecs"][0]["name"] == "sharding_indexed"
    assert doc["codecs"][0]["configuration"]["chunk_shape"] == [1, 4]


def test_sharding_refusals():
    with pytest.raises(MetadataError, match="multiple of chunks"):
        zarrdask.create_array(MemoryStore(), shape=(59,), chunks=(2,), shards=((31, 28),), dtype="i4")
    with pytest.raises(MetadataError, match="inner chunks of shards are one regular grid"):
        zarrdask.create_array(MemoryStore(), shape=(60,), chunks=((30, 30),), shards=(60,), dtype="i4")


def test_a_stored_document_with_shards_that_do_not_divide_is_refused():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(60,), chunks=(2,), shards=((30, 30),), dtype="i4")
    doc = a.metadata.to_json()
    doc["chunk_grid"]["configuration"]["chunk_shapes"] = [[31, 29]]
    store.set_many({"zarr.json": json.dumps(doc).encode()})
    with pytest.raises(MetadataError, match="zarr.json.*divides the shard shape"):
        zarrdask.open_array(store)


@pytest.mark.parametrize("kwargs, match", [
    (dict(shape=(60,), chunks=((30, 20),)), r"chunks\[0\]: edge lengths \[30, 20\] sum to 50"),
    (dict(shape=(60,), chunks=((30, 30),), zarr_format=2), "Zarr v3 extension"),
    (dict(shape=(60,), chunks=((30, 30),), chunk_grid="regular"), "chunk_grid='rectilinear'"),
    (dict(shape=(60,), chunks=((30, 0, 30),)), r"chunk_shapes\[0\]\[1\]': found 0"),
])
def test_create_refusals(kwargs, match):
    with pytest.raises((MetadataError, ValueError), match=match):
        zarrdask.create_array(MemoryStore(), dtype="i4", **kwargs)


def test_consolidated_metadata_and_group_listing(tmp_path):
    g = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    a = g.create_array("t", shape=(365, 4), chunks=(MONTHS, 4), dtype="f4")
    a[...] = 1
    zarrdask.consolidate_metadata(str(tmp_path / "g.zarr"))
    root = json.loads((tmp_path / "g.zarr" / "zarr.json").read_text())
    entry = root["consolidated_metadata"]["metadata"]["t"]
    assert entry["chunk_grid"]["name"] == "rectilinear"
    t = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="r")["t"]
    assert t.chunks == (MONTHS, (4,))
    np.testing.assert_array_equal(t[...], 1)


def test_verify_array_decodes_each_chunk_with_its_shape(array):
    from zarrdask.core.verify import verify_array

    a, _ = array
    report = verify_array(a)
    assert not list(getattr(report, "problems", report))


def test_info_names_the_grid(array):
    a, _ = array
    assert a.info["Chunk grid"] == "rectilinear"


def test_random_selections_match_numpy():
    rng = np.random.default_rng(3)
    for trial in range(25):
        shape = tuple(int(n) for n in rng.integers(1, 30, 2))
        chunks = []
        for n in shape:
            edges, total = [], 0
            while total < n + int(rng.integers(0, 5)):
                e = int(rng.integers(1, 9))
                edges.append(e)
                total += e
            chunks.append(tuple(edges))
        x = rng.integers(0, 1000, shape).astype("i4")
        a = zarrdask.create_array(MemoryStore(), shape=shape, chunks=tuple(chunks), dtype="i4")
        a[...] = x
        for _ in range(5):
            sl = tuple(slice(int(rng.integers(0, n)), int(rng.integers(0, n + 1)), int(rng.integers(1, 4)))
                       for n in shape)
            np.testing.assert_array_equal(a[sl], x[sl])
            idx = tuple(np.sort(rng.integers(0, n, 4)) for n in shape)
            np.testing.assert_array_equal(a.oindex[idx], x[np.ix_(*idx)])
            pts = tuple(rng.integers(0, n, 6) for n in shape)
            np.testing.assert_array_equal(a.vindex[pts], x[pts])


def test_append_to_a_sharded_rectilinear_array_adds_whole_inner_chunks(store):
    a = zarrdask.create_array(store, shape=(60, 4), chunks=(4, 4), shards=((32, 28), 4), dtype="i4")
    x = np.arange(240).reshape(60, 4)
    a[...] = x
    more = np.arange(40).reshape(10, 4)
    a.append(more)  # a new shard of 12 (three inner chunks of 4) covers the 10 new rows
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"][0] == [32, 28, 12]
    again = zarrdask.open_array(a.store, path=a.path)
    np.testing.assert_array_equal(again[...], np.concatenate([x, more]))
    assert again.shards == ((32, 28, 10), (4,))


class _LatencyBoundStore(StreamingReads, BackgroundUploads, MemoryStore):
    """A memory store the engine treats as remote: streamed reads and writes,
    partial shard reads in lockstep batches (its mixins declare ``streaming``
    and ``background_uploads``)."""


@pytest.mark.parametrize("sharded", [False, True])
def test_streamed_reads_and_writes_use_each_chunks_shape(monkeypatch, sharded):
    from zarrdask.core import engine

    monkeypatch.setattr(engine, "GROUP_BYTES", 1)  # every write streams chunk by chunk
    x = _data((365, 12))
    kw = dict(chunks=(1, 4), shards=(MONTHS, 12)) if sharded else dict(chunks=(MONTHS, (5, 7)))
    a = zarrdask.create_array(_LatencyBoundStore(), shape=x.shape, dtype="f8", **kw)
    a[...] = x
    np.testing.assert_array_equal(a[...], x)
    np.testing.assert_array_equal(a[29:62, 3:9], x[29:62, 3:9])  # parts of chunks / shards
    np.testing.assert_array_equal(a.oindex[[0, 31, 364], [1, 11]], x[np.ix_([0, 31, 364], [1, 11])])
