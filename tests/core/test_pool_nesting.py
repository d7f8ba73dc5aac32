"""Nested fan-out on zarrdask's two pools.

CPU work started from a pool thread (a shard's inner chunks inside a
multi-shard read) runs in that thread; a batch of requests started from an
I/O thread (a reference store's targets, a group's members) never waits on a
queue it holds up. Both with pools far smaller than the work, where waiting
on queued work would hang."""

from __future__ import annotations

import gc
import os
import queue
import signal
import threading
import time
import weakref
from functools import partial

import pytest

import zarrdask
from zarrdask import _pool


def _within(seconds, fn):
    """``fn()``, failing (instead of hanging the suite) if it has not returned
    after ``seconds``: a deadlock."""
    out: dict = {}

    def call():
        try:
            out["value"] = fn()
        except BaseException as e:
            out["error"] = e

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s: a deadlock"
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.fixture
def small_pools():
    with zarrdask.config.set(threads=2, io_concurrency=2):
        yield


def test_deeply_nested_cpu_work_completes(small_pools):
    def level(depth):
        if depth == 0:
            return 1
        return sum(_pool.thread_map(level, [depth - 1] * 3))

    assert _within(60, lambda: _pool.thread_map(level, [4, 4, 4])) == [81, 81, 81]


def test_threads_one_keeps_nested_work_in_the_calling_thread(small_pools):
    names: set = set()

    def inner(x):
        names.add(threading.current_thread().name)
        return x

    def outer(n):
        return _pool.thread_map(inner, list(range(n)))

    me = threading.current_thread().name
    assert _pool.thread_map(outer, [5, 5], threads=1) == [list(range(5))] * 2
    assert names == {me}


def test_nested_io_batches_on_a_full_pool_complete(small_pools):
    # io_concurrency=2: each batch keeps 2 calls in flight, on a pool of 8
    # threads; three levels of nesting want 2 + 4 + 8 threads at once
    assert _pool.io_executor().size == 2 * _pool.IO_THREADS_PER_REQUEST

    def level(depth):
        if depth == 0:
            time.sleep(0.002)
            return 1
        return sum(_pool.io_map(level, [depth - 1] * 3))

    assert _within(60, lambda: _pool.io_map(level, [3] * 3)) == [27] * 3
    got = _within(60, lambda: dict(_pool.io_unordered(level, [3] * 3)))
    assert got == {i: 27 for i in range(3)}


def test_a_failure_in_nested_work_propagates(small_pools):
    def inner(x):
        if x == 7:
            raise ValueError("item 7")
        return x

    def outer(n):
        return _pool.thread_map(inner, list(range(n)))

    with pytest.raises(ValueError, match="item 7"):
        _pool.thread_map(outer, [10, 3])


def test_run_steps_goes_at_each_reads_pace_with_at_most_threads_advancing(small_pools):
    # read 0's first answer is slow; read 1 takes three steps meanwhile
    lock = threading.Lock()
    events: list = []
    advancing = [0, 0]  # now, most

    def busy(_):
        assert _pool._in_pool()  # CPU work runs as pool work
        with lock:
            advancing[0] += 1
            advancing[1] = max(advancing)
        time.sleep(0.01)
        with lock:
            advancing[0] -= 1

    def read(i, requests, cpu):
        if (i, requests) == (0, "first"):
            time.sleep(0.3)
        cpu(busy, None)  # a part of the answer decoded as it arrives: within the same limit as advancing
        with lock:
            events.append(("read", i, requests))
        return requests

    def advance(i, answer):
        busy(None)
        steps = {"first": "second", "second": "third"}
        return steps.get(answer)

    reads = {i: "first" for i in range(6)}
    _within(60, lambda: _pool.run_steps(reads, read, advance, threads=2))
    assert sorted(events) == sorted(("read", i, s) for i in range(6) for s in ("first", "second", "third"))
    # read 1 finished all its steps before read 0's first answer came
    assert events.index(("read", 1, "third")) < events.index(("read", 0, "first"))
    assert advancing[1] <= 2


def test_run_steps_raises_the_first_failure(small_pools):
    def read(i, requests, cpu):
        if i == 3:
            raise OSError("read 3 failed")
        return requests

    with pytest.raises(OSError, match="read 3"):
        _within(60, lambda: _pool.run_steps({i: "r" for i in range(5)}, read, lambda i, a: None, threads=2))


