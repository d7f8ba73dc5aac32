"""Conformance checks of the optional store capabilities a store declares.

:class:`~zarrdask.testing.store.StoreConformanceTests` inherits
:class:`CapabilityConformanceTests`: every store running the suite has each
capability in its ``capabilities`` checked
(:mod:`zarrdask.storage.capabilities`), and the ones it does not declare
skipped — a store written against the required interface alone passes with
all of them skipped but the first, which checks that what is declared is
known and comes with its methods.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from typing import Any

import numpy as np
import pytest

from ..errors import InvalidKeyError, ValueChangedError
from ..storage.abc import Store
from ..storage.byte_range import RangeRequest, SuffixRequest
from ..storage.capabilities import (
    BACKGROUND_UPLOADS,
    CONDITIONAL_WRITES,
    EXACT_READERS,
    IN_PLACE_READS,
    KNOWN,
    PROCESS_LOCKS,
    STREAMING,
    BackgroundUploads,
    ConditionalWrites,
    InPlaceReads,
    StreamingReads,
)

__all__ = ["CapabilityConformanceTests"]

#: the class a store declaring a capability with methods must be an instance of
MIXINS = {
    IN_PLACE_READS: InPlaceReads,
    STREAMING: StreamingReads,
    BACKGROUND_UPLOADS: BackgroundUploads,
    CONDITIONAL_WRITES: ConditionalWrites,
}


def _b(value: object) -> bytes | None:
    return None if value is None else bytes(value)  # type: ignore[arg-type]


def _declares(store: Store, capability: str) -> None:
    if capability not in store.capabilities:
        pytest.skip(f"the store does not declare {capability!r}")


def _wait_for(path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)


def contend_for_lock(store: Store, signals: str) -> None:
    """The child process of :meth:`CapabilityConformanceTests.test_process_locks`:
    take the lock the parent holds; exit 0 if it was granted only after the
    parent released it (the parent writes ``released`` just before), 3 if not."""
    open(os.path.join(signals, "trying"), "w").close()
    with store.locked(["lock/k"]):
        waited = os.path.exists(os.path.join(signals, "released"))
    sys.exit(0 if waited else 3)


class CapabilityConformanceTests:
    """Checks of every capability a store declares (fixtures as in
    :class:`~zarrdask.testing.store.StoreConformanceTests`)."""

    def test_declared_capabilities_are_known_and_implemented(self, make_store: Any) -> None:
        store = make_store({"k": b"v"})
        caps = store.capabilities
        assert isinstance(caps, frozenset) and caps <= KNOWN, f"unknown capabilities {sorted(caps - KNOWN)}"
        for name, mixin in MIXINS.items():
            if name in caps:
                assert isinstance(store, mixin), f"{name!r} is declared, but the store is no {mixin.__name__}"

    def test_in_place_reads(self, make_store: Any) -> None:
        values = np.arange(12, dtype="i4")
        store = make_store({"in/k": values.tobytes(), "in/empty": b""})
        _declares(store, IN_PLACE_READS)
        out = np.zeros((5, 6), dtype="i4")
        assert store.read_into("in/k", out[1:4, 1:5]) is True
        np.testing.assert_array_equal(out[1:4, 1:5], values.reshape(3, 4))
        assert (out[0] == 0).all() and (out[:, 0] == 0).all() and (out[:, 5] == 0).all()
        assert store.read_into("in/missing", out[1:4, 1:5]) is False
        assert store.read_into("in/k", out[1:3, 1:5]) is None  # 48 bytes stored, 32 wanted
        got = store.get_buffers(["in/k", "in/missing", "in/empty"])
        assert [_b(g) for g in got] == [values.tobytes(), None, b""]
        assert store.get_buffers([]) == []

    def test_streaming(self, make_store: Any) -> None:
        data = {f"s/{i}": bytes([i]) * (i + 1) for i in range(12)}
        store = make_store(data)
        _declares(store, STREAMING)
        keys = [*data, "s/missing", "s/0"]
        for limit in (None, 1, 3):
            pairs = list(store.iter_many(keys, limit))
            assert sorted(i for i, _ in pairs) == list(range(len(keys))), "every key once"
            assert {i: _b(v) for i, v in pairs} == {i: data.get(k) for i, k in enumerate(keys)}
        assert list(store.iter_many([])) == []

    def test_background_uploads(self, store: Store) -> None:
        _declares(store, BACKGROUND_UPLOADS)
        items = {f"u/{i}": bytes([i]) * 100 for i in range(20)}
        with store.uploads() as uploads:
            for key, value in items.items():
                uploads.set(key, value)
        assert [_b(v) for v in store.get_many(list(items))] == list(items.values())
        with pytest.raises(InvalidKeyError):  # a failure is raised when the context is left
            with store.uploads(limit=2) as uploads:
                uploads.set("u/fine", b"1")
                uploads.set("../escape", b"2")
        assert _b(store.get("u/fine")) == b"1"

    def test_exact_readers(self, store: Store) -> None:
        _declares(store, EXACT_READERS)
        old, new = bytes(range(64)), bytes(reversed(range(64)))
        store.set("x/shard", old)
        with store.reader("x/shard") as reader:
            assert [_b(v) for v in reader.read([SuffixRequest(8)])] == [old[-8:]]
            assert reader.exact is True
            store.set("x/shard", new)
            try:
                got = reader.read([RangeRequest(0, 16)])
            except ValueChangedError as e:
                assert "'x/shard'" in str(e)
            else:
                assert [_b(v) for v in got] == [old[:16]], "an exact reader served another version"
            assert reader.unchanged() is False

    def test_conditional_writes(self, store: Store) -> None:
        _declares(store, CONDITIONAL_WRITES)
        cw: Any = store
        store.set("cw/k", b"one")
        (value, version), (missing, no_version) = cw.get_versioned(["cw/k", "cw/missing"])
        assert _b(value) == b"one" and missing is None and no_version is None
        assert cw.get_versioned([]) == []
        store.set("cw/k", b"two")  # another writer, after the read
        assert cw.set_if({"cw/k": (b"three", version), "cw/missing": (b"new", None)}) == ["cw/k"]
        assert [_b(v) for v in store.get_many(["cw/k", "cw/missing"])] == [b"two", b"new"]
        ((value, version),) = cw.get_versioned(["cw/k"])
        assert _b(value) == b"two"
        assert cw.set_if({"cw/k": (b"four", version)}) == []
        assert _b(store.get("cw/k")) == b"four"
        assert cw.set_if({"cw/missing": (b"again", None)}) == ["cw/missing"], "created twice"
        assert _b(store.get("cw/missing")) == b"new"
        assert cw.set_if({}) == []
        with pytest.raises(InvalidKeyError):
            cw.set_if({"../escape": (b"x", None)})

    def test_process_locks(self, store: Store, tmp_path: Any) -> None:
        _declares(store, PROCESS_LOCKS)
        signals = str(tmp_path / "lock-signals")
        os.makedirs(signals)
        child = multiprocessing.get_context("spawn").Process(target=contend_for_lock, args=(store, signals))
        with store.locked(["lock/k"]):
            child.start()
            _wait_for(os.path.join(signals, "trying"))
            time.sleep(0.3)  # the child is blocked in locked() (or, if locks were broken, inside)
            open(os.path.join(signals, "released"), "w").close()
        child.join(60)
        assert child.exitcode == 0, "another process took a lock this one held"
