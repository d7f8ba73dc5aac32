"""A store over any obstore store: S3, GCS, Azure, HTTP, local files, memory.

obstore (https://developmentseed.org/obstore/, 0.12) binds Rust's
``object_store``; :class:`ObstoreStore` serves zarrdask's store interface
(zarr-specs v3 core "Stores"; :mod:`zarrdask.storage.abc`) over one of its
store objects (``obstore.store.S3Store``, ``GCSStore``, ``AzureStore``,
``HTTPStore``, ``LocalStore``, ``MemoryStore``). Keys are obstore paths
under the obstore store's own prefix.

Every request is one of obstore's blocking calls (``obstore.get``,
``put``, ``head``, ``delete``), made on one of zarrdask's I/O threads (a
batch's requests concurrent, at most the setting ``io_concurrency`` in
flight; a lone request in the calling thread). obstore waits for the answer
with the GIL released, and its own threads never call into Python: a request
crosses from Python to obstore and back once, where its ``..._async`` twins
cross between the caller, an event loop and obstore's threads several times
(docs/performance.md, "How requests are made"):

* ``get_many``: one ``get`` per key; ``iter_many`` (``streaming``):
  the same requests, each value handed over as it arrives;
* ``get_ranges`` and readers: one ranged ``get`` per range (the
  sharding codec has already merged nearby ranges, ``coalesce_gap``); the
  first response's ETag pins the version, as in
  :class:`~zarrdask.storage.conditional.ConditionalReader` (obstore's own
  ``get_ranges`` reports no ETag, and fails on a range past the end);
* ``set_many``: one ``put`` per key; ``delete_many``: one bulk
  ``delete`` (S3 ``DeleteObjects``), per key on a local directory;
* ``list_dir``: ``list_with_delimiter``; ``list`` / ``list_prefix``:
  ``list`` of the directory holding the prefix, filtered by the string prefix.

A missing key reads as ``None`` (also a path below a file); transient
failures (HTTP 5xx and 429, dropped connections, timeouts) are retried per
request (settings ``retries``, ``retry_backoff``; :mod:`zarrdask.storage.retry`),
on top of obstore's own ``retry_config``; any other failure raises a
:class:`~zarrdask.errors.StoreError` naming the key.

What each backend declares (``capabilities``; :mod:`zarrdask.storage.capabilities`):

==============  ===========================================  ========  ========
backend         capabilities                                 writable  listable
==============  ===========================================  ========  ========
S3, GCS, Azure  ``streaming``, ``background_uploads``,        yes       yes
                ``exact_readers``, ``conditional_writes``
HTTP            ``streaming`` (readers are exact when the     no        no
                server sends strong ETags)
local           ``exact_readers``, ``process_locks``         yes       yes
memory          ``exact_readers``, ``conditional_writes``    yes       yes
==============  ===========================================  ========  ========

Exact readers: every range after the first is requested with ``if_match`` on
the first response's ETag (and the object version where the backend reports
one: a versioned bucket keeps serving it after an overwrite); a changed value
raises :class:`~zarrdask.errors.ValueChangedError`. obstore's local files are
replaced by rename, so their ETag (inode, size, modification time) changes
with every write.

Conditional writes (:class:`~zarrdask.storage.capabilities.ConditionalWrites`):
a chunk written in part is read with its ETag and stored with
``put(mode={"e_tag": ...})`` (``mode="create"`` where it was missing); a
chunk another writer changed meanwhile is read and updated again, so
read-modify-writes from several processes or machines lose no update.
obstore's ``LocalStore`` cannot put conditionally (``PutMode::Update`` is not
implemented there); its read-modify-writes hold the locks of zarrdask's own
``LocalStore`` on the same directory (in the process, and across processes
with its ``flock``'ed lock files, which listings leave out).

Pickling (dask on worker processes): obstore's cloud, HTTP and local stores
pickle with their configuration. obstore's ``MemoryStore`` does not pickle;
an :class:`ObstoreStore` over one pickles a snapshot of its values, so the
copy is an independent store, as a dict is in another process.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any, Callable, ContextManager, Hashable, Iterable, Iterator, Mapping, Sequence

from .. import config
from ..errors import StoreError
from .abc import Store, as_buffer, ensure_bytes
from .byte_range import ByteRequest
from .capabilities import (
    BACKGROUND_UPLOADS,
    CONDITIONAL_WRITES,
    EXACT_READERS,
    PROCESS_LOCKS,
    STREAMING,
    BackgroundUploads,
    ConditionalWrites,
    StreamingReads,
)
from .conditional import ConditionalReader
from .files import is_lock
from .keys import validate_key, validate_prefix
from .local import LocalStore
from .locks import HAVE_FILE_LOCKS
from .obstore_requests import (
    REMOTE,
    ObstoreBackend,
    backend_kind,
    backend_location,
    raise_translated,
    translate,
)
from .readers import ValueReader
from .versions import etag_get_if_changed, etag_get_with_versions
from .retry import describe, is_transient, map_retrying, raise_first_failure, retry_call

__all__ = ["ObstoreStore"]

#: an answer of a conditional put: the version changed (or the key appeared)
_CONFLICT = object()
#: values of this size and more are uploaded in parts (S3 takes at most 5 GiB in one PUT)
_MULTIPART_FROM = 4 << 30


def _obstore() -> Any:
    import obstore

    return obstore


def _limit() -> int:
    return max(1, int(config.get("io_concurrency")))


def _or_missing(request: Callable[[], Any]) -> Any:
    """``request()``, ``None`` if the key is missing; other failures raised
    as :func:`~zarrdask.storage.obstore_requests.translate` makes them."""
    try:
        return request()
    except Exception as e:
        if isinstance(translate(e), FileNotFoundError):
            return None
        raise_translated(e)


def _changed_under_us(error: BaseException) -> bool:
    """Whether a conditional put failed because the key holds another version
    (HTTP 412; 409 when another conditional write was under way)."""
    if type(error).__name__ in ("PreconditionError", "AlreadyExistsError"):
        return True
    return getattr(translate(error), "status", None) in (409, 412)


class ObstoreStore(StreamingReads, BackgroundUploads, ConditionalWrites, Store):
    """A store over an obstore store.

    Parameters
    ----------
    obstore_store : obstore.store.S3Store, GCSStore, AzureStore, HTTPStore, LocalStore or MemoryStore
        The store to read and write; kept as :attr:`obstore_store`. Keys are
        paths under its prefix.
    read_only : bool, default False
        Refuse writes with :class:`~zarrdask.errors.ReadOnlyError`. Over
        ``HTTPStore`` the store is always read-only (and cannot be listed).

    Attributes
    ----------
    obstore_store : obstore store
        The wrapped store.
    kind : str
        ``"s3"``, ``"gcs"``, ``"azure"``, ``"http"``, ``"local"`` or ``"memory"``.

    Examples
    --------
    >>> from obstore.store import MemoryStore
    >>> store = ObstoreStore(MemoryStore())
    >>> store.set_many({"a/0": b"x", "a/1": b"yz"})
    >>> store.get_many(["a/1", "a/2"])
    [b'yz', None]
    >>> store.list_dir("a")
    ['0', '1']
    """

    supports_partial_reads = True

    def __init__(self, obstore_store: Any, *, read_only: bool = False) -> None:
        self.kind = backend_kind(obstore_store)
        self.obstore_store = obstore_store
        self.writable = not read_only and self.kind != "http"
        self.listable = self.kind != "http"
        self._location: Hashable | None = None

    @property
    def capabilities(self) -> frozenset[str]:
        """Per backend, see the module documentation."""
        kind = self.kind
        caps = set()
        if kind in REMOTE:
            caps.add(STREAMING)
            if kind != "http":
                caps.add(BACKGROUND_UPLOADS)
        if kind != "http":
            caps.add(EXACT_READERS)
        if kind in ("s3", "gcs", "azure", "memory"):
            caps.add(CONDITIONAL_WRITES)
        if kind == "local" and HAVE_FILE_LOCKS:
            caps.add(PROCESS_LOCKS)
        return frozenset(caps)

    @property
    def location(self) -> Hashable:
        """The bucket (or container), prefix and endpoint of a cloud store; the
        URL of an HTTP store; the real path of a local directory (as zarrdask's
        ``LocalStore`` gives it); the identity of a memory store."""
        if self._location is None:
            self._location = backend_location(self.obstore_store, self.kind)
        return self._location

    def __repr__(self) -> str:
        ro = ", read_only=True" if not self.writable and self.kind != "http" else ""
        return f"ObstoreStore({self.obstore_store!r}{ro})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObstoreStore) and self.location == other.location and self.writable == other.writable

    def __hash__(self) -> int:
        return hash((ObstoreStore, self.location, self.writable))

    def __getstate__(self) -> dict:
        state = {**self.__dict__, "_location": None}  # a directory's real path depends on the machine
        if self.kind == "memory":  # obstore's MemoryStore does not pickle: carry its values
            keys = list(self.list())
            state["obstore_store"] = None
            state["_snapshot"] = dict(zip(keys, self.get_many(keys)))
        return state

    def __setstate__(self, state: dict) -> None:
        snapshot = state.pop("_snapshot", None)
        self.__dict__.update(state)
        if snapshot is not None:
            from obstore.store import MemoryStore

            self.obstore_store = MemoryStore()
            for key, value in snapshot.items():
                _obstore().put(self.obstore_store, key, value)

    # -- requests ----------------------------------------------------------
    def _batch(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        """Run blocking requests concurrently on the I/O threads (one alone in
        the calling thread), each retried after a transient failure; results
        in order, failures in place."""
        return map_retrying(calls, _limit())

    def _retrying(self, call: Callable[[], Any], what: str) -> Any:
        """A blocking obstore call, retried after a transient failure; any
        other failure a ``StoreError`` saying ``what`` could not be done."""
        try:
            return retry_call(call, transient=lambda e: is_transient(translate(e)))
        except Exception as e:
            raise StoreError(f"{self!r}: cannot {what}: {describe(translate(e))}") from e

    def _fetch(self, key: str, view: bool = False) -> tuple[Any, Any]:
        result = _obstore().get(self.obstore_store, key)
        data = result.bytes()
        return result.meta, memoryview(data) if view else bytes(data)

    def _get(self, key: str, view: bool = False) -> Any:
        """The value of ``key``, ``None`` if missing (failures raised, translated);
        ``view``: a read-only view of the buffer obstore received, not a copy."""
        found = _or_missing(partial(self._fetch, key, view))
        return None if found is None else found[1]

    def _get_versioned(self, key: str) -> tuple[bytes | None, dict[str, str] | None]:
        found = _or_missing(partial(self._fetch, key))
        if found is None:
            return None, None
        meta, data = found
        return data, {name: meta[name] for name in ("e_tag", "version") if meta.get(name) is not None}

    def _put(self, key: str, value: Any, mode: Any = None) -> Any:
        """Store ``value``; with a ``mode``, ``_CONFLICT`` if its precondition failed.
        One request per value below ``_MULTIPART_FROM`` (obstore would split
        values above 5 MiB into a multipart upload: four requests or more)."""
        try:
            if mode is None:
                multipart = memoryview(value).nbytes >= _MULTIPART_FROM
                _obstore().put(self.obstore_store, key, value, use_multipart=multipart)
            else:
                _obstore().put(self.obstore_store, key, value, mode=mode, use_multipart=False)
        except Exception as e:
            if mode is not None and _changed_under_us(e):
                return _CONFLICT
            raise_translated(e)
        return None

    def _delete(self, key: str) -> None:
        _or_missing(partial(_obstore().delete, self.obstore_store, key))

    def _delete_all(self, keys: list[str]) -> None:
        try:
            _obstore().delete(self.obstore_store, keys)
        except Exception as e:
            raise_translated(e)

    def _per_key(self, what: str, fetch: Callable[[str], Any], keys: Sequence[str]) -> list[Any]:
        """``fetch(key)`` for every key, concurrently; the first failure raised, naming its key."""
        keys = [validate_key(key) for key in keys]
        if not keys:
            return []
        results = self._batch([partial(fetch, key) for key in keys])
        raise_first_failure(self, what, keys, results)
        return results

    # -- reads -------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return self._per_key("read", self._get, keys)

    def _streamed(self, keys: Sequence[str]) -> list[Any]:
        """As :meth:`StreamingReads._streamed`, each value a read-only
        ``memoryview`` of the buffer obstore received rather than a ``bytes``
        copy of it (the chunk engine decodes it and lets it go). A subclass
        that overrides :meth:`get_many` is served by it."""
        if type(self).get_many is not ObstoreStore.get_many:
            return super()._streamed(keys)
        return self._per_key("read", partial(self._get, view=True), keys)

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        """Byte ranges of one value, concurrently, all from one version of it
        (the first read of an exact reader)."""
        with self.reader(key) as reader:
            return reader.read(ranges)

    def _size(self, key: str) -> int | None:
        meta = _or_missing(partial(_obstore().head, self.obstore_store, key))
        return None if meta is None else int(meta["size"])

    def getsize(self, key: str) -> int | None:
        return self._per_key("look up the size of", self._size, [key])[0]

    def exists(self, key: str) -> bool:
        return self.getsize(key) is not None

    def locked(self, keys: Iterable[str], *, across_processes: bool = True) -> ContextManager[None]:
        """In-process locks keyed by :attr:`location`; over a local directory
        also across processes, with the lock files of zarrdask's own
        ``LocalStore`` (so both kinds of store exclude each other)."""
        if self.kind != "local" or not across_processes or not HAVE_FILE_LOCKS:
            return super().locked(keys, across_processes=across_processes)
        names = sorted({validate_key(key) for key in keys})
        if names:
            self._check_writable(names[0])
        return LocalStore(os.fspath(self.obstore_store.prefix or os.sep)).locked(names)

    def reader(self, key: str) -> ValueReader:
        """An exact reader (conditional requests on the ETag of the first
        response, and its version where the backend has versions); over HTTP
        without strong ETags a verifying one (``exact`` becomes False with
        the first read)."""
        validate_key(key)
        return ConditionalReader(self, key, ObstoreBackend(self.obstore_store, key))

    # -- writes ------------------------------------------------------------
    def _buffer(self, value: Any) -> Any:
        """``value`` as obstore takes it: obstore's ``MemoryStore`` keeps the
        buffer it is given, so it gets an immutable copy; the other backends
        have written the bytes out when the put returns."""
        return ensure_bytes(value) if self.kind == "memory" else as_buffer(value)

    def set(self, key: str, value: bytes) -> None:
        self.set_many({key: value})

    def set_many(self, items: Mapping[str, bytes]) -> None:
        pairs = []
        for key, value in items.items():
            validate_key(key)
            self._check_writable(key)
            pairs.append((key, self._buffer(value)))
        if not pairs:
            return
        results = self._batch([partial(self._put, key, value) for key, value in pairs])
        raise_first_failure(self, "write", [key for key, _ in pairs], results)

    def delete(self, key: str) -> None:
        self.delete_many([key])

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = [validate_key(key) for key in keys]
        for key in keys:
            self._check_writable(key)
        if not keys:
            return
        if self.kind == "local" or len(keys) == 1:  # a local bulk delete stops at a missing file
            results = self._batch([partial(self._delete, key) for key in keys])
            raise_first_failure(self, "delete", keys, results)
            return
        (result,) = self._batch([partial(self._delete_all, keys)])
        if isinstance(result, BaseException):
            shown = ", ".join(repr(k) for k in keys[:5]) + (", ..." if len(keys) > 5 else "")
            raise StoreError(f"{self!r}: cannot delete keys [{shown}] ({len(keys)} keys): "
                             f"{describe(result)}") from result

    def delete_prefix(self, prefix: str) -> None:
        validate_prefix(prefix)
        self._check_writable(prefix)
        self.delete_many(list(self.list_prefix(prefix)))

    # -- versions (the chunk cache's revalidation) ---------------------------
    def get_with_versions(self, keys: Sequence[str]) -> list[tuple[bytes | None, Any]]:
        """Each value with its strong ETag (one ``GET`` each)."""
        keys = [validate_key(key) for key in keys]
        return etag_get_with_versions(self, keys, [ObstoreBackend(self.obstore_store, key) for key in keys])

    def get_if_changed(
        self, keys: Sequence[str], versions: Sequence[Any], *, fetch: bool = True
    ) -> list[tuple[bool, bytes | None, Any]]:
        """One ``GET`` with ``if_none_match`` per key (``NotModifiedError``: unchanged)."""
        keys = [validate_key(key) for key in keys]
        backends = [ObstoreBackend(self.obstore_store, key) for key in keys]
        return etag_get_if_changed(self, keys, backends, versions, fetch)

    # -- conditional writes ------------------------------------------------
    def get_versioned(self, keys: Sequence[str]) -> list[tuple[Any, Any]]:
        """``(value, {"e_tag": ..., "version": ...})`` of each key, ``(None, None)`` if missing."""
        return self._per_key("read", self._get_versioned, keys)

    def set_if(self, items: Mapping[str, tuple[Any, Any]]) -> list[str]:
        """Store each value only if its key still holds the version given
        (``put(mode={"e_tag": ..., "version": ...})``; ``mode="create"`` for
        a version of ``None``); the keys whose version had changed."""
        calls, keys = [], []
        for key, (value, version) in items.items():
            validate_key(key)
            self._check_writable(key)
            mode = "create" if version is None else dict(version)
            calls.append(partial(self._put, key, self._buffer(value), mode))
            keys.append(key)
        if not calls:
            return []
        results = self._batch(calls)
        raise_first_failure(self, "write", keys, results)
        return [key for key, result in zip(keys, results) if result is _CONFLICT]

    # -- listing -----------------------------------------------------------
    def _check_listable(self, what: str) -> None:
        if not self.listable:
            raise StoreError(
                f"{self!r} cannot {what}: HTTP has no directory listing; open hierarchies "
                "over HTTP through their metadata (e.g. consolidated metadata) instead"
            )

    def _paths(self, directory: str) -> list[str]:
        """Every key under ``directory`` (a path, ``""`` for the root)."""
        stream = partial(_obstore().list, self.obstore_store, directory or None, chunk_size=1000)
        found = self._retrying(lambda: stream().collect(), f"list the keys under {directory!r}")
        paths = [meta["path"] for meta in found]
        if self.kind == "local":  # zarrdask's lock files are no keys
            paths = [p for p in paths if not is_lock(p.rsplit("/", 1)[-1])]
        return paths

    def _has_keys(self, directory: str) -> bool:
        """Whether a local directory holds a key (it is walked until one is found)."""

        def first() -> bool:
            for chunk in _obstore().list(self.obstore_store, directory, chunk_size=16):
                if any(not is_lock(meta["path"].rsplit("/", 1)[-1]) for meta in chunk):
                    return True
            return False

        return self._retrying(first, f"list the keys under {directory!r}")

    def list(self) -> Iterator[str]:
        self._check_listable("list keys")
        return iter(self._paths(""))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        self._check_listable(f"list keys under {prefix!r}")
        # obstore lists whole path segments: list the directory holding the
        # prefix, then keep the string prefix ("a" matches "ab/x")
        directory = prefix[: prefix.rfind("/") + 1].rstrip("/")
        return iter([key for key in self._paths(directory) if key.startswith(prefix)])

    def list_dir(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        self._check_listable(f"list the children of {prefix!r}")
        body = prefix.rstrip("/")
        listing = partial(_obstore().list_with_delimiter, self.obstore_store, body or None)
        found = self._retrying(listing, f"list the children of {prefix!r}")
        start = len(body) + 1 if body else 0
        names = {meta["path"][start:] for meta in found["objects"]}
        if self.kind == "local":
            names = {name for name in names if not is_lock(name)}
            # a directory left empty by deletes is listed too: keep those with keys
            names |= {p[start:] for p in found["common_prefixes"] if self._has_keys(p)}
        else:
            names |= {p[start:] for p in found["common_prefixes"]}
        return sorted(name for name in names if name)
