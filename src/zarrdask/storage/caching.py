"""A store that reads through the process's chunk cache: :class:`CachingStore`.

The chunk engine reads an array opened with ``cache=True`` (or
``"revalidate"``) through a :class:`CachingStore` over its store: whole
values (``get_many``, streamed ``iter_many``) and byte ranges (a shard's
index and inner chunks, read through :meth:`CachingStore.reader`) are served
from the :class:`~zarrdask.storage.cache.ChunkCache` where it holds them,
and only the rest is fetched — in one batch, as without the cache. Writes and
deletes through it drop the entries of the keys they change before they
return (as every write of the chunk engine does for any store).

Modes
-----
``True``
    A cached value is served without asking the store: a second read of the
    same data costs no request. Values written by *other processes* are not
    seen until the entry leaves the cache (or :func:`~zarrdask.storage.cache.chunk_cache`
    ``().clear()``).
``"revalidate"``
    A cached value is served after the store confirmed that its version is
    still current (:mod:`zarrdask.storage.versions`: a ``stat`` on local
    files, a ``GET`` with ``If-None-Match`` answered ``304`` on S3 and HTTP,
    one per value or shard); a changed value is read anew. Stores without
    versions read every value again.

Byte ranges of one value kept in the cache always come from one version of
it (entries of a key carry the version, or the read, they came from). A
range asked for is served from the cached ranges that cover parts of it, and
only the spans none covers are fetched — in one batch, merged where they are
at most ``coalesce_gap`` apart — then kept too (:mod:`zarrdask.storage.pieces`):
a later, overlapping window of a sharded array, whose coalesced ranges span
differently, fetches only what no earlier window read. Cached pieces are
joined to fetched ones only when the reader that fetched them saw the
pieces' version; otherwise the key's entries are dropped and the read is
made anew, or, for a multi-step read whose earlier steps were served from
the cache, started again (:class:`~zarrdask.errors.ValueChangedError`,
which the engine's consistent reads handle). Ranges are cached only from
exact readers (``docs/guarantees.md``).
"""

from __future__ import annotations

from typing import Any, Hashable, Iterator, Mapping, Sequence

from .. import config
from .abc import Store
from .byte_range import ByteRequest
from .cache import ChunkCache, address, chunk_cache, invalidate, invalidate_prefix
from .capabilities import StreamingReads
from .keys import validate_key
from .pieces import Plan, plan
from .readers import ValueReader
from .wrappers import WrapperStore

__all__ = ["CachingStore", "CachingReader", "caching"]

#: the modes of a :class:`CachingStore`
MODES = (True, "revalidate")


