"""A store over any fsspec file system: S3, GCS, Azure, HTTP(S), memory, ...

Keys map onto paths under a root (zarr-specs v3 "File system store", "Key
translation": ``<root>/<key>``). Reads are batched so that asynchronous file
systems fetch them concurrently (see ``ARCHITECTURE.md``, "Concurrency"):

* ``get_many`` issues one ``fs.cat(paths, on_error="return")`` call;
* ``get_ranges`` issues one ``fs.cat_ranges(paths, starts, ends,
  on_error="return")`` call for every range of a value; a suffix request
  becomes a negative start (an HTTP ``Range: bytes=-n``), falling back to a
  single size lookup when the file system refuses a range;
* ``set_many`` issues one ``fs.pipe({path: value})`` call.

A missing key (``FileNotFoundError`` and friends) reads as ``None``; any other
failure raises :class:`~zarrdask.errors.StoreError` naming the key.

HTTP(S) is read-only and cannot be listed: there is no directory listing in
HTTP, so zarr hierarchies served over HTTP are read through their metadata
(consolidated metadata, or known paths).

Transient failures — HTTP 5xx and 429, S3 throttling, dropped or reset
connections, timeouts — are retried (settings ``retries``, ``retry_backoff``;
:mod:`zarrdask.storage.retry`): in a batch only the requests that failed, a
write or listing as a whole. This is on top of the file system's own retries
(s3fs retries connection errors itself, botocore 5xx answers per its
``retries`` config). After the last attempt a ``StoreError`` names the key,
the attempts and the last error. A write returns only once the file system
reported the object stored.

:meth:`FsspecStore.reader` is exact on HTTP(S) and S3 (conditional range
requests on the ETag of the first response, :mod:`zarrdask.storage.conditional`)
and verifying elsewhere. In-process locks are keyed by protocol, endpoint and
path; there are no cross-process locks on remote stores.

No asyncio here: fsspec runs its own event loop thread for asynchronous file
systems and exposes blocking methods.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Sequence, TypeVar

import fsspec

from ..errors import StoreError
from .abc import Store, ensure_bytes
from .byte_range import ByteRequest, OffsetRequest, RangeRequest, SuffixRequest, resolve
from .capabilities import BACKGROUND_UPLOADS, STREAMING, BackgroundUploads, StreamingReads
from .conditional import ConditionalReader, backend_for
from .keys import validate_key, validate_prefix
from .readers import ValueReader
from .versions import etag_get_if_changed, etag_get_with_versions
from .retry import RetriesExhausted, describe, key_failure, retry_batch, retry_call

T = TypeVar("T")

__all__ = ["FsspecStore", "pooled_options", "waits_on_network"]

#: exceptions a file system raises for a key that does not exist
_MISSING = (FileNotFoundError, IsADirectoryError, NotADirectoryError)
_HTTP = frozenset({"http", "https"})


def _has_magic(path: str) -> bool:
    """Whether fsspec would treat ``path`` as a glob pattern."""
    return "*" in path or "?" in path or "[" in path


def _whole_read_kwargs(fs: Any) -> dict[str, Any]:
    """Extra ``cat_file`` arguments for whole-value reads.

    s3fs issues a HEAD request before every whole-object GET to decide whether
    to split the download into parts (``max_concurrency > 1``); zarr values
    are small, so ask for one plain GET instead.
    """
    cat_file = getattr(type(fs), "_cat_file", None)
    try:
        params = inspect.signature(cat_file).parameters if cat_file is not None else {}
    except (TypeError, ValueError):
        return {}
    return {"max_concurrency": 1} if "max_concurrency" in params else {}


_IN_PROCESS = frozenset({"file", "local", "memory"})


def waits_on_network(fs: Any) -> bool:
    """Whether requests to ``fs`` wait on a network or on a disk served by
    another process: every protocol but ``file``, ``local`` and ``memory``."""
    return not set(_protocols(fs)) & _IN_PROCESS


def pooled_options(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with s3fs's connection pool sized for parallel work.

    botocore keeps at most 10 connections per client by default, so an S3
    batch of 64 requests would wait for connections; ask for as many as the
    setting ``io_concurrency`` (an explicit
    ``config_kwargs={"max_pool_connections": n}`` wins)."""
    from .. import config

    scheme = url.split("://", 1)[0] if "://" in url else ""
    if "::" in url or scheme not in ("s3", "s3a"):
        return options
    config_kwargs = dict(options.get("config_kwargs") or {})
    if "max_pool_connections" in config_kwargs:
        return options
    config_kwargs["max_pool_connections"] = max(10, int(config.get("io_concurrency")))
    return {**options, "config_kwargs": config_kwargs}


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


