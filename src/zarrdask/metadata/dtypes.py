"""Data types and fill values: numpy ↔ Zarr v2 ``dtype`` ↔ Zarr v3 ``data_type``.

Pure functions, no I/O. Every function that reads JSON takes the JSON *value of
the field* (``doc``), the document ``key`` it came from (for error messages) and
raises :class:`~zarrdask.errors.MetadataError` (or
:class:`~zarrdask.errors.UnknownDataTypeError`) naming the key, the field, what
was found and what was expected.

Zarr v2 (``zarr-specs/v2-v2.0.rst``, "Data type encoding", "Fill value encoding")
    ``dtype`` is a NumPy typestr with an explicit byte order (``"<f8"``,
    ``">i4"``, ``"|b1"``, ``"|S12"``, ``"<M8[ns]"``, ``"<m8[10s]"``) or, for
    structured types, a list of ``[name, type]`` / ``[name, type, shape]`` with
    nested lists. The byte order is kept as stored (a ``">i4"`` array is
    big-endian in memory too, as in zarr-python). ``"|O"`` (object; used for
    variable-length strings/bytes with an object codec) is accepted as well.
    Fill values: JSON numbers; ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` for
    floats; ``[re, im]`` for complex (as zarr-python writes); base64 for ``S``,
    ``V`` and structured types (the spec) — a plain ``0`` is also read there
    (zarr-python 2 legacy: all zero bytes); a plain string for ``U``; ints or
    ``"NaT"`` for ``m``/``M``; any JSON value, kept as is, for ``O``.
    What an ``"|O"`` array holds depends on its first filter (the object
    codec): :func:`vlen_dtype_v2` gives ``StringDType`` for ``vlen-utf8`` (as
    zarr-python 3 reads it) and :func:`vlen_fill_value_v2` reads its fill value
    (``null`` and zarr-python 2's legacy ``0`` mean ``""`` / ``b""``; base64 for
    ``vlen-bytes``). The metadata document itself keeps ``dtype`` ``object``.

Zarr v3 (``zarr-specs/v3-core.rst`` "data_type", ``zarr-specs/v3-data-types.rst``)
    Core types ``bool``, ``int8``…``int64``, ``uint8``…``uint64``, ``float16``,
    ``float32``, ``float64``, ``complex64``, ``complex128`` and raw bits ``r<N>``
    (N a multiple of 8 → ``V<N/8>``). Extensions (``zarr-extensions/``):
    ``numpy.datetime64`` / ``numpy.timedelta64`` (``unit``, ``scale_factor``),
    ``fixed_length_utf32`` (``length_bytes`` → ``U<length_bytes/4>``), ``struct``
    and its legacy alias ``structured``, ``string`` (→ ``StringDType``),
    ``bytes`` / ``variable_length_bytes`` (→ ``object``). zarr-python 3.1 also
    writes ``null_terminated_bytes`` (→ ``S<n>``) and ``raw_bytes`` (→ ``V<n>``),
    which have no document in ``specs/``; both are read and written here exactly
    as zarr-python 3.1.6 does. v3 data types are always returned in native byte
    order (byte order belongs to the ``bytes`` codec).

    Fill values (v3-data-types.rst "Permitted fill values"): floats are JSON
    numbers, ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` or a ``"0x…"`` bit
    pattern with exactly ``2 * itemsize`` hex digits (decoded by viewing the
    unsigned bits, so a NaN payload survives exactly); complex is ``[re, im]``
    with each part any float form; raw bits ``r<N>`` are a list of ``N/8`` ints
    in ``[0, 255]`` (the spec text says "length equal to <N>"; ``N/8`` bytes is
    what it means and what zarrs does); datetimes are an int or ``"NaT"``;
    ``fixed_length_utf32`` a string of at most ``length_bytes/4`` code points;
    ``struct`` an object with one entry per field; legacy ``structured``,
    ``raw_bytes`` and ``null_terminated_bytes`` use base64 (zarr-python);
    ``bytes`` a list of ints or base64; ``string`` a string.

    Encoding for v3: a NaN whose bits equal the spec's / numpy's default quiet
    NaN becomes ``"NaN"``, any other NaN the hex form; ±inf become
    ``"Infinity"``/``"-Infinity"``; NaT is written as the int ``-2**63`` (what
    zarr-python writes; the extension docs say both forms are equivalent).

New arrays' dtypes come from :func:`normalize_dtype` (``str`` → ``StringDType``
= ``string``, ``bytes`` → ``object`` = ``bytes``, zarr-python 3's choices).

How the *JSON form* of a v3 data type is chosen (:func:`data_type_to_v3`) is
what zarr-python 3.1.6 writes, so arrays written here are readable there:
structured numpy dtypes become the legacy ``"structured"`` form with
``[name, type]`` fields and a base64 fill value, although
``data-types-structured.md`` says new arrays MUST NOT use it — zarr-python
3.1.6 cannot read ``"struct"``. Pass ``struct_name="struct"`` to write the
registered form. Because one numpy dtype can have several v3 JSON forms
(``r32`` vs ``raw_bytes``, ``struct`` vs ``structured``), the v3 fill value
functions take an optional ``data_type=`` (the JSON form) that decides the fill
value's encoding.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import math
import re
from typing import Any, NamedTuple

import numpy as np

from ..errors import MetadataError, UnknownDataTypeError
from .json_checks import MISSING, Text, field_error, is_json_int
from .limits import MAX_STRUCT_DEPTH, check_itemsize, parse_shape

__all__ = [
    "parse_dtype_v2",
    "dtype_to_v2",
    "decode_fill_value_v2",
    "encode_fill_value_v2",
    "parse_data_type_v3",
    "data_type_to_v3",
    "decode_fill_value_v3",
    "encode_fill_value_v3",
    "default_fill_value",
    "normalize_fill_value",
    "fill_values_equal",
    "normalize_dtype",
    "vlen_dtype_v2",
    "vlen_fill_value_v2",
]

# --------------------------------------------------------------------------- helpers

def _native(dtype: np.dtype) -> np.dtype:
    """``dtype`` with every field in native byte order."""
    if dtype.names is not None:
        fields = []
        for name in dtype.names:
            sub = dtype.fields[name][0]
            if sub.subdtype is not None:
                fields.append((name, _native(sub.subdtype[0]), sub.subdtype[1]))
            else:
                fields.append((name, _native(sub)))
        return np.dtype(fields)
    if dtype.kind in "SVOT" or dtype.itemsize <= 1 and dtype.kind != "U":
        return dtype
    return dtype.newbyteorder("=")


def _check_packed(dtype: np.dtype, what: str) -> None:
    """Structured dtypes must be packed (no padding, fields in offset order)."""
    offset = 0
    for name in dtype.names:
        sub, off = dtype.fields[name][:2]
        if off != offset:
            raise UnknownDataTypeError(
                f"structured dtype {dtype} cannot be represented in {what}: field {name!r} is at "
                f"offset {off}, expected {offset} (only packed structured dtypes are supported)"
            )
        offset += sub.itemsize
    if offset != dtype.itemsize:
        raise UnknownDataTypeError(
            f"structured dtype {dtype} cannot be represented in {what}: itemsize {dtype.itemsize} "
            f"has {dtype.itemsize - offset} padding bytes (only packed structured dtypes are supported)"
        )


def _check_struct_depth(depth: int, key: str, field: str) -> None:
    """Refuse a structured type nested more than :data:`~.limits.MAX_STRUCT_DEPTH` deep."""
    if depth > MAX_STRUCT_DEPTH:
        raise field_error(key, field, Text(f"structured types nested {depth} deep"),
                          f"at most {MAX_STRUCT_DEPTH} levels of nesting")


def _struct_dtype(fields: list[tuple], key: str, field: str, found: Any) -> np.dtype:
    """The structured dtype of ``fields`` (``(name, dtype[, shape])``), checked against numpy's limits."""
    itemsize = sum(f[1].itemsize * (math.prod(f[2]) if len(f) == 3 else 1) for f in fields)
    check_itemsize(itemsize, key, field, found)
    try:
        return np.dtype(fields)
    except (TypeError, ValueError) as e:  # pragma: no cover - the checks above are numpy's
        raise field_error(key, field, found, f"a structured data type numpy can represent ({e})",
                          UnknownDataTypeError) from None


