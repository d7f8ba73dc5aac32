"""ReadOnlyStore, PrefixStore and CountingStore."""

from __future__ import annotations

import logging
import pickle

import pytest

from zarrdask.errors import InvalidKeyError, ReadOnlyError
from zarrdask.storage import (
    CountingStore,
    MemoryStore,
    OffsetRequest,
    PrefixStore,
    RangeRequest,
    ReadOnlyStore,
    SuffixRequest,
    ZipStore,
    locks,
    read_only,
)


# -- CountingStore -----------------------------------------------------------
def test_counting_store_counts_reads():
    store = CountingStore(MemoryStore({"a": b"123", "b": b"4567"}))
    assert store.counts == dict.fromkeys(store.counts, 0)
    assert store.get_many(["a", "b", "missing"]) == [b"123", b"4567", None]
    assert store.get("a") == b"123"
    assert store.get_ranges("b", [RangeRequest(0, 2), SuffixRequest(1), OffsetRequest(3)]) == [b"45", b"7", b"7"]
    assert store.get_ranges("missing", [RangeRequest(0, 1)]) is None
    counts = store.counts
    assert counts["get_many_calls"] == 2
    assert counts["keys_requested"] == 4
    assert counts["get_ranges_calls"] == 2
    assert counts["ranges_requested"] == 4
    assert counts["bytes_read"] == 3 + 4 + 3 + 4
    assert store.get_many_calls == 2 and store.bytes_read == 14  # also attributes


def test_counting_store_counts_writes_lists_and_lookups():
    store = CountingStore(MemoryStore())
    store.set("a", b"12")
    store.set_many({"b/0": b"345", "b/1": b"6"})
    store.set_many({})
    store.delete("a")
    store.delete_many(["b/0"])
    store.delete_prefix("zzz/")
    list(store.list())
    list(store.list_prefix("b/"))
    store.list_dir("")
    store.exists("b/1")
    store.getsize("b/1")
    counts = store.counts
    assert counts["set_calls"] == 3
    assert counts["keys_written"] == 3
    assert counts["bytes_written"] == 6
    assert counts["delete_calls"] == 3
    assert counts["list_calls"] == 3
    assert counts["exists_calls"] == 1
    assert counts["getsize_calls"] == 1
    assert counts["get_many_calls"] == 0  # lookups were forwarded, not emulated by reads


def test_counting_store_reset_and_snapshot():
    store = CountingStore(MemoryStore({"a": b"1"}))
    store.get("a")
    snapshot = store.counts
    store.get("a")
    assert snapshot["get_many_calls"] == 1  # a snapshot, not a live view
    store.reset()
    assert all(v == 0 for v in store.counts.values())


def test_counting_store_forwards_flags():
    assert CountingStore(MemoryStore()).writable
    assert not CountingStore(MemoryStore(read_only=True)).writable
    assert not CountingStore(ReadOnlyStore(MemoryStore())).writable
    assert CountingStore(MemoryStore()).supports_partial_reads


def test_counting_store_logs(caplog):
    store = CountingStore(MemoryStore({"a": b"1"}), log=True)
    with caplog.at_level(logging.DEBUG, logger="zarrdask.storage"):
        store.get_many(["a", "b"])
        store.set("c", b"22")
        store.list_dir("")
    messages = [r.getMessage() for r in caplog.records if r.name == "zarrdask.storage"]
    assert any("get_many 2 keys ['a', 'b'] -> 1 bytes" in m for m in messages)
    assert any("set 'c' 2 bytes" in m for m in messages)
    assert any("list_dir ''" in m for m in messages)


def test_counting_store_silent_by_default(caplog):
    store = CountingStore(MemoryStore())
    with caplog.at_level(logging.DEBUG, logger="zarrdask.storage"):
        store.get("a")
    assert not [r for r in caplog.records if r.name == "zarrdask.storage"]


def test_counting_store_pickles():
    store = CountingStore(MemoryStore({"a": b"1"}))
    store.get("a")
    clone = pickle.loads(pickle.dumps(store))
    assert clone.counts["get_many_calls"] == 1
    clone.get("a")
    assert clone.counts["get_many_calls"] == 2


def test_counting_store_sees_full_keys_under_prefix_store():
    counting = CountingStore(MemoryStore())
    sub = PrefixStore(counting, "grp")
    sub.set_many({"x": b"1", "y": b"2"})
    assert sub.get_many(["x", "y"]) == [b"1", b"2"]
    assert counting.counts["get_many_calls"] == 1  # batching survives wrapping
    assert counting.counts["keys_requested"] == 2
    assert sorted(counting.list()) == ["grp/x", "grp/y"]


