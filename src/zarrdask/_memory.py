"""Aligned buffers for reads that the kernel copies into.

On the x86 machines measured (AMD EPYC, Linux 6.x), ``read``/``pread`` into a
destination 16 bytes past a 64-byte boundary costs about six times as much
CPU as into an aligned one (1 MiB from tmpfs: 430 µs against 72 µs; the
kernel's ``rep movsb`` copy): and ``malloc`` — so ``numpy.empty`` and
``bytes`` — returns exactly such addresses. Buffers that files are read into
are therefore allocated :data:`ALIGN`-byte aligned.

They are also reused (:data:`read_buffers`): a fresh buffer of a few hundred
KiB to a few MiB is ``mmap``'d by ``malloc`` (or carved from a heap that
``free`` trims again), so every page of it faults on first touch — 256 faults
per MiB, each with the kernel zeroing a page. Measured on the same machine, a
full read of 256 MiB of uncompressed 1 MiB chunks on one thread took 250–290 ms
with 65,000 minor faults per read, and 90 ms with the read buffers reused
(floor: 28 ms to fill the output, 26 ms of ``pread``, 28 ms of copying).

Opening a large hierarchy turns its metadata into many small objects that all
live on (documents, metadata objects, arrays, xarray variables): Python's
cyclic garbage collector, which runs every few hundred container allocations
and over the whole heap once enough new objects survived, finds nothing to
free in them and yet cost two thirds of the CPU time of opening a Dataset of
10,000 variables (3.3 s, 1.2 s without it), more than linear in the variables.
:func:`paused_gc` pauses it while such a structure is built.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math
import os
import sys
import threading
import weakref
from typing import Iterator

import numpy as np

#: alignment of buffers files are read into (a cache line; enough for ``rep movsb``)
ALIGN = 64


def aligned_empty(shape: tuple[int, ...] | int, dtype: np.dtype | str = np.uint8, order: str = "C") -> np.ndarray:
    """``numpy.empty(shape, dtype, order)`` whose data starts on an :data:`ALIGN`-byte boundary."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = math.prod(shape) * dtype.itemsize  # math.prod: a tenth of np.prod's cost on a tuple
    if nbytes < 4096 or dtype.hasobject or order not in ("C", "F"):
        return np.empty(shape, dtype=dtype, order=order)  # type: ignore[arg-type]
    raw = np.empty(nbytes + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    flat = raw[start : start + nbytes].view(dtype)
    if order == "F":
        return flat.reshape(shape[::-1]).T
    return flat.reshape(shape)


class BufferPool:
    """Aligned byte buffers handed out by :meth:`take` and given back by
    :meth:`give` for the next read to reuse (their pages already faulted in).

    Sizes are rounded up to one of eight classes per power of two (at most
    12.5 % unused), buffers above :attr:`largest` are never kept, and the free
    buffers together never exceed :attr:`max_bytes`. Only buffers this pool
    handed out are taken back, each once: :meth:`give` ignores anything else,
    so a caller may pass every value it got from a store. A buffer must not be
    given back while anything still refers to its memory.
    """

    def __init__(self, max_bytes: int, largest: int) -> None:
        self.max_bytes, self.largest = max_bytes, largest
        self._free: dict[int, list[np.ndarray]] = {}
        # address of the data -> buffer handed out (weak: a buffer never given
        # back is freed as usual once its views are gone)
        self._out: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
        self._held = 0
        self._lock = threading.Lock()

    @staticmethod
    def size_class(nbytes: int) -> int:
        if nbytes <= 4096:
            return 4096
        step = 1 << max(nbytes.bit_length() - 4, 0)  # 1/8 of the power of two below nbytes
        return -(-nbytes // step) * step

    def take(self, nbytes: int) -> memoryview:
        """A writable, :data:`ALIGN`-aligned byte view of exactly ``nbytes``."""
        size = self.size_class(nbytes)
        if size > self.largest:  # not kept here: reused while reads like this one run
            return memoryview(large_buffers.empty((nbytes,), np.dtype(np.uint8)))
        with self._lock:
            free = self._free.get(size)
            buf = free.pop() if free else None
            if buf is not None:
                self._held -= size
        if buf is None:
            buf = aligned_empty(size)
        with self._lock:
            self._out[buf.ctypes.data] = buf
        return memoryview(buf)[:nbytes]

    def give(self, values: "list | tuple") -> None:
        """Give back the buffers behind ``values`` (memoryviews from :meth:`take`,
        possibly sliced or read-only); anything else is ignored."""
        with self._lock:
            for v in values:
                obj = getattr(v, "obj", None)
                if not isinstance(obj, np.ndarray):
                    continue
                buf = self._out.pop(obj.ctypes.data, None)
                if buf is None or buf is not obj:
                    continue
                if self._held + buf.nbytes <= self.max_bytes:
                    self._free.setdefault(buf.nbytes, []).append(buf)
                    self._held += buf.nbytes

    def forget(self) -> None:
        """Drop every free buffer (their memory goes back to the system)."""
        with self._lock:
            self._free.clear()
            self._held = 0


#: the buffers chunk files are read into by ``LocalStore.get_buffers`` and given
#: back by the chunk engine once decoded (not inside rechunk tasks, which free
#: them): room for four groups of chunks in flight
#: (:data:`zarrdask.core.engine.GROUP_BYTES`, 8 MiB each); a process keeps at
#: most 32 MiB of them
read_buffers = BufferPool(max_bytes=32 << 20, largest=16 << 20)


class LargeBuffers:
    """Memory for the arrays reads return, of at least :attr:`smallest` bytes,
    and for files read whole that are too large for :data:`read_buffers`,
    reused by later reads once an array (or buffer) and all its views are gone.

    A fresh array of a few MiB or more comes from ``mmap`` (or from a heap
    that ``free`` trims again), so each of its pages faults on first touch
    with the kernel zeroing it. Whether ``malloc`` reuses freed memory
    instead depends on its thresholds, which move with what the process
    freed before: measured on 2 threads, a mean over time of 80 chunks of
    4.7 MB (xarray + dask, one task per chunk) took 256–296 ms in processes
    whose reads did not fault and 397–417 ms in those where they did (56,000
    to 96,000 page faults per computation).

    An array from :meth:`empty` is a view of a buffer of the pool; when the
    last reference to its memory goes (the array, its views, anything holding
    them), the buffer comes back. A buffer that comes back is kept for the
    next read of the same size class only while other arrays of the pool are
    alive, and only as long as the free buffers take no more bytes than those
    arrays: the memory kept is at most what reads in progress or results still
    in use hold, and it all goes back to the system once the last one is gone.
    """

    def __init__(self, smallest: int) -> None:
        self.smallest = smallest
        self._free: dict[int, list[np.ndarray]] = {}
        self._free_bytes = self._live_bytes = 0
        self._generation = 0  # a forked child's: buffers of its parent's arrays do not come back
        # re-entrant: a buffer may come back (its array collected) while this thread takes one
        self._lock = threading.RLock()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialised, :data:`ALIGN`-aligned C-order array (from the pool
        when it takes at least :attr:`smallest` bytes and holds no objects)."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.smallest or dtype.hasobject:
            return aligned_empty(shape, dtype)
        size = BufferPool.size_class(nbytes)
        with self._lock:
            free = self._free.get(size)
            buf = free.pop() if free else None
            if buf is not None:
                self._free_bytes -= size
            self._live_bytes += size
            generation = self._generation
        if buf is None:
            buf = aligned_empty(size)
        # the array's base: collected only once nothing refers to the memory any more
        holder = (ctypes.c_char * nbytes).from_buffer(buf)
        weakref.finalize(holder, self._back, buf, generation).atexit = False
        return np.frombuffer(holder, dtype=dtype).reshape(shape)

    def _back(self, buf: np.ndarray, generation: int) -> None:
        size = buf.nbytes
        with self._lock:
            if generation != self._generation:
                return
            self._live_bytes -= size
            if not self._live_bytes:
                self._free.clear()
                self._free_bytes = 0
            elif self._free_bytes + size <= self._live_bytes:
                self._free.setdefault(size, []).append(buf)
                self._free_bytes += size

    @property
    def free_bytes(self) -> int:
        """Bytes of the free buffers kept."""
        return self._free_bytes

    def forget(self) -> None:
        """Drop every free buffer; the buffers in use no longer come back."""
        with self._lock:
            self._free = {}
            self._free_bytes = self._live_bytes = 0
            self._generation += 1

    def _after_fork_in_child(self) -> None:
        """A forked child starts with a lock no parent thread holds and nothing kept."""
        self._lock = threading.RLock()
        self.forget()


#: the arrays reads allocate (not inside rechunk tasks, whose declared memory
#: has no room for buffers kept), from 4 MiB on: smaller ones ``malloc`` reuses
#: well (256 dask tasks each reading a 1 MiB chunk of 8192² float32 and summing
#: it, two threads, three processes of twelve runs: best 0.235–0.244 s with
#: the pool against 0.225–0.246 s without, medians 0.259–0.285 against
#: 0.256–0.269), larger ones it may map afresh each time
large_buffers = LargeBuffers(smallest=4 << 20)

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=large_buffers._after_fork_in_child)

# -- returning freed memory ------------------------------------------------------
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: allocations from this size on are mapped by glibc (and unmapped when freed) in a rechunk
#: worker that reads or writes a store across a network
MMAP_THRESHOLD = 256 << 10
#: the mmap threshold of a worker that only copies between local stores
LOCAL_MMAP_THRESHOLD = 32 << 20
_threshold: int | None = None  # the mmap threshold set (None: not yet; 0: cannot be set)
_libc = None


def return_freed_memory(network: bool = False) -> None:
    """Give memory that ``malloc`` holds free back to the system (glibc only;
    a no-op elsewhere). A rechunk task calls it before it starts
    (``network``: it reads or writes a store whose requests wait on a network).

    glibc raises its thresholds as a process frees large buffers: blocks of up
    to 32 MiB then come from the heap and up to 64 MiB free at a heap's top is
    kept; with several threads, each arena keeps its own. A rechunk worker
    that allocates and frees tens of MiB per task then stays well above what
    its tasks hold. The first call fixes the mmap threshold at
    :data:`LOCAL_MMAP_THRESHOLD` (32 MiB: larger buffers are mapped, and
    unmapped when freed) and the trim threshold at 1 MiB; every call runs
    ``malloc_trim(0)``. Measured on two threads at max_mem 64 MB (a sharded
    target): peak resident memory 142–197 MiB before, 130–133 MiB after,
    against 122.6 MiB of live buffers (``tracemalloc``).

    A worker talking to an object store gets :data:`MMAP_THRESHOLD` (256 KiB)
    instead: the store client's threads allocate request and response bodies
    in arenas of their own, and what those keep free in pieces is not all
    given back even by ``malloc_trim``. Measured on a rechunk from S3 (one
    worker, max_mem 64 MB, 10 MB target chunks): memory kept between tasks
    23–28 MiB with the 32 MiB threshold, 10 MiB with 256 KiB, and each
    worker's peak 83–86 MiB against 51–58 MiB, in the same time. Local copies
    keep the larger threshold: a mapped buffer faults in every page on first
    touch, which cost them 5–15% of their time at 256 KiB, for no less memory.
    """
    global _threshold, _libc
    # nor do large buffers stay for later reads in such a worker
    if large_buffers.smallest != sys.maxsize:
        large_buffers.smallest = sys.maxsize
        large_buffers.forget()
    want = MMAP_THRESHOLD if network else LOCAL_MMAP_THRESHOLD
    if _threshold is None:
        _threshold = 0  # tried once
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL("libc.so.6")
                libc.mallopt(_M_TRIM_THRESHOLD, 1 << 20)
                _libc = libc
            except (OSError, AttributeError):  # not glibc (musl has no mallopt thresholds)
                pass
    if _libc is None:
        return
    if _threshold == 0 or want < _threshold:
        _libc.mallopt(_M_MMAP_THRESHOLD, want)
        _threshold = want
    _libc.malloc_trim(0)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large, long-lived structure
    is built (see the module documentation); ``with paused_gc():`` or, on a
    function, ``@paused_gc()``.

    Objects are still freed by reference counting; reference cycles made in
    the meantime are collected once the collector runs again. Nothing is done
    when the collector is already off, so nested pauses, and a collector the
    program turned off, stay as they are.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
