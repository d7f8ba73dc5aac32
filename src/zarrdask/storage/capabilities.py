"""Optional store capabilities, declared by name.

Every store implements the small required interface of
:class:`~zarrdask.storage.abc.Store` (batched gets, byte ranges, sets,
deletes, listing, readers and locks with working defaults). Beyond it, a
store may *declare* capabilities in its ``capabilities`` (a frozenset of the
names below); the chunk engine looks at that set once per read or write and
uses a capability only where it is declared, with a default path otherwise.
The conformance suite (:mod:`zarrdask.testing.store`) checks every capability
a store declares.

========================  ============================  ==============================================
name                      what the store provides       what the engine does with it
========================  ============================  ==============================================
``in_place_reads``        :class:`InPlaceReads`:        uncompressed chunks read whole straight into
                          ``read_into(key, view)``,     their place in the output; other chunks read
                          ``get_buffers(keys)``         into memory the store chose (aligned, reused)
``streaming``             :class:`StreamingReads`:      requests wait on a network: a batch's values
                          ``iter_many(keys)``           are decoded as they arrive, requests of a
                                                        multi-step read (shard index, then chunks) go
                                                        out concurrently
``background_uploads``    :class:`BackgroundUploads`:   whole chunks handed over one at a time as
                          ``uploads()``                 they are encoded, uploaded in the background
``exact_readers``         :class:`ExactReaders`:        (a guarantee, checked by the conformance
                          ``reader(key)`` is exact      suite; the engine asks each reader)
``process_locks``         :class:`ProcessLocks`:        (a guarantee: read-modify-writes from several
                          ``locked(keys)`` also         processes are safe on this store)
                          excludes other processes
``conditional_writes``    :class:`ConditionalWrites`:   a chunk written in part is read with its
                          ``get_versioned(keys)``,      version and stored only if that version is
                          ``set_if(items)``             still current, else read and updated again:
                                                        writers in other processes or machines lose
                                                        no update (object stores: ETags)
========================  ============================  ==============================================

Each capability has a mixin here, which declares it by being inherited
(``capabilities`` defaults to the names of the capability mixins a store's
class inherits; :class:`ExactReaders` and :class:`ProcessLocks` carry no
methods, only the declaration); a
store whose capabilities depend on the instance (an fsspec store is
``streaming`` over S3, not over ``memory://``; a wrapper has those of the
store it wraps) overrides ``capabilities``.
"""

from __future__ import annotations

from abc import abstractmethod
from functools import lru_cache
from typing import Any, Iterator, Mapping, Sequence

from .._pool import Pipeline, io_unordered

__all__ = [
    "IN_PLACE_READS",
    "STREAMING",
    "BACKGROUND_UPLOADS",
    "EXACT_READERS",
    "PROCESS_LOCKS",
    "CONDITIONAL_WRITES",
    "KNOWN",
    "InPlaceReads",
    "StreamingReads",
    "BackgroundUploads",
    "ExactReaders",
    "ProcessLocks",
    "ConditionalWrites",
    "Uploads",
    "declared_by_class",
]

IN_PLACE_READS = "in_place_reads"
STREAMING = "streaming"
BACKGROUND_UPLOADS = "background_uploads"
EXACT_READERS = "exact_readers"
PROCESS_LOCKS = "process_locks"
CONDITIONAL_WRITES = "conditional_writes"
#: every capability name there is
KNOWN = frozenset({IN_PLACE_READS, STREAMING, BACKGROUND_UPLOADS, EXACT_READERS, PROCESS_LOCKS, CONDITIONAL_WRITES})


class _Capability:
    """Base of the capability mixins: ``capability`` is the name it declares."""

    capability: str = ""


@lru_cache(maxsize=None)
def declared_by_class(cls: type) -> frozenset[str]:
    """The capabilities of the mixins ``cls`` inherits."""
    return frozenset(c.capability for c in cls.__mro__ if issubclass(c, _Capability) and c.capability)


class InPlaceReads(_Capability):
    """Reads into memory the caller or the store chose, sparing a copy.

    ``LocalStore`` implements it: positional reads straight into the output
    array, and into 64-byte-aligned buffers the kernel copies into several
    times faster than into ``malloc``'d memory (:mod:`zarrdask._memory`).
    """

    capability = IN_PLACE_READS

    @abstractmethod
    def read_into(self, key: str, view: Any) -> bool | None:
        """Read ``key``'s value straight into the numpy array ``view`` (its
        bytes taken as ``view``'s elements in C order): ``True`` when done,
        ``False`` when the key is missing, ``None`` when not done (the value
        is not ``view.nbytes`` long, or ``view``'s layout does not allow it):
        the caller then reads the value as usual, which also reports a wrong
        size."""

    @abstractmethod
    def get_buffers(self, keys: Sequence[str]) -> list[Any]:
        """Values of ``keys`` as read-only bytes-like objects in memory the
        store allocated (``None`` for a missing key), for a caller that only
        decodes them; a caller done with them may give them back to
        :data:`zarrdask._memory.read_buffers`."""


