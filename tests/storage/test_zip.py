"""ZipStore specifics: overwrite and delete, reopening, modes, zarr-python interop."""

from __future__ import annotations

import gc
import logging
import os
import pickle
import warnings
import zipfile

import numpy as np
import pytest

from zarrdask.errors import InvalidKeyError, ReadOnlyError, StoreError
from zarrdask.storage import OffsetRequest, RangeRequest, SuffixRequest, ZipStore


def _members(path):
    with zipfile.ZipFile(path) as zf:
        return [info.filename for info in zf.infolist()]


def _contents(path):
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def test_overwrite_reads_latest_and_leaves_no_duplicates(tmp_path):
    path = tmp_path / "a.zip"
    with ZipStore(path, mode="w") as store:
        store.set("k", b"one")
        store.set("k", b"two")
        assert store.get("k") == b"two"
        assert store.get_ranges("k", [SuffixRequest(2)]) == [b"wo"]
        store.set("k", b"three")
        assert store.getsize("k") == 5
        assert list(store.list()) == ["k"]
    assert _members(path) == ["k"]
    assert ZipStore(path).get("k") == b"three"


def test_delete_and_reopen(tmp_path):
    path = tmp_path / "a.zip"
    store = ZipStore(path, mode="w")
    store.set_many({"a/0": b"0", "a/1": b"1", "b": b"b"})
    store.delete("a/0")
    assert store.get("a/0") is None
    assert sorted(store.list()) == ["a/1", "b"]
    store.close()
    assert sorted(_members(path)) == ["a/1", "b"]
    reopened = ZipStore(path, mode="r")
    assert reopened.get_many(["a/0", "a/1", "b"]) == [None, b"1", b"b"]
    reopened.close()


def test_append_mode_overwrites_and_deletes_earlier_members(tmp_path):
    path = tmp_path / "a.zip"
    with ZipStore(path, mode="w") as store:
        store.set_many({"keep": b"k", "replace": b"old", "drop": b"d"})
    with ZipStore(path, mode="a") as store:
        assert store.get("replace") == b"old"
        store.set("replace", b"new")
        store.delete("drop")
        store.set("added", b"a")
        store.delete("never-there")
    assert _contents(path) == {"keep": b"k", "replace": b"new", "added": b"a"}
    assert sorted(_members(path)) == ["added", "keep", "replace"]


def test_append_creates_missing_file(tmp_path):
    path = tmp_path / "new.zip"
    with ZipStore(path, mode="a") as store:
        store.set("x", b"1")
    assert _contents(path) == {"x": b"1"}


def test_modes(tmp_path):
    path = tmp_path / "a.zip"
    with pytest.raises(StoreError, match="no zip file"):
        ZipStore(path, mode="r")
    ZipStore(path, mode="w").close()
    with pytest.raises(StoreError, match="already exists"):
        ZipStore(path, mode="x")
    with pytest.raises(ValueError, match="mode"):
        ZipStore(path, mode="rw")
    (tmp_path / "bad.zip").write_bytes(b"not a zip file at all")
    with pytest.raises(StoreError, match="not a zip file"):
        ZipStore(tmp_path / "bad.zip")
    store = ZipStore(path, mode="r")
    assert not store.writable
    with pytest.raises(ReadOnlyError, match="'k'"):
        store.set("k", b"v")
    with pytest.raises(ReadOnlyError):
        store.delete("k")
    store.close()


def test_w_truncates(tmp_path):
    path = tmp_path / "a.zip"
    with ZipStore(path, mode="w") as store:
        store.set("old", b"1")
    with ZipStore(path, mode="w") as store:
        assert store.get("old") is None
        store.set("new", b"2")
    assert _contents(path) == {"new": b"2"}


def test_flush_makes_a_valid_archive_while_open(tmp_path):
    path = tmp_path / "a.zip"
    store = ZipStore(path, mode="w")
    store.set("a", b"1")
    store.set("a", b"2")
    store.set("b", b"3")
    store.flush()
    assert _contents(path) == {"a": b"2", "b": b"3"}
    store.set("c", b"4")  # still writable after a flush
    store.close()
    assert _contents(path) == {"a": b"2", "b": b"3", "c": b"4"}


def test_close_is_idempotent_and_final(tmp_path):
    store = ZipStore(tmp_path / "a.zip", mode="w")
    store.set("a", b"1")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get("a")


def test_failed_rewrite_leaves_previous_archive_and_can_be_retried(tmp_path, monkeypatch):
    path = tmp_path / "a.zip"
    store = ZipStore(path, mode="w")
    store.set_many({"a": b"1", "b": b"2"})
    store.flush()
    store.set("a", b"changed")
    store.delete("b")

    def crash(src, dst, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StoreError, match="cannot rewrite"):
        store.close()
    monkeypatch.undo()
    assert _contents(path) == {"a": b"1", "b": b"2"}  # as of the last flush
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []
    assert store.get_many(["a", "b"]) == [b"changed", None]  # the store is unchanged
    store.close()
    assert _contents(path) == {"a": b"changed"}


def test_unclosed_store_is_finalised_on_garbage_collection(tmp_path):
    path = tmp_path / "a.zip"
    store = ZipStore(path, mode="w")
    store.set("a", b"1")
    store.set("a", b"2")
    del store
    gc.collect()
    assert _contents(path) == {"a": b"2"}


