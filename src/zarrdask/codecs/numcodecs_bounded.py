"""Bounded decoding of numcodecs codecs (:mod:`zarrdask.codecs.bounded`).

Spec context: the Zarr v2 spec ("Chunks": the compressor decodes to what the
filters handed it; "Filters") and zarr-specs v3 core ("Codecs"), for the
numcodecs codecs both formats name (``{"id": "zlib"}`` in v2,
``numcodecs.zlib`` in v3). numcodecs' ``decode`` takes no limit, so each codec
whose output a stored chunk can inflate is decoded here, by what its format
declares or with a bounded stream:

- ``zstd``: frame headers' content sizes checked first; frames without one
  decoded into a buffer of the expected size (libzstd refuses more).
- ``gzip``, ``zlib``: ``zlib.decompressobj().decompress(data, max_length)``,
  piece by piece.
- ``bz2``: ``BZ2Decompressor.decompress(data, max_length)``.
- ``lzma``: ``LZMADecompressor.decompress(data, max_length)``.
- ``lz4``: the 4-byte decoded-size prefix checked first.
- ``blosc``: the 16-byte header's decoded size checked first.
- ``zfpy``: the zfp header's shape and scalar type checked first.
- ``pcodec``: decoded into a preallocated array of the expected size
  (``pcodec.standalone.simple_decompress_into``), refused if more data remains.
- ``vlen-utf8``, ``vlen-bytes``, ``vlen-array``: the element count in the
  header checked against the chunk's (and against the bytes that remain)
  first; numcodecs checks each element's length against the remaining bytes
  before it allocates it.

Checksums (``crc32``, ``adler32``, ``fletcher32``, ``jenkins_lookup3``,
``crc32c``) and ``shuffle`` / ``base64`` never produce more than their input.
``json2`` and ``msgpack2`` build objects in proportion to their input.
``pickle`` cannot be bounded (it runs whatever the data says; numcodecs refuses
it unless the process opts in), nor can a third-party codec numcodecs finds
through an entry point: those are decoded by numcodecs and their result's size
checked after.
"""

from __future__ import annotations

import bz2
import lzma
import math
import zlib
from typing import Any, Callable

import numpy as np
from numcodecs.abc import Codec as Numcodec

from ..errors import CorruptChunkError
from .buffers import byte_view
from .blosc_codec import decode_blosc
from .bounded import DecodeBound, inflate_pieces, stream_pieces
from .gzip_codec import decode_gzip
from .zstd_codec import decode_zstd

__all__ = ["decode_bytes_bounded", "decode_array_bounded", "check_vlen_count", "VLEN_IDS"]

#: numcodecs' variable-length object codecs (a u32le count, then length-prefixed items)
VLEN_IDS = ("vlen-utf8", "vlen-bytes", "vlen-array")


