"""Run-time settings: thread counts, I/O tuning and decoding limits.

``zarrdask.config.set(threads=4)`` changes a setting for the process; the
environment variable ``ZARRDASK_THREADS`` sets the initial thread count.

Settings
--------
threads
    Threads the chunk engine decodes and encodes with.
write_empty_chunks
    Store chunks equal to the fill value (False: skip them, delete stale ones).
read_missing_chunks
    Read a chunk that is not stored as the fill value, as Zarr says it is
    (default True). False: strict reads — a read that needs a chunk the
    store does not hold (for sharded arrays also an inner chunk whose index
    entry is empty) raises :class:`~zarrdask.errors.ChunkNotFoundError`
    naming the store, the array and every missing key; reads with every
    chunk present cost the same requests. Arrays opened with
    ``read_missing_chunks=`` use their own value (zarr-python 3's name for
    both). The environment variable ``ZARRDASK_READ_MISSING_CHUNKS``
    (``0``/``false``/``no`` or ``1``/``true``/``yes``) sets the initial value
    (docs/guarantees.md, "Strict reads").
coalesce_gap
    Sharding partial reads: byte ranges at most this many bytes apart are
    fetched as one request (0: only adjacent ranges). Requests to one batch run
    concurrently, so merging saves request charges, not round trips; bytes in
    the gaps are transferred for nothing. Default 16 KiB (docs/performance.md,
    "Remote stores").
io_concurrency
    Stores whose requests wait on a network (``FsspecStore`` on object stores
    and HTTP, ``ZarrPythonStore``): how many requests the engine keeps in
    flight at once for one read or write (default 64). ``FsspecStore`` on S3
    also sizes s3fs's connection pool to this unless ``storage_options`` sets
    ``config_kwargs={"max_pool_connections": n}``.
retries
    Remote stores (``FsspecStore``, ``ZarrPythonStore``) retry a request that
    failed transiently (HTTP 5xx or 429, a dropped or reset connection, a
    timeout) this many times before raising ``StoreError``; 0 disables retries.
retry_backoff
    Base delay in seconds of the exponential backoff between those retries:
    retry ``n`` (from 0) waits between half and all of
    ``min(retry_backoff * 2**n, 20)`` seconds (equal jitter).
max_chunk_bytes
    The most bytes one chunk may decode to (and a codec may allocate for it)
    when its decoded size is not fixed by the metadata (variable-length strings
    and bytes; docs/formats.md, "Bounded decoding"); when an array is opened or
    created, it also bounds the chunks whose decoded size the metadata fixes
    (elements × item size; for sharded arrays each inner chunk and the shard
    index). A positive integer.
default_zarr_format
    The format (2 or 3) of what is created when no ``zarr_format`` is given:
    arrays, groups, and the groups xarray Datasets and DataTrees are written
    to (default 3).
url_store
    What serves an ``s3://``, ``gs://``, ``az://`` or ``http(s)://`` URL given
    as a string: ``"obstore"`` (an ``ObstoreStore`` over obstore's store, with
    ``storage_options`` mapped onto obstore's options; an option it cannot map
    raises ``StorageOptionError``), ``"fsspec"`` (an ``FsspecStore``: s3fs,
    gcsfs, adlfs, fsspec's HTTP) or ``"auto"``: obstore when it is installed
    and takes every option given, fsspec otherwise. Other URLs (``memory://``,
    chained ``a::b://``, ``reference://``) always go through fsspec. The
    environment variable ``ZARRDASK_URL_STORE`` sets the initial value
    (default ``"auto"``; docs/stores.md, "URLs: obstore or fsspec").
cache
    Whether arrays opened without a ``cache`` keyword read through the
    process's chunk cache (docs/performance.md, "Chunk cache"): ``False``
    (the default), ``True`` (a value read once is served from memory until a
    write through zarrdask in this process replaces it, or the budget pushes
    it out) or ``"revalidate"`` (a cached value is served only after the
    store confirmed, with a conditional request, that it is still current).
    The environment variable ``ZARRDASK_CACHE`` sets the initial value
    (``0``/``1``/``revalidate``).
cache_bytes
    The chunk cache's budget in bytes for the whole process (each dask worker
    process has its own cache): an integer or a string such as ``"512MB"``
    or ``"2GiB"``; ``0`` keeps nothing. Default 256 MiB; the environment
    variable ``ZARRDASK_CACHE_BYTES`` sets the initial value.
max_json_depth
    How deeply a metadata document may nest (see :mod:`zarrdask.metadata.limits`
    and docs/formats.md, "Limits"). A positive integer.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

def _env_bool(name: str, default: bool) -> bool:
    """A yes/no environment variable (unset or empty: ``default``)."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"environment variable {name}={value!r}: expected one of 1, true, yes, on, 0, false, no, off")


