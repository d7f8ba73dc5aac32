"""An in-memory store backed by a ``dict`` (zarr-specs v3 core, "Stores").

Keys are validated with :func:`~zarrdask.storage.keys.validate_key`; values are
stored as immutable ``bytes``. Byte ranges are served from a ``memoryview`` of
the stored value, so ``get_ranges`` copies only the requested bytes.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, MutableMapping, Sequence

from .abc import Store, ensure_bytes
from .byte_range import ByteRequest, resolve
from .keys import validate_key, validate_prefix

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """A store that keeps every value in a ``dict``.

    Parameters
    ----------
    data : dict, optional
        The mapping to use. It is used as is, not copied, so the caller can
        inspect what was written; its keys must be valid store keys.
    read_only : bool, default False
        Refuse writes with :class:`~zarrdask.errors.ReadOnlyError`.

    Notes
    -----
    Each operation is a single ``dict`` operation, so the store is safe to use
    from several threads. A pickled copy is an independent snapshot (as it is
    in another process).

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
        else:
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
        return f"MemoryStore(<{len(self._data)} keys>{ro})"

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
        view = memoryview(value)
        size = len(view)
        out = []
        for request in ranges:
            start, stop = resolve(request, size)
            out.append(bytes(view[start:stop]))
        return out

    def exists(self, key: str) -> bool:
        return validate_key(key) in self._data

    def getsize(self, key: str) -> int | None:
        value = self._data.get(validate_key(key))
        return None if value is None else len(value)

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