_UINT_FOR_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_DEFAULT_NAN_BITS = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}
_NAT = -(2**63)
_DATETIME_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic")


def _float_from_bits(bits: int, fdtype: np.dtype) -> np.floating:
    return np.array(bits, dtype=_UINT_FOR_SIZE[fdtype.itemsize]).view(fdtype)[()]


def _float_bits(x: np.floating) -> int:
    return int(np.asarray(x).view(_UINT_FOR_SIZE[x.itemsize]))


def _decode_float(value: Any, fdtype: np.dtype, key: str, field: str, *, allow_hex: bool) -> np.floating:
    """A float fill value (v2 and v3 forms; hex only in v3)."""
    fdtype = _native(fdtype)
    forms = '"NaN", "Infinity", "-Infinity"' + (
        f' or a "0x" bit pattern of {2 * fdtype.itemsize} hex digits' if allow_hex else ""
    )
    expected = f"a JSON number, {forms} for {fdtype.name}"
    if is_json_int(value) or isinstance(value, float):
        try:
            with np.errstate(over="ignore"):
                return fdtype.type(value)
        except OverflowError:
            raise field_error(key, field, value, f"a number representable as {fdtype.name}") from None
    if isinstance(value, str):
        if value == "NaN":
            return _float_from_bits(_DEFAULT_NAN_BITS[fdtype.itemsize], fdtype)
        if value == "Infinity":
            return fdtype.type(np.inf)
        if value == "-Infinity":
            return fdtype.type(-np.inf)
        if allow_hex and value.startswith("0x"):
            digits = value[2:]
            if len(digits) == 2 * fdtype.itemsize and re.fullmatch(r"[0-9a-fA-F]+", digits):
                return _float_from_bits(int(digits, 16), fdtype)
    raise field_error(key, field, value, expected)


def _encode_float(x: Any, *, v3: bool) -> float | str:
    x = np.asarray(x)[()]
    if np.isnan(x):
        if v3 and _float_bits(x) != _DEFAULT_NAN_BITS[x.itemsize]:
            return f"0x{_float_bits(x):0{2 * x.itemsize}x}"
        return "NaN"
    if np.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(x)


def _decode_int(value: Any, dtype: np.dtype, key: str, field: str, *, lenient: bool = False) -> np.integer:
    info = np.iinfo(dtype)
    expected = f"an integer in [{info.min}, {info.max}] for {_native(dtype).name}"
    if lenient and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not is_json_int(value):
        raise field_error(key, field, value, expected)
    if not info.min <= value <= info.max:
        raise field_error(key, field, value, expected)
    return _native(dtype).type(value)


def _decode_time(value: Any, dtype: np.dtype, key: str, field: str) -> np.generic:
    if value == "NaT":
        value = _NAT
    if not is_json_int(value) or not -(2**63) <= value < 2**63:
        raise field_error(key, field, value, f'an integer in [-2**63, 2**63-1] or "NaT" for {dtype}')
    return np.array(value, dtype=np.int64).view(_native(dtype))[()]


