"""The ``crc32c`` codec: bytes → bytes, appends a CRC-32C checksum.

Spec: zarr-specs v3 ``codecs/crc32c`` ("Format and algorithm"): the output is
the input followed by its CRC-32C (RFC 3720, Castagnoli) as a little-endian
``uint32``. No configuration.

Name: ``crc32c``. Tested example configuration::

    {"name": "crc32c"}

The checksum is computed with the ``google-crc32c`` package (hardware
accelerated where available; what numcodecs >= 0.16.4 recommends, so that its
own ``crc32c`` codec does not warn). Its C functions take read-only buffers
without a release hook, so memoryviews are passed as (zero-copy) numpy
``uint8`` arrays; only a whole ``bytes`` object of 1 MB or more lets it release
the GIL. Decoding verifies the
checksum and raises :class:`~zarrdask.errors.ChecksumError` naming the chunk
key and both values; the decoded bytes are a zero-copy view of the input.
"""

from __future__ import annotations

import struct
from typing import Any

import google_crc32c as _google_crc32c
import numpy as np

from ..errors import ChecksumError, CodecError, CorruptChunkError
from .buffers import byte_view, size_error
from .abc import ChunkSpec
from .bounded import BoundedBytesBytesCodec, DecodeBound

__all__ = ["Crc32cCodec", "crc32c_value", "checked_payload"]


def crc32c_value(data: Any) -> int:
    """CRC-32C of a bytes-like object."""
    if isinstance(data, bytes):
        return _google_crc32c.value(data)  # releases the GIL from 1 MB
    # google_crc32c parses its argument with "y#", which refuses memoryview and
    # bytearray (they have a buffer release hook) but takes a numpy array: no copy
    return _google_crc32c.value(np.frombuffer(byte_view(data), dtype=np.uint8))


def checked_payload(mv: memoryview) -> memoryview | None:
    """The bytes before the trailing checksum of the flat byte view ``mv``
    (a view, no copy), if that checksum is theirs; else ``None``."""
    payload = mv[:-4]
    return payload if crc32c_value(payload) == int.from_bytes(mv[-4:], "little") else None


class Crc32cCodec(BoundedBytesBytesCodec):
    """Append (encode) / verify and strip (decode) a little-endian CRC-32C."""

    name = "crc32c"

    def __init__(self) -> None:
        pass

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "Crc32cCodec":
        if configuration:
            raise CodecError(f"codec 'crc32c': takes no configuration, found fields {sorted(configuration)}")
        return cls()

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": "crc32c", "location": "end"}  # numcodecs >= 0.14: the checksum after the data, as here

    def encoded_size(self, decoded_size: int) -> int:
        return decoded_size + 4

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes:
        mv = byte_view(data)
        return b"".join((mv, struct.pack("<I", crc32c_value(data if isinstance(data, bytes) else mv))))

    def decode_within(self, data: bytes | memoryview, spec: ChunkSpec, bound: DecodeBound) -> Any:
        mv = byte_view(data)
        key = bound.key
        if mv.nbytes < 4:
            raise CorruptChunkError(
                f"chunk {key!r}: codec 'crc32c' needs at least 4 bytes for the checksum, found {mv.nbytes}"
            )
        if bound.size is not None and mv.nbytes - 4 != bound.size:  # cheaper than the checksum
            raise size_error(key, self.name, mv.nbytes - 4, bound.size)
        payload = checked_payload(mv)
        if payload is None:  # (computed again for the message: only on the way to an error)
            (stored,) = struct.unpack("<I", mv[-4:])
            computed = crc32c_value(mv[:-4])
            raise ChecksumError(
                f"chunk {key!r}: crc32c checksum mismatch: stored 0x{stored:08x}, computed 0x{computed:08x}"
            )
        if bound.out is None:
            return payload
        bound.out[:] = payload
        return bound.out
