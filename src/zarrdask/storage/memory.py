"""An in-memory store backed by a ``dict`` (zarr-specs v3 core, "Stores"), and
the store over any other mapping of ``str`` keys to bytes.

Keys are validated with :func:`~zarrdask.storage.keys.validate_key`; values are
stored as immutable ``bytes``. Byte ranges are served from a ``memoryview`` of
the stored value, so ``get_ranges`` copies only the requested bytes.

Any :class:`collections.abc.MutableMapping` of ``str`` to bytes works in place
of the ``dict``: zarr-python 2 stores (``DirectoryStore``, ``LMDBStore``, ...)
and other dict-like stores. Every operation is one mapping operation, done in
the calling thread; batches are plain loops.

A reader (:meth:`MemoryStore.reader`) holds the value object its first read
found, so every later read comes from that version: a ``set`` binds a new
object to the key and never changes the old one (exact). In-process locks are
keyed by the mapping object, so every ``MemoryStore`` over one mapping shares
them.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Iterator, Mapping, MutableMapping, Sequence

from .abc import Store, as_buffer, ensure_bytes
from .byte_range import ByteRequest, slice_ranges
from .capabilities import ExactReaders
from .keys import validate_key, validate_prefix
from .readers import ValueReader

__all__ = ["MemoryStore"]


class _HeldValueReader(ValueReader):
    """Holds the value object the first read found (exact)."""

    exact = True

    def _read_first(self, ranges: list[ByteRequest]) -> list[bytes] | None:
        value = self.store._data.get(self.key)
        if value is None:
            return None
        self._value = value
        self._view = as_buffer(value)
        return slice_ranges(self._view, ranges)

    def _read_later(self, ranges: list[ByteRequest]) -> list[bytes]:
        return slice_ranges(self._view, ranges)

    def _same(self) -> bool:
        now = self.store._data.get(self.key)
        return now is self._value or (now is not None and as_buffer(now) == self._view)

    def _release(self) -> None:
        pass  # the value stays referenced: unchanged() compares against it


class MemoryStore(ExactReaders, Store):
    """A store that keeps every value in a ``dict``, or in any other mutable mapping.

    Parameters
    ----------
    data : dict or collections.abc.MutableMapping, optional
        The mapping to use (a new ``dict`` by default). It is used as is, not
        copied, so the caller can inspect what was written. Its keys must be
        valid store keys: a ``dict``'s are checked here, another mapping's
        (which may live on disk or a server) as they are used.
    read_only : bool, default False
        Refuse writes with :class:`~zarrdask.errors.ReadOnlyError`.

    Notes
    -----
    Each operation is a single mapping operation, so over a ``dict`` the store
    is safe to use from several threads (over another mapping, as safe as the
    mapping is). A pickled copy of a ``dict`` store is an independent snapshot
    (as it is in another process); another mapping is pickled as it pickles
    itself.

    Examples
    --------
    >>> store = MemoryStore()
    >>> store.set("a/b", b"xyz")
    >>> store.get_many(["a/b", "missing"])
    [b'xyz', None]
    >>> store.list_dir("")
    ['a']
    """

    supports_partial_reads = True
    listable = True

    def __init__(
        self, data: MutableMapping[str, bytes] | None = None, *, read_only: bool = False
    ) -> None:
        if data is None:
            data = {}
        elif isinstance(data, dict):
            for key in data:
                validate_key(key)
        self._data = data
        self.writable = not read_only

    @property
    def data(self) -> MutableMapping[str, bytes]:
        """The underlying mapping."""
        return self._data

    def __repr__(self) -> str:
        ro = ", read_only=True" if not self.writable else ""
        data = self._data
        # (len() of a mapping on disk or a server would list it)
        what = f"{len(data)} keys" if isinstance(data, dict) else type(data).__name__
        return f"MemoryStore(<{what}>{ro})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MemoryStore)
            and self._data is other._data
            and self.writable == other.writable
        )

    def __hash__(self) -> int:
        return hash((id(self._data), self.writable))

    # -- reads -------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        data = self._data
        out: list[bytes | None] = []
        for key in keys:
            validate_key(key)
            out.append(data.get(key))
        return out

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        value = self._data.get(validate_key(key))
        if value is None:
            return None
        return slice_ranges(as_buffer(value), ranges)

    def reader(self, key: str) -> ValueReader:
        """An exact reader: holds the value object its first read finds."""
        return _HeldValueReader(self, validate_key(key))

    @property
    def location(self) -> Hashable:
        return ("memory", id(self._data))

    def exists(self, key: str) -> bool:
        return validate_key(key) in self._data

    def getsize(self, key: str) -> int | None:
        value = self._data.get(validate_key(key))
        return None if value is None else as_buffer(value).nbytes

    # -- writes ------------------------------------------------------------
    def set(self, key: str, value: bytes) -> None:
        validate_key(key)
        self._check_writable(key)
        self._data[key] = ensure_bytes(value)

    def set_many(self, items: Mapping[str, bytes]) -> None:
        for key in items:
            validate_key(key)
            self._check_writable(key)
        self._data.update({key: ensure_bytes(value) for key, value in items.items()})

    def delete(self, key: str) -> None:
        validate_key(key)
        self._check_writable(key)
        self._data.pop(key, None)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            validate_key(key)
            self._check_writable(key)
        for key in keys:
            self._data.pop(key, None)

    def delete_prefix(self, prefix: str) -> None:
        validate_prefix(prefix)
        self._check_writable(prefix)
        for key in [k for k in list(self._data) if k.startswith(prefix)]:
            self._data.pop(key, None)

    # -- listing -----------------------------------------------------------
    def list(self) -> Iterator[str]:
        return iter(list(self._data))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        return iter([k for k in list(self._data) if k.startswith(prefix)])

    def list_dir(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        return super().list_dir(prefix)
