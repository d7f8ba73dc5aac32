"""Order rules of a v3 codec list.

Spec: zarr-specs v3 core, "Codecs": "the list of codecs must be of the
following form: zero or more ``array -> array`` codecs; followed by exactly one
``array -> bytes`` codec; followed by zero or more ``bytes -> bytes`` codecs"
(and, under array metadata "codecs", the list cannot be empty).

Tested example: ``[transpose, bytes, gzip, crc32c]`` splits into
``([transpose], bytes, [gzip, crc32c])``; ``[gzip, bytes]`` fails with
``zarr.json: codecs[0] ('gzip') is a bytes→bytes codec before the array→bytes codec``.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import MetadataError
from .abc import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, Codec

__all__ = ["validate_chain"]

def _kind(codec: object) -> str | None:
    if isinstance(codec, ArrayArrayCodec):
        return "array_array"
    if isinstance(codec, ArrayBytesCodec):
        return "array_bytes"
    if isinstance(codec, BytesBytesCodec):
        return "bytes_bytes"
    return None


def validate_chain(
    codecs: Sequence[Codec], *, key: str = "zarr.json"
) -> tuple[list[ArrayArrayCodec], ArrayBytesCodec, list[BytesBytesCodec]]:
    """Split ``codecs`` into (array→array codecs, the array→bytes codec,
    bytes→bytes codecs), raising :class:`MetadataError` naming ``key`` and the
    position of the first codec out of place."""
    array_array: list[ArrayArrayCodec] = []
    array_bytes: ArrayBytesCodec | None = None
    ab_index = -1
    bytes_bytes: list[BytesBytesCodec] = []
    for i, codec in enumerate(codecs):
        kind = _kind(codec)
        label = f"codecs[{i}] ({getattr(codec, 'name', '') or type(codec).__name__!r})"
        if kind is None:
            raise MetadataError(f"{key}: {label} is not a zarrdask codec: {codec!r}")
        if kind == "array_array":
            if array_bytes is not None:
                raise MetadataError(
                    f"{key}: {label} is an array→array codec after the array→bytes codec "
                    f"codecs[{ab_index}]; array→array codecs must come first"
                )
            array_array.append(codec)  # type: ignore[arg-type]
        elif kind == "array_bytes":
            if array_bytes is not None:
                raise MetadataError(
                    f"{key}: {label} is a second array→bytes codec (the first is codecs[{ab_index}]); "
                    "exactly one is allowed"
                )
            array_bytes, ab_index = codec, i  # type: ignore[assignment]
        else:
            if array_bytes is None:
                raise MetadataError(
                    f"{key}: {label} is a bytes→bytes codec before the array→bytes codec; "
                    "bytes→bytes codecs must follow it"
                )
            bytes_bytes.append(codec)  # type: ignore[arg-type]
    if array_bytes is None:
        raise MetadataError(
            f"{key}: the codecs {[getattr(c, 'name', c) for c in codecs]} have no array→bytes codec "
            "(exactly one is required, e.g. 'bytes')"
        )
    return array_array, array_bytes, bytes_bytes
