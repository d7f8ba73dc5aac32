"""What every floating-point data type's fill values and byte order rest on: its bits.

The IEEE 754 core types (``float16``, ``float32``, ``float64``) and the small
floats of the zarr-extensions registry (``bfloat16``, the ``float8_*``,
``float6_*`` and ``float4_e2m1fn`` types, whose numpy dtypes ``ml_dtypes``
provides) differ in which special values they have:

- ``"NaN"`` is the bit pattern each type's README names (``0x7fc0`` for
  ``bfloat16``, ``0x7c`` for ``float8_e4m3``, ``0x80`` for the ``fnuz`` types,
  ``0xFF`` for ``float8_e8m0fnu``); ``float4_e2m1fn`` and the ``float6`` types
  have none (``zarr-extensions/data-types/<name>/README.md``, "Fill value
  representation");
- ``"Infinity"`` / ``"-Infinity"`` exist only where the type has infinities;
- the sub-byte types (``float4``, ``float6``) are stored one value per byte,
  their value in the low bits (README "Codec compatibility", ``bytes``).

:func:`float_format` gives that per dtype. :func:`bits_dtype` gives the
unsigned-integer layout of a dtype holding ``ml_dtypes`` scalars (numpy cannot
swap their bytes itself), which the ``bytes`` codec byte-swaps for big-endian
storage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np

__all__ = ["FloatFormat", "ML_FLOATS", "ML_INTS", "bits_dtype", "float_format", "is_ml_dtype", "ml_info"]

#: the small floating-point types: v3 name → numpy dtype (``ml_dtypes``); the
#: registered names, then ``float8_e4m3fn``, which tensorstore writes (not registered)
ML_FLOATS: dict[str, np.dtype] = {
    name: np.dtype(getattr(ml_dtypes, name))
    for name in (
        "bfloat16",
        "float8_e3m4",
        "float8_e4m3",
        "float8_e4m3b11fnuz",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float4_e2m1fn",
        "float8_e4m3fn",
    )
}

#: the sub-byte integer types: v3 name → numpy dtype (``ml_dtypes``)
ML_INTS: dict[str, np.dtype] = {name: np.dtype(getattr(ml_dtypes, name)) for name in ("int2", "int4", "uint2", "uint4")}

_ML_INT_DTYPES = frozenset(ML_INTS.values())
_ML_DTYPES = frozenset(ML_FLOATS.values()) | _ML_INT_DTYPES
_UINT = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


@dataclass(frozen=True)
class FloatFormat:
    """The bits of a floating-point data type."""

    #: the unsigned integer type of the same size (the hex fill value form views it)
    uint: np.dtype
    #: the bits ``"NaN"`` stands for; ``None``: the type has no NaN
    nan_bits: int | None
    #: whether the type has ``±Infinity``
    has_inf: bool
    #: the bits that hold a value (all of them but for sub-byte types)
    mask: int
    #: the largest finite value, and half the distance to the next power of the
    #: mantissa's precision past it: a number at least ``max + half_ulp`` away from
    #: zero rounds to no finite value
    max: float
    half_ulp: float


def is_ml_dtype(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is one of the ``ml_dtypes`` scalar types (any byte order)."""
    return dtype in _ML_DTYPES


@lru_cache(maxsize=64)
def ml_info(dtype: np.dtype) -> tuple[str, int] | None:
    """``("int" | "uint" | "float", bits)`` of an ``ml_dtypes`` type — the bits that
    hold its value (4 for ``int4`` and ``float4_e2m1fn``, 16 for ``bfloat16``) — or
    ``None`` for any other dtype."""
    dtype = np.dtype(dtype)
    if dtype not in _ML_DTYPES:
        return None
    if dtype in _ML_INT_DTYPES:
        info = ml_dtypes.iinfo(dtype)
        return ("int" if info.min < 0 else "uint"), int(info.bits)
    return "float", int(ml_dtypes.finfo(dtype).bits)


@lru_cache(maxsize=64)
def float_format(dtype: np.dtype) -> FloatFormat:
    """The :class:`FloatFormat` of a floating-point dtype (core or ``ml_dtypes``)."""
    dtype = np.dtype(dtype)
    uint = _UINT[dtype.itemsize]
    if dtype in _ML_DTYPES:
        info = ml_dtypes.finfo(dtype)
        nmant, bits = info.nmant, info.bits
    else:
        info = np.finfo(dtype)
        nmant, bits = info.nmant, 8 * dtype.itemsize
    specials = np.array([np.nan, np.inf], dtype=np.float32).astype(dtype)
    nan = bool(np.isnan(specials[0]))
    big = float(info.max)
    return FloatFormat(
        uint=uint,
        nan_bits=int(specials[:1].view(uint)[0]) if nan else None,
        has_inf=bool(np.isinf(specials[1])),
        mask=(1 << bits) - 1,
        max=big,
        half_ulp=math.ldexp(1.0, math.frexp(big)[1] - 2 - nmant),
    )


@lru_cache(maxsize=256)
def bits_dtype(dtype: np.dtype) -> np.dtype | None:
    """The same layout with every ``ml_dtypes`` scalar an unsigned integer of its size
    (``bfloat16`` → ``uint16``; a struct's fields likewise), or ``None`` when
    ``dtype`` holds no ``ml_dtypes`` scalar. numpy cannot change the byte order of
    ``ml_dtypes`` types, but can of this view of them."""
    if dtype in _ML_DTYPES:
        return _UINT[dtype.itemsize]
    if dtype.names is None:
        return None
    fields = {}
    found = False
    for name in dtype.names:
        sub, offset = dtype.fields[name][:2]
        base, shape = (sub.subdtype if sub.subdtype is not None else (sub, ()))
        bits = bits_dtype(base)
        found = found or bits is not None
        fields[name] = ((bits if bits is not None else base, shape) if shape else (bits or base), offset)
    if not found:
        return None
    return np.dtype({"names": list(fields), "formats": [f for f, _ in fields.values()],
                     "offsets": [o for _, o in fields.values()], "itemsize": dtype.itemsize})
