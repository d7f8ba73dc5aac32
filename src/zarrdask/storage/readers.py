"""Reading byte ranges of one stored value: the one reader protocol.

:class:`RangeReader` is what everything that reads parts of a value takes —
a codec reading part of a chunk (``sharding_indexed``: its index, then the
inner chunks it needs; the ``bytes`` codec: the span of elements a small
selection needs), the engine running such reads for many chunks at once, an
array counting a shard's inner chunks. It has one method, ``read(ranges)``.

:meth:`Store.reader <zarrdask.storage.abc.Store.reader>` returns a
:class:`ValueReader`, the range reader of one key whose reads all come from
one version of the value: an *exact* reader (``exact``) serves every later
read from the version its first read saw, or raises
:class:`~zarrdask.errors.ValueChangedError`; a *verifying* one
(:class:`VerifyingReader`, the default) reads whatever is current and says
afterwards, with ``unchanged()``, whether the value was replaced meanwhile.
See :mod:`zarrdask.storage.abc` for which store gives which.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..errors import StoreError, ValueChangedError
from .byte_range import ByteRequest

__all__ = ["RangeReader", "ValueReader", "VerifyingReader"]


@runtime_checkable
class RangeReader(Protocol):
    """Byte ranges of one stored value (a store key, or a part of another value)."""

    def read(self, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        """The bytes of ``ranges`` in order (clipped at the end of the value, as
        HTTP range requests are), or ``None`` if the value is missing."""


class _Values(Protocol):
    """What a reader needs of its store."""

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None: ...

    def exists(self, key: str) -> bool: ...


class ValueReader:
    """Reads byte ranges of one value in several steps, from one version of it.

    Returned by :meth:`Store.reader`. The first :meth:`read` decides which
    version of the value (or its absence) the reader stands for. Use it as a
    context manager, or call :meth:`close`.

    Attributes
    ----------
    key : str
        The key read.
    version
        The store's version of the value the first ``read()`` saw, where the
        reader knows it (``LocalStore``: the file's identity, size and
        modification time; S3 and HTTP: a strong ETag); else ``None``.
    exact : bool
        True: every ``read()`` is served from the version of the value the
        first ``read()`` saw (or raises
        :class:`~zarrdask.errors.ValueChangedError`). False: later reads see
        whatever is current and :meth:`unchanged` tells whether that is still
        the first version. A remote reader may settle this with its first
        read (an HTTP server without ETags); read it after reading.

    Notes
    -----
    Subclasses implement ``_read_first``, ``_read_later`` and ``_same`` (and
    ``_still_missing``, ``_release`` where the defaults do not fit); the
    bookkeeping of the first read, closing and thread safety live here.
    """

    exact: bool = False
    #: the store's version of the value the first read saw (see
    #: ``Store.get_with_versions``), where the reader knows it; else ``None``
    version: Any = None

    def __init__(self, store: _Values, key: str) -> None:
        self.store = store
        self.key = key
        self._started = False
        self._missing = False
        self._closed = False
        self._first_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key!r} of {self.store!r}>"

    def read(self, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        """The bytes of ``ranges`` (clipped as ``Store.get_ranges`` clips them),
        or ``None`` if the key is missing — decided by the first read: a reader
        that found the key missing keeps reading ``None``.

        Raises
        ------
        ValueChangedError
            An exact reader cannot serve the first version any more, or the
            value a verifying reader found has been deleted since.
        StoreError
            The reader is closed, or the store failed.
        """
        if self._closed:
            raise StoreError(f"{self!r}: the reader is closed")
        ranges = list(ranges)
        if not self._started:
            with self._first_lock:
                if not self._started:
                    found = self._read_first(ranges)
                    self._missing = found is None
                    self._started = True
                    return found
        if self._missing:
            return None
        return self._read_later(ranges)

    def read_each(self, ranges: Sequence[ByteRequest], each: Callable[[tuple[int, Any]], None]) -> list[bytes] | None:
        """What :meth:`read` returns, each range's bytes also handed to
        ``each((j, data))`` as soon as they are in, by the thread that read
        them, while the others are on their way (a shard's inner chunks
        decoded as their bytes arrive). Here each range is read on its own,
        concurrently on the I/O threads: the same requests as one read of them
        all makes. Raises as :meth:`read` does."""
        from .._pool import io_map

        ranges = list(ranges)

        def one(j: int) -> list[bytes] | None:
            got = self.read([ranges[j]])
            if got is not None:
                each((j, got[0]))
            return got

        got = io_map(one, list(range(len(ranges))))
        return None if any(g is None for g in got) else [g[0] for g in got]

    def unchanged(self) -> bool:
        """False if the value may have been replaced (or created, or deleted)
        since the first :meth:`read`; True before any read."""
        if not self._started:
            return True
        return self._still_missing() if self._missing else self._same()

    def close(self) -> None:
        """Release what the reader holds (a file descriptor, a value). Idempotent."""
        if not self._closed:
            self._closed = True
            self._release()

    def __enter__(self) -> "ValueReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a reader dropped unclosed releases its descriptor
        try:
            if not getattr(self, "_closed", True):
                self.close()
        except Exception:
            pass

    def _changed(self, what: str) -> ValueChangedError:
        """The error of a later read that cannot be served from the first version."""
        return ValueChangedError(
            f"{self.store!r}: key {self.key!r} changed while it was being read: {what}; "
            "read it again from the start",
            key=self.key,
        )

    # -- for subclasses ------------------------------------------------------
    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        raise NotImplementedError

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        raise NotImplementedError

    def _same(self) -> bool:
        raise NotImplementedError

    def _still_missing(self) -> bool:
        return not self.store.exists(self.key)

    def _release(self) -> None:
        pass


class VerifyingReader(ValueReader):
    """The default reader: ``read()`` is ``store.get_ranges``; ``unchanged()``
    reads the ranges of the first ``read()`` again and compares the bytes.

    A later ``read()`` that finds the key deleted raises
    :class:`~zarrdask.errors.ValueChangedError` (there is nothing to serve).
    """

    exact = False

    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        found = self.store.get_ranges(self.key, ranges)
        self._first = (ranges, None if found is None else [bytes(v) for v in found])
        return found

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        found = self.store.get_ranges(self.key, ranges)
        if found is None:
            raise self._changed("it has been deleted")
        return found

    def _same(self) -> bool:
        ranges, first = self._first
        now = self.store.get_ranges(self.key, ranges)
        return now is not None and [bytes(v) for v in now] == first

    def _release(self) -> None:
        # keep the first bytes: unchanged() may be asked after closing
        pass