def _time_to_int(x: Any, dtype: np.dtype) -> int:
    return int(np.array(x, dtype=_native(dtype)).view(np.int64))


def _b64decode(value: Any, key: str, field: str, what: str) -> bytes:
    if not isinstance(value, str):
        raise field_error(key, field, value, f"a base64 string for {what}")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise field_error(key, field, value, f"a base64 string for {what}") from None


def _b64encode(b: bytes) -> str:
    return base64.standard_b64encode(bytes(b)).decode("ascii")


def _void_from_bytes(b: bytes, dtype: np.dtype, key: str, field: str, found: Any) -> np.void:
    if len(b) != dtype.itemsize:
        raise field_error(key, field, found, f"exactly {dtype.itemsize} bytes for {dtype}, got {len(b)}")
    return np.frombuffer(bytes(b), dtype=dtype)[0]


def _decode_str(value: Any, dtype: np.dtype, key: str, field: str) -> np.str_:
    n = dtype.itemsize // 4
    if not isinstance(value, str) or len(value) > n:
        raise field_error(key, field, value, f"a string of at most {n} code points for {dtype}")
    return np.str_(value)


def _decode_fixed_bytes(b: bytes, dtype: np.dtype, key: str, field: str, found: Any) -> np.bytes_:
    if len(b.rstrip(b"\x00")) > dtype.itemsize:
        raise field_error(key, field, found, f"at most {dtype.itemsize} bytes for {dtype}")
    return np.bytes_(b.rstrip(b"\x00"))


def _int_list_to_bytes(value: Any, key: str, field: str, what: str) -> bytes:
    if not isinstance(value, list) or not all(is_json_int(v) and 0 <= v <= 255 for v in value):
        raise field_error(key, field, value, f"a list of integers in [0, 255] or a base64 string for {what}")
    return bytes(value)


# --------------------------------------------------------------------------- v2 dtype

_V2_TYPESTR = re.compile(r"^([<>|])([biufcmMSUVO])(\d{0,19})(?:\[(\d{0,19})([A-Za-zμ]+)\])?$")
_V2_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8), "c": (8, 16), "m": (8,), "M": (8,)}


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
        With the byte order as stored.

    Raises
    ------
    MetadataError
        Not a v2 data type, or one beyond numpy's limits (:mod:`.limits`:
        structured types nested more than 32 deep, sub-array shapes of more
        than 64 dimensions, elements larger than ``2**31 - 1`` bytes).
    """
    return _parse_dtype_v2(doc, key, field, 0)


def _parse_dtype_v2(doc: Any, key: str, field: str, depth: int) -> np.dtype:
    if isinstance(doc, str):
        return _parse_typestr_v2(doc, key, field)
    if isinstance(doc, list):
        _check_struct_depth(depth + 1, key, field)
        if not doc:
            raise field_error(key, field, doc, "a non-empty list of [name, type] or [name, type, shape] entries")
        fields: list[tuple] = []
        names: set[str] = set()
        for i, entry in enumerate(doc):
            f = f"{field}[{i}]"
            if not isinstance(entry, list) or len(entry) not in (2, 3):
                raise field_error(key, f, entry, "a list [name, type] or [name, type, shape]")
            name = entry[0]
            if not isinstance(name, str) or not name:
                raise field_error(key, f"{f}[0]", name, "a non-empty field name string")
            if name in names:
                raise field_error(key, f"{f}[0]", name, "unique field names")
            names.add(name)
            sub = _parse_dtype_v2(entry[1], key, f"{f}[1]", depth + 1)
            if sub.kind == "O":
                raise field_error(key, f"{f}[1]", entry[1], "a fixed-size data type inside a structured dtype")
            if len(entry) == 3:
                shape = parse_shape(entry[2], key, f"{f}[2]", minimum=1)
                check_itemsize(sub.itemsize * math.prod(shape), key, f"{f}[2]", entry[2])
                fields.append((name, sub, shape) if shape else (name, sub))
            else:
                fields.append((name, sub))
        return _struct_dtype(fields, key, field, doc)
    raise field_error(key, field, doc, "a NumPy typestr such as \"<f8\" or a list of structured fields",
                      UnknownDataTypeError)


def _parse_typestr_v2(s: str, key: str, field: str) -> np.dtype:
    m = _V2_TYPESTR.match(s)
    expected = ('a NumPy typestr with byte order, kind and size, e.g. "<f8", ">i4", "|b1", "|S12", '
                '"<M8[ns]" (v2 spec "Data type encoding")')
    if not m:
        raise field_error(key, field, s, expected, UnknownDataTypeError)
    order, kind, size, scale, unit = m.groups()
    if kind == "O":
        if order != "|" or size not in ("", "8") or unit:
            raise field_error(key, field, s, 'the object typestr "|O"', UnknownDataTypeError)
        return np.dtype(object)
    if not size or int(size) < 1:
        raise field_error(key, field, s, expected, UnknownDataTypeError)
    n = int(size)
    if kind in "SUV":
        check_itemsize(n * (4 if kind == "U" else 1), key, field, s)
    if kind in _V2_SIZES and n not in _V2_SIZES[kind]:
        raise field_error(key, field, s, f"a size in {_V2_SIZES[kind]} for kind {kind!r}", UnknownDataTypeError)
    if unit is not None and kind not in "mM":
        raise field_error(key, field, s, "units only for datetime64/timedelta64 ('M'/'m')", UnknownDataTypeError)
    if unit is not None and unit not in _DATETIME_UNITS[:-1]:
        raise field_error(key, field, s, f"a unit in {_DATETIME_UNITS[:-1]}", UnknownDataTypeError)
    multibyte = kind in "mMU" or (kind in "iufc" and n > 1)
    if multibyte and order == "|":
        raise field_error(key, field, s, "an explicit byte order '<' or '>' for a multi-byte type",
                          UnknownDataTypeError)
    try:
        return np.dtype(s)
    except TypeError:
        raise field_error(key, field, s, expected, UnknownDataTypeError) from None


def dtype_to_v2(dtype: Any) -> str | list:
    """The v2 ``dtype`` JSON of a numpy dtype (typestr with explicit byte order, or a list).

    ``StringDType`` maps to ``"|O"`` (zarr-python writes variable-length strings
    as ``"|O"`` with a ``vlen-utf8`` filter), so it does not round-trip through
    :func:`parse_dtype_v2` (which gives ``object``).
    """
    if isinstance(dtype, np.dtypes.StringDType):
        return "|O"
    dtype = np.dtype(dtype)
    if dtype.names is not None:
        _check_packed(dtype, "Zarr v2 metadata")
        out: list = []
        for name in dtype.names:
            sub = dtype.fields[name][0]
            if sub.subdtype is not None:
                base, shape = sub.subdtype
                out.append([name, dtype_to_v2(base), list(shape)])
            else:
                out.append([name, dtype_to_v2(sub)])
        return out
    if dtype.subdtype is not None:
        raise UnknownDataTypeError(f"subarray dtype {dtype} cannot be a Zarr v2 array dtype")
    if dtype.kind == "O":
        return "|O"
    s = dtype.str
    try:
        parsed = _parse_typestr_v2(s, "<dtype>", "dtype")
    except UnknownDataTypeError:
        raise UnknownDataTypeError(f"numpy dtype {dtype} ({s}) has no Zarr v2 encoding") from None
    assert parsed == dtype
    return s


# --------------------------------------------------------------------------- variable-length types


def _string_dtype() -> Any:
    cls = getattr(np.dtypes, "StringDType", None)
    if cls is None:  # pragma: no cover - numpy 1.x
        raise UnknownDataTypeError("variable-length strings need numpy >= 2 (numpy.dtypes.StringDType)")
    return cls()


def normalize_dtype(dtype: Any, data: Any = None) -> Any:
    """The numpy dtype of a new array from what a user passes as ``dtype=``.

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
        return _string_dtype()
    if dtype is bytes or (isinstance(dtype, str) and dtype in ("bytes", "S", "|S")):
        return np.dtype(object)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise UnknownDataTypeError(f"dtype {dtype!r} is not a numpy data type") from None
    if dt.kind == "U" and dt.itemsize == 0:
        return _string_dtype()
    if dt.kind == "S" and dt.itemsize == 0:
        return np.dtype(object)
    if dt.kind == "O":
        values = None if data is None else np.asarray(data, dtype=object).reshape(-1)
        if values is not None and values.size and all(isinstance(v, str) for v in values):
            return _string_dtype()
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
        return _string_dtype()
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
    return _b64decode(value, key, field, '"|O" with vlen-bytes (or null / the legacy 0)')


