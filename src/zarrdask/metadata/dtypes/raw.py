"""Raw bytes: numpy ``V<n>``, as v3 raw bits ``r<N>`` or zarr-python's ``raw_bytes``.

v2: typestr ``"|V16"``; fill value base64 of the bytes (``zarr-specs/v2-v2.0.rst``
"Fill value encoding"; zarr-python 2's legacy ``0`` means all zero bytes). v3
core type ``r<N>`` (N a multiple of 8 → ``V<N/8>``; ``zarr-specs/v3-data-types.rst``
"Core data types"): fill value a list of ``N/8`` integers in ``[0, 255]``
("Permitted fill values" says "length equal to <N>"; ``N/8`` bytes is what it
means and what zarrs does). ``raw_bytes`` with ``length_bytes`` is what
zarr-python 3.1 writes for numpy ``V<n>`` (no document in ``specs/``; read and
written exactly as zarr-python 3.1.6 does), with base64 fill values; it is the
default v3 form of ``V<n>``. Both forms read either fill value form.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnknownDataTypeError
from ..json_checks import field_error
from ..limits import check_itemsize
from .base import DataType, DataTypes, configured_length, no_configuration
from .binary import b64encode, bytes_from_json, void_from_bytes, void_from_v2, void_to_b64, zero_void

__all__ = ["RawBits", "RawBytes", "VoidType"]


class VoidType(DataType):
    """What numpy void types (raw and structured) share: all zero bytes by default; in v2,
    base64 of the bytes as stored (or zarr-python 2's legacy ``0``)."""

    __slots__ = ()

    def default_fill(self) -> np.void:
        return zero_void(self.dtype)

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.void:
        return void_from_v2(doc, self.dtype, key, field)

    def fill_to_v2(self, value: Any) -> str:
        return void_to_b64(value, self.dtype)


class _Raw(VoidType):
    """What both raw forms share; the v3 fill value's JSON form is each one's own."""

    V2_UNIT_BYTES = 1
    __slots__ = ()

    @classmethod
    def v2_byte_order_required(cls, size: int) -> bool:
        return False  # bytes have no byte order

    def coerce_fill(self, value: Any, key: str, field: str) -> np.void:
        if isinstance(value, np.void):
            value = value.tobytes()
        if isinstance(value, (bytes, bytearray)):
            return void_from_bytes(bytes(value), self.dtype, key, field, value)
        raise field_error(key, field, value, f"{self.dtype.itemsize} bytes for {self.dtype}")

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.void:
        return void_from_bytes(bytes_from_json(doc, self.dtype, key, field), self.dtype, key, field, doc)


class RawBytes(_Raw):
    """``raw_bytes`` ↔ numpy ``V<n>`` (the default v3 form of ``V<n>``)."""

    V3_EXTENSION_NAMES = ("raw_bytes",)
    V2_KINDS = ("V",)
    NUMPY_KINDS = ("V",)
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> RawBytes:
        return cls(np.dtype(f"V{configured_length(doc, name, key, field)}"))

    def to_v3(self, struct_name: str | None = None) -> dict:
        return {"name": "raw_bytes", "configuration": {"length_bytes": self.dtype.itemsize}}

    def fill_to_v3(self, value: Any) -> str:
        return b64encode(value.tobytes())


class RawBits(_Raw):
    """``r<N>`` ↔ numpy ``V<N/8>`` (read, and written where the document said ``r<N>``)."""

    V3_NAME_PATTERN = r"r\d{1,19}"
    V3_PATTERN_TEXT = "r<N>"
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> RawBits:
        no_configuration(name, doc, key, field)
        bits = int(name[1:])
        if bits < 8 or bits % 8:
            raise field_error(key, field, name, "raw bits r<N> with N a positive multiple of 8", UnknownDataTypeError)
        return cls(np.dtype(f"V{check_itemsize(bits // 8, key, field, name)}"))

    def to_v3(self, struct_name: str | None = None) -> str:
        return f"r{8 * self.dtype.itemsize}"

    def fill_to_v3(self, value: Any) -> list[int]:
        return list(value.tobytes())
