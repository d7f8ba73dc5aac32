"""The ``gzip`` codec: bytes → bytes, gzip (RFC 1952) around DEFLATE (RFC 1951).

Spec: zarr-specs v3 ``codecs/gzip`` ("Configuration parameters", "Format and
algorithm": "Encoded data should conform to the Gzip file format").

Name: ``gzip``. Tested example configuration (the spec's own example)::

    {"name": "gzip", "configuration": {"level": 1}}

Encoding writes one gzip member with a fixed header — no file name, ``MTIME``
0, ``XFL`` 2 for level 9 / 4 for level 1 / 0 otherwise, ``OS`` 255 — so the
same data always encodes to the same bytes. numcodecs' ``GZip`` (which
zarr-python 3.1 uses) writes the same header except that ``MTIME`` is the
current time; apart from those four bytes the encodings are identical (tested).
Decoding accepts any RFC 1952 stream, including several concatenated members
(and zero bytes padding the end, as Python's ``gzip`` module), and is bounded
(:mod:`zarrdask.codecs.bounded`): the stream is inflated in pieces written
straight into the output, and refused at the first byte past the chunk's
expected size — a small chunk never inflates to gigabytes first.

The work is done by the standard library's ``zlib``, which releases the GIL, so
the codec is thread-safe and parallelises across threads.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from ..errors import CodecError, CorruptChunkError
from .buffers import byte_view
from .abc import ChunkSpec
from .bounded import BoundedBytesBytesCodec, DecodeBound, inflate_pieces

__all__ = ["GzipCodec", "decode_gzip"]


def _gzip_header(level: int) -> bytes:
    xfl = 2 if level == 9 else 4 if level == 1 else 0
    # ID1 ID2 CM=8 (deflate) FLG=0 MTIME=0 XFL OS=255 (unknown)
    return struct.pack("<BBBBLBB", 0x1F, 0x8B, 8, 0, 0, xfl, 255)


class GzipCodec(BoundedBytesBytesCodec):
    """gzip compression.

    Parameters
    ----------
    level : int
        0 (no compression) to 9 (smallest output).
    """

    name = "gzip"

    def __init__(self, level: int = 5) -> None:
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 9:
            raise CodecError(f"codec 'gzip': configuration field 'level' must be an integer 0..9, found {level!r}")
        self.level = level
        self._header = _gzip_header(level)

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": "gzip", "level": self.level}

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "GzipCodec":
        config = dict(configuration or {})
        level = config.pop("level", 5)
        if config:
            raise CodecError(f"codec 'gzip': unknown configuration field(s) {sorted(config)}")
        return cls(level=level)

    def get_config(self) -> dict[str, Any]:
        return {"level": self.level}

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes:
        mv = byte_view(data)
        body = zlib.compress(mv, self.level, -zlib.MAX_WBITS)
        trailer = struct.pack("<LL", zlib.crc32(mv) & 0xFFFFFFFF, mv.nbytes & 0xFFFFFFFF)
        return b"".join((self._header, body, trailer))

    def decode_within(self, data: bytes | memoryview, spec: ChunkSpec, bound: DecodeBound) -> Any:
        return decode_gzip(data, bound)


def decode_gzip(data: Any, bound: DecodeBound) -> memoryview | bytes:
    """Decode gzip ``data`` (any number of members) within ``bound``, inflating
    piece by piece straight into the output."""
    try:
        return bound.collect(inflate_pieces(data, 16 + zlib.MAX_WBITS, members=True))
    except zlib.error as e:
        raise CorruptChunkError(f"chunk {bound.key!r}: codec {bound.codec!r} could not decode it: {e}") from None
