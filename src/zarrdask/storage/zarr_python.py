"""zarr-python 3 stores as zarrdask stores.

:class:`ZarrPythonStore` adapts any store built on zarr-python 3's abstract
store (``zarr.abc.store.Store``): ``MemoryStore``, ``LocalStore``,
``FsspecStore``, ``ZipStore``, ``WrapperStore`` subclasses and third-party
stores on the same interface. :func:`zarr_python_location` finds the store and
path of a zarr-python ``Array``, ``Group`` or ``StorePath``, so that the
public API can open the node such an object stands for.

The zarr-python interface used (``zarr.abc.store.Store``, zarr-python 3.1):

* ``async get(key, prototype, byte_range=None)`` → ``Buffer`` or ``None``,
  with ``RangeByteRequest(start, end)``, ``OffsetByteRequest(offset)`` and
  ``SuffixByteRequest(suffix)``;
* ``async set(key, Buffer)``, ``async delete(key)``, ``async delete_dir(prefix)``,
  ``async exists(key)``, ``async getsize(key)``;
* the async generators ``list()``, ``list_prefix(prefix)``, ``list_dir(prefix)``;
* the flags ``read_only``, ``supports_writes``, ``supports_deletes``,
  ``supports_listing``, ``supports_consolidated_metadata`` and
  ``with_read_only(read_only)``.

Values are read into host memory (``zarr.core.buffer.cpu``) and returned as
``bytes``; a value read into a ``bytes`` object by the store is returned
without a copy.

Concurrency
-----------
zarrdask's core is synchronous and hands a store everything an operation needs
at once (``ARCHITECTURE.md``, "Concurrency"). Each batched call of the adapter
— ``get_many``, ``get_ranges``, ``set_many``, ``delete_many`` — is *one*
coroutine that issues every request of the batch with ``asyncio.gather``
(at most ``concurrency`` in flight, by default zarr-python's
``async.concurrency`` setting) and is run to completion on zarr-python's own
I/O event loop with ``zarr.core.sync.sync``, which blocks the calling thread.
Stores bound to that loop (aiohttp sessions, s3fs clients) therefore keep
working, and so does a caller whose own thread runs an event loop (Jupyter,
pytest-asyncio): the coroutine runs on zarr-python's loop thread, not the
caller's. Only a call made *on* zarr-python's loop thread cannot wait for that
loop; it raises :class:`~zarrdask.errors.StoreError`.

Transient failures of single requests (HTTP 5xx and 429, dropped
connections, timeouts: :mod:`zarrdask.storage.retry`) are retried inside the
batch; a batch that fails as a whole (zarr-python's ``async.timeout``) is run
again. :meth:`ZarrPythonStore.reader` is exact over zarr-python's
``LocalStore`` and verifying otherwise; in-process locks are keyed by the
zarr-python store's ``str()`` (its URL).

Where zarr-python stores differ from zarrdask's store contract, the adapter
keeps the contract:

* byte ranges are clipped as HTTP ranges are: zero-length requests are answered
  without a request, and a range the store refuses (or a suffix answered with
  fewer bytes than asked, which zarr-python's ``MemoryStore`` gets wrong for
  suffixes between one and two times the value's length) is read again once
  the value's size is known;
* a "directory" is not a key: ``exists`` reads the first byte of the value
  rather than trusting ``exists``/``getsize`` of file-system stores, which
  report directories;
* ``list_prefix`` is a plain string prefix (``"a"`` matches ``"ab/x"``), and
  ``list_dir`` of a key is empty.

zarr-python is not a dependency of zarrdask: it is imported only by the
functions of this module, and only once a zarr-python object is at hand.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any, Awaitable, Callable, Hashable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from ..errors import StoreError, ZarrdaskError
from .abc import Store, ensure_bytes
from .byte_range import ByteRequest, OffsetRequest, RangeRequest, SuffixRequest, resolve
from .capabilities import BACKGROUND_UPLOADS, STREAMING, BackgroundUploads, StreamingReads
from .keys import validate_key, validate_prefix
from .readers import ValueReader
from .retry import RetriesExhausted, describe, gather_retrying, key_failure, raise_first_failure, retry_call

__all__ = ["ZarrPythonStore", "ZarrPythonLocation", "is_zarr_python_store", "zarr_python_location",
           "zarr_python_dict_store"]


def is_zarr_python_store(x: Any) -> bool:
    """Whether ``x`` is a zarr-python 3 store (``zarr.abc.store.Store``).

    zarr-python is not imported: an object can only be a zarr-python store if
    zarr-python's store module is already loaded.
    """
    module = sys.modules.get("zarr.abc.store")
    return module is not None and isinstance(x, module.Store)


def zarr_python_dict_store(x: Any, *, read_only: bool) -> Any:
    """A zarr-python ``MemoryStore`` over ``x`` when ``x`` is a ``dict`` that
    zarr-python has written into (its values are zarr-python ``Buffer`` s, as
    zarr-python keeps them for a dict given as a store), else ``None``."""
    module = sys.modules.get("zarr.core.buffer")
    if module is None or not isinstance(x, dict) or not x:
        return None
    if not isinstance(next(iter(x.values())), module.Buffer):
        return None
    from zarr.storage import MemoryStore

    return MemoryStore(x, read_only=read_only)


class ZarrPythonLocation(NamedTuple):
    """Where a zarr-python object lives: its store, its path in it, and
    ``"array"``, ``"group"`` or ``None`` (a ``StorePath``)."""

    store: Any
    path: str
    node_type: str | None


def zarr_python_location(x: Any) -> ZarrPythonLocation | None:
    """The store and path of a zarr-python ``Array``, ``Group`` (or their async
    forms) or ``StorePath``; ``None`` for anything else.

    Examples
    --------
    >>> import zarr
    >>> g = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    >>> a = g.create_array("x", shape=(2,), dtype="i1")
    >>> loc = zarr_python_location(a)
    >>> loc.path, loc.node_type
    ('x', 'array')
    >>> zarr_python_location({}) is None
    True
    """
    if "zarr" not in sys.modules:
        return None
    import zarr
    from zarr.storage import StorePath

    if isinstance(x, (zarr.Array, zarr.AsyncArray)):
        node_type: str | None = "array"
    elif isinstance(x, (zarr.Group, zarr.AsyncGroup)):
        node_type = "group"
    elif isinstance(x, StorePath):
        return ZarrPythonLocation(x.store, x.path, None)
    else:
        return None
    where = x.store_path
    return ZarrPythonLocation(where.store, where.path, node_type)


_ZARR: SimpleNamespace | None = None


def _zarr() -> SimpleNamespace:
    """The parts of zarr-python the adapter uses (imported on first use)."""
    global _ZARR
    if _ZARR is None:
        import zarr
        from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
        from zarr.core.buffer import cpu
        from zarr.core.sync import SyncError, sync

        _ZARR = SimpleNamespace(
            config=zarr.config,
            sync=sync,
            SyncError=SyncError,
            Buffer=cpu.Buffer,
            prototype=cpu.buffer_prototype,
            Range=RangeByteRequest,
            Offset=OffsetByteRequest,
            Suffix=SuffixByteRequest,
        )
    return _ZARR


def _to_bytes(buffer: Any) -> bytes:
    """The bytes of a zarr-python host buffer; no copy when it wraps a ``bytes``."""
    array = buffer.as_numpy_array()
    base = array.base
    if type(base) is bytes and len(base) == array.nbytes:
        return base
    return array.tobytes()


def _zarr_request(request: ByteRequest, key: str) -> Any:
    """zarr-python's form of a byte request; ``None`` for one that asks for no bytes."""
    z = _zarr()
    if isinstance(request, RangeRequest):
        return z.Range(request.offset, request.offset + request.length) if request.length else None
    if isinstance(request, OffsetRequest):
        return z.Offset(request.offset)
    if isinstance(request, SuffixRequest):
        return z.Suffix(request.length) if request.length else None
    raise TypeError(f"not a byte request for key {key!r}: {request!r}")


