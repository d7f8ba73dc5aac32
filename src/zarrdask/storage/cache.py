"""The process-wide chunk cache: stored values and byte ranges within a byte budget.

One :class:`ChunkCache` per process (:func:`chunk_cache`) holds what the
chunk engine read through a :class:`~zarrdask.storage.caching.CachingStore`:
whole stored values (compressed chunks, shards) and byte ranges of values
(a shard's index, its coalesced inner chunks), least recently used out first.
It holds *stored bytes*, not decoded chunks: one layer under every read path
of the engine (whole chunks, streamed reads, partial reads through byte
ranges), compressed values take a fraction of the memory of decoded ones, and
a stored value has a version the store can be asked about (revalidation).

Entries are keyed by **where the value lives**, not by the store object: the
store's ``location`` with its root folded into the key (:func:`address`), so
every store object over the same data, and stores rooted at different
directories of the same bucket or file system, share entries — and a write
through any of them drops what it replaces (:func:`invalidate`).

The budget is the setting ``cache_bytes`` (read at every insertion, so
``zarrdask.config.set(cache_bytes=...)`` applies at once; ``0``: nothing is
kept); each entry counts its bytes plus :data:`ENTRY_OVERHEAD` (the key, the
bookkeeping), so what the process holds for the cache stays within the budget
and a fixed overhead. Values are copied into ``bytes`` of their own length
before they are kept: a view into a larger buffer would hold that buffer.

Thread-safe: one lock, held for dictionary operations only (never across a
request). After ``fork()`` (dask process workers, multiprocessing) the child
starts with an empty cache: each process has its own.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Hashable, Iterable, NamedTuple

from .. import config
from .byte_range import ByteRequest, OffsetRequest, RangeRequest, SuffixRequest

__all__ = ["ChunkCache", "Cached", "ENTRY_OVERHEAD", "chunk_cache", "address", "invalidate", "invalidate_prefix"]

#: bytes counted for each entry besides its value: the key tuple and its
#: strings, the entry, the version, the dictionary and set slots (measured
#: with ``tracemalloc`` on CPython 3.11: about 680 bytes for a whole value
#: keyed by a local path, 820 for a byte range with an ETag)
ENTRY_OVERHEAD = 800


class Cached(NamedTuple):
    """A cached value or byte range: its bytes, the store's version of the
    value they came from (``None``: unknown), and for byte ranges a token
    naming the read they came from (ranges with one token are from one
    version of the value)."""

    data: bytes
    version: Any = None
    token: Any = None


# parts of a value an entry holds: None (the whole value), ("range", start, requested stop),
# ("offset", start) or ("suffix", length)
Part = Any


def _part_of(request: ByteRequest) -> Part:
    if isinstance(request, RangeRequest):
        return ("range", request.offset, request.offset + request.length)
    if isinstance(request, OffsetRequest):
        return ("offset", request.offset)
    if isinstance(request, SuffixRequest):
        return ("suffix", request.length)
    raise TypeError(f"not a byte request: {request!r}")


def serves(part: Part, request: ByteRequest, data: bytes) -> bytes | None:
    """The bytes of ``request`` from a cached part holding ``data``, if it holds them."""
    kind = part[0]
    if isinstance(request, RangeRequest):
        if kind == "range" and part[1] <= request.offset and request.offset + request.length <= part[2]:
            start = request.offset - part[1]
            return data[start : start + request.length]  # clipped where the value ended
        if kind == "offset" and part[1] <= request.offset:
            start = request.offset - part[1]
            return data[start : start + request.length]
        return None
    if isinstance(request, OffsetRequest):
        if kind == "offset" and part[1] <= request.offset:
            return data[request.offset - part[1]:]
        return None
    if kind == "suffix" and part[1] >= request.length:  # type: ignore[union-attr]
        return data[max(0, len(data) - request.length):]  # type: ignore[union-attr]
    return None


class ChunkCache:
    """Stored values and byte ranges, least recently used out first, within a byte budget.

    Parameters
    ----------
    max_bytes : int, optional
        The budget; ``None`` (the process-wide cache): the setting ``cache_bytes``.
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Hashable, str, Part], Cached] = OrderedDict()
        self._parts: dict[tuple[Hashable, str], set[Part]] = {}
        self._held = 0
        self.hits = 0
        self.misses = 0
        #: counts invalidations: a value read before one is not kept after it
        #: (``since``), so a read racing a write never caches what the write replaced
        self.epoch = 0

    @property
    def max_bytes(self) -> int:
        return int(config.get("cache_bytes")) if self._max_bytes is None else self._max_bytes

    @property
    def nbytes(self) -> int:
        """Bytes counted against the budget (values plus the per-entry overhead)."""
        return self._held

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<ChunkCache {len(self)} entries, {self._held:,} of {self.max_bytes:,} bytes>"

    # -- whole values --------------------------------------------------------
    def get(self, where: Hashable, key: str) -> Cached | None:
        """The cached whole value of ``key`` (marked recently used), or ``None``."""
        return self._get((where, key, None))

    def put(self, where: Hashable, key: str, value: Any, version: Any = None, since: int | None = None) -> None:
        """Keep the whole value of ``key`` (replacing any byte ranges of it:
        the whole value serves them) — unless something was invalidated
        after :attr:`epoch` was ``since`` (the value may be older than a write)."""
        self._put(where, key, None, value, version, None, since, replace_parts=True)

    # -- byte ranges ---------------------------------------------------------
    def get_range(self, where: Hashable, key: str, request: ByteRequest) -> Cached | None:
        """The bytes of ``request`` from a cached part of ``key`` holding them
        (the whole value, the same request, or a range containing it), or ``None``."""
        with self._lock:
            parts = self._parts.get((where, key))
            if parts:
                if None in parts:
                    whole = self._entries[(where, key, None)]
                    self._entries.move_to_end((where, key, None))
                    from .byte_range import slice_ranges

                    self.hits += 1
                    return whole._replace(data=slice_ranges(whole.data, [request])[0])
                for part in parts:
                    entry = self._entries[(where, key, part)]
                    data = serves(part, request, entry.data)
                    if data is not None:
                        self._entries.move_to_end((where, key, part))
                        self.hits += 1
                        return entry._replace(data=data)
            self.misses += 1
            return None

    def ranges_of(self, where: Hashable, key: str) -> list[tuple[Part, Cached]]:
        """Every cached part of ``key`` with its entry — ``None`` for the whole
        value, ``("range", start, requested stop)``, ``("offset", start)``,
        ``("suffix", length)`` — all of one token (one read, one version of
        the value). Not marked as used: :meth:`touch` marks the parts a read
        used. O(entries of ``key``)."""
        with self._lock:
            parts = self._parts.get((where, key))
            return [(part, self._entries[(where, key, part)]) for part in parts] if parts else []

    def touch(self, where: Hashable, key: str, parts: Iterable[Part], misses: int = 0) -> None:
        """Mark ``parts`` of ``key`` recently used (those still cached), a hit
        each, and count ``misses`` (the pieces a read had to fetch)."""
        with self._lock:
            for part in parts:
                name = (where, key, part)
                if name in self._entries:
                    self._entries.move_to_end(name)
                    self.hits += 1
            self.misses += misses

    def put_range(self, where: Hashable, key: str, request: ByteRequest, data: Any, version: Any, token: Any,
                  since: int | None = None) -> None:
        """Keep the bytes read for ``request`` of ``key`` (``since`` as for
        :meth:`put`); entries of ``key`` from another read (another token)
        are dropped first: the parts of one key always come from one version of it."""
        self._put(where, key, _part_of(request), data, version, token, since, replace_parts=False)

    # -- invalidation ----------------------------------------------------------
    def invalidate(self, where: Hashable, keys: Iterable[str]) -> None:
        """Drop every entry (whole value and byte ranges) of ``keys``."""
        with self._lock:
            self.epoch += 1
            for key in keys:
                self._drop_key(where, key)

    def invalidate_prefix(self, where: Hashable, prefix: str) -> None:
        """Drop every entry of the keys starting with ``prefix`` (``""``: all at ``where``)."""
        with self._lock:
            self.epoch += 1
            doomed = [k for (w, k) in self._parts if w == where and k.startswith(prefix)]
            for key in doomed:
                self._drop_key(where, key)

    def clear(self) -> None:
        """Drop everything."""
        with self._lock:
            self.epoch += 1
            self._entries.clear()
            self._parts.clear()
            self._held = 0

    # -- internals (the lock held) ---------------------------------------------
    def _get(self, name: tuple[Hashable, str, Part]) -> Cached | None:
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(name)
            self.hits += 1
            return entry

    def _put(self, where: Hashable, key: str, part: Part, value: Any, version: Any, token: Any,
             since: int | None, *, replace_parts: bool) -> None:
        budget = self.max_bytes
        data = value if type(value) is bytes else bytes(memoryview(value).cast("B"))  # its own bytes, no larger buffer
        cost = len(data) + ENTRY_OVERHEAD
        if cost > budget:
            with self._lock:  # too large to keep: what was kept of the key is older than this
                self._drop_key(where, key)
            return
        with self._lock:
            if since is not None and since != self.epoch:
                return
            parts = self._parts.get((where, key))
            if parts and (replace_parts or None in parts or any(
                    self._entries[(where, key, p)].token != token for p in parts)):
                self._drop_key(where, key)
            name = (where, key, part)
            old = self._entries.pop(name, None)
            if old is not None:
                self._held -= len(old.data) + ENTRY_OVERHEAD
            self._entries[name] = Cached(data, version, token)
            self._parts.setdefault((where, key), set()).add(part)
            self._held += cost
            while self._held > budget:
                self._evict_oldest()

    def _evict_oldest(self) -> None:
        (where, key, part), entry = self._entries.popitem(last=False)
        self._held -= len(entry.data) + ENTRY_OVERHEAD
        parts = self._parts[(where, key)]
        parts.discard(part)
        if not parts:
            del self._parts[(where, key)]

    def _drop_key(self, where: Hashable, key: str) -> None:
        parts = self._parts.pop((where, key), None)
        for part in parts or ():
            entry = self._entries.pop((where, key, part))
            self._held -= len(entry.data) + ENTRY_OVERHEAD


