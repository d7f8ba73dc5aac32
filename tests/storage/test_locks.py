"""Store.locked: LocalStore's cross-process locks (a spawned child contends),
where the lock files live, and the in-process lock table."""

from __future__ import annotations

import multiprocessing
import os
import time
import warnings
from contextlib import nullcontext

import numpy as np
import pytest

from zarrdask.errors import InvalidKeyError, ReadOnlyError
from zarrdask.storage import LocalStore, MemoryStore, PrefixStore, locks
from zarrdask.storage.local import LOCK_DIR

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


def test_lock_files_live_in_a_hidden_reserved_directory(tmp_path):
    store = LocalStore(tmp_path / "root")
    store.set_many({"a/zarr.json": b"{}", "a/c/0": b"x"})
    lock_dir = tmp_path / "root" / LOCK_DIR
    with store.locked(["a/c/0", "a/zarr.json"]):
        if locks.HAVE_FILE_LOCKS:
            held = sorted(p.name for p in lock_dir.iterdir())
            assert len(held) == 2 and all(n.endswith(".lock") and len(n) == 37 for n in held)
        assert sorted(store.list()) == ["a/c/0", "a/zarr.json"]
        assert store.list_dir("") == ["a"]
        assert list(store.list_prefix(".zarrdask")) == []
    assert not lock_dir.exists()  # lock files and their directory go with the last lock
    for bad in (f"{LOCK_DIR}/x", LOCK_DIR):
        with pytest.raises(InvalidKeyError, match="reserved"):
            store.set(bad, b"1")
        with pytest.raises(InvalidKeyError, match="reserved"):
            store.get(bad)
    with pytest.raises(InvalidKeyError, match="reserved"):
        list(store.list_prefix(f"{LOCK_DIR}/"))
    with store.locked(["a/c/0"]):
        store.delete_prefix("")
        assert list(store.list()) == []
        store.clean_temporary_files(max_age=0)
        assert lock_dir.is_dir() or not locks.HAVE_FILE_LOCKS  # both leave held locks alone


def test_lock_files_are_invisible_to_zarr_python(tmp_path):
    zarr = pytest.importorskip("zarr")
    for zarr_format in (2, 3):
        root = tmp_path / f"v{zarr_format}"
        group = zarr.open_group(root, mode="w", zarr_format=zarr_format)
        group.create_array("x", shape=(4,), chunks=(2,), dtype="i4")[:] = np.arange(4)
        store = LocalStore(root)
        key = "x/c/0" if zarr_format == 3 else "x/0"
        with store.locked([key, "zarr.json"]):
            with pytest.warns(UserWarning, match="not recognized") if locks.HAVE_FILE_LOCKS else nullcontext():
                opened = zarr.open_group(root, mode="r")
                assert [name for name, _ in opened.members()] == ["x"]  # skipped, not a node
            np.testing.assert_array_equal(opened["x"][:], np.arange(4))
            assert opened["x"].nchunks_initialized == 2  # not a chunk either
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # at rest: nothing for zarr-python to see
            assert [name for name, _ in zarr.open_group(root, mode="r").members()] == ["x"]


def test_locks_are_shared_per_location_and_leave_no_entries(tmp_path):
    data: dict = {}
    one, two = MemoryStore(data), MemoryStore(data)
    assert one._lock_space() == two._lock_space() != MemoryStore()._lock_space()
    assert LocalStore(tmp_path)._lock_space() == LocalStore(f"{tmp_path}/")._lock_space()
    assert PrefixStore(one, "p")._inner_keys(["k"]) == ["p/k"]
    with one.locked(["a", "b"]):
        assert {key for (_space, key) in locks._table} >= {"a", "b"}
    assert not [name for name in locks._table if name[0] == one._lock_space()]


def test_read_only_local_store_cannot_lock(tmp_path):
    with pytest.raises(ReadOnlyError, match="'k'"):
        LocalStore(tmp_path, read_only=True).locked(["k"])
    assert not (tmp_path / LOCK_DIR).exists()
