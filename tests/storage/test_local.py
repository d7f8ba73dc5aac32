"""LocalStore specifics: atomic writes, keys that try to escape the root, layout."""

from __future__ import annotations

import builtins
import os
import pickle
import time
import uuid

import numpy as np
import pytest

from zarrdask.errors import InvalidKeyError, ReadOnlyError, StoreError, ValueChangedError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
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
    store.get("k")
    clone = pickle.loads(pickle.dumps(store))
    assert clone._real_root is None  # resolved again where it is unpickled
    assert clone == store and hash(clone) == hash(store)
    assert clone.get("k") == b"v"
    assert LocalStore(tmp_path, read_only=True) != store
    assert "LocalStore(" in repr(store)


# -- symbolic links ------------------------------------------------------------
@pytest.fixture
def linked(tmp_path):
    """A root with links inside it and links leading out of it; and the outside."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    (root / "real" / "x").write_bytes(b"inside")
    outside.mkdir()
    (outside / "secret").write_bytes(b"outside")
    os.symlink(root / "real", root / "in_dir")
    os.symlink(root / "real" / "x", root / "in_file")
    os.symlink(outside, root / "out_dir")
    os.symlink(outside / "secret", root / "out_file")
    return root, outside


def _outside_untouched(outside):
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert (outside / "secret").read_bytes() == b"outside"


def test_links_inside_the_root_work(linked):
    root, _ = linked
    store = LocalStore(root)
    assert store.get_many(["in_dir/x", "in_file"]) == [b"inside", b"inside"]
    assert store.get_ranges("in_dir/x", [SuffixRequest(2)]) == [b"de"]
    assert store.getsize("in_file") == 6 and store.exists("in_dir/x")
    store.set("in_dir/new", b"1")
    assert (root / "real" / "new").read_bytes() == b"1"
    store.delete("in_dir/new")
    assert not (root / "real" / "new").exists()
    with store.reader("in_file") as reader:
        assert reader.read([RangeRequest(0, 2)]) == [b"in"]


@pytest.mark.parametrize("key", ["out_dir/secret", "out_file"])
def test_reads_through_links_out_of_the_root_are_refused(linked, key):
    root, outside = linked
    store = LocalStore(root)
    for read in (
        lambda: store.get(key),
        lambda: store.get_many(["real/x", key]),
        lambda: store.get_ranges(key, [RangeRequest(0, 1)]),
        lambda: store.getsize(key),
        lambda: store.exists(key),
        lambda: store.reader(key).read([RangeRequest(0, 1)]),
        lambda: store.read_into(key, np.empty(7, "u1")),
    ):
        with pytest.raises(InvalidKeyError) as info:
            read()
        assert repr(key) in str(info.value) and str(outside) in str(info.value)
    assert LocalStore(root, outside_links="read").get(key) == b"outside"


@pytest.mark.parametrize("reads", ["default", "outside_links='read'"])
def test_writes_and_deletes_never_leave_the_root(linked, reads):
    root, outside = linked
    store = LocalStore(root) if reads == "default" else LocalStore(root, outside_links="read")
    for key in ("out_dir/new", "out_dir/deep/new"):
        with pytest.raises(InvalidKeyError) as info:
            store.set(key, b"x")
        assert repr(key) in str(info.value) and str(outside) in str(info.value)
        with pytest.raises(InvalidKeyError):
            store.set_many({"real/ok": b"1", key: b"x"})
    with pytest.raises(InvalidKeyError, match="'out_dir/secret'"):
        store.delete("out_dir/secret")
    with pytest.raises(InvalidKeyError, match="'out_dir/secret'"):
        store.delete_many(["real/x", "out_dir/secret"])
    with pytest.raises(InvalidKeyError, match="'out_dir/sub/'"):
        store.delete_prefix("out_dir/sub/")
    _outside_untouched(outside)
    store.set("out_file", b"replaced")  # the link itself is replaced, not followed
    assert not (root / "out_file").is_symlink() and store.get("out_file") == b"replaced"
    store.delete_prefix("out_dir/")  # removes the link, not what it names
    assert not os.path.lexists(root / "out_dir")
    _outside_untouched(outside)


def test_deleting_everything_removes_links_not_their_targets(linked):
    root, outside = linked
    store = LocalStore(root)
    store.delete("in_file")
    assert (root / "real" / "x").exists()  # the link went, not the file
    store.delete_prefix("")
    assert os.listdir(root) == []
    _outside_untouched(outside)


def test_listing_skips_links_out_of_the_root(linked):
    root, _ = linked
    assert sorted(LocalStore(root).list()) == ["in_file", "real/x"]  # linked dirs are not walked
    assert LocalStore(root).list_dir("") == ["in_dir", "in_file", "real"]
    assert sorted(LocalStore(root, outside_links="read").list()) == ["in_file", "out_file", "real/x"]
    assert LocalStore(root, outside_links="read").list_dir("") == ["in_dir", "in_file", "out_dir", "out_file", "real"]
    with pytest.raises(ValueError, match="outside_links"):
        LocalStore(root, outside_links="follow")


# -- readers -----------------------------------------------------------------
def test_reader_keeps_the_file_it_opened_and_detects_in_place_rewrites(tmp_path):
    store = LocalStore(tmp_path)
    store.set("shard", b"A" * 100)
    with store.reader("shard") as reader:
        assert reader.exact and reader.read([SuffixRequest(4)]) == [b"AAAA"]
        store.set("shard", b"B" * 100)  # replaced by rename: the reader keeps the old file
        assert reader.read([RangeRequest(0, 4)]) == [b"AAAA"]
        assert not reader.unchanged()
    store.set("shard", b"C" * 100)
    with store.reader("shard") as reader:
        reader.read([RangeRequest(0, 1)])
        with open(tmp_path / "shard", "r+b") as f:  # another tool rewriting in place
            f.write(b"D" * 120)
        with pytest.raises(ValueChangedError, match="'shard'"):
            reader.read([RangeRequest(0, 4)])


def test_zarr_python_local_store_gets_the_exact_reader(tmp_path):
    zarr = pytest.importorskip("zarr")
    from zarrdask.storage import ZarrPythonStore

    store = ZarrPythonStore(zarr.storage.LocalStore(tmp_path))
    store.set("k", b"old value")
    with store.reader("k") as reader:
        assert reader.exact and reader.read([RangeRequest(0, 3)]) == [b"old"]
        store.set("k", b"new value")  # zarr-python writes by rename too
        assert reader.read([SuffixRequest(5)]) == [b"value"] and reader.read([RangeRequest(0, 3)]) == [b"old"]


# -- temporary files of killed writers -----------------------------------------
def _age(path, seconds):
    then = time.time() - seconds
    os.utime(path, (then, then))


def _temp(directory, name, age):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f".{name}.{uuid.uuid4().hex}.tmp"
    path.write_bytes(b"partial")
    _age(path, age)
    return path


def test_clean_temporary_files_removes_only_old_unlocked_ones_of_ours(tmp_path):
    store = LocalStore(tmp_path, temp_max_age=None)  # no background cleaning: this test cleans
    store.set_many({"a/c/0": b"1", "b/zarr.json": b"{}"})
    old = [_temp(tmp_path / "a" / "c", "0", 7200), _temp(tmp_path / "b", "zarr.json", 4000)]
    young = _temp(tmp_path / "a" / "c", "1", 60)
    busy = _temp(tmp_path / "b", "x", 7200)
    others = [tmp_path / "a" / ".0.tmp", tmp_path / "a" / f".x.{'G' * 32}.tmp", tmp_path / "a" / "data.tmp"]
    for path in others:
        path.write_bytes(b"not ours")
        _age(path, 7200)
    fd = os.open(busy, os.O_RDONLY)  # a live writer holds its file locked
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        removed = store.clean_temporary_files(max_age=3600)
    finally:
        os.close(fd)
    assert sorted(removed) == sorted(str(p.relative_to(tmp_path)) for p in old)
    assert not any(p.exists() for p in old)
    assert young.exists() and all(p.exists() for p in others)
    assert busy.exists() == (fcntl is not None)
    assert store.get_many(["a/c/0", "b/zarr.json"]) == [b"1", b"{}"]
    assert store.clean_temporary_files(max_age=0, prefix="a/") == [str(young.relative_to(tmp_path))]


def test_first_write_into_a_directory_cleans_it_in_the_background(tmp_path):
    from zarrdask.storage.local import _janitor

    stale = _temp(tmp_path / "arr", "0", 7200)
    LocalStore(tmp_path / "arr").set("1", b"x")  # a directory written for the first time
    assert _janitor.wait()
    assert not stale.exists()
    kept = _temp(tmp_path / "other", "0", 7200)
    LocalStore(tmp_path / "other", temp_max_age=None).set("1", b"x")
    assert _janitor.wait() and kept.exists()
    with pytest.raises(ReadOnlyError):
        LocalStore(tmp_path, read_only=True).clean_temporary_files()


def test_a_write_in_progress_holds_its_temp_file_locked(tmp_path, monkeypatch):
    store = LocalStore(tmp_path, temp_max_age=None)
    seen = []
    real_replace = os.replace

    def replace(src, dst, **kwargs):  # make the temp file look old just before it is renamed
        _age(os.path.join(tmp_path, src), 7200)
        seen.append(store.clean_temporary_files(max_age=3600))
        return real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    store.set("k", b"value")
    monkeypatch.undo()
    assert store.get("k") == b"value"
    if fcntl is not None:
        assert seen == [[]]  # locked: not taken for a killed writer's file


# -- get_buffers: aligned reads for the chunk engine ---------------------------------
def test_get_buffers_returns_the_values_in_aligned_read_only_buffers(tmp_path):
    import numpy as np

    from zarrdask._memory import ALIGN

    store = LocalStore(str(tmp_path))
    values = {"a/c/0": bytes(range(256)) * 300, "a/c/1": b"", "b": b"xyz"}
    store.set_many(values)
    got = store.get_buffers(["a/c/0", "missing", "a/c/1", "b"])
    assert [None if g is None else bytes(g) for g in got] == [values["a/c/0"], None, b"", b"xyz"]
    big = got[0]
    assert big.readonly
    assert np.frombuffer(big, dtype=np.uint8).ctypes.data % ALIGN == 0
    assert got == [None if g is None else g for g in got]  # plain bytes-like values
    assert store.get_buffers([]) == []


def test_stores_without_in_place_reads_are_read_with_get_many():
    """get_buffers is the in_place_reads capability (LocalStore's); a store
    without it is read by the engine with its own get_many."""
    import numpy as np

    import zarrdask
    from zarrdask.storage import CountingStore
    from zarrdask.storage.capabilities import IN_PLACE_READS
    from zarrdask.storage.memory import MemoryStore

    store = MemoryStore()
    store.set("k", b"v")
    assert IN_PLACE_READS not in store.capabilities and not hasattr(store, "get_buffers")
    assert store.get_many(["k", "nope"]) == [b"v", None]
    counting = CountingStore(store)
    a = zarrdask.create_array(counting, shape=(4,), dtype="u1", chunks=(2,))
    a[...] = np.arange(4, dtype="u1")
    counting.reset()
    assert a[...].tolist() == [0, 1, 2, 3]
    assert counting.counts["get_many_calls"] == 1 and counting.counts["keys_requested"] == 2


def test_get_buffers_goes_through_an_overridden_get_many(tmp_path):
    class Recording(LocalStore):
        def __init__(self, root):
            super().__init__(root)
            self.seen = []

        def get_many(self, keys):
            self.seen.extend(keys)
            return super().get_many(keys)

    store = Recording(str(tmp_path))
    store.set("k", b"v")
    assert store.get_buffers(["k"]) == [b"v"]
    assert store.seen == ["k"]
    from zarrdask.storage.capabilities import IN_PLACE_READS

    assert IN_PLACE_READS in LocalStore(str(tmp_path)).capabilities
    assert IN_PLACE_READS not in store.capabilities  # the engine reads it through its get_many
