"""Exact multi-step reads over HTTP and S3: conditional range requests.

zarr-specs v3 core "Stores" lets a store serve byte ranges of a value; a
reader of a shard (``v3-codecs-sharding-indexed``) reads the index, then
inner chunks at the offsets the index gives, and both steps must see one
version of the shard. On HTTP (RFC 9110 "Conditional Requests", "Range
Requests") and S3 that version has a name, the **ETag**, and
:class:`ConditionalReader` keeps to it:

* the ETag is taken from the response that carried the first bytes (a
  separate HEAD could describe another version than the GET); the ranges of
  the first ``read()`` are fetched concurrently and must all carry the same
  ETag, else the first read starts again (at most three times);
* every later range is requested with ``If-Match: <etag>`` (S3
  ``GetObject(IfMatch=...)``) and the ETag of every response is checked, so
  a server that ignores ``If-Match`` is caught too; a 412, a different ETag
  or a missing object raise :class:`~zarrdask.errors.ValueChangedError`;
* the total size comes from the first response's ``Content-Range``, so later
  ranges are clipped locally and never answered 416.

A server that sends no ETag, or only a weak one (``W/"..."``, which
``If-Match`` never matches), makes the reader verifying: ``exact`` becomes
False with the first read, and ``unchanged()`` re-reads the first ranges.

Transient failures (5xx, 429, dropped connections) are retried per request
(:mod:`zarrdask.storage.retry`). The requests are coroutines run on the file
system's own event loop (``fsspec.asyn.sync``), the only place besides the
zarr-python adapter where zarrdask awaits anything: the ETag and
``Content-Range`` of a response are not visible through fsspec's ``cat``.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Awaitable, Callable, NamedTuple, Sequence

from ..errors import StoreError
from .abc import Store
from .byte_range import ByteRequest, OffsetRequest, RangeRequest, SuffixRequest, resolve
from .readers import ValueReader
from .retry import describe, error_code, http_status, retry_batch

__all__ = ["ConditionalReader", "backend_for", "Reply", "MISSING", "NOT_MODIFIED"]

_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(?:\d+-\d+|\*)/(\d+)\s*$")
_CONCURRENCY = 16
_FIRST_READ_ROUNDS = 3


class Reply(NamedTuple):
    """A response carrying bytes: the body, its ETag, the value's total size
    (if the response says), and whether the body is the whole value (the
    server ignored the range)."""

    data: bytes
    etag: str | None
    size: int | None
    whole: bool


class _Answer:
    """A response without bytes: the object is missing, the precondition
    failed, or the range is past the end."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING = _Answer("MISSING")
#: ``If-None-Match`` named the current version (HTTP 304): the value is unchanged
NOT_MODIFIED = _Answer("NOT_MODIFIED")
PRECONDITION_FAILED = _Answer("PRECONDITION_FAILED")
UNSATISFIABLE = _Answer("UNSATISFIABLE")


def _total_size(content_range: str | None) -> int | None:
    match = _CONTENT_RANGE.match(content_range or "")
    return int(match.group(1)) if match else None


def _range_header(request: ByteRequest) -> str:
    if isinstance(request, RangeRequest):
        return f"bytes={request.offset}-{request.offset + request.length - 1}"
    if isinstance(request, OffsetRequest):
        return f"bytes={request.offset}-"
    if isinstance(request, SuffixRequest):
        return f"bytes=-{request.length}"
    raise TypeError(f"not a byte request: {request!r}")


def _asks_nothing(request: ByteRequest) -> bool:
    return (isinstance(request, RangeRequest) and request.length == 0) or (
        isinstance(request, SuffixRequest) and request.length == 0
    )


def _strong(etag: str | None) -> bool:
    return bool(etag) and not etag.startswith("W/")  # type: ignore[union-attr]


async def _gather(calls: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    import asyncio

    gate = asyncio.Semaphore(_CONCURRENCY)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with gate:
            return await call()

    return await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)


