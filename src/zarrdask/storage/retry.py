"""Retrying the transient failures of remote stores.

A remote store (zarr-specs v3 core, "Stores": the store is whatever holds
the keys; here an object store or web server reached through fsspec or a
zarr-python store) can fail a request without anything being wrong with the
key or the data: the server is overloaded (HTTP 5xx, 429, S3 ``SlowDown``), a
connection is reset or dropped, a request times out. Such a request is
retried, with bounded exponential backoff and jitter; anything else (a 4xx
answer other than 429, an authentication error, a missing key) is an answer,
not a failure, and is never retried.

Settings (:mod:`zarrdask.config`): ``retries`` (default 3) retries after the
first attempt, so a request is tried at most ``retries + 1`` times;
``retry_backoff`` (default 0.5 s) the base delay: retry ``n`` (from 0) waits
between half and all of ``min(retry_backoff * 2**n, 20)`` seconds ("equal
jitter": concurrent clients spread out, and none retries at once).

After the last attempt the failure is a :class:`RetriesExhausted` (a
:class:`~zarrdask.errors.StoreError`) saying how many attempts were made and
what the last error was; stores re-raise it as a ``StoreError`` naming the key.
Writes are retried like reads: storing the same bytes under the same key twice
is harmless, and a write reports success only when the store accepted it.
"""

from __future__ import annotations

import random
import time
from functools import partial
from typing import Any, Awaitable, Callable, Iterator, NamedTuple, Sequence, TypeVar

from .. import config
from .._pool import io_map
from ..errors import InvalidKeyError, ReadOnlyError, StoreError, ValueChangedError

__all__ = [
    "RetriesExhausted",
    "RetryPolicy",
    "is_transient",
    "http_status",
    "error_code",
    "describe",
    "key_failure",
    "raise_first_failure",
    "retry_call",
    "retry_batch",
    "map_retrying",
    "gather_retrying",
]

T = TypeVar("T")

#: the longest wait between two attempts, in seconds
MAX_DELAY = 20.0

# Exception classes (matched by name anywhere in the class's MRO, so that
# neither aiohttp, botocore, urllib3 nor requests has to be imported) that
# mean the connection failed, not the request: aiohttp, botocore, urllib3,
# http.client, requests.
_TRANSIENT_CLASSES = frozenset({
    "ClientConnectionError",  # aiohttp: reset, refused, server disconnected
    "ClientPayloadError",  # aiohttp: the body was cut off
    "ServerTimeoutError",  # aiohttp
    "HTTPClientError",  # botocore: the HTTP layer failed
    "EndpointConnectionError",  # botocore
    "ConnectionClosedError",  # botocore
    "ReadTimeoutError",  # botocore, urllib3
    "ConnectTimeoutError",  # botocore, urllib3
    "ResponseStreamingError",  # botocore: the body was cut off
    "IncompleteRead",  # http.client, urllib3
    "ProtocolError",  # urllib3: connection aborted
    "ChunkedEncodingError",  # requests
    "ConnectTimeout",  # requests
    "ReadTimeout",  # requests
})

# Error codes of object stores that mean "try again" whatever their status:
# S3 answers "RequestTimeout" with 400 when the connection stalled.
_TRANSIENT_CODES = frozenset({
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "RequestTimeout",
    "RequestTimeoutException",
    "InternalError",
    "ServiceUnavailable",
    "BandwidthLimitExceeded",
})

# Errors that are answers (or our own verdicts), never transient.
_FINAL = (
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    FileExistsError,
    PermissionError,
    InvalidKeyError,
    ReadOnlyError,
    ValueChangedError,
)


class RetriesExhausted(StoreError):
    """A transient failure persisted through every retry.

    Attributes
    ----------
    error : BaseException
        The last failure.
    attempts : int
        How many times the request was tried.
    """

    def __init__(self, error: BaseException, attempts: int) -> None:
        what = "attempt" if attempts == 1 else "attempts"
        super().__init__(
            f"{type(error).__name__}: {error} (transient; gave up after {attempts} {what})"
        )
        self.error = error
        self.attempts = attempts
        self.__cause__ = error


def describe(exc: BaseException) -> str:
    """``"Type: message"`` of a failure, for error messages (a
    :class:`RetriesExhausted` already says what failed and how often)."""
    return str(exc) if isinstance(exc, RetriesExhausted) else f"{type(exc).__name__}: {exc}"


def key_failure(store: object, what: str, key: str, error: BaseException) -> StoreError:
    """The error of a request for ``key`` that failed:
    ``"<store>: cannot <what> key '<key>': <the failure>"``, caused by ``error``."""
    failure = StoreError(f"{store!r}: cannot {what} key {key!r}: {describe(error)}")
    failure.__cause__ = error
    return failure


def raise_first_failure(store: object, what: str, keys: Sequence[str], results: Sequence[Any]) -> None:
    """Raise :func:`key_failure` for the first of ``results`` (the answers to
    requests for ``keys``, failures in place) that is an exception."""
    for key, result in zip(keys, results):
        if isinstance(result, BaseException):
            raise key_failure(store, what, key, result)