class StreamingReads(_Capability):
    """The store's requests wait on a network (object stores, HTTP): values
    are handed over as they arrive, and a batch's requests go out at once.

    The default :meth:`iter_many` reads each key on the I/O threads through
    :meth:`_streamed` (the store's ``get_many`` unless it has a cheaper way to
    values that are only decoded: ``ObstoreStore``); a store with a better way
    altogether (``FsspecStore``: one coroutine per key on the file system's
    event loop) overrides :meth:`iter_many`.
    """

    capability = STREAMING

    def iter_many(self, keys: Sequence[str], limit: int | None = None) -> Iterator[tuple[int, bytes | None]]:
        """``(i, value of keys[i])`` pairs in the order the values arrive
        (``None``: missing), at most ``limit`` (default: the setting
        ``io_concurrency``) requests in flight, so a caller can decode one
        value while others are still on their way. A value is ``bytes`` or a
        read-only buffer (``ObstoreStore``: a view of what it received)."""
        read = self._streamed
        if len(keys) <= 1:
            yield from enumerate(read(keys))
            return
        yield from io_unordered(lambda key: read([key])[0], list(keys), limit)

    def _streamed(self, keys: Sequence[str]) -> list[Any]:
        """The values of ``keys`` as :meth:`iter_many` hands them over: the
        store's own ``get_many`` (a subclass that overrides it is served by it)."""
        return self.get_many(keys)  # type: ignore[attr-defined]


class BackgroundUploads(_Capability):
    """Values handed over one at a time as they are encoded, stored in the
    background (at most ``io_concurrency`` at once) while the caller encodes
    the next; see :meth:`uploads`."""

    capability = BACKGROUND_UPLOADS

    def uploads(self, limit: int | None = None) -> "Uploads":
        """A context for writes handed over one value at a time
        (``up.set(key, value)``), uploaded on the I/O threads, at most
        ``limit`` (default: the setting ``io_concurrency``) at once. Leaving
        the context waits until every value is stored and raises the first
        failure: nothing is reported written before the store accepted it."""
        return Uploads(self, limit)


class ExactReaders(_Capability):
    """The store's :meth:`~zarrdask.storage.abc.Store.reader` always returns
    exact readers: every read after the first comes from the version the
    first one saw, or raises :class:`~zarrdask.errors.ValueChangedError`
    (a declaration: the store overrides ``reader`` itself)."""

    capability = EXACT_READERS


class ProcessLocks(_Capability):
    """The store's :meth:`~zarrdask.storage.abc.Store.locked` also excludes
    other processes (a declaration: the store provides the locks itself)."""

    capability = PROCESS_LOCKS


class ConditionalWrites(_Capability):
    """Writes that take effect only if the value is still the version read
    (optimistic concurrency: HTTP ``If-Match`` / ``If-None-Match: *`` on
    object stores, RFC 9110 "Conditional Requests").

    A read-modify-write of a chunk (part of a shard written) reads it with
    :meth:`get_versioned` and stores the result with :meth:`set_if`; a key
    whose version changed meanwhile (another process or machine wrote it) is
    read and updated again, so no writer's update is lost, without locks.
    """

    capability = CONDITIONAL_WRITES

    @abstractmethod
    def get_versioned(self, keys: Sequence[str]) -> list[tuple[Any, Any]]:
        """``(value, version)`` of each key in order: ``(None, None)`` for a
        missing key; ``version`` is an opaque token for :meth:`set_if`."""

    @abstractmethod
    def set_if(self, items: Mapping[str, tuple[Any, Any]]) -> list[str]:
        """Store each ``key: (value, version)`` only if ``key`` still holds
        ``version`` (a ``version`` of ``None``: only if ``key`` is still
        missing). Returns the keys whose version had changed, in the order
        given; nothing was stored for them. Every other key is stored when
        this returns."""


class Uploads:
    """Values stored one at a time in the background; see
    :meth:`BackgroundUploads.uploads`."""

    def __init__(self, store: Any, limit: int | None = None) -> None:
        self.store = store
        self._pipeline = Pipeline(io=True, limit=limit)

    def set(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key`` (maybe later: leave the context to be sure)."""
        self._pipeline.submit(self.store.set, key, value)  # waits while `limit` values are held

    def wait(self) -> None:
        """Return when every value handed over is stored; raise the first failure."""
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
