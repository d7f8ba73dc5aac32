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
from typing import Callable, Sequence, TypeVar

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




class single_threaded:
    """Within this context the current thread's engine work runs serially (inside
    a dask task: dask already runs tasks in parallel, so the engine must not
    oversubscribe the cores)."""

    def __enter__(self) -> "single_threaded":
        self._old = getattr(_local, "threads", None)
        _local.threads = 1
        return self

    def __exit__(self, *exc: object) -> None:
        _local.threads = self._old
