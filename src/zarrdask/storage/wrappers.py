"""Stores that wrap another store: read-only, prefixed, counting / logging.

A wrapper forwards every operation, including the batched ones
(``get_many``, ``get_ranges``, ``set_many``), to the wrapped store, so the
batching the chunk engine relies on (``ARCHITECTURE.md``, "Concurrency")
survives wrapping. Flags (``writable``, ``listable``,
``supports_partial_reads``) are those of the wrapped store, except that
:class:`ReadOnlyStore` is never writable; so are its capabilities
(:mod:`zarrdask.storage.capabilities`), except ``in_place_reads``, which
would read around the wrapper. ``close()`` closes the wrapped store.
:func:`read_only` gives a read-only view of any store.

Readers and locks are the wrapped store's too: ``reader(key)`` returns the
wrapped store's reader (exact where it is exact), presented under the key the
caller used; ``locked(keys)`` locks the wrapped store's keys (so a
``PrefixStore`` and its parent store exclude each other), after refusing a
read-only wrapper. :class:`CountingStore` counts both.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, ContextManager, Hashable, Iterable, Iterator, Mapping, Sequence

from ..errors import ReadOnlyError
from .abc import Store
from .byte_range import ByteRequest
from .capabilities import IN_PLACE_READS, BackgroundUploads, ConditionalWrites, StreamingReads
from .keys import normalize_path, validate_key, validate_prefix
from .readers import ValueReader

__all__ = ["WrapperStore", "ReadOnlyStore", "PrefixStore", "CountingStore", "read_only"]

logger = logging.getLogger("zarrdask.storage")


class ForwardingReader(ValueReader):
    """A wrapped store's reader, under the key the wrapper's caller used.

    ``on_read(ranges, found)`` and ``on_unchanged()``, if given, are told of
    every read and check (for counting).
    """

    def __init__(
        self,
        store: Store,
        key: str,
        inner: ValueReader,
        on_read: Callable[[Sequence[ByteRequest], list[bytes] | None], None] | None = None,
        on_unchanged: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(store, key)
        self.inner = inner
        self._on_read = on_read
        self._on_unchanged = on_unchanged

    @property  # type: ignore[override]
    def exact(self) -> bool:
        return self.inner.exact

    @property  # type: ignore[override]
    def version(self) -> Any:
        return self.inner.version

    def read(self, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        ranges = list(ranges)
        found = self.inner.read(ranges)
        if self._on_read is not None:
            self._on_read(ranges, found)
        return found

    def unchanged(self) -> bool:
        if self._on_unchanged is not None:
            self._on_unchanged()
        return self.inner.unchanged()

    def close(self) -> None:
        self.inner.close()


class WrapperStore(StreamingReads, BackgroundUploads, ConditionalWrites, Store):
    """Base class of stores that forward everything to ``self.store``.

    Parameters
    ----------
    store : Store
        The wrapped store.
    """

    def __init__(self, store: Store) -> None:
        if not isinstance(store, Store):
            raise TypeError(f"{type(self).__name__} wraps a Store, got {type(store).__name__}")
        self.store = store

    @property  # type: ignore[override]
    def writable(self) -> bool:
        return self.store.writable

    @property  # type: ignore[override]
    def listable(self) -> bool:
        return self.store.listable

    @property  # type: ignore[override]
    def supports_partial_reads(self) -> bool:
        return self.store.supports_partial_reads

    @property
    def capabilities(self) -> frozenset[str]:
        """The wrapped store's, but ``in_place_reads`` (it would read around
        this wrapper): streamed reads and background uploads go through it."""
        return self.store.capabilities - {IN_PLACE_READS}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.store!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __hash__(self) -> int:
        return hash((type(self), self.store))

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return self.store.get_many(keys)

    def get(self, key: str) -> bytes | None:
        return self.store.get(key)

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        return self.store.get_ranges(key, ranges)

    def exists(self, key: str) -> bool:
        return self.store.exists(key)

    def getsize(self, key: str) -> int | None:
        return self.store.getsize(key)

    def set(self, key: str, value: bytes) -> None:
        self.store.set(key, value)

    def set_many(self, items: Mapping[str, bytes]) -> None:
        self.store.set_many(items)

    def delete(self, key: str) -> None:
        self.store.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        self.store.delete_many(keys)

    def delete_prefix(self, prefix: str) -> None:
        self.store.delete_prefix(prefix)

    def list(self) -> Iterator[str]:
        return self.store.list()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.store.list_prefix(prefix)

    def list_dir(self, prefix: str) -> list[str]:
        return self.store.list_dir(prefix)

    def reader(self, key: str) -> ValueReader:
        return self.store.reader(key)

    def iter_many(self, keys: Sequence[str], limit: int | None = None) -> Iterator[tuple[int, bytes | None]]:
        """The wrapped store's streamed reads (where it declares ``streaming``)."""
        keys = self._inner_keys([validate_key(key) for key in keys])
        if isinstance(self.store, StreamingReads):
            return self.store.iter_many(keys, limit)
        return enumerate(self.store.get_many(keys))

    def get_versioned(self, keys: Sequence[str]) -> list[tuple[Any, Any]]:
        """The wrapped store's (where it declares ``conditional_writes``)."""
        store: Any = self.store
        return store.get_versioned(self._inner_keys([validate_key(key) for key in keys]))

    def get_with_versions(self, keys: Sequence[str]) -> list[tuple[bytes | None, Any]]:
        """The wrapped store's."""
        return self.store.get_with_versions(self._inner_keys([validate_key(key) for key in keys]))

    def get_if_changed(
        self, keys: Sequence[str], versions: Sequence[Any], *, fetch: bool = True
    ) -> list[tuple[bool, bytes | None, Any]]:
        """The wrapped store's."""
        inner = self._inner_keys([validate_key(key) for key in keys])
        return self.store.get_if_changed(inner, versions, fetch=fetch)

    def set_if(self, items: Mapping[str, tuple[Any, Any]]) -> list[str]:
        """The wrapped store's (where it declares ``conditional_writes``), after
        refusing a read-only wrapper; conflicts under the caller's keys."""
        keys = [validate_key(key) for key in items]
        for key in keys:
            self._check_writable(key)
        inner = self._inner_keys(keys)
        store: Any = self.store
        conflicts = set(store.set_if({name: items[key] for key, name in zip(keys, inner)}))
        return [key for key, name in zip(keys, inner) if name in conflicts]

    def locked(self, keys: Iterable[str], *, across_processes: bool = True) -> ContextManager[None]:
        keys = [validate_key(key) for key in keys]
        for key in keys[:1]:
            self._check_writable(key)
        return self.store.locked(self._inner_keys(keys), across_processes=across_processes)

    def _inner_keys(self, keys: list[str]) -> list[str]:
        """The wrapped store's names of ``keys``."""
        return keys

    @property
    def location(self) -> Hashable:
        """The wrapped store's: a wrapper changes how the data is reached, not where it lives."""
        return self.store.location

    def close(self) -> None:
        self.store.close()


