"""The ``transpose`` codec: array → array, permutes the chunk's dimensions.

Spec: zarr-specs v3 ``codecs/transpose`` ("Configuration parameters", "Format
and algorithm"): the encoded array ``B`` has ``B_shape[i] = A_shape[order[i]]``
and ``B[B_pos] = A[A_pos]`` with ``B_pos[i] = A_pos[order[i]]`` — that is,
``B = numpy.transpose(A, order)``.

Name: ``transpose``. Tested example configuration::

    {"name": "transpose", "configuration": {"order": [2, 0, 1]}}

``order`` must be an explicit permutation of ``0 .. ndim-1``. The constants
``"C"`` / ``"F"`` of the draft spec were removed from it and zarr-python 3.1 does
not accept them either, so they are rejected with a :class:`CodecError` that
says what to write instead.

Encoding and decoding return numpy views (no copy); the ``bytes`` codec makes
the single C-order copy when it serialises the result.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..errors import CodecError
from .abc import ArrayArrayCodec, ChunkSpec

__all__ = ["TransposeCodec"]


def _parse_order(order: Any) -> tuple[int, ...]:
    if isinstance(order, str):
        raise CodecError(
            f"codec 'transpose': configuration field 'order' must be a list of "
            f"integers, found {order!r}; the constants \"C\" and \"F\" are no longer "
            f"part of the spec (write [0, 1, ..., n-1] for C and [n-1, ..., 1, 0] for F)"
        )
    if not isinstance(order, Iterable):
        raise CodecError(f"codec 'transpose': configuration field 'order' must be a list of integers, found {order!r}")
    items = tuple(order)
    if not all(isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in items):
        raise CodecError(f"codec 'transpose': configuration field 'order' must be a list of integers, found {list(items)!r}")
    parsed = tuple(int(i) for i in items)
    if sorted(parsed) != list(range(len(parsed))):
        raise CodecError(
            f"codec 'transpose': configuration field 'order' must be a permutation of "
            f"0..{len(parsed) - 1}, found {list(parsed)}"
        )
    return parsed


class TransposeCodec(ArrayArrayCodec):
    """Permute the dimensions of a chunk: ``encode = numpy.transpose(chunk, order)``.

    Parameters
    ----------
    order : sequence of int
        A permutation of ``range(ndim)``.
    """

    name = "transpose"

    def __init__(self, order: Iterable[int]) -> None:
        self.order = _parse_order(order)
        self.inverse = tuple(int(i) for i in np.argsort(self.order)) if self.order else ()

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "TransposeCodec":
        config = dict(configuration or {})
        if "order" not in config:
            raise CodecError("codec 'transpose': configuration field 'order' is required")
        order = config.pop("order")
        if config:
            raise CodecError(f"codec 'transpose': unknown configuration field(s) {sorted(config)}")
        return cls(order)

    def get_config(self) -> dict[str, Any]:
        return {"order": list(self.order)}

    def _check_rank(self, ndim: int) -> None:
        if len(self.order) != ndim:
            raise CodecError(
                f"codec 'transpose': 'order' {list(self.order)} has {len(self.order)} "
                f"entries, but the chunk has {ndim} dimensions"
            )

    def validate(self, spec: ChunkSpec) -> None:
        self._check_rank(len(spec.shape))

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        self._check_rank(len(spec.shape))
        return spec.with_shape(tuple(spec.shape[i] for i in self.order))

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        self._check_rank(np.ndim(chunk))
        return np.transpose(chunk, self.order)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        self._check_rank(np.ndim(chunk))
        return np.transpose(chunk, self.inverse)
