"""Requests to obstore stores: running them, reading their answers, and which
backend a store object is.

:class:`~zarrdask.storage.obstore.ObstoreStore` (zarr-specs v3 core "Stores")
talks to obstore (https://developmentseed.org/obstore/, 0.12), whose stores
are Rust ``object_store`` backends. This module holds what the store needs
besides its own methods:

* **Answers.** obstore reports a missing object as ``FileNotFoundError``, a
  failed precondition as ``PreconditionError`` / ``AlreadyExistsError``, and
  most other failures as ``GenericError`` whose message carries the HTTP
  status (``"Server returned non-2xx status code: 503 ..."``).
  :func:`translate` turns a failure into what zarrdask's retries
  (:mod:`zarrdask.storage.retry`) understand: a :class:`RequestError` with the
  ``status`` (5xx and 429 are retried), a :class:`ConnectionFailed` for a
  request that got no answer (retried), ``FileNotFoundError`` for a path
  below a file (``LocalStore``). :func:`answer_for` reads the answers a
  conditional read expects (missing, precondition failed, range past the end).
* **Exact readers.** :class:`ObstoreBackend` lets
  :class:`~zarrdask.storage.conditional.ConditionalReader` read through
  obstore: ranges with ``if_match`` on the ETag of the first response (and
  the object version, where the backend reports one: a versioned S3 bucket
  keeps serving the version first read even after an overwrite).
* **Which backend.** :func:`backend_kind` and :func:`backend_location`: where
  a store's data lives (a bucket, prefix and endpoint; a directory's real
  path), equal for two store objects over the same data.

obstore is imported only here and in :mod:`zarrdask.storage.obstore`, and
only once an obstore store object is at hand.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, Hashable, NoReturn

from .. import config
from ..errors import StoreError
from .conditional import MISSING, NOT_MODIFIED, PRECONDITION_FAILED, UNSATISFIABLE, Reply
from .retry import map_calls

__all__ = [
    "is_obstore_store",
    "backend_kind",
    "backend_location",
    "RequestError",
    "ConnectionFailed",
    "translate",
    "raise_translated",
    "answer_for",
    "message_of",
    "ObstoreBackend",
]

#: obstore's store classes by name, and the kind of backend each is
_KINDS = {
    "S3Store": "s3",
    "GCSStore": "gcs",
    "AzureStore": "azure",
    "HTTPStore": "http",
    "LocalStore": "local",
    "MemoryStore": "memory",
}
#: kinds whose requests wait on a network
REMOTE = frozenset({"s3", "gcs", "azure", "http"})

_STATUS = re.compile(r"status code: (\d{3})\b")
#: what object_store says when a request got no answer (reqwest / hyper errors)
_NO_ANSWER = (
    "error sending request",
    "error decoding response body",
    "connection closed",
    "connection reset",
    "connection refused",
    "broken pipe",
    "timed out",
    "operation timed out",
    "unexpected eof",
    "incomplete message",
)
#: what object_store says when a range starts past the end of the value
_PAST_THE_END = ("requested range was invalid", "invalid range", "non-partial response", "notpartial")


def is_obstore_store(x: Any) -> bool:
    """Whether ``x`` is one of obstore's stores (``obstore.store.S3Store``,
    ``LocalStore``, ...). obstore is not imported: an object can only be an
    obstore store if obstore is already loaded."""
    if "obstore" not in sys.modules:
        return False
    return any(cls.__name__ in _KINDS and cls.__module__.startswith("obstore") for cls in type(x).__mro__)


def backend_kind(store: Any) -> str:
    """``"s3"``, ``"gcs"``, ``"azure"``, ``"http"``, ``"local"`` or ``"memory"``."""
    for cls in type(store).__mro__:
        kind = _KINDS.get(cls.__name__)
        if kind is not None and cls.__module__.startswith("obstore"):
            return kind
    raise TypeError(
        f"ObstoreStore needs one of obstore's stores ({', '.join(sorted(_KINDS))} from obstore.store), "
        f"got {type(store).__module__}.{type(store).__qualname__}"
    )


def _prefix(store: Any) -> str:
    prefix = getattr(store, "prefix", None)
    return "" if prefix is None else str(prefix).strip("/")


def backend_location(store: Any, kind: str) -> Hashable:
    """Where the data of an obstore store lives: equal for store objects over
    the same data, however they were made. A local directory's is the one
    zarrdask's own :class:`~zarrdask.storage.local.LocalStore` gives it, so
    both share in-process locks."""
    if kind == "local":
        prefix = store.prefix
        return ("local", os.path.realpath(os.fspath(prefix) if prefix is not None else os.sep))
    if kind == "memory":
        return ("obstore-memory", id(store))
    if kind == "http":
        return ("http", store.url.rstrip("/"))
    config = {str(k).lower().removeprefix("aws_").removeprefix("google_").removeprefix("azure_storage_"): v
              for k, v in (store.config or {}).items()}
    if kind == "s3":
        return ("s3", config.get("endpoint"), config.get("bucket"), _prefix(store))
    if kind == "gcs":
        return ("gcs", config.get("base_url"), config.get("bucket"), _prefix(store))
    account = config.get("account_name") or config.get("account")
    return ("azure", config.get("endpoint"), account, config.get("container_name"), _prefix(store))


# -- answers -------------------------------------------------------------------
class RequestError(StoreError):
    """An obstore request failed. ``status`` is the HTTP status the server
    answered with (``None``: no answer, or a backend without HTTP); 5xx and
    429 count as transient (:func:`zarrdask.storage.retry.is_transient`)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ConnectionFailed(RequestError, ConnectionError):
    """An obstore request got no answer (refused, reset or dropped
    connection, timeout): transient."""