def _zlib(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    try:
        return bound.collect(inflate_pieces(data, zlib.MAX_WBITS, members=False))
    except zlib.error as e:
        raise bound.error(f"could not decode it: {e}") from None


def _bz2(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    try:
        return bound.collect(stream_pieces(bz2.BZ2Decompressor, data, OSError, empty_ok=True))
    except (OSError, EOFError) as e:
        raise bound.error(f"could not decode it: {e}") from None


def _lzma(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    fmt, filters = getattr(codec, "format", lzma.FORMAT_AUTO), getattr(codec, "filters", None)
    try:
        return bound.collect(stream_pieces(lambda: lzma.LZMADecompressor(fmt, None, filters), data, lzma.LZMAError))
    except (lzma.LZMAError, EOFError) as e:
        raise bound.error(f"could not decode it: {e}") from None


def _lz4(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    if data.nbytes < 4:
        raise bound.error(f"needs a 4-byte size prefix, found {data.nbytes} bytes")
    declared = int.from_bytes(data[:4], "little", signed=True)  # numcodecs reads an int
    bound.check(declared, "declares (in its size prefix)")
    target = bound.buffer(declared)
    codec.decode(data, out=target)
    return target


def _zstd(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    return decode_zstd(codec, data, bound)


def _gzip(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    return decode_gzip(data, bound)


def _blosc(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    return decode_blosc(data, bound)


def zfp_shape(data: Any, bound: DecodeBound) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, scalar type) a zfp stream's header declares (zfp's "full" header,
    which numcodecs' ``ZFPY`` always writes)."""
    import zfpy

    try:
        header = zfpy.header(bytes(data))
    except (ValueError, IndexError) as e:
        raise bound.error(f"has no valid zfp header: {e}") from None
    dims = [header[d] for d in ("nw", "nz", "ny", "nx") if header[d]]
    return tuple(dims), np.dtype(header["type"])


def _zfpy(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    shape, scalar = zfp_shape(data, bound)
    bound.check(math.prod(shape) * scalar.itemsize, f"declares (a zfp header of shape {list(shape)}, {scalar})")
    return codec.decode(data)


#: the value types pcodec encodes (in the order of its number type codes)
_PCODEC_TYPES = ("uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32", "uint64", "int64", "float64")


def _pcodec_into(data: memoryview, target: np.ndarray, bound: DecodeBound) -> None:
    from pcodec import standalone

    src = bytes(data)
    try:
        progress = standalone.simple_decompress_into(src, target)
    except RuntimeError as e:
        for name in _PCODEC_TYPES:  # on a type mismatch, name the stored type (nothing is decoded)
            if name != target.dtype.name:
                try:
                    standalone.simple_decompress_into(src, np.empty(0, dtype=name))
                except (RuntimeError, TypeError):
                    continue
                raise bound.error(f"holds values of type {name}", f"expected {target.dtype}") from None
        raise bound.error(f"could not decode it: {e}") from None
    if not progress.finished:
        raise bound.error(f"holds more than {target.size} {target.dtype} values (refused there)")
    if progress.n_processed != target.size:
        raise bound.error(f"decodes to {progress.n_processed * target.dtype.itemsize} bytes")


def _pcodec(codec: Numcodec, data: memoryview, bound: DecodeBound, dtype: Any) -> Any:
    if dtype is None or bound.size is None or dtype.itemsize == 0 or bound.size % dtype.itemsize:
        return None  # the values' type is not known: no bound can be given
    target = bound.buffer(bound.size)
    _pcodec_into(data, np.frombuffer(target, dtype=dtype), bound)
    return target


_BYTES: dict[str, Callable[[Numcodec, memoryview, DecodeBound, Any], Any]] = {
    "zlib": _zlib,
    "gzip": _gzip,
    "bz2": _bz2,
    "lzma": _lzma,
    "lz4": _lz4,
    "zstd": _zstd,
    "blosc": _blosc,
    "zfpy": _zfpy,
    "pcodec": _pcodec,
}


def decode_bytes_bounded(
    codec_id: str, codec: Numcodec, data: Any, bound: DecodeBound, dtype: np.dtype | None = None
) -> Any:
    """Decode ``data`` with numcodecs codec ``codec`` as a bytes → bytes codec
    within ``bound`` (``dtype``: the type of the values it decodes to, when
    known — ``pcodec`` needs it); ``None`` when there is no bounded decoder for
    ``codec_id`` (the caller decodes through numcodecs and checks the size)."""
    decoder = _BYTES.get(codec_id)
    if decoder is None:
        return None
    return decoder(codec, byte_view(data), bound, dtype)


def check_vlen_count(data: Any, shape: tuple[int, ...], key: str, codec: str) -> None:
    """Check a ``vlen-utf8`` / ``vlen-bytes`` / ``vlen-array`` chunk's header
    (numcodecs' framing: a u32le element count, then per element a u32le length
    and its bytes) before numcodecs allocates for it: the count must be the
    element count of a chunk of ``shape``, and the chunk must hold at least
    that many length prefixes."""
    mv = byte_view(data)
    n = math.prod(shape)
    if mv.nbytes < 4:
        raise CorruptChunkError(f"chunk {key!r}: codec {codec!r} needs a 4-byte header, found {mv.nbytes} bytes")
    count = int.from_bytes(mv[:4], "little")
    if count != n:
        raise CorruptChunkError(
            f"chunk {key!r}: codec {codec!r}: the header says the chunk holds {count} elements, "
            f"expected {n} (chunk shape {tuple(shape)})"
        )
    if 4 + 4 * n > mv.nbytes:
        raise CorruptChunkError(
            f"chunk {key!r}: codec {codec!r}: {mv.nbytes} bytes cannot hold the length prefixes of its {n} "
            f"elements, expected at least {4 + 4 * n} bytes"
        )


def decode_array_bounded(codec_id: str, codec: Numcodec, data: Any, spec: Any, key: str, name: str) -> Any:
    """Decode ``data`` with numcodecs codec ``codec`` as the array → bytes codec
    for chunks of ``spec``, checking what its header declares first; ``None``
    when there is no bounded decoder for ``codec_id``."""
    n = math.prod(spec.shape)
    if codec_id in VLEN_IDS:
        check_vlen_count(data, tuple(spec.shape), key, name)
        return codec.decode(data)
    if spec.dtype.hasobject or spec.dtype.kind == "T":
        return None
    bound = DecodeBound(key, name, spec.nbytes)
    if codec_id == "zfpy":
        shape, scalar = zfp_shape(data, bound)
        if math.prod(shape) != n or scalar != spec.dtype:
            raise bound.error(
                f"declares a zfp header of shape {list(shape)}, {scalar}",
                f"expected {n} elements of {spec.dtype} (chunk shape {tuple(spec.shape)})",
            )
        return codec.decode(bytes(data))
    if codec_id == "pcodec":
        out = np.empty(n, dtype=spec.dtype)
        _pcodec_into(byte_view(data), out, bound)
        return out
    return None
