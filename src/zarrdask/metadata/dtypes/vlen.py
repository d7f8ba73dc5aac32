"""Variable-length strings and bytes: numpy ``StringDType`` and ``object``.

v3: extension ``string`` → ``StringDType`` (``zarr-extensions/data-types-string.md``;
fill value a string, "Permitted fill values") and ``bytes`` → ``object``
(``data-types-bytes.md``; fill value a list of byte values or base64, "Fill
value encoding"); zarr-python also writes the older name
``variable_length_bytes``, which is what is written here.

v2 has no such types: an ``"|O"`` (object) array holds whatever its object
codec, the first filter, makes of the chunk (``zarr-specs/v2-v2.0.rst``
"Data type encoding" lists ``O``; fill value: any JSON value, kept as is).
:func:`vlen_dtype_v2` gives ``StringDType`` for ``vlen-utf8`` (as zarr-python 3
reads it) and :func:`vlen_fill_value_v2` reads the fill value the object codec
implies; the metadata document itself keeps ``dtype`` ``object``.

New arrays' dtypes come from :func:`normalize_dtype` (``str`` → ``StringDType``
= ``string``, ``bytes`` → ``object`` = ``bytes``, zarr-python 3's choices).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnknownDataTypeError
from ..json_checks import field_error, is_json_int
from .base import DataType, DataTypes, no_configuration
from .binary import b64decode, b64encode, bytes_from_json
from .typestr import Typestr

__all__ = ["String", "VariableLengthBytes", "normalize_dtype", "string_dtype", "vlen_dtype_v2",
           "vlen_fill_value_v2"]


def string_dtype() -> Any:
    """numpy's variable-length string dtype (``numpy.dtypes.StringDType()``)."""
    cls = getattr(np.dtypes, "StringDType", None)
    if cls is None:  # pragma: no cover - numpy 1.x
        raise UnknownDataTypeError("variable-length strings need numpy >= 2 (numpy.dtypes.StringDType)")
    return cls()


class _VariableLength(DataType):
    """What both share in v2: an ``"|O"`` array, whose fill value JSON is kept as is."""

    VARIABLE_LENGTH = True
    __slots__ = ()

    def to_v2(self) -> str:
        return "|O"

    def encode_fill_v2(self, value: Any) -> Any:
        return None if value is None else self.fill_to_v2(value)  # not normalized: any object

    def fill_from_v2(self, doc: Any, key: str, field: str) -> Any:
        return doc

    def fill_to_v2(self, value: Any) -> Any:
        if isinstance(value, (bytes, bytearray)):
            return b64encode(value)
        if isinstance(value, np.generic):
            return value.item()
        return value


class String(_VariableLength):
    """``string`` ↔ numpy ``StringDType`` (written in v2 as ``"|O"`` with ``vlen-utf8``)."""

    V3_EXTENSION_NAMES = ("string",)
    NUMPY_KINDS = ("T",)
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> String:
        no_configuration(name, doc, key, field)  # schema.json: an empty configuration at most
        return cls(np.dtypes.StringDType())

    def to_v3(self, struct_name: str | None = None) -> str:
        return "string"

    def default_fill(self) -> str:
        return ""

    def coerce_fill(self, value: Any, key: str, field: str) -> str:
        if not isinstance(value, str):
            raise field_error(key, field, value, "a str for StringDType")
        return str(value)

    def fill_from_v3(self, doc: Any, key: str, field: str) -> str:
        if not isinstance(doc, str):
            raise field_error(key, field, doc, "a string for data type 'string'")
        return doc

    def fill_to_v3(self, value: Any) -> str:
        return value


class VariableLengthBytes(_VariableLength):
    """``bytes`` / ``variable_length_bytes`` ↔ numpy ``object``; also v2's ``"|O"``."""

    V3_EXTENSION_NAMES = ("bytes", "variable_length_bytes")
    V2_KINDS = ("O",)
    NUMPY_KINDS = ("O",)
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes,
                depth: int) -> VariableLengthBytes:
        no_configuration(name, doc, key, field)  # schema.json: an empty configuration at most
        return cls(np.dtype(object))

    @classmethod
    def from_v2(cls, doc: Any, key: str, field: str, types: DataTypes, depth: int) -> np.dtype:
        ts: Typestr = doc
        if ts.order != "|" or ts.size not in ("", "8") or ts.unit:
            raise ts.error(key, field, 'the object typestr "|O"')
        return np.dtype(object)

    def to_v3(self, struct_name: str | None = None) -> str:
        return "variable_length_bytes"

    def default_fill(self) -> bytes:
        return b""

    def coerce_fill(self, value: Any, key: str, field: str) -> Any:
        return value  # objects of any kind (what v2 object codecs hold)

    def fill_from_v3(self, doc: Any, key: str, field: str) -> bytes:
        return bytes_from_json(doc, self.dtype, key, field)

    def fill_to_v3(self, value: Any) -> str:
        if isinstance(value, str):
            value = value.encode()
        if not isinstance(value, (bytes, bytearray, np.bytes_)):
            raise field_error("<fill_value>", "fill_value", value, "bytes for data type 'bytes'")
        return b64encode(bytes(value))


