"""The ``zstd`` codec: bytes → bytes, Zstandard (RFC 8878) frames.

Spec: zarr-extensions ``codecs/zstd`` ("Configuration parameters", "Format and
algorithm").

Name: ``zstd``. Tested example configuration (the spec's own example)::

    {"name": "zstd", "configuration": {"level": 1, "checksum": true}}

``level`` is -131072..22 (0: the library default); ``checksum`` stores a frame
checksum that is verified on read. The JSON always carries both fields, as
zarr-python 3.1 and tensorstore write it (the extension says ``checksum``
"should be omitted if false"; both forms are read).

Compression is numcodecs' ``Zstd`` (one object per codec, created once).
numcodecs creates a fresh ZSTD context per call and releases the GIL, so the
codec is thread-safe. Decoding into ``out`` goes straight into the caller's
buffer when the frame header declares exactly ``len(out)`` bytes; otherwise
the frame is decoded and its size checked before the copy. Data of several
frames (RFC 8878: "a sequence of frames") that numcodecs < 0.16 cannot decode
at once is decoded frame by frame (:func:`split_frames`).
"""

from __future__ import annotations

from typing import Any

from numcodecs.zstd import Zstd

from ..errors import ChecksumError, CodecError, CorruptChunkError
from ._buffers import byte_view, write_into
from .abc import BytesBytesCodec, ChunkSpec

__all__ = ["ZstdCodec", "frame_content_size", "split_frames"]

_MAGIC = 0xFD2FB528
# magic + header (<= 14 bytes with a dictionary id) + one empty block + checksum
_EMPTY_FRAME_MAX = 4 + 14 + 3 + 4


def frame_content_size(data: memoryview) -> int | None:
    """Decompressed size declared by the first zstd frame header, if any."""
    if data.nbytes < 6 or int.from_bytes(data[:4], "little") != _MAGIC:
        return None
    descriptor = data[4]
    fcs_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or data.nbytes < pos + size:
        return None
    value = int.from_bytes(data[pos : pos + size], "little")
    return value + 256 if size == 2 else value


def split_frames(data: memoryview) -> list[memoryview] | None:
    """The frames of ``data`` (RFC 8878 section 3.1: a frame header, blocks with
    3-byte headers, an optional 4-byte checksum; skippable frames dropped), or
    ``None`` if ``data`` is not a sequence of whole frames."""
    frames = []
    pos, n = 0, data.nbytes
    while pos < n:
        if n - pos < 8:
            return None
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame: magic, 4-byte size, content
            pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
            continue
        if magic != _MAGIC:
            return None
        start, descriptor = pos, data[pos + 4]
        fcs_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
        pos += 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
        pos += (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
        last = False
        while not last:
            if pos + 3 > n:
                return None
            header = int.from_bytes(data[pos : pos + 3], "little")
            last, block_type, size = bool(header & 1), (header >> 1) & 3, header >> 3
            pos += 3 + (1 if block_type == 1 else size)  # an RLE block holds one byte
        pos += 4 if descriptor & 0x4 else 0  # content checksum
        if pos > n:
            return None
        frames.append(data[start:pos])
    return frames


class ZstdCodec(BytesBytesCodec):
    """Zstandard compression.

    Parameters
    ----------
    level : int
        -131072..22; 0 means the library default (3).
    checksum : bool
        Store a content checksum in each frame.
    """

    name = "zstd"

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        if not isinstance(level, int) or isinstance(level, bool) or not -131072 <= level <= 22:
            raise CodecError(
                f"codec 'zstd': configuration field 'level' must be an integer -131072..22, found {level!r}"
            )
        if not isinstance(checksum, bool):
            raise CodecError(f"codec 'zstd': configuration field 'checksum' must be a boolean, found {checksum!r}")
        self.level = level
        self.checksum = checksum
        self._zstd = Zstd(level=level, checksum=checksum)

    def __getstate__(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "ZstdCodec":
        config = dict(configuration or {})
        level = config.pop("level", 0)
        checksum = config.pop("checksum", False)
        if config:
            raise CodecError(f"codec 'zstd': unknown configuration field(s) {sorted(config)}")
        return cls(level=level, checksum=checksum)

    def get_config(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes:
        return self._zstd.encode(byte_view(data))

    def _error(self, key: str, e: Exception) -> CorruptChunkError:
        cls = ChecksumError if "checksum" in str(e).lower() else CorruptChunkError
        return cls(f"chunk {key!r}: codec 'zstd' could not decode it: {e}")

    def decode(
        self, data: bytes | memoryview, spec: ChunkSpec, key: str = "", out: memoryview | None = None
    ) -> bytes | memoryview:
        mv = byte_view(data)
        declared = frame_content_size(mv)
        if declared == 0 and mv.nbytes <= _EMPTY_FRAME_MAX:
            # one empty frame, which numcodecs refuses ("invalid input data")
            return b"" if out is None else write_into(out, b"", key=key, codec="zstd")
        if out is not None:
            target = byte_view(out)
            if declared is not None and declared == target.nbytes:
                try:
                    self._zstd.decode(mv, out=target)
                except Exception as e:  # numcodecs raises RuntimeError / ValueError
                    raise self._error(key, e) from None
                return out
        try:
            result = self._zstd.decode(mv)
        except Exception as e:
            frames = split_frames(mv)
            if frames is None or len(frames) < 2:
                raise self._error(key, e) from None
            # numcodecs < 0.16 decodes only the first frame of several
            result = b"".join(bytes(self.decode(f, spec, key)) for f in frames)
        if out is None:
            return result
        return write_into(out, result, key=key, codec="zstd")