async def _collect(listing: Callable[..., Any], *args: Any) -> list[str]:
    return [key async for key in listing(*args)]


class ZarrPythonStore(StreamingReads, BackgroundUploads, Store):
    """A zarrdask store over a zarr-python 3 store.

    Parameters
    ----------
    zarr_store : zarr.abc.store.Store
        The store to adapt; kept as :attr:`zarr_store`.
    read_only : bool, default False
        A read-only view: the zarr-python store's ``with_read_only(True)``
        where it has one, and writes refused with
        :class:`~zarrdask.errors.ReadOnlyError` in any case. A store that is
        itself read-only (or does not support writes) is never writable.
    concurrency : int, optional
        Requests of one batch in flight at once; by default zarr-python's
        ``async.concurrency`` setting at the time of the call.

    Attributes
    ----------
    zarr_store : zarr.abc.store.Store
        The adapted store.
    writable, listable, supports_partial_reads : bool
        From the zarr-python store: not ``read_only`` and ``supports_writes``;
        ``supports_listing``; ``supports_partial_reads`` if the store has that
        attribute, else True (every zarr-python store takes byte ranges).
    capabilities : frozenset of str
        ``streaming`` and ``background_uploads`` over zarr-python's
        ``FsspecStore`` and ``ObjectStore`` (requests wait on a network);
        none otherwise.

    Notes
    -----
    Pickles the zarr-python store (dask ships stores to workers); the copy of
    a zarr-python ``MemoryStore`` is an independent snapshot, as it is in
    another process.

    Examples
    --------
    >>> import zarr
    >>> store = ZarrPythonStore(zarr.storage.MemoryStore())
    >>> store.set_many({"a/0": b"x", "a/1": b"yz"})
    >>> store.get_many(["a/1", "a/2"])
    [b'yz', None]
    >>> store.list_dir("a")
    ['0', '1']
    """

    def __init__(self, zarr_store: Any, *, read_only: bool = False, concurrency: int | None = None) -> None:
        if not is_zarr_python_store(zarr_store):
            raise TypeError(
                f"ZarrPythonStore adapts a zarr-python store (zarr.abc.store.Store), "
                f"got {type(zarr_store).__module__}.{type(zarr_store).__qualname__}"
            )
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, found {concurrency!r}")
        if read_only and not zarr_store.read_only:
            try:
                zarr_store = zarr_store.with_read_only(True)
            except NotImplementedError:
                pass  # the adapter refuses the writes itself
        self.zarr_store = zarr_store
        self.concurrency = concurrency
        self.writable = bool(not read_only and not zarr_store.read_only and zarr_store.supports_writes)
        self.listable = bool(zarr_store.supports_listing)
        self.supports_partial_reads = bool(getattr(zarr_store, "supports_partial_reads", True))
        # zarr-python's stores over fsspec or obstore wait on a network
        self._remote = type(zarr_store).__name__ in ("FsspecStore", "ObjectStore")

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset({STREAMING, BACKGROUND_UPLOADS}) if self._remote else frozenset()

    @property
    def supports_consolidated_metadata(self) -> bool:
        """The zarr-python store's ``supports_consolidated_metadata`` (True if it has none).

        False says the store keeps its own consolidated view of the hierarchy,
        so consolidated metadata must be neither written nor required.
        """
        return bool(getattr(self.zarr_store, "supports_consolidated_metadata", True))

    def __repr__(self) -> str:
        ro = ", read_only=True" if not self.writable else ""
        return f"ZarrPythonStore({self.zarr_store!r}{ro})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ZarrPythonStore)
            and self.writable == other.writable
            and self.zarr_store == other.zarr_store
        )

    def __hash__(self) -> int:
        # zarr-python stores define __eq__ without __hash__
        return hash((ZarrPythonStore, type(self.zarr_store), self.writable))

    # -- running coroutines --------------------------------------------------
    def _run(self, make: Callable[[], Awaitable[Any]], what: str) -> Any:
        """Run the coroutine ``make()`` on zarr-python's I/O loop and wait for
        it, again (a new one) after a transient failure of the whole call; a
        failure that is not already a zarrdask error becomes a ``StoreError``
        saying ``what`` could not be done."""
        z = _zarr()

        def once() -> Any:
            coro = make()
            try:
                return z.sync(coro, timeout=z.config.get("async.timeout"))
            except z.SyncError as e:
                coro.close()  # type: ignore[attr-defined]
                raise StoreError(
                    f"{self!r}: cannot {what} from zarr-python's own event loop thread: zarrdask's "
                    "store calls block until zarr-python's loop has run them; call from another "
                    "thread (e.g. `await asyncio.to_thread(...)`)"
                ) from e

        try:
            return retry_call(once)
        except ZarrdaskError as e:
            if isinstance(e, RetriesExhausted):
                raise StoreError(f"{self!r}: cannot {what}: {describe(e)}") from e
            raise
        except Exception as e:  # includes zarr-python's async.timeout expiring
            raise StoreError(f"{self!r}: cannot {what}: {describe(e)}") from e

    async def _gather(self, call: Callable[..., Awaitable[Any]], args: Sequence[tuple]) -> list[Any]:
        """``call(*a)`` for every ``a`` of ``args``, concurrently (bounded in
        flight), each retried after a transient failure (``retries``,
        ``retry_backoff``); results in order, failures returned in place (a
        :class:`~zarrdask.storage.retry.RetriesExhausted` for a transient
        failure that outlasted the retries)."""
        limit = self.concurrency or int(_zarr().config.get("async.concurrency") or len(args) or 1)
        return await gather_retrying([lambda a=a: call(*a) for a in args], limit)

    def _error(self, what: str, key: str, exc: BaseException) -> StoreError:
        return key_failure(self, what, key, exc)

    def _raise_failed(self, what: str, keys: Sequence[str], results: Sequence[Any]) -> None:
        raise_first_failure(self, what, keys, results)

    # -- reads -------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        keys = [validate_key(key) for key in keys]
        if not keys:
            return []
        prototype = _zarr().prototype
        results = self._run(
            lambda: self._gather(self.zarr_store.get, [(key, prototype) for key in keys]),
            f"read {len(keys)} keys",
        )
        self._raise_failed("read", keys, results)
        return [None if result is None else _to_bytes(result) for result in results]

    async def _exists(self, key: str) -> bool:
        """Whether ``key`` holds a value: its first byte can be read. (File-system
        stores' ``exists`` and ``getsize`` also answer for directories.)"""
        try:
            found = await self.zarr_store.get(key, _zarr().prototype, _zarr().Range(0, 1))
        except Exception:  # a store that refuses a range of an empty value
            return bool(await self.zarr_store.exists(key))
        return found is not None

    async def _size(self, key: str) -> int | None:
        import asyncio

        found, size = await asyncio.gather(
            self._exists(key), self.zarr_store.getsize(key), return_exceptions=True
        )
        if isinstance(found, BaseException):
            raise self._error("look up", key, found)
        if not found or isinstance(size, FileNotFoundError):
            return None
        if isinstance(size, BaseException):
            raise self._error("look up the size of", key, size)
        return int(size)

    def exists(self, key: str) -> bool:
        validate_key(key)
        return self._run(lambda: self._exists(key), f"look up key {key!r}")

    def getsize(self, key: str) -> int | None:
        validate_key(key)
        return self._run(lambda: self._size(key), f"look up the size of key {key!r}")

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        validate_key(key)
        ranges = list(ranges)
        out: list[bytes | None] = [None] * len(ranges)
        todo = []  # (index, zarr-python request) of the ranges that ask for bytes
        for i, request in enumerate(ranges):
            zarr_request = _zarr_request(request, key)
            if zarr_request is None:
                out[i] = b""
            else:
                todo.append((i, zarr_request))
        return self._run(
            lambda: self._get_ranges(key, ranges, list(out), todo), f"read {len(ranges)} ranges of key {key!r}"
        )

    async def _get_ranges(
        self, key: str, ranges: list[ByteRequest], out: list[bytes | None], todo: list[tuple[int, Any]]
    ) -> list[bytes] | None:
        prototype = _zarr().prototype
        if not todo:  # nothing to read: the answer only depends on the key existing
            return out if await self._exists(key) else None  # type: ignore[return-value]
        results = await self._gather(self.zarr_store.get, [(key, prototype, r) for _, r in todo])
        again = []
        for (i, _), result in zip(todo, results):
            if result is None:
                return None
            request = ranges[i]
            if isinstance(result, RetriesExhausted):
                raise self._error(f"read {request} of", key, result)
            if isinstance(result, BaseException):
                again.append(i)  # e.g. a range past the end that the store refuses
                continue
            data = _to_bytes(result)
            if isinstance(request, SuffixRequest) and len(data) < request.length:
                again.append(i)  # the value is shorter than the suffix: all of it, checked below
                continue
            out[i] = data
        if again:
            size = await self._size(key)
            if size is None:
                return None
            refetch = []
            for i in again:
                start, stop = resolve(ranges[i], size)
                if stop > start:
                    refetch.append((i, _zarr().Range(start, stop)))
                else:
                    out[i] = b""
            results = await self._gather(self.zarr_store.get, [(key, prototype, r) for _, r in refetch])
            for (i, _), result in zip(refetch, results):
                if result is None:
                    return None
                if isinstance(result, BaseException):
                    raise self._error(f"read {ranges[i]} of", key, result)
                out[i] = _to_bytes(result)
        return out  # type: ignore[return-value]

    def reader(self, key: str) -> ValueReader:
        """Over zarr-python's ``LocalStore`` (which writes by rename) the exact
        reader of a zarrdask ``LocalStore`` on the same root; otherwise the
        verifying default (zarr-python's store interface has neither versions
        nor conditional reads)."""
        validate_key(key)
        if type(self.zarr_store).__module__.startswith("zarr.storage") and type(self.zarr_store).__name__ == "LocalStore":
            from .local import LocalStore

            # zarr-python follows every link: so does this reader
            return LocalStore(self.zarr_store.root, read_only=True, outside_links="read").reader(key)
        return super().reader(key)

    @property
    def location(self) -> Hashable:
        # zarr-python stores name their data in str(): "file:///root", "memory://<id of the dict>", ...
        return ("zarr-python", type(self.zarr_store).__qualname__, str(self.zarr_store))

    # -- writes ------------------------------------------------------------
    def set(self, key: str, value: bytes) -> None:
        self.set_many({key: value})

    def set_many(self, items: Mapping[str, bytes]) -> None:
        if not items:
            return
        buffer = _zarr().Buffer
        pairs = []
        for key, value in items.items():
            validate_key(key)
            self._check_writable(key)
            pairs.append((key, buffer.from_bytes(ensure_bytes(value))))
        results = self._run(lambda: self._gather(self.zarr_store.set, pairs), f"write {len(pairs)} keys")
        self._raise_failed("write", [key for key, _ in pairs], results)

    def _check_deletable(self, key: str) -> None:
        self._check_writable(key)
        if not self.zarr_store.supports_deletes:
            raise StoreError(
                f"{self!r}: cannot delete key {key!r}: the zarr-python store does not support deletes"
            )

    def delete(self, key: str) -> None:
        self.delete_many([key])

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = [validate_key(key) for key in keys]
        for key in keys:
            self._check_deletable(key)
        if not keys:
            return
        results = self._run(lambda: self._gather(self.zarr_store.delete, [(key,) for key in keys]), f"delete {len(keys)} keys")
        self._raise_failed("delete", keys, results)

    def delete_prefix(self, prefix: str) -> None:
        validate_prefix(prefix)
        self._check_deletable(prefix)
        if not prefix.endswith("/"):
            # a string prefix, or "" (where delete_dir may remove the root itself)
            self.delete_many(list(self.list_prefix(prefix)))
            return
        self._check_listable(f"delete the keys under {prefix!r}")
        self._run(lambda: self.zarr_store.delete_dir(prefix), f"delete the keys under {prefix!r}")

    # -- listing -----------------------------------------------------------
    def _check_listable(self, what: str) -> None:
        if not self.listable:
            raise StoreError(f"{self!r}: cannot {what}: the zarr-python store does not support listing")

    def _list(self, what: str, listing: Callable[..., Any], *args: Any) -> list[str]:
        self._check_listable(what)
        return self._run(lambda: _collect(listing, *args), what)

    def list(self) -> Iterator[str]:
        return iter(self._list("list the keys", self.zarr_store.list))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        # zarr-python's file-system stores list a *directory*: ask for the one
        # holding the prefix, then keep the string prefix ("a" matches "ab/x")
        directory = prefix[: prefix.rfind("/") + 1]
        keys = self._list(f"list the keys under {prefix!r}", self.zarr_store.list_prefix, directory)
        return iter([key for key in keys if key.startswith(prefix)])

    def list_dir(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        body = prefix.rstrip("/")
        found = self._list(f"list the children of {prefix!r}", self.zarr_store.list_dir, body)
        names = sorted({n.rstrip("/") for n in found if n.rstrip("/") and "/" not in n.rstrip("/")})
        if body and names == [body.rsplit("/", 1)[-1]] and self.exists(body):
            # file-system stores list a key as its own only child: a key has
            # none, unless (in a mapping) keys also continue below it
            return super().list_dir(prefix)
        return names

    # -- lifecycle ---------------------------------------------------------
    def close(self) -> None:
        """Close the zarr-python store."""
        self.zarr_store.close()

    def with_read_only(self) -> "ZarrPythonStore":
        """A read-only view, over the zarr-python store's ``with_read_only(True)``
        where it has one."""
        if not self.writable:
            return self
        return ZarrPythonStore(self.zarr_store, read_only=True, concurrency=self.concurrency)

