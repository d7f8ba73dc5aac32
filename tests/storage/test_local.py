"""LocalStore specifics: atomic writes, keys that try to escape the root, layout."""

from __future__ import annotations

import builtins
import os
import pickle

import pytest

from zarrdask.errors import InvalidKeyError, ReadOnlyError, StoreError
from zarrdask.storage import LocalStore, OffsetRequest, RangeRequest, SuffixRequest


def _tree(root):
    """Every file and directory under root, relative, '/'-separated."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for name in dirnames + filenames:
            out.add(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return out


def test_layout_follows_key_translation(tmp_path):
    store = LocalStore(tmp_path)
    store.set("a/b/c", b"1")
    store.set(".zgroup", b"2")
    assert (tmp_path / "a" / "b" / "c").read_bytes() == b"1"
    assert (tmp_path / ".zgroup").read_bytes() == b"2"
    assert _tree(tmp_path) == {"a", "a/b", "a/b/c", ".zgroup"}


def test_atomic_write_crash_keeps_old_value(tmp_path, monkeypatch):
    store = LocalStore(tmp_path)
    store.set("a/b", b"old")

    def crash(src, dst, **kwargs):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StoreError) as info:
        store.set("a/b", b"new value")
    assert "'a/b'" in str(info.value)
    monkeypatch.undo()
    assert store.get("a/b") == b"old"
    assert os.listdir(tmp_path / "a") == ["b"]  # no temp file left behind
    assert list(store.list()) == ["a/b"]


def test_atomic_write_interrupted_by_non_os_error(tmp_path, monkeypatch):
    store = LocalStore(tmp_path)
    store.set("k", b"old")

    def crash(src, dst, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        store.set("k", b"new")
    monkeypatch.undo()
    assert store.get("k") == b"old"
    assert os.listdir(tmp_path) == ["k"]


def test_temp_files_are_not_listed(tmp_path):
    store = LocalStore(tmp_path)
    store.set("a/zarr.json", b"{}")
    stray = tmp_path / "a" / f".zarr.json.{'0' * 32}.tmp"  # left by a crashed writer
    stray.write_bytes(b"partial")
    (tmp_path / "a" / ".zattrs").write_bytes(b"{}")  # a real dot-file key
    (tmp_path / "a" / "x.tmp").write_bytes(b"")  # an ordinary key ending in .tmp
    assert sorted(store.list()) == ["a/.zattrs", "a/x.tmp", "a/zarr.json"]
    assert store.list_dir("a") == [".zattrs", "x.tmp", "zarr.json"]


@pytest.mark.parametrize(
    "key", ["..", "../escape", "a/../../escape", "/abs", "/etc/passwd", "a\\b", "..\\escape", "a\x00b", "a//b", "a/", "", "C:/x"]
)
def test_keys_cannot_escape_root(tmp_path, key):
    root = tmp_path / "root"
    store = LocalStore(root)
    store.set("ok", b"1")
    before = _tree(tmp_path)
    for op in (
        lambda: store.set(key, b"x"),
        lambda: store.get(key),
        lambda: store.get_ranges(key, [RangeRequest(0, 1)]),
        lambda: store.delete(key),
        lambda: store.getsize(key),
        lambda: store.set_many({key: b"x"}),
    ):
        with pytest.raises(InvalidKeyError) as info:
            op()
        assert repr(key) in str(info.value)
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("prefix", ["../", "..", "/", "/abs/", "a//"])
def test_prefixes_cannot_escape_root(tmp_path, prefix):
    (tmp_path / "outside").write_bytes(b"keep me")
    store = LocalStore(tmp_path / "root")
    store.set("x", b"1")
    with pytest.raises(InvalidKeyError):
        store.delete_prefix(prefix)
    with pytest.raises(InvalidKeyError):
        list(store.list_prefix(prefix))
    with pytest.raises(InvalidKeyError):
        store.list_dir(prefix)
    assert (tmp_path / "outside").read_bytes() == b"keep me"


def test_missing_root_reads_as_empty(tmp_path):
    store = LocalStore(tmp_path / "does" / "not" / "exist")
    assert store.get("a") is None
    assert store.get_many(["a", "b/c"]) == [None, None]
    assert store.get_ranges("a", [SuffixRequest(1)]) is None
    assert not store.exists("a")
    assert list(store.list()) == []
    assert list(store.list_prefix("a/")) == []
    assert store.list_dir("") == []
    store.delete("a")
    store.delete_prefix("")
    store.delete_prefix("a/")
    assert not (tmp_path / "does").exists()
    store.set("a/b", b"1")  # creates the root and parents
    assert store.get("a/b") == b"1"


def test_delete_prefix_root_keeps_root_dir(tmp_path):
    store = LocalStore(tmp_path / "root")
    store.set_many({"a/b": b"1", "c": b"2", ".zgroup": b"3"})
    store.delete_prefix("")
    assert (tmp_path / "root").is_dir()
    assert os.listdir(tmp_path / "root") == []


def test_delete_prunes_empty_directories(tmp_path):
    store = LocalStore(tmp_path)
    store.set("a/b/c/d", b"1")
    store.set("a/x", b"2")
    store.delete("a/b/c/d")
    assert _tree(tmp_path) == {"a", "a/x"}
    assert store.list_dir("a") == ["x"]
    store.delete_prefix("a/")
    assert _tree(tmp_path) == set()
    assert tmp_path.is_dir()


def test_get_ranges_uses_positional_reads(tmp_path, monkeypatch):
    store = LocalStore(tmp_path)
    value = bytes(range(256)) * 64
    store.set("v", value)
    calls = []
    real_pread = os.pread

    def spy(fd, n, offset):
        calls.append((n, offset))
        return real_pread(fd, n, offset)

    def no_open(*args, **kwargs):
        raise AssertionError("get_ranges must not open() and read the whole file")

    monkeypatch.setattr(os, "pread", spy)
    monkeypatch.setattr(builtins, "open", no_open)
    got = store.get_ranges("v", [RangeRequest(100, 10), SuffixRequest(4), OffsetRequest(len(value) - 3)])
    monkeypatch.undo()
    assert got == [value[100:110], value[-4:], value[-3:]]
    assert calls == [(10, 100), (4, len(value) - 4), (3, len(value) - 3)]


def test_directory_is_not_a_key(tmp_path):
    store = LocalStore(tmp_path)
    store.set("a/b", b"1")
    assert store.get("a") is None
    assert store.get_ranges("a", [RangeRequest(0, 1)]) is None
    assert store.getsize("a") is None
    store.delete("a")  # not a key: nothing happens
    assert store.get("a/b") == b"1"
    with pytest.raises(StoreError, match="'a'"):
        store.set("a", b"cannot replace a directory")
    with pytest.raises(StoreError, match="'a/b/c'"):
        store.set("a/b/c", b"parent is a file")


def test_read_only(tmp_path):
    LocalStore(tmp_path).set("a", b"1")
    store = LocalStore(tmp_path, read_only=True)
    assert not store.writable
    with pytest.raises(ReadOnlyError, match="'b'"):
        store.set("b", b"2")
    with pytest.raises(ReadOnlyError, match="'a'"):
        store.delete("a")
    with pytest.raises(ReadOnlyError):
        store.delete_prefix("")
    assert _tree(tmp_path) == {"a"}


def test_set_many_concurrent_and_fsync(tmp_path):
    store = LocalStore(tmp_path, fsync=True)
    items = {f"c/{i}": bytes([i]) * 100 for i in range(40)}
    store.set_many(items)
    assert store.get_many(list(items)) == list(items.values())
    assert not [n for n in os.listdir(tmp_path / "c") if n.endswith(".tmp")]


def test_file_url_root_pickle_and_equality(tmp_path):
    store = LocalStore(f"file://{tmp_path}")
    assert store.root == str(tmp_path)
    store.set("k", b"v")
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store and hash(clone) == hash(store)
    assert clone.get("k") == b"v"
    assert LocalStore(tmp_path, read_only=True) != store
    assert "LocalStore(" in repr(store)
