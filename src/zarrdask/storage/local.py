"""A store on the local file system (zarr-specs v3 "File system store").

Key translation follows that specification: a key ``"a/b/c"`` is the file
``<root>/a/b/c`` (``/`` replaced by the native separator), and listing walks
the directory tree back into keys. Keys are checked by
:func:`~zarrdask.storage.keys.validate_key`, so no key can reach outside the
root (no ``..``, absolute paths, backslashes or drive letters).

Writes are atomic: a value is written to a temporary file
``.<name>.<uuid>.tmp`` next to its destination and moved into place with
``os.replace``, so a reader sees either the old value or the new one, never a
partial file, and a failed write leaves the old value intact. Temporary files
never appear in listings. Byte ranges are read with ``os.pread``.

Symbolic links
--------------
Links that resolve inside the root work as the file system makes them work.
A key whose path resolves *outside* the root is refused with
:class:`~zarrdask.errors.InvalidKeyError` naming the key and where it
resolves; the check is made on the file or directory actually opened (see
:mod:`zarrdask.storage.files`), so nothing outside the root is read, written
or deleted. A link that is the key's own file is replaced by a write and
removed by a delete, never what it names (``docs/guarantees.md``, "Symbolic
links", has the table).

``LocalStore(..., outside_links="read")`` follows links out of the root for
reads (a hierarchy assembled from links to data elsewhere); writes and deletes never leave the root.

Listings do not descend into linked directories, and list linked files,
except those resolving outside the root unless ``outside_links="read"``.
``delete_prefix`` removes links, never what they name, and refuses a prefix
whose directory resolves outside the root. A value's version: its file's
identity, size and modification time (:mod:`~zarrdask.storage.versions`).

Consistency and locks
---------------------
:meth:`LocalStore.reader` keeps one file descriptor open: writes replace
files by rename, so the descriptor keeps reading the version it opened
(exact). :meth:`LocalStore.locked` takes in-process locks, and across
processes, an ``flock`` on a lock file per key
(:class:`~zarrdask.storage.locks.FileLocks`): ``.<name>.zarrdask-lock`` next
to the key's file ``<name>``, in the key's directory (created if need be,
checked to lie inside the root like any write), and only while the lock is
held or awaited — the holder removes it on release. Lock files are never
listed, and keys whose last segment is named like one are refused. zarr-python
ignores them: a dot-file in a chunk directory is no chunk key (zarr-python
counts and reads chunks by their names), and only a lock on a *group's*
metadata key puts one where zarr-python lists a group's members, which then
warns that it is not part of the hierarchy, while the lock is held. Per key,
not per directory: writers of different chunks of one directory do not wait
for each other (``docs/guarantees.md`` has the measurements).

Temporary files of killed writers
---------------------------------
A writer killed between creating its temporary file and renaming it leaves
the file behind. Such files are removed only if they match the pattern above,
are older than ``temp_max_age`` (default one hour) and are not locked by a
live writer: explicitly with :meth:`LocalStore.clean_temporary_files`, and
automatically, in the background, for each directory the first time this
process writes into it.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
import uuid
from typing import Any, Hashable, Iterable, Iterator, Mapping, Sequence

from .._memory import read_buffers
from .._pool import serial_map, thread_map
from ..errors import InvalidKeyError, StoreError
from .abc import Store, as_buffer
from .byte_range import ByteRequest, resolve
from .capabilities import IN_PLACE_READS, PROCESS_LOCKS, ExactReaders, InPlaceReads, ProcessLocks
from .files import (
    DIR_FLAGS,
    Janitor,
    is_lock,
    is_temp,
    lock_name,
    lock_temp,
    pread_all,
    pread_into,
    preadv_rows,
    real_path,
    remove_stale,
    stale_in_directory,
)
from .keys import is_metadata_key, validate_key, validate_prefix
from .locks import HAVE_FILE_LOCKS, FileLocks
from .readers import ValueReader
from .versions import FileVersions, file_version

__all__ = ["LocalStore"]

_OUTSIDE_LINKS = ("refuse", "read")
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
# opening only to fstat and locate (Linux: O_PATH needs no read permission)
_STAT_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_CLOEXEC", 0)
_DIR_FD = os.name != "nt"  # directory descriptors for *at() calls
_MISSING = (FileNotFoundError, NotADirectoryError)

_janitor = Janitor()


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


class _FileReader(ValueReader):
    """Reads through one open descriptor (exact: writes replace files by
    rename, so the descriptor keeps the version it opened)."""

    exact = True
    _fd: int | None = None
    path: str  # the key's file (checked when the reader is made)

    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        fd, self._stat = self.store._open_file(self.key, self.path)  # type: ignore[attr-defined]
        if fd is None:
            return None
        self._fd, self.version = fd, file_version(self._stat)
        return self.store._pread_ranges(self.key, fd, self._stat.st_size, ranges)  # type: ignore[attr-defined]

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        try:
            st = os.fstat(self._fd)
        except OSError as e:
            raise StoreError(f"{self.store!r}: cannot read key {self.key!r}: {e}") from e
        if (st.st_size, st.st_mtime_ns) != (self._stat.st_size, self._stat.st_mtime_ns):
            raise self._changed("its file was rewritten in place (size or modification time changed)")
        return self.store._pread_ranges(self.key, self._fd, st.st_size, ranges)  # type: ignore[attr-defined]

    def _same(self) -> bool:
        try:
            now = os.stat(self.path)
        except OSError:
            return False
        first = self._stat
        return (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (
            first.st_dev, first.st_ino, first.st_size, first.st_mtime_ns,
        )

    def _still_missing(self) -> bool:
        try:
            os.stat(self.path)
        except _MISSING:
            return True
        except OSError:
            return False
        return False

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class LocalStore(FileVersions, InPlaceReads, ExactReaders, ProcessLocks, Store):
    """A store whose keys are files under a root directory.

    Parameters
    ----------
    root : str or os.PathLike
        The root directory. It need not exist: a missing root reads as an
        empty store and is created by the first write.
    read_only : bool, default False
        Refuse writes with :class:`~zarrdask.errors.ReadOnlyError`.
    fsync : bool, default False
        ``fsync`` each file before moving it into place (durable against power
        loss, slower).
    outside_links : {"refuse", "read"}, default "refuse"
        What to do with a key that resolves outside the root through a
        symbolic link: ``"refuse"`` raises
        :class:`~zarrdask.errors.InvalidKeyError` for every operation;
        ``"read"`` follows such links for reads (and lists them). Writes and
        deletes never leave the root.
    temp_max_age : float or None, default 3600
        Age in seconds after which a temporary file left by a killed writer
        is removed automatically (in the background, per directory, the first
        time this process writes into it); ``None`` turns that off.

    Notes
    -----
    Deleting a key removes directories it leaves empty (up to, not including,
    the root), so ``list_dir`` does not report empty directories left behind
    by this store. Directories created by other tools are reported as they
    are.

    Examples
    --------
    >>> import tempfile
    >>> store = LocalStore(tempfile.mkdtemp())
    >>> store.set("a/c/0", b"abc")
    >>> store.list_dir("a")
    ['c']
    """

    supports_partial_reads = True
    listable = True

    @property
    def capabilities(self) -> frozenset[str]:
        """Its mixins', less ``process_locks`` where the system has no file
        locks and ``in_place_reads`` for a subclass reading through its own
        ``get_many`` (to count or change reads: never read around it)."""
        caps = super().capabilities - (set() if HAVE_FILE_LOCKS else {PROCESS_LOCKS})
        return caps if self._reads_own_files() else caps - {IN_PLACE_READS}

    def _reads_own_files(self) -> bool:
        return type(self).get_many is LocalStore.get_many

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        read_only: bool = False,
        fsync: bool = False,
        outside_links: str = "refuse",
        temp_max_age: float | None = 3600.0,
    ) -> None:
        root = os.fspath(root)
        if isinstance(root, bytes):
            raise TypeError("LocalStore root must be a str path, not bytes")
        if root.startswith("file://"):
            root = root[len("file://"):]
        if outside_links not in _OUTSIDE_LINKS:
            raise ValueError(f"outside_links must be one of {_OUTSIDE_LINKS}, got {outside_links!r}")
        if temp_max_age is not None and temp_max_age < 0:
            raise ValueError(f"temp_max_age must be >= 0 or None, got {temp_max_age!r}")
        self.root = os.path.abspath(root)
        self.writable = not read_only
        self.fsync = fsync
        self.outside_links = outside_links
        self.temp_max_age = temp_max_age
        self._real_root: str | None = None

    def __repr__(self) -> str:
        ro = ", read_only=True" if not self.writable else ""
        return f"LocalStore({self.root!r}{ro})"

    def __getstate__(self) -> dict:
        # where the root really is depends on the machine (links): resolve it there
        return {**self.__dict__, "_real_root": None}

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LocalStore)
            and self.root == other.root
            and self.writable == other.writable
        )

    def __hash__(self) -> int:
        return hash((LocalStore, self.root, self.writable))

    # -- paths -------------------------------------------------------------
    def _path(self, key: str) -> str:
        validate_key(key)
        if key.endswith(".zarrdask-lock") and is_lock(key.rsplit("/", 1)[-1]):
            raise InvalidKeyError(
                f"invalid store key {key!r} for {self!r}: names '.<name>.zarrdask-lock' are lock files"
            )
        return os.path.join(self.root, *key.split("/"))

    def _dir(self, prefix: str) -> str:
        """Directory of a validated prefix (``""`` or a path, with or without ``/``)."""
        prefix = prefix.rstrip("/")
        return os.path.join(self.root, *prefix.split("/")) if prefix else self.root

    def _realroot(self) -> str:
        """The root with every link resolved (cached once the root exists)."""
        real = self._real_root
        if real is None:
            real = os.path.realpath(self.root)
            if os.path.isdir(self.root):
                self._real_root = real
        return real

    def _inside(self, real: str) -> bool:
        root = self._realroot()
        return real == root or real.startswith(root if root.endswith(os.sep) else root + os.sep)

    def _check_inside(self, subject: str, fd: int, path: str, action: str) -> None:
        """Raise if what ``fd`` is open on (``path``) lies outside the root."""
        real = real_path(fd, path)
        if not self._inside(real):
            hint = "; LocalStore(..., outside_links='read') follows such links for reads" if action == "read" else ""
            raise InvalidKeyError(
                f"{self!r}: cannot {action} {subject}: it resolves to {real!r}, outside the "
                f"store root {self._realroot()!r} (through a symbolic link){hint}"
            )

    def _open_dir(self, subject: str, directory: str, action: str, create: bool = False) -> int | None:
        """A descriptor of ``directory``, checked to lie inside the root;
        ``None`` if it is missing (or not a directory) and not to be created.

        Windows has no directory descriptors: the directory is checked by
        path and ``-1`` returned, and callers use paths.
        """
        for _ in range(4):
            try:
                if not _DIR_FD:  # pragma: no cover - Windows
                    if not os.path.isdir(directory):
                        raise FileNotFoundError(directory)
                    real = os.path.realpath(directory)
                    if not self._inside(real):
                        raise InvalidKeyError(
                            f"{self!r}: cannot {action} {subject}: its directory resolves to "
                            f"{real!r}, outside the store root {self._realroot()!r}"
                        )
                    return -1
                fd = os.open(directory, DIR_FLAGS)
            except FileNotFoundError:
                if not create:
                    return None
                self._check_ancestor(subject, directory)
                try:
                    os.makedirs(directory, exist_ok=True)
                except OSError as e:
                    raise StoreError(f"{self!r}: cannot {action} {subject}: {e}") from e
                continue
            except NotADirectoryError as e:
                if not create:
                    return None
                raise StoreError(f"{self!r}: cannot {action} {subject}: a parent is not a directory: {e}") from e
            except OSError as e:
                raise StoreError(f"{self!r}: cannot {action} {subject}: {e}") from e
            try:
                self._check_inside(subject, fd, directory, action)
            except BaseException:
                os.close(fd)
                raise
            return fd
        raise StoreError(f"{self!r}: cannot create the directory for {subject}")

    def _check_ancestor(self, subject: str, directory: str) -> None:
        """Before creating ``directory``: its deepest existing ancestor must lie
        inside the root (else the directories would be created elsewhere)."""
        root = self.root
        current = directory
        while not os.path.lexists(current):
            if len(current) <= len(root):
                return  # not even the root exists yet
            current = os.path.dirname(current)
        if len(current) > len(root):
            real = os.path.realpath(current)
            if not self._inside(real):
                raise InvalidKeyError(
                    f"{self!r}: cannot write {subject}: {current!r} resolves to {real!r}, "
                    f"outside the store root {self._realroot()!r} (through a symbolic link)"
                )

    # -- reads -------------------------------------------------------------
    def _open_file(self, key: str, path: str) -> tuple[int | None, os.stat_result | None]:
        """``(fd, stat)`` of the regular file of ``key``, checked against the
        link policy; ``(None, None)`` if the key is missing."""
        try:
            fd = os.open(path, _READ_FLAGS)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None, None
        except OSError as e:
            if os.path.isdir(path):  # Windows reports a directory this way
                return None, None
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        try:
            st = os.fstat(fd)
        except OSError as e:
            os.close(fd)
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None, None
        if self.outside_links == "refuse":
            try:
                self._check_inside(f"key {key!r}", fd, path, "read")
            except BaseException:
                os.close(fd)
                raise
        return fd, st

    def _read(self, key: str) -> bytes | None:
        fd, st = self._open_file(key, self._path(key))
        if fd is None:
            return None
        try:
            return pread_all(fd, st.st_size, 0)  # type: ignore[union-attr]
        except OSError as e:
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        finally:
            os.close(fd)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        # on the pool (the OS reads files in parallel); small metadata documents in this thread
        return (serial_map if all(map(is_metadata_key, keys)) else thread_map)(self._read, keys)

    def _read_buffer(self, key: str) -> memoryview | None:
        fd, st = self._open_file(key, self._path(key))
        if fd is None:
            return None
        try:
            size = st.st_size  # type: ignore[union-attr]
            buf = read_buffers.take(size)
            got = pread_into(fd, buf, 0)
            # as _read: the size fstat gave (fewer bytes if the file shrank meanwhile)
            return (buf if got == size else buf[:got]).toreadonly()
        except OSError as e:
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        finally:
            os.close(fd)

    def get_buffers(self, keys: Sequence[str]) -> list[memoryview | None]:
        """As :meth:`get_many`, read into 64-byte aligned buffers from
        :data:`zarrdask._memory.read_buffers` (the kernel copies into them
        several times faster than into ``malloc``'d memory), returned as
        read-only memoryviews; a caller done with them may give them back
        there (the chunk engine does). A subclass that overrides
        :meth:`get_many` (to record or change reads) is served by it."""
        if not self._reads_own_files():
            return self.get_many(keys)
        return thread_map(self._read_buffer, keys)

    def read_into(self, key: str, view: Any) -> bool | None:
        """Read ``key``'s value straight into the numpy array ``view`` (its bytes
        are ``view``'s elements in C order: an uncompressed chunk, ``view`` its
        place in the output), so the kernel's copy is the only one. ``False``:
        the key is missing; ``None``: not done (the value's size is not
        ``view.nbytes``, ``view``'s layout does not allow it, or a subclass
        reads through its own :meth:`get_many`) and the caller reads the value
        as usual — which also reports a wrong size."""
        if not self._reads_own_files():
            return None
        fd, st = self._open_file(key, self._path(key))
        if fd is None:
            return False
        try:
            if st.st_size != view.nbytes:  # type: ignore[union-attr]
                return None
            return True if preadv_rows(fd, view) else None
        except OSError as e:
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        finally:
            os.close(fd)

    def _pread_ranges(self, key: str, fd: int, size: int, ranges: Sequence[ByteRequest]) -> list[bytes]:
        try:
            out = []
            for request in ranges:
                start, stop = resolve(request, size)
                out.append(pread_all(fd, stop - start, start) if stop > start else b"")
            return out
        except OSError as e:
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        fd, st = self._open_file(key, self._path(key))
        if fd is None:
            return None
        try:
            return self._pread_ranges(key, fd, st.st_size, ranges)  # type: ignore[union-attr]
        finally:
            os.close(fd)

    def reader(self, key: str) -> ValueReader:
        """An exact reader: one file descriptor, opened by the first read."""
        reader = _FileReader(self, key)
        reader.path = self._path(key)
        return reader

    def _stat_size(self, key: str) -> int | None:
        path = self._path(key)
        try:
            fd = os.open(path, _STAT_FLAGS)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as e:
            if os.path.isdir(path):
                return None
            raise StoreError(f"{self!r}: cannot stat key {key!r}: {e}") from e
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            if self.outside_links == "refuse":
                self._check_inside(f"key {key!r}", fd, path, "read")
            return st.st_size
        finally:
            os.close(fd)

    def exists(self, key: str) -> bool:
        return self._stat_size(key) is not None

    def getsize(self, key: str) -> int | None:
        return self._stat_size(key)

    # -- writes ------------------------------------------------------------
    def set(self, key: str, value: bytes) -> None:
        path = self._path(key)
        self._check_writable(key)
        self._write(key, path, as_buffer(value))

    def _write(self, key: str, path: str, value: memoryview) -> None:
        directory, name = os.path.split(path)
        for _ in range(4):
            dfd = self._open_dir(f"key {key!r}", directory, "write", create=True)
            try:
                if self._write_in(key, dfd, directory, name, value):
                    break
            finally:
                if dfd != -1:
                    _close(dfd)
        else:
            raise StoreError(f"{self!r}: cannot write key {key!r}: its directory keeps disappearing")
        if self.temp_max_age is not None:
            max_age = self.temp_max_age
            _janitor.once(directory, lambda: stale_in_directory(directory, max_age))

    def _write_in(self, key: str, dfd: int | None, directory: str, name: str, value: memoryview) -> bool:
        """Write ``value`` to ``name`` in the open directory; False if the
        directory vanished (a concurrent delete pruned it) before the
        temporary file was created."""
        at = dfd if dfd != -1 else None
        tmp = f".{name}.{uuid.uuid4().hex}.tmp"
        tmp_where = tmp if at is not None else os.path.join(directory, tmp)
        where = name if at is not None else os.path.join(directory, name)
        try:
            fd = os.open(tmp_where, _TEMP_FLAGS, 0o666, dir_fd=at)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise StoreError(f"{self!r}: cannot write key {key!r}: {e}") from e
        try:
            lock_temp(fd)  # a live writer's file: never cleaned up as stale
            view = value
            while view.nbytes:
                view = view[os.write(fd, view):]
            if self.fsync:
                os.fsync(fd)
            if os.name != "nt":  # rename while still open and locked
                os.replace(tmp_where, where, src_dir_fd=at, dst_dir_fd=at)
            else:  # pragma: no cover - Windows cannot rename an open file
                os.close(fd)
                fd = -1
                os.replace(tmp_where, where)
        except BaseException as e:
            try:
                os.unlink(tmp_where, dir_fd=at)
            except OSError:
                pass
            if isinstance(e, OSError) and not isinstance(e, StoreError):
                raise StoreError(f"{self!r}: cannot write key {key!r}: {e}") from e
            raise
        finally:
            if fd != -1:
                os.close(fd)
        return True

    def set_many(self, items: Mapping[str, bytes]) -> None:
        jobs = []
        for key, value in items.items():
            path = self._path(key)
            self._check_writable(key)
            jobs.append((key, path, as_buffer(value)))
        thread_map(lambda job: self._write(*job), jobs)

    def _prune(self, directory: str, root: str | None = None) -> None:
        """Remove ``directory`` and its parents while empty, stopping at the
        root (``root``: the root as ``directory`` spells it)."""
        root = root or self.root
        while directory != root and directory.startswith(root):
            try:
                os.rmdir(directory)
            except OSError:
                return
            directory = os.path.dirname(directory)

    def delete(self, key: str) -> None:
        path = self._path(key)
        self._check_writable(key)
        directory, name = os.path.split(path)
        dfd = self._open_dir(f"key {key!r}", directory, "delete")
        if dfd is None:
            return
        at = dfd if dfd != -1 else None
        try:
            os.unlink(name if at is not None else path, dir_fd=at)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return
        except PermissionError as e:
            if os.path.isdir(path):
                return
            raise StoreError(f"{self!r}: cannot delete key {key!r}: {e}") from e
        except OSError as e:
            raise StoreError(f"{self!r}: cannot delete key {key!r}: {e}") from e
        finally:
            if dfd != -1:
                os.close(dfd)
        self._prune(directory)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            self._path(key)
            self._check_writable(key)
        for key in keys:
            self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with ``prefix``.

        ``""`` empties the store (the root directory itself is kept); a prefix
        ending in ``/`` removes that directory tree; any other prefix removes
        the keys that start with it as a string (``"a/b"`` also removes
        ``"a/bc"``). Links are removed, never what they name; a prefix whose
        directory resolves outside the root raises
        :class:`~zarrdask.errors.InvalidKeyError`.
        """
        validate_prefix(prefix)
        self._check_writable(prefix)
        if prefix and not prefix.endswith("/"):
            super().delete_prefix(prefix)
            return
        directory = self._dir(prefix)
        try:
            if prefix == "":
                self._empty_root()
                return
            parent, name = os.path.split(directory)
            pfd = self._open_dir(f"prefix {prefix!r}", parent, "delete")
            if pfd is None:
                return
            at = pfd if pfd != -1 else None
            where = name if at is not None else directory
            try:
                st = os.stat(where, dir_fd=at, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    os.unlink(where, dir_fd=at)
                elif stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(where, dir_fd=at)
                else:
                    return
            finally:
                if pfd != -1:
                    os.close(pfd)
            self._prune(parent)
        except FileNotFoundError:
            return
        except OSError as e:
            raise StoreError(f"{self!r}: cannot delete prefix {prefix!r}: {e}") from e

    def _empty_root(self) -> None:
        try:
            with os.scandir(self.root) as it:
                entries = list(it)
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.remove(entry.path)

    # -- temporary files ---------------------------------------------------
    def clean_temporary_files(self, max_age: float | None = None, prefix: str = "") -> list[str]:
        """Remove temporary files left behind by killed writers (and lock
        files left by killed lock holders).

        Only files named like this store's temporary files
        (``.<name>.<32 hex digits>.tmp``) or lock files
        (``.<name>.zarrdask-lock``), older than ``max_age`` and not locked by a
        live process are removed; other files are never touched. Walks the
        tree under ``prefix`` (without following links).

        Parameters
        ----------
        max_age : float, optional
            Minimum age in seconds (of the last modification); default the
            store's ``temp_max_age``, or one hour if that is None.
        prefix : str, default ""
            A directory prefix (``""``: the whole store).

        Returns
        -------
        list of str
            The removed files, relative to the root, ``/``-separated.
        """
        validate_prefix(prefix)
        self._check_writable(prefix)
        if max_age is None:
            max_age = self.temp_max_age if self.temp_max_age is not None else 3600.0
        now = time.time()
        removed = []
        for dirpath, names in self._walk_dirs(self._dir(prefix)):
            for name in names:
                if remove_stale(dirpath, name, max_age, now):
                    rel = os.path.relpath(os.path.join(dirpath, name), self.root)
                    removed.append(rel.replace(os.sep, "/"))
        return removed

    # -- listing -----------------------------------------------------------
    def _walk_dirs(self, directory: str) -> Iterator[tuple[str, list[str]]]:
        """``(dirpath, file names)`` of every directory under ``directory``,
        not following links (linked files are in the names)."""
        stack = [directory]
        while stack:
            dirpath = stack.pop()
            try:
                with os.scandir(dirpath) as it:
                    entries = list(it)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as e:
                raise StoreError(f"{self!r}: cannot list {dirpath!r}: {e}") from e
            names = []
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif not entry.is_symlink() or self._link_listed(entry.path):
                    names.append(entry.name)
            yield dirpath, names

    def _link_listed(self, path: str) -> bool:
        """Whether a link found while listing is a key: it names a file, and
        inside the root unless outside links are followed for reads."""
        if not os.path.isfile(path):
            return False
        return self.outside_links == "read" or self._inside(os.path.realpath(path))

    def _walk(self, directory: str) -> Iterator[str]:
        """Keys of every file under ``directory`` (a path inside the root)."""
        cut = len(self.root) + 1
        sep = os.sep
        for dirpath, names in self._walk_dirs(directory):
            base = dirpath[cut:]
            if sep != "/":
                base = base.replace(sep, "/")  # pragma: no cover - Windows
            for name in names:
                if is_temp(name) or is_lock(name):
                    continue
                yield f"{base}/{name}" if base else name

    def list(self) -> Iterator[str]:
        return self._walk(self.root)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        if prefix == "" or prefix.endswith("/"):
            return self._walk(self._dir(prefix))
        # "a/b" matches "a/b", "a/bc", "a/b/..": walk "a" and filter
        parent = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        return (k for k in self._walk(self._dir(parent)) if k.startswith(prefix))

    def list_dir(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        directory = self._dir(prefix)
        try:
            with os.scandir(directory) as it:
                return sorted(
                    entry.name
                    for entry in it
                    if not is_temp(entry.name)
                    and not is_lock(entry.name)
                    and (not entry.is_symlink() or self._child_link_listed(entry.path))
                )
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise StoreError(f"{self!r}: cannot list {prefix!r}: {e}") from e

    def _child_link_listed(self, path: str) -> bool:
        return self.outside_links == "read" or self._inside(os.path.realpath(path))

    @property  # where the data lives: locks, tokens
    def location(self) -> Hashable:
        return ("local", self._realroot())

    def _file_locks(self) -> FileLocks | None:
        if not HAVE_FILE_LOCKS:  # pragma: no cover - Windows: in-process locks only
            return None
        return FileLocks(self._lock_path, repr(self), self._lock_released)

    def _lock_path(self, key: str) -> str:
        """The lock file of ``key``: ``.<name>.zarrdask-lock`` in the key's
        directory (made if missing; checked to lie inside the root)."""
        directory, name = os.path.split(self._path(key))
        dfd = self._open_dir(f"key {key!r}", directory, "lock", create=True)
        if dfd == -1:  # pragma: no cover - Windows has no file locks
            return os.path.join(directory, lock_name(name))
        try:
            return os.path.join(real_path(dfd, directory), lock_name(name))  # type: ignore[arg-type]
        finally:
            os.close(dfd)  # type: ignore[arg-type]

    def _lock_released(self, path: str) -> None:
        """A directory that only held the lock file goes with it, as after a delete."""
        self._prune(os.path.dirname(path), self._realroot())