# --------------------------------------------------------------------------- fill values (python side)


def default_fill_value(dtype: Any) -> Any:
    """The fill value used when none is given: the zero of the type.

    ``False``, ``0``, ``0.0``, ``0j``, ``b""``, ``""``, zeroed ``np.void`` for
    raw and structured types, ``b""`` for ``object`` (variable-length bytes).
    For ``datetime64`` / ``timedelta64`` it is ``NaT``: zarr-python 3.1.6 uses
    ``NaT`` as the default for both formats (checked: ``create_array`` without
    ``fill_value`` writes ``-9223372036854775808``).
    """
    if isinstance(dtype, np.dtypes.StringDType):
        return ""
    dtype = np.dtype(dtype)
    if dtype.kind == "O":
        return b""
    if dtype.kind in "mM":
        return np.array(_NAT, dtype=np.int64).view(_native(dtype))[()]
    if dtype.kind == "V":
        return np.frombuffer(bytes(dtype.itemsize), dtype=dtype)[0]
    if dtype.kind == "S":
        return np.bytes_(b"")
    if dtype.kind == "U":
        return np.str_("")
    return _native(dtype).type(0)


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
    if isinstance(dtype, np.dtypes.StringDType):
        if not isinstance(value, str):
            raise field_error(key, field, value, "a str for StringDType")
        return str(value)
    dtype = np.dtype(dtype)
    k = dtype.kind
    if k == "O":
        return value
    if dtype.names is not None:
        return _normalize_structured(value, dtype, key, field)
    if isinstance(value, np.generic) and value.dtype == _native(dtype) and k not in "SUV":
        return value  # exact (keeps NaN payloads)
    if k == "b":
        if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
            return np.bool_(bool(value))
        raise field_error(key, field, value, "a boolean for bool")
    if k in "iu":
        if isinstance(value, (bool, np.bool_)):
            raise field_error(key, field, value, f"an integer for {dtype}")
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        if isinstance(value, (int, np.integer)):
            return _decode_int(int(value), dtype, key, field)
        raise field_error(key, field, value, f"an integer for {_native(dtype).name}")
    if k in "fc":
        ok = (int, float, np.integer, np.floating) + ((complex, np.complexfloating) if k == "c" else ())
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, ok):
            raise field_error(key, field, value, f"a number for {_native(dtype).name}")
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                return _native(dtype).type(value)
        except OverflowError:
            raise field_error(key, field, value, f"a number representable as {_native(dtype).name}") from None
    if k in "mM":
        if isinstance(value, (bool, np.bool_)):
            raise field_error(key, field, value, f"a {dtype} value or integer")
        if isinstance(value, (int, np.integer)):
            return _decode_time(int(value), dtype, key, field)
        want = np.datetime64 if k == "M" else np.timedelta64
        if isinstance(value, (want, str, _dt.datetime, _dt.date, _dt.timedelta)):
            try:
                return np.array(value).astype(_native(dtype))[()] if isinstance(value, want) else \
                    np.array(value, dtype=_native(dtype))[()]
            except (ValueError, TypeError):
                pass
        raise field_error(key, field, value, f"a {dtype} value or integer")
    if k == "S":
        if isinstance(value, str):
            try:
                value = value.encode("ascii")
            except UnicodeEncodeError:
                raise field_error(key, field, value, f"ASCII text or bytes for {dtype}") from None
        if isinstance(value, (bytes, bytearray, np.bytes_)):
            return _decode_fixed_bytes(bytes(value), dtype, key, field, value)
        raise field_error(key, field, value, f"bytes of at most {dtype.itemsize} for {dtype}")
    if k == "U":
        return _decode_str(value, dtype, key, field)
    if k == "V":
        if isinstance(value, np.void):
            value = value.tobytes()
        if isinstance(value, (bytes, bytearray)):
            return _void_from_bytes(bytes(value), dtype, key, field, value)
        raise field_error(key, field, value, f"{dtype.itemsize} bytes for {dtype}")
    raise field_error(key, field, value, f"a value of a supported dtype (got dtype {dtype})",  # pragma: no cover
                      UnknownDataTypeError)


