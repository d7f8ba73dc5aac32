"""The Store interface every storage backend implements.

A store is a flat key → bytes mapping (Zarr v2 spec "Storage"; zarr-specs v3
core "Stores"). Keys are ``/``-separated relative paths validated by
:mod:`zarrdask.storage.keys`. Reads are batched: a caller hands the store every
key (``get_many``) or every byte range of one key (``get_ranges``) it needs at
once, so remote stores can fetch them concurrently. A missing key reads as
``None``; it is never an exception.

Capability flags say what a store can do: ``writable``, ``listable`` and
``supports_partial_reads`` (ranges served without reading the whole value).

Reading one value in several steps
----------------------------------
A read that needs two steps — a shard's index, then the inner chunks the
index points at (zarr-specs ``v3-codecs-sharding-indexed``) — must not apply
offsets read from one version of a value to the bytes of another.
:meth:`Store.reader` returns a :class:`ValueReader` for one key: its first
``read()`` decides which version (or absence) of the value the reader
stands for, and

* an **exact** reader (``reader.exact``) serves every later ``read()`` from
  that version, or raises :class:`~zarrdask.errors.ValueChangedError` when it
  can no longer do so;
* a **verifying** reader (the default, :class:`VerifyingReader`) reads
  whatever is current; ``unchanged()`` afterwards re-reads the ranges of the
  first ``read()`` and says whether they are still the same, so the caller
  can read again.

Per store (the strongest mechanism each has; ``docs/guarantees.md`` has the
full page):

==================  ==========  ===============================================
store               exact       mechanism
==================  ==========  ===============================================
MemoryStore         yes         holds the value object the first read found
LocalStore          yes         one open file descriptor per reader: writes
                                replace files by rename, so the descriptor
                                keeps the old file; a file rewritten in place
                                by another tool is detected (size, mtime) and
                                raises ``ValueChangedError``
ZipStore            yes         a duplicate of the archive's descriptor and the
                                member's offset (overwrites append members; a
                                rewrite replaces the file by rename); a
                                compressed member is held whole
FsspecStore S3      yes         the ETag of the first ``GetObject`` response;
                                later ranges are ``GetObject(IfMatch=...)``
FsspecStore HTTP    if strong   the ETag of the first response; later ranges
                    ETags       are sent with ``If-Match`` and every
                                response's ETag is checked; without a strong
                                ETag the reader is verifying (``exact``
                                becomes False with the first read)
FsspecStore other   no          verifying
ZarrPythonStore     over its    verifying; over zarr-python's ``LocalStore``
                    LocalStore  (which writes by rename) the LocalStore reader
wrappers            as wrapped  ``ReadOnlyStore``, ``PrefixStore`` and
                                ``CountingStore`` return the wrapped store's
                                reader (counted by ``CountingStore``)
==================  ==========  ===============================================

Locks for read-modify-write
---------------------------
:meth:`Store.locked` holds exclusive locks on keys (sorted, so callers
cannot deadlock each other) for a ``with`` block: in-process for every store,
keyed by where the data lives so two store objects over the same data share
them, and across processes for ``LocalStore`` (:mod:`zarrdask.storage.locks`).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ContextManager, Hashable, Iterable, Iterator, Mapping, Sequence

from .._pool import Pipeline, io_map, io_unordered
from ..errors import ReadOnlyError, StoreError, ValueChangedError
from .byte_range import ByteRequest, OffsetRequest, RangeRequest, slice_ranges
from .keys import validate_key
from .locks import hold

if TYPE_CHECKING:
    from .locks import FileLocks

Buffer = bytes  # values are returned as bytes (or any read-only buffer)


def ensure_bytes(value: object) -> bytes:
    """``value`` as immutable ``bytes``; any C-contiguous buffer is accepted.

    Stores call this in ``set`` so that a caller mutating its ``bytearray`` or
    numpy array afterwards cannot change what was stored.
    """
    if type(value) is bytes:
        return value
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise TypeError(
            f"store values must be bytes-like, got {type(value).__name__}"
        ) from None


def as_buffer(value: object) -> memoryview:
    """``value`` as a flat byte view, without copying; for stores that write the
    bytes out before ``set`` returns (a copy would only cost time)."""
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(f"store values must be bytes-like, got {type(value).__name__}") from None
    if not view.c_contiguous:
        return memoryview(view.tobytes())
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


class ValueReader:
    """Reads byte ranges of one value in several steps, from one version of it.

    Returned by :meth:`Store.reader`. The first :meth:`read` decides which
    version of the value (or its absence) the reader stands for. Use it as a
    context manager, or call :meth:`close`.

    Attributes
    ----------
    key : str
        The key read.
    exact : bool
        True: every ``read()`` is served from the version of the value the
        first ``read()`` saw (or raises
        :class:`~zarrdask.errors.ValueChangedError`). False: later reads see
        whatever is current and :meth:`unchanged` tells whether that is still
        the first version. A remote reader may settle this with its first
        read (an HTTP server without ETags); read it after reading.

    Notes
    -----
    Subclasses implement ``_read_first``, ``_read_later`` and ``_same`` (and
    ``_still_missing``, ``_release`` where the defaults do not fit); the
    bookkeeping of the first read, closing and thread safety live here.
    """

    exact: bool = False

    def __init__(self, store: "Store", key: str) -> None:
        self.store = store
        self.key = key
        self._started = False
        self._missing = False
        self._closed = False
        self._first_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key!r} of {self.store!r}>"

    def read(self, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        """The bytes of ``ranges`` (clipped as ``Store.get_ranges`` clips them),
        or ``None`` if the key is missing — decided by the first read: a reader
        that found the key missing keeps reading ``None``.

        Raises
        ------
        ValueChangedError
            An exact reader cannot serve the first version any more, or the
            value a verifying reader found has been deleted since.
        StoreError
            The reader is closed, or the store failed.
        """
        if self._closed:
            raise StoreError(f"{self!r}: the reader is closed")
        ranges = list(ranges)
        if not self._started:
            with self._first_lock:
                if not self._started:
                    found = self._read_first(ranges)
                    self._missing = found is None
                    self._started = True
                    return found
        if self._missing:
            return None
        return self._read_later(ranges)

    def unchanged(self) -> bool:
        """False if the value may have been replaced (or created, or deleted)
        since the first :meth:`read`; True before any read."""
        if not self._started:
            return True
        return self._still_missing() if self._missing else self._same()

    def close(self) -> None:
        """Release what the reader holds (a file descriptor, a value). Idempotent."""
        if not self._closed:
            self._closed = True
            self._release()

    def __enter__(self) -> "ValueReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a reader dropped unclosed releases its descriptor
        try:
            if not getattr(self, "_closed", True):
                self.close()
        except Exception:
            pass

    def _changed(self, what: str) -> ValueChangedError:
        """The error of a later read that cannot be served from the first version."""
        return ValueChangedError(
            f"{self.store!r}: key {self.key!r} changed while it was being read: {what}; "
            "read it again from the start",
            key=self.key,
        )

    # -- for subclasses ------------------------------------------------------
    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        raise NotImplementedError

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        raise NotImplementedError

    def _same(self) -> bool:
        raise NotImplementedError

    def _still_missing(self) -> bool:
        return not self.store.exists(self.key)

    def _release(self) -> None:
        pass


class VerifyingReader(ValueReader):
    """The default reader: ``read()`` is ``store.get_ranges``; ``unchanged()``
    reads the ranges of the first ``read()`` again and compares the bytes.

    A later ``read()`` that finds the key deleted raises
    :class:`~zarrdask.errors.ValueChangedError` (there is nothing to serve).
    """

    exact = False

    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        found = self.store.get_ranges(self.key, ranges)
        self._first = (ranges, None if found is None else [bytes(v) for v in found])
        return found

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        found = self.store.get_ranges(self.key, ranges)
        if found is None:
            raise self._changed("it has been deleted")
        return found

    def _same(self) -> bool:
        ranges, first = self._first
        now = self.store.get_ranges(self.key, ranges)
        return now is not None and [bytes(v) for v in now] == first

    def _release(self) -> None:
        # keep the first bytes: unchanged() may be asked after closing
        pass


class Store(ABC):
    """Abstract key-value store.

    Subclasses implement ``get_many``, ``set``, ``delete``, ``list`` and set the
    capability flags; everything else has a working default built on those.
    Stores must pickle (dask ships them to worker processes).
    """

    #: the store accepts ``set`` / ``delete``
    writable: bool = True
    #: the store can enumerate its keys
    listable: bool = True
    #: ``get_ranges`` reads only the requested bytes
    supports_partial_reads: bool = False

    # -- reads -------------------------------------------------------------
    @abstractmethod
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Values of ``keys`` in order; ``None`` for a missing key."""

    def get_buffers(self, keys: Sequence[str]) -> list[Any]:
        """Values of ``keys`` as read-only bytes-like objects (``bytes``, or
        ``memoryview`` of memory the store allocated for them); ``None`` for a
        missing key. For callers that only decode the bytes (the chunk engine):
        a store may read into memory of its choosing (``LocalStore``: aligned
        buffers, which the kernel copies into several times faster). The
        default is :meth:`get_many`."""
        return self.get_many(keys)

    def read_into(self, key: str, view: Any) -> bool | None:
        """Read ``key``'s value straight into the numpy array ``view`` (its
        bytes taken as ``view``'s elements in C order); ``True`` when done,
        ``False`` when the key is missing, ``None`` when this store does not
        (the default: the caller reads the value with :meth:`get_buffers`).
        ``LocalStore`` does, for uncompressed chunks read whole."""
        return None

    def read_span(self, key: str, start: int, length: int, size: int) -> Any:
        """Bytes ``start`` to ``start + length`` of ``key``'s value, which must be
        ``size`` bytes long (a bytes-like object); ``False`` when the key is
        missing; ``None`` when this store does not, or the value is not
        ``size`` bytes long: the caller then reads the whole value, and reports
        a wrong size. For small selections of uncompressed chunks.

        The default, for stores with :attr:`supports_partial_reads`: one
        :meth:`get_ranges` call for the span and for everything from byte
        ``size - 1`` on, which is one byte exactly when the value has the size
        expected (ranges are clipped to the value)."""
        if not self.supports_partial_reads or size <= 0:
            return None
        got = self.get_ranges(key, [RangeRequest(start, length), OffsetRequest(size - 1)])
        if got is None:
            return False
        span, tail = got
        return span if len(span) == length and len(tail) == 1 else None

    def get(self, key: str) -> bytes | None:
        """Value of one key, or ``None`` if it is missing."""
        return self.get_many([key])[0]

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        """Byte ranges of one value, in order; ``None`` if the key is missing.

        Ranges reaching past the end are clipped (as HTTP range requests are).
        """
        value = self.get(key)
        return None if value is None else slice_ranges(value, ranges)

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value."""
        return self.get(key) is not None

    def getsize(self, key: str) -> int | None:
        """Size in bytes of a value, or ``None`` if the key is missing."""
        value = self.get(key)
        return None if value is None else len(value)

    # -- writes ------------------------------------------------------------
    def _check_writable(self, key: str = "") -> None:
        if not self.writable:
            where = f" (key {key!r})" if key else ""
            raise ReadOnlyError(f"{self!r} is read-only; cannot write{where}")

    @abstractmethod
    def set(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key`` (atomically where the backend allows)."""

    def set_many(self, items: Mapping[str, bytes]) -> None:
        """Store several values; backends may do it concurrently."""
        for key, value in items.items():
            self.set(key, value)

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""

    def delete_many(self, keys: Iterable[str]) -> None:
        """Remove several keys; missing keys are not an error."""
        for key in keys:
            self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with ``prefix`` (``""``: everything)."""
        self._check_writable(prefix)
        self.delete_many(list(self.list_prefix(prefix)))

    # -- listing -----------------------------------------------------------
    @abstractmethod
    def list(self) -> Iterator[str]:
        """Every key in the store."""

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key starting with ``prefix`` (full keys, not relative ones)."""
        return (k for k in self.list() if k.startswith(prefix))

    def list_dir(self, prefix: str) -> list[str]:
        """Sorted names of the direct children under ``prefix``.

        ``prefix`` is a path (``""`` for the root, ``"a/b"`` or ``"a/b/"``); a child
        is either a key directly under it or the first segment of a longer key.
        """
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        names = set()
        for key in self.list_prefix(prefix):
            rest = key[len(prefix):]
            if rest:
                names.add(rest.split("/", 1)[0])
        return sorted(names)

    # -- scheduled I/O ------------------------------------------------------
    def iter_many(self, keys: Sequence[str]) -> Iterator[tuple[int, bytes | None]]:
        """``(i, value of keys[i])`` pairs in the order the values arrive
        (``None``: missing), so a caller can decode one value while others are
        still on their way. Stores whose requests wait on a network
        (:attr:`latency_bound`) keep up to ``io_concurrency`` requests in flight;
        others read everything with one :meth:`get_many` call."""
        if not self.latency_bound or len(keys) <= 1:
            yield from enumerate(self.get_many(keys))
            return
        yield from io_unordered(lambda key: self.get_many([key])[0], list(keys))

    def read_many(
        self, reads: Sequence[tuple[ValueReader, Sequence[ByteRequest]]]
    ) -> list[list[bytes] | None | ValueChangedError]:
        """``reader.read(ranges)`` for every pair, as one batch: concurrently
        (up to ``io_concurrency`` at once) where requests wait on a network,
        one after another otherwise. A reader whose value changed gives its
        :class:`~zarrdask.errors.ValueChangedError` in its place (so only that
        value is read again); any other failure raises."""

        def one(item: tuple[ValueReader, Sequence[ByteRequest]]) -> list[bytes] | None | ValueChangedError:
            reader, ranges = item
            try:
                return reader.read(ranges)
            except ValueChangedError as e:
                return e

        items = list(reads)
        if self.latency_bound:
            return io_map(one, items)
        return [one(item) for item in items]

    def uploads(self) -> "Uploads":
        """A context for writes handed over one value at a time as they are
        encoded (``up.set(key, value)``); stores with :attr:`latency_bound`
        upload them in the background (up to ``io_concurrency`` at once) while
        the caller encodes the next. Leaving the context waits until every
        value is stored and raises the first failure: nothing is reported
        written before the store accepted it."""
        return Uploads(self)

    #: requests wait on a network (object stores, HTTP): the engine issues a
    #: batch's requests concurrently and decodes responses as they arrive
    latency_bound: bool = False

    # -- multi-step reads and locks ----------------------------------------
    def reader(self, key: str) -> ValueReader:
        """A :class:`ValueReader` of ``key``: several reads from one version of
        the value. The default is a :class:`VerifyingReader`; stores that can
        do better return an exact reader (see the module documentation)."""
        return VerifyingReader(self, validate_key(key))

    def locked(self, keys: Iterable[str], *, across_processes: bool = True) -> ContextManager[None]:
        """Hold exclusive locks on ``keys`` for a ``with`` block (read-modify-write).

        Keys are locked in sorted order, all of them before the ``with`` body
        runs, so callers locking several keys in one call cannot deadlock each
        other; a thread may lock keys it already holds (re-entrant). The
        locks are in-process (threads), shared by every store object over the
        same data; ``LocalStore`` also locks across processes, unless
        ``across_processes=False`` (for writes that replace whole values and
        read nothing, which need to be ordered only against this process's
        read-modify-writes). Locks are advisory: they exclude other
        ``locked`` callers, not plain writes.

        Raises
        ------
        InvalidKeyError
            If a key is invalid.
        ReadOnlyError
            If the store is read-only (a lock serialises writers).
        """
        names = sorted({validate_key(key) for key in keys})
        if names:
            self._check_writable(names[0])
        return hold(self._lock_space(), names, self._file_locks() if across_processes else None)

    def _lock_space(self) -> Hashable:
        """Where the data lives, for in-process locks: store objects over the
        same data must return equal values. The default is this object."""
        return (type(self).__module__, type(self).__qualname__, id(self))

    def _file_locks(self) -> "FileLocks | None":
        """Cross-process locks for :meth:`locked`, if the store has them."""
        return None

    # -- lifecycle ---------------------------------------------------------
    def flush(self) -> None:
        """Make what was written complete for other readers (a zip archive's
        central directory, for example); writing may go on afterwards. The
        default does nothing: most stores complete every write as it is made."""

    def close(self) -> None:
        """Release resources (files, sessions). The default does nothing."""

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def with_read_only(self) -> "Store":
        """A read-only view of this store."""
        from .wrappers import ReadOnlyStore

        return ReadOnlyStore(self)


class Uploads:
    """Values stored one at a time, in the background where the store's
    requests wait on a network; see :meth:`Store.uploads`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pipeline = Pipeline(io=True) if store.latency_bound else None

    def set(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key`` (maybe later: leave the context to be sure)."""
        if self._pipeline is None:
            self.store.set(key, value)
        else:  # waits while io_concurrency values are held
            self._pipeline.submit(self.store.set, key, value)

    def wait(self) -> None:
        """Return when every value handed over is stored; raise the first failure."""
        if self._pipeline is not None:
            self._pipeline.wait()

    def __enter__(self) -> "Uploads":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.wait()
            return
        try:  # the body failed: let started uploads finish, keep the body's error
            self.wait()
        except BaseException:
            pass
