"""The IEEE 754 data types ``float16``, ``float32``, ``float64``, and the float JSON forms complex types share.

v2: typestrs ``"<f2"``, ``"<f4"``, ``">f8"``, …; fill value a JSON number or
``"NaN"``, ``"Infinity"``, ``"-Infinity"`` — ``zarr-specs/v2-v2.0.rst``
"Fill value encoding". v3: core types (``float16`` optional); fill value a JSON
number, one of those three strings, or ``"0x…"``, the bits as an unsigned
integer with exactly ``2 * itemsize`` hex digits — ``zarr-specs/v3-data-types.rst``
"Permitted fill values". Hex values are decoded by viewing the unsigned bits,
so a NaN payload survives exactly. Encoding for v3: a NaN whose bits equal the
spec's (and numpy's) default quiet NaN becomes ``"NaN"``, any other NaN the hex
form; v2 has no payload form, every NaN is ``"NaN"``.

:func:`decode_float` and :func:`encode_float` serve the small floats of
:mod:`.small_floats` too, each with the special values its bits have
(:func:`.float_formats.float_format`): ``"NaN"`` and the infinities only where
the type has them, ``"NaN"`` as the bits its README names, hex forms of
``2 * itemsize`` digits (the upper bits of a sub-byte type are ignored).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ..json_checks import field_error, is_json_int
from .base import CoreType, native
from .float_formats import float_format, is_ml_dtype

__all__ = ["Float", "coerce_number", "decode_float", "encode_float"]



def _float_from_bits(bits: int, fdtype: np.dtype) -> np.floating:
    fmt = float_format(fdtype)
    return np.array(bits & fmt.mask, dtype=fmt.uint).view(fdtype)[()]


def _float_bits(x: np.floating) -> int:
    x = np.asarray(x)
    return int(x.view(float_format(x.dtype).uint))


def _small_float(value: Any, fdtype: np.dtype, key: str, field: str) -> np.generic:
    """A number as a small float (:mod:`.small_floats`): refused where it rounds to no
    finite value; ``0`` for a type without zero (``float8_e8m0fnu``) gives the value
    nearest to it, the smallest (``0x00``), as tensorstore reads it."""
    fmt = float_format(fdtype)
    try:
        x = float(value)
    except OverflowError:
        x = float("inf")
    y = fdtype.type(x)
    if x != x:  # a Python NaN (not from JSON): the type's "NaN"
        if fmt.nan_bits is not None:
            return _float_from_bits(fmt.nan_bits, fdtype)
        raise field_error(key, field, value, f"a number representable as {fdtype.name} (it has no NaN)")
    if math.isinf(x) and fmt.has_inf:
        return y
    if x == 0 and np.isnan(y):  # no zero: the nearest value, the smallest
        return _float_from_bits(0, fdtype)
    if abs(x) >= fmt.max + fmt.half_ulp or np.isnan(y):
        raise field_error(key, field, value, f"a number representable as {fdtype.name}")
    return y


def decode_float(value: Any, fdtype: np.dtype, key: str, field: str, *, allow_hex: bool) -> np.floating:
    """A float fill value (v2 and v3 forms; the ``"0x…"`` form only with ``allow_hex``, as in v3)."""
    fdtype = native(fdtype)
    fmt = float_format(fdtype)
    if (is_json_int(value) or isinstance(value, float)) and is_ml_dtype(fdtype):
        return _small_float(value, fdtype, key, field)
    if is_json_int(value) or isinstance(value, float):
        try:
            if fdtype.itemsize == 8:  # a Python number becomes a float64 or raises OverflowError
                return fdtype.type(value)
            with np.errstate(over="ignore"):
                return fdtype.type(value)
        except OverflowError:
            raise field_error(key, field, value, f"a number representable as {fdtype.name}") from None
    if isinstance(value, str):
        if value == "NaN" and fmt.nan_bits is not None:
            return _float_from_bits(fmt.nan_bits, fdtype)
        if value == "Infinity" and fmt.has_inf:
            return fdtype.type(np.inf)
        if value == "-Infinity" and fmt.has_inf:
            return fdtype.type(-np.inf)
        if allow_hex and value.startswith("0x"):
            digits = value[2:]
            if len(digits) == 2 * fdtype.itemsize and re.fullmatch(r"[0-9a-fA-F]+", digits):
                return _float_from_bits(int(digits, 16), fdtype)
    forms = [f for f, has in (('"NaN"', fmt.nan_bits is not None), ('"Infinity", "-Infinity"', fmt.has_inf)) if has]
    if allow_hex:
        forms.append(f'a "0x" bit pattern of {2 * fdtype.itemsize} hex digits')
    raise field_error(key, field, value, f"a JSON number{''.join(', ' + f for f in forms)} for {fdtype.name}")


def encode_float(x: Any, *, v3: bool) -> float | str:
    """The JSON of a float fill value (``v3``: a NaN with a payload as its hex bits)."""
    x = np.asarray(x)[()]
    if np.isnan(x):
        if v3 and _float_bits(x) != float_format(x.dtype).nan_bits:
            return f"0x{_float_bits(x):0{2 * x.itemsize}x}"
        return "NaN"
    if np.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(x)


def coerce_number(value: Any, dtype: np.dtype, key: str, field: str, types: tuple[type, ...]) -> Any:
    """A Python / numpy number of one of ``types`` (not a bool) as a scalar of ``dtype``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, types):
        raise field_error(key, field, value, f"a number for {native(dtype).name}")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return native(dtype).type(value)
    except OverflowError:
        raise field_error(key, field, value, f"a number representable as {native(dtype).name}") from None


class Float(CoreType):
    """``float16`` / ``float32`` / ``float64`` ↔ numpy ``f2`` / ``f4`` / ``f8``."""

    V3_CORE_NAMES = ("float16", "float32", "float64")
    V2_KINDS = ("f",)
    NUMPY_KINDS = ("f",)
    V2_SIZES = (2, 4, 8)
    __slots__ = ()

    def to_v3(self, struct_name: str | None = None) -> str:
        n = self.dtype.itemsize
        if n not in (2, 4, 8):  # long double
            raise self.unrepresentable_v3()
        return f"float{8 * n}"

    def coerce_fill(self, value: Any, key: str, field: str) -> np.floating:
        return coerce_number(value, self.dtype, key, field, (int, float, np.integer, np.floating))

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.floating:
        return decode_float(doc, self.dtype, key, field, allow_hex=False)

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.floating:
        return decode_float(doc, self.dtype, key, field, allow_hex=True)

    def fill_to_v2(self, value: Any) -> float | str:
        return encode_float(value, v3=False)

    def fill_to_v3(self, value: Any) -> float | str:
        return encode_float(value, v3=True)
