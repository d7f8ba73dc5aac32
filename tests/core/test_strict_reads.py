"""Strict reads (``read_missing_chunks=False``): a missing chunk, or a shard's
inner chunk whose index entry is empty, is a ChunkNotFoundError naming the
store, the array and the key; reads with every chunk present cost the same
requests as reads that fill."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import ChunkNotFoundError
from zarrdask.storage import CountingStore, LocalStore

from ..cli._util import subprocess_env

DATA = np.arange(1, 13 * 11 + 1, dtype="i4").reshape(13, 11)  # no element equals the fill value 0

KINDS = {
    "v2": dict(zarr_format=2, chunks=(4, 4)),
    "v3": dict(zarr_format=3, chunks=(4, 4)),
    "sharded": dict(zarr_format=3, chunks=(2, 2), shards=(4, 4)),
}


def _make(tmp_path, kind, **open_kw):
    """The array written with DATA, then opened again from its directory."""
    path = tmp_path / f"{kind}.zarr"
    a = zarrdask.create_array(path, shape=DATA.shape, dtype="i4", fill_value=0, **KINDS[kind])
    a[...] = DATA
    return zarrdask.open_array(path, mode="r", **open_kw)


def _key(a, coords):
    return a.layout.chunk_key(coords)


@pytest.mark.parametrize("kind", list(KINDS))
def test_deleted_chunk_is_an_error_when_strict(tmp_path, kind):
    a = _make(tmp_path, kind, read_missing_chunks=False)
    key = _key(a, (1, 1))  # elements [4:8, 4:8]
    os.remove(tmp_path / f"{kind}.zarr" / key)
    for selection in [np.s_[...], np.s_[5:7, 3:6], np.s_[6, 6]]:
        with pytest.raises(ChunkNotFoundError) as info:
            a[selection]
        assert info.value.keys == (key,) and info.value.missing == ((key, None),)
    with pytest.raises(ChunkNotFoundError):
        a.oindex[[0, 5], [5]]
    with pytest.raises(ChunkNotFoundError):
        a.vindex[[0, 5], [0, 5]]
    # a read not touching it is served
    np.testing.assert_array_equal(a[:4, :], DATA[:4, :])
    np.testing.assert_array_equal(a[8:, 8:], DATA[8:, 8:])
    # default: the fill value
    filled = zarrdask.open_array(tmp_path / f"{kind}.zarr", mode="r")
    expected = DATA.copy()
    expected[4:8, 4:8] = 0
    np.testing.assert_array_equal(filled[...], expected)
    assert filled.read_missing_chunks is True and a.read_missing_chunks is False


@pytest.mark.parametrize("kind", list(KINDS))
def test_message_names_store_path_key_and_the_way_out(tmp_path, kind):
    path = tmp_path / f"{kind}.zarr"
    g = zarrdask.open_group(path.parent / "g.zarr", mode="w", zarr_format=KINDS[kind]["zarr_format"])
    a = g.create_array("sub/x", shape=DATA.shape, dtype="i4", fill_value=0,
                       **{k: v for k, v in KINDS[kind].items() if k != "zarr_format"})
    a[...] = DATA
    a.store.delete(_key(a, (0, 2)))
    strict = zarrdask.open_array(path.parent / "g.zarr", path="sub/x", mode="r", read_missing_chunks=False)
    with pytest.raises(ChunkNotFoundError) as info:
        strict[...]
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert repr(strict.store) in message and str(path.parent / "g.zarr") in message
    assert "'/sub/x'" in message and repr(_key(a, (0, 2))) in message
    assert "read_missing_chunks=True" in message


def test_many_missing_chunks_one_error_with_a_capped_list():
    store = zarrdask.storage.MemoryStore()
    a = zarrdask.create_array(store, shape=(60,), dtype="i4", chunks=(2,), fill_value=0)
    a[...] = np.arange(1, 61)
    gone = [_key(a, (i,)) for i in range(0, 30, 2)]  # 15 chunks
    store.delete_many(gone)
    strict = a.with_config({"read_missing_chunks": False})
    with pytest.raises(ChunkNotFoundError) as info:
        strict[...]
    assert sorted(info.value.keys) == sorted(gone)
    assert "15 chunks are not stored" in str(info.value) and "and 5 more" in str(info.value)


def _sharded_with_empty_inner(tmp_path, shape=(13, 11)):
    """A sharded array whose shard (1, 1) lost inner chunk (1, 0) — elements
    [6:8, 4:6] — to a write of the fill value (an empty index entry)."""
    path = tmp_path / "s.zarr"
    data = np.arange(1, np.prod(shape) + 1, dtype="i4").reshape(shape)
    a = zarrdask.create_array(path, shape=shape, dtype="i4", fill_value=0, chunks=(2, 2), shards=(4, 4))
    a[...] = data
    size = os.path.getsize(path / "c/1/1")
    a[6:8, 4:6] = 0  # write_empty_chunks=False: the inner chunk is left out of the shard
    assert os.path.exists(path / "c/1/1") and os.path.getsize(path / "c/1/1") < size
    data[6:8, 4:6] = 0
    return path, data


def test_empty_inner_chunk_is_an_error_when_strict(tmp_path):
    path, data = _sharded_with_empty_inner(tmp_path)
    a = zarrdask.open_array(path, mode="r", read_missing_chunks=False)
    # whole shard decoded (the whole array, the whole shard) and partial reads (index, then inner chunks)
    for selection in [np.s_[...], np.s_[4:8, 4:8], np.s_[6:8, 4:6], np.s_[7, 5], np.s_[5:7, 3:5]]:
        with pytest.raises(ChunkNotFoundError) as info:
            a[selection]
        assert info.value.missing == (("c/1/1", (1, 0)),)
        assert "shard 'c/1/1' inner chunk [1, 0]" in str(info.value)
    # other inner chunks of the same shard, and other shards, are served
    np.testing.assert_array_equal(a[4:6, 4:8], data[4:6, 4:8])
    np.testing.assert_array_equal(a[6:8, 6:8], data[6:8, 6:8])
    np.testing.assert_array_equal(a[:4], data[:4])
    np.testing.assert_array_equal(zarrdask.open_array(path, mode="r")[...], data)


def test_edge_shards_inner_chunks_past_the_end_do_not_count(tmp_path):
    # 13 x 11 in shards of 4 x 4, inner chunks 2 x 2: the edge shards hold inner chunks
    # entirely past the array's end, which are never stored
    a = _make(tmp_path, "sharded", read_missing_chunks=False)
    np.testing.assert_array_equal(a[...], DATA)
    np.testing.assert_array_equal(a[12, :], DATA[12, :])
    np.testing.assert_array_equal(a[11:, 9:], DATA[11:, 9:])


def test_missing_shard_when_strict(tmp_path):
    a = _make(tmp_path, "sharded", read_missing_chunks=False)
    os.remove(tmp_path / "sharded.zarr" / "c/0/1")
    for selection in [np.s_[...], np.s_[1:3, 5:6]]:  # the whole shard read, and a part of it
        with pytest.raises(ChunkNotFoundError) as info:
            a[selection]
        assert info.value.missing == (("c/0/1", None),)


def test_missing_chunks_and_inner_chunks_in_one_error(tmp_path):
    path, _ = _sharded_with_empty_inner(tmp_path)
    a = zarrdask.open_array(path, mode="r", read_missing_chunks=False)
    os.remove(path / "c/0/0")
    with pytest.raises(ChunkNotFoundError) as info:
        a[...]
    assert set(info.value.missing) == {("c/0/0", None), ("c/1/1", (1, 0))}
    assert info.value.keys == ("c/0/0", "c/1/1")


def test_config_setting_and_per_array_override(tmp_path):
    a = _make(tmp_path, "v3")
    os.remove(tmp_path / "v3.zarr" / _key(a, (0, 0)))
    assert zarrdask.config.get("read_missing_chunks") is True
    with zarrdask.config.set(read_missing_chunks=False):
        assert a.read_missing_chunks is False
        with pytest.raises(ChunkNotFoundError):
            a[...]
        lenient = zarrdask.open_array(tmp_path / "v3.zarr", mode="r", read_missing_chunks=True)
        assert lenient[0, 0] == 0
        opened = zarrdask.open(tmp_path / "v3.zarr", mode="r")
        with pytest.raises(ChunkNotFoundError):
            opened[0, 0]
    assert a[0, 0] == 0  # the setting is looked at on every read
    strict = zarrdask.open(tmp_path / "v3.zarr", mode="r", read_missing_chunks=False)
    with pytest.raises(ChunkNotFoundError):
        strict[0, 0]
    with pytest.raises(ValueError, match="must be True or False"):
        zarrdask.config.set(read_missing_chunks="no")
    with pytest.raises(ValueError, match="unknown option"):
        a.with_config({"read_missing": False})


def test_environment_variable_sets_the_initial_value():
    code = "import zarrdask; print(zarrdask.config.get('read_missing_chunks'))"
    for value, expected in [("0", "False"), ("false", "False"), ("1", "True"), ("", "True")]:
        env = {**subprocess_env(), "ZARRDASK_READ_MISSING_CHUNKS": value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected


def test_setting_travels_with_the_pickled_array(tmp_path):
    a = _make(tmp_path, "v2", read_missing_chunks=False)
    os.remove(tmp_path / "v2.zarr" / _key(a, (2, 2)))
    b = pickle.loads(pickle.dumps(a))
    assert b.read_missing_chunks is False
    with pytest.raises(ChunkNotFoundError):
        b[...]
    assert pickle.loads(pickle.dumps(a.with_config({"read_missing_chunks": None}))).read_missing_chunks is True


# -- no request more ---------------------------------------------------------------------
def _counts(store, path, selection, strict):
    counting = CountingStore(LocalStore(path, read_only=True))
    a = zarrdask.open_array(counting, mode="r", read_missing_chunks=not strict)
    counting.reset()
    got = a[selection]
    return got, counting.counts


@pytest.mark.parametrize("kind, selection", [
    ("v2", np.s_[...]), ("v3", np.s_[...]), ("v3", np.s_[3:9, 2:5]),
    ("sharded", np.s_[...]),  # whole shards decoded
    ("sharded", np.s_[3:9, 2:5]),  # parts of shards: the index, then the inner chunks
    ("sharded", np.s_[4:8, 4:8]),  # one whole shard
])
def test_same_requests_with_strict_reads_on_and_off(tmp_path, kind, selection):
    _make(tmp_path, kind)
    path = tmp_path / f"{kind}.zarr"
    lenient, lenient_counts = _counts(None, path, selection, strict=False)
    strict, strict_counts = _counts(None, path, selection, strict=True)
    np.testing.assert_array_equal(strict, DATA[selection])
    np.testing.assert_array_equal(lenient, strict)
    assert strict_counts == lenient_counts
    assert strict_counts["get_many_calls"] + strict_counts["get_ranges_calls"] > 0


def test_same_requests_on_an_http_server(faulty_http):
    """Counted by the server: plain chunks, whole shards and parts of shards,
    strict and not, every chunk present."""
    a = zarrdask.create_array(faulty_http.root / "p.zarr", shape=DATA.shape, dtype="i4", fill_value=0,
                              chunks=(4, 4))
    a[...] = DATA
    s = zarrdask.create_array(faulty_http.root / "s.zarr", shape=DATA.shape, dtype="i4", fill_value=0,
                              chunks=(2, 2), shards=(4, 4))
    s[...] = DATA
    for name, selection in [("p.zarr", np.s_[...]), ("s.zarr", np.s_[...]), ("s.zarr", np.s_[3:9, 2:5])]:
        logs = []
        for strict in (False, True):
            b = zarrdask.open_array(f"{faulty_http.url}/{name}", mode="r", read_missing_chunks=not strict)
            faulty_http.reset()
            np.testing.assert_array_equal(b[selection], DATA[selection])
            logs.append(sorted((r.method, r.path, r.range or "") for r in faulty_http.log.requests))
        assert logs[0] == logs[1] and logs[0]


# -- verify ---------------------------------------------------------------------------------
def test_verify_reports_missing_chunks_when_strict(tmp_path):
    from zarrdask.core.verify import verify_array, verify_hierarchy
    from zarrdask.dask.verify import verify

    from ..cli._util import run

    path, _ = _sharded_with_empty_inner(tmp_path)  # shard c/1/1 lacks inner chunk (1, 0)
    os.remove(path / "c/0/0")
    a = zarrdask.open_array(path, mode="r")
    assert verify_array(a) == []  # by default a missing chunk is the fill value
    for problems in (verify_array(a, read_missing_chunks=False),
                     verify_hierarchy(a, read_missing_chunks=False).problems,
                     verify(a, read_missing_chunks=False).problems,
                     verify_array(a.with_config({"read_missing_chunks": False}))):
        found = sorted((p.key, p.inner, p.error) for p in problems)
        # the edge shards' inner chunks past the array's end do not count
        assert found == [("c/0/0", None, "ChunkNotFoundError"), ("c/1/1", ((1, 0),), "ChunkNotFoundError")]
    assert run("verify", str(path)).exit_code == 0
    result = run("verify", "--strict", str(path))
    assert result.exit_code == 1
    assert "c/0/0: ChunkNotFoundError" in result.output and "c/1/1 inner chunk (1, 0)" in result.output


def test_error_pickles_with_what_it_lists():
    import pickle

    from zarrdask.errors import ChunkNotFoundError

    e = pickle.loads(pickle.dumps(ChunkNotFoundError("msg", [("c/0", None), ("c/1", (1, 0))])))
    assert str(e) == "msg" and e.missing == (("c/0", None), ("c/1", (1, 0))) and e.keys == ("c/0", "c/1")
