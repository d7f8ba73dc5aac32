"""Memory of reads from stores whose requests wait on a network (capability
``streaming``): a read with ``EngineOptions(memory_budget=...)`` keeps its
output, the chunks in flight and the parts of shards being read within the
budget, and each rechunk task reads within its declared memory.

:class:`InFlightStore` is an in-memory store declaring ``streaming`` whose
every request takes a little while, so streamed requests really overlap; it
counts the bytes of every value it handed out and that is still referenced
(counted from the start of its request), and keeps their high-water mark.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
import weakref

import numpy as np
import pytest

import zarrdask
from zarrdask import MemoryStore
from zarrdask.core.options import EngineOptions
from zarrdask.storage.capabilities import BACKGROUND_UPLOADS, STREAMING, BackgroundUploads, StreamingReads
from zarrdask.storage.readers import VerifyingReader
from zarrdask.workflows import rechunk
from zarrdask.workflows._run import copy_block

#: what tracemalloc sees besides the data: keys, projections, generators
BOOKKEEPING = 32 << 10


class _Counting(MemoryStore):
    """A memory store whose requests take ``delay`` seconds each, with
    counters: bytes held (``held``, high water mark ``peak``) and requests at
    once (``running``, most ``most``)."""

    def __init__(self, delay: float = 0.002) -> None:
        super().__init__()
        self.delay = delay
        self._lock = threading.Lock()
        self.held = self.peak = self.running = self.most = 0


class InFlightStore(StreamingReads, _Counting):
    """Counts the bytes it handed out that are still referenced (``held``,
    high water mark ``peak``) and the values (keys, byte ranges) requested at
    once (``most``)."""

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset({STREAMING})

    def reader(self, key):
        return VerifyingReader(self, key)  # reads through get_ranges: every range counted

    def reset(self) -> None:
        with self._lock:
            self.peak, self.most = self.held, self.running

    def _release(self, n: int) -> None:
        with self._lock:
            self.held -= n

    def _hand_out(self, values: list) -> list:
        """Copies of ``values``, counted until the last reference to each goes."""
        out = []
        with self._lock:
            self.running += len(values)
            self.most = max(self.most, self.running)
        try:
            for v in values:
                if v is None:
                    out.append(None)
                    continue
                arr = np.frombuffer(bytes(v), dtype="u1").copy()
                with self._lock:
                    self.held += arr.nbytes
                    self.peak = max(self.peak, self.held)
                weakref.finalize(arr, self._release, arr.nbytes)
                out.append(memoryview(arr))
            time.sleep(self.delay)
        finally:
            with self._lock:
                self.running -= len(values)
        return out

    def get_many(self, keys):
        return self._hand_out(super().get_many(keys))

    def get_ranges(self, key, ranges):
        got = super().get_ranges(key, ranges)
        return None if got is None else self._hand_out(got)


def _noise(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("f4")  # the codecs cannot shrink it


def test_streamed_whole_chunks_stay_within_the_budget():
    data = _noise((96, 64, 64))
    store = InFlightStore()
    a = zarrdask.create_array(store, shape=data.shape, dtype="f4", chunks=(2, 64, 64), data=data)
    chunk = 2 * 64 * 64 * 4
    out_bytes = data.nbytes
    store.reset()
    np.testing.assert_array_equal(a.get_basic_selection(..., options=EngineOptions(threads=1)), data)
    assert store.peak >= 8 * chunk  # without a budget: many chunks in flight at once
    for room in (2 * chunk, 5 * chunk):
        store.reset()
        tracemalloc.start()
        try:
            got = a.get_basic_selection(..., options=EngineOptions(threads=1, memory_budget=out_bytes + room))
            traced = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        np.testing.assert_array_equal(got, data)
        assert store.peak <= room, (room, store.peak)
        assert traced <= out_bytes + room + BOOKKEEPING, (room, traced)  # fetched and decoding, with the output
        assert store.most >= room // chunk - 2  # concurrent as the room allows (a chunk being decoded: 2)
        del got


def test_partial_shard_reads_stay_within_the_budget():
    """A sharded array read in part (index, then inner chunks): the ranges of
    the shards read at once, and their decoded parts, count in the budget."""
    data = _noise((64, 96, 96), seed=1)
    store = InFlightStore()
    a = zarrdask.create_array(store, shape=data.shape, dtype="f4", chunks=(4, 48, 48), shards=(16, 96, 96),
                              data=data, compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    region = (slice(None), slice(0, 48), slice(0, 48))
    out_bytes = data[region].nbytes
    inner = 4 * 48 * 48 * 4
    store.reset()
    # each shard goes at its own pace: slow answers, so that their reads surely overlap
    quick, store.delay = store.delay, 0.05
    np.testing.assert_array_equal(a.get_basic_selection(region, options=EngineOptions(threads=1)), data[region])
    store.delay = quick
    assert store.peak >= 12 * inner  # without a budget: the inner chunks of (nearly) every shard at once
    budget = out_bytes + 4 * inner
    store.reset()
    tracemalloc.start()
    try:
        got = a.get_basic_selection(region, options=EngineOptions(threads=1, memory_budget=budget))
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, data[region])
    assert store.peak + out_bytes <= budget, store.peak
    assert traced <= budget + BOOKKEEPING, traced  # parts decoded in place, one inner chunk decoded at a time


@pytest.mark.parametrize("shards", [None, (32, 96, 96)], ids=["plain", "sharded-source"])
def test_rechunk_tasks_read_remote_sources_within_their_declared_memory(tmp_path, shards):
    """Each task of a rechunk from a streaming store, run alone: the bytes it
    fetched and still holds, plus its block, stay under its declared memory;
    so does all it holds while reading (tracemalloc: numpy buffers and
    fetched bytes, with the read's options as the task gives them)."""
    data = _noise((64, 96, 96), seed=2)
    store = InFlightStore()
    src = zarrdask.create_array(store, shape=data.shape, dtype="f4", chunks=(4, 48, 48), shards=shards, data=data,
                                compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    max_mem = 1_500_000
    plan = rechunk(src, (64, 8, 8), str(tmp_path / "dst.zarr"), max_mem=max_mem, target_shards=(64, 16, 16))
    assert plan.nstages == 1
    plan.to_dask()
    job = plan._jobs[0]
    stage = job.plan.stages[0]
    concurrent = 0
    tracemalloc.start()
    try:
        for index in stage.indices():
            region, memory = stage.region(index), stage.memory(index)
            block = data[region].nbytes
            assert memory <= max_mem
            store.reset()
            copy_block(job.source, job.target, region, memory)
            assert store.peak + block <= memory, (index, store.peak, block)
            concurrent = max(concurrent, store.most)
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            got = job.source.get_basic_selection(
                region, options=EngineOptions(threads=1, one_chunk=True, memory_budget=memory))
            held = tracemalloc.get_traced_memory()[1] - before
            assert held <= memory + BOOKKEEPING, (index, held, memory)
            del got
    finally:
        tracemalloc.stop()
    assert concurrent >= 2  # requests still overlap within the budget
    np.testing.assert_array_equal(job.target[...], data)


def test_plans_reading_remote_sources_declare_room_for_reads_in_flight():
    from zarrdask.workflows.plan import plan_array, read_ahead_bytes

    chunk = 4 * 48 * 48 * 4
    assert read_ahead_bytes(8, chunk, 100 * chunk) == 8 * chunk
    assert read_ahead_bytes(8, chunk, 20 * chunk) == 5 * chunk  # at most a quarter of max_mem, whole chunks
    args = ("a", (64, 96, 96), "f4", (4, 48, 48), (64, 8, 8), (64, 16, 16))
    local = plan_array(*args, 1_500_000)
    remote = plan_array(*args, 1_500_000, read_ahead=8)
    assert remote.stages[0].overhead == local.stages[0].overhead + 8 * chunk
    assert remote.peak_memory <= 1_500_000
    # room for reads in flight only as far as the plan fits with it: one target shard expanded to
    # the source chunks it reads, (64, 48, 48), and one chunk being decoded and encoded
    least = 64 * 48 * 48 * 4 + local.stages[0].overhead
    for max_mem, room in ((least + chunk, chunk), (least, 0)):
        squeezed = plan_array(*args, max_mem, read_ahead=8)
        assert squeezed.stages[0].overhead == local.stages[0].overhead + room
        assert squeezed.peak_memory <= max_mem


class UploadingStore(BackgroundUploads, _Counting):
    """Uploads in the background; counts the encoded bytes handed to ``set``
    and not yet stored (``held``, high water mark ``peak``) and the uploads at
    once (``most``)."""

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset({BACKGROUND_UPLOADS})

    def set(self, key, value):
        n = memoryview(value).nbytes
        with self._lock:
            self.running += 1
            self.held += n
            self.most, self.peak = max(self.most, self.running), max(self.peak, self.held)
        try:
            time.sleep(self.delay)
            super().set(key, value)
        finally:
            with self._lock:
                self.running -= 1
                self.held -= n

    def set_many(self, items):
        for key, value in dict(items).items():
            self.set(key, value)


def test_rechunk_tasks_keep_uploads_in_flight_within_their_declared_memory():
    """A rechunk task writing to a store that uploads in the background keeps
    several uploads in flight — as many encoded chunks as its declared memory
    leaves room for next to its block — and every chunk arrives."""
    data = _noise((64, 64, 64), seed=4)
    src = zarrdask.create_array(MemoryStore(), shape=data.shape, dtype="f4", chunks=(64, 64, 64), data=data)
    target = UploadingStore()
    plan = rechunk(src, (4, 16, 64), target, max_mem=4_000_000,
                   target_options={"compressors": None})  # encoded chunks as large as the chunks
    assert plan.nstages == 1
    plan.to_dask()
    job = plan._jobs[0]
    stage = job.plan.stages[0]
    chunk = 4 * 16 * 64 * 4
    for index in stage.indices():
        region, memory = stage.region(index), stage.memory(index)
        block = data[region].nbytes
        target.most = target.peak = 0
        copy_block(job.source, job.target, region, memory)
        room = (memory - block) // chunk - 2  # besides the block: a chunk being copied and encoded
        assert 2 <= target.most <= room, (target.most, room)
        assert block + target.peak + 2 * chunk <= memory
    np.testing.assert_array_equal(job.target[...], data)
    # without room for more than one, one chunk at a time, as before
    target.most = 0
    region = stage.region(next(stage.indices()))
    copy_block(job.source, job.target, region, data[region].nbytes + 3 * chunk)
    assert target.most == 1