class _Backend:
    """How one kind of server is asked: ``get(range_header, if_match,
    if_none_match)`` and ``head(if_match)``, coroutines answering a
    :class:`Reply` or an answer (``NOT_MODIFIED`` when ``if_none_match``
    names the current version: the chunk cache's revalidation)."""

    def __init__(self, fs: Any, path: str) -> None:
        self.fs = fs
        self.path = path

    async def get(self, header: str | None, if_match: str | None, if_none_match: str | None = None
                  ) -> Reply | _Answer:
        raise NotImplementedError

    async def head(self, if_match: str | None) -> Reply | _Answer:
        raise NotImplementedError

    def run(self, calls: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
        """Run coroutines concurrently on the file system's loop; exceptions in place."""
        from fsspec.asyn import sync

        return sync(self.fs.loop, _gather, calls)


class _HttpBackend(_Backend):
    """fsspec's ``HTTPFileSystem``: its aiohttp session and request options."""

    def _options(self, if_match: str | None, header: str | None = None, if_none_match: str | None = None
                 ) -> dict[str, Any]:
        kw = dict(self.fs.kwargs)
        headers = dict(kw.pop("headers", None) or {})
        if header is not None:
            headers["Range"] = header
        if if_match is not None:
            headers["If-Match"] = if_match
        if if_none_match is not None:
            headers["If-None-Match"] = if_none_match
        kw["headers"] = headers
        return kw

    @staticmethod
    def _answer(status: int) -> _Answer | None:
        return {304: NOT_MODIFIED, 404: MISSING, 410: MISSING, 412: PRECONDITION_FAILED, 416: UNSATISFIABLE}.get(status)

    async def get(self, header: str | None, if_match: str | None, if_none_match: str | None = None
                  ) -> Reply | _Answer:
        session = await self.fs.set_session()
        async with session.get(self.fs.encode_url(self.path), **self._options(if_match, header, if_none_match)) as r:
            answer = self._answer(r.status)
            if answer is not None:
                return answer
            r.raise_for_status()
            data = await r.read()
            whole = r.status != 206
            size = len(data) if whole else _total_size(r.headers.get("Content-Range"))
            return Reply(data, r.headers.get("ETag"), size, whole)

    async def head(self, if_match: str | None) -> Reply | _Answer:
        session = await self.fs.set_session()
        kw = self._options(if_match)
        kw.setdefault("allow_redirects", True)
        async with session.head(self.fs.encode_url(self.path), **kw) as r:
            answer = self._answer(r.status)
            if answer is not None:
                return answer
            r.raise_for_status()
            length = r.headers.get("Content-Length")
            return Reply(b"", r.headers.get("ETag"), int(length) if length else None, True)


class _S3Backend(_Backend):
    """s3fs: ``GetObject`` / ``HeadObject`` through its low-level ``_call_s3``."""

    def __init__(self, fs: Any, path: str) -> None:
        super().__init__(fs, path)
        bucket, key, version = fs.split_path(path)
        self.params = {"Bucket": bucket, "Key": key}
        if version:
            self.params["VersionId"] = version

    @staticmethod
    def _answer(error: Exception) -> _Answer | None:
        if isinstance(error, FileNotFoundError):
            return MISSING
        cause: BaseException | None = error
        while cause is not None:
            status, code = http_status(cause), error_code(cause)
            if status == 304 or code in ("304", "NotModified"):
                return NOT_MODIFIED
            if status == 412 or code == "PreconditionFailed":
                return PRECONDITION_FAILED
            if status == 416 or code == "InvalidRange":
                return UNSATISFIABLE
            if status == 404 or code in ("NoSuchKey", "NotFound"):
                return MISSING
            cause = cause.__cause__
        return None

    async def _call(self, method: str, header: str | None, if_match: str | None, if_none_match: str | None = None
                    ) -> dict[str, Any] | _Answer:
        """``method`` (``get_object``, ``head_object``) through s3fs's
        ``_call_s3``; an answer instead of the response for a missing
        object, a failed precondition or a range past the end."""
        params = dict(self.params)
        if header is not None:
            params["Range"] = header
        if if_match is not None:
            params["IfMatch"] = if_match
        if if_none_match is not None:
            params["IfNoneMatch"] = if_none_match
        try:
            return await self.fs._call_s3(method, **params)
        except Exception as e:
            answer = self._answer(e)
            if answer is None:
                raise
            return answer

    async def get(self, header: str | None, if_match: str | None, if_none_match: str | None = None
                  ) -> Reply | _Answer:
        response = await self._call("get_object", header, if_match, if_none_match)
        if isinstance(response, _Answer):
            return response
        body = response["Body"]
        try:
            data = await body.read()
        finally:
            body.close()
        content_range = response.get("ContentRange")
        whole = content_range is None
        size = len(data) if whole else _total_size(content_range)
        return Reply(data, response.get("ETag"), size, whole)

    async def head(self, if_match: str | None) -> Reply | _Answer:
        response = await self._call("head_object", None, if_match)
        if isinstance(response, _Answer):
            return response
        size = response.get("ContentLength")
        return Reply(b"", response.get("ETag"), int(size) if size is not None else None, True)


def backend_for(fs: Any, path: str) -> _Backend | None:
    """The conditional-request backend of an fsspec file system, if it has one."""
    if all(hasattr(fs, name) for name in ("_call_s3", "split_path", "loop")):
        return _S3Backend(fs, path)
    if all(hasattr(fs, name) for name in ("set_session", "encode_url", "kwargs", "loop")):
        return _HttpBackend(fs, path)
    return None


class ConditionalReader(ValueReader):
    """An exact reader over HTTP or S3 (see the module documentation)."""

    exact = True

    def __init__(self, store: Store, key: str, backend: _Backend) -> None:
        super().__init__(store, key)
        self.backend = backend
        self._etag: str | None = None
        self._size = 0

    # -- requests ----------------------------------------------------------
    def _fail(self, what: str, error: BaseException) -> StoreError:
        err = StoreError(f"{self.store!r}: cannot {what} key {self.key!r}: {describe(error)}")
        err.__cause__ = error
        return err

    def _requests(
        self, calls: list[tuple[str | None, str | None]], what: str = "read ranges of",
        arrived: Callable[[int, Any], None] | None = None,
    ) -> list[Reply | _Answer]:
        """``backend.get(header, if_match)`` for every call, concurrently, with
        transient failures retried; any other failure raises ``StoreError``.
        ``arrived(i, answer)``: told of each answer, by the thread that got it,
        as soon as it is in (a transient failure is not an answer)."""
        backend = self.backend

        def get(i: int) -> Any:
            answer = backend.get(*calls[i])
            if arrived is not None:
                arrived(i, answer)
            return answer

        def run(indices: list[int]) -> list[Any]:
            return backend.run([partial(get, i) for i in indices])

        results = retry_batch(run, len(calls))
        for result in results:
            if isinstance(result, BaseException):
                raise self._fail(what, result)
        return results

    def _head(self, if_match: str | None) -> Reply | _Answer:
        backend = self.backend
        (result,) = retry_batch(lambda indices: backend.run([lambda: backend.head(if_match)]), 1)
        if isinstance(result, BaseException):
            raise self._fail("look up", result)
        return result

    @staticmethod
    def _part(request: ByteRequest, reply: Reply) -> bytes:
        """The bytes of ``request`` in a reply (sliced if the server sent everything)."""
        if not reply.whole:
            return reply.data
        start, stop = resolve(request, len(reply.data))
        return reply.data[start:stop]

    @property
    def version(self) -> str | None:  # type: ignore[override]
        """The strong ETag of the version the first read saw (``None``: none, or not read yet)."""
        return self._etag if _strong(self._etag) else None

    # -- ValueReader -------------------------------------------------------
    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        for _ in range(_FIRST_READ_ROUNDS):
            found = self._try_first(ranges)
            if found is not PRECONDITION_FAILED:
                if not _strong(self._etag):
                    self.exact = False
                    self._first = (ranges, found)
                return found  # type: ignore[return-value]
        raise self._changed(f"it kept changing during the first read ({_FIRST_READ_ROUNDS} attempts)")

    def _try_first(self, ranges: list[ByteRequest]) -> list[bytes] | None | _Answer:
        """One attempt at the first read; ``PRECONDITION_FAILED`` if the
        responses came from different versions."""
        todo = [i for i, r in enumerate(ranges) if not _asks_nothing(r)]
        replies = self._requests([(_range_header(ranges[i]), None) for i in todo])
        present = [r for r in replies if isinstance(r, Reply)]
        if any(r is MISSING for r in replies):
            return PRECONDITION_FAILED if present else None
        etags = {r.etag for r in present}
        if len(etags) > 1:
            return PRECONDITION_FAILED
        etag = etags.pop() if etags else None
        sizes = [r.size for r in present if r.size is not None]
        size = sizes[0] if sizes else None
        if size is None:  # nothing fetched, all past the end, or no Content-Range
            head = self._head(etag if _strong(etag) else None)
            if head is MISSING:
                return PRECONDITION_FAILED if present else None
            if head is PRECONDITION_FAILED or (etag is not None and head.etag != etag):  # type: ignore[union-attr]
                return PRECONDITION_FAILED
            etag = head.etag  # type: ignore[union-attr]
            size = head.size  # type: ignore[union-attr]
            if size is None:  # no Content-Length: fetch the value to learn its size
                (whole,) = self._requests([(None, etag if _strong(etag) else None)])
                if not isinstance(whole, Reply) or (etag is not None and whole.etag != etag):
                    return PRECONDITION_FAILED if whole is not MISSING or present else None
                size = len(whole.data)
        self._etag, self._size = etag, size
        out: list[bytes] = [b""] * len(ranges)
        refetch = []
        for i, reply in zip(todo, replies):
            if isinstance(reply, Reply):
                out[i] = self._part(ranges[i], reply)
            else:  # past the end, as far as that response knew: clip with the size now known
                refetch.append(i)
        if refetch:
            got = self._read_resolved([ranges[i] for i in refetch])
            if got is None:
                return PRECONDITION_FAILED
            for i, data in zip(refetch, got):
                out[i] = data
        return out

    def _read_resolved(
        self, ranges: Sequence[ByteRequest], each: Callable[[tuple[int, Any]], None] | None = None
    ) -> list[bytes] | None:
        """Ranges of the version first read, clipped to its size; ``None`` if
        the server no longer has that version. ``each((j, data))``: told of
        range ``j``'s bytes as soon as they are in, when they are from that version."""
        etag = self._etag
        if_match = etag if _strong(etag) else None
        spans = [resolve(r, self._size) for r in ranges]
        todo = [i for i, (start, stop) in enumerate(spans) if stop > start]

        def part(i: int, reply: Any) -> Any:
            """Range ``i``'s bytes in ``reply``; ``None`` if it is not from the version first read."""
            if not isinstance(reply, Reply) or (etag is not None and reply.etag != etag):
                return None
            start, stop = spans[i]
            return reply.data[start:stop] if reply.whole else reply.data

        def arrived(k: int, reply: Any) -> None:
            data = part(todo[k], reply)
            if data is not None:
                each((todo[k], data))  # type: ignore[misc]

        replies = self._requests([(f"bytes={spans[i][0]}-{spans[i][1] - 1}", if_match) for i in todo],
                                 arrived=None if each is None else arrived)
        out = [b""] * len(ranges)
        for i, reply in zip(todo, replies):
            data = part(i, reply)
            if data is None:
                return None
            out[i] = data
        return out

    def read_each(self, ranges: Sequence[ByteRequest], each: Callable[[tuple[int, Any]], None]) -> list[bytes] | None:
        """:meth:`ValueReader.read_each`: where the backend's requests are
        blocking calls on the I/O threads (obstore) and the first read has
        fixed the version, the ranges are one read's requests, each answer
        handed over by the thread that received it; otherwise (coroutines on
        fsspec's event loop, which must not decode) as ``ValueReader`` does it."""
        if isinstance(self.backend, _Backend) or self._closed or not self._started or self._missing:
            return super().read_each(ranges, each)
        return self._read_later(list(ranges), each)

    def _read_later(
        self, ranges: list[ByteRequest], each: Callable[[tuple[int, Any]], None] | None = None
    ) -> list[bytes]:
        got = self._read_resolved(ranges, each)
        if got is None:
            raise self._changed(f"the server no longer has the version with ETag {self._etag}")
        return got

    def _same(self) -> bool:
        if self._etag is None:
            ranges, first = self._first
            now = self.store.get_ranges(self.key, ranges)
            return now is not None and [bytes(v) for v in now] == [bytes(v) for v in first]
        head = self._head(None)
        return isinstance(head, Reply) and head.etag == self._etag

    def _still_missing(self) -> bool:
        return self._head(None) is MISSING
