"""The Store interface every storage backend implements.

A store is a flat key → bytes mapping (Zarr v2 spec "Storage"; zarr-specs v3
core "Stores"). Keys are ``/``-separated relative paths validated by
:mod:`zarrdask.storage.keys`. Reads are batched: a caller hands the store every
key (``get_many``) or every byte range of one key (``get_ranges``) it needs at
once, so remote stores can fetch them concurrently. A missing key reads as
``None``; it is never an exception.

The required interface is small: ``get_many``, ``set``, ``delete`` and
``list`` (abstract), and ``get_ranges``, ``reader`` and ``locked`` with
working defaults built on them, plus conveniences (``get``, ``exists``,
``set_many``, ``list_dir``, ...). Three flags describe the key-value
contract: ``writable``, ``listable`` and ``supports_partial_reads`` (ranges
served without reading the whole value). Everything else a store can do
better is an optional capability it declares by name in ``capabilities``
(:mod:`zarrdask.storage.capabilities`: in-place reads, streaming,
background uploads, exact readers, cross-process locks).

Reading one value in several steps
----------------------------------
A read that needs two steps — a shard's index, then the inner chunks the
index points at (zarr-specs ``v3-codecs-sharding-indexed``) — must not apply
offsets read from one version of a value to the bytes of another.
:meth:`Store.reader` returns a :class:`~zarrdask.storage.readers.ValueReader`
(:mod:`zarrdask.storage.readers`) for one key: its first
``read()`` decides which version (or absence) of the value the reader
stands for, and

* an **exact** reader (``reader.exact``) serves every later ``read()`` from
  that version, or raises :class:`~zarrdask.errors.ValueChangedError` when it
  can no longer do so;
* a **verifying** reader (the default,
  :class:`~zarrdask.storage.readers.VerifyingReader`) reads
  whatever is current; ``unchanged()`` afterwards re-reads the ranges of the
  first ``read()`` and says whether they are still the same, so the caller
  can read again.

Per store (the strongest mechanism each has; ``docs/guarantees.md`` has the
full page; the stores whose readers are always exact declare
``exact_readers``):

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
them, and across processes for ``LocalStore`` (:mod:`zarrdask.storage.locks`;
capability ``process_locks``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ContextManager, Hashable, Iterable, Iterator, Mapping, Sequence

from ..errors import ReadOnlyError
from .byte_range import ByteRequest, slice_ranges
from .capabilities import declared_by_class
from .keys import validate_key
from .locks import hold
from .readers import RangeReader, ValueReader, VerifyingReader

__all__ = ["Store", "ValueReader", "VerifyingReader", "RangeReader", "ensure_bytes", "as_buffer"]

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


class Store(ABC):
    """Abstract key-value store.

    Subclasses implement ``get_many``, ``set``, ``delete`` and ``list`` and set
    the flags; everything else has a working default built on those. A store
    that can do more declares it in :attr:`capabilities`
    (:mod:`zarrdask.storage.capabilities`). Stores must pickle (dask ships
    them to worker processes).
    """

    #: the store accepts ``set`` / ``delete``
    writable: bool = True
    #: the store can enumerate its keys
    listable: bool = True
    #: ``get_ranges`` reads only the requested bytes
    supports_partial_reads: bool = False

    @property
    def capabilities(self) -> frozenset[str]:
        """The optional capabilities this store declares
        (:mod:`zarrdask.storage.capabilities`); by default those of the
        capability mixins its class inherits."""
        return declared_by_class(type(self))

    # -- reads -------------------------------------------------------------
    @abstractmethod
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Values of ``keys`` in order; ``None`` for a missing key."""

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

    # -- versions (the chunk cache's revalidation) ---------------------------
    def get_with_versions(self, keys: Sequence[str]) -> list[tuple[bytes | None, Any]]:
        """``(value, version)`` of each key: the value as :meth:`get_many`
        reads it and the store's name of that version of it (an ETag, a
        file's identity, size and modification time), ``None`` where the
        store has none; ``(None, None)`` for a missing key. The default
        knows no versions."""
        return [(value, None) for value in self.get_many(keys)]

    def get_if_changed(
        self, keys: Sequence[str], versions: Sequence[Any], *, fetch: bool = True
    ) -> list[tuple[bool, bytes | None, Any]]:
        """Whether each key still holds the version given, asked without
        reading the value where the store can (a conditional request answered
        "not modified", a file's status): ``(False, None, version)`` for a key
        that does, else ``(True, value, new version)`` — the value ``None``
        when the key is missing or ``fetch`` is False. The default cannot
        ask: every key counts as changed (and is read when ``fetch``)."""
        if not fetch:
            return [(True, None, None) for _ in keys]
        return [(True, value, version) for value, version in self.get_with_versions(keys)]

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

    # -- multi-step reads and locks ----------------------------------------
    def reader(self, key: str) -> ValueReader:
        """A :class:`~zarrdask.storage.readers.ValueReader` of ``key``: several
        reads from one version of the value. The default is a
        :class:`~zarrdask.storage.readers.VerifyingReader`; stores that can do
        better return an exact reader (see the module documentation) and
        declare ``exact_readers``."""
        return VerifyingReader(self, validate_key(key))

    def locked(self, keys: Iterable[str], *, across_processes: bool = True) -> ContextManager[None]:
        """Hold exclusive locks on ``keys`` for a ``with`` block (read-modify-write).

        Keys are locked in sorted order, all of them before the ``with`` body
        runs, so callers locking several keys in one call cannot deadlock each
        other; a thread may lock keys it already holds (re-entrant). The
        locks are in-process (threads), shared by every store object over the
        same data; a store declaring ``process_locks`` (``LocalStore``) also
        locks across processes, unless ``across_processes=False`` (for writes
        that replace whole values and read nothing, which need to be ordered
        only against this process's read-modify-writes). Locks are advisory:
        they exclude other ``locked`` callers, not plain writes.

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
        return hold(self.location, names, self._file_locks() if across_processes else None)

    @property
    def location(self) -> Hashable:
        """Where the data lives: equal for store objects over the same data (a
        directory's real path, a bucket and prefix, a dict's identity), whatever
        the object and however it was opened. In-process locks, dask tokens and
        the checks that two stores are distinct use it. The default is this object."""
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
