"""Partial reads of chunks stored as their elements.

An array→bytes codec that stores a chunk as its elements one after another
in C order, with nothing else (the ``bytes`` codec; a v2 array without
filters: :meth:`~zarrdask.codecs.abc.ArrayBytesCodec.raw_dtype`), can serve a
small selection by reading only the span from the first element it needs to
the last (:class:`~zarrdask.indexing.span.ElementSpan`): one range request
for the span, with one for the value's last byte, which checks that the
stored chunk has the size it must have (ranges are clipped to the value). A
value of another size is read whole and decoded, which reports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..indexing.span import ElementSpan
from ..storage.byte_range import OffsetRequest, RangeRequest
from .abc import ArrayBytesCodec, ChunkSpec, PartialDecode, PartialSteps

if TYPE_CHECKING:
    from ..indexing import ChunkProjection

__all__ = ["ElementRanges", "elements_dtype"]


def elements_dtype(codec: ArrayBytesCodec, spec: ChunkSpec) -> np.dtype | None:
    """The data type ``codec`` stores a C-order chunk of ``spec`` as, element
    after element, or ``None`` (another order, variable-length or empty
    elements, or a codec that stores something else)."""
    if spec.order != "C" or spec.dtype.hasobject or spec.dtype.itemsize == 0:
        return None
    return codec.raw_dtype(spec)


class ElementRanges(PartialDecode):
    """:class:`~zarrdask.codecs.abc.PartialDecode` for array→bytes codecs whose
    stored chunk is its elements (``raw_dtype``): a small selection reads only
    its span of elements."""

    def partial_steps(
        self, spec: ChunkSpec, proj: "ChunkProjection", key: str = "", max_bytes: int | None = None,
        out: np.ndarray | None = None,
    ) -> PartialSteps | None:
        stored = elements_dtype(self, spec)
        span = None if stored is None or not spec.nbytes else ElementSpan.of(proj, spec.shape)
        return None if span is None else self._span_steps(spec, proj, span, stored, key)  # type: ignore[arg-type]

    def partial_bytes(self, spec: ChunkSpec, proj: "ChunkProjection", max_bytes: int | None = None) -> int:
        """The span's bytes (and the last byte) and the elements selected from
        them (a result of its own: ``out`` is not used), or the whole chunk
        twice when it is not read in part; ``max_bytes`` is not used (one span,
        one step)."""
        stored = elements_dtype(self, spec)
        span = None if stored is None or not spec.nbytes else ElementSpan.of(proj, spec.shape)
        return 2 * spec.nbytes if span is None else 2 * span.count * stored.itemsize + 1  # type: ignore[union-attr]

    def _span_steps(
        self, spec: ChunkSpec, proj: "ChunkProjection", span: ElementSpan, stored: np.dtype, key: str
    ) -> PartialSteps:
        size = stored.itemsize
        got = yield [RangeRequest(span.first * size, span.count * size), OffsetRequest(spec.nbytes - 1)]
        if got is None:
            return None
        part, tail = got
        if len(part) == span.count * size and len(tail) == 1:
            return span.select(np.frombuffer(part, dtype=stored, count=span.count))
        whole = yield [OffsetRequest(0)]  # not the size it must be: decoding it says so
        if whole is None:
            return None
        return proj.select(self.decode(whole[0], spec, key))  # type: ignore[attr-defined]