def _refers(out, x):
    return out is not None


def test_a_batch_holds_nothing_of_its_calls_once_it_returns(small_pools):
    # every I/O thread is busy, the batch's caller on one of them: it makes
    # all the calls itself, its helper starts only when a thread is free,
    # after the batch returned; it must not keep what the calls refer to (a
    # read's output) alive until then
    class Output:
        pass

    gate = threading.Event()
    refs: queue.SimpleQueue = queue.SimpleQueue()
    pool = _pool.io_executor()
    blockers = [pool.submit(gate.wait) for _ in range(pool.size - 1)]

    def batch():
        out = Output()
        assert _pool.io_map(partial(_refers, out), [0, 1, 2]) == [True] * 3
        refs.put(weakref.ref(out))
        del out
        gate.wait()  # this thread stays busy too

    caller = pool.submit(batch)
    try:
        ref = refs.get(timeout=60)
        assert pool.queued() == 1  # the helper, not started
        assert ref() is None
    finally:
        gate.set()
        for f in [*blockers, caller]:
            f.result()


@pytest.mark.parametrize("from_io_thread", [False, True])
def test_io_unordered_keeps_at_most_limit_calls_unconsumed_and_stops_with_its_caller(from_io_thread):
    # each call records when it starts; the caller consumes slowly, so calls
    # started and not consumed would pile up beyond the limit if unchecked
    lock = threading.Lock()
    started: list = []
    threads: set = set()
    consumed = [0]
    most = [0]

    def call(x):
        with lock:
            started.append(x)
            threads.add(threading.current_thread().name)
            most[0] = max(most[0], len(started) - consumed[0])
        time.sleep(0.002)
        if x == 30:
            raise ValueError("item 30")
        return x * 2

    def consume():
        me = threading.current_thread().name
        got = {}
        with pytest.raises(ValueError, match="item 30"):
            for i, value in _pool.io_unordered(call, list(range(60)), limit=3):
                with lock:
                    consumed[0] += 1
                got[i] = value
                time.sleep(0.003)
        return me, got

    with zarrdask.config.set(io_concurrency=8):
        if from_io_thread:
            me, got = _within(60, lambda: _pool.io_executor().submit(consume).result())
        else:
            me, got = _within(60, consume)
        time.sleep(0.05)  # helpers that were running a call finish it; none starts another
    assert all(value == 2 * i for i, value in got.items())
    assert most[0] <= 3
    # the failure stopped the batch: nothing was started long after it
    assert len(started) <= len(got) + 1 + 3
    # the calls run on the I/O threads; a caller that is not one only consumes
    assert all(name.startswith("zarrdask-io") for name in threads)
    if not from_io_thread:
        assert me not in threads


def test_helpers_end_without_waiting_for_a_slot_once_every_item_is_taken(monkeypatch):
    # four items, four helpers, each taking one. A helper asking for another
    # slot after its call would sleep until the caller gives one back, only
    # to find nothing left (a sleep and a wake-up per helper, on every batch
    # of requests): each slot is asked for once
    asked = []
    real = _pool._Slots

    class Counted(real):
        __slots__ = ()

        def __init__(self, n):
            super().__init__(n)
            acquire = self.acquire

            def counted():
                asked.append(threading.current_thread().name)
                return acquire()

            self.acquire = counted

    monkeypatch.setattr(_pool, "_Slots", Counted)
    together = threading.Barrier(4)  # every item taken before any call returns

    def call(x):
        together.wait(10)
        return x * 3

    def consume():
        results = _pool.io_unordered(call, [0, 1, 2, 3], limit=4)
        first = dict([next(results)])
        time.sleep(0.1)  # the helpers have returned or are waiting for a slot
        return {**first, **dict(results)}

    with zarrdask.config.set(io_concurrency=4):
        got = _within(30, consume)
    assert got == {i: 3 * i for i in range(4)}
    assert len(asked) == 4 and all(name.startswith("zarrdask-io") for name in asked)