_cache = ChunkCache()


def chunk_cache() -> ChunkCache:
    """This process's chunk cache (empty again in a forked child)."""
    return _cache


def _after_fork_in_child() -> None:
    global _cache
    _cache = ChunkCache()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# -- where values live ---------------------------------------------------------------
def _root_of(location: Hashable) -> tuple[Hashable, str]:
    """A store location split into where its data lives and the root path of
    the store in there (``""`` when the location names no path)."""
    if isinstance(location, tuple) and location:
        kind = location[0]
        if kind == "local" and len(location) == 2 and isinstance(location[1], str):
            return ("local",), location[1].rstrip("/") + "/"
        if kind in ("fsspec", "s3", "gcs", "azure") and isinstance(location[-1], str):
            root = location[-1].strip("/")
            return location[:-1], root + "/" if root else ""
    return location, ""


def address(store: Any, key: str) -> tuple[Hashable, str]:
    """Where ``key`` of ``store`` lives, as the cache names it: the store's
    location without its root path, and the key with the root path in front
    (wrappers that rename keys are seen through)."""
    from .wrappers import PrefixStore, WrapperStore

    while isinstance(store, WrapperStore):
        if isinstance(store, PrefixStore):
            key = store._inner_keys([key])[0]
        store = store.store
    where, root = _root_of(store.location)
    return where, root + key


def invalidate(store: Any, keys: Iterable[str]) -> None:
    """Drop the cached values and byte ranges of ``keys`` of ``store``: every
    write through zarrdask calls this, after storing (cheap when the cache is empty)."""
    cache = _cache
    if not len(cache):
        with cache._lock:
            cache.epoch += 1  # a read in flight must not keep what it read
        return
    names: dict[Hashable, list[str]] = {}
    for key in keys:
        where, full = address(store, key)
        names.setdefault(where, []).append(full)
    for where, full_keys in names.items():
        cache.invalidate(where, full_keys)


def invalidate_prefix(store: Any, prefix: str) -> None:
    """Drop the cached entries of every key of ``store`` starting with ``prefix``."""
    where, full = address(store, prefix)
    _cache.invalidate_prefix(where, full)
