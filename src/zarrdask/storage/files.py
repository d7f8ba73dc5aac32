"""File-system primitives behind :class:`~zarrdask.storage.local.LocalStore`
(zarr-specs v3 "File system store"): where an open descriptor really is,
positional reads, and the temporary files of atomic writes.

Where a descriptor is
    :func:`real_path` answers from the descriptor itself (Linux
    ``/proc/self/fd``, macOS ``F_GETPATH``), so the check that a key resolves
    inside the store root is made on the very file or directory the store
    then reads or writes, at the cost of one system call; elsewhere it falls
    back to ``os.path.realpath`` of the path.
Reads into an array's rows
    :func:`preadv_rows` reads a file straight into a strided array view (an
    uncompressed chunk's place in a larger output): one ``preadv`` per up to
    ``IOV_MAX`` rows, its ``iovec`` array built with numpy and the call made
    through ``ctypes`` (which releases the GIL), so each byte is copied once,
    by the kernel. Python's ``os.preadv`` would need a memoryview per row
    (about 0.4 ms for a 512-row chunk); this costs a few µs.
Temporary files
    An atomic write goes to ``.<name>.<32 hex digits>.tmp`` next to its
    destination, holds an ``flock`` on it while writing and renames it into
    place before closing it. A writer killed half-way leaves the file behind,
    unlocked (the kernel drops a dead process's locks). :func:`remove_stale`
    removes such a file only if it matches that pattern, is older than the
    age given, and can be locked without waiting — a live writer holds its
    lock, so its file is never removed. Lock files (``.<name>.zarrdask-lock``)
    left by killed lock holders are removed the same way. :class:`Janitor`
    runs such clean-ups on one background thread.
"""

from __future__ import annotations

import os
import queue
import re
import stat
import sys
import threading
import time
from typing import Any, Callable

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "preadv_rows",
    "real_path",
    "pread_all",
    "is_temp",
    "is_lock",
    "lock_name",
    "LOCK_SUFFIX",
    "lock_temp",
    "remove_stale",
    "stale_in_directory",
    "Janitor",
    "DIR_FLAGS",
]

# ".<name>.<32 hex digits>.tmp": a write in progress (or one that crashed).
_TEMP = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
#: ".<name>.zarrdask-lock": the lock file of the key whose file is <name>
LOCK_SUFFIX = ".zarrdask-lock"
_HAVE_PREAD = hasattr(os, "pread")
_PROC_FD = sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")
_F_GETPATH = getattr(fcntl, "F_GETPATH", None) if fcntl is not None else None

#: flags opening a directory only to name it (Linux: O_PATH needs no read permission)
DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def real_path(fd: int, path: str) -> str:
    """The absolute, symlink-free path of the file or directory open as ``fd``
    (``path`` is what it was opened as; used where the system cannot tell)."""
    if _PROC_FD:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # pragma: no cover - /proc not mounted in a sandbox
            pass
    if _F_GETPATH is not None:  # pragma: no cover - macOS
        try:
            raw = fcntl.fcntl(fd, _F_GETPATH, bytes(1024))
            return os.fsdecode(raw.split(b"\0", 1)[0])
        except OSError:
            pass
    return os.path.realpath(path)  # pragma: no cover - other systems


def pread_into(fd: int, buf: memoryview, offset: int) -> int:
    """Read into ``buf`` (a writable byte view) from ``offset`` until it is full
    or the file ends; the number of bytes read."""
    done, n = 0, buf.nbytes
    while done < n:
        if hasattr(os, "preadv"):
            got = os.preadv(fd, [buf[done:]], offset + done)
        else:  # pragma: no cover - Windows, old macOS
            data = pread_all(fd, n - done, offset + done)
            buf[done : done + len(data)] = data
            got = len(data)
        if not got:
            break
        done += got
    return done


#: ``iovec`` entries one ``preadv`` call takes at most (POSIX ``IOV_MAX``, 1024 on Linux and macOS)
IOV_MAX = 1024


def _load_preadv() -> Any:
    if not hasattr(os, "preadv"):  # pragma: no cover - Windows
        return None
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).preadv
    except (OSError, AttributeError):  # pragma: no cover - no C library to call
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    fn.restype = ctypes.c_ssize_t
    return fn


_preadv = _load_preadv()


