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
never appear in listings. Byte ranges are served with positional reads
(``os.pread``) without reading the whole file.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import uuid
from typing import Iterable, Iterator, Mapping, Sequence

from .._pool import thread_map
from ..errors import StoreError
from .abc import Store, as_buffer
from .byte_range import ByteRequest, resolve
from .keys import validate_key, validate_prefix

__all__ = ["LocalStore"]

# ".<name>.<32 hex digits>.tmp": a write in progress (or one that crashed).
_TEMP = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
_HAVE_PREAD = hasattr(os, "pread")


def _is_temp(name: str) -> bool:
    return name.endswith(".tmp") and _TEMP.match(name) is not None


def _pread(fd: int, size: int, offset: int) -> bytes:
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
    return parts[0] if len(parts) == 1 else b"".join(parts)


class LocalStore(Store):
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

    def __init__(
        self, root: str | os.PathLike, *, read_only: bool = False, fsync: bool = False
    ) -> None:
        root = os.fspath(root)
        if isinstance(root, bytes):
            raise TypeError("LocalStore root must be a str path, not bytes")
        if root.startswith("file://"):
            root = root[len("file://"):]
        self.root = os.path.abspath(root)
        self.writable = not read_only
        self.fsync = fsync

    def __repr__(self) -> str:
        ro = ", read_only=True" if not self.writable else ""
        return f"LocalStore({self.root!r}{ro})"

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
        return os.path.join(self.root, *key.split("/"))

    def _dir(self, prefix: str) -> str:
        """Directory of a validated prefix (``""`` or a path, with or without ``/``)."""
        prefix = prefix.rstrip("/")
        return os.path.join(self.root, *prefix.split("/")) if prefix else self.root

    # -- reads -------------------------------------------------------------
    def _read(self, key: str) -> bytes | None:
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except PermissionError as e:
            if os.path.isdir(path):  # Windows reports a directory this way
                return None
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        except OSError as e:
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        # files are read on the shared pool: the OS serves them in parallel
        return thread_map(self._read, keys)

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as e:
            if os.path.isdir(path):
                return None
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        try:
            size = os.fstat(fd).st_size
            out = []
            for request in ranges:
                start, stop = resolve(request, size)
                out.append(_pread(fd, stop - start, start) if stop > start else b"")
            return out
        except IsADirectoryError:
            return None
        except OSError as e:
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        finally:
            os.close(fd)

    def _stat_size(self, key: str) -> int | None:
        path = self._path(key)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise StoreError(f"{self!r}: cannot stat key {key!r}: {e}") from e
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def exists(self, key: str) -> bool:
        return self._stat_size(key) is not None

    def getsize(self, key: str) -> int | None:
        return self._stat_size(key)

    # -- writes ------------------------------------------------------------
    def set(self, key: str, value: bytes) -> None:
        path = self._path(key)
        self._check_writable(key)
        self._write(key, path, as_buffer(value))

    def _write(self, key: str, path: str, value: bytes) -> None:
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        for attempt in range(4):
            try:
                # the directory usually exists: try first, create it only if missing
                f = open(tmp, "xb")
            except FileNotFoundError:
                # missing directory (or a concurrent delete pruned it): create and retry
                if attempt == 3:
                    raise StoreError(f"{self!r}: cannot create the directory for key {key!r}")
                try:
                    os.makedirs(directory, exist_ok=True)
                except OSError as e:
                    raise StoreError(f"{self!r}: cannot write key {key!r}: {e}") from e
                continue
            except OSError as e:
                raise StoreError(f"{self!r}: cannot write key {key!r}: {e}") from e
            break
        try:
            with f:
                f.write(value)
                if self.fsync:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException as e:
            try:
                os.remove(tmp)
            except OSError:
                pass
            if isinstance(e, OSError) and not isinstance(e, StoreError):
                raise StoreError(f"{self!r}: cannot write key {key!r}: {e}") from e
            raise

    def set_many(self, items: Mapping[str, bytes]) -> None:
        jobs = []
        for key, value in items.items():
            path = self._path(key)
            self._check_writable(key)
            jobs.append((key, path, as_buffer(value)))
        thread_map(lambda job: self._write(*job), jobs)

    def _prune(self, directory: str) -> None:
        """Remove ``directory`` and its parents while empty, stopping at the root."""
        root = self.root
        while directory != root and directory.startswith(root):
            try:
                os.rmdir(directory)
            except OSError:
                return
            directory = os.path.dirname(directory)

    def delete(self, key: str) -> None:
        path = self._path(key)
        self._check_writable(key)
        try:
            os.remove(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return
        except PermissionError as e:
            if os.path.isdir(path):
                return
            raise StoreError(f"{self!r}: cannot delete key {key!r}: {e}") from e
        except OSError as e:
            raise StoreError(f"{self!r}: cannot delete key {key!r}: {e}") from e
        self._prune(os.path.dirname(path))

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            validate_key(key)
            self._check_writable(key)
        for key in keys:
            self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with ``prefix``.

        ``""`` empties the store (the root directory itself is kept); a prefix
        ending in ``/`` removes that directory tree; any other prefix removes
        the keys that start with it as a string (``"a/b"`` also removes
        ``"a/bc"``).
        """
        validate_prefix(prefix)
        self._check_writable(prefix)
        if prefix and not prefix.endswith("/"):
            super().delete_prefix(prefix)
            return
        directory = self._dir(prefix)
        try:
            if prefix == "":
                with os.scandir(directory) as it:
                    entries = list(it)
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.remove(entry.path)
            else:
                if not os.path.isdir(directory):
                    return
                shutil.rmtree(directory)
                self._prune(os.path.dirname(directory))
        except FileNotFoundError:
            return
        except OSError as e:
            raise StoreError(f"{self!r}: cannot delete prefix {prefix!r}: {e}") from e

    # -- listing -----------------------------------------------------------
    def _walk(self, directory: str) -> Iterator[str]:
        """Keys of every file under ``directory`` (a path inside the root)."""
        root = self.root
        cut = len(root) + 1
        sep = os.sep
        for dirpath, _dirnames, filenames in os.walk(directory):
            base = dirpath[cut:]
            if sep != "/":
                base = base.replace(sep, "/")  # pragma: no cover - Windows
            for name in filenames:
                if _is_temp(name):
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
        try:
            with os.scandir(self._dir(prefix)) as it:
                return sorted(entry.name for entry in it if not _is_temp(entry.name))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise StoreError(f"{self!r}: cannot list {prefix!r}: {e}") from e
