"""Buffers for codecs and their callers: flat byte views of any buffer
(:func:`byte_view`), copying a decoded result into a caller's buffer after a
size check (:func:`write_into`, :func:`size_error`), and reusable per-thread
scratch arrays to decode a chunk into before copying part of it elsewhere
(:func:`scratch_array`). No codec logic here."""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Any, Iterator

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


@contextmanager
def scratch_array(shape: tuple[int, ...], dtype: np.dtype, order: str = "C") -> Iterator[np.ndarray]:
    """A reusable, uninitialised array to decode a chunk into before copying part of
    it elsewhere. Reusing one buffer per thread spares a fresh allocation (and
    its page faults) per chunk and keeps the buffer in cache. Nested uses get
    distinct buffers."""
    if dtype.hasobject:
        yield np.empty(shape, dtype=dtype, order=order)
        return
    nbytes = math.prod(shape) * dtype.itemsize  # math.prod: a tenth of np.prod's cost on a tuple
    free: list[np.ndarray] = _scratch.__dict__.setdefault("free", [])
    i = next((i for i, b in enumerate(free) if nbytes <= b.nbytes <= 4 * nbytes + 4096), None)
    buf = np.empty(max(nbytes, 1), dtype=np.uint8) if i is None else free.pop(i)
    try:
        yield buf[:nbytes].view(dtype).reshape(shape, order=order)
    finally:
        free.append(buf)
        if len(free) > _MAX_FREE:
            free.pop(0)
