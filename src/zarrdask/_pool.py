"""The one thread pool for CPU work (decoding and encoding chunks).

numcodecs codecs release the GIL, so threads decode in parallel. The pool is
created lazily, per process (it is rebuilt after a fork), sized by the setting
``threads``; work submitted from inside a pool thread runs serially, so nested
fan-out (a shard's inner chunks inside a multi-shard read) never deadlocks or
oversubscribes.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Sequence, TypeVar

from . import config

T = TypeVar("T")
R = TypeVar("R")

# -- the thread pool ---------------------------------------------------------
_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None
_pool_lock = threading.Lock()
_local = threading.local()


def _executor(threads: int) -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid() or _pool._max_workers != threads:
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="zarrdask")
            _pool_pid = os.getpid()
        return _pool


def thread_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]``, run on the engine's pool when it pays off.

    Runs serially inside a pool thread (no nested fan-out) and when the setting
    ``threads`` is 1 (as inside a dask task, where dask parallelises already).
    """
    threads = getattr(_local, "threads", None) or config.get("threads")
    if len(items) <= 1 or threads <= 1 or getattr(_local, "in_pool", False):
        return [fn(x) for x in items]

    def run(x: T) -> R:
        _local.in_pool = True
        try:
            return fn(x)
        finally:
            _local.in_pool = False

    return list(_executor(threads).map(run, items))




def one_chunk_at_a_time() -> bool:
    """Whether the engine must fetch and store one chunk per call here (inside a
    :class:`single_threaded` context that asked for it: a rechunk task, whose
    declared memory counts one chunk in flight)."""
    return getattr(_local, "one_chunk", False)


class single_threaded:
    """Within this context the current thread's engine work runs serially (inside
    a dask task: dask already runs tasks in parallel, so the engine must not
    oversubscribe the cores). ``one_chunk=True`` also makes the engine fetch,
    and encode and store, one chunk at a time, so that besides the data it reads
    or writes it holds at most one chunk's stored bytes and one decoded or
    encoded chunk (see :func:`zarrdask.workflows.plan.task_overhead`)."""

    def __init__(self, *, one_chunk: bool = False) -> None:
        self._one_chunk = one_chunk

    def __enter__(self) -> "single_threaded":
        self._old = getattr(_local, "threads", None), getattr(_local, "one_chunk", False)
        _local.threads = 1
        _local.one_chunk = self._one_chunk or self._old[1]
        return self

    def __exit__(self, *exc: object) -> None:
        _local.threads, _local.one_chunk = self._old


# -- the I/O threads -----------------------------------------------------------
# Requests to remote stores wait on the network, not the CPU: they run on a
# separate, larger pool (setting ``io_concurrency``), never on the CPU pool,
# so a batch of requests issued from a pool thread (or from a dask task) is
# still concurrent.
_io_pool: ThreadPoolExecutor | None = None
_io_pid: int | None = None


def io_executor() -> ThreadPoolExecutor:
    """The process's pool of I/O threads, sized by the setting ``io_concurrency``."""
    global _io_pool, _io_pid
    size = max(1, int(config.get("io_concurrency")))
    with _pool_lock:
        if _io_pool is None or _io_pid != os.getpid() or _io_pool._max_workers != size:
            _io_pool = ThreadPoolExecutor(size, thread_name_prefix="zarrdask-io")
            _io_pid = os.getpid()
        return _io_pool


def io_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]`` with every call running concurrently on the
    I/O threads (at most ``io_concurrency`` at once); exceptions propagate."""
    if len(items) <= 1:
        return [fn(x) for x in items]
    return list(io_executor().map(fn, items))


def io_unordered(fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
    """``(i, fn(items[i]))`` pairs in the order the calls finish, with at most
    ``io_concurrency`` calls in flight: a call starts only when an earlier one
    was consumed, so results never pile up faster than the caller takes them.
    An exception propagates when its result would be yielded."""
    from concurrent.futures import FIRST_COMPLETED, wait

    if len(items) <= 1:
        for i, x in enumerate(items):
            yield i, fn(x)
        return
    pool = io_executor()
    limit = pool._max_workers
    todo = iter(range(len(items)))
    running: dict = {}
    try:
        for i in todo:
            running[pool.submit(fn, items[i])] = i
            if len(running) >= limit:
                break
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i = running.pop(future)
                yield i, future.result()
                nxt = next(todo, None)
                if nxt is not None:
                    running[pool.submit(fn, items[nxt])] = nxt
    finally:
        for future in running:
            future.cancel()


class Pipeline:
    """CPU work submitted as its input arrives (a chunk decoded as soon as its
    bytes are fetched); :meth:`wait` returns when all of it is done and raises
    the first failure. Runs the work inline where :func:`thread_map` would
    (one thread, inside a pool thread or a dask task). At most ``backlog`` pieces
    wait for a thread, so input does not pile up in memory."""

    def __init__(self, backlog: int | None = None, *, io: bool = False) -> None:
        """``io=True``: the work is requests (uploads), run on the I/O threads,
        never inline, with at most ``io_concurrency`` pieces held at once."""
        self._io = io
        if io:
            self._inline = False
            self._pool = io_executor()
            self._gate = threading.BoundedSemaphore(self._pool._max_workers)
        else:
            threads = getattr(_local, "threads", None) or config.get("threads")
            self._inline = threads <= 1 or getattr(_local, "in_pool", False)
            self._pool = None if self._inline else _executor(threads)
            self._gate = threading.BoundedSemaphore(backlog or max(4, 4 * threads))
        self._futures: list = []

    def submit(self, fn: Callable[..., object], *args: object) -> None:
        if self._inline:
            fn(*args)
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