def message_of(error: BaseException) -> str:
    """obstore's message without the ``Debug source`` dump it appends."""
    return str(error).split("\n\nDebug source", 1)[0].strip()


def _from_obstore(error: BaseException) -> bool:
    return type(error).__module__.startswith(("obstore", "pyo3"))


def translate(error: BaseException) -> BaseException:
    """The failure zarrdask handles in place of an obstore failure (see the
    module documentation); anything not from obstore unchanged."""
    if isinstance(error, (FileNotFoundError, StoreError)) or not _from_obstore(error):
        return error
    name = type(error).__name__
    if name in ("PreconditionError", "AlreadyExistsError"):
        return error
    message = message_of(error)
    lowered = message.lower()
    if "(os error 20)" in lowered:  # a path below a file (LocalStore): no such key
        return FileNotFoundError(message)
    found = _STATUS.search(message)
    status = int(found.group(1)) if found else None
    if status is None and any(text in lowered for text in _NO_ANSWER):
        failed: RequestError = ConnectionFailed(f"{name}: {message}")
    else:
        failed = RequestError(f"{name}: {message}", status)
    failed.__cause__ = error
    return failed


def raise_translated(error: BaseException) -> NoReturn:
    """Raise :func:`translate` of ``error`` (from ``error``), or ``error`` itself."""
    translated = translate(error)
    if translated is error:
        raise error
    raise translated from error


def answer_for(error: BaseException) -> Any:
    """``MISSING``, ``NOT_MODIFIED``, ``PRECONDITION_FAILED`` or ``UNSATISFIABLE``
    (:mod:`zarrdask.storage.conditional`) when ``error`` is such an answer, else ``None``."""
    if type(error).__name__ == "NotModifiedError":  # If-None-Match named the current version
        return NOT_MODIFIED
    error = translate(error)
    if isinstance(error, FileNotFoundError):
        return MISSING
    if type(error).__name__ == "PreconditionError":
        return PRECONDITION_FAILED
    if isinstance(error, RequestError):
        if error.status in (404, 410):
            return MISSING
        if error.status == 412:
            return PRECONDITION_FAILED
        if error.status == 416 or any(text in str(error).lower() for text in _PAST_THE_END):
            return UNSATISFIABLE
    return None


# -- requests ----------------------------------------------------------------
def _obstore_range(header: str) -> Any:
    """obstore's form of an HTTP ``Range`` header ``bytes=a-b``, ``bytes=a-`` or ``bytes=-n``
    (split with string methods: a regular expression costs more, on every request)."""
    first, dash, last = header[6:].partition("-") if header.startswith("bytes=") else ("", "", "")
    if not dash or not (first + last).isdecimal():  # digits on one side of the dash at least, nothing else
        raise ValueError(f"not a single byte range: {header!r}")
    if not first:
        return {"suffix": int(last)}
    if not last:
        return {"offset": int(first)}
    return (int(first), int(last) + 1)


class ObstoreBackend:
    """How :class:`~zarrdask.storage.conditional.ConditionalReader` asks an
    obstore store for one path: ``get(range_header, if_match)``,
    ``head(if_match)`` (blocking calls answering a ``Reply`` or an answer)
    and ``run(calls)``. Transient failures are raised (the reader retries them).

    The version a backend reports with an ETag (a versioned S3 bucket) is
    remembered, and asked for with every later ``if_match`` on that ETag: the
    version first read stays readable after the object is overwritten.
    """

    def __init__(self, store: Any, path: str) -> None:
        self.store = store
        self.path = path
        self._versions: dict[str, str] = {}

    def get(self, header: str | None, if_match: str | None, if_none_match: str | None = None) -> Any:
        import obstore

        options: dict[str, Any] = {}
        if header is not None:
            options["range"] = _obstore_range(header)
        if if_none_match is not None:
            options["if_none_match"] = if_none_match
        if if_match is not None:
            options["if_match"] = if_match
            version = self._versions.get(if_match)
            if version is not None:
                options["version"] = version
        try:
            result = obstore.get(self.store, self.path, options=options or None)
            data = result.bytes()
        except Exception as e:
            answer = answer_for(e)
            if answer is None:
                raise_translated(e)
            return answer
        meta = result.meta
        etag, version = meta.get("e_tag"), meta.get("version")
        if etag is not None and version is not None:
            self._versions.setdefault(etag, version)
        # a range: a view of obstore's buffer (no copy; it goes to a decoder);
        # a whole value: bytes, what Store.get returns
        body = bytes(data) if header is None else memoryview(data)
        return Reply(body, etag, int(meta["size"]), header is None)

    def head(self, if_match: str | None) -> Any:
        import obstore

        try:
            meta = obstore.head(self.store, self.path)
        except Exception as e:
            answer = answer_for(e)
            if answer is None:
                raise_translated(e)
            return answer
        if if_match is not None and meta.get("e_tag") != if_match:
            return PRECONDITION_FAILED
        return Reply(b"", meta.get("e_tag"), int(meta["size"]), True)

    def run(self, calls: list[Callable[[], Any]]) -> list[Any]:
        """Make the requests concurrently on the I/O threads (at most
        ``io_concurrency`` at once; a lone one in the calling thread);
        exceptions in place, not retried here."""
        return map_calls(calls, int(config.get("io_concurrency")))