class CachingStore(WrapperStore):
    """``store`` read through the process's chunk cache (see the module documentation).

    Parameters
    ----------
    store : Store
        The wrapped store.
    mode : True or "revalidate"
        Serve cached values as they are, or after the store confirmed them.
    cache : ChunkCache, optional
        The cache; by default the process's (:func:`~zarrdask.storage.cache.chunk_cache`,
        also in a dask worker process the store is sent to).
    """

    def __init__(self, store: Store, mode: bool | str = True, cache: ChunkCache | None = None) -> None:
        super().__init__(store)
        if mode not in MODES:
            raise ValueError(f"CachingStore: mode must be True or 'revalidate', found {mode!r}")
        self.mode = mode
        self._cache = cache

    def __repr__(self) -> str:
        return f"CachingStore({self.store!r}, mode={self.mode!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"store": self.store, "mode": self.mode, "_cache": None}  # another process: its own cache

    @property
    def cache(self) -> ChunkCache:
        return self._cache if self._cache is not None else chunk_cache()

    @property
    def revalidate(self) -> bool:
        return self.mode == "revalidate"

    def _where(self, key: str) -> tuple[Hashable, str]:
        return address(self.store, validate_key(key))

    # -- whole values --------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = list(keys)
        cache = self.cache
        names = [self._where(key) for key in keys]
        found = [cache.get(*name) for name in names]
        out: list[Any] = [None if entry is None else entry.data for entry in found]
        if self.revalidate:  # every key asked about in one batch: cached ones by version, the others read
            since = cache.epoch
            versions = [None if entry is None else entry.version for entry in found]
            for i, (changed, value, version) in enumerate(self.store.get_if_changed(keys, versions)):
                if changed:
                    out[i] = value
                    self._keep(names[i], value, version, since)
            return out
        self._fetch(keys, names, [i for i, entry in enumerate(found) if entry is None], out)
        return out

    def _fetch(self, keys: list[str], names: list[tuple[Hashable, str]], todo: list[int], out: list[Any]) -> None:
        """Fetch ``keys[i]`` for ``i`` in ``todo`` in one batch into ``out``, and keep them."""
        if not todo:
            return
        since = self.cache.epoch
        for i, value in zip(todo, self.store.get_many([keys[i] for i in todo])):
            out[i] = value
            self._keep(names[i], value, None, since)

    def _keep(self, name: tuple[Hashable, str], value: Any, version: Any, since: int) -> None:
        if value is None:
            self.cache.invalidate(name[0], [name[1]])  # missing now: nothing of it may be served
        else:
            self.cache.put(name[0], name[1], value, version, since)

    def get(self, key: str) -> bytes | None:
        return self.get_many([key])[0]

    def iter_many(self, keys: Sequence[str], limit: int | None = None) -> Iterator[tuple[int, bytes | None]]:
        """Cached values first, then the others as they arrive (the wrapped
        store's streamed reads); revalidating: one batch, as :meth:`get_many`."""
        keys = [validate_key(key) for key in keys]
        if self.revalidate:
            yield from enumerate(self.get_many(keys))
            return
        cache = self.cache
        names = [self._where(key) for key in keys]
        todo = []
        for i, name in enumerate(names):
            entry = cache.get(*name)
            if entry is None:
                todo.append(i)
            else:
                yield i, entry.data
        if not todo:
            return
        since = cache.epoch
        missing = [keys[i] for i in todo]
        stream = self.store.iter_many(missing, limit) if isinstance(self.store, StreamingReads) else \
            enumerate(self.store.get_many(missing))
        for j, value in stream:
            i = todo[j]
            self._keep(names[i], value, None, since)
            yield i, value

    def reader(self, key: str) -> ValueReader:
        return CachingReader(self, validate_key(key))

    # -- writes: the wrapped store's, then the keys' entries dropped ------------
    def set(self, key: str, value: bytes) -> None:
        super().set(key, value)
        invalidate(self.store, [key])

    def set_many(self, items: Mapping[str, bytes]) -> None:
        super().set_many(items)
        invalidate(self.store, list(items))

    def delete(self, key: str) -> None:
        super().delete(key)
        invalidate(self.store, [key])

    def delete_many(self, keys: Any) -> None:
        keys = list(keys)
        super().delete_many(keys)
        invalidate(self.store, keys)

    def delete_prefix(self, prefix: str) -> None:
        super().delete_prefix(prefix)
        invalidate_prefix(self.store, prefix)

    def set_if(self, items: Mapping[str, tuple[Any, Any]]) -> list[str]:
        conflicts = super().set_if(items)
        invalidate(self.store, list(items))
        return conflicts


