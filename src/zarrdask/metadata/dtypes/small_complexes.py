"""Complex numbers of small floats: ``complex_float16``, ``complex_bfloat16`` and the
``complex_`` form of each small float of :mod:`.small_floats` (zarr-extensions).

``zarr-extensions/data-types/complex_<float>/README.md``: no configuration;
fill value as the core complex types, ``[re, im]`` with each part in its float's
forms (``"NaN"`` only where the part type has one, …); the ``bytes`` encoding is
the real part followed by the imaginary part, each as its float type is encoded
(little- or big-endian for the 2-byte parts, one byte each for the others).

numpy has no complex type with these parts, and promoting them to
``complex64`` would not round-trip every stored bit pattern (NaN payloads, the
``fnuz`` types' single NaN, ``float8_e8m0fnu``'s missing zero). So the numpy
representation is a structured dtype with two fields, ``real`` and ``imag``, of
the part's dtype: ``np.dtype([("real", ml_dtypes.bfloat16), ("imag",
ml_dtypes.bfloat16)])``. Its memory layout is exactly the encoding, so every
stored value round-trips bit for bit; ``a["real"]`` and ``a["imag"]`` are arrays of
the part type, and ``a["real"].astype(np.float32) + 1j * a["imag"].astype(np.float32)``
is a ``complex64`` array (exact: every part value is a float32). A structured
dtype of exactly that shape is written as this data type, not as ``struct``.
Zarr v2 has no names for these types (a typed error).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..json_checks import field_error
from .base import CoreType, DataTypes, no_configuration
from .binary import void_from_v2, void_to_b64
from .complexes import complex_fill_from_v3, complex_fill_to_v3
from .float_formats import ML_FLOATS, is_ml_dtype
from .small_floats import SmallFloat, v3_only

__all__ = ["SmallComplex", "complex_parts_dtype"]


def complex_parts_dtype(part: Any) -> np.dtype:
    """The structured dtype that holds complex numbers with parts of dtype ``part``."""
    part = np.dtype(part)
    return np.dtype([("real", part), ("imag", part)])


_PARTS = {"float16": np.dtype(np.float16), **{n: d for n, d in ML_FLOATS.items() if n != "float8_e4m3fn"}}
_TYPES = {f"complex_{name}": complex_parts_dtype(part) for name, part in _PARTS.items()}
_NAMES = {dtype: name for name, dtype in _TYPES.items()}


class SmallComplex(CoreType):
    """``complex_float16``, ``complex_bfloat16``, ``complex_float8_*``, … ↔ a structured
    dtype ``[("real", part), ("imag", part)]``."""

    V3_EXTENSION_NAMES = tuple(_TYPES)
    NUMPY_DTYPES = tuple(_TYPES.values())
    EXACT_SCALARS = False
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> "SmallComplex":
        no_configuration(name, doc, key, field)
        return cls(_TYPES[name])

    @property
    def name(self) -> str:
        return _NAMES[self.dtype]

    @property
    def part(self) -> np.dtype:
        return self.dtype.fields["real"][0]

    def to_v3(self, struct_name: str | None = None) -> str:
        return self.name

    def to_v2(self) -> list:
        if is_ml_dtype(self.part):
            raise v3_only(self.dtype, self.name)
        return [[name, self.dtype.fields[name][0].str] for name in self.dtype.names]

    def default_fill(self) -> np.void:
        return self._assemble(self.part.type(0), self.part.type(0))

    def _assemble(self, real: Any, imag: Any) -> np.void:
        out = np.zeros((), dtype=self.dtype)
        out["real"], out["imag"] = real, imag
        return out[()]

    def coerce_fill(self, value: Any, key: str, field: str) -> np.void:
        if isinstance(value, np.void) and value.dtype == self.dtype:
            return value
        part = SmallFloat(self.part)
        if isinstance(value, (complex, np.complexfloating)):
            real, imag = value.real, value.imag
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            real, imag = value
        elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
            real, imag = value, 0
        else:
            raise field_error(key, field, value, f"a complex number or (re, im) for {self.name}")
        return self._assemble(part.coerce_fill(real, key, f"{field}.real"), part.coerce_fill(imag, key, f"{field}.imag"))

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.void:
        return self._assemble(*complex_fill_from_v3(doc, self.part, self.name, key, field))

    def fill_to_v3(self, value: Any) -> list:
        return complex_fill_to_v3(value["real"], value["imag"])

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.void:
        return void_from_v2(doc, self.dtype, key, field)

    def fill_to_v2(self, value: Any) -> str:
        return void_to_b64(value, self.dtype)
