"""The fixed-length UTF-32 string data type: numpy ``U<n>``.

v2: typestrs ``"<U12"``, ``">U12"``; fill value a string —
``zarr-specs/v2-v2.0.rst`` "Data type encoding" (``U``). v3: extension
``fixed_length_utf32`` with ``length_bytes`` (a multiple of 4, ``U<length_bytes/4>``)
— ``zarr-extensions/data-types-fixed_length_utf32.md`` "Data type
representation"; fill value a string of at most ``length_bytes / 4`` code
points ("Fill value representation").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..json_checks import field_error
from .base import DataType, DataTypes, configured_length

__all__ = ["FixedLengthUTF32"]


def _decode_str(value: Any, dtype: np.dtype, key: str, field: str) -> np.str_:
    n = dtype.itemsize // 4
    if not isinstance(value, str) or len(value) > n:
        raise field_error(key, field, value, f"a string of at most {n} code points for {dtype}")
    return np.str_(value)


class FixedLengthUTF32(DataType):
    """``fixed_length_utf32`` ↔ numpy ``U<n>``."""

    V3_EXTENSION_NAMES = ("fixed_length_utf32",)
    V2_KINDS = ("U",)
    NUMPY_KINDS = ("U",)
    V2_UNIT_BYTES = 4
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> FixedLengthUTF32:
        return cls(np.dtype(f"U{configured_length(doc, name, key, field, 4) // 4}"))

    @classmethod
    def v2_byte_order_required(cls, size: int) -> bool:
        return True  # 4 bytes per character

    def to_v3(self, struct_name: str | None = None) -> dict:
        return {"name": "fixed_length_utf32", "configuration": {"length_bytes": self.dtype.itemsize}}

    def default_fill(self) -> np.str_:
        return np.str_("")

    def coerce_fill(self, value: Any, key: str, field: str) -> np.str_:
        return _decode_str(value, self.dtype, key, field)

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.str_:
        return _decode_str(doc, self.dtype, key, field)

    fill_from_v3 = fill_from_v2

    def fill_to_v2(self, value: Any) -> str:
        return str(value)

    fill_to_v3 = fill_to_v2
