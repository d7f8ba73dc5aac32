"""The data-type functions the metadata documents and the core use, over :data:`.registry.REGISTRY`.

Every function that reads JSON takes the JSON *value of the field* (``doc``),
the document ``key`` it came from (for error messages) and raises
:class:`~zarrdask.errors.MetadataError` (or
:class:`~zarrdask.errors.UnknownDataTypeError`) naming the key, the field, what
was found and what was expected.

Because one numpy dtype can have several v3 JSON forms (``r32`` vs
``raw_bytes``, ``struct`` vs ``structured``), the v3 fill value functions take
an optional ``data_type=`` (the JSON form) that decides the fill value's
encoding; without it, the form :func:`data_type_to_v3` writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnknownDataTypeError
from ..json_checks import field_error
from .base import DataType, native
from .registry import REGISTRY
from .vlen import normalize_dtype as _numpy_dtype

__all__ = [
    "data_type_to_v3",
    "decode_fill_value_v2",
    "decode_fill_value_v3",
    "default_fill_value",
    "display_name",
    "dtype_to_v2",
    "encode_fill_value_v2",
    "encode_fill_value_v3",
    "fill_values_equal",
    "normalize_dtype",
    "normalize_fill_value",
    "parse_data_type_v3",
    "parse_dtype_v2",
    "resolve_data_type_v3",
]


# --------------------------------------------------------------------------- v2


def parse_dtype_v2(doc: Any, *, key: str = ".zarray", field: str = "dtype") -> np.dtype:
    """Parse the value of a v2 ``dtype`` field (typestr or structured list).

    Parameters
    ----------
    doc
        The JSON value of the ``dtype`` field, e.g. ``"<f8"`` or
        ``[["x", "<f4"], ["y", "<f4", [2, 2]]]``.
    key
        Document key, used in error messages.

    Returns
    -------
    numpy.dtype
        With the byte order as stored (a ``">i4"`` array is big-endian in
        memory too, as in zarr-python).

    Raises
    ------
    MetadataError
        Not a v2 data type, or one beyond numpy's limits (:mod:`..limits`:
        structured types nested more than 32 deep, sub-array shapes of more
        than 64 dimensions, elements larger than ``2**31 - 1`` bytes).
    """
    return REGISTRY.parse_v2(doc, key, field)


def dtype_to_v2(dtype: Any) -> str | list:
    """The v2 ``dtype`` JSON of a numpy dtype (typestr with explicit byte order, or a list).

    ``StringDType`` maps to ``"|O"`` (zarr-python writes variable-length strings
    as ``"|O"`` with a ``vlen-utf8`` filter), so it does not round-trip through
    :func:`parse_dtype_v2` (which gives ``object``).
    """
    dtype = np.dtype(dtype)
    if dtype.names is None and dtype.subdtype is not None:
        raise UnknownDataTypeError(f"subarray dtype {dtype} cannot be a Zarr v2 array dtype")
    return REGISTRY.for_dtype(dtype).to_v2()


def decode_fill_value_v2(doc: Any, dtype: Any, *, key: str = ".zarray", field: str = "fill_value") -> Any:
    """Decode the value of a v2 ``fill_value`` field for ``dtype``.

    Returns a numpy scalar, or ``None`` for ``null``; for ``object`` dtype the
    JSON value itself.
    """
    dtype = np.dtype(dtype)
    if doc is None:
        return None
    return REGISTRY.for_dtype(dtype).decode_fill_v2(doc, key, field)


def encode_fill_value_v2(value: Any, dtype: Any) -> Any:
    """The v2 JSON of a fill value (spec form: ``"NaN"``, base64 for S/V/structured)."""
    dtype = np.dtype(dtype)
    if value is None:
        return None
    return REGISTRY.for_dtype(dtype).encode_fill_v2(value)


# --------------------------------------------------------------------------- v3


def resolve_data_type_v3(doc: Any, *, key: str = "zarr.json", field: str = "data_type") -> DataType:
    """The data type object of a v3 ``data_type`` value: its numpy dtype (``.dtype``)
    and its fill value codecs (``.decode_fill_v3``, ``.encode_fill_v3``) for this JSON form."""
    return REGISTRY.parse_v3(doc, key, field)


def parse_data_type_v3(doc: Any, *, key: str = "zarr.json", field: str = "data_type") -> np.dtype:
    """Parse the value of a v3 ``data_type`` field into a native-byte-order numpy dtype.

    ``"string"`` gives ``np.dtypes.StringDType()``; ``"bytes"`` and
    ``"variable_length_bytes"`` give ``np.dtype(object)``. Unknown names raise
    :class:`~zarrdask.errors.UnknownDataTypeError`.
    """
    return REGISTRY.parse_v3(doc, key, field).dtype


def data_type_to_v3(dtype: Any, *, struct_name: str = "structured") -> str | dict:
    """The v3 ``data_type`` JSON of a numpy dtype, as zarr-python 3.1.6 writes it.

    Byte order is ignored (it belongs to the ``bytes`` codec). ``S<n>`` →
    ``null_terminated_bytes``, ``V<n>`` → ``raw_bytes``, ``U<n>`` →
    ``fixed_length_utf32``, ``StringDType`` → ``"string"``, ``object`` →
    ``"variable_length_bytes"``, structured → ``"structured"`` with
    ``[name, type]`` fields (or ``struct_name="struct"`` for the registered
    ``struct`` form with ``{"name", "data_type"}`` fields).
    """
    if struct_name not in ("struct", "structured"):
        raise ValueError(f"struct_name must be 'struct' or 'structured', got {struct_name!r}")
    dtype = np.dtype(dtype)
    if dtype.names is None and dtype.subdtype is not None:
        raise UnknownDataTypeError(f"subarray dtype {dtype} cannot be a Zarr v3 data type")
    return REGISTRY.for_dtype(dtype).to_v3(struct_name)


def display_name(dtype: Any, zarr_format: int = 3) -> str:
    """How a dtype is shown to people (``Array.info``, ``zarrdask info``): numpy's
    name (``str(dtype)``: ``"float32"``, ``"bfloat16"``, ``"<U5"``), but the Zarr v3
    name of a v3 type that numpy can only print as its structure
    (``"complex_bfloat16"``, not ``[('real', bfloat16), ('imag', bfloat16)]``)."""
    dtype = np.dtype(dtype) if not isinstance(dtype, np.dtype) else dtype
    if zarr_format == 3 and dtype.names is not None:
        try:
            name = data_type_to_v3(dtype)
        except UnknownDataTypeError:
            name = None
        if isinstance(name, str):
            return name
    return str(dtype)


def _v3_type_for(dtype: Any, data_type: Any, key: str) -> DataType:
    if data_type is None:
        data_type = data_type_to_v3(dtype)
    t = REGISTRY.parse_v3(data_type, key, "data_type")
    if dtype is not None and not isinstance(dtype, np.dtypes.StringDType) and np.dtype(dtype) != t.dtype \
            and native(np.dtype(dtype)) != t.dtype:
        raise field_error(key, "data_type", data_type, f"a data type matching numpy dtype {dtype}")
    return t


def decode_fill_value_v3(doc: Any, dtype: Any, *, key: str = "zarr.json", field: str = "fill_value",
                         data_type: Any = None) -> Any:
    """Decode the value of a v3 ``fill_value`` field.

    Parameters
    ----------
    doc
        The JSON value of ``fill_value``.
    dtype
        The numpy dtype (from :func:`parse_data_type_v3`).
    data_type
        The JSON value of ``data_type`` when the fill value's form depends on it
        (``r<N>`` vs ``raw_bytes``, ``struct`` vs ``structured``); by default the
        form :func:`data_type_to_v3` writes for ``dtype``.

    Returns
    -------
    A numpy scalar (``np.void`` for raw/struct types), ``str`` for ``string``,
    ``bytes`` for ``bytes``. ``null`` is not a valid v3 fill value.
    """
    return _v3_type_for(dtype, data_type, key).decode_fill_v3(doc, key, field)


def encode_fill_value_v3(value: Any, dtype: Any, *, data_type: Any = None) -> Any:
    """The v3 JSON of a fill value (see each family's module for the forms).

    ``data_type`` is the JSON form of the data type (default: what
    :func:`data_type_to_v3` writes for ``dtype``); it decides between e.g. a
    list of ints (``r<N>``) and base64 (``raw_bytes``), or an object
    (``struct``) and base64 (``structured``).
    """
    t = _v3_type_for(dtype, data_type, "<data_type>")
    if value is None:
        raise field_error("<fill_value>", "fill_value", value, "a fill value (null is not permitted in v3)")
    return t.encode_fill_v3(value)


# --------------------------------------------------------------------------- both formats


def default_fill_value(dtype: Any) -> Any:
    """The fill value used when none is given: the zero of the type.

    ``False``, ``0``, ``0.0``, ``0j``, ``b""``, ``""``, zeroed ``np.void`` for
    raw and structured types, ``b""`` for ``object`` (variable-length bytes).
    For ``datetime64`` / ``timedelta64`` it is ``NaT``: zarr-python 3.1.6 uses
    ``NaT`` as the default for both formats (checked: ``create_array`` without
    ``fill_value`` writes ``-9223372036854775808``).
    """
    return REGISTRY.for_dtype(np.dtype(dtype)).default_fill()


def normalize_fill_value(value: Any, dtype: Any, *, key: str = "<fill_value>",
                         field: str = "fill_value") -> Any:
    """Coerce a Python/numpy fill value to a scalar of ``dtype``, validating its range.

    Returns a numpy scalar (``np.void`` for raw and structured types, ``np.bytes_``
    for ``S``, ``np.str_`` for ``U``), ``str`` for ``StringDType``, the value
    itself for ``object``, ``None`` for ``None``. Raises :class:`MetadataError`
    naming ``field`` if the value does not fit (e.g. ``300`` for ``uint8``).
    """
    if value is None:
        return None
    return REGISTRY.for_dtype(np.dtype(dtype)).normalize_fill(value, key, field)


def fill_values_equal(a: Any, b: Any) -> bool:
    """Equality of fill values; floats compare by bits (NaN equals the same NaN)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, np.generic) and isinstance(b, np.generic):
        return a.dtype == b.dtype and np.asarray(a).tobytes() == np.asarray(b).tobytes()
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        return False
    return type(a) is type(b) and a == b


def normalize_dtype(dtype: Any, data: Any = None) -> Any:
    """The numpy dtype of a new array from what a user passes as ``dtype=``: what
    :func:`.vlen.normalize_dtype` gives (variable-length types chosen as zarr-python 3
    does; numpy's names, ``ml_dtypes``' among them: ``"bfloat16"``, ``"int4"``), and
    for a name numpy does not know, the Zarr v3 data type of that name
    (``"complex_bfloat16"``, ``"complex_float32"``)."""
    try:
        return _numpy_dtype(dtype, data)
    except UnknownDataTypeError:
        if isinstance(dtype, str) and REGISTRY.family_v3(dtype) is not None:
            return REGISTRY.parse_v3(dtype, "<dtype>", "dtype").dtype
        raise