def test_io_threads_run_calls_on_at_most_size_named_threads_and_settle_futures(small_pools):
    pool = _pool.io_executor()
    assert pool.size == 2 * _pool.IO_THREADS_PER_REQUEST
    seen: set = set()
    gate = threading.Event()

    def work(x):
        seen.add((threading.current_thread().name, _pool._on_io_thread()))
        gate.wait(10)
        return x * 3

    futures = [pool.submit(work, x) for x in range(3 * pool.size)]
    time.sleep(0.05)
    assert pool.queued() == 2 * pool.size  # every thread busy; the rest wait their turn
    gate.set()
    assert [f.result(timeout=60) for f in futures] == [3 * x for x in range(3 * pool.size)]
    assert len(seen) <= pool.size
    assert all(name.startswith("zarrdask-io") and io for name, io in seen)

    def fails():
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        pool.submit(fails).result(timeout=60)


def test_a_call_that_raises_leaves_its_io_thread_working(small_pools, capsys):
    pool = _pool.io_executor()
    done = queue.SimpleQueue()

    def fails():
        done.put(threading.current_thread())
        raise RuntimeError("a helper that failed")

    for _ in range(2 * pool.size):
        pool.start(fails)
    threads = {done.get(timeout=60) for _ in range(2 * pool.size)}
    assert pool.submit(lambda: 5).result(timeout=60) == 5
    assert all(t.is_alive() for t in threads)
    err, deadline = "", time.monotonic() + 30  # each failure printed (after it was put in `done`)
    while err.count("RuntimeError: a helper that failed") < 2 * pool.size and time.monotonic() < deadline:
        time.sleep(0.01)
        err += capsys.readouterr().err
    assert err.count("RuntimeError: a helper that failed") == 2 * pool.size


def test_io_threads_of_another_size_end_once_nothing_refers_to_them():
    # changing io_concurrency makes a new pool; a batch still holding the old
    # one can go on using it, and its threads end once it is dropped
    with zarrdask.config.set(io_concurrency=1):
        old = _pool.io_executor()
        threads = queue.SimpleQueue()
        for _ in range(old.size):
            old.submit(lambda: threads.put(threading.current_thread())).result(timeout=60)
        with zarrdask.config.set(io_concurrency=2):
            new = _pool.io_executor()
            assert new is not old and new.size == 2 * old.size
            assert new.submit(lambda: 1).result(timeout=60) == 1
            assert old.submit(lambda: 2).result(timeout=60) == 2  # still served
        seen = set()
        while not threads.empty():
            seen.add(threads.get())
        assert seen and all(t.is_alive() for t in seen)
        del old
        gc.collect()
        deadline = time.monotonic() + 30
        while any(t.is_alive() for t in seen) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not any(t.is_alive() for t in seen)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_io_threads_of_its_own(small_pools):
    # the parent's I/O threads are not copied into a child: it starts its own,
    # and dropping the parent's pool (copied, its lock maybe held) does not hang
    assert _pool.io_map(lambda x: x + 1, [1, 2, 3]) == [2, 3, 4]
    parent_pool = _pool._io_pool
    lock = parent_pool._state.lock
    lock.acquire()  # held by the parent while it forks: the child's copy stays held
    pid = os.fork()
    if pid:
        lock.release()
    else:  # the child: report through the exit status only
        code = 1
        try:
            signal.alarm(30)
            ok = _pool.io_map(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]
            ok = ok and _pool.io_executor() is not parent_pool
            del parent_pool
            gc.collect()  # the parent's pool, dropped: its threads are not asked to end here
            code = 0 if ok else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.waitstatus_to_exitcode(status) == 0


def test_work_too_small_for_a_hand_off_goes_to_the_pool_in_parts():
    items = list(range(10))
    with zarrdask.config.set(threads=4):
        assert _pool.in_parts(items, 3) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
        # at least one part per thread, at least one item per part
        assert _pool.in_parts(items, 100) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
        assert _pool.in_parts(items, 0) == [[i] for i in items]
        assert _pool.in_parts([], 3) == []
        # in pool work, where thread_map runs it all in this thread: one part
        assert _pool.thread_map(lambda _: _pool.in_parts(items, 3), [0, 1]) == [[items], [items]]
    with zarrdask.config.set(threads=1):
        assert _pool.in_parts(items, 3) == [items]