class FsspecStore(StreamingReads, BackgroundUploads, Store):
    """A store over an fsspec file system.

    Parameters
    ----------
    url : str
        Root URL, e.g. ``"s3://bucket/data.zarr"``, ``"memory://tmp/x"``,
        ``"https://host/data.zarr"``; chained URLs (``"simplecache::s3://..."``)
        work too.
    storage_options : dict, optional
        Passed to the file system (``fsspec.core.url_to_fs``), e.g.
        ``{"anon": True}`` or ``{"endpoint_url": ...}`` for S3.
    read_only : bool, default False
        Refuse writes with :class:`~zarrdask.errors.ReadOnlyError`. HTTP(S)
        stores are always read-only.

    Notes
    -----
    The store pickles by URL and storage options and recreates the file
    system lazily on first use (a store made by :meth:`from_filesystem`
    pickles the file system object itself, as fsspec file systems do).

    Examples
    --------
    >>> store = FsspecStore("memory://doctest/fsspec-store")
    >>> store.set_many({"a/0": b"x", "a/1": b"yz"})
    >>> store.get_many(["a/1", "a/2"])
    [b'yz', None]
    >>> store.delete_prefix("")
    """

    supports_partial_reads = True

    def __init__(
        self,
        url: str,
        *,
        storage_options: dict[str, Any] | None = None,
        read_only: bool = False,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError(f"FsspecStore needs a URL string, got {type(url).__name__}")
        self.url: str | None = url
        self.storage_options = dict(storage_options or {})
        fs, root = fsspec.core.url_to_fs(url, **pooled_options(url, self.storage_options))
        self._setup(fs, root, read_only)

    @classmethod
    def from_filesystem(cls, fs: Any, root: str, *, read_only: bool = False) -> "FsspecStore":
        """A store over an existing file system object, rooted at ``root``.

        Parameters
        ----------
        fs : fsspec.AbstractFileSystem
            The file system.
        root : str
            Root path on it (a protocol prefix is stripped).
        read_only : bool, default False
            Refuse writes.
        """
        self = cls.__new__(cls)
        self.url = None
        self.storage_options = {}
        self._setup(fs, fs._strip_protocol(root), read_only)
        return self

    @classmethod
    def from_mapper(cls, mapper: Any, *, read_only: bool = False) -> "FsspecStore":
        """A store over the file system and root of an ``fsspec.mapping.FSMap``."""
        return cls.from_filesystem(mapper.fs, mapper.root, read_only=read_only)

    def _setup(self, fs: Any, root: str, read_only: bool) -> None:
        self._fs = fs
        self.root = root.rstrip("/") if root not in ("", "/") else root
        is_http = bool(_HTTP.intersection(_protocols(fs)))
        self.protocol = _protocols(fs)[0]
        self.listable = not is_http
        self.writable = not read_only and not is_http
        # The exact string the file system uses for paths under the root:
        # strip a child path and drop the child's name ("x"). At the file
        # system's own root the child hangs off its root marker: "/x" on local
        # and memory file systems, "x" where paths have no leading slash
        # (references, object stores)
        body = self.root.rstrip("/")
        self._prefix = fs._strip_protocol(f"{body}/x" if body else f"{fs.root_marker}x")[:-1]
        self._read_kwargs = _whole_read_kwargs(fs)
        # requests that wait on a network or another process go out concurrently
        self._remote = waits_on_network(fs)

    @property
    def capabilities(self) -> frozenset[str]:
        """``streaming`` and ``background_uploads`` where requests wait on a
        network or another process (every protocol but ``file``, ``local`` and
        ``memory``); none otherwise."""
        return frozenset({STREAMING, BACKGROUND_UPLOADS}) if self._remote else frozenset()

    @property
    def fs(self) -> Any:
        """The fsspec file system (recreated lazily after unpickling)."""
        fs = self._fs
        if fs is None:
            fs, _ = fsspec.core.url_to_fs(self.url, **pooled_options(self.url, self.storage_options))
            self._fs = fs
        return fs

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self.url is not None:
            state["_fs"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        ro = ", read_only=True" if not self.writable else ""
        where = repr(self.url) if self.url is not None else f"{type(self._fs).__name__}, {self.root!r}"
        return f"FsspecStore({where}{ro})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FsspecStore)
            and self._prefix == other._prefix
            and self.protocol == other.protocol
            and self.writable == other.writable
            and self.url == other.url
            and self.storage_options == other.storage_options
        )

    def __hash__(self) -> int:
        return hash((FsspecStore, self._prefix, self.protocol, self.writable))

    # -- paths -------------------------------------------------------------
    def _path(self, key: str) -> str:
        return self._prefix + validate_key(key)

    def _key(self, path: str) -> str | None:
        """Key of a path returned by the file system, or None if outside the root."""
        prefix = self._prefix
        if not path.startswith(prefix):
            return None
        key = path[len(prefix):].rstrip("/")
        return key or None

    def _error(self, what: str, key: str, exc: BaseException) -> StoreError:
        return key_failure(self, what, key, exc)

    def _retrying(self, call: Callable[[], T], what: str, key: str, missing: Any = ...) -> T:
        """``call()`` with transient failures retried; a missing path gives
        ``missing`` (if given); any other failure a ``StoreError`` naming ``key``."""
        try:
            return retry_call(call)
        except _MISSING:
            if missing is ...:
                raise
            return missing
        except Exception as e:
            if isinstance(e, StoreError) and not isinstance(e, RetriesExhausted):
                raise
            raise self._error(what, key, e) from e

    def _per_path(self, fetch: Callable[[list[int]], Sequence[Any]], count: int) -> list[Any]:
        """Results of ``count`` reads, retrying the ones that failed
        transiently; ``fetch(indices)`` returns values or exceptions in place
        (a failure of the whole call counts for every index)."""

        def run(indices: list[int]) -> Sequence[Any]:
            try:
                return fetch(indices)
            except Exception as e:
                return [e] * len(indices)

        return retry_batch(run, count)

    def _cat_ranges(self, path: str, starts: list[int], ends: list[int | None]) -> list[Any]:
        """``fs.cat_ranges`` of one path, failed ranges retried; results in place."""
        fs = self.fs
        return self._per_path(
            lambda idx: fs.cat_ranges([path] * len(idx), [starts[i] for i in idx], [ends[i] for i in idx], on_error="return"),
            len(starts),
        )

    # -- reads -------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        paths = [self._path(key) for key in keys]
        values = self._per_path(lambda idx: self._cat([paths[i] for i in idx]), len(paths))
        out: list[bytes | None] = []
        for key, value in zip(keys, values):
            if value is None or isinstance(value, _MISSING):
                out.append(None)
            elif isinstance(value, BaseException):
                raise self._error("read", key, value)
            else:
                out.append(bytes(value) if not isinstance(value, bytes) else value)
        return out

    def iter_many(self, keys: Sequence[str], limit: int | None = None) -> Iterator[tuple[int, bytes | None]]:
        """Values as they arrive: one request per key on the file system's
        event loop, at most ``limit`` (default ``io_concurrency``) in flight
        (started as earlier ones are consumed). A request that failed is made
        again through :meth:`get_many` (retried if transient, a ``StoreError``
        otherwise)."""
        fs = self.fs
        paths = [self._path(key) for key in keys]
        if len(paths) <= 1 or not fs.async_impl or any(_has_magic(p) for p in paths):
            yield from super().iter_many(keys, limit)
            return
        import asyncio

        from .._pool import futures_unordered

        kwargs = self._read_kwargs

        def start(i: int) -> Any:
            return asyncio.run_coroutine_threadsafe(fs._cat_file(paths[i], **kwargs), fs.loop)

        for i, future in futures_unordered(start, len(paths), limit):
            error, value = future.exception(), None
            if error is None:
                value = future.result()
                value = value if isinstance(value, bytes) else bytes(value)
            elif not isinstance(error, _MISSING):  # transient or not: the batched path retries or names the key
                value = self.get_many([keys[i]])[0]
            del future  # a value handed over is referenced by the caller only (memory budgets count on it)
            yield i, value
            del value

    def _cat(self, paths: list[str]) -> list[Any]:
        """Whole values of ``paths`` in one call: bytes, ``None`` or an exception each."""
        fs = self.fs
        if any(_has_magic(p) for p in paths):
            # fs.cat would expand these as glob patterns: read them literally
            return fs.cat_ranges(paths, None, None, on_error="return", **self._read_kwargs)
        try:
            found = fs.cat(paths, on_error="return", **self._read_kwargs)
        except _MISSING:
            return [None] * len(paths)
        if not isinstance(found, dict):  # defensive: one path, one value
            found = {paths[0]: found}
        values = []
        for path in paths:
            value = found.get(path)
            if value is None:
                value = found.get(fs._strip_protocol(path))
            values.append(value)
        return values

    def _size(self, key: str, path: str) -> int | None:
        """Size of a value via ``fs.info``; None if missing or a directory."""
        info = self._retrying(lambda: self.fs.info(path), "look up the size of", key, missing=None)
        if info is None or info.get("type", "file") != "file":
            return None
        size = info.get("size")
        if size is None:  # e.g. an HTTP server without Content-Length
            value = self.get(key)
            return None if value is None else len(value)
        return int(size)

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        path = self._path(key)
        out: list[bytes | None] = [None] * len(ranges)
        todo: list[int] = []
        starts: list[int] = []
        ends: list[int | None] = []
        for i, request in enumerate(ranges):
            if isinstance(request, RangeRequest):
                if request.length == 0:
                    out[i] = b""
                    continue
                starts.append(request.offset)
                ends.append(request.offset + request.length)
            elif isinstance(request, OffsetRequest):
                starts.append(request.offset)
                ends.append(None)
            elif isinstance(request, SuffixRequest):
                if request.length == 0:
                    out[i] = b""
                    continue
                starts.append(-request.length)
                ends.append(None)
            else:
                raise TypeError(f"not a byte request for key {key!r}: {request!r}")
            todo.append(i)

        failed: list[int] = []
        if todo:
            results = self._cat_ranges(path, starts, ends)
            for i, result in zip(todo, results):
                if isinstance(result, _MISSING):
                    return None
                if isinstance(result, RetriesExhausted):
                    raise self._error(f"read range {ranges[i]} of", key, result)
                if isinstance(result, BaseException):
                    failed.append(i)  # e.g. HTTP 416 past the end
                    continue
                out[i] = self._trim(ranges[i], bytes(result))
        if failed or not todo:
            # Some range was refused (e.g. HTTP 416 past the end) or nothing was
            # fetched: one size lookup settles existence and clipping.
            size = self._size(key, path)
            if size is None:
                return None
            refetch, r_starts, r_ends = [], [], []
            for i in failed:
                start, stop = resolve(ranges[i], size)
                if stop <= start:
                    out[i] = b""
                else:
                    refetch.append(i)
                    r_starts.append(start)
                    r_ends.append(stop)
            if refetch:
                results = self._cat_ranges(path, r_starts, r_ends)
                for i, result in zip(refetch, results):
                    if isinstance(result, _MISSING):
                        return None
                    if isinstance(result, BaseException):
                        raise self._error(f"read range {ranges[i]} of", key, result)
                    out[i] = bytes(result)
        return out  # type: ignore[return-value]

    @staticmethod
    def _trim(request: ByteRequest, data: bytes) -> bytes:
        """Guard against a server that ignored the range and sent the whole value."""
        if isinstance(request, RangeRequest) and len(data) > request.length:
            return data[request.offset : request.offset + request.length]
        if isinstance(request, SuffixRequest) and len(data) > request.length:
            return data[-request.length :]
        return data

    def exists(self, key: str) -> bool:
        return self.getsize(key) is not None

    def getsize(self, key: str) -> int | None:
        return self._size(key, self._path(key))

    def reader(self, key: str) -> ValueReader:
        """An exact reader on HTTP(S) and S3 (conditional requests on the ETag
        of the first response), else the verifying default."""
        path = self._path(key)
        backend = backend_for(self.fs, path)
        if backend is None:
            return super().reader(key)
        return ConditionalReader(self, key, backend)

    def _backends(self, keys: Sequence[str]) -> list[Any] | None:
        """The conditional-request backends of ``keys`` (S3, HTTP), or ``None``."""
        backends = [backend_for(self.fs, self._path(key)) for key in keys]
        return None if not backends or backends[0] is None else backends

    def get_with_versions(self, keys: Sequence[str]) -> list[tuple[bytes | None, Any]]:
        """On S3 and HTTP each value with its strong ETag (one ``GET`` each)."""
        backends = self._backends(keys)
        return super().get_with_versions(keys) if backends is None else etag_get_with_versions(self, keys, backends)

    def get_if_changed(
        self, keys: Sequence[str], versions: Sequence[Any], *, fetch: bool = True
    ) -> list[tuple[bool, bytes | None, Any]]:
        """On S3 and HTTP one ``GET`` with ``If-None-Match`` per key (``304``: unchanged)."""
        backends = self._backends(keys)
        if backends is None:
            return super().get_if_changed(keys, versions, fetch=fetch)
        return etag_get_if_changed(self, keys, backends, versions, fetch)

    @property
    def location(self) -> Hashable:
        endpoint = self.storage_options.get("endpoint_url") or getattr(self._fs, "endpoint_url", None)
        return ("fsspec", self.protocol, str(endpoint), self._prefix)

    # -- writes ------------------------------------------------------------
    def _makedirs_for(self, paths: Iterable[str]) -> None:
        fs = self.fs
        for parent in sorted({p.rsplit("/", 1)[0] for p in paths if "/" in p}):
            fs.makedirs(parent, exist_ok=True)

    def set(self, key: str, value: bytes) -> None:
        path = self._path(key)
        self._check_writable(key)
        value = ensure_bytes(value)

        def write() -> None:
            try:
                self.fs.pipe_file(path, value)
            except FileNotFoundError:  # a local-like file system without auto_mkdir
                self._makedirs_for([path])
                self.fs.pipe_file(path, value)

        self._retrying(write, "write", key)

    def set_many(self, items: Mapping[str, bytes]) -> None:
        if not items:
            return
        data = {}
        for key, value in items.items():
            path = self._path(key)
            self._check_writable(key)
            data[path] = ensure_bytes(value)
        if len(data) == 1:
            (key,) = items
            self.set(key, data[self._prefix + key])
            return
        def write() -> None:
            try:
                self.fs.pipe(data)
            except FileNotFoundError:
                self._makedirs_for(data)
                self.fs.pipe(data)

        try:
            retry_call(write)
        except Exception as e:
            names = list(items)
            shown = ", ".join(repr(k) for k in names[:5]) + (", ..." if len(names) > 5 else "")
            err = StoreError(f"{self!r}: cannot write keys [{shown}] ({len(names)} keys): {describe(e)}")
            raise err from e

    def delete(self, key: str) -> None:
        path = self._path(key)
        self._check_writable(key)
        self._retrying(lambda: self.fs.rm_file(path), "delete", key, missing=None)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        paths = []
        for key in keys:
            paths.append(self._path(key))
            self._check_writable(key)
        if not paths:
            return
        if len(paths) == 1 or any(_has_magic(p) for p in paths):
            for key in keys:
                self.delete(key)
            return
        try:
            self._retrying(lambda: self.fs.rm(paths), "delete", keys[0])
        except _MISSING:
            for key in keys:  # a file system whose rm refuses missing paths
                self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        validate_prefix(prefix)
        self._check_writable(prefix)
        self.delete_many(list(self.list_prefix(prefix)))

    # -- listing -----------------------------------------------------------
    def _check_listable(self, what: str) -> None:
        if not self.listable:
            raise StoreError(
                f"{self!r} cannot {what}: {self.protocol.upper()} has no directory "
                "listing; open hierarchies over HTTP through their metadata "
                "(e.g. consolidated metadata) instead"
            )

    def _find(self, directory: str) -> Iterator[str]:
        try:
            paths = retry_call(lambda: self.fs.find(directory))
        except _MISSING:
            return iter(())
        except Exception as e:
            raise StoreError(f"{self!r}: cannot list {directory!r}: {describe(e)}") from e
        keys = (self._key(p) for p in paths)
        return (k for k in keys if k is not None)

    def _dirpath(self, prefix: str) -> str:
        body = prefix.rstrip("/")
        return self._prefix + body if body else (self._prefix.rstrip("/") or self._prefix)

    def list(self) -> Iterator[str]:
        self._check_listable("list keys")
        return self._find(self._dirpath(""))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        self._check_listable(f"list keys under {prefix!r}")
        if prefix == "" or prefix.endswith("/"):
            directory = self._dirpath(prefix)
        else:
            directory = self._dirpath(prefix.rsplit("/", 1)[0] if "/" in prefix else "")
        return iter([k for k in self._find(directory) if k.startswith(prefix)])

    def list_dir(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        self._check_listable(f"list the children of {prefix!r}")
        directory = self._dirpath(prefix)
        body = prefix.rstrip("/")
        child_prefix = f"{body}/" if body else ""
        try:
            entries = retry_call(lambda: self.fs.ls(directory, detail=False))
        except _MISSING:
            return []
        except Exception as e:
            raise StoreError(f"{self!r}: cannot list {prefix!r}: {describe(e)}") from e
        names = set()
        for entry in entries:
            if isinstance(entry, dict):
                entry = entry["name"]
            key = self._key(entry)
            # ls of a file returns the file itself: keep only real children
            if key is None or not key.startswith(child_prefix):
                continue
            name = key[len(child_prefix):].split("/", 1)[0]
            if name:
                names.add(name)
        return sorted(names)