# -- ReadOnlyStore -----------------------------------------------------------
def test_read_only_store():
    inner = MemoryStore({"a/b": b"1"})
    ro = ReadOnlyStore(inner)
    assert not ro.writable and ro.listable and ro.supports_partial_reads
    assert ro.get("a/b") == b"1"
    assert ro.get_ranges("a/b", [SuffixRequest(1)]) == [b"1"]
    assert ro.list_dir("a") == ["b"]
    for op, key in [
        (lambda: ro.set("a/b", b"2"), "a/b"),
        (lambda: ro.set_many({"new": b"2"}), "new"),
        (lambda: ro.delete("a/b"), "a/b"),
        (lambda: ro.delete_many(["a/b"]), "a/b"),
        (lambda: ro.delete_prefix("a/"), "a/"),
    ]:
        with pytest.raises(ReadOnlyError) as info:
            op()
        assert repr(key) in str(info.value)
    assert inner.data == {"a/b": b"1"}
    assert read_only(ro) is ro
    assert isinstance(read_only(inner), ReadOnlyStore)


def test_read_only_store_forwards_partial_reads_flag(tmp_path):
    with ZipStore(tmp_path / "a.zip", mode="w") as store:
        store.set("k", b"v")
    with ReadOnlyStore(ZipStore(tmp_path / "a.zip")) as ro:
        assert ro.supports_partial_reads and ro.listable
        assert ro.get("k") == b"v"


def test_wrappers_require_a_store():
    with pytest.raises(TypeError, match="dict"):
        ReadOnlyStore({})  # type: ignore[arg-type]


# -- PrefixStore -------------------------------------------------------------
def test_prefix_store_keys_are_relative():
    inner = MemoryStore({"other": b"x", "g/ab": b"y"})
    sub = PrefixStore(inner, "/g//a/")
    assert sub.prefix == "g/a"
    sub.set("zarr.json", b"{}")
    sub.set("c/0", b"0")
    assert sorted(inner.data) == ["g/a/c/0", "g/a/zarr.json", "g/ab", "other"]
    assert sorted(sub.list()) == ["c/0", "zarr.json"]
    assert sorted(sub.list_prefix("c")) == ["c/0"]
    assert sub.list_dir("") == ["c", "zarr.json"]
    assert sub.list_dir("c/") == ["0"]
    assert sub.getsize("c/0") == 1 and sub.exists("zarr.json")
    sub.delete_prefix("")
    assert sorted(inner.data) == ["g/ab", "other"]


def test_prefix_store_empty_prefix_is_the_store():
    inner = MemoryStore({"a": b"1"})
    sub = PrefixStore(inner, "")
    assert list(sub.list()) == ["a"]
    assert sub.get("a") == b"1"


def test_prefix_store_validates_relative_keys():
    sub = PrefixStore(MemoryStore(), "g")
    for key in ["../escape", "/abs", "a//b", ""]:
        with pytest.raises(InvalidKeyError) as info:
            sub.set(key, b"x")
        assert repr(key) in str(info.value)
    with pytest.raises(InvalidKeyError):
        PrefixStore(MemoryStore(), "a/../b")


def test_prefix_store_pickles_and_compares():
    sub = PrefixStore(MemoryStore({"p/a": b"1"}), "p")
    clone = pickle.loads(pickle.dumps(sub))
    assert clone.get("a") == b"1"
    inner = MemoryStore()
    assert PrefixStore(inner, "p") == PrefixStore(inner, "/p/")
    assert PrefixStore(inner, "p") != PrefixStore(inner, "q")


# -- readers and locks through wrappers --------------------------------------
def test_wrappers_forward_readers_and_locks():
    inner = MemoryStore({"p/k": b"0123456789"})
    counting = CountingStore(PrefixStore(inner, "p"))
    with counting.reader("k") as reader:
        assert reader.key == "k" and reader.exact  # the MemoryStore's exact reader
        assert reader.read([RangeRequest(0, 2), SuffixRequest(3)]) == [b"01", b"789"]
        inner.set("p/k", b"changed!!!")
        assert reader.read([RangeRequest(2, 2)]) == [b"23"]  # still the first version
        assert not reader.unchanged()
    counts = counting.counts
    assert counts["readers_opened"] == 1 and counts["unchanged_calls"] == 1
    assert counts["get_ranges_calls"] == 2 and counts["ranges_requested"] == 3 and counts["bytes_read"] == 7
    with counting.locked(["k"]):  # the inner store's key is locked
        assert [key for space, key in locks._table if space == ("memory", id(inner.data))] == ["p/k"]
    assert counting.counts["lock_calls"] == 1
    with pytest.raises(ReadOnlyError, match="'k'"):
        ReadOnlyStore(inner).locked(["k"])
    assert ReadOnlyStore(inner).reader("p/k").read([RangeRequest(0, 1)]) == [b"c"]
