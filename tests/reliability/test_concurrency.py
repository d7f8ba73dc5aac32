"""No silent wrong data under concurrency: a partial shard read never applies one
version's index to another version's bytes, and concurrent writes to parts of one
chunk or shard never lose an update — between threads, and between processes on
a local store."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

import zarrdask
from zarrdask.core import consistent
from zarrdask.errors import CorruptChunkError, ValueChangedError
from zarrdask.storage import FsspecStore, LocalStore, MemoryStore, RangeRequest
from zarrdask.storage.abc import VerifyingReader
from zarrdask.storage.wrappers import ForwardingReader, WrapperStore

SHAPE, CHUNKS, SHARDS = (64, 64), (8, 8), (64, 64)
REGION = (slice(40, 48), slice(0, 8))  # one inner chunk, the same in every version


def _version(seed: int) -> np.ndarray:
    """Data whose REGION never changes, while the inner chunks around it do: each
    is noise (incompressible) or a constant (a few bytes) at random, so every
    version has other compressed sizes and other offsets in its index."""
    rng = np.random.default_rng(seed)
    noisy = rng.random((8, 8)) < 0.5
    data = np.where(np.kron(noisy, np.ones((8, 8), bool)), rng.random(SHAPE), seed).astype("f4")
    data[REGION] = np.arange(64, dtype="f4").reshape(8, 8)
    return data


class ReplaceAfterFirstRead(WrapperStore):
    """Replaces ``key`` with ``new`` right after its first read returns — the
    moment a partial shard read has the index and has not read the data yet."""

    def __init__(self, store, key: str, new: bytes) -> None:
        super().__init__(store)
        self.key, self.new, self.fired = key, new, False

    def _fire(self, key: str) -> None:
        if key == self.key and not self.fired:
            self.fired = True
            self.store.set(self.key, self.new)

    def get_ranges(self, key, ranges):
        found = self.store.get_ranges(key, ranges)
        self._fire(key)
        return found

    def reader(self, key):
        return ForwardingReader(self, key, self.store.reader(key), on_read=lambda r, f: self._fire(key))


def _two_versions(store):
    a = zarrdask.create_array(store, shape=SHAPE, chunks=CHUNKS, shards=SHARDS, dtype="f4", overwrite=True)
    a[...] = _version(1)
    first = store.get("c/0/0")
    a[...] = _version(2)
    second = store.get("c/0/0")
    store.set("c/0/0", first)
    assert first != second
    return first, second


@pytest.mark.parametrize("kind", ["local (exact)", "memory (exact)", "fsspec memory:// (verifying)"])
def test_a_shard_replaced_between_index_and_data_reads_gives_old_or_new_values(tmp_path, kind):
    if kind.startswith("local"):
        inner = LocalStore(tmp_path / "s.zarr")
    elif kind.startswith("memory"):
        inner = MemoryStore()
    else:
        inner = FsspecStore(f"memory://race-{os.getpid()}-{time.monotonic_ns()}")
    _, second = _two_versions(inner)
    store = ReplaceAfterFirstRead(inner, "c/0/0", second)
    a = zarrdask.open_array(store, mode="r")
    np.testing.assert_array_equal(a[REGION], np.arange(64, dtype="f4").reshape(8, 8))
    assert store.fired
    # and a region that did change reads as one version or the other, whole
    a2 = zarrdask.open_array(ReplaceAfterFirstRead(inner, "c/0/0", _two_versions(inner)[1]), mode="r")
    got = a2[0:8, 8:16]
    assert any(np.array_equal(got, _version(s)[0:8, 8:16]) for s in (1, 2))


def test_a_shard_that_keeps_changing_is_an_error_not_wrong_data():
    inner = FsspecStore(f"memory://churn-{os.getpid()}-{time.monotonic_ns()}")
    a = zarrdask.create_array(inner, shape=SHAPE, chunks=CHUNKS, shards=SHARDS, dtype="f4")
    versions = []
    for seed in range(1, 40):
        a[...] = _version(seed)
        versions.append(inner.get("c/0/0"))

    class Churn(WrapperStore):  # every read of the shard is followed by a new version
        n = 0

        def reader(self, key):
            def replace(ranges, found):
                self.n += 1
                inner.set("c/0/0", versions[self.n % len(versions)])
            return ForwardingReader(self, key, inner.reader(key), on_read=replace)

    with pytest.raises(ValueChangedError, match="c/0/0.*replaced 8 times"):
        zarrdask.open_array(Churn(inner), mode="r")[REGION]


class ChurnEveryRead(WrapperStore):
    """Verifying readers whose every read is followed by a new version of the
    value; counts the readers made (one per attempt and key)."""

    def __init__(self, store) -> None:
        super().__init__(store)
        self.readers = 0

    def reader(self, key):
        self.readers += 1

        def replace(ranges, found):
            self.store.set(key, bytes([self.readers % 256]) * 8)

        return ForwardingReader(self, key, VerifyingReader(self.store, key), on_read=replace)


def _steps(i):
    """A read in two steps (as a shard's: the index, then data), so it is
    checked with ``unchanged()``: a read of one step stands on its own."""
    yield [RangeRequest(0, 4)]
    return (yield [RangeRequest(4, 4)])


@pytest.mark.parametrize("policy", [consistent.REREAD, consistent.RereadPolicy(attempts=3)], ids=["default", "three"])
def test_one_and_many_key_reads_share_the_retry_limit(monkeypatch, policy):
    monkeypatch.setattr(consistent, "REREAD", policy)
    store = ChurnEveryRead(MemoryStore())
    store.set_many({"a": bytes(8), "b": bytes(8)})
    with pytest.raises(ValueChangedError) as one:
        consistent.read_consistently(store, "a", lambda reader: reader.read([RangeRequest(0, 4)]))
    assert store.readers == policy.attempts
    store.readers = 0
    with pytest.raises(ValueChangedError) as many:
        consistent.read_consistently_many(store, ["a", "b"], _steps)
    assert store.readers == 2 * policy.attempts  # every attempt reads both keys again
    assert str(one.value) == str(many.value)
    assert f"replaced {policy.attempts} times" in str(one.value) and one.value.key == many.value.key == "a"


# -- a reader and a writer process on one shard ------------------------------------------------
def _rewrite_forever(root: str, stop: "multiprocessing.synchronize.Event", ready, count) -> None:
    a = zarrdask.open_array(root, mode="r+")
    versions = [_version(s) for s in range(2, 12)]
    ready.set()
    i = 0
    while not stop.is_set():
        a[...] = versions[i % len(versions)]
        i += 1
    count.value = i


def test_reader_and_writer_processes_race_on_one_shard(tmp_path):
    root = str(tmp_path / "race.zarr")
    a = zarrdask.create_array(root, shape=SHAPE, chunks=CHUNKS, shards=SHARDS, dtype="f4")
    a[...] = _version(1)
    expected = np.arange(64, dtype="f4").reshape(8, 8)
    ctx = multiprocessing.get_context("spawn")
    stop, ready, count = ctx.Event(), ctx.Event(), ctx.Value("i", 0)
    writer = ctx.Process(target=_rewrite_forever, args=(root, stop, ready, count))
    writer.start()
    try:
        assert ready.wait(60)
        reader = zarrdask.open_array(root, mode="r")
        wrong = corrupt = 0
        for _ in range(10_000):
            try:
                if not np.array_equal(reader[REGION], expected):
                    wrong += 1
            except CorruptChunkError:  # an index applied to another version's bytes, caught by the codec
                corrupt += 1
    finally:
        stop.set()
        writer.join(60)
    assert count.value > 100, "the writer hardly ran: the race was not exercised"
    assert (wrong, corrupt) == (0, 0)


# -- lost updates ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["memory", "local", "local-sharded"])
def test_threads_writing_disjoint_rows_of_shared_chunks_lose_nothing(tmp_path, kind):
    store = MemoryStore() if kind == "memory" else LocalStore(tmp_path / "t.zarr")
    a = zarrdask.create_array(store, shape=(256, 16), chunks=(64, 16) if kind != "local-sharded" else (16, 16),
                              shards=(64, 16) if kind == "local-sharded" else None, dtype="i4", fill_value=-1)
    barrier = threading.Barrier(16)

    def writer(t: int) -> None:
        barrier.wait()
        for row in range(t, 256, 16):
            a[row] = row

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(16)]
    with zarrdask.config.set(threads=1):
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    np.testing.assert_array_equal(a[...], np.repeat(np.arange(256, dtype="i4")[:, None], 16, axis=1))


def _write_rows(root: str, rows: list[int], ready, go) -> None:
    a = zarrdask.open_array(root, mode="r+")
    ready.set()
    go.wait(60)
    for row in rows:
        a[row] = row


def test_processes_partially_writing_one_shard_lose_nothing(tmp_path):
    root = str(tmp_path / "p.zarr")
    zarrdask.create_array(root, shape=(64, 64), chunks=(8, 64), shards=(64, 64), dtype="i4", fill_value=-1)
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs, readies = [], []
    for p in range(2):
        ready = ctx.Event()
        readies.append(ready)
        procs.append(ctx.Process(target=_write_rows, args=(root, list(range(p, 64, 2)), ready, go)))
    for proc in procs:
        proc.start()
    for ready in readies:
        assert ready.wait(60)
    go.set()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    a = zarrdask.open_array(root)
    np.testing.assert_array_equal(a[...], np.repeat(np.arange(64, dtype="i4")[:, None], 64, axis=1))


def test_a_read_of_one_step_stands_on_its_own():
    """One request batch reads one version: a verifying reader is not asked
    ``unchanged()`` (no second request), even when the value changes after."""
    store = ChurnEveryRead(MemoryStore())
    store.set_many({"a": bytes(range(8)), "b": bytes(range(8, 16))})

    def one_step(i):
        return (yield [RangeRequest(0, 4)])

    found = consistent.read_consistently_many(store, ["a", "b"], one_step)
    assert [bytes(f[0]) for f in found] == [bytes(range(4)), bytes(range(8, 12))]
    assert store.readers == 2  # one reader per key, never read again

