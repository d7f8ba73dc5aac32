"""Buffers for codecs and their callers: flat byte views of any buffer
(:func:`byte_view`), copying a decoded result into a caller's buffer after a
size check (:func:`write_into`, :func:`size_error`), and reusable per-thread
scratch arrays to decode a chunk into before copying part of it elsewhere
(:func:`scratch_array`). No codec logic here."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from ..errors import CorruptChunkError

__all__ = ["byte_view", "size_error", "write_into", "scratch_array"]


def byte_view(data: Any) -> memoryview:
    """A flat, C-contiguous ``"B"`` memoryview of ``data`` (no copy when possible).

    Accepts ``bytes``, ``bytearray``, ``memoryview`` and numpy arrays of any
    dtype (datetime and structured arrays do not export a buffer themselves, so
    arrays are viewed as ``uint8`` first).
    """
    if isinstance(data, np.ndarray):
        arr = np.ascontiguousarray(data)
        return memoryview(arr.reshape(-1).view(np.uint8))
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.format == "B" and mv.ndim == 1 and mv.c_contiguous:
        return mv
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    return mv.cast("B")


def size_error(key: str, codec: str, found: int, expected: int) -> CorruptChunkError:
    """The error for a chunk that decodes to the wrong number of bytes."""
    return CorruptChunkError(
        f"chunk {key!r}: {codec} decoded {found} bytes, expected {expected}"
    )


def write_into(out: Any, result: Any, *, key: str, codec: str) -> Any:
    """Copy the decoded ``result`` into ``out`` after checking the sizes match.

    Returns ``out`` itself, now filled.
    """
    target = byte_view(out)
    src = byte_view(result)
    if src.nbytes != target.nbytes:
        raise size_error(key, codec, src.nbytes, target.nbytes)
    if src.obj is not target.obj:
        target[:] = src
    return out


_scratch = threading.local()
_MAX_FREE = 4  # buffers kept per thread
_MAX_VIEWS = 4  # shapes remembered per buffer


class _Buffer:
    """One thread's scratch memory, and the context :func:`scratch_array`
    returns (a class rather than a generator: it is entered once per chunk
    of a read): ``array``, what it was asked for, and ``raw``, that memory
    as bytes (``None`` for object arrays, which get a fresh array). It keeps
    the arrays it was given as (per shape, data type and order) and their
    bytes: a chunk of the usual shape is handed out without making a numpy
    view, which costs the most when the read before it left the caches cold."""

    __slots__ = ("base", "views", "free", "array", "raw")

    def __init__(self, nbytes: int | None, free: list["_Buffer"]) -> None:
        self.base = None if nbytes is None else np.empty(max(nbytes, 1), dtype=np.uint8)
        self.views: dict[tuple, tuple[np.ndarray, memoryview]] = {}
        self.free = free
        self.array: Any = None
        self.raw: memoryview | None = None

    def _view(self, key: tuple, nbytes: int) -> tuple[np.ndarray, memoryview]:
        shape, dtype, order = key
        if len(self.views) >= _MAX_VIEWS:
            self.views.clear()
        found = self.views[key] = (self.base[:nbytes].view(dtype).reshape(shape, order=order),  # type: ignore[index]
                                   memoryview(self.base[:nbytes]))  # type: ignore[index]
        return found

    def __enter__(self) -> np.ndarray:
        return self.array

    def __exit__(self, *exc: object) -> None:
        if self.base is not None:
            free = self.free
            free.append(self)
            if len(free) > _MAX_FREE:
                free.pop(0)


def scratch_array(shape: tuple[int, ...], dtype: np.dtype, order: str = "C") -> _Buffer:
    """A reusable, uninitialised array to decode a chunk into before copying part of
    it elsewhere (``with scratch_array(shape, dtype) as buf``; the context's
    ``raw`` is its memory as bytes). Reusing one buffer per thread spares a
    fresh allocation (and its page faults) per chunk and keeps the buffer in
    cache. Nested uses get distinct buffers."""
    try:
        free: list[_Buffer] = _scratch.free
    except AttributeError:
        free = _scratch.free = []
    if dtype.hasobject:
        buf = _Buffer(None, free)
        buf.array = np.empty(shape, dtype=dtype, order=order)  # type: ignore[arg-type]
        return buf
    nbytes = math.prod(shape) * dtype.itemsize  # math.prod: a tenth of np.prod's cost on a tuple
    i = len(free) - 1  # the last one given back first: the usual fit
    while i >= 0 and not nbytes <= free[i].base.nbytes <= 4 * nbytes + 4096:  # type: ignore[union-attr]
        i -= 1
    buf = free.pop(i) if i >= 0 else _Buffer(nbytes, free)
    key = (tuple(shape), dtype, order)
    buf.array, buf.raw = buf.views.get(key) or buf._view(key, nbytes)
    return buf
