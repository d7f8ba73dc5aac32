"""Exclusive locks on store keys, for read-modify-write.

The Zarr specifications (zarr-specs v3 core, "Stores") leave concurrent
writes to the implementation; a partial write of a chunk or shard reads the
old value, changes part of it and writes it back, and two such writers must
not interleave. :meth:`Store.locked(keys) <zarrdask.storage.abc.Store.locked>`
holds an exclusive lock on each key for the duration of a ``with`` block.

In-process locks
    Re-entrant thread locks, one per key, in a table keyed by the store's
    *location* (``Store.location``: the root directory of a
    ``LocalStore``, the mapping of a ``MemoryStore``, the URL of an
    ``FsspecStore``, ...) and the key, so two store objects over the same
    data share them. Entries exist only while held or awaited.
Cross-process locks (``LocalStore``)
    :class:`FileLocks`: an ``flock`` on one lock file per key, next to the
    key (``LocalStore`` documents the name). See :class:`FileLocks` for the
    protocol.

Keys are locked in sorted order and every key of one call is held before the
first cross-process lock is taken, so callers that lock several keys in one
call cannot deadlock each other. A thread may lock a key it already holds
(the lock is re-entrant); nesting ``locked`` calls on *different* keys is
not ordered and is the caller's risk, as with any locks.

After ``fork()`` the child starts with an empty table: locks held by the
parent's threads are the parent's, and the child closes its copies of the
parent's lock file descriptors without unlocking them.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Callable, Hashable, Iterator, Sequence

from ..errors import StoreError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: in-process locks only
    fcntl = None  # type: ignore[assignment]

__all__ = ["hold", "FileLocks", "HAVE_FILE_LOCKS"]

#: whether this platform has ``flock`` (cross-process locks for LocalStore)
HAVE_FILE_LOCKS = fcntl is not None


class _Entry:
    """One key's lock: a re-entrant lock, how many threads use the entry
    (holding or waiting; the entry is dropped at zero), the holder's nesting
    depth and its cross-process lock, if any."""

    __slots__ = ("lock", "users", "depth", "token")

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.users = 0
        self.depth = 0
        self.token: object = None


_table: dict[tuple[Hashable, str], _Entry] = {}
_table_mutex = threading.Lock()


def _after_fork_in_child() -> None:
    global _table_mutex
    for entry in _table.values():
        if isinstance(entry.token, tuple):
            try:
                os.close(entry.token[0])  # the parent still holds the lock through its own copy
            except OSError:
                pass
    _table.clear()
    _table_mutex = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _drop_user(name: tuple[Hashable, str], entry: _Entry) -> None:
    with _table_mutex:
        entry.users -= 1
        if entry.users == 0 and _table.get(name) is entry:
            del _table[name]


def _enter(name: tuple[Hashable, str]) -> _Entry:
    with _table_mutex:
        entry = _table.get(name)
        if entry is None:
            entry = _table[name] = _Entry()
        entry.users += 1
    try:
        entry.lock.acquire()
    except BaseException:  # interrupted while waiting
        _drop_user(name, entry)
        raise
    entry.depth += 1
    return entry


def _leave(name: tuple[Hashable, str], entry: _Entry) -> None:
    entry.depth -= 1
    entry.lock.release()
    _drop_user(name, entry)


@contextmanager
def hold(space: Hashable, keys: Sequence[str], files: "FileLocks | None" = None) -> Iterator[None]:
    """Hold the in-process locks of ``keys`` in ``space`` and, with ``files``,
    their cross-process locks, until the context exits.

    ``keys`` must be validated, sorted and free of duplicates.
    """
    held: list[tuple[tuple[Hashable, str], _Entry]] = []
    # cross-process locks taken by this call: a re-entrant call (the thread
    # holds the key already) takes one if the outer call did not
    filed: list[tuple[str, _Entry]] = []
    try:
        for key in keys:
            name = (space, key)
            held.append((name, _enter(name)))
        if files is not None:
            for (_, key), entry in held:
                if entry.token is None:
                    entry.token = files.acquire(key)
                    filed.append((key, entry))
        yield
    finally:
        for key, entry in reversed(filed):
            token, entry.token = entry.token, None
            files.release(key, token)  # type: ignore[union-attr]
        for name, entry in reversed(held):
            _leave(name, entry)


class FileLocks:
    """Cross-process exclusive locks: ``flock`` on one lock file per key.

    Where a key's lock file is, is the store's business: ``locate(key)``
    returns the path (creating its directory if need be, and checking that it
    lies inside the store). The protocol:

    * acquire: open (creating) the lock file, ``flock(LOCK_EX)``, then check
      that the path still names the locked file (``fstat`` against ``stat``);
      if another holder removed it in the meantime, start again;
    * release: remove the lock file, then close it (which unlocks), then call
      ``released(path)`` (the store prunes a directory left empty).

    So lock files exist only while held or awaited, a waiter never holds a
    lock on a removed file (it finds the path gone or naming another file,
    and starts again), and a process that dies releases its locks (the
    kernel closes its descriptors); its lock files are left behind, empty,
    unlocked, and reused by the next holder or removed by a clean-up. Each
    held key costs one file descriptor.

    Parameters
    ----------
    locate : callable
        ``locate(key) -> path`` of the key's lock file.
    owner : str
        Named in error messages (the store).
    released : callable, optional
        Called with the path of each lock file after its release.
    """

    def __init__(
        self,
        locate: Callable[[str], str],
        owner: str,
        released: Callable[[str], None] | None = None,
    ) -> None:
        self.locate = locate
        self.owner = owner
        self.released = released

    def acquire(self, key: str) -> tuple[int, str]:
        """Block until this process holds ``key``'s lock; returns the token for :meth:`release`."""
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        path = ""
        try:
            for _ in range(1000):  # each turn: the file was removed under us (by a holder, a prune)
                path = self.locate(key)
                try:
                    fd = os.open(path, flags, 0o644)
                except FileNotFoundError:
                    continue  # its directory was pruned meanwhile: locate() makes it again
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    mine = os.fstat(fd)
                    try:
                        now = os.stat(path, follow_symlinks=False)
                    except FileNotFoundError:
                        now = None
                except BaseException:
                    os.close(fd)
                    raise
                if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                    return fd, path
                os.close(fd)  # removed by the previous holder: lock the new one
        except OSError as e:
            if isinstance(e, StoreError):
                raise
            raise StoreError(f"{self.owner}: cannot lock key {key!r} (lock file {path!r}): {e}") from e
        raise StoreError(f"{self.owner}: cannot lock key {key!r}: its lock file {path!r} keeps disappearing")

    def release(self, key: str, token: tuple[int, str]) -> None:
        """Release a lock :meth:`acquire` returned."""
        fd, path = token
        try:
            os.unlink(path)
        except OSError:
            pass  # already gone (removed by hand, or with its directory)
        finally:
            os.close(fd)
        if self.released is not None:
            self.released(path)
