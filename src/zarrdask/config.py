"""Run-time settings: thread counts and I/O tuning.

``zarrdask.config.set(threads=4)`` changes a setting for the process; the
environment variable ``ZARRDASK_THREADS`` sets the initial thread count.

Settings
--------
threads
    Threads the chunk engine decodes and encodes with.
write_empty_chunks
    Store chunks equal to the fill value (False: skip them, delete stale ones).
coalesce_gap
    Sharding partial reads: byte ranges at most this far apart are fetched as one.
retries
    Remote stores (``FsspecStore``, ``ZarrPythonStore``) retry a request that
    failed transiently (HTTP 5xx or 429, a dropped or reset connection, a
    timeout) this many times before raising ``StoreError``; 0 disables retries.
retry_backoff
    Base delay in seconds of the exponential backoff between those retries:
    retry ``n`` (from 0) waits between half and all of
    ``min(retry_backoff * 2**n, 20)`` seconds (equal jitter).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

_DEFAULTS: dict[str, Any] = {
    # threads used by the chunk engine for decoding / encoding
    "threads": int(os.environ.get("ZARRDASK_THREADS", "0")) or (os.cpu_count() or 1),
    # write chunks equal to the fill value (False: skip them, delete stale ones)
    "write_empty_chunks": False,
    # sharding partial reads: byte ranges at most this far apart are fetched as one
    "coalesce_gap": 1 << 20,
    # remote stores: retries of a transiently failed request, and the backoff base (s)
    "retries": 3,
    "retry_backoff": 0.5,
}
_settings: dict[str, Any] = dict(_DEFAULTS)


def get(name: str) -> Any:
    """Return the current value of a setting."""
    try:
        return _settings[name]
    except KeyError:
        raise KeyError(f"unknown zarrdask setting {name!r}; known: {sorted(_settings)}") from None


@contextmanager
def _restore(old: dict[str, Any]) -> Iterator[None]:
    try:
        yield
    finally:
        _settings.clear()
        _settings.update(old)


def set(**values: Any):  # noqa: A001 - mirrors dask.config.set
    """Change settings; usable as a context manager to restore them afterwards."""
    for name in values:
        get(name)
    old = dict(_settings)
    _settings.update(values)
    return _restore(old)
