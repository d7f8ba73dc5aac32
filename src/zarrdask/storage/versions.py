"""Versions of stored values, and asking whether a value is still a version.

The chunk cache's revalidation mode (:mod:`zarrdask.storage.cache`) keeps
each value with the store's name of its version and, before serving it
again, asks the store whether that version is still current — without
reading the value where the store can
(:meth:`Store.get_with_versions <zarrdask.storage.abc.Store.get_with_versions>`,
:meth:`Store.get_if_changed <zarrdask.storage.abc.Store.get_if_changed>`):

* **files** (``LocalStore``): the version is the file's device, inode, size
  and modification time (writes replace files by rename: a new inode); the
  question is one ``stat``, no read;
* **S3 and HTTP** (``FsspecStore`` through s3fs or fsspec's HTTP,
  ``ObstoreStore``): the version is the strong ETag of the response that
  carried the value; the question is a ``GET`` with ``If-None-Match: <etag>``
  (RFC 9110 "Conditional Requests"), answered ``304 Not Modified`` without a
  body when the value is unchanged, or with the new value (``fetch``) or one
  byte of it otherwise.

Stores without versions keep the defaults: no version, so a revalidating
read is a normal read.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from .._pool import thread_map
from ..errors import StoreError
from .conditional import MISSING, NOT_MODIFIED, Reply
from .files import pread_all
from .retry import describe, retry_batch

__all__ = ["file_version", "FileVersions", "etag_get_with_versions", "etag_get_if_changed"]


def _strong(etag: str | None) -> bool:
    """A strong ETag (``W/"..."`` is weak: ``If-None-Match`` compares it weakly)."""
    return bool(etag) and not etag.startswith("W/")  # type: ignore[union-attr]


def file_version(st: os.stat_result) -> tuple:
    """The version of a file: device, inode, size and modification time."""
    return ("file", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class FileVersions:
    """``get_with_versions`` and ``get_if_changed`` for ``LocalStore``
    (uses its ``_open_file`` and ``_path``)."""

    def _read_versioned(self, key: str) -> tuple[bytes | None, Any]:
        fd, st = self._open_file(key, self._path(key))  # type: ignore[attr-defined]
        if fd is None:
            return None, None
        try:
            return pread_all(fd, st.st_size, 0), file_version(st)
        except OSError as e:
            raise StoreError(f"{self!r}: cannot read key {key!r}: {e}") from e
        finally:
            os.close(fd)

    def get_with_versions(self, keys: Sequence[str]) -> list[tuple[bytes | None, Any]]:
        """Each value with its file's version (read through one descriptor)."""
        return thread_map(self._read_versioned, list(keys))

    def get_if_changed(
        self, keys: Sequence[str], versions: Sequence[Any], *, fetch: bool = True
    ) -> list[tuple[bool, bytes | None, Any]]:
        """One ``stat`` per key; the changed ones read (``fetch``)."""
        out: list[Any] = []
        changed = []
        for i, (key, version) in enumerate(zip(keys, versions)):
            try:
                now = file_version(os.stat(self._path(key)))  # type: ignore[attr-defined]
            except OSError:
                now = None
            if version is not None and now == version:
                out.append((False, None, version))
            else:
                out.append((True, None, None))
                changed.append(i)
        if fetch and changed:
            for i, (value, version) in zip(changed, self.get_with_versions([keys[i] for i in changed])):
                out[i] = (True, value, version)
        return out


def _run(store: Any, keys: Sequence[str], backends: Sequence[Any], call: Callable[[int, Any], Any]) -> list[Any]:
    """``call(i, backends[i])`` (a coroutine) for every key, concurrently,
    transient failures retried; any other failure a ``StoreError`` naming its key."""
    if not backends:
        return []
    runner = backends[0]

    def run(indices: list[int]) -> list[Any]:
        return runner.run([lambda i=i: call(i, backends[i]) for i in indices])

    results = retry_batch(run, len(backends))
    for key, result in zip(keys, results):
        if isinstance(result, BaseException):
            err = StoreError(f"{store!r}: cannot read key {key!r}: {describe(result)}")
            raise err from result
    return results


def _value_or_missing(store: Any, key: str, reply: Any) -> tuple[bytes | None, Any]:
    if reply is MISSING:
        return None, None
    if not isinstance(reply, Reply):
        raise StoreError(f"{store!r}: cannot read key {key!r}: the server answered {reply!r} to a plain read")
    return reply.data, reply.etag if _strong(reply.etag) else None


def etag_get_with_versions(store: Any, keys: Sequence[str], backends: Sequence[Any]) -> list[tuple[bytes | None, Any]]:
    """Each value with its strong ETag (one ``GET`` per key, concurrently)."""
    replies = _run(store, keys, backends, lambda i, b: b.get(None, None))
    return [_value_or_missing(store, key, reply) for key, reply in zip(keys, replies)]


def etag_get_if_changed(
    store: Any, keys: Sequence[str], backends: Sequence[Any], versions: Sequence[Any], fetch: bool
) -> list[tuple[bool, bytes | None, Any]]:
    """One ``GET`` with ``If-None-Match`` per key, concurrently: answered
    ``304`` for an unchanged value, else with the value (``fetch``) or its
    first byte (only the new ETag is wanted)."""
    header = None if fetch else "bytes=0-0"
    replies = _run(store, keys, backends, lambda i, b: b.get(header, None, if_none_match=versions[i]))
    out: list[tuple[bool, bytes | None, Any]] = []
    for key, version, reply in zip(keys, versions, replies):
        if reply is NOT_MODIFIED and version is not None:
            out.append((False, None, version))
        elif reply is MISSING or not isinstance(reply, Reply):  # missing, or an empty value asked for a byte
            out.append((True, None, None))
        else:
            out.append((True, reply.data if fetch else None, reply.etag if _strong(reply.etag) else None))
    return out
