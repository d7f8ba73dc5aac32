"""Variable-length strings and bytes: the ``vlen-utf8`` and ``vlen-bytes`` codecs.

Specs: zarr-extensions ``codecs/vlen-utf8`` and ``codecs/vlen-bytes`` ("Format
and algorithm"), for the data types ``string`` and ``bytes``
(``data-types/string``, ``data-types/bytes``); the Zarr v2 spec, "Data type
encoding" (``"|O"`` with an object codec as the first filter).

Names: ``vlen-utf8`` (data type ``string``), ``vlen-bytes`` (data type
``bytes``, also read under zarr-python's older name ``variable_length_bytes``).
Tested example configurations, as zarr-python 3 writes them::

    {"name": "vlen-utf8", "configuration": {}}
    {"name": "vlen-bytes", "configuration": {}}

Format: a chunk is a u32le element count, then per element (in C order) a
u32le byte count and the bytes (UTF-8 for strings). This is numcodecs'
``VLenUTF8`` / ``VLenBytes`` format, so the Cython implementations in numcodecs
do the work; here they are wrapped as array→bytes codecs with typed errors
naming the chunk's key. The element count in the header is checked against
the chunk's shape (and the bytes that remain) before numcodecs allocates an
array of that many elements, so a 20-byte chunk claiming 134 million strings
is refused without allocating anything; numcodecs checks each element's length
against the remaining bytes before it allocates the element. Zarr v2 arrays use the same numcodecs codecs as
filters (``{"id": "vlen-utf8"}``), see :mod:`zarrdask.codecs.numcodecs_v2`.

In memory, ``string`` arrays are numpy ``StringDType`` arrays (numpy >= 2) and
``bytes`` arrays are ``object`` arrays of ``bytes``. Writing accepts
``StringDType``, ``U`` and ``object`` arrays of ``str`` for strings and ``S``
and ``object`` arrays of ``bytes`` for bytes (:func:`coerce_vlen`); anything
else is refused rather than converted with ``str()``.

The draft ZEP 7 layout (offsets + data buffer, readable by Arrow without a
copy) is the codec ``zarrdask.vlen-offsets`` in
:mod:`zarrdask.codecs.vlen_offsets`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numcodecs
import numpy as np

from ..errors import CodecError, CorruptChunkError
from .buffers import byte_view
from .abc import ArrayBytesCodec, ChunkSpec
from .numcodecs_bounded import check_vlen_count

__all__ = [
    "VlenUtf8Codec",
    "VlenBytesCodec",
    "is_string_dtype",
    "is_bytes_dtype",
    "is_vlen_dtype",
    "string_dtype",
    "coerce_vlen",
    "strings_array",
    "bytes_array",
]


# -- data types -------------------------------------------------------------------
def string_dtype() -> np.dtype:
    """numpy's variable-width string dtype (``StringDType``; numpy >= 2)."""
    cls = getattr(np.dtypes, "StringDType", None)
    if cls is None:  # pragma: no cover - numpy 1.x
        raise TypeError("variable-length strings need numpy >= 2 (numpy.dtypes.StringDType)")
    return cls()


def is_string_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` is numpy's ``StringDType`` (the in-memory form of ``string``)."""
    return getattr(dtype, "kind", None) == "T"


def is_bytes_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` is ``object`` (the in-memory form of ``bytes``)."""
    return isinstance(dtype, np.dtype) and dtype.kind == "O"


def is_vlen_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` holds variable-length elements (``StringDType`` or ``object``)."""
    return is_string_dtype(dtype) or is_bytes_dtype(dtype)


def strings_array(values: list[str], shape: tuple[int, ...]) -> np.ndarray:
    """A ``StringDType`` array of ``shape`` from a flat list of ``str``."""
    return np.array(values, dtype=string_dtype()).reshape(shape)