_DEFAULTS: dict[str, Any] = {
    # the Zarr format of new arrays and groups when none is given
    "default_zarr_format": 3,
    # how deeply JSON arrays and objects may nest in a metadata value (a document: 8 levels more)
    "max_json_depth": 200,
    # threads used by the chunk engine for decoding / encoding
    "threads": int(os.environ.get("ZARRDASK_THREADS", "0")) or (os.cpu_count() or 1),
    # write chunks equal to the fill value (False: skip them, delete stale ones)
    "write_empty_chunks": False,
    # read missing chunks as the fill value (False: strict reads, ChunkNotFoundError)
    "read_missing_chunks": _env_bool("ZARRDASK_READ_MISSING_CHUNKS", True),
    # sharding partial reads: byte ranges at most this far apart are fetched as one
    "coalesce_gap": 16 << 10,
    # remote stores: requests in flight at once for one read or write
    "io_concurrency": 64,
    # the most bytes one chunk may decode to (and a codec may allocate for it) when its
    # decoded size is not fixed by the metadata: variable-length strings / bytes, and
    # the bytes→bytes stages of their codec chains (see docs/formats.md, "Bounded decoding")
    "max_chunk_bytes": 2 << 30,
    # remote stores: retries of a transiently failed request, and the backoff base (s)
    "retries": 3,
    "retry_backoff": 0.5,
    # what serves s3:// gs:// az:// http(s):// URLs: "auto", "obstore" or "fsspec"
    "url_store": os.environ.get("ZARRDASK_URL_STORE", "auto").strip().lower() or "auto",
    # the chunk cache: whether arrays use it by default, and its budget for the process
    "cache": os.environ.get("ZARRDASK_CACHE", "0"),
    "cache_bytes": os.environ.get("ZARRDASK_CACHE_BYTES", str(256 << 20)),
}
URL_STORES = ("auto", "obstore", "fsspec")
#: the values of the setting ``cache`` (and of the ``cache`` keyword of arrays)
CACHE_MODES = (False, True, "revalidate")


def parse_cache(value: Any, what: str = "zarrdask setting 'cache'") -> bool | str:
    """A ``cache`` value checked: ``False``, ``True`` or ``"revalidate"``
    (also ``"off"``, ``"on"`` and the environment's ``"0"``, ``"1"``)."""
    if isinstance(value, str):
        words = {"off": False, "0": False, "false": False, "": False, "on": True, "1": True, "true": True,
                 "revalidate": "revalidate"}
        value = words.get(value.strip().lower(), value)
    if value is False or value is True or value == "revalidate":
        return value
    raise ValueError(f"{what} must be one of False, True or 'revalidate', found {value!r}")


def parse_size(value: Any, what: str = "zarrdask setting 'cache_bytes'") -> int:
    """A size in bytes: a non-negative integer, or a string such as ``"512MB"``
    or ``"2 GiB"`` (dask's ``parse_bytes``)."""
    if isinstance(value, str):
        from dask.utils import parse_bytes

        try:
            value = parse_bytes(value)
        except (ValueError, TypeError):
            raise ValueError(f"{what} must be a size such as 536870912 or '512MB', found {value!r}") from None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{what} must be a non-negative number of bytes, found {value!r}")
    return value
_DEFAULTS["cache"] = parse_cache(_DEFAULTS["cache"], "ZARRDASK_CACHE")
_size = _DEFAULTS["cache_bytes"].strip()
_DEFAULTS["cache_bytes"] = int(_size) if _size.isdigit() else parse_size(_size, "ZARRDASK_CACHE_BYTES")
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


_POSITIVE_INT = ("max_chunk_bytes", "max_json_depth", "io_concurrency")
_BOOL = ("read_missing_chunks",)


def set(**values: Any):  # noqa: A001 - mirrors dask.config.set
    """Change settings; usable as a context manager to restore them afterwards."""
    for name, value in values.items():
        get(name)
        if name in _POSITIVE_INT and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"zarrdask setting {name!r} must be a positive integer, found {value!r}")
        if name == "default_zarr_format" and (value not in (2, 3) or isinstance(value, bool)):
            raise ValueError(f"zarrdask setting 'default_zarr_format' must be 2 or 3, found {value!r}")
        if name in _BOOL and not isinstance(value, bool):
            raise ValueError(f"zarrdask setting {name!r} must be True or False, found {value!r}")
        if name == "url_store" and value not in URL_STORES:
            raise ValueError(f"zarrdask setting 'url_store' must be one of {URL_STORES}, found {value!r}")
    values = {name: _checked(name, value) for name, value in values.items()}
    old = dict(_settings)
    _settings.update(values)
    return _restore(old)


def _checked(name: str, value: Any) -> Any:
    """A setting's value in the form it is kept in (sizes in bytes, cache modes checked)."""
    if name == "cache":
        return parse_cache(value)
    if name == "cache_bytes":
        return parse_size(value)
    return value
