"""The complex data types ``complex64`` and ``complex128``.

v2: typestrs ``"<c8"``, ``">c16"``; fill value ``[re, im]`` with each part a
v2 float form (what zarr-python writes; the v2 spec says nothing), and a plain
real number (zarr-python 2 wrote these) is read too. v3: core types; fill value
"a two-element array, specifying the real and imaginary components
respectively, where each component is specified as defined above for floating
point number" — ``zarr-specs/v3-data-types.rst`` "Permitted fill values"
(the float forms are :mod:`.floats`'). Parts keep their exact bits.

``complex_float32`` and ``complex_float64`` (zarr-extensions
``data-types/complex_float32``, ``complex_float64``) are aliases of ``complex64``
and ``complex128``: read as numpy ``complex64`` / ``complex128``, and written
back under the name they were read with.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..json_checks import field_error, is_json_int
from .base import CoreType, native, no_configuration
from .floats import coerce_number, decode_float, encode_float

__all__ = ["Complex", "complex_fill_from_v3", "complex_fill_to_v3"]

_ALIASES = {"complex_float32": "complex64", "complex_float64": "complex128"}


def _complex(re_: np.floating, im_: np.floating, dtype: np.dtype) -> np.complexfloating:
    """Assemble a complex scalar from two floats, keeping their exact bits."""
    return np.array([re_, im_], dtype=re_.dtype).view(native(dtype))[0]


class Complex(CoreType):
    """``complex64`` / ``complex128`` ↔ numpy ``c8`` / ``c16``."""

    V3_CORE_NAMES = ("complex64", "complex128")
    V3_EXTENSION_NAMES = ("complex_float32", "complex_float64")
    V2_KINDS = ("c",)
    NUMPY_KINDS = ("c",)
    V2_SIZES = (8, 16)
    __slots__ = ("name",)

    def __init__(self, dtype: Any, name: str | None = None) -> None:
        super().__init__(dtype)
        self.name = name

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: Any, depth: int) -> "Complex":
        no_configuration(name, doc, key, field)
        alias = name.startswith("complex_")
        return cls(np.dtype(_ALIASES.get(name, name)), name if alias else None)

    def to_v3(self, struct_name: str | None = None) -> str:
        n = self.dtype.itemsize
        if n not in (8, 16):  # long double complex
            raise self.unrepresentable_v3()
        return self.name or f"complex{8 * n}"

    @property
    def _part(self) -> np.dtype:
        return np.dtype(f"f{self.dtype.itemsize // 2}")

    def coerce_fill(self, value: Any, key: str, field: str) -> np.complexfloating:
        types = (int, float, np.integer, np.floating, complex, np.complexfloating)
        return coerce_number(value, self.dtype, key, field, types)

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.complexfloating:
        part = self._part
        if isinstance(doc, list) and len(doc) == 2:
            re_ = decode_float(doc[0], part, key, f"{field}[0]", allow_hex=False)
            im_ = decode_float(doc[1], part, key, f"{field}[1]", allow_hex=False)
            return _complex(re_, im_, self.dtype)
        if is_json_int(doc) or isinstance(doc, float):  # a real number (zarr-python 2 wrote these)
            return _complex(decode_float(doc, part, key, field, allow_hex=False), part.type(0), self.dtype)
        raise field_error(key, field, doc, f"a list [re, im] for {native(self.dtype).name}")

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.complexfloating:
        return _complex(*complex_fill_from_v3(doc, self._part, self.to_v3(), key, field), self.dtype)

    def fill_to_v2(self, value: Any) -> list:
        return [encode_float(value.real, v3=False), encode_float(value.imag, v3=False)]

    def fill_to_v3(self, value: Any) -> list:
        return complex_fill_to_v3(value.real, value.imag)


def complex_fill_from_v3(doc: Any, part: np.dtype, name: str, key: str, field: str) -> tuple[Any, Any]:
    """The real and imaginary parts of a v3 complex fill value ``[re, im]``, each
    in the float forms of ``part`` (``zarr-specs/v3-data-types.rst``)."""
    if not isinstance(doc, list) or len(doc) != 2:
        raise field_error(key, field, doc, f"a two-element list [re, im] for {name}")
    return (decode_float(doc[0], part, key, f"{field}[0]", allow_hex=True),
            decode_float(doc[1], part, key, f"{field}[1]", allow_hex=True))


def complex_fill_to_v3(real: Any, imag: Any) -> list:
    """The v3 JSON ``[re, im]`` of a complex fill value's parts."""
    return [encode_float(real, v3=True), encode_float(imag, v3=True)]
