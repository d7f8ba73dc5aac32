"""The one thread pool for CPU work (decoding and encoding chunks).

numcodecs codecs release the GIL, so threads decode in parallel. The pool is
created lazily, per process (it is rebuilt after a fork), sized by the setting
``threads``; a caller may ask for fewer (``thread_map(..., threads=1)``: the
chunk engine inside a dask task, given ``EngineOptions(threads=1)``). Work
submitted from inside pool work runs serially, so nested fan-out (a shard's
inner chunks inside a multi-shard read, a store's parallel file reads) never
deadlocks or oversubscribes; work run serially because the caller asked for
one thread counts as pool work too.

No option lives here: every caller passes what it wants (``threads``,
``limit``). The one piece of thread state is the marker "this thread is
running pool work", which the pool sets and clears around the work it runs.
"""

from __future__ import annotations

import os
import queue
import threading
import traceback
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Iterator, Sequence, TypeVar

from . import config

T = TypeVar("T")
R = TypeVar("R")

# -- the thread pool ---------------------------------------------------------
_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None
_pool_lock = threading.Lock()
_local = threading.local()  # in_pool: this thread runs pool work


def _executor(threads: int) -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid() or _pool._max_workers != threads:
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="zarrdask")
            _pool_pid = os.getpid()
        return _pool


def _in_pool() -> bool:
    return getattr(_local, "in_pool", False)


def _serially(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]`` in this thread, as pool work: whatever ``fn``
    hands the pool runs in this thread too."""
    if _in_pool():
        return [fn(x) for x in items]
    _local.in_pool = True
    try:
        return [fn(x) for x in items]
    finally:
        _local.in_pool = False


def _pool_work(fn: Callable[[T], R], x: T) -> R:
    """``fn(x)`` on a pool thread, marked as pool work while it runs."""
    _local.in_pool = True
    try:
        return fn(x)
    finally:
        _local.in_pool = False


def serial_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]``: a map in this thread where a pool's hand-off costs more than the work."""
    return [fn(x) for x in items]


def run_inline(fn: Callable[..., R], *args: object) -> R:
    """``fn(*args)`` in this thread, as pool work: every :func:`thread_map` and
    :class:`Pipeline` it starts runs in this thread (the engine's pool off:
    inside a dask task, where dask parallelises already)."""
    return _serially(lambda _: fn(*args), [None])[0]


def pool_threads(threads: int | None = None) -> int:
    """The threads CPU work may use: ``threads``, else the setting ``threads``."""
    return int(threads) if threads is not None else int(config.get("threads"))


