"""CF fill values of the small data types, which xarray's own coders cannot handle.

The ``ml_dtypes`` types (``bfloat16``, ``float8_*``, ``float6_*``,
``float4_e2m1fn``; ``int2``, ``int4``, ``uint2``, ``uint4``) and the complex
types of small floats (``complex_bfloat16``, … as the structured dtype
``[("real", part), ("imag", part)]``, :mod:`zarrdask.metadata.dtypes.small_complexes`)
are not numpy dtypes to ``numpy.isdtype``, so xarray's ``CFMaskCoder`` and its
zarr ``FillValueCoder`` raise on them. For these types zarrdask does that one
step itself, the way xarray does it for ``float16`` and ``int8``; every other
CF step (scale/offset, times, strings, coordinates) stays xarray's.

Reading (mask_and_scale, before xarray's decoding): values equal to
``_FillValue`` or ``missing_value`` (compared exactly, as ``float64``) become
NaN, lazily; the attributes move to ``encoding`` with ``encoding["dtype"]``
the stored type, so writing the variable again gives the same array. The
decoded dtype is

- the stored one for floats that have a NaN (``bfloat16``, every ``float8_*``),
  as xarray keeps ``float16``; likewise complex types whose parts have one
  (both parts become NaN);
- ``float32`` for the floats without NaN (``float4_e2m1fn``, ``float6_*``) and
  for the sub-byte integers (as xarray promotes ``int8``): ``float32`` holds every
  value of these types exactly; ``complex64`` for complex types whose parts
  have no NaN.

A NaN ``_FillValue`` masks nothing but still moves to ``encoding`` (as xarray).

Writing (before xarray's encoding): with ``_FillValue`` (or ``missing_value``)
in ``encoding``, NaN becomes that value and the data is cast to the stored type
(``encoding["dtype"]``, else the variable's); a float with a NaN and no
``_FillValue`` gets NaN as its ``_FillValue`` attribute, as xarray gives every
float. Variables with ``scale_factor``/``add_offset`` in their encoding are left
to xarray.

The ``_FillValue`` attribute is JSON-encoded as xarray encodes it for the core
types in Zarr v3: floats as the base64 of their little-endian ``float64``
bytes, integers as JSON integers, complex numbers as a list of two such floats.
"""

from __future__ import annotations

import base64
import struct
import warnings
from typing import Any, Hashable, Mapping

import dask.array as da
import numpy as np
from xarray.coding.common import lazy_elemwise_func
from xarray.coding.variables import SerializationWarning
from xarray.core.variable import Variable

from ..metadata.dtypes import normalize_dtype, normalize_fill_value
from ..metadata.dtypes.float_formats import ML_FLOATS, ML_INTS, float_format
from ..metadata.dtypes.small_complexes import SmallComplex

__all__ = [
    "decode_fill_attribute",
    "encode_fill_attribute",
    "has_nan",
    "is_small_type",
    "mask_small_type",
    "unmask_small_type",
]

_FLOATS = frozenset(ML_FLOATS.values())
_INTS = frozenset(ML_INTS.values())
_COMPLEXES = frozenset(SmallComplex.NUMPY_DTYPES)
_FILL_ATTRS = ("missing_value", "_FillValue")


def _family(dtype: Any) -> str | None:
    """``"float"``, ``"int"``, ``"complex"`` for a small type, else ``None``."""
    if not isinstance(dtype, np.dtype):
        return None
    native = dtype.newbyteorder("=") if dtype.names is None and dtype.byteorder not in "=|" else dtype
    if native in _FLOATS:
        return "float"
    if native in _INTS:
        return "int"
    if dtype.names is not None and dtype in _COMPLEXES:
        return "complex"
    return None


def is_small_type(dtype: Any) -> bool:
    """Whether ``dtype`` is a small type this module handles."""
    return _family(dtype) is not None


def has_nan(dtype: np.dtype) -> bool:
    """Whether a small float (or the parts of a small complex type) has a NaN."""
    family = _family(dtype)
    if family == "complex":
        return float_format(dtype.fields["real"][0]).nan_bits is not None
    return family == "float" and float_format(dtype).nan_bits is not None


def _decoded_dtype(dtype: np.dtype) -> np.dtype:
    if has_nan(dtype):
        return dtype
    return np.dtype(np.complex64) if _family(dtype) == "complex" else np.dtype(np.float32)


# -- the attribute's JSON -------------------------------------------------------------
def _b64(value: Any) -> str:
    return base64.standard_b64encode(struct.pack("<d", float(value))).decode()