class ReadOnlyStore(WrapperStore):
    """A read-only view of a store: every write raises ``ReadOnlyError``.

    Examples
    --------
    >>> from zarrdask.storage import MemoryStore
    >>> ro = ReadOnlyStore(MemoryStore({"a": b"1"}))
    >>> ro.get("a")
    b'1'
    >>> ro.set("a", b"2")
    Traceback (most recent call last):
    ...
    zarrdask.errors.ReadOnlyError: ReadOnlyStore(MemoryStore(<1 keys>)) is read-only; cannot write key 'a'
    """

    @property  # type: ignore[override]
    def writable(self) -> bool:
        return False

    def _refuse(self, key: str) -> ReadOnlyError:
        where = f" key {key!r}" if key else " (all keys)"
        return ReadOnlyError(f"{self!r} is read-only; cannot write{where}")

    def set(self, key: str, value: bytes) -> None:
        raise self._refuse(key)

    def set_many(self, items: Mapping[str, bytes]) -> None:
        for key in items:
            raise self._refuse(key)

    def delete(self, key: str) -> None:
        raise self._refuse(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            raise self._refuse(key)

    def delete_prefix(self, prefix: str) -> None:
        raise self._refuse(prefix)



def read_only(store: Store) -> Store:
    """A read-only view of ``store``: ``store`` itself if it is a
    :class:`ReadOnlyStore`, else one wrapping it.

    Examples
    --------
    >>> from zarrdask.storage import MemoryStore
    >>> ro = read_only(MemoryStore())
    >>> ro.writable, read_only(ro) is ro
    (False, True)
    """
    return store if isinstance(store, ReadOnlyStore) else ReadOnlyStore(store)


class PrefixStore(WrapperStore):
    """The keys of ``store`` under ``prefix``, seen as the keys of a store.

    Parameters
    ----------
    store : Store
        The wrapped store.
    prefix : str
        A logical path (normalised with
        :func:`~zarrdask.storage.keys.normalize_path`); ``""`` is the whole
        store.

    Examples
    --------
    >>> from zarrdask.storage import MemoryStore
    >>> inner = MemoryStore()
    >>> sub = PrefixStore(inner, "group/array")
    >>> sub.set("zarr.json", b"{}")
    >>> sorted(inner.list())
    ['group/array/zarr.json']
    >>> list(sub.list())
    ['zarr.json']
    """

    def __init__(self, store: Store, prefix: str) -> None:
        super().__init__(store)
        self.prefix = normalize_path(prefix)
        self._head = f"{self.prefix}/" if self.prefix else ""

    def __repr__(self) -> str:
        return f"PrefixStore({self.store!r}, {self.prefix!r})"

    def _full(self, key: str) -> str:
        return self._head + validate_key(key)

    def _relative(self, keys: Iterable[str]) -> Iterator[str]:
        cut = len(self._head)
        for key in keys:
            yield key[cut:]

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return self.store.get_many([self._full(k) for k in keys])

    def get(self, key: str) -> bytes | None:
        return self.store.get(self._full(key))

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        return self.store.get_ranges(self._full(key), ranges)

    def exists(self, key: str) -> bool:
        return self.store.exists(self._full(key))

    def getsize(self, key: str) -> int | None:
        return self.store.getsize(self._full(key))

    # writes check writability here so that errors name the key the caller used
    def set(self, key: str, value: bytes) -> None:
        full = self._full(key)
        self._check_writable(key)
        self.store.set(full, value)

    def set_many(self, items: Mapping[str, bytes]) -> None:
        full = {self._full(k): v for k, v in items.items()}
        for key in items:
            self._check_writable(key)
        self.store.set_many(full)

    def delete(self, key: str) -> None:
        full = self._full(key)
        self._check_writable(key)
        self.store.delete(full)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        full = [self._full(k) for k in keys]
        for key in keys:
            self._check_writable(key)
        self.store.delete_many(full)

    def delete_prefix(self, prefix: str) -> None:
        validate_prefix(prefix)
        self._check_writable(prefix)
        self.store.delete_prefix(self._head + prefix)

    def list(self) -> Iterator[str]:
        if not self._head:
            return self.store.list()
        return self._relative(self.store.list_prefix(self._head))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        return self._relative(self.store.list_prefix(self._head + prefix))

    def list_dir(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        return self.store.list_dir(self._head + prefix)

    def reader(self, key: str) -> ValueReader:
        return ForwardingReader(self, key, self.store.reader(self._full(key)))

    def _inner_keys(self, keys: list[str]) -> list[str]:
        return [self._head + key for key in keys]

    @property
    def location(self) -> Hashable:
        return (self.store.location, self._head)


_COUNTERS = (
    "get_many_calls",
    "keys_requested",
    "get_ranges_calls",
    "ranges_requested",
    "bytes_read",
    "set_calls",
    "keys_written",
    "bytes_written",
    "delete_calls",
    "list_calls",
    "getsize_calls",
    "exists_calls",
    "readers_opened",
    "unchanged_calls",
    "lock_calls",
)


class CountingStore(WrapperStore):
    """Counts the calls made to a store and the bytes moved, optionally logging them.

    Counters (attributes, also in :attr:`counts`):

    ``get_many_calls`` / ``keys_requested``
        ``get`` and ``get_many`` calls and the keys they asked for;
    ``get_ranges_calls`` / ``ranges_requested``
        ``get_ranges`` calls and the byte ranges they asked for;
    ``bytes_read``
        bytes returned by ``get``, ``get_many`` and ``get_ranges``;
    ``set_calls`` / ``keys_written`` / ``bytes_written``
        ``set`` and ``set_many`` calls, keys and bytes written;
    ``delete_calls``
        ``delete``, ``delete_many`` and ``delete_prefix`` calls;
    ``list_calls``
        ``list``, ``list_prefix`` and ``list_dir`` calls;
    ``getsize_calls`` / ``exists_calls``
        size and existence look-ups;
    ``readers_opened`` / ``unchanged_calls``
        readers made by ``reader()``, and their ``unchanged()`` checks; each
        ``read()`` of a reader counts as a ``get_ranges`` call (it is one
        batch of ranged requests);
    ``lock_calls``
        ``locked()`` calls.

    Parameters
    ----------
    store : Store
        The wrapped store.
    log : bool, default False
        Also log every call on the ``"zarrdask.storage"`` logger.
    log_level : int, default logging.DEBUG
        Level of those log records.

    Examples
    --------
    >>> from zarrdask.storage import MemoryStore
    >>> store = CountingStore(MemoryStore({"a": b"123"}))
    >>> store.get_many(["a", "b"])
    [b'123', None]
    >>> store.counts["get_many_calls"], store.counts["keys_requested"], store.bytes_read
    (1, 2, 3)
    """

    def __init__(self, store: Store, *, log: bool = False, log_level: int = logging.DEBUG) -> None:
        super().__init__(store)
        self.log = log
        self.log_level = log_level
        self._lock = threading.Lock()
        self.reset()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def reset(self) -> None:
        """Set every counter to zero."""
        with self._lock:
            for name in _COUNTERS:
                setattr(self, name, 0)

    @property
    def counts(self) -> dict[str, int]:
        """A snapshot of every counter."""
        with self._lock:
            return {name: getattr(self, name) for name in _COUNTERS}

    def _add(self, **amounts: int) -> None:
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)

    def _log(self, message: str, *args: Any) -> None:
        if self.log:
            logger.log(self.log_level, "%r " + message, self.store, *args)

    @staticmethod
    def _shown(keys: Sequence[str]) -> str:
        return repr(list(keys[:5])) + (f" (+{len(keys) - 5} more)" if len(keys) > 5 else "")

    # -- reads -------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = list(keys)
        values = self.store.get_many(keys)
        nbytes = sum(len(v) for v in values if v is not None)
        self._add(get_many_calls=1, keys_requested=len(keys), bytes_read=nbytes)
        self._log("get_many %d keys %s -> %d bytes", len(keys), self._shown(keys), nbytes)
        return values

    def get(self, key: str) -> bytes | None:
        return self.get_many([key])[0]

    def iter_many(self, keys: Sequence[str], limit: int | None = None) -> Iterator[tuple[int, bytes | None]]:
        keys = list(keys)
        self._add(get_many_calls=1, keys_requested=len(keys))
        self._log("get_many (streamed) %d keys %s", len(keys), self._shown(keys))
        for i, value in super().iter_many(keys, limit):
            if value is not None:
                self._add(bytes_read=len(value))
            yield i, value

    def get_versioned(self, keys: Sequence[str]) -> list[tuple[Any, Any]]:
        """Counted as a ``get_many`` call."""
        found = super().get_versioned(keys)
        nbytes = sum(len(v) for v, _ in found if v is not None)
        self._add(get_many_calls=1, keys_requested=len(found), bytes_read=nbytes)
        self._log("get_versioned %d keys %s -> %d bytes", len(found), self._shown(list(keys)), nbytes)
        return found

    def get_with_versions(self, keys: Sequence[str]) -> list[tuple[bytes | None, Any]]:
        """Counted as a ``get_many`` call."""
        found = super().get_with_versions(keys)
        nbytes = sum(len(v) for v, _ in found if v is not None)
        self._add(get_many_calls=1, keys_requested=len(found), bytes_read=nbytes)
        return found

    def get_if_changed(
        self, keys: Sequence[str], versions: Sequence[Any], *, fetch: bool = True
    ) -> list[tuple[bool, bytes | None, Any]]:
        """Counted as a ``get_many`` call (of the keys asked about)."""
        found = super().get_if_changed(keys, versions, fetch=fetch)
        nbytes = sum(len(v) for _, v, _ in found if v is not None)
        self._add(get_many_calls=1, keys_requested=len(found), bytes_read=nbytes)
        return found

    def set_if(self, items: Mapping[str, tuple[Any, Any]]) -> list[str]:
        """Counted as a ``set_many`` call (the values stored or not)."""
        conflicts = super().set_if(items)
        nbytes = sum(memoryview(v).nbytes for v, _ in items.values())
        self._add(set_calls=1, keys_written=len(items), bytes_written=nbytes)
        self._log("set_if %d keys %s %d bytes, %d changed meanwhile", len(items), self._shown(list(items)), nbytes,
                  len(conflicts))
        return conflicts

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        values = self.store.get_ranges(key, ranges)
        nbytes = 0 if values is None else sum(len(v) for v in values)
        self._add(get_ranges_calls=1, ranges_requested=len(ranges), bytes_read=nbytes)
        self._log("get_ranges %r %d ranges -> %d bytes", key, len(ranges), nbytes)
        return values

    def exists(self, key: str) -> bool:
        self._add(exists_calls=1)
        self._log("exists %r", key)
        return self.store.exists(key)

    def getsize(self, key: str) -> int | None:
        self._add(getsize_calls=1)
        self._log("getsize %r", key)
        return self.store.getsize(key)

    # -- writes ------------------------------------------------------------
    def set(self, key: str, value: bytes) -> None:
        self.store.set(key, value)
        nbytes = memoryview(value).nbytes
        self._add(set_calls=1, keys_written=1, bytes_written=nbytes)
        self._log("set %r %d bytes", key, nbytes)

    def set_many(self, items: Mapping[str, bytes]) -> None:
        self.store.set_many(items)
        nbytes = sum(memoryview(v).nbytes for v in items.values())
        self._add(set_calls=1, keys_written=len(items), bytes_written=nbytes)
        self._log("set_many %d keys %s %d bytes", len(items), self._shown(list(items)), nbytes)

    def delete(self, key: str) -> None:
        self._add(delete_calls=1)
        self._log("delete %r", key)
        self.store.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._add(delete_calls=1)
        self._log("delete_many %d keys %s", len(keys), self._shown(keys))
        self.store.delete_many(keys)

    def delete_prefix(self, prefix: str) -> None:
        self._add(delete_calls=1)
        self._log("delete_prefix %r", prefix)
        self.store.delete_prefix(prefix)

    # -- listing -----------------------------------------------------------
    def list(self) -> Iterator[str]:
        self._add(list_calls=1)
        self._log("list")
        return self.store.list()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        self._add(list_calls=1)
        self._log("list_prefix %r", prefix)
        return self.store.list_prefix(prefix)

    def list_dir(self, prefix: str) -> list[str]:
        self._add(list_calls=1)
        self._log("list_dir %r", prefix)
        return self.store.list_dir(prefix)

    # -- readers and locks -------------------------------------------------
    def reader(self, key: str) -> ValueReader:
        inner = self.store.reader(key)
        self._add(readers_opened=1)
        self._log("reader %r (exact=%s)", key, inner.exact)

        def on_read(ranges: Sequence[ByteRequest], found: list[bytes] | None) -> None:
            nbytes = 0 if found is None else sum(len(v) for v in found)
            self._add(get_ranges_calls=1, ranges_requested=len(ranges), bytes_read=nbytes)
            self._log("reader.read %r %d ranges -> %d bytes", key, len(ranges), nbytes)

        def on_unchanged() -> None:
            self._add(unchanged_calls=1)
            self._log("reader.unchanged %r", key)

        return ForwardingReader(self, key, inner, on_read, on_unchanged)

    def locked(self, keys: Iterable[str], *, across_processes: bool = True) -> ContextManager[None]:
        keys = list(keys)
        self._add(lock_calls=1)
        self._log("locked %s", self._shown(keys))
        return super().locked(keys, across_processes=across_processes)
