"""What the value-changing codecs (``cast_value``, ``scale_offset``) need to know
about a real-number data type: integral or floating point, its range, its
precision, which special values it has, and how a scalar of it is written in
JSON (the Zarr v3 fill value encoding).

Both codecs are defined only for the integer and floating-point types of
zarr-extensions: numpy's ``int8`` … ``uint64``, ``float16`` … ``float64``, and
the ``ml_dtypes`` types (``bfloat16``, ``float8_*``, ``float6_*``,
``float4_e2m1fn``, ``int2``/``int4``/``uint2``/``uint4``, one value per byte).
Those are recognised by the numpy dtype alone (``ml_dtypes`` dtypes have kind
``"V"``, except ``float8_e5m2``: ``kind`` does not tell them apart), so the codecs
work on them before the data-type registry knows their v3 names.

A scalar's JSON is read by the data-type registry when the registry writes the
dtype under its own name; otherwise (an ``ml_dtypes`` type the registry does not
know yet) by the rules those types' READMEs give: the core integer and IEEE 754
forms (a JSON number, ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, ``"0x…"`` bits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import CodecError, MetadataError
from ..metadata.dtypes.float_formats import is_ml_dtype
from ..metadata.json_checks import is_json_int

__all__ = ["NumericType", "numeric_type", "scalar_from_json"]

_NUMPY_FLOATS = ("float16", "float32", "float64")


@dataclass(frozen=True)
class NumericType:
    """A real-number data type (native byte order).

    For integers ``lo``/``hi`` are the range (Python ints) and ``bits`` the
    width; for floats ``lo``/``hi`` are the finite range (``lo > 0`` for
    ``float8_e8m0fnu``), ``precision`` the significand bits (with the implicit
    one), ``emin`` the exponent of the smallest normal number.
    """

    dtype: np.dtype
    is_int: bool
    lo: Any
    hi: Any
    bits: int = 0
    precision: int = 0
    emin: int = 0
    has_nan: bool = False
    has_inf: bool = False
    has_neg_zero: bool = False

    @property
    def name(self) -> str:
        return self.dtype.name

    def contains(self, other: "NumericType") -> bool:
        """Whether every value of ``other`` (special values included) is a value of this type."""
        if self.is_int:
            return other.is_int and self.lo <= other.lo and other.hi <= self.hi
        if other.is_int:
            return max(-other.lo, other.hi) <= 2**self.precision and self.lo <= other.lo and other.hi <= self.hi
        return (
            other.precision <= self.precision
            and other.emin - other.precision >= self.emin - self.precision
            and self.lo <= other.lo and other.hi <= self.hi
            and (self.has_nan or not other.has_nan)
            and (self.has_inf or not other.has_inf)
        )


@lru_cache(maxsize=64)
def _describe(dtype: np.dtype) -> NumericType | None:
    if dtype.kind in "iu" and not is_ml_dtype(dtype):
        info = np.iinfo(dtype)
        return NumericType(dtype, True, int(info.min), int(info.max), bits=info.bits)
    if dtype.name in _NUMPY_FLOATS and not is_ml_dtype(dtype):
        return _float_type(dtype, np.finfo(dtype))
    if not is_ml_dtype(dtype):
        return None
    import ml_dtypes

    try:
        info = ml_dtypes.iinfo(dtype)
    except (ValueError, TypeError):
        pass
    else:
        return NumericType(dtype, True, int(info.min), int(info.max), bits=int(info.bits))
    try:
        return _float_type(dtype, ml_dtypes.finfo(dtype))
    except (ValueError, TypeError):
        return None


def _float_type(dtype: np.dtype, info: Any) -> NumericType:
    with np.errstate(invalid="ignore", over="ignore"):
        special = np.array([np.nan, np.inf, -0.0]).astype(dtype).astype(np.float64)
    return NumericType(
        dtype, False, float(info.min), float(info.max),
        bits=8 * dtype.itemsize,
        precision=int(info.nmant) + 1,
        emin=int(np.log2(float(info.smallest_normal))),
        has_nan=bool(np.isnan(special[0])),
        has_inf=bool(np.isinf(special[1])),
        has_neg_zero=bool(special[2] == 0 and np.signbit(special[2])),
    )


def numeric_type(dtype: Any, codec: str, role: str) -> NumericType:
    """The :class:`NumericType` of ``dtype``, or :class:`CodecError` naming
    ``codec`` and ``role`` (e.g. "the array data type") when it is not a
    real-number type (bool, complex, strings, raw bytes, structs, datetimes)."""
    dt = np.dtype(dtype)
    found = _describe(dt.newbyteorder("=") if dt.byteorder not in "=|" else dt)
    if found is None:
        raise CodecError(
            f"codec {codec!r}: {role} is {dt} ({_v3_name(dt)}); the codec is defined only for "
            "integer and floating-point data types (int2 ... int64, uint2 ... uint64, "
            "float4_e2m1fn ... float64, bfloat16)"
        )
    return found


def _v3_name(dtype: np.dtype) -> str:
    from ..metadata.dtypes.api import data_type_to_v3

    try:
        return repr(data_type_to_v3(dtype))
    except Exception:  # no v3 form: the numpy name says enough
        return repr(dtype.name)


def _registry_type(t: NumericType) -> Any:
    """The registry's data type for ``t`` when it writes it under ``t``'s own name, else ``None``."""
    from ..metadata.dtypes.registry import REGISTRY

    try:
        found = REGISTRY.for_dtype(t.dtype)
        return found if found.to_v3() == t.name else None
    except MetadataError:
        return None


def scalar_from_json(doc: Any, t: NumericType, codec: str, field: str) -> np.generic:
    """A scalar of type ``t`` from its fill-value JSON ``doc``; :class:`CodecError`
    naming ``codec`` and ``field`` (e.g. ``"offset"``, ``"scalar_map.encode[0][1]"``)."""
    found = _registry_type(t)
    try:
        if found is not None:
            return found.decode_fill_v3(doc, "<codec>", field)
        return _fallback_scalar(doc, t)
    except (MetadataError, ValueError, OverflowError):
        raise CodecError(
            f"codec {codec!r}: configuration field {field!r}: found {doc!r}, expected a scalar "
            f"of data type {t.name} in its fill value JSON encoding"
        ) from None


def _fallback_scalar(doc: Any, t: NumericType) -> np.generic:
    """The core integer / IEEE 754 fill value forms, for a type the registry does not know."""
    if t.is_int:
        if not is_json_int(doc) or not t.lo <= doc <= t.hi:
            raise ValueError(doc)
        return np.array(int(doc)).astype(t.dtype)[()]
    if isinstance(doc, str):
        if doc == "NaN" and t.has_nan:
            value = np.float64(np.nan)
        elif doc in ("Infinity", "-Infinity") and t.has_inf:
            value = np.float64(np.inf if doc == "Infinity" else -np.inf)
        elif re.fullmatch(r"0x[0-9a-fA-F]{%d}" % (2 * t.dtype.itemsize), doc):
            return np.array(int(doc, 16), dtype=f"u{t.dtype.itemsize}").view(t.dtype)[()]
        else:
            raise ValueError(doc)
        return np.array(value).astype(t.dtype)[()]
    if not (is_json_int(doc) or isinstance(doc, float)):
        raise ValueError(doc)
    value = np.float64(doc)
    cast = np.array(value).astype(t.dtype)
    if not np.isfinite(cast.astype(np.float64)) and np.isfinite(value):
        raise ValueError(doc)  # too large for the type
    return cast[()]