def bytes_array(values: list[bytes], shape: tuple[int, ...]) -> np.ndarray:
    """An ``object`` array of ``shape`` from a flat list of ``bytes``."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)


def _first_bad(flat: Any, ok: type | tuple[type, ...]) -> tuple[int, Any] | None:
    for i, x in enumerate(flat):
        if not isinstance(x, ok):
            return i, x
    return None


def coerce_vlen(value: Any, dtype: Any, *, strict: bool = True) -> np.ndarray:
    """``value`` as an array of ``dtype`` (``StringDType`` or ``object`` for bytes).

    Strings: ``StringDType``, ``U`` and ``object`` arrays (or lists) of ``str``.
    Bytes: ``S`` and ``object`` arrays (or lists) of ``bytes`` / ``bytearray``.
    Raises :class:`TypeError` naming the first element of the wrong type (numpy
    itself would turn ``1`` or ``None`` into ``"1"`` / ``"None"``). With
    ``strict=False`` an ``object`` array's elements are not checked (``object``
    also serves v2 object codecs such as ``json2``; the ``vlen-bytes`` codec
    checks them when it encodes).
    """
    if is_string_dtype(dtype):
        # lists go through object: numpy's "U" would drop trailing NUL characters
        arr = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
        if arr.dtype.kind in "TU" or arr.size == 0:
            return arr if arr.dtype == dtype else arr.astype(dtype)
        if arr.dtype.kind == "O":
            bad = _first_bad(arr.flat, str)
            if bad is not None:
                raise TypeError(
                    f"a string array takes str values; element {bad[0]} is "
                    f"{type(bad[1]).__name__} {bad[1]!r:.60}"
                )
            return arr.astype(dtype)
        raise TypeError(f"a string array takes str values, found an array of dtype {arr.dtype}")
    if is_bytes_dtype(dtype):
        if isinstance(value, np.ndarray):
            arr = value
        elif isinstance(value, (bytes, bytearray)):
            arr = np.empty((), dtype=object)
            arr[()] = bytes(value)
        else:
            arr = np.asarray(value, dtype=object)
        if arr.dtype.kind == "S" or arr.size == 0:
            return arr.astype(object)
        if not strict:
            return arr if arr.dtype.kind == "O" else arr.astype(object)
        if arr.dtype.kind == "O":
            bad = _first_bad(arr.flat, bytes)
            if bad is not None:
                if all(isinstance(x, (bytes, bytearray, memoryview)) for x in arr.flat):
                    out = np.empty(arr.shape, dtype=object)
                    for i, x in enumerate(arr.flat):
                        out.flat[i] = bytes(x)
                    return out
                raise TypeError(
                    f"a bytes array takes bytes values; element {bad[0]} is "
                    f"{type(bad[1]).__name__} {bad[1]!r:.60}"
                )
            return arr
        raise TypeError(f"a bytes array takes bytes values, found an array of dtype {arr.dtype}")
    raise TypeError(f"{dtype} is not a variable-length data type")


def check_vlen_spec(codec: str, spec: ChunkSpec, want: str) -> None:
    """Raise :class:`CodecError` unless ``spec.dtype`` is the data type ``want``
    (``"string"`` or ``"bytes"``) the codec serves."""
    ok = is_string_dtype(spec.dtype) if want == "string" else is_bytes_dtype(spec.dtype)
    if not ok:
        raise CodecError(
            f"codec {codec!r} is only for the data type {want!r}, found {spec.dtype} "
            f"(zarr-extensions codecs/{codec})"
        )


# -- the numcodecs-format codecs --------------------------------------------------------
class _VlenCodec(ArrayBytesCodec):
    """Shared part of ``vlen-utf8`` and ``vlen-bytes``."""

    data_type: ClassVar[str] = ""
    _numcodec: ClassVar[Any] = None

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "_VlenCodec":
        if configuration:
            raise CodecError(f"codec {cls.name!r} has no configuration, found {dict(configuration)}")
        return cls()

    def to_json(self) -> dict[str, Any]:
        # zarr-python 3 writes the empty configuration; so do we (byte-identical metadata)
        return {"name": self.name, "configuration": {}}

    def validate(self, spec: ChunkSpec) -> None:
        check_vlen_spec(self.name, spec, self.data_type)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes | memoryview:
        self.validate(spec)
        arr = np.asarray(chunk)
        if arr.shape != tuple(spec.shape):
            raise CodecError(f"codec {self.name!r}: chunk has shape {arr.shape}, expected {spec.shape}")
        try:
            flat = np.ascontiguousarray(coerce_vlen(arr, spec.dtype)).reshape(-1)
            if not flat.flags.writeable:  # numcodecs takes writable buffers only
                flat = flat.copy()
            return self._numcodec.encode(flat)
        except (TypeError, UnicodeEncodeError) as e:
            raise CodecError(f"codec {self.name!r}: cannot encode the chunk: {e}") from None

    def _decode_list(self, data: Any, spec: ChunkSpec, key: str) -> np.ndarray:
        """The chunk's elements as a flat object array (checked against the shape:
        the header's element count before numcodecs allocates for it)."""
        n = math.prod(spec.shape)
        check_vlen_count(data, tuple(spec.shape), key, self.name)
        try:
            objs = self._numcodec.decode(byte_view(data))
        except UnicodeDecodeError as e:
            raise CorruptChunkError(f"chunk {key!r}: codec {self.name!r}: an element is not valid UTF-8: {e}") from None
        except (ValueError, TypeError) as e:
            raise CorruptChunkError(f"chunk {key!r}: codec {self.name!r}: {e}") from None
        if objs.size != n:
            raise CorruptChunkError(
                f"chunk {key!r}: codec {self.name!r}: the chunk holds {objs.size} elements, "
                f"expected {n} (chunk shape {tuple(spec.shape)})"
            )
        return objs

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        objs = self._decode_list(data, spec, key)
        if is_string_dtype(spec.dtype):
            return objs.astype(spec.dtype).reshape(spec.shape)
        return objs.reshape(spec.shape)

    def decode_into(self, data: Any, spec: ChunkSpec, out: np.ndarray, key: str = "") -> None:
        """Decode straight into ``out`` (one conversion, no intermediate array of ``spec.dtype``)."""
        out[...] = self._decode_list(data, spec, key).reshape(spec.shape)


class VlenUtf8Codec(_VlenCodec):
    """``vlen-utf8``: variable-length UTF-8 strings (data type ``string``)."""

    name = "vlen-utf8"
    data_type = "string"
    _numcodec = numcodecs.VLenUTF8()


class VlenBytesCodec(_VlenCodec):
    """``vlen-bytes``: variable-length byte strings (data type ``bytes``)."""

    name = "vlen-bytes"
    data_type = "bytes"
    _numcodec = numcodecs.VLenBytes()
