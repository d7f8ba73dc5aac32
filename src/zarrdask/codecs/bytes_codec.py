"""The ``bytes`` codec: array → bytes.

Spec: zarr-specs v3 ``codecs/bytes`` ("Configuration parameters", "Format and
algorithm"), with the data-type extensions ``fixed_length_utf32`` ("Bytes codec
encoding", "Endianness"), ``structured`` ("Missing endian configuration") and
``struct`` ("Endianness") from zarr-extensions.

Name: ``bytes``. Tested example configurations::

    {"name": "bytes", "configuration": {"endian": "little"}}   # int32, float64, <U3, M8[s], ...
    {"name": "bytes", "configuration": {"endian": "big"}}
    {"name": "bytes"}                                          # uint8, bool, int8, S3, r32 (V4)

Elements are written in C (lexicographical) order; every multi-byte scalar —
numbers, datetimes, the UTF-32 code units of ``U`` strings, the numeric fields
of a structured type, ``bfloat16`` and the parts of ``complex_bfloat16`` /
``complex_float16`` — in the configured byte order. The one-byte types of the
zarr-extensions registry (``float8_*``, ``float6_*``, ``float4_e2m1fn``,
``int2``/``int4``/``uint2``/``uint4``) have no byte order ("The ``endian``
parameter has no effect"); the sub-byte ones are written with their upper bits
zero and read ignoring them (their READMEs, "Codec compatibility"). ``endian`` may be omitted
only when the data type has no byte order (1-byte types, raw bytes); a
structured type without ``endian`` is read as little-endian, as the
``structured`` extension requires.

Decoding returns a zero-copy, read-only view of the stored bytes when the stored
byte order is the machine's, and a byte-swapped native copy otherwise: decoded
arrays always have native byte order. :meth:`BytesCodec.raw_target` exposes a
caller's output array as the codec's encoded bytes, so a compressor can write
straight into it; a small selection reads only the span of elements it needs
(:class:`~zarrdask.codecs.elements.ElementRanges`, the codec's
:class:`~zarrdask.codecs.abc.PartialDecode` capability).
"""

from __future__ import annotations

import sys
import warnings
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import CodecError, CorruptChunkError
from ..metadata.dtypes.float_formats import bits_dtype, ml_info
from .buffers import byte_view
from .abc import ArrayBytesCodec, ChunkSpec
from .elements import ElementRanges

__all__ = ["BytesCodec", "has_endianness"]

_ORDER_CHAR = {"little": "<", "big": ">"}
NATIVE_ENDIAN = sys.byteorder  # "little" or "big"


def has_endianness(dtype: np.dtype) -> bool:
    """Whether the byte order of ``dtype`` matters (any multi-byte scalar in it)."""
    if dtype.fields is not None:
        return any(has_endianness(dtype.fields[name][0]) for name in dtype.names)
    if dtype.subdtype is not None:
        return has_endianness(dtype.subdtype[0])
    return dtype.byteorder != "|" and dtype.itemsize > 1