def _unb64(value: Any, dtype: np.dtype) -> float:
    if not isinstance(value, (str, bytes)):
        raise TypeError(
            f"Failed to decode fill_value: expected str or bytes for dtype {dtype}, got {type(value).__name__}"
        )
    return struct.unpack("<d", base64.standard_b64decode(value))[0]


def encode_fill_attribute(value: Any, dtype: np.dtype) -> Any:
    """The JSON of a ``_FillValue`` attribute of a small type (see the module documentation)."""
    family = _family(dtype)
    if family == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
                and not (isinstance(value, np.generic) and _family(value.dtype) == "int"):
            raise TypeError(f"Failed to encode fill_value: expected an integer for dtype {dtype}, "
                            f"got {type(value).__name__}")
        return int(value)
    if family == "complex":
        if isinstance(value, np.void):
            return [_b64(value["real"]), _b64(value["imag"])]
        value = complex(value)
        return [_b64(value.real), _b64(value.imag)]
    return _b64(value)


def decode_fill_attribute(value: Any, dtype: np.dtype) -> Any:
    """The ``_FillValue`` attribute's value from its JSON (a Python ``int``,
    ``float`` or ``complex``, as xarray gives it for the core types)."""
    family = _family(dtype)
    if family == "int":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"Failed to decode fill_value: expected int or float for dtype {dtype}, "
                            f"got {type(value).__name__}")
        return int(value)
    if family == "complex":
        if not (isinstance(value, (list, tuple)) and len(value) == 2):
            raise TypeError(f"Failed to decode fill_value: expected a 2-element list for dtype {dtype}, "
                            f"got {type(value).__name__}")
        return complex(_unb64(value[0], dtype), _unb64(value[1], dtype))
    return _unb64(value, dtype)


# -- reading --------------------------------------------------------------------------
def _as_complex(data: np.ndarray) -> np.ndarray:
    return data["real"].astype(np.float64) + 1j * data["imag"].astype(np.float64)


class _Mask:
    """The masking of one variable, picklable (dask ships it to workers)."""

    def __init__(self, fills: list[Any], stored: np.dtype, decoded: np.dtype) -> None:
        self.fills, self.stored, self.decoded = fills, stored, decoded

    def __call__(self, data: Any) -> np.ndarray:
        data = np.asarray(data)
        complex_ = _family(self.stored) == "complex"
        values = _as_complex(data) if complex_ else data.astype(np.float64)
        condition = np.zeros(data.shape, dtype=bool)
        for fv in self.fills:
            condition |= values == fv
        if self.decoded == self.stored:
            out = np.array(data, copy=True)
            if complex_:
                nan = self.stored.fields["real"][0].type(np.nan)
                out["real"][condition] = nan
                out["imag"][condition] = nan
            else:
                out[condition] = self.stored.type(np.nan)
            return out
        out = values.astype(self.decoded)
        out[condition] = np.nan
        return out


def _fill_values(attrs: dict[str, Any], encoding: dict[str, Any], name: Hashable, dtype: np.dtype) -> list[Any]:
    """Move ``missing_value`` and ``_FillValue`` to ``encoding``; the values that mask."""
    fills: list[Any] = []
    for attr in _FILL_ATTRS:
        if attr not in attrs:
            continue
        if attr in encoding:
            raise ValueError(f"failed to prevent overwriting existing key {attr} in encoding on variable "
                             f"{name!r}. This is probably an encoding field used by xarray to describe how "
                             "a variable is serialized. To proceed, remove this key from the variable's encoding.")
        value = encoding[attr] = attrs.pop(attr)
        found = [v for v in _numbers(value) if v == v]
        if not found and _family(dtype) == "int":
            warnings.warn(f"variable {name!r} has non-conforming {attr!r} {value!r} defined, dropping {attr!r} "
                          "entirely.", SerializationWarning, stacklevel=3)
            del encoding[attr]
        fills.extend(v for v in found if v not in fills)
    return fills


def _numbers(value: Any) -> list[Any]:
    """A fill value attribute (a number, a scalar of the type, a list of them) as
    Python numbers."""
    if isinstance(value, np.void) and value.dtype.names:
        return [complex(float(value["real"]), float(value["imag"]))]
    if isinstance(value, (list, tuple, np.ndarray)):
        return [n for v in value for n in _numbers(v)]
    return [complex(value) if isinstance(value, (complex, np.complexfloating)) else float(value)]


