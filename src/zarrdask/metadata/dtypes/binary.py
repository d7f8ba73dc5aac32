"""Bytes in fill values: base64 strings, lists of byte values, and ``np.void`` scalars made from bytes.

Shared by the families whose fill values are bytes: raw (``V``), fixed-length
bytes (``S``), structured types and variable-length ``bytes``.
``zarr-specs/v2-v2.0.rst`` "Fill value encoding" (base64 for ``S``, ``V`` and
structured types), ``v3-data-types.rst`` "Permitted fill values" (raw bits: a
list of byte values), ``zarr-extensions/data-types-bytes.md`` (a list of byte
values or base64).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np

from ..json_checks import field_error, is_json_int

__all__ = ["b64decode", "b64encode", "bytes_from_json", "int_list_to_bytes", "void_from_bytes", "void_from_v2",
           "void_to_b64", "zero_void"]


def b64decode(value: Any, key: str, field: str, what: str) -> bytes:
    """The bytes of a base64 string (``what`` names the data type in the error)."""
    if not isinstance(value, str):
        raise field_error(key, field, value, f"a base64 string for {what}")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise field_error(key, field, value, f"a base64 string for {what}") from None


def b64encode(b: bytes) -> str:
    """The standard base64 string of ``b``."""
    return base64.standard_b64encode(bytes(b)).decode("ascii")


def int_list_to_bytes(value: Any, key: str, field: str, what: str) -> bytes:
    """The bytes of a JSON list of integers in ``[0, 255]``."""
    if not isinstance(value, list) or not all(is_json_int(v) and 0 <= v <= 255 for v in value):
        raise field_error(key, field, value, f"a list of integers in [0, 255] or a base64 string for {what}")
    return bytes(value)


def bytes_from_json(doc: Any, dtype: np.dtype, key: str, field: str) -> bytes:
    """The bytes of a v3 fill value given as a list of byte values or as base64."""
    if isinstance(doc, list):
        return int_list_to_bytes(doc, key, field, str(dtype))
    return b64decode(doc, key, field, f"{dtype} (or a list of byte values)")


def void_from_bytes(b: bytes, dtype: np.dtype, key: str, field: str, found: Any) -> np.void:
    """The ``np.void`` scalar of exactly ``dtype.itemsize`` bytes (``found`` is the JSON value named)."""
    if len(b) != dtype.itemsize:
        raise field_error(key, field, found, f"exactly {dtype.itemsize} bytes for {dtype}, got {len(b)}")
    return np.frombuffer(bytes(b), dtype=dtype)[0]


def zero_void(dtype: np.dtype) -> np.void:
    """The ``np.void`` scalar of ``dtype`` whose bytes are all zero."""
    return np.frombuffer(bytes(dtype.itemsize), dtype=dtype)[0]


def void_from_v2(doc: Any, dtype: np.dtype, key: str, field: str) -> np.void:
    """A v2 fill value of a raw or structured type: base64 of its bytes, or zarr-python 2's legacy ``0``."""
    if is_json_int(doc) and doc == 0:
        return zero_void(dtype)
    b = b64decode(doc, key, field, f"{dtype} (or 0 for zero bytes)")
    return void_from_bytes(b, dtype, key, field, doc)


def void_to_b64(value: Any, dtype: np.dtype) -> str:
    """The base64 of ``value``'s bytes as ``dtype`` stores them."""
    return b64encode(np.asarray(value, dtype=dtype).tobytes())
