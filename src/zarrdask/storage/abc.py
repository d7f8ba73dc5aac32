"""The Store interface every storage backend implements.

A store is a flat key → bytes mapping (Zarr v2 spec "Storage"; zarr-specs v3
core "Stores"). Keys are ``/``-separated relative paths validated by
:mod:`zarrdask.storage.keys`. Reads are batched: a caller hands the store every
key (``get_many``) or every byte range of one key (``get_ranges``) it needs at
once, so remote stores can fetch them concurrently. A missing key reads as
``None``; it is never an exception.

Capability flags say what a store can do: ``writable``, ``listable`` and
``supports_partial_reads`` (ranges served without reading the whole value).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterable, Iterator, Mapping, Sequence

from ..errors import ReadOnlyError
from .byte_range import ByteRequest, resolve

Buffer = bytes  # values are returned as bytes (or any read-only buffer)


def ensure_bytes(value: object) -> bytes:
    """``value`` as immutable ``bytes``; any C-contiguous buffer is accepted.

    Stores call this in ``set`` so that a caller mutating its ``bytearray`` or
    numpy array afterwards cannot change what was stored.
    """
    if type(value) is bytes:
        return value
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise TypeError(
            f"store values must be bytes-like, got {type(value).__name__}"
        ) from None


def as_buffer(value: object) -> memoryview:
    """``value`` as a flat byte view, without copying; for stores that write the
    bytes out before ``set`` returns (a copy would only cost time)."""
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(f"store values must be bytes-like, got {type(value).__name__}") from None
    if not view.c_contiguous:
        return memoryview(view.tobytes())
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


class Store(ABC):
    """Abstract key-value store.

    Subclasses implement ``get_many``, ``set``, ``delete``, ``list`` and set the
    capability flags; everything else has a working default built on those.
    Stores must pickle (dask ships them to worker processes).
    """

    #: the store accepts ``set`` / ``delete``
    writable: bool = True
    #: the store can enumerate its keys
    listable: bool = True
    #: ``get_ranges`` reads only the requested bytes
    supports_partial_reads: bool = False

    # -- reads -------------------------------------------------------------
    @abstractmethod
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Values of ``keys`` in order; ``None`` for a missing key."""

    def get(self, key: str) -> bytes | None:
        """Value of one key, or ``None`` if it is missing."""
        return self.get_many([key])[0]

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        """Byte ranges of one value, in order; ``None`` if the key is missing.

        Ranges reaching past the end are clipped (as HTTP range requests are).
        """
        value = self.get(key)
        if value is None:
            return None
        view = memoryview(value)
        out = []
        for r in ranges:
            start, stop = resolve(r, len(view))
            out.append(bytes(view[start:stop]))
        return out

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds a value."""
        return self.get(key) is not None

    def getsize(self, key: str) -> int | None:
        """Size in bytes of a value, or ``None`` if the key is missing."""
        value = self.get(key)
        return None if value is None else len(value)

    # -- writes ------------------------------------------------------------
    def _check_writable(self, key: str = "") -> None:
        if not self.writable:
            where = f" (key {key!r})" if key else ""
            raise ReadOnlyError(f"{self!r} is read-only; cannot write{where}")

    @abstractmethod
    def set(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key`` (atomically where the backend allows)."""

    def set_many(self, items: Mapping[str, bytes]) -> None:
        """Store several values; backends may do it concurrently."""
        for key, value in items.items():
            self.set(key, value)

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key``; a missing key is not an error."""

    def delete_many(self, keys: Iterable[str]) -> None:
        """Remove several keys; missing keys are not an error."""
        for key in keys:
            self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key starting with ``prefix`` (``""``: everything)."""
        self._check_writable(prefix)
        self.delete_many(list(self.list_prefix(prefix)))

    # -- listing -----------------------------------------------------------
    @abstractmethod
    def list(self) -> Iterator[str]:
        """Every key in the store."""

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key starting with ``prefix`` (full keys, not relative ones)."""
        return (k for k in self.list() if k.startswith(prefix))

    def list_dir(self, prefix: str) -> list[str]:
        """Sorted names of the direct children under ``prefix``.

        ``prefix`` is a path (``""`` for the root, ``"a/b"`` or ``"a/b/"``); a child
        is either a key directly under it or the first segment of a longer key.
        """
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        names = set()
        for key in self.list_prefix(prefix):
            rest = key[len(prefix):]
            if rest:
                names.add(rest.split("/", 1)[0])
        return sorted(names)

    # -- lifecycle ---------------------------------------------------------
    def close(self) -> None:
        """Release resources (files, sessions). The default does nothing."""

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def with_read_only(self) -> "Store":
        """A read-only view of this store."""
        from .wrappers import ReadOnlyStore

        return ReadOnlyStore(self)