def mask_small_type(variable: Variable, name: Hashable) -> Variable:
    """``variable`` (still CF-encoded, of a small type) with its fill values
    masked as xarray's ``CFMaskCoder`` masks them for ``float16`` and ``int8``;
    unchanged when it has neither ``_FillValue`` nor ``missing_value``."""
    dtype = variable.dtype
    if not is_small_type(dtype) or not any(a in variable.attrs for a in _FILL_ATTRS):
        return variable
    attrs, encoding = dict(variable.attrs), dict(variable.encoding)
    fills = _fill_values(attrs, encoding, name, dtype)
    encoding.setdefault("dtype", dtype)
    data = variable._data
    if fills:
        decoded = _decoded_dtype(dtype)
        data = lazy_elemwise_func(data, _Mask(fills, dtype, decoded), decoded)
    return Variable(variable.dims, data, attrs, encoding, fastpath=True)


# -- writing --------------------------------------------------------------------------
class _Unmask:
    """NaN → the fill value, then the stored type (picklable, for dask)."""

    def __init__(self, fill: Any, target: np.dtype) -> None:
        self.fill, self.target = fill, target

    def __call__(self, data: Any) -> np.ndarray:
        data = np.asarray(data)
        source = _family(data.dtype)
        if source == "complex":
            nan = np.isnan(data["real"].astype(np.float32)) | np.isnan(data["imag"].astype(np.float32))
        elif data.dtype.kind in "fc" or source == "float":
            nan = np.isnan(data.astype(np.complex128 if data.dtype.kind == "c" else np.float64))
        else:
            nan = None
        out = _cast(data, self.target)
        if nan is not None and self.fill is not None:
            out[nan] = self.fill
        return out


def _cast(data: np.ndarray, target: np.dtype) -> np.ndarray:
    if data.dtype == target:
        return np.array(data, copy=True)
    if _family(target) == "complex":
        part = target.fields["real"][0]
        values = _as_complex(data) if _family(data.dtype) == "complex" else data.astype(np.complex128)
        out = np.empty(data.shape, dtype=target)
        out["real"], out["imag"] = values.real.astype(part), values.imag.astype(part)
        return out
    if _family(data.dtype) == "complex":
        data = _as_complex(data)
    if _family(target) == "int" and (data.dtype.kind in "fc" or _family(data.dtype) == "float"):
        data = np.around(data.astype(np.float64))
    return data.astype(target)


def _target(variable: Variable) -> np.dtype | None:
    """The stored dtype if it (or the data's) is a small type, else ``None``."""
    wanted = variable.encoding.get("dtype")
    target = variable.dtype if wanted is None else normalize_dtype(wanted)
    if not isinstance(target, np.dtype) or not (is_small_type(target) or is_small_type(variable.dtype)):
        return None
    return target


def unmask_small_type(variable: Variable, name: Hashable) -> Variable:
    """``variable`` with the fill value written in, as xarray's ``CFMaskCoder``
    and ``DefaultFillvalueCoder`` would do for a small type (to run before
    xarray's encoding; other variables are returned unchanged)."""
    target = _target(variable)
    encoding = variable.encoding
    if target is None or not is_small_type(target) or "scale_factor" in encoding or "add_offset" in encoding:
        return variable
    attrs, encoding = dict(variable.attrs), dict(encoding)
    fv, mv = encoding.pop("_FillValue", None), encoding.pop("missing_value", None)
    if fv is not None and mv is not None and _numbers(fv) != _numbers(mv) \
            and not (all(v != v for v in _numbers(fv)) and all(v != v for v in _numbers(mv))):
        raise ValueError(f"Variable {name!r} has conflicting _FillValue ({fv}) and missing_value ({mv}). "
                         "Cannot encode data.")
    fill = normalize_fill_value(fv if fv is not None else mv, target, key=f"variable {name!r}",
                                field="_FillValue")
    if fv is not None:
        attrs["_FillValue"] = fill
    if mv is not None:
        attrs["missing_value"] = fill
    if fill is None and "_FillValue" not in variable.encoding and "_FillValue" not in attrs \
            and _family(target) == "float" and has_nan(target):
        attrs["_FillValue"] = target.type(np.nan)
    if fill is None and variable.dtype == target:
        return Variable(variable.dims, variable.data, attrs, _without_dtype(encoding), fastpath=True)
    data = variable.data
    data = data.map_blocks(_Unmask(fill, target), dtype=target) if isinstance(data, da.Array) \
        else _Unmask(fill, target)(data)
    return Variable(variable.dims, data, attrs, _without_dtype(encoding), fastpath=True)


def _without_dtype(encoding: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in encoding.items() if k != "dtype"}