def test_pickle_reopens_by_path_for_reading(tmp_path):
    path = tmp_path / "a.zip"
    store = ZipStore(path, mode="w")
    store.set_many({"a": b"1", "b": b"2"})
    store.set("a", b"3")
    clone = pickle.loads(pickle.dumps(store))
    assert not clone.writable
    assert clone.get_many(["a", "b"]) == [b"3", b"2"]
    store.set("c", b"4")  # the original keeps writing
    store.close()
    assert pickle.loads(pickle.dumps(store)).get("c") == b"4"
    clone.close()


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_partial_reads(tmp_path, compression):
    path = tmp_path / "a.zip"
    value = bytes(range(256)) * 40
    with ZipStore(path, mode="w", compression=compression) as store:
        store.set("v", value)
        store.set("pad", b"x" * 1000)
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo("v").compress_type == compression
    store = ZipStore(path)
    requests = [RangeRequest(5, 10), OffsetRequest(len(value) - 7), SuffixRequest(3), RangeRequest(len(value) - 2, 10)]
    assert store.get_ranges("v", requests) == [value[5:15], value[-7:], value[-3:], value[-2:]]
    store.close()


def test_reads_member_with_local_extra_field(tmp_path):
    """The data offset comes from the local header, whose extra field may differ."""
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo("k")
        info.extra = b"\xca\xfe\x04\x00abcd"  # an unknown extra block
        zf.writestr(info, b"0123456789")
    store = ZipStore(path)
    assert store.get_ranges("k", [RangeRequest(2, 3), SuffixRequest(2)]) == [b"234", b"89"]
    store.close()


def test_zarr_python_zip_is_readable(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "zp.zip"
    zstore = zarr.storage.ZipStore(path, mode="w")
    arr = zarr.create_array(zstore, name="x", shape=(10,), chunks=(5,), dtype="i4")
    arr[:] = np.arange(10, dtype="i4")
    zstore.close()

    store = ZipStore(path)
    keys = set(store.list())
    assert {"zarr.json", "x/zarr.json", "x/c/0", "x/c/1"} <= keys
    assert store.list_dir("x") == ["c", "zarr.json"]
    assert store.get("x/zarr.json").startswith(b"{")
    assert store.getsize("x/c/0") == len(store.get("x/c/0"))
    store.close()


def test_zip_written_here_opens_in_zarr_python(tmp_path):
    zarr = pytest.importorskip("zarr")
    mem = zarr.storage.MemoryStore()
    arr = zarr.create_array(mem, shape=(6, 4), chunks=(3, 2), dtype="f8", compressors=None)
    arr[:] = np.arange(24, dtype="f8").reshape(6, 4)
    items = {key: value.to_bytes() for key, value in mem._store_dict.items()}

    path = tmp_path / "ours.zip"
    with ZipStore(path, mode="w") as store:
        store.set_many(items)
        store.set("c/0/0", b"garbage to be overwritten")  # exercise the rewrite path
        store.set("c/0/0", items["c/0/0"])
    zstore = zarr.storage.ZipStore(path, mode="r")
    back = zarr.open_array(zstore, mode="r")
    np.testing.assert_array_equal(back[:], np.arange(24, dtype="f8").reshape(6, 4))
    zstore.close()


# -- archives from elsewhere ---------------------------------------------------
HOSTILE = ["../evil", "/abs", "a\\b", "a//b", "ok/./x", "C:/x", "a/", "x/../../y"]


def test_hostile_member_names_are_not_listed_and_are_logged(tmp_path, caplog):
    path = tmp_path / "hostile.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        with zipfile.ZipFile(path, "w") as zf:
            for name in HOSTILE:
                zf.writestr(name, b"bad")
            zf.writestr("good/zarr.json", b"{}")
            zf.writestr("dup", b"first")
            zf.writestr("dup", b"second")
    with caplog.at_level(logging.WARNING, logger="zarrdask.storage"):
        store = ZipStore(path)
        keys = sorted(store.list())
    assert keys == ["dup", "good/zarr.json"]
    assert store.list_dir("") == ["dup", "good"]
    assert sorted(store.list_prefix("")) == keys
    assert store.get("dup") == b"second"  # the last member of a name, as zipfile reads it
    logged = " ".join(record.getMessage() for record in caplog.records)
    for name in [n for n in HOSTILE if not n.endswith("/")] + ["dup"]:
        assert repr(name) in logged, name
    for name in HOSTILE:
        with pytest.raises(InvalidKeyError):
            store.get(name)
    store.close()


def test_hostile_names_are_logged_once_per_archive(tmp_path, caplog):
    path = tmp_path / "h.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("../x", b"1")
    with caplog.at_level(logging.WARNING, logger="zarrdask.storage"):
        with ZipStore(path, mode="a") as store:
            store.set("fine", b"2")
            store.flush()
            assert list(store.list()) == ["fine"]
    assert sum("'../x'" in r.getMessage() for r in caplog.records) == 1


# -- readers -----------------------------------------------------------------
@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_reader_keeps_its_member_across_overwrites_and_rewrites(tmp_path, compression):
    path = tmp_path / "a.zip"
    store = ZipStore(path, mode="w", compression=compression)
    store.set("shard", b"A" * 64)
    with store.reader("shard") as reader:
        assert reader.exact and reader.read([SuffixRequest(2)]) == [b"AA"]
        store.set("shard", b"B" * 64)  # a new member
        assert reader.read([RangeRequest(0, 2)]) == [b"AA"] and not reader.unchanged()
        store.flush()  # the archive rewritten into a new file
        assert reader.read([RangeRequest(10, 2)]) == [b"AA"]
        store.close()
        assert reader.read([OffsetRequest(62)]) == [b"AA"]
    assert ZipStore(path).get("shard") == b"B" * 64