class RetryPolicy(NamedTuple):
    """How often to retry and how long to wait; :meth:`current` reads the settings."""

    retries: int
    backoff: float

    @classmethod
    def current(cls) -> "RetryPolicy":
        """The policy the settings ``retries`` and ``retry_backoff`` describe now."""
        return cls(max(int(config.get("retries")), 0), max(float(config.get("retry_backoff")), 0.0))

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (from 0): equal jitter
        over ``min(backoff * 2**retry, MAX_DELAY)``."""
        ceiling = min(self.backoff * (2.0 ** retry), MAX_DELAY)
        return ceiling / 2 + random.uniform(0, ceiling / 2)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or during (at most 8)."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 8:
        yield current
        seen += 1
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def _response(exc: BaseException) -> dict:
    response = getattr(exc, "response", None)
    return response if isinstance(response, dict) else {}


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception reports, if it reports one (botocore's
    ``ResponseMetadata.HTTPStatusCode``, aiohttp's ``status``, requests'
    ``response.status_code``, ``status_code`` / ``code`` of other clients)."""
    getters = (
        lambda: _response(exc).get("ResponseMetadata", {}).get("HTTPStatusCode"),
        lambda: getattr(exc, "status", None),
        lambda: getattr(exc, "status_code", None),
        lambda: getattr(getattr(exc, "response", None), "status_code", None),
        lambda: getattr(exc, "code", None),  # urllib; last: aiohttp deprecates it
    )
    for get in getters:
        value = get()
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def error_code(exc: BaseException) -> str | None:
    """An object store's error code (botocore's ``Error.Code``), if any."""
    code = _response(exc).get("Error", {}).get("Code")
    return code if isinstance(code, str) else None


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a failure worth retrying.

    Transient: HTTP 5xx and 429, object-store throttling and timeout codes,
    connection errors (reset, refused, dropped, cut-off bodies) and timeouts.
    Not transient: any other 4xx (including 401/403: authentication), a missing
    key, a permission error, zarrdask's own verdicts, and anything unknown.
    """
    for error in _chain(exc):
        if isinstance(error, RetriesExhausted) or isinstance(error, _FINAL):
            return False
        code = error_code(error)
        if code is not None and code in _TRANSIENT_CODES:
            return True
        status = http_status(error)
        if status is not None:
            return status == 429 or status >= 500
        if isinstance(error, (ConnectionError, TimeoutError)):
            return True
        if _names(error) & _TRANSIENT_CLASSES:
            return True
    return False


def retry_call(
    fn: Callable[[], T],
    *,
    transient: Callable[[BaseException], bool] = is_transient,
    policy: RetryPolicy | None = None,
) -> T:
    """``fn()``, called again after a transient failure, at most ``retries`` times.

    Raises
    ------
    RetriesExhausted
        If the last attempt also failed transiently.
    Exception
        Whatever ``fn`` raised that is not transient, unchanged.
    """
    policy = policy or RetryPolicy.current()
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as e:
            if not transient(e):
                raise
            if attempt >= policy.retries:
                raise RetriesExhausted(e, attempt + 1) from e
            time.sleep(policy.delay(attempt))
            attempt += 1


def retry_batch(
    run: Callable[[list[int]], Sequence[Any]],
    count: int,
    *,
    transient: Callable[[BaseException], bool] = is_transient,
    policy: RetryPolicy | None = None,
) -> list[Any]:
    """Results of a batch of ``count`` requests, retrying only the ones that
    failed transiently.

    ``run(indices)`` carries out the requests ``indices`` (all of them at
    first) and returns their results in that order, an exception in place of
    a request that failed. The requests that failed transiently are run again
    after the backoff; in the returned list a request that failed transiently
    every time holds a :class:`RetriesExhausted`, other failures their
    exception as ``run`` returned it.
    """
    out: list[Any] = [None] * count
    pending = list(range(count))
    attempt = 0
    while pending:
        results = run(pending)
        again = []
        for index, result in zip(pending, results):
            if isinstance(result, BaseException) and transient(result):
                policy = policy or RetryPolicy.current()  # read once a request failed, not for every batch
                if attempt < policy.retries:
                    again.append(index)
                    continue
                result = RetriesExhausted(result, attempt + 1)
            out[index] = result
        if again:
            time.sleep(policy.delay(attempt))
            attempt += 1
        pending = again
    return out


def _result_or_error(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as e:
        return e


def map_calls(calls: Sequence[Callable[[], Any]], limit: int) -> list[Any]:
    """Results of the blocking calls ``call()`` for every ``call`` of
    ``calls``, run concurrently on the I/O threads (at most ``limit`` at once;
    a single call runs in the calling thread), in order, failures in place
    (none made again)."""
    return io_map(_result_or_error, list(calls), limit)


def map_retrying(
    calls: Sequence[Callable[[], Any]],
    limit: int,
    *,
    transient: Callable[[BaseException], bool] = is_transient,
    policy: RetryPolicy | None = None,
) -> list[Any]:
    """:func:`map_calls`, each call made again after a transient failure.
    Results are in order, failures in place, as :func:`gather_retrying` gives them."""
    policy = policy or RetryPolicy.current()
    return map_calls([partial(retry_call, call, transient=transient, policy=policy) for call in calls], limit)


async def gather_retrying(
    calls: Sequence[Callable[[], Awaitable[Any]]],
    limit: int,
    *,
    transient: Callable[[BaseException], bool] = is_transient,
    policy: RetryPolicy | None = None,
) -> list[Any]:
    """Results of the coroutines ``call()`` for every ``call`` of ``calls``,
    run concurrently on the running event loop (at most ``limit`` at once),
    each made again after a transient failure (``retries``, ``retry_backoff``).

    Results are in order, failures in place: a :class:`RetriesExhausted` for a
    transient failure that outlasted the retries, any other exception as the
    call raised it.
    """
    import asyncio

    policy = policy or RetryPolicy.current()
    gate = asyncio.Semaphore(max(1, limit))

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        attempt = 0
        while True:
            async with gate:
                try:
                    return await call()
                except Exception as e:
                    error = e
            if not transient(error):
                return error
            if attempt >= policy.retries:
                return RetriesExhausted(error, attempt + 1)
            await asyncio.sleep(policy.delay(attempt))
            attempt += 1

    return await asyncio.gather(*(one(call) for call in calls))