def _normalize_structured(value: Any, dtype: np.dtype, key: str, field: str) -> np.void:
    if isinstance(value, np.void) and value.dtype == dtype:
        return np.frombuffer(value.tobytes(), dtype=dtype)[0]
    if isinstance(value, (bytes, bytearray)):
        return _void_from_bytes(bytes(value), dtype, key, field, value)
    arr = np.zeros((), dtype=dtype)
    if isinstance(value, dict):
        if set(value) != set(dtype.names):
            raise field_error(key, field, value, f"an object with exactly the fields {list(dtype.names)}")
        for name in dtype.names:
            sub = dtype.fields[name][0]
            if sub.subdtype is not None:
                try:
                    arr[name] = value[name]
                except (ValueError, TypeError):
                    raise field_error(key, f"{field}.{name}", value[name], f"a value for {sub}") from None
            else:
                arr[name] = normalize_fill_value(value[name], sub, key=key, field=f"{field}.{name}")
        return np.frombuffer(arr.tobytes(), dtype=dtype)[0]
    if isinstance(value, (tuple, list, np.void)):
        try:
            arr[()] = tuple(value)
        except (ValueError, TypeError, OverflowError):
            raise field_error(key, field, value, f"a tuple of field values for {dtype}") from None
        return np.frombuffer(arr.tobytes(), dtype=dtype)[0]
    raise field_error(key, field, value, f"a structured value (np.void, tuple, dict or bytes) for {dtype}")


