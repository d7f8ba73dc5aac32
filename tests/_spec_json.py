"""Zarr v3 JSON compared modulo what the specifications leave open (test helper).

Tests that compare zarrdask's ``zarr.json`` with a peer's should fail when the two
documents *mean* different arrays, not when a peer release changes a spelling the
specifications allow. This module rewrites a v3 array document (or a codec list)
into one form per meaning, written from the texts in ``/work/shared/specs`` and
without zarrdask, so a test compares ``normalize(ours) == normalize(theirs)``.

What is made one, and why (everything else is compared as it is):

- **The ``struct`` data type and its legacy alias ``structured``**
  (zarr-extensions ``data-types-structured.md``: "a legacy alias for struct",
  with fields as ``[name, type]`` pairs): both become ``struct`` with
  ``{"name", "data_type"}`` field objects, nested types included.
- **A struct fill value**: an object with one entry per field (``struct``) or
  the base64 of the packed element bytes (legacy ``structured``, in the
  ``bytes`` codec's byte order, little-endian when it has none): both become the
  packed little-endian bytes as a hex string.
- **The ``bytes`` codec's ``endian``**: only "required for data types for which
  endianness is applicable ... not single-byte data types, such as uint8 or
  bool" (zarr-specs ``v3-codecs-bytes.rst``), so it is dropped for types without
  a byte order; a legacy ``structured`` type with multi-byte fields and no
  ``endian`` "MUST be treated as little-endian" (``data-types-structured.md``),
  so it becomes ``"little"`` there. A multi-byte non-struct type without
  ``endian`` is left as it is (invalid: the comparison then fails).
- **Short-hand names and empty configurations** (v3-core "Extension
  definition"): ``"bytes"`` and ``{"name": "bytes", "configuration": {}}`` are
  ``{"name": "bytes"}``.
- **Key order**: JSON objects are unordered; callers compare the ``dict``\\ s.
"""

from __future__ import annotations

import base64
import copy
import math
from typing import Any, Sequence

import numpy as np

__all__ = ["has_byte_order", "normalize_array_document", "normalize_codecs", "normalize_data_type"]

_UINT64 = np.dtype("<u8")


def has_byte_order(dtype: np.dtype) -> bool:
    """Whether the ``bytes`` codec's ``endian`` applies to ``dtype``: some scalar
    in it is a multi-byte number (``U`` counts: UTF-32 code units)."""
    dtype = np.dtype(dtype)
    if dtype.names is not None:
        return any(has_byte_order(dtype.fields[name][0]) for name in dtype.names)
    if dtype.subdtype is not None:
        return has_byte_order(dtype.subdtype[0])
    if dtype.kind in "SVbO" or dtype.itemsize == 1:
        return False
    if dtype.kind == "U":
        return True
    return dtype.kind in "iufcmM"


def _struct_fields(data_type: Any) -> list | None:
    """The field list of a ``struct`` / ``structured`` data type, else ``None``."""
    if isinstance(data_type, dict) and data_type.get("name") in ("struct", "structured"):
        return data_type["configuration"]["fields"]
    return None


def normalize_data_type(data_type: Any) -> Any:
    """``structured`` (legacy alias, tuple fields) as ``struct`` with field objects."""
    fields = _struct_fields(data_type)
    if fields is None:
        return data_type
    out = []
    for f in fields:
        name, sub = (f[0], f[1]) if isinstance(f, list) else (f["name"], f["data_type"])
        out.append({"name": name, "data_type": normalize_data_type(sub)})
    return {"name": "struct", "configuration": {"fields": out}}


def _codec(doc: Any) -> dict:
    if isinstance(doc, str):
        return {"name": doc}
    doc = copy.deepcopy(doc)
    if doc.get("configuration") == {}:
        del doc["configuration"]
    return doc


def _bytes_endian(codecs: Sequence[Any]) -> str | None:
    """The ``endian`` of the array's ``bytes`` codec (inside sharding too), if any."""
    for c in map(_codec, codecs):
        if c["name"] == "bytes":
            return c.get("configuration", {}).get("endian")
        if c["name"] == "sharding_indexed":
            return _bytes_endian(c["configuration"]["codecs"])
    return None


def normalize_codecs(codecs: Sequence[Any], dtype: np.dtype, *, legacy_struct: bool = False) -> list[dict]:
    """The codec list with the ``bytes`` codec's ``endian`` as the spec reads it
    for ``dtype`` (the array's data type); ``legacy_struct``: the document names
    the data type ``structured`` (absent ``endian`` = little)."""
    dtype = np.dtype(dtype)
    out = []
    for c in map(_codec, codecs):
        if c["name"] == "bytes":
            config = dict(c.get("configuration", {}))
            if not has_byte_order(dtype):
                config.pop("endian", None)
            elif "endian" not in config and legacy_struct and dtype.names is not None:
                config["endian"] = "little"
            c = {"name": "bytes", **({"configuration": config} if config else {})}
        elif c["name"] == "sharding_indexed":
            config = dict(c["configuration"])
            config["codecs"] = normalize_codecs(config["codecs"], dtype, legacy_struct=legacy_struct)
            config["index_codecs"] = normalize_codecs(config["index_codecs"], _UINT64)
            c = {**c, "configuration": config}
        out.append(c)
    return out


_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _field_value(value: Any, dtype: np.dtype) -> Any:
    """A ``struct`` fill value entry as a value numpy stores in a field of ``dtype``."""
    if dtype.names is not None:
        return tuple(_field_value(value[name], dtype.fields[name][0]) for name in dtype.names)
    if dtype.kind in "SV":  # null_terminated_bytes / raw_bytes: base64 (zarr-python)
        return base64.b64decode(value)
    if dtype.kind == "f" and isinstance(value, str):
        if value.startswith("0x"):
            return np.frombuffer(bytes.fromhex(value[2:]), f">u{dtype.itemsize}").view(f">f{dtype.itemsize}")[0]
        return _FLOAT_WORDS[value]
    if dtype.kind == "c":
        return complex(*(_FLOAT_WORDS.get(v, v) if isinstance(v, str) else v for v in value))
    return value


def _struct_fill_hex(fill: Any, dtype: np.dtype, endian: str | None) -> str:
    """The packed little-endian bytes of a struct fill value, as hex."""
    little = dtype.newbyteorder("<")
    if isinstance(fill, str):  # legacy: base64 of the packed bytes in the bytes codec's order
        stored = dtype.newbyteorder(">" if endian == "big" else "<")
        raw = base64.b64decode(fill)
        assert len(raw) == dtype.itemsize, f"struct fill value of {len(raw)} bytes for {dtype}"
        return np.frombuffer(raw, stored).astype(little).tobytes().hex()
    return np.array(_field_value(fill, dtype), dtype=little).tobytes().hex()


def normalize_array_document(doc: dict, dtype: Any) -> dict:
    """A v3 array document in one form per meaning (see the module docstring).

    ``dtype`` is the numpy dtype the document stands for (a test knows it); it
    decides where the ``bytes`` codec's ``endian`` applies and decodes struct
    fill values.
    """
    dtype = np.dtype(dtype)
    out = copy.deepcopy(doc)
    legacy = isinstance(doc["data_type"], dict) and doc["data_type"].get("name") == "structured"
    out["data_type"] = normalize_data_type(doc["data_type"])
    if _struct_fields(doc["data_type"]) is not None:
        out["fill_value"] = {"packed little-endian": _struct_fill_hex(doc["fill_value"], dtype,
                                                                      _bytes_endian(doc["codecs"]))}
    out["codecs"] = normalize_codecs(doc["codecs"], dtype, legacy_struct=legacy)
    return out
