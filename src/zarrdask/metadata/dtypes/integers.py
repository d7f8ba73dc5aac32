"""The integer data types ``int8`` … ``int64`` and ``uint8`` … ``uint64``.

v2: typestrs ``"|i1"``, ``"<i2"``, ``">u8"``, …; fill value a JSON integer
(an integral float such as ``3.0`` is read too) — ``zarr-specs/v2-v2.0.rst``
"Data type encoding", "Fill value encoding". v3: core types; fill value "a JSON
number with no fraction or exponent part that is within the representable
range" — ``zarr-specs/v3-data-types.rst`` "Core data types", "Permitted fill
values".
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ..json_checks import field_error, is_json_int
from .base import CoreType, native
from .float_formats import is_ml_dtype

__all__ = ["Integer"]


def _decode_int(value: Any, dtype: np.dtype, key: str, field: str, *, lenient: bool = False) -> np.integer:
    """An integer fill value in the range of ``dtype`` (``lenient``: integral floats too)."""
    info = ml_dtypes.iinfo(dtype) if is_ml_dtype(dtype) else np.iinfo(dtype)
    expected = f"an integer in [{info.min}, {info.max}] for {native(dtype).name}"
    if lenient and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not is_json_int(value):
        raise field_error(key, field, value, expected)
    if not info.min <= value <= info.max:
        raise field_error(key, field, value, expected)
    return native(dtype).type(value)


class Integer(CoreType):
    """``int8`` … ``uint64`` ↔ numpy ``i1`` … ``u8``."""

    V3_CORE_NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    V2_KINDS = ("i", "u")
    NUMPY_KINDS = ("i", "u")
    V2_SIZES = (1, 2, 4, 8)
    __slots__ = ()

    def to_v3(self, struct_name: str | None = None) -> str:
        k, n = self.dtype.kind, self.dtype.itemsize
        if n not in (1, 2, 4, 8):  # pragma: no cover - numpy has no other integer sizes
            raise self.unrepresentable_v3()
        return f"{'u' if k == 'u' else ''}int{8 * n}"

    def coerce_fill(self, value: Any, key: str, field: str) -> np.integer:
        if isinstance(value, (bool, np.bool_)):
            raise field_error(key, field, value, f"an integer for {self.dtype}")
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        if isinstance(value, (int, np.integer)):
            return _decode_int(int(value), self.dtype, key, field)
        raise field_error(key, field, value, f"an integer for {native(self.dtype).name}")

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.integer:
        return _decode_int(doc, self.dtype, key, field, lenient=True)

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.integer:
        return _decode_int(doc, self.dtype, key, field)

    def fill_to_v2(self, value: Any) -> int:
        return int(value)

    fill_to_v3 = fill_to_v2
