"""Structured data types: numpy dtypes with named fields.

v2: a list of ``[name, type]`` / ``[name, type, shape]`` entries, ``type``
itself a typestr or a nested list (``zarr-specs/v2-v2.0.rst`` "Data type
encoding"); fill value base64 of the bytes in the stored byte order, or
zarr-python 2's legacy ``0`` (all zero bytes) — "Fill value encoding".

v3: extension ``struct`` (``zarr-extensions/data-types-struct.md`` "Data type
representation": fields ``{"name": ..., "data_type": ...}``; "Fill value
representation": an object with one entry per field) and its legacy alias
``structured`` (``data-types-structured.md``: ``[name, data_type]`` fields;
base64 fill values of the packed little-endian bytes). Either name reads
either field form and either fill value form; the name decides how a fill
value is written. Structured numpy dtypes are written as ``structured`` by
default, what zarr-python 3.1.6 writes and reads, although
``data-types-structured.md`` says new arrays MUST NOT use it (zarr-python 3.1.6
cannot read ``struct``); ``struct_name="struct"`` writes the registered form.

Fields must be packed (no padding, fields in offset order) and of a fixed
size; v3 fields are scalars (no sub-array shapes). Nesting is limited to
:data:`~..limits.MAX_STRUCT_DEPTH` levels.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import UnknownDataTypeError
from ..json_checks import Text, field_error
from ..limits import MAX_STRUCT_DEPTH, check_itemsize, parse_shape
from .base import DataType, DataTypes, configuration
from .binary import b64decode, b64encode, void_from_bytes
from .raw import VoidType

__all__ = ["Structured"]


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
    """Refuse a structured type nested more than :data:`~..limits.MAX_STRUCT_DEPTH` deep."""
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


def _v3_field(f: Any, fi: str, key: str) -> tuple[Any, Any, str]:
    """(name, data type JSON, the data type's field) of one entry of a v3 ``fields`` list."""
    if isinstance(f, dict):
        if set(f) != {"name", "data_type"}:
            raise field_error(key, fi, f, "an object with exactly \"name\" and \"data_type\"")
        return f["name"], f["data_type"], f"{fi}.data_type"
    if isinstance(f, list) and len(f) == 2:  # legacy "structured" tuple form
        return f[0], f[1], f"{fi}[1]"
    raise field_error(key, fi, f, '{"name": ..., "data_type": ...} or a legacy [name, data_type] pair')


class Structured(VoidType):
    """``struct`` / ``structured`` ↔ numpy dtypes with fields.

    ``name`` is the v3 spelling (decides the fill value's v3 form); ``fields``
    holds ``(name, DataType, shape)`` per field, ``shape`` ``()`` for scalars.
    """

    V3_EXTENSION_NAMES = ("struct", "structured")
    V2_KINDS = ("fields",)
    NUMPY_KINDS = ("fields",)
    __slots__ = ("name", "fields")

    def __init__(self, dtype: np.dtype, name: str = "structured", fields: tuple = ()) -> None:
        super().__init__(dtype)
        self.name = name
        self.fields = fields

    # ------------------------------------------------------------------ recognising

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> Structured:
        depth += 1
        _check_struct_depth(depth, key, field)
        raw_fields = configuration(doc, name, key, field, ("fields",))["fields"]
        ffield = f"{field}.configuration.fields"
        if not isinstance(raw_fields, list) or not raw_fields:
            raise field_error(key, ffield, raw_fields, "a non-empty list of fields")
        parsed: list[tuple[str, DataType, tuple]] = []
        seen: set[str] = set()
        for i, f in enumerate(raw_fields):
            fi = f"{ffield}[{i}]"
            fname, fdt, dt_field = _v3_field(f, fi, key)
            if not isinstance(fname, str) or not fname:
                raise field_error(key, fi, fname, "a non-empty field name string")
            if fname in seen:
                raise field_error(key, fi, fname, "unique field names (data-types-struct.md)")
            seen.add(fname)
            sub = types.parse_v3(fdt, key, dt_field, depth)
            if sub.VARIABLE_LENGTH:
                raise field_error(key, dt_field, fdt,
                                  "a fixed-size data type (variable-length types are not allowed in a struct)")
            parsed.append((fname, sub, ()))
        dtype = _struct_dtype([(n, t.dtype) for n, t, _ in parsed], key, field, doc)
        return cls(dtype, name, tuple(parsed))

    @classmethod
    def from_v2(cls, doc: Any, key: str, field: str, types: DataTypes, depth: int) -> np.dtype:
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
            sub = types.parse_v2(entry[1], key, f"{f}[1]", depth + 1)
            if sub.kind == "O":
                raise field_error(key, f"{f}[1]", entry[1], "a fixed-size data type inside a structured dtype")
            if len(entry) == 3:
                shape = parse_shape(entry[2], key, f"{f}[2]", minimum=1)
                check_itemsize(sub.itemsize * math.prod(shape), key, f"{f}[2]", entry[2])
                fields.append((name, sub, shape) if shape else (name, sub))
            else:
                fields.append((name, sub))
        return _struct_dtype(fields, key, field, doc)

    @classmethod
    def from_numpy(cls, dtype: np.dtype, types: DataTypes) -> Structured:
        fields = []
        for fname in dtype.names:
            sub = dtype.fields[fname][0]
            base, shape = sub.subdtype if sub.subdtype is not None else (sub, ())
            fields.append((fname, types.for_dtype(base), shape))
        return cls(dtype, "structured", tuple(fields))

    # ------------------------------------------------------------------ writing

    def to_v3(self, struct_name: str | None = None) -> dict:
        name = struct_name or self.name
        _check_packed(self.dtype, "Zarr v3 metadata")
        fields: list = []
        for fname, t, shape in self.fields:
            if shape:
                raise UnknownDataTypeError(
                    f"structured dtype {self.dtype}: field {fname!r} has subarray type {self.dtype.fields[fname][0]}, "
                    "which has no Zarr v3 representation (struct fields are scalars)")
            sub_json = t.to_v3(struct_name)
            fields.append([fname, sub_json] if name == "structured" else {"name": fname, "data_type": sub_json})
        return {"name": name, "configuration": {"fields": fields}}

    def to_v2(self) -> list:
        _check_packed(self.dtype, "Zarr v2 metadata")
        return [[fname, t.to_v2(), list(shape)] if shape else [fname, t.to_v2()] for fname, t, shape in self.fields]

    # ------------------------------------------------------------------ fill values

    def coerce_fill(self, value: Any, key: str, field: str) -> np.void:
        dtype = self.dtype
        if isinstance(value, np.void) and value.dtype == dtype:
            return np.frombuffer(value.tobytes(), dtype=dtype)[0]
        if isinstance(value, (bytes, bytearray)):
            return void_from_bytes(bytes(value), dtype, key, field, value)
        arr = np.zeros((), dtype=dtype)
        if isinstance(value, dict):
            if set(value) != set(dtype.names):
                raise field_error(key, field, value, f"an object with exactly the fields {list(dtype.names)}")
            for fname, t, shape in self.fields:
                if shape:
                    try:
                        arr[fname] = value[fname]
                    except (ValueError, TypeError):
                        raise field_error(key, f"{field}.{fname}", value[fname],
                                          f"a value for {dtype.fields[fname][0]}") from None
                else:
                    arr[fname] = t.normalize_fill(value[fname], key, f"{field}.{fname}")
            return np.frombuffer(arr.tobytes(), dtype=dtype)[0]
        if isinstance(value, (tuple, list, np.void)):
            try:
                arr[()] = tuple(value)
            except (ValueError, TypeError, OverflowError):
                raise field_error(key, field, value, f"a tuple of field values for {dtype}") from None
            return np.frombuffer(arr.tobytes(), dtype=dtype)[0]
        raise field_error(key, field, value, f"a structured value (np.void, tuple, dict or bytes) for {dtype}")

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.void:
        dtype = self.dtype
        if isinstance(doc, dict):
            if set(doc) != set(dtype.names):
                raise field_error(key, field, doc, f"an object with exactly the fields {list(dtype.names)}")
            arr = np.zeros((), dtype=dtype)
            for fname, t, _ in self.fields:
                arr[fname] = t.decode_fill_v3(doc[fname], key, f"{field}.{fname}")
            return np.frombuffer(arr.tobytes(), dtype=dtype)[0]
        if isinstance(doc, str):  # legacy: base64 of the packed little-endian bytes
            b = b64decode(doc, key, field, f"{dtype} (object of field values or base64)")
            le = void_from_bytes(b, dtype.newbyteorder("<"), key, field, doc)
            return np.frombuffer(np.asarray(le).astype(dtype).tobytes(), dtype=dtype)[0]
        raise field_error(key, field, doc, f"an object of field values for {dtype}")

    def fill_to_v3(self, value: Any) -> str | dict:
        if self.name == "structured":
            return b64encode(np.asarray(value, dtype=self.dtype).astype(self.dtype.newbyteorder("<")).tobytes())
        return {fname: t.encode_fill_v3(value[fname]) for fname, t, _ in self.fields}
