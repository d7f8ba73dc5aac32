"""A store inside a single zip file (zarr-python's ``ZipStore`` layout).

Each key is one archive member whose name is the key itself (zarr-specs v3
core, "Stores"; v2 spec "Storage"), so archives written by zarr-python's
``zarr.storage.ZipStore`` are read as is and archives written here open there.
Members are written with ``ZIP_STORED`` by default, which lets ``get_ranges``
read byte ranges (a shard's index and inner chunks, zarr-specs
``v3-codecs-sharding-indexed``) straight from the archive file without
reading the whole member.

Overwriting and deleting
------------------------
The zip format (and :mod:`zipfile`) cannot replace or remove a member in
place. This store therefore

* writes a new key as a new member right away;
* writes an overwritten key as an *additional* member with the same name; the
  newest member of a name is the one read (as :mod:`zipfile` and zarr-python
  do), so reads always see the latest value and pending data lives on disk,
  not in memory;
* records a deleted key in a "deleted" set that reads and listings honour.

``flush()`` (also run by ``close()`` and when a writable store is pickled)
makes the file on disk a complete archive. If keys were overwritten or
deleted since the last flush it rewrites the archive into a temporary file in
the same directory — the newest member of each live name, streamed, with its
compression kept — and moves it over the original with ``os.replace``. A
rewrite that fails (disk full, ...) leaves the file as of the previous flush
and the store unchanged, so ``close()`` can be retried. Without overwrites or
deletions a flush only writes the central directory. Until a flush, another
process opening the file sees the archive as of the previous flush.

Archives from elsewhere
-----------------------
Member names that are not valid store keys (``..`` or ``.`` segments,
absolute names, backslashes, empty segments, drive letters, NUL: a hostile
or foreign archive) are not keys: listings skip them, a warning record on the
``"zarrdask.storage"`` logger names them, and asking for one by name is an
:class:`~zarrdask.errors.InvalidKeyError` as for any invalid key. A name that
occurs more than once is listed once and reads as its last member (as
:mod:`zipfile` and zarr-python read it); the record names it too.

Consistency and locks
---------------------
A reader (:meth:`ZipStore.reader`) is exact. Writes never change a member's
bytes: an overwrite appends a new member, and a rewrite makes a new file that
replaces the old one by rename. So the reader keeps a duplicate of the
archive's file descriptor and the member's data offset, and reads the version
it first found even after the key is overwritten or the archive rewritten. A
compressed member is read whole by the first read and held. In-process locks
(:meth:`~zarrdask.storage.abc.Store.locked`) are keyed by the archive's path;
there are no cross-process locks (a zip file has one writer at a time).
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import threading
import time
import uuid
import zipfile
from collections import Counter
from typing import Hashable, Iterable, Iterator, Mapping, Sequence

from ..errors import StoreError
from .abc import Store, ensure_bytes
from .byte_range import ByteRequest, resolve, slice_ranges
from .capabilities import ExactReaders
from .files import pread_all
from .keys import key_problem, validate_key, validate_prefix
from .readers import ValueReader

__all__ = ["ZipStore"]

_MODES = ("r", "w", "a", "x")
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_LOCAL_MAGIC = b"PK\x03\x04"

logger = logging.getLogger("zarrdask.storage")


class _MemberReader(ValueReader):
    """Reads the member the first read found (exact): an uncompressed one
    through a duplicate of the archive's descriptor, a compressed one whole."""

    exact = True
    _fd: int | None = None

    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        store: ZipStore = self.store  # type: ignore[assignment]
        with store._lock:
            info = store._info(self.key)
            if info is None or info.is_dir():
                return None
            self._member = store._identity(info)
            if not store._stored(info) or os.name == "nt":  # Windows cannot replace an open file
                self._value = store._read(self.key)
                return slice_ranges(self._value, ranges)
            self._base = store._data_offset(info)
            self._size = info.file_size
            fp = store._zf.fp  # type: ignore[union-attr]
            fp.flush()  # members written by this store reach the file first
            self._fd = os.dup(fp.fileno())
        return self._read_later(ranges)

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        if self._fd is None:
            return slice_ranges(self._value, ranges)
        out = []
        try:
            for request in ranges:
                start, stop = resolve(request, self._size)
                out.append(pread_all(self._fd, stop - start, self._base + start) if stop > start else b"")
        except OSError as e:
            raise StoreError(f"ZipStore {self.store.path!r}: cannot read key {self.key!r}: {e}") from e  # type: ignore[attr-defined]
        return out

    def _same(self) -> bool:
        store: ZipStore = self.store  # type: ignore[assignment]
        with store._lock:
            info = store._info(self.key)
            return info is not None and store._identity(info) == self._member

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class ZipStore(ExactReaders, Store):
    """A store backed by one zip file.

    Parameters
    ----------
    path : str or os.PathLike
        The zip file.
    mode : {"r", "w", "a", "x"}, default "r"
        ``"r"`` reads an existing archive (the store is read-only); ``"w"``
        creates a new archive, truncating an existing file; ``"a"`` opens an
        existing archive for reading and writing, creating it if missing;
        ``"x"`` creates a new archive and fails if the file exists.
    compression : int, default zipfile.ZIP_STORED
        Compression of new members (a :mod:`zipfile` constant). Only
        ``ZIP_STORED`` members are read partially.
    compresslevel : int, optional
        Passed to :mod:`zipfile` with ``compression``.

    Notes
    -----
    Every operation holds one lock, so the store can be shared between
    threads. See the module documentation for how overwrites and deletions
    are handled. Call :meth:`close` (or use the store as a context manager)
    when done writing.

    A ZipStore pickles by path: a writable store is flushed first, and the
    unpickled copy is a read-only store that reopens the file lazily (a zip
    file cannot be written by several processes at once).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "data.zip")
    >>> with ZipStore(path, mode="w") as store:
    ...     store.set("a", b"1")
    ...     store.set("a", b"2")
    >>> ZipStore(path).get("a")
    b'2'
    """

    supports_partial_reads = True
    listable = True

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        mode: str = "r",
        compression: int = zipfile.ZIP_STORED,
        compresslevel: int | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"ZipStore mode must be one of {_MODES}, got {mode!r}")
        self.path = os.path.abspath(os.fspath(path))
        self.mode = mode
        self.compression = compression
        self.compresslevel = compresslevel
        self.writable = mode != "r"
        self._lock = threading.RLock()
        self._zf: zipfile.ZipFile | None = None
        self._closed = False
        self._deleted: set[str] = set()
        self._needs_rewrite = False
        self._offsets: dict[tuple[str, int], int] = {}
        self._rewrites = 0
        self._invalid: frozenset[str] = frozenset()
        self._reported: set[str] = set()
        self._open(mode)

    # -- file handling -----------------------------------------------------
    def _open(self, mode: str) -> zipfile.ZipFile:
        try:
            zf = zipfile.ZipFile(
                self.path,
                mode=mode,
                compression=self.compression,
                compresslevel=self.compresslevel,
                allowZip64=True,
            )
        except FileNotFoundError as e:
            raise StoreError(f"ZipStore: no zip file at {self.path!r} (mode {mode!r})") from e
        except FileExistsError as e:
            raise StoreError(
                f"ZipStore: {self.path!r} already exists (mode 'x' creates a new file)"
            ) from e
        except zipfile.BadZipFile as e:
            raise StoreError(f"ZipStore: {self.path!r} is not a zip file: {e}") from e
        self._zf = zf
        self._offsets.clear()
        self._screen(zf)
        return zf

    def _screen(self, zf: zipfile.ZipFile) -> None:
        """Find the member names that are not valid keys, and report new ones."""
        names = [info.filename for info in zf.infolist()]
        invalid = {n: p for n in names if not n.endswith("/") and (p := key_problem(n)) is not None}
        self._invalid = frozenset(invalid)
        duplicates = [n for n, count in Counter(names).items() if count > 1 and n not in invalid]
        problems = [f"{n!r} ({p})" for n, p in invalid.items() if n not in self._reported]
        problems += [f"{n!r} (occurs more than once; the last member is read)" for n in duplicates if n not in self._reported]
        if problems:
            self._reported.update(invalid)
            self._reported.update(duplicates)
            shown = ", ".join(problems[:20]) + (f", ... ({len(problems)} in all)" if len(problems) > 20 else "")
            logger.warning("ZipStore %r: member names skipped or shadowed: %s", self.path, shown)

    @staticmethod
    def _stored(info: zipfile.ZipInfo) -> bool:
        """Whether a member's bytes are in the file as they are (no compression, no encryption)."""
        return info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1

    def _identity(self, info: zipfile.ZipInfo) -> tuple:
        """What tells one member from another, across flushes (not across rewrites)."""
        return (info.header_offset, info.CRC, info.file_size, self._rewrites)

    def _file(self) -> zipfile.ZipFile:
        """The open archive (opened lazily after unpickling); call with the lock held."""
        if self._zf is None:
            if self._closed:
                raise StoreError(f"{self!r} is closed")
            self._open("a" if self.writable else "r")
        return self._zf  # type: ignore[return-value]

    def _info(self, key: str) -> zipfile.ZipInfo | None:
        """Newest live member named ``key``; call with the lock held."""
        if key in self._deleted:
            return None
        return self._file().NameToInfo.get(key)

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        """File offset of a member's data, from its local header; lock held."""
        cache_key = (info.filename, info.header_offset)
        offset = self._offsets.get(cache_key)
        if offset is None:
            fp = self._zf.fp  # type: ignore[union-attr]
            fp.seek(info.header_offset)
            header = fp.read(_LOCAL_HEADER.size)
            if len(header) != _LOCAL_HEADER.size:
                raise StoreError(f"ZipStore {self.path!r}: truncated local header for {info.filename!r}")
            magic, name_len, extra_len = _LOCAL_HEADER.unpack(header)
            if magic != _LOCAL_MAGIC:
                raise StoreError(f"ZipStore {self.path!r}: bad local header for {info.filename!r}")
            offset = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
            self._offsets[cache_key] = offset
        return offset

    def flush(self) -> None:
        """Make the file on disk a complete archive holding the current contents.

        Rewrites the archive if keys were overwritten or deleted since the last
        flush, otherwise only writes the central directory. Does nothing for a
        read-only store.
        """
        with self._lock:
            if not self.writable or self._zf is None:
                return
            self._finish()
            self._open("a")

    def _finish(self) -> None:
        """Finalise the archive and close it; lock held, store writable and open."""
        zf = self._zf
        assert zf is not None
        if not self._needs_rewrite:
            zf.close()
            self._zf = None
            return
        directory, name = os.path.split(self.path)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        try:
            with zipfile.ZipFile(tmp, "w", allowZip64=True) as out:
                for member, info in list(zf.NameToInfo.items()):
                    if member in self._deleted:
                        continue
                    new = zipfile.ZipInfo(member, date_time=info.date_time)
                    new.compress_type = info.compress_type
                    new.external_attr = info.external_attr
                    new.file_size = info.file_size
                    if info.is_dir():
                        out.writestr(new, b"")
                        continue
                    with zf.open(info) as src, out.open(new, "w") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
            try:
                # POSIX: replace first, so that a failure leaves the archive and
                # this store exactly as they were; closing afterwards writes the
                # old central directory to the now unlinked file.
                os.replace(tmp, self.path)
            except PermissionError:
                if os.name != "nt":
                    raise
                zf.close()  # pragma: no cover - Windows cannot replace an open file
                self._zf = None  # pragma: no cover
                os.replace(tmp, self.path)  # pragma: no cover
            if self._zf is not None:
                zf.close()
                self._zf = None
        except BaseException as e:
            try:
                os.remove(tmp)
            except OSError:
                pass
            if isinstance(e, OSError) and not isinstance(e, StoreError):
                raise StoreError(f"ZipStore: cannot rewrite {self.path!r}: {e}") from e
            raise
        self._deleted.clear()
        self._needs_rewrite = False
        self._rewrites += 1

    def close(self) -> None:
        """Flush pending changes and close the file. Closing twice is harmless."""
        with self._lock:
            if self._zf is not None:
                if self.writable:
                    self._finish()
                else:
                    self._zf.close()
                    self._zf = None
            self._closed = True

    def __del__(self) -> None:  # finalise an archive the caller forgot to close
        try:
            if getattr(self, "_zf", None) is not None:
                self.close()
        except Exception:
            pass

    def __getstate__(self) -> dict:
        self.flush()
        return {"path": self.path, "compression": self.compression, "compresslevel": self.compresslevel}

    def __setstate__(self, state: dict) -> None:
        self.path = state["path"]
        self.mode = "r"
        self.compression = state["compression"]
        self.compresslevel = state["compresslevel"]
        self.writable = False
        self._lock = threading.RLock()
        self._zf = None
        self._closed = False
        self._deleted = set()
        self._needs_rewrite = False
        self._offsets = {}
        self._rewrites = 0
        self._invalid = frozenset()
        self._reported = set()

    def __repr__(self) -> str:
        return f"ZipStore({self.path!r}, mode={self.mode!r})"

    # -- reads -------------------------------------------------------------
    def _read(self, key: str) -> bytes | None:
        info = self._info(key)
        if info is None or info.is_dir():
            return None
        try:
            return self._file().read(info)
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            raise StoreError(f"ZipStore {self.path!r}: cannot read key {key!r}: {e}") from e

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        for key in keys:
            validate_key(key)
        with self._lock:
            return [self._read(key) for key in keys]

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        validate_key(key)
        with self._lock:
            info = self._info(key)
            if info is None or info.is_dir():
                return None
            size = info.file_size
            if not self._stored(info):
                return slice_ranges(self._read(key) or b"", ranges)
            try:
                base = self._data_offset(info)
                fp = self._zf.fp  # type: ignore[union-attr]
                out = []
                for request in ranges:
                    start, stop = resolve(request, size)
                    if stop <= start:
                        out.append(b"")
                        continue
                    fp.seek(base + start)
                    chunk = fp.read(stop - start)
                    if len(chunk) != stop - start:
                        raise StoreError(
                            f"ZipStore {self.path!r}: member {key!r} is truncated "
                            f"(wanted bytes {start}-{stop}, got {len(chunk)})"
                        )
                    out.append(chunk)
                return out
            except OSError as e:
                if isinstance(e, StoreError):
                    raise
                raise StoreError(f"ZipStore {self.path!r}: cannot read key {key!r}: {e}") from e

    def reader(self, key: str) -> ValueReader:
        """An exact reader of the member the first read finds (see the module documentation)."""
        return _MemberReader(self, validate_key(key))

    @property
    def location(self) -> Hashable:
        return ("zip", os.path.realpath(self.path))

    def exists(self, key: str) -> bool:
        return self.getsize(key) is not None

    def getsize(self, key: str) -> int | None:
        validate_key(key)
        with self._lock:
            info = self._info(key)
            return None if info is None or info.is_dir() else info.file_size

    # -- writes ------------------------------------------------------------
    def _write(self, key: str, value: bytes) -> None:
        """Write one member; lock held, key validated, store writable."""
        zf = self._file()
        if key in zf.NameToInfo:
            # Overwrite: the new member shadows the old one (zipfile reads the
            # newest of a name); drop the old one from the name index first so
            # zipfile does not warn about the duplicate. flush() rewrites.
            del zf.NameToInfo[key]
            self._needs_rewrite = True
        self._deleted.discard(key)
        info = zipfile.ZipInfo(key, date_time=time.localtime(time.time())[:6])
        info.external_attr = 0o644 << 16
        try:
            zf.writestr(info, value, compress_type=self.compression, compresslevel=self.compresslevel)
        except (OSError, ValueError, zipfile.LargeZipFile) as e:
            raise StoreError(f"ZipStore {self.path!r}: cannot write key {key!r}: {e}") from e

    def set(self, key: str, value: bytes) -> None:
        validate_key(key)
        self._check_writable(key)
        value = ensure_bytes(value)
        with self._lock:
            self._write(key, value)

    def set_many(self, items: Mapping[str, bytes]) -> None:
        for key in items:
            validate_key(key)
            self._check_writable(key)
        values = {key: ensure_bytes(value) for key, value in items.items()}
        with self._lock:
            for key, value in values.items():
                self._write(key, value)

    def _delete(self, key: str) -> None:
        if key not in self._deleted and key in self._file().NameToInfo:
            self._deleted.add(key)
            self._needs_rewrite = True

    def delete(self, key: str) -> None:
        validate_key(key)
        self._check_writable(key)
        with self._lock:
            self._delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            validate_key(key)
            self._check_writable(key)
        with self._lock:
            for key in keys:
                self._delete(key)

    def delete_prefix(self, prefix: str) -> None:
        validate_prefix(prefix)
        self._check_writable(prefix)
        with self._lock:
            for key in self._keys():
                if key.startswith(prefix):
                    self._delete(key)

    # -- listing -----------------------------------------------------------
    def _keys(self) -> list[str]:
        deleted = self._deleted
        names = self._file().NameToInfo
        invalid = self._invalid
        return [
            name
            for name in names
            if name not in deleted and not name.endswith("/") and name not in invalid
        ]

    def list(self) -> Iterator[str]:
        with self._lock:
            return iter(self._keys())

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        with self._lock:
            return iter([k for k in self._keys() if k.startswith(prefix)])

    def list_dir(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        return super().list_dir(prefix)
