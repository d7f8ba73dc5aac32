"""Buffers for codecs and their callers: flat byte views of any buffer
(:func:`byte_view`), copying a decoded result into a caller's buffer after a
size check (:func:`write_into`, :func:`size_error`), and reusable scratch arrays,
shared by the process's threads, to decode a chunk into before copying part
of it elsewhere (:func:`scratch_array`). No codec logic here."""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import numpy as np

from .. import config
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


#: the free scratch buffers of the whole process, the one given back last at
#: the end; shared by every thread rather than kept per thread, so a read that
#: decodes on many I/O threads (each decoding now and then) holds as many
#: buffers as decode at once, not one per thread that ever decoded
_free: list["_Buffer"] = []
_free_lock = threading.Lock()
_MAX_VIEWS = 4  # shapes remembered per buffer


def _kept() -> int:
    """The most free buffers kept: two for each thread of the setting
    ``threads`` (the decodes that run at once, each with one nested in it), at least four."""
    return max(4, 2 * int(config.get("threads")))


class _Buffer:
    """One scratch memory, and the context :func:`scratch_array`
    returns (a class rather than a generator: it is entered once per chunk
    of a read): ``array``, what it was asked for, and ``raw``, that memory
    as bytes (``None`` for object arrays, which get a fresh array). It keeps
    the arrays it was given as (per shape, data type and order) and their
    bytes: a chunk of the usual shape is handed out without making a numpy
    view, which costs the most when the read before it left the caches cold."""

    __slots__ = ("base", "views", "array", "raw")

    def __init__(self, nbytes: int | None) -> None:
        self.base = None if nbytes is None else np.empty(max(nbytes, 1), dtype=np.uint8)
        self.views: dict[tuple, tuple[np.ndarray, memoryview]] = {}
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
            kept = _kept()
            with _free_lock:
                _free.append(self)
                if len(_free) > kept:  # the one given back longest ago goes
                    del _free[0]


def scratch_array(shape: tuple[int, ...], dtype: np.dtype, order: str = "C") -> _Buffer:
    """A reusable, uninitialised array to decode a chunk into before copying part of
    it elsewhere (``with scratch_array(shape, dtype) as buf``; the context's
    ``raw`` is its memory as bytes). Reusing buffers spares a fresh
    allocation (and its page faults) per chunk, and the one given back last,
    handed out first, is the one most likely still in cache. Buffers are
    shared by all threads: one in use is never handed out again until given
    back (nested uses get distinct buffers)."""
    if dtype.hasobject:
        buf = _Buffer(None)
        buf.array = np.empty(shape, dtype=dtype, order=order)  # type: ignore[arg-type]
        return buf
    nbytes = math.prod(shape) * dtype.itemsize  # math.prod: a tenth of np.prod's cost on a tuple
    found = None
    with _free_lock:
        i = len(_free) - 1  # the last one given back first: the usual fit
        while i >= 0 and not nbytes <= _free[i].base.nbytes <= 4 * nbytes + 4096:  # type: ignore[union-attr]
            i -= 1
        if i >= 0:
            found = _free.pop(i)
    buf = found if found is not None else _Buffer(nbytes)
    key = (tuple(shape), dtype, order)
    buf.array, buf.raw = buf.views.get(key) or buf._view(key, nbytes)
    return buf


def _after_fork_in_child() -> None:
    """A forked child starts with no free buffers and a lock no parent thread holds."""
    global _free_lock
    _free_lock = threading.Lock()
    _free.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