def preadv_rows(fd: int, view: Any) -> bool:
    """Fill the numpy array ``view`` with the file's first ``view.nbytes``
    bytes, taken as ``view``'s elements in C order, reading straight into its
    memory; ``False`` (``view`` then holds garbage) when it cannot: ``view``
    not writable or not row-major with contiguous rows, no ``preadv`` here,
    or a short read."""
    import numpy as np

    if _preadv is None or not view.flags.writeable or view.dtype.hasobject:
        return False
    if view.nbytes == 0:
        return True
    shape, strides = list(view.shape), list(view.strides)
    # merge the trailing dimensions that are contiguous in memory into one row
    row = view.itemsize
    while shape and strides[-1] == row:
        row *= shape.pop()
        strides.pop()
    if row == view.itemsize and view.ndim:  # not even the last dimension is contiguous
        return False
    extent = row  # each dimension's step must clear everything below it: rows never overlap
    for n, st in zip(reversed(shape), reversed(strides)):
        if st < extent:
            return False
        extent = st * (n - 1) + extent
    offsets = np.zeros(1, dtype=np.int64)
    for n, st in zip(shape, strides):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
    iov = np.empty((len(offsets), 2), dtype=np.uint64)
    iov[:, 0] = offsets + view.ctypes.data
    iov[:, 1] = row
    pos = 0
    for start in range(0, len(iov), IOV_MAX):
        n = min(IOV_MAX, len(iov) - start)
        got = _preadv(fd, iov[start:].ctypes.data, n, pos)
        if got != n * row:
            return False
        pos += got
    return True


def pread_all(fd: int, size: int, offset: int) -> bytes:
    """Read ``size`` bytes at ``offset`` (fewer only at the end of the file)."""
    parts = []
    while size > 0:
        if _HAVE_PREAD:
            chunk = os.pread(fd, size, offset)
        else:  # pragma: no cover - Windows has no os.pread
            os.lseek(fd, offset, os.SEEK_SET)
            chunk = os.read(fd, size)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    if len(parts) == 1:
        return parts[0]
    return b"".join(parts)


def is_temp(name: str) -> bool:
    """Whether a file name is one of our temporary files."""
    return name.endswith(".tmp") and _TEMP.match(name) is not None


def is_lock(name: str) -> bool:
    """Whether a file name is one of our lock files."""
    return name.endswith(LOCK_SUFFIX) and name.startswith(".") and len(name) > len(LOCK_SUFFIX) + 1


def lock_name(name: str) -> str:
    """The lock file's name of the key whose file is ``name``."""
    return f".{name}{LOCK_SUFFIX}"


def lock_temp(fd: int) -> None:
    """Mark a temporary file as in use by a live writer (POSIX ``flock``; on a
    file system without locks the file's age alone protects it)."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # pragma: no cover - a file system without flock
            pass


def remove_stale(directory: str, name: str, max_age: float, now: float, dir_fd: int | None = None) -> bool:
    """Remove the temporary or lock file ``name`` in ``directory`` if it is stale.

    Stale: the name matches the temporary-file or lock-file pattern, it is a
    regular file (not a link) last modified at least ``max_age`` seconds
    before ``now``, and no process holds its lock (a lock file left by a
    killed process is unlocked; removing one that a waiter has open is safe,
    see :class:`~zarrdask.storage.locks.FileLocks`). Returns whether it was
    removed; races (the file renamed or removed meanwhile) are not errors.
    """
    if not (is_temp(name) or is_lock(name)):
        return False
    where = name if dir_fd is not None else os.path.join(directory, name)
    try:
        st = os.stat(where, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or now - st.st_mtime < max_age:
            return False
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError:
        return False
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a live writer holds it
                return False
            except OSError:  # pragma: no cover - no flock here: the age decides
                pass
        mine = os.fstat(fd)
        try:
            now_st = os.stat(where, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return False
        if (now_st.st_dev, now_st.st_ino) != (mine.st_dev, mine.st_ino) or now - mine.st_mtime < max_age:
            return False
        os.unlink(where, dir_fd=dir_fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def stale_in_directory(directory: str, max_age: float, now: float | None = None) -> list[str]:
    """Remove the stale temporary and lock files directly in ``directory``; their names."""
    now = time.time() if now is None else now
    removed = []
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries if is_temp(e.name) or is_lock(e.name)]
    except OSError:
        return removed
    for name in names:
        if remove_stale(directory, name, max_age, now):
            removed.append(name)
    return removed


class Janitor:
    """One daemon thread that runs clean-up jobs queued by stores.

    A job is a callable; failures are ignored (a clean-up is an optimisation,
    never a condition of correctness). The thread is started on the first
    job, and again in a forked child.
    """

    def __init__(self) -> None:
        self._queue: "queue.SimpleQueue[Callable[[], object]]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._done: set = set()

    def once(self, token: object, job: Callable[[], object]) -> None:
        """Queue ``job`` unless a job with ``token`` was queued before in this process."""
        if token in self._done and self._pid == os.getpid():
            return
        with self._lock:
            if self._pid != os.getpid():
                self._done = set()
                self._queue = queue.SimpleQueue()
                self._pid = os.getpid()
                threading.Thread(target=self._run, args=(self._queue,), name="zarrdask-janitor", daemon=True).start()
            if token in self._done:
                return
            self._done.add(token)
            self._queue.put(job)

    @staticmethod
    def _run(jobs: "queue.SimpleQueue[Callable[[], object]]") -> None:
        while True:
            job = jobs.get()
            try:
                job()
            except Exception:  # pragma: no cover - never let the thread die
                pass

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until every job queued so far has run (for tests); False on timeout."""
        if self._pid != os.getpid():
            return True
        done = threading.Event()
        self._queue.put(done.set)
        return done.wait(timeout)
