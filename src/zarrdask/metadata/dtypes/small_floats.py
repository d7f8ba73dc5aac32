"""The small floating-point data types of the zarr-extensions registry, and ``float8_e4m3fn``.

Names (``zarr-extensions/data-types/<name>/README.md``): ``bfloat16``;
``float8_e3m4``, ``float8_e4m3``, ``float8_e4m3b11fnuz``, ``float8_e4m3fnuz``,
``float8_e5m2``, ``float8_e5m2fnuz``, ``float8_e8m0fnu``; ``float6_e2m3fn``,
``float6_e3m2fn``; ``float4_e2m1fn``. ``float8_e4m3fn`` (the OCP/NVIDIA "E4M3",
no infinities, NaN ``0x7f``/``0xff``) is not registered, but tensorstore writes it
under that name, so it is read and written too. Each has no configuration.

numpy dtypes: ``ml_dtypes`` (the implementation every README points to; tensorstore
and JAX use it), one value per byte for the 4- and 6-bit types, the value in the
low bits as the READMEs' ``bytes`` encodings say.

Fill values ("Fill value representation"): as the core floats — a JSON number,
``"NaN"`` (the bits the README names), ``"Infinity"`` / ``"-Infinity"``, or
``"0x…"`` hex bits — with only the special values the type has
(:mod:`.float_formats`); a number that rounds to no finite value is refused.
``float8_e8m0fnu`` has no zero: a fill value of ``0`` (tensorstore's default) is
the value nearest to it, the smallest (``2**-127``, ``0x00``), as tensorstore reads
it, and that is the default fill value too. (``ml_dtypes`` converts 0 to NaN;
tensorstore 0.1.86 reads other numbers for this type with a wrong exponent, so
so zarrdask writes this type's fill values other than ``"NaN"`` as ``"0x…"`` bits,
which it reads right.)

Zarr v2 has no names for these types: :meth:`SmallFloat.to_v2` is an
:class:`~zarrdask.errors.UnknownDataTypeError` that says to use v3. tensorstore's
v2 driver writes the v3 name as the ``dtype`` (``"bfloat16"``, little-endian;
model checkpoints are stored so): such arrays are read.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ...errors import UnknownDataTypeError
from ..json_checks import field_error
from .base import native
from .float_formats import ML_FLOATS
from .floats import Float, decode_float

__all__ = ["MlDtypesFamily", "SmallFloat", "v3_only"]


def v3_only(dtype: np.dtype, name: str) -> UnknownDataTypeError:
    """The error for a data type that only Zarr v3 can store."""
    return UnknownDataTypeError(
        f"data type {name!r} (numpy dtype {dtype}) has no Zarr v2 encoding: "
        "store it in a Zarr v3 array (zarr_format=3)"
    )


class MlDtypesFamily:
    """What the ``ml_dtypes`` families share, put before the core family they extend:
    their names and dtypes come from one ``TABLE`` (v3 name → numpy dtype); the v2
    ``dtype`` is the same name (tensorstore's v2 driver writes it, little-endian),
    read and never written."""

    TABLE: ClassVar[dict[str, np.dtype]] = {}
    V3_CORE_NAMES: ClassVar[tuple[str, ...]] = ()
    V2_KINDS: ClassVar[tuple[str, ...]] = ()
    NUMPY_KINDS: ClassVar[tuple[str, ...]] = ()
    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.V3_EXTENSION_NAMES = cls.V2_NAMES = tuple(cls.TABLE)
        cls.NUMPY_DTYPES = tuple(cls.TABLE.values())
        cls.names = {dtype: name for name, dtype in cls.TABLE.items()}

    dtype: np.dtype
    names: ClassVar[dict[np.dtype, str]]

    def to_v3(self, struct_name: str | None = None) -> str:
        return self.names[native(self.dtype)]

    @classmethod
    def from_v2(cls, doc: Any, key: str, field: str, types: Any, depth: int) -> np.dtype:
        return cls.TABLE[doc]

    def to_v2(self) -> str:
        raise v3_only(self.dtype, self.to_v3())


class SmallFloat(MlDtypesFamily, Float):
    """``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn`` ↔ ``ml_dtypes``."""

    TABLE = ML_FLOATS
    __slots__ = ()

    def default_fill(self) -> np.generic:
        return decode_float(0, self.dtype, "<fill_value>", "fill_value", allow_hex=False)

    def fill_to_v3(self, value: Any) -> float | str:
        if np.isnan(self.dtype.type(0)) and not np.isnan(value):  # float8_e8m0fnu: bits, which tensorstore reads right
            return f"0x{int(np.asarray(value, self.dtype).view(np.uint8)):02x}"
        return super().fill_to_v3(value)

    def coerce_fill(self, value: Any, key: str, field: str) -> Any:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
                and not (isinstance(value, np.generic) and value.dtype in self.names):
            raise field_error(key, field, value, f"a number for {native(self.dtype).name}")
        if isinstance(value, np.generic) and value.dtype == native(self.dtype):
            return value
        if isinstance(value, np.generic) and np.isnan(value):
            return decode_float("NaN", self.dtype, key, field, allow_hex=False)
        if isinstance(value, np.generic) and np.isinf(value):
            return decode_float("Infinity" if value > 0 else "-Infinity", self.dtype, key, field, allow_hex=False)
        return decode_float(value if isinstance(value, int) else float(value), self.dtype, key, field,
                            allow_hex=False)