def thread_map(fn: Callable[[T], R], items: Sequence[T], threads: int | None = None) -> list[R]:
    """``[fn(x) for x in items]``, run on the engine's pool when it pays off.

    ``threads`` caps the threads used (``None``: the setting ``threads``). With
    ``threads=1`` the work runs in this thread as pool work, so nested fan-out
    (a shard's inner chunks, a store's parallel file reads) runs in this thread
    too; work submitted from inside pool work always runs serially.
    """
    if threads is not None and threads <= 1:
        return _serially(fn, items)
    if len(items) <= 1 or _in_pool():
        return [fn(x) for x in items]
    n = pool_threads(threads)
    if n <= 1:
        return _serially(fn, items)
    executor = _executor(n)
    futures: list[Any] = [None] * len(items)
    for i in spread(range(len(items)), n):
        futures[i] = executor.submit(_pool_work, fn, items[i])
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def spread(items: Sequence[T], threads: int) -> list[T]:
    """``items`` reordered so that ``threads`` threads taking them in turn
    start each in its own ``1/threads`` of them and keep apart: the first of
    every part, then the second of every part, …. :func:`thread_map` hands
    its work to the pool in this order (and gives the results in the items'
    order): work items are mostly in the order of the places in an output
    they fill, and threads filling a fresh output touch its memory for the
    first time; two threads doing so within the same transparent huge page
    at once can each have the kernel zero a 2 MiB page, one of which is
    thrown away."""
    if threads <= 1 or len(items) <= threads:
        return list(items)
    bounds = [i * len(items) // threads for i in range(threads + 1)]
    parts = [items[start:stop] for start, stop in zip(bounds, bounds[1:])]
    return [part[j] for j in range(max(map(len, parts))) for part in parts if j < len(part)]


def in_parts(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """``items`` in consecutive parts for :func:`thread_map`, where one item
    is too little work to be worth a hand-off: parts of at most ``size``
    items, and at least one per thread; one part where :func:`thread_map`
    would run them all in this thread anyway (pool work, or one thread);
    none for no items."""
    if not items:
        return []
    threads = 1 if _in_pool() else pool_threads()
    if threads <= 1:
        return [items]
    size = max(1, min(size, -(-len(items) // threads)))
    return [items[i:i + size] for i in range(0, len(items), size)]


# -- the I/O threads -----------------------------------------------------------
# Requests to remote stores wait on the network, not the CPU: they run on a
# separate, larger pool (setting ``io_concurrency``), never on the CPU pool,
# so a batch of requests issued from a pool thread (or from a dask task) is
# still concurrent. Batches nest (a batch of reads whose each read is itself a
# batch of requests: a reference store's targets, the members of a group): an
# I/O thread that waits on a nested batch first runs the parts of it no thread
# has taken yet, so a full pool never waits on its own queue.
_io_pool: "IOThreads | None" = None
_io_pid: int | None = None


def _mark_io_thread() -> None:
    _local.io_thread = True


def _on_io_thread() -> bool:
    return getattr(_local, "io_thread", False)


#: I/O threads per request one batch may have in flight (``io_concurrency``):
#: batches made at the same time (a hierarchy's listings beside its documents,
#: reads of several arrays) each keep ``io_concurrency`` requests in flight
IO_THREADS_PER_REQUEST = 4


class IOThreads:
    """The I/O threads: calls run in the order given by at most ``size``
    threads, each started when a call finds no idle one. Lighter than
    ``ThreadPoolExecutor`` where it counts, on every request: :meth:`start`
    makes no future and takes no lock written in Python (a batch's helpers
    report through their own queue); :meth:`submit` makes the future those
    who wait on one call need. Once nothing refers to it (the setting
    ``io_concurrency`` changed), its threads end when the calls given to it
    are done."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._state = state = _IOState()
        # not at exit: the threads are daemons, and nothing waits on them then
        weakref.finalize(self, _end, state).atexit = False

    def start(self, fn: Callable[..., object], *args: object) -> None:
        """Run ``fn(*args)`` on an I/O thread; it must not raise (what it
        raises is printed, and the thread goes on)."""
        state = self._state
        state.calls.put((fn, args))
        with state.lock:
            if state.idle:  # one of them takes it
                state.idle -= 1
                return
            if state.threads >= self.size:  # it waits for a thread to be free
                return
            state.threads += 1
            n = state.threads
        threading.Thread(target=_work, args=(state,), name=f"zarrdask-io_{n}", daemon=True).start()

    def submit(self, fn: Callable[..., R], *args: object) -> "Future[R]":
        """``fn(*args)`` on an I/O thread, with a future of its result."""
        future: Future = Future()
        self.start(_settle, future, fn, args)
        return future

    def queued(self) -> int:
        """Calls given and not taken by a thread yet."""
        return self._state.calls.qsize()


class _IOState:
    """What an :class:`IOThreads` shares with its threads (which do not refer
    to the pool itself, so that it can be collected)."""

    __slots__ = ("calls", "lock", "threads", "idle", "pid")

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.threads = 0
        self.idle = 0
        self.pid = os.getpid()


def _work(state: _IOState) -> None:
    _mark_io_thread()
    calls, lock = state.calls, state.lock
    while (call := calls.get()) is not None:
        fn, args = call
        del call
        try:
            fn(*args)
        except BaseException:  # the calls report their own failures; this one did not
            traceback.print_exc()
        del fn, args  # nothing of a call kept while the thread waits for the next
        with lock:
            state.idle += 1


def _end(state: _IOState) -> None:
    """Let the threads end once the calls given so far are done. (Without
    the lock: nothing starts threads on a pool no one refers to, and in a
    forked child the lock may have been copied held while the threads were
    not copied at all.)"""
    if state.pid != os.getpid():
        return
    for _ in range(state.threads):
        state.calls.put(None)


def _settle(future: Future, fn: Callable[..., object], args: tuple) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn(*args)
    except BaseException as e:
        future.set_exception(e)
    else:
        future.set_result(result)


def io_executor() -> IOThreads:
    """The process's I/O threads: ``IO_THREADS_PER_REQUEST`` times the setting
    ``io_concurrency`` (started as needed)."""
    global _io_pool, _io_pid
    size = IO_THREADS_PER_REQUEST * max(1, int(config.get("io_concurrency")))
    pool = _io_pool
    if pool is not None and pool.size == size and _io_pid == os.getpid():
        return pool
    with _pool_lock:
        if _io_pool is None or _io_pid != os.getpid() or _io_pool.size != size:
            _io_pool = IOThreads(size)
            _io_pid = os.getpid()
        return _io_pool


def io_limit(limit: int | None = None) -> int:
    """Requests one batch has in flight at once: ``limit``, at most the setting
    ``io_concurrency`` (its default)."""
    size = max(1, int(config.get("io_concurrency")))
    return size if limit is None else max(1, min(int(limit), size))


def io_map(fn: Callable[[T], R], items: Sequence[T], limit: int | None = None) -> list[R]:
    """``[fn(x) for x in items]`` with the calls running concurrently on the
    I/O threads (at most ``limit``, default ``io_concurrency``, at once);
    exceptions propagate."""
    if len(items) <= 1:
        return [fn(x) for x in items]
    out: list = [None] * len(items)
    for i, result in io_unordered(fn, items, limit):
        out[i] = result
    return out


def io_unordered(fn: Callable[[T], R], items: Sequence[T], limit: int | None = None) -> Iterator[tuple[int, R]]:
    """``(i, fn(items[i]))`` pairs in the order the calls finish, with at most
    ``limit`` (default ``io_concurrency``) calls in flight: a call starts only when an earlier one
    was consumed, so results never pile up faster than the caller takes them.
    An exception propagates when its result would be yielded.

    Helpers on the I/O threads each take the next call no one has taken; no
    future is made per call. Called from an I/O thread (a nested batch), the
    calling thread makes calls too, and never waits on one no thread has
    started: a full pool's queued helpers find nothing left when they start.
    The caller never polls: it waits only for a call a helper is running. A
    call holds one of ``limit`` slots from when it is taken until its result
    is consumed."""
    n = len(items)
    if n <= 1:
        for i, x in enumerate(items):
            yield i, fn(x)
        return
    limit = min(io_limit(limit), n)
    helps = _on_io_thread()
    lock = threading.Lock()
    taken, stop = [0], [False]
    done: queue.SimpleQueue = queue.SimpleQueue()
    slots = _Slots(limit)
    # the work, emptied when the batch ends: a helper that starts or returns
    # late does not keep what the calls refer to (a read's output) alive
    # after the caller has its results
    work: list[Any] = [fn, items]

    def take() -> tuple[int, Callable[[T], R], Sequence[T]] | None:
        with lock:
            if stop[0] or taken[0] >= n:
                return None
            taken[0] += 1
            return taken[0] - 1, work[0], work[1]

    def call(job: tuple[int, Callable[[T], R], Sequence[T]]) -> tuple[int, Any, BaseException | None]:
        i, f, xs = job
        try:
            return i, f(xs[i]), None
        except BaseException as e:  # raised in the caller when it comes to it
            return i, None, e

    def helper() -> None:
        # (asked first: a helper whose call took the last item ends rather
        # than sleep until the caller gives a slot back, and wake to find
        # nothing left)
        while taken[0] < n:
            slots.acquire()
            job = take()
            if job is None:
                slots.release()
                return
            done.put(call(job))
            del job

    pool = io_executor()
    helpers = limit - (1 if helps else 0)
    for _ in range(helpers):
        pool.start(helper)
    handed = 0
    try:
        while handed < n:
            # (asked, not tried: an exception per miss costs more than the call)
            mine = None
            if helps and done.empty() and slots.try_acquire():
                mine = take()
                if mine is None:
                    slots.release()
            if mine is not None:
                i, result, error = call(mine)
            else:
                i, result, error = done.get()  # a result, or a call a helper is running
            handed += 1
            slots.release()
            if error is not None:
                raise error
            yield i, result
            del result
    finally:
        with lock:
            stop[0] = True
            work.clear()
        for _ in range(helpers):  # helpers waiting for a slot find nothing left and return
            slots.release()


class _Slots:
    """A counting semaphore on a C-level queue of tokens: acquiring and
    releasing are the queue's own methods (no Python frame), a fraction of
    ``threading.Semaphore``'s cost (written in Python), which counts when
    every request or chunk takes one."""

    __slots__ = ("acquire", "release", "_take", "_none_left")

    def __init__(self, n: int) -> None:
        tokens: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(n):
            tokens.put(True)
        #: wait for a slot (returns ``True``)
        self.acquire: Callable[[], bool] = tokens.get
        #: give a slot back
        self.release: Callable[[], None] = partial(tokens.put, True)
        self._take = tokens.get_nowait
        self._none_left = tokens.empty

    def try_acquire(self) -> bool:
        """A slot if one is free, without waiting; whether taken."""
        if self._none_left():  # (asked first: an exception per miss costs more)
            return False
        try:
            return self._take()
        except queue.Empty:  # taken by another thread meanwhile
            return False


def futures_unordered(start: Callable[[int], Any], count: int, limit: int | None = None) -> Iterator[tuple[int, Any]]:
    """``(i, future)`` pairs of the futures ``start(i)`` returns for ``i`` in
    ``range(count)`` (``concurrent.futures`` futures: pool work, or coroutines
    sent to an event loop), each pair as its future completes, at most
    ``limit`` (default ``io_concurrency``) started and not yet consumed: the
    next one starts when the caller takes a completed one. Futures not
    consumed when the caller stops are cancelled."""
    from concurrent.futures import FIRST_COMPLETED, wait

    limit = io_limit(limit)
    todo = iter(range(count))
    running: dict = {}
    try:
        for i in todo:
            running[start(i)] = i
            if len(running) >= limit:
                break
        while running:
            # consumed futures are dropped at once (they hold their results):
            # at most `limit` results are referenced here
            done = list(wait(running, return_when=FIRST_COMPLETED)[0])
            while done:
                future = done.pop()
                i = running.pop(future)
                yield i, future
                del future
                nxt = next(todo, None)
                if nxt is not None:
                    running[start(nxt)] = nxt
    finally:
        for future in running:
            future.cancel()


class Pipeline:
    """CPU work submitted as its input arrives (a chunk decoded as soon as its
    bytes are fetched); :meth:`wait` returns when all of it is done and raises
    the first failure. Runs the work inline where :func:`thread_map` would
    (one thread, inside a pool thread or a dask task). At most ``backlog`` pieces
    wait for a thread, so input does not pile up in memory."""

    def __init__(
        self, backlog: int | None = None, *, io: bool = False, threads: int | None = None, limit: int | None = None
    ) -> None:
        """``threads``: as for :func:`thread_map`. ``io=True``: the work is
        requests (uploads), run on the I/O threads, never inline, with at most
        ``limit`` (default and at most ``io_concurrency``) pieces held at once."""
        self._io = io
        if io:
            self._inline = False
            self._pool = io_executor()
            self._gate = _Slots(io_limit(limit))
        else:
            n = pool_threads(threads)
            self._inline = n <= 1 or _in_pool()
            self._pool = None if self._inline else _executor(n)
            self._gate = _Slots(backlog or max(4, 4 * n))
        self._futures: list = []

    def submit(self, fn: Callable[..., object], *args: object) -> None:
        if self._inline:
            run_inline(fn, *args)
            return
        self._gate.acquire()

        def run() -> object:
            _local.in_pool = not self._io  # CPU work nested in CPU work runs inline
            try:
                return fn(*args)
            finally:
                _local.in_pool = False
                self._gate.release()

        try:
            self._futures.append(self._pool.submit(run))  # type: ignore[union-attr]
        except BaseException:
            self._gate.release()
            raise

    def wait(self) -> None:
        futures, self._futures = self._futures, []
        error: BaseException | None = None
        for future in futures:
            try:
                future.result()
            except BaseException as e:  # wait for all, then raise the first
                if error is None:
                    error = e
        if error is not None:
            raise error


def run_steps(
    first: dict[int, Any],
    read: Callable[[int, Any, Callable[[Callable[[Any], Any], Any], Any]], Any],
    advance: Callable[[int, Any], Any],
    threads: int | None = None,
    limit: int | None = None,
) -> None:
    """Drive many reads that each take steps, each at its own pace: the read
    ``i`` starts with the requests ``first[i]``; ``read(i, requests, cpu)`` and
    then ``advance(i, answer)``, which returns the read's next requests
    (``None`` when it is finished), run one after the other on one I/O thread
    (at most ``limit``, default ``io_concurrency``, reads at once), with no
    hand-off between them. So a shard whose index has arrived asks for its
    inner chunks while other shards' indexes are still on their way, and its
    inner chunks are decoded while other shards' bytes are. ``advance`` is CPU
    work, and so is what ``read`` hands ``cpu(fn, x)`` (``fn(x)``: decoding
    part of the answer as soon as it is in): at most ``threads`` (as for
    :func:`thread_map`; one inside pool work) run at once, each as pool work
    (what it hands the pool runs in its thread)."""
    slots = _Slots(1 if _in_pool() else max(1, pool_threads(threads)))

    def cpu(fn: Callable[[Any], Any], x: Any) -> Any:
        slots.acquire()
        try:
            return _pool_work(fn, x)
        finally:
            slots.release()

    def steps(item: tuple[int, Any]) -> None:
        i, requests = item
        while requests is not None:
            requests = cpu(partial(advance, i), read(i, requests, cpu))

    io_map(steps, list(first.items()), limit)
