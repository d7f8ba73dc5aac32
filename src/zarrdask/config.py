"""Run-time settings: thread counts, I/O tuning and decoding limits.

``zarrdask.config.set(threads=4)`` changes a setting for the process; the
environment variable ``ZARRDASK_THREADS`` sets the initial thread count.
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
    # the most bytes one chunk may decode to (and a codec may allocate for it) when its
    # decoded size is not fixed by the metadata: variable-length strings / bytes, and
    # the bytes→bytes stages of their codec chains (see docs/formats.md, "Bounded decoding")
    "max_chunk_bytes": 2 << 30,
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
