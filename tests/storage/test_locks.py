"""Store.locked: LocalStore's cross-process locks (a spawned child contends),
where the lock files live, and the in-process lock table."""

from __future__ import annotations

import multiprocessing
import os
import time
import warnings

import numpy as np
import pytest

from zarrdask.errors import InvalidKeyError, ReadOnlyError
from zarrdask.storage import LocalStore, MemoryStore, PrefixStore, locks

from ._lock_child import contend


def _wait_for(path, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)


@pytest.mark.skipif(not locks.HAVE_FILE_LOCKS, reason="no flock on this platform")
def test_local_store_locks_exclude_another_process(tmp_path):
    root, signals = tmp_path / "root", tmp_path / "signals"
    signals.mkdir()
    store = LocalStore(root)
    store.set("counter", b"0")
    increments = 25
    child = multiprocessing.get_context("spawn").Process(target=contend, args=(str(root), str(signals), increments))
    with store.locked(["k"]):
        child.start()
        _wait_for(signals / "trying")
        time.sleep(0.3)  # the child is blocked in locked() (or, if locks were broken, inside)
        (signals / "released").touch()
    _wait_for(signals / "counting")
    for _ in range(increments):
        with store.locked(["counter"]):
            value = int(store.get("counter"))
            time.sleep(0.002)
            store.set("counter", str(value + 1).encode())
    child.join(60)
    assert child.exitcode == 0, "the child took a lock the parent held"
    assert store.get("counter") == str(2 * increments).encode()  # no update lost


def _lock_files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.zarrdask-lock"))


def test_lock_files_sit_next_to_their_keys_only_while_held(tmp_path):
    root = tmp_path / "root"
    store = LocalStore(root)
    store.set_many({"a/zarr.json": b"{}", "a/c/0": b"x"})
    with store.locked(["a/c/0", "a/zarr.json", "a/c/new"]):
        if locks.HAVE_FILE_LOCKS:
            assert _lock_files(root) == ["a/.zarr.json.zarrdask-lock", "a/c/.0.zarrdask-lock", "a/c/.new.zarrdask-lock"]
        assert sorted(store.list()) == ["a/c/0", "a/zarr.json"]  # never listed
        assert store.list_dir("a/c") == ["0"]
        with store.locked(["a/c/0"]):  # re-entrant: no second lock file
            assert len(_lock_files(root)) == 3 or not locks.HAVE_FILE_LOCKS
    assert _lock_files(root) == []  # removed on release
    assert sorted(p.name for p in (root / "a").iterdir()) == ["c", "zarr.json"]
    with store.locked(["b/new/key"]):  # a directory made for the lock alone is pruned after it
        pass
    assert not (root / "b").exists()
    for bad in ("a/.0.zarrdask-lock", ".zarr.json.zarrdask-lock"):
        with pytest.raises(InvalidKeyError, match="lock file"):
            store.set(bad, b"1")
        with pytest.raises(InvalidKeyError, match="lock file"):
            store.get(bad)
    assert store.get("a/.zarrdask-lock") is None  # "." + suffix alone is an ordinary name


def test_lock_files_never_leave_the_root(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    root.mkdir()
    os.symlink(outside, root / "out")
    store = LocalStore(root)
    with pytest.raises(InvalidKeyError, match="'out/k'"):
        store.locked(["out/k"]).__enter__()
    assert list(outside.iterdir()) == []
    assert not locks._table  # nothing left held


def test_stale_lock_files_of_killed_holders_are_cleaned(tmp_path):
    store = LocalStore(tmp_path, temp_max_age=None)
    store.set("a/k", b"1")
    stale = tmp_path / "a" / ".k.zarrdask-lock"  # what a killed holder leaves: empty, unlocked
    stale.touch()
    old = time.time() - 7200
    os.utime(stale, (old, old))
    assert list(store.list()) == ["a/k"]
    with store.locked(["a/k"]):  # reused by the next holder...
        pass
    assert not stale.exists()  # ...and removed on release
    stale.touch()
    os.utime(stale, (old, old))
    assert store.clean_temporary_files(max_age=3600) == ["a/.k.zarrdask-lock"]


def test_lock_files_are_invisible_to_zarr_python(tmp_path):
    zarr = pytest.importorskip("zarr")
    for zarr_format in (2, 3):
        root = tmp_path / f"v{zarr_format}"
        group = zarr.open_group(root, mode="w", zarr_format=zarr_format)
        group.create_array("x", shape=(4,), chunks=(2,), dtype="i4")[:] = np.arange(4)
        store = LocalStore(root)
        chunk, meta = ("x/c/0", "x/zarr.json") if zarr_format == 3 else ("x/0", "x/.zarray")
        with store.locked([chunk, meta]), warnings.catch_warnings():
            warnings.simplefilter("error")  # not even a warning
            opened = zarr.open_group(root, mode="r")
            assert [name for name, _ in opened.members()] == ["x"]
            np.testing.assert_array_equal(opened["x"][:], np.arange(4))
            assert opened["x"].nchunks_initialized == 2  # not taken for a chunk
        group_meta = "zarr.json" if zarr_format == 3 else ".zgroup"
        with store.locked([group_meta]):
            if locks.HAVE_FILE_LOCKS:  # a group's own key: zarr-python lists it, warns, skips it
                with pytest.warns(UserWarning, match="not recognized"):
                    assert [name for name, _ in zarr.open_group(root, mode="r").members()] == ["x"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # released: nothing left for zarr-python to see
            assert [name for name, _ in zarr.open_group(root, mode="r").members()] == ["x"]


def test_locks_are_shared_per_location_and_leave_no_entries(tmp_path):
    data: dict = {}
    one, two = MemoryStore(data), MemoryStore(data)
    assert one.location == two.location != MemoryStore().location
    assert LocalStore(tmp_path).location == LocalStore(f"{tmp_path}/").location
    assert PrefixStore(one, "p")._inner_keys(["k"]) == ["p/k"]
    with one.locked(["a", "b"]):
        assert {key for (_space, key) in locks._table} >= {"a", "b"}
    assert not [name for name in locks._table if name[0] == one.location]


def test_read_only_local_store_cannot_lock(tmp_path):
    with pytest.raises(ReadOnlyError, match="'k'"):
        LocalStore(tmp_path, read_only=True).locked(["k"])
    assert list(tmp_path.iterdir()) == []
