"""The fixed-length byte string data type: numpy ``S<n>``.

v2: typestr ``"|S12"``; fill value base64 of the bytes (``zarr-specs/v2-v2.0.rst``
"Fill value encoding"; zarr-python 2's legacy ``0`` means ``b""``). v3:
``null_terminated_bytes`` with ``length_bytes``, as zarr-python 3.1 writes it
(no document in ``specs/``; read and written exactly as zarr-python 3.1.6
does); fill value base64, or a list of byte values. Trailing NUL bytes are not
part of the value (numpy ``S`` semantics).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..json_checks import field_error, is_json_int
from .base import DataType, DataTypes, configured_length
from .binary import b64decode, b64encode, bytes_from_json

__all__ = ["NullTerminatedBytes"]


def _decode_fixed_bytes(b: bytes, dtype: np.dtype, key: str, field: str, found: Any) -> np.bytes_:
    if len(b.rstrip(b"\x00")) > dtype.itemsize:
        raise field_error(key, field, found, f"at most {dtype.itemsize} bytes for {dtype}")
    return np.bytes_(b.rstrip(b"\x00"))


class NullTerminatedBytes(DataType):
    """``null_terminated_bytes`` ↔ numpy ``S<n>``."""

    V3_EXTENSION_NAMES = ("null_terminated_bytes",)
    V2_KINDS = ("S",)
    NUMPY_KINDS = ("S",)
    V2_UNIT_BYTES = 1
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes,
                depth: int) -> NullTerminatedBytes:
        return cls(np.dtype(f"S{configured_length(doc, name, key, field)}"))

    @classmethod
    def v2_byte_order_required(cls, size: int) -> bool:
        return False  # bytes have no byte order

    def to_v3(self, struct_name: str | None = None) -> dict:
        return {"name": "null_terminated_bytes", "configuration": {"length_bytes": self.dtype.itemsize}}

    def default_fill(self) -> np.bytes_:
        return np.bytes_(b"")

    def coerce_fill(self, value: Any, key: str, field: str) -> np.bytes_:
        if isinstance(value, str):
            try:
                value = value.encode("ascii")
            except UnicodeEncodeError:
                raise field_error(key, field, value, f"ASCII text or bytes for {self.dtype}") from None
        if isinstance(value, (bytes, bytearray, np.bytes_)):
            return _decode_fixed_bytes(bytes(value), self.dtype, key, field, value)
        raise field_error(key, field, value, f"bytes of at most {self.dtype.itemsize} for {self.dtype}")

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.bytes_:
        if is_json_int(doc) and doc == 0:
            return np.bytes_(b"")
        b = b64decode(doc, key, field, f"{self.dtype} (or 0 for zero bytes)")
        return _decode_fixed_bytes(b, self.dtype, key, field, doc)

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.bytes_:
        return _decode_fixed_bytes(bytes_from_json(doc, self.dtype, key, field), self.dtype, key, field, doc)

    def fill_to_v2(self, value: Any) -> str:
        return b64encode(bytes(value))

    fill_to_v3 = fill_to_v2