class CachingReader(ValueReader):
    """A reader of one key through the chunk cache: byte ranges served from
    cached entries of one version, the rest through the wrapped store's
    reader (whose ranges are then kept, where that reader is exact)."""

    def __init__(self, store: CachingStore, key: str) -> None:
        super().__init__(store, key)
        self._caching = store
        self._name = store._where(key)
        self._inner: ValueReader | None = None
        self._token: Any = None

    @property  # type: ignore[override]
    def exact(self) -> bool:
        """Served from one version: cached ranges of one version, or an exact wrapped reader."""
        return True if self._inner is None else self._inner.exact

    @property  # type: ignore[override]
    def version(self) -> Any:
        return self._token if self._inner is None else self._inner.version

    def _plan(self, ranges: list[ByteRequest], token: Any = ...) -> tuple[Plan, Any]:
        """What of ``ranges`` the cached pieces of the key cover (those of
        ``token``, if given), what is left to fetch, and one of the pieces'
        entries (their token and version; ``None``: no pieces)."""
        held = self._caching.cache.ranges_of(*self._name)
        if held and token is not ... and held[0][1].token != token:
            held = []  # the key's entries are of another read now: nothing of them joins this one
        return plan(ranges, held, int(config.get("coalesce_gap"))), held[0][1] if held else None

    def _answer(self, step: Plan, fetched: list[Any] | None, since: int) -> list[bytes]:
        """The bytes of the ranges planned, the cached pieces used marked, the fetched ones kept."""
        cache = self._caching.cache
        out, used, kept = step.answer(fetched or [])
        cache.touch(*self._name, used, misses=len(kept))
        for request, data in kept:
            cache.put_range(*self._name, request, data, self._inner.version, self._token, since)  # type: ignore[union-attr]
        return out

    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        if not ranges:
            return self._read_inner(ranges)
        step, held = self._plan(ranges)
        if not step.covered:
            return self._read_inner(ranges)
        if not step.fetch:  # every range cached
            if self._caching.revalidate:
                current = held.version is not None and not self._caching.store.get_if_changed(
                    [self.key], [held.version], fetch=False)[0][0]
                if not current:
                    self._caching.cache.invalidate(self._name[0], [self._name[1]])
                    return self._read_inner(ranges)
            self._token = held.token
            return self._answer(step, None, 0)
        if held.version is None:  # pieces of a reader without versions: cannot be joined to a new read
            return self._read_inner(ranges)
        since = self._caching.cache.epoch
        self._inner = self._caching.store.reader(self.key)
        fetched = self._inner.read(step.fetch)  # the gaps; their reader's version says if the pieces join them
        if fetched is None:
            self._caching.cache.invalidate(self._name[0], [self._name[1]])
            return None
        if not self._inner.exact or self._inner.version != held.token:
            self._caching.cache.invalidate(self._name[0], [self._name[1]])  # another version: read it all anew
            return self._read_inner(ranges)
        self._token = held.token
        return self._answer(step, fetched, since)

    def _read_inner(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        """Read through the wrapped store's reader (opened on first use) and keep the ranges."""
        cache = self._caching.cache
        since = cache.epoch
        if self._inner is None:
            self._inner = self._caching.store.reader(self.key)
        found = self._inner.read(ranges)
        if found is None or not self._inner.exact:
            return found
        if self._token is None:
            version = self._inner.version
            self._token = version if version is not None else object()
        for request, data in zip(ranges, found):
            cache.put_range(*self._name, request, data, self._inner.version, self._token, since)
        return found

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        if self._inner is not None and not self._inner.exact:  # nothing cached joins a verifying read
            found = self._inner.read(ranges)
            if found is None:
                raise self._changed("it has been deleted")
            return found
        step, _ = self._plan(ranges, self._token)
        if not step.fetch:
            return self._answer(step, None, 0)
        since = self._caching.cache.epoch
        if self._inner is None:  # the first read came from the cache
            self._inner = self._caching.store.reader(self.key)
            fetched = self._inner.read(step.fetch)
            version = self._inner.version
            if fetched is None or version is None or version != self._token:
                self._caching.cache.invalidate(self._name[0], [self._name[1]])
                raise self._changed("the cached byte ranges are of another version than the value stored now")
            return self._answer(step, fetched, since)
        fetched = self._inner.read(step.fetch)  # the reader's version: the one of the pieces (its token)
        if fetched is None:
            raise self._changed("it has been deleted")
        return self._answer(step, fetched, since)

    def _same(self) -> bool:
        return True if self._inner is None else self._inner.unchanged()

    def _still_missing(self) -> bool:
        return True if self._inner is None else self._inner.unchanged()

    def _release(self) -> None:
        if self._inner is not None:
            self._inner.close()


def caching(store: Store, mode: Any) -> Store:
    """``store`` read through the chunk cache in ``mode`` (``False``: ``store``
    itself), unless the cache's budget is ``0``."""
    if mode is False or mode is None or chunk_cache().max_bytes <= 0:
        return store
    if isinstance(store, CachingStore) and store.mode == mode:
        return store
    return CachingStore(store, mode)