def fill_values_equal(a: Any, b: Any) -> bool:
    """Equality of fill values; floats compare by bits (NaN equals the same NaN)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, np.generic) and isinstance(b, np.generic):
        return a.dtype == b.dtype and np.asarray(a).tobytes() == np.asarray(b).tobytes()
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        return False
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------- v2 fill values


def decode_fill_value_v2(doc: Any, dtype: Any, *, key: str = ".zarray", field: str = "fill_value") -> Any:
    """Decode the value of a v2 ``fill_value`` field for ``dtype``.

    Returns a numpy scalar, or ``None`` for ``null``; for ``object`` dtype the
    JSON value itself.
    """
    if isinstance(dtype, np.dtypes.StringDType):
        dtype = np.dtype(object)
    dtype = np.dtype(dtype)
    if doc is None:
        return None
    k = dtype.kind
    if k == "O":
        return doc
    if k == "V":  # raw void and structured: base64, or legacy 0 = zero bytes
        if is_json_int(doc) and doc == 0:
            return np.frombuffer(bytes(dtype.itemsize), dtype=dtype)[0]
        b = _b64decode(doc, key, field, f"{dtype} (or 0 for zero bytes)")
        return _void_from_bytes(b, dtype, key, field, doc)
    if k == "S":
        if is_json_int(doc) and doc == 0:
            return np.bytes_(b"")
        b = _b64decode(doc, key, field, f"{dtype} (or 0 for zero bytes)")
        return _decode_fixed_bytes(b, dtype, key, field, doc)
    if k == "U":
        return _decode_str(doc, dtype, key, field)
    if k == "b":
        if isinstance(doc, bool) or (is_json_int(doc) and doc in (0, 1)):
            return np.bool_(bool(doc))
        raise field_error(key, field, doc, "true or false for bool")
    if k in "iu":
        return _decode_int(doc, dtype, key, field, lenient=True)
    if k == "f":
        return _decode_float(doc, dtype, key, field, allow_hex=False)
    if k == "c":
        comp = np.dtype(f"f{dtype.itemsize // 2}")
        if isinstance(doc, list) and len(doc) == 2:
            re_ = _decode_float(doc[0], comp, key, f"{field}[0]", allow_hex=False)
            im_ = _decode_float(doc[1], comp, key, f"{field}[1]", allow_hex=False)
            return _complex(re_, im_, dtype)
        if is_json_int(doc) or isinstance(doc, float):  # a real number (zarr-python 2 wrote these)
            return _complex(_decode_float(doc, comp, key, field, allow_hex=False), comp.type(0), dtype)
        raise field_error(key, field, doc, f"a list [re, im] for {_native(dtype).name}")
    if k in "mM":
        return _decode_time(doc, dtype, key, field)
    raise field_error(key, field, doc, f"a fill value for {dtype}")  # pragma: no cover


def _complex(re_: np.floating, im_: np.floating, dtype: np.dtype) -> np.complexfloating:
    """Assemble a complex scalar from two floats, keeping their exact bits."""
    return np.array([re_, im_], dtype=re_.dtype).view(_native(dtype))[0]


def encode_fill_value_v2(value: Any, dtype: Any) -> Any:
    """The v2 JSON of a fill value (spec form: ``"NaN"``, base64 for S/V/structured)."""
    if isinstance(dtype, np.dtypes.StringDType):
        dtype = np.dtype(object)
    dtype = np.dtype(dtype)
    if value is None:
        return None
    if dtype.kind == "O":
        if isinstance(value, (bytes, bytearray)):
            return _b64encode(value)
        if isinstance(value, np.generic):
            return value.item()
        return value
    v = normalize_fill_value(value, dtype)
    k = dtype.kind
    if k == "b":
        return bool(v)
    if k in "iu":
        return int(v)
    if k == "f":
        return _encode_float(v, v3=False)
    if k == "c":
        return [_encode_float(v.real, v3=False), _encode_float(v.imag, v3=False)]
    if k in "mM":
        return _time_to_int(v, dtype)
    if k == "S":
        return _b64encode(bytes(v))
    if k == "U":
        return str(v)
    return _b64encode(np.asarray(v, dtype=dtype).tobytes())  # V and structured


# --------------------------------------------------------------------------- v3 data types


class _V3Type(NamedTuple):
    """A parsed v3 data type: its numpy dtype and the JSON form it came in."""

    form: str  # bool int float complex raw_bits raw_bytes nt_bytes utf32 time struct structured string bytes
    dtype: Any
    fields: tuple = ()  # ((name, _V3Type), ...) for struct / structured


_CORE_V3 = {
    "bool": "bool", "int8": "int", "int16": "int", "int32": "int", "int64": "int",
    "uint8": "int", "uint16": "int", "uint32": "int", "uint64": "int",
    "float16": "float", "float32": "float", "float64": "float",
    "complex64": "complex", "complex128": "complex",
}
_KNOWN_V3 = sorted(_CORE_V3) + [
    "r<N>", "numpy.datetime64", "numpy.timedelta64", "fixed_length_utf32", "null_terminated_bytes",
    "raw_bytes", "struct", "structured", "string", "bytes", "variable_length_bytes",
]


def parse_data_type_v3(doc: Any, *, key: str = "zarr.json", field: str = "data_type") -> np.dtype:
    """Parse the value of a v3 ``data_type`` field into a native-byte-order numpy dtype.

    ``"string"`` gives ``np.dtypes.StringDType()``; ``"bytes"`` and
    ``"variable_length_bytes"`` give ``np.dtype(object)``. Unknown names raise
    :class:`~zarrdask.errors.UnknownDataTypeError`.
    """
    return _parse_v3(doc, key, field).dtype


def _config(doc: dict, name: str, key: str, field: str, required: tuple[str, ...]) -> dict:
    conf = doc.get("configuration", MISSING)
    if conf is MISSING or not isinstance(conf, dict):
        raise field_error(key, f"{field}.configuration", conf,
                          f"an object with {list(required)} for data type {name!r}")
    for r in required:
        if r not in conf:
            raise field_error(key, f"{field}.configuration.{r}", MISSING, f"a value (required for {name!r})")
    extra = set(conf) - set(required)
    if extra:
        raise field_error(key, f"{field}.configuration", conf,
                          f"only the keys {list(required)} for data type {name!r} (unknown: {sorted(extra)})")
    return conf


def _length_bytes(conf: dict, name: str, key: str, field: str, multiple: int = 1) -> int:
    n = conf["length_bytes"]
    if not is_json_int(n) or n < 1 or n % multiple:
        what = "a positive integer" + (f" multiple of {multiple}" if multiple > 1 else "")
        raise field_error(key, f"{field}.configuration.length_bytes", n, f"{what} for {name!r}")
    return check_itemsize(n, key, f"{field}.configuration.length_bytes", n)


def _parse_v3(doc: Any, key: str, field: str, depth: int = 0) -> _V3Type:
    """Parse a v3 ``data_type`` value; ``depth`` is how many structs enclose it."""
    if isinstance(doc, dict):
        name = doc.get("name", MISSING)
        if not isinstance(name, str):
            raise field_error(key, f"{field}.name", name, "a data type name string")
        extra = set(doc) - {"name", "configuration", "must_understand"}
        if extra:
            raise field_error(key, field, doc, f"an object with name and configuration (unknown keys: {sorted(extra)})")
        if doc.get("must_understand", True) is not True:
            raise field_error(key, f"{field}.must_understand", doc["must_understand"],
                              "true or absent (v3-core: must_understand=false is not supported for data types)")
    elif isinstance(doc, str):
        name = doc
        doc = {"name": name}
    else:
        raise field_error(key, field, doc, "a data type name string or an object with \"name\"")

    if name in _CORE_V3 or re.fullmatch(r"r\d{1,19}", name):
        if "configuration" in doc and doc["configuration"] not in ({},):
            raise field_error(key, f"{field}.configuration", doc["configuration"],
                              f"no configuration for data type {name!r}")
        if name in _CORE_V3:
            return _V3Type(_CORE_V3[name], np.dtype(name))
        bits = int(name[1:])
        if bits < 8 or bits % 8:
            raise field_error(key, field, name, "raw bits r<N> with N a positive multiple of 8",
                              UnknownDataTypeError)
        return _V3Type("raw_bits", np.dtype(f"V{check_itemsize(bits // 8, key, field, name)}"))
    if name in ("numpy.datetime64", "numpy.timedelta64"):
        conf = _config(doc, name, key, field, ("unit", "scale_factor"))
        unit, scale = conf["unit"], conf["scale_factor"]
        if unit not in _DATETIME_UNITS:
            raise field_error(key, f"{field}.configuration.unit", unit, f"one of {list(_DATETIME_UNITS)}")
        if not is_json_int(scale) or not 1 <= scale <= 2**31 - 1:
            raise field_error(key, f"{field}.configuration.scale_factor", scale, "an integer in [1, 2147483647]")
        code = "M8" if name == "numpy.datetime64" else "m8"
        if unit == "generic":
            if scale != 1:
                raise field_error(key, f"{field}.configuration.scale_factor", scale, "1 for the generic unit")
            return _V3Type("time", np.dtype(code))
        return _V3Type("time", np.dtype(f"{code}[{scale if scale != 1 else ''}{unit}]"))
    if name == "fixed_length_utf32":
        conf = _config(doc, name, key, field, ("length_bytes",))
        return _V3Type("utf32", np.dtype(f"U{_length_bytes(conf, name, key, field, 4) // 4}"))
    if name == "null_terminated_bytes":
        conf = _config(doc, name, key, field, ("length_bytes",))
        return _V3Type("nt_bytes", np.dtype(f"S{_length_bytes(conf, name, key, field)}"))
    if name == "raw_bytes":
        conf = _config(doc, name, key, field, ("length_bytes",))
        return _V3Type("raw_bytes", np.dtype(f"V{_length_bytes(conf, name, key, field)}"))
    if name in ("struct", "structured"):
        return _parse_struct_v3(doc, name, key, field, depth + 1)
    if name == "string":
        return _V3Type("string", np.dtypes.StringDType())
    if name in ("bytes", "variable_length_bytes"):
        return _V3Type("bytes", np.dtype(object))
    raise field_error(key, field, name if doc == {"name": name} else doc,
                      f"a known data type ({', '.join(_KNOWN_V3)})", UnknownDataTypeError)


def _parse_struct_v3(doc: dict, name: str, key: str, field: str, depth: int) -> _V3Type:
    _check_struct_depth(depth, key, field)
    conf = _config(doc, name, key, field, ("fields",))
    raw_fields = conf["fields"]
    ffield = f"{field}.configuration.fields"
    if not isinstance(raw_fields, list) or not raw_fields:
        raise field_error(key, ffield, raw_fields, "a non-empty list of fields")
    parsed: list[tuple[str, _V3Type]] = []
    seen: set[str] = set()
    for i, f in enumerate(raw_fields):
        fi = f"{ffield}[{i}]"
        if isinstance(f, dict):
            if set(f) != {"name", "data_type"}:
                raise field_error(key, fi, f, "an object with exactly \"name\" and \"data_type\"")
            fname, fdt, dt_field = f["name"], f["data_type"], f"{fi}.data_type"
        elif isinstance(f, list) and len(f) == 2:  # legacy "structured" tuple form
            fname, fdt, dt_field = f[0], f[1], f"{fi}[1]"
        else:
            raise field_error(key, fi, f, '{"name": ..., "data_type": ...} or a legacy [name, data_type] pair')
        if not isinstance(fname, str) or not fname:
            raise field_error(key, fi, fname, "a non-empty field name string")
        if fname in seen:
            raise field_error(key, fi, fname, "unique field names (data-types-struct.md)")
        seen.add(fname)
        sub = _parse_v3(fdt, key, dt_field, depth)
        if sub.form in ("string", "bytes"):
            raise field_error(key, dt_field, fdt, "a fixed-size data type (variable-length types are not allowed in a struct)")
        parsed.append((fname, sub))
    dtype = _struct_dtype([(n, t.dtype) for n, t in parsed], key, field, doc)
    return _V3Type(name, dtype, tuple(parsed))


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
    if isinstance(dtype, np.dtypes.StringDType):
        return "string"
    dtype = np.dtype(dtype)
    k, n = dtype.kind, dtype.itemsize
    if dtype.names is not None:
        _check_packed(dtype, "Zarr v3 metadata")
        fields: list = []
        for name in dtype.names:
            sub = dtype.fields[name][0]
            if sub.subdtype is not None:
                raise UnknownDataTypeError(
                    f"structured dtype {dtype}: field {name!r} has subarray type {sub}, which has no "
                    "Zarr v3 representation (struct fields are scalars)")
            sub_json = data_type_to_v3(sub, struct_name=struct_name)
            fields.append([name, sub_json] if struct_name == "structured" else {"name": name, "data_type": sub_json})
        return {"name": struct_name, "configuration": {"fields": fields}}
    if dtype.subdtype is not None:
        raise UnknownDataTypeError(f"subarray dtype {dtype} cannot be a Zarr v3 data type")
    if k == "b":
        return "bool"
    if k in "iu" and n in (1, 2, 4, 8):
        return f"{'u' if k == 'u' else ''}int{8 * n}"
    if k == "f" and n in (2, 4, 8):
        return f"float{8 * n}"
    if k == "c" and n in (8, 16):
        return f"complex{8 * n}"
    if k in "mM":
        unit, scale = np.datetime_data(dtype)
        return {"name": "numpy.datetime64" if k == "M" else "numpy.timedelta64",
                "configuration": {"unit": unit, "scale_factor": scale}}
    if k == "U":
        return {"name": "fixed_length_utf32", "configuration": {"length_bytes": n}}
    if k == "S":
        return {"name": "null_terminated_bytes", "configuration": {"length_bytes": n}}
    if k == "V":
        return {"name": "raw_bytes", "configuration": {"length_bytes": n}}
    if k == "O":
        return "variable_length_bytes"
    raise UnknownDataTypeError(f"numpy dtype {dtype} has no Zarr v3 data type")


def _v3_type_for(dtype: Any, data_type: Any, key: str) -> _V3Type:
    if data_type is None:
        data_type = data_type_to_v3(dtype)
    t = _parse_v3(data_type, key, "data_type")
    if dtype is not None and not isinstance(dtype, np.dtypes.StringDType) and np.dtype(dtype) != t.dtype \
            and _native(np.dtype(dtype)) != t.dtype:
        raise field_error(key, "data_type", data_type, f"a data type matching numpy dtype {dtype}")
    return t


# --------------------------------------------------------------------------- v3 fill values


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
    t = _v3_type_for(dtype, data_type, key)
    return _decode_v3(doc, t, key, field)


def _decode_v3(doc: Any, t: _V3Type, key: str, field: str) -> Any:
    dtype, form = t.dtype, t.form
    if doc is None:
        raise field_error(key, field, doc, f"a fill value for data type {dtype} (null is not permitted in v3)")
    if form == "bool":
        if not isinstance(doc, bool):
            raise field_error(key, field, doc, "true or false for bool")
        return np.bool_(doc)
    if form == "int":
        return _decode_int(doc, dtype, key, field)
    if form == "float":
        return _decode_float(doc, dtype, key, field, allow_hex=True)
    if form == "complex":
        if not isinstance(doc, list) or len(doc) != 2:
            raise field_error(key, field, doc, f"a two-element list [re, im] for {dtype.name}")
        comp = np.dtype(f"f{dtype.itemsize // 2}")
        return _complex(_decode_float(doc[0], comp, key, f"{field}[0]", allow_hex=True),
                        _decode_float(doc[1], comp, key, f"{field}[1]", allow_hex=True), dtype)
    if form == "time":
        return _decode_time(doc, dtype, key, field)
    if form == "utf32":
        return _decode_str(doc, dtype, key, field)
    if form in ("raw_bits", "raw_bytes", "bytes", "nt_bytes"):
        b = (_int_list_to_bytes(doc, key, field, str(dtype)) if isinstance(doc, list)
             else _b64decode(doc, key, field, f"{dtype} (or a list of byte values)"))
        if form == "bytes":
            return b
        if form == "nt_bytes":
            return _decode_fixed_bytes(b, dtype, key, field, doc)
        return _void_from_bytes(b, dtype, key, field, doc)
    if form in ("struct", "structured"):
        if isinstance(doc, dict):
            if set(doc) != set(dtype.names):
                raise field_error(key, field, doc, f"an object with exactly the fields {list(dtype.names)}")
            arr = np.zeros((), dtype=dtype)
            for name, sub in t.fields:
                arr[name] = _decode_v3(doc[name], sub, key, f"{field}.{name}")
            return np.frombuffer(arr.tobytes(), dtype=dtype)[0]
        if isinstance(doc, str):  # legacy: base64 of the packed little-endian bytes
            b = _b64decode(doc, key, field, f"{dtype} (object of field values or base64)")
            le = _void_from_bytes(b, dtype.newbyteorder("<"), key, field, doc)
            return np.frombuffer(np.asarray(le).astype(dtype).tobytes(), dtype=dtype)[0]
        raise field_error(key, field, doc, f"an object of field values for {dtype}")
    if form == "string":
        if not isinstance(doc, str):
            raise field_error(key, field, doc, "a string for data type 'string'")
        return doc
    raise field_error(key, field, doc, f"a fill value for {dtype}")  # pragma: no cover


def encode_fill_value_v3(value: Any, dtype: Any, *, data_type: Any = None) -> Any:
    """The v3 JSON of a fill value (see the module docstring for the forms).

    ``data_type`` is the JSON form of the data type (default: what
    :func:`data_type_to_v3` writes for ``dtype``); it decides between e.g. a
    list of ints (``r<N>``) and base64 (``raw_bytes``), or an object
    (``struct``) and base64 (``structured``).
    """
    t = _v3_type_for(dtype, data_type, "<data_type>")
    if value is None:
        raise field_error("<fill_value>", "fill_value", value, "a fill value (null is not permitted in v3)")
    return _encode_v3(value, t)


def _encode_v3(value: Any, t: _V3Type) -> Any:
    form, dtype = t.form, t.dtype
    if form == "string":
        return normalize_fill_value(value, dtype)
    if form == "bytes":
        if isinstance(value, str):
            value = value.encode()
        if not isinstance(value, (bytes, bytearray, np.bytes_)):
            raise field_error("<fill_value>", "fill_value", value, "bytes for data type 'bytes'")
        return _b64encode(bytes(value))
    v = normalize_fill_value(value, dtype)
    if form == "bool":
        return bool(v)
    if form == "int":
        return int(v)
    if form == "float":
        return _encode_float(v, v3=True)
    if form == "complex":
        return [_encode_float(v.real, v3=True), _encode_float(v.imag, v3=True)]
    if form == "time":
        return _time_to_int(v, dtype)
    if form == "utf32":
        return str(v)
    if form == "nt_bytes":
        return _b64encode(bytes(v))
    if form == "raw_bits":
        return list(v.tobytes())
    if form == "raw_bytes":
        return _b64encode(v.tobytes())
    if form == "structured":
        return _b64encode(np.asarray(v, dtype=dtype).astype(dtype.newbyteorder("<")).tobytes())
    if form == "struct":
        return {name: _encode_v3(v[name], sub) for name, sub in t.fields}
    raise field_error("<fill_value>", "fill_value", value, f"a fill value for {dtype}")  # pragma: no cover