def normalize_dtype(dtype: Any, data: Any = None) -> Any:
    """The numpy dtype of a new array from what a user passes as ``dtype=``
    (numpy's names and types; ``api.normalize_dtype`` adds the Zarr v3 names).

    Variable-length types are chosen as zarr-python 3 does: ``str``, ``"str"``,
    ``"string"``, ``"T"``, ``StringDType`` and the width-less ``"U"`` give
    ``StringDType`` (Zarr ``string``); ``bytes``, ``"bytes"`` and the width-less
    ``"S"`` give ``object`` (Zarr ``bytes``). ``object`` is ambiguous: with
    ``data`` whose elements are all ``str`` it means strings, all ``bytes``
    bytes; otherwise :class:`UnknownDataTypeError`. Everything else goes
    through ``numpy.dtype`` (``"U5"`` and ``"S5"`` stay fixed-width).
    """
    if getattr(dtype, "kind", None) == "T" or dtype is str or (
            isinstance(dtype, str) and dtype in ("str", "string", "T", "U", "<U", ">U", "=U")):
        return string_dtype()
    if dtype is bytes or (isinstance(dtype, str) and dtype in ("bytes", "S", "|S")):
        return np.dtype(object)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise UnknownDataTypeError(f"dtype {dtype!r} is not a numpy data type") from None
    if dt.kind == "U" and dt.itemsize == 0:
        return string_dtype()
    if dt.kind == "S" and dt.itemsize == 0:
        return np.dtype(object)
    if dt.kind == "O":
        values = None if data is None else np.asarray(data, dtype=object).reshape(-1)
        if values is not None and values.size and all(isinstance(v, str) for v in values):
            return string_dtype()
        if values is not None and values.size and all(isinstance(v, (bytes, bytearray)) for v in values):
            return dt
        raise UnknownDataTypeError(
            "dtype object is ambiguous: pass dtype=str for variable-length strings (Zarr 'string', "
            "codec vlen-utf8) or dtype=bytes for variable-length bytes (Zarr 'bytes', codec vlen-bytes)"
            + ("" if data is None else "; the data holds neither only str nor only bytes values")
        )
    return dt


_V2_VLEN_DTYPES = {"vlen-utf8": "string", "vlen-bytes": "bytes"}


def _first_filter_id(filters: Any) -> str | None:
    if not filters:
        return None
    first = filters[0]
    return first.get("id") if isinstance(first, dict) else getattr(first, "codec_id", None)


def vlen_dtype_v2(dtype: Any, filters: Any) -> Any:
    """The in-memory dtype of a v2 array: ``StringDType`` for ``"|O"`` with
    ``vlen-utf8`` as its first filter (as zarr-python 3 reads it), else ``dtype``."""
    if isinstance(dtype, np.dtype) and dtype.kind == "O" and _first_filter_id(filters) == "vlen-utf8":
        return string_dtype()
    return dtype


def vlen_fill_value_v2(value: Any, dtype: Any, filters: Any, *, key: str = ".zarray",
                       field: str = "fill_value") -> Any:
    """The fill value a v2 ``"|O"`` array reads missing elements as.

    ``vlen-utf8``: ``null`` and zarr-python 2's legacy ``0`` → ``""``, a
    string → itself. ``vlen-bytes``: ``null`` and ``0`` → ``b""``, a string →
    its base64 decoding (what zarr-python 3 writes). Other object codecs
    (``json2``, ``pickle``, ...): the value itself, ``null`` being ``None``.
    """
    kind = _V2_VLEN_DTYPES.get(_first_filter_id(filters) or "")
    if kind is None:
        return value
    if value is None or (is_json_int(value) and value == 0):
        return "" if kind == "string" else b""
    if kind == "string":
        if not isinstance(value, str):
            raise field_error(key, field, value, 'a string (or null / the legacy 0) for "|O" with vlen-utf8')
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return b64decode(value, key, field, '"|O" with vlen-bytes (or null / the legacy 0)')