@lru_cache(maxsize=512)
def _native(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("=") if has_endianness(dtype) else dtype


@lru_cache(maxsize=64)
def _sub_byte_mask(dtype: np.dtype) -> int | None:
    """The bits a one-byte ``ml_dtypes`` value uses, when it does not use all 8."""
    info = ml_info(dtype)
    if info is None or dtype.itemsize != 1 or info[1] == 8:
        return None
    return (1 << info[1]) - 1


@lru_cache(maxsize=256)
def _byte_masks(dtype: np.dtype) -> np.ndarray | None:
    """The bits each byte of one element of ``dtype`` uses, when a sub-byte
    ``ml_dtypes`` scalar in it (alone, a struct field such as the parts of
    ``complex_float4_e2m1fn``, or a sub-array) leaves some unused; else ``None``.
    ``ml_dtypes`` reads the upper bits of its 4- and 6-bit floats as part of the
    value, so they are cleared before decoding and after encoding."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        masks = _byte_masks(base)
        return None if masks is None else np.tile(masks, int(np.prod(shape)))
    if dtype.names is None:
        mask = _sub_byte_mask(dtype)
        return None if mask is None else np.array([mask], dtype=np.uint8)
    out = np.full(dtype.itemsize, 0xFF, dtype=np.uint8)
    found = False
    for name in dtype.names:
        sub, offset = dtype.fields[name][:2]
        masks = _byte_masks(sub)
        if masks is not None:
            out[offset:offset + sub.itemsize] &= masks
            found = True
    out.setflags(write=False)
    return out if found else None


def _clear_unused_bits(data: Any, masks: np.ndarray) -> np.ndarray:
    """A copy of the bytes ``data`` (whole elements) with the unused bits zero."""
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, masks.size)
    return np.bitwise_and(raw, masks).reshape(-1)


@lru_cache(maxsize=512)
def _stored(dtype: np.dtype, endian: str | None) -> np.dtype:
    """The dtype of the encoded bytes: ``dtype`` in the codec's byte order."""
    if dtype.hasobject:
        raise CodecError(
            f"codec 'bytes': cannot encode data type {dtype} (Python objects); "
            "use 'vlen-utf8' or 'vlen-bytes' for variable-length data"
        )
    if not has_endianness(dtype):
        return dtype
    if endian is None:
        if dtype.fields is not None:  # zarr-extensions "structured": absent endian = little
            return dtype.newbyteorder("<")
        raise CodecError(
            f"codec 'bytes': configuration field 'endian' is required for the "
            f"multi-byte data type {dtype}; expected \"little\" or \"big\""
        )
    bits = bits_dtype(dtype)
    if bits is not None:  # numpy cannot swap ml_dtypes scalars: their unsigned bits instead
        return dtype if endian == NATIVE_ENDIAN else bits.newbyteorder(_ORDER_CHAR[endian])
    return dtype.newbyteorder(_ORDER_CHAR[endian])


class BytesCodec(ElementRanges, ArrayBytesCodec):
    """Array → bytes in C order with the given byte order.

    Parameters
    ----------
    endian : {"little", "big", None}
        Byte order of multi-byte scalars. ``None`` (omitted in JSON) is only
        valid for data types without a byte order.
    """

    name = "bytes"

    def __init__(self, endian: str | None = "little") -> None:
        if endian not in ("little", "big", None):
            raise CodecError(
                f"codec 'bytes': configuration field 'endian' must be \"little\" or "
                f"\"big\" (or omitted), found {endian!r}"
            )
        self.endian = endian
        #: per data type: whether its elements are stored as they lie in memory (:meth:`raw_target`)
        self._as_is: dict[np.dtype, bool] = {}

    # -- configuration -------------------------------------------------------
    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "BytesCodec":
        config = dict(configuration or {})
        endian = config.pop("endian", None)
        if config:
            raise CodecError(f"codec 'bytes': unknown configuration field(s) {sorted(config)}")
        return cls(endian=endian)

    def get_config(self) -> dict[str, Any]:
        return {} if self.endian is None else {"endian": self.endian}

    def complete(self, spec: ChunkSpec) -> "BytesCodec":
        """The codec to record for an array of ``spec``: ``endian`` dropped for
        data types without a byte order (as zarr-python writes ``{"name": "bytes"}``
        for ``uint8``), checked present for the others."""
        if not has_endianness(spec.dtype):
            return self if self.endian is None else BytesCodec(endian=None)
        _stored(spec.dtype, self.endian)
        return self

    def validate(self, spec: ChunkSpec) -> None:
        _stored(spec.dtype, self.endian)
        if self.endian is None and has_endianness(spec.dtype):
            warnings.warn(
                f"codec 'bytes' has no 'endian' for the structured data type {spec.dtype} "
                "with multi-byte fields; reading it as little-endian",
                UserWarning,
                stacklevel=2,
            )

    def encoded_size(self, spec: ChunkSpec) -> int:
        return spec.nbytes

    # -- encode / decode -----------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> memoryview:
        """The chunk's bytes (a view of ``chunk`` when no conversion is needed)."""
        arr = np.asarray(chunk)
        if arr.shape != spec.shape:
            raise CodecError(f"codec 'bytes': chunk has shape {arr.shape}, expected {spec.shape}")
        if _native(arr.dtype) != _native(spec.dtype):
            raise CodecError(f"codec 'bytes': chunk has data type {arr.dtype}, expected {spec.dtype}")
        stored = _stored(spec.dtype, self.endian)
        if stored != arr.dtype and bits_dtype(arr.dtype) is not None:
            arr = arr.view(bits_dtype(arr.dtype))
        arr = np.asarray(arr, dtype=stored, order="C")
        masks = _byte_masks(spec.dtype)
        if masks is not None and arr.size:  # the unused upper bits written as zeros
            return memoryview(_clear_unused_bits(arr.reshape(-1).view(np.uint8), masks))
        return memoryview(arr.reshape(-1).view(np.uint8))

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        stored = _stored(spec.dtype, self.endian)
        mv = byte_view(data)
        expected = spec.nbytes
        if mv.nbytes != expected:
            raise CorruptChunkError(
                f"chunk {key!r}: the bytes codec expected {expected} bytes "
                f"(shape {spec.shape}, data type {spec.dtype}), found {mv.nbytes}"
            )
        if stored.itemsize == 0:
            return np.zeros(spec.shape, dtype=_native(stored))
        masks = _byte_masks(spec.dtype)
        if masks is not None:  # the unused upper bits are ignored
            mv = _clear_unused_bits(mv, masks)
        arr = np.frombuffer(mv, dtype=stored).reshape(spec.shape)
        native = _native(stored)
        if native != stored:
            arr = arr.astype(native)
            if native != spec.dtype and bits_dtype(spec.dtype) is not None:
                arr = arr.view(spec.dtype)
        return arr

    def raw_dtype(self, spec: ChunkSpec) -> np.dtype | None:
        try:
            stored = _stored(spec.dtype, self.endian)
        except CodecError:
            return None
        # ml_dtypes values swapped as unsigned bits convert by value, not by bits;
        # sub-byte values need their unused bits cleared (decode)
        if _byte_masks(spec.dtype) is not None:
            return None
        return None if stored != spec.dtype and bits_dtype(spec.dtype) is not None else stored

    def raw_target(self, out: np.ndarray, spec: ChunkSpec) -> memoryview | None:
        """``out``'s memory as bytes when ``out`` is exactly what this codec would
        decode into: C-contiguous, writeable, ``spec``'s shape and dtype, stored
        byte order equal to ``out``'s."""
        if not isinstance(out, np.ndarray) or out.dtype != spec.dtype or out.shape != tuple(spec.shape):
            return None
        flags = out.flags
        if not (flags.c_contiguous and flags.writeable and self._stored_as_is(out.dtype)):
            return None
        return memoryview(out.reshape(-1).view(np.uint8))

    def _stored_as_is(self, dtype: np.dtype) -> bool:
        """Whether this codec stores elements of ``dtype`` byte for byte as they
        lie in memory (worked out once per data type: it is asked per chunk)."""
        as_is = self._as_is.get(dtype)
        if as_is is None:
            try:
                as_is = dtype.itemsize != 0 and _stored(dtype, self.endian) == dtype and _byte_masks(dtype) is None
            except CodecError:  # (not `stored = None`: numpy reads None as float64)
                as_is = False
            self._as_is[dtype] = as_is
        return as_is
