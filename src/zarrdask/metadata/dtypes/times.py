"""The ``numpy.datetime64`` and ``numpy.timedelta64`` data types.

v2: typestrs ``"<M8[ns]"``, ``"<m8[10s]"``, ``"<M8"`` (generic unit); fill
value an integer or ``"NaT"`` — ``zarr-specs/v2-v2.0.rst`` "Data type
encoding". v3: extensions ``numpy.datetime64`` / ``numpy.timedelta64`` with
``unit`` and ``scale_factor`` (``zarr-extensions/data-types-numpy.datetime64.md``,
``data-types-numpy.timedelta64.md``, "Data type representation"); fill value an
integer (the count of ``scale_factor * unit`` since the epoch) or ``"NaT"``
("Fill value representation"). ``NaT`` is written as the integer ``-2**63``,
as zarr-python writes it (the extension documents say both forms are
equivalent); it is also the default fill value (zarr-python 3.1.6 uses ``NaT``
for both formats: ``create_array`` without ``fill_value`` writes
``-9223372036854775808``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

from ..json_checks import field_error, is_json_int
from .base import DataType, DataTypes, configuration, native
from .typestr import Typestr

__all__ = ["NAT", "NumpyTime", "UNITS"]

NAT = -(2**63)
#: The units of the extensions' ``unit`` field; v2 typestrs have all but ``generic``.
UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic")


def _decode_time(value: Any, dtype: np.dtype, key: str, field: str) -> np.generic:
    if value == "NaT":
        value = NAT
    if not is_json_int(value) or not -(2**63) <= value < 2**63:
        raise field_error(key, field, value, f'an integer in [-2**63, 2**63-1] or "NaT" for {dtype}')
    return np.array(value, dtype=np.int64).view(native(dtype))[()]


class NumpyTime(DataType):
    """``numpy.datetime64`` / ``numpy.timedelta64`` ↔ numpy ``M8[...]`` / ``m8[...]``."""

    V3_EXTENSION_NAMES = ("numpy.datetime64", "numpy.timedelta64")
    V2_KINDS = ("m", "M")
    NUMPY_KINDS = ("m", "M")
    V2_SIZES = (8,)
    EXACT_SCALARS = True
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> NumpyTime:
        conf = configuration(doc, name, key, field, ("unit", "scale_factor"))
        unit, scale = conf["unit"], conf["scale_factor"]
        if unit not in UNITS:
            raise field_error(key, f"{field}.configuration.unit", unit, f"one of {list(UNITS)}")
        if not is_json_int(scale) or not 1 <= scale <= 2**31 - 1:
            raise field_error(key, f"{field}.configuration.scale_factor", scale, "an integer in [1, 2147483647]")
        code = "M8" if name == "numpy.datetime64" else "m8"
        if unit == "generic":
            if scale != 1:
                raise field_error(key, f"{field}.configuration.scale_factor", scale, "1 for the generic unit")
            return cls(np.dtype(code))
        return cls(np.dtype(f"{code}[{scale if scale != 1 else ''}{unit}]"))

    @classmethod
    def check_v2_unit(cls, ts: Typestr, key: str, field: str) -> None:
        if ts.unit is not None and ts.unit not in UNITS[:-1]:
            raise ts.error(key, field, f"a unit in {UNITS[:-1]}")

    def to_v3(self, struct_name: str | None = None) -> dict:
        unit, scale = np.datetime_data(self.dtype)
        return {"name": "numpy.datetime64" if self.dtype.kind == "M" else "numpy.timedelta64",
                "configuration": {"unit": unit, "scale_factor": scale}}

    def default_fill(self) -> np.generic:
        return np.array(NAT, dtype=np.int64).view(native(self.dtype))[()]

    def coerce_fill(self, value: Any, key: str, field: str) -> np.generic:
        dtype = self.dtype
        if isinstance(value, (bool, np.bool_)):
            raise field_error(key, field, value, f"a {dtype} value or integer")
        if isinstance(value, (int, np.integer)):
            return _decode_time(int(value), dtype, key, field)
        want = np.datetime64 if dtype.kind == "M" else np.timedelta64
        if isinstance(value, (want, str, _dt.datetime, _dt.date, _dt.timedelta)):
            try:
                return np.array(value).astype(native(dtype))[()] if isinstance(value, want) else \
                    np.array(value, dtype=native(dtype))[()]
            except (ValueError, TypeError):
                pass
        raise field_error(key, field, value, f"a {dtype} value or integer")

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.generic:
        return _decode_time(doc, self.dtype, key, field)

    fill_from_v3 = fill_from_v2

    def fill_to_v2(self, value: Any) -> int:
        return int(np.array(value, dtype=native(self.dtype)).view(np.int64))

    fill_to_v3 = fill_to_v2
