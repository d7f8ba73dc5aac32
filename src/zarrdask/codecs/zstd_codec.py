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
the frame is decoded and its size checked before the copy.
"""

from __future__ import annotations

from typing import Any

from numcodecs.zstd import Zstd

from ..errors import ChecksumError, CodecError, CorruptChunkError
from ._buffers import byte_view, write_into
from .abc import BytesBytesCodec, ChunkSpec

__all__ = ["ZstdCodec", "frame_content_size"]

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
            raise self._error(key, e) from None
        if out is None:
            return result
        return write_into(out, result, key=key, codec="zstd")

