"""Order rules of a v3 codec list.

Spec: zarr-specs v3 core, "Codecs": "the list of codecs must be of the
following form: zero or more ``array -> array`` codecs; followed by exactly one
``array -> bytes`` codec; followed by zero or more ``bytes -> bytes`` codecs"
(and, under array metadata "codecs", the list cannot be empty).

Tested example: ``[transpose, bytes, gzip, crc32c]`` splits into
``([transpose], bytes, [gzip, crc32c])``; ``[gzip, bytes]`` fails with
``zarr.json: codecs[0] ('gzip') is a bytes→bytes codec before the array→bytes codec``.

The same rule decides the kind of a codec whose JSON does not state it
(:class:`~zarrdask.codecs.abc.KindlessCodec`, i.e. ``numcodecs.<id>``):
:func:`assign_kinds`. One before the array→bytes codec or before any
array→array codec is array→array; one after the array→bytes codec or after
any bytes→bytes codec is bytes→bytes. Without another array→bytes codec, the
run of kindless codecs left holds it: a run of one is it; in a longer run the
first whose probe on the chunk spec reaching it says array→bytes is it
(:meth:`~zarrdask.codecs.abc.KindlessCodec.probe_kind`), the ones before are
array→array. Tested examples: ``[numcodecs.zlib, bytes, numcodecs.bz2,
numcodecs.lz4]`` (whatever the ids) → ``(array→array, bytes, bytes→bytes,
bytes→bytes)``; ``[numcodecs.pcodec]`` → array→bytes;
``[numcodecs.bitround, numcodecs.zfpy, numcodecs.zlib]`` with a float64 spec →
``([bitround], zfpy, [zlib])``.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

from ..errors import MetadataError
from .abc import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec, KindlessCodec

__all__ = ["validate_chain", "assign_kinds"]


def _kind(codec: object) -> str | None:
    if isinstance(codec, ArrayArrayCodec):
        return "array_array"
    if isinstance(codec, ArrayBytesCodec):
        return "array_bytes"
    if isinstance(codec, BytesBytesCodec):
        return "bytes_bytes"
    return None


def _label(i: int, codec: Codec) -> str:
    return f"codecs[{i}] ({getattr(codec, 'name', '') or type(codec).__name__!r})"


def assign_kinds(codecs: Sequence[Codec], *, key: str = "zarr.json", spec: ChunkSpec | None = None) -> list[Codec] | None:
    """``codecs`` with every :class:`KindlessCodec` replaced by the codec of the
    kind its position gives (see the module docstring).

    ``spec`` (the decoded side of the list) is needed only when a run of two or
    more kindless codecs holds the array→bytes codec: without it the result is
    ``None`` (undecided). A run in which no codec turns the chunk into bytes
    raises :class:`MetadataError` naming ``key``.
    """
    if not any(isinstance(c, KindlessCodec) for c in codecs):
        return list(codecs)
    kinds = [_kind(c) for c in codecs]
    placed = list(codecs)
    n = len(codecs)
    if "array_bytes" in kinds:
        low = high = kinds.index("array_bytes")
    else:
        low = max((i for i, k in enumerate(kinds) if k == "array_array"), default=-1)
        high = min((i for i, k in enumerate(kinds) if k == "bytes_bytes"), default=n)
    run = []
    for i, codec in enumerate(codecs):
        if isinstance(codec, KindlessCodec):
            if i < low:
                placed[i] = codec.as_kind("array_array")
            elif i > high:
                placed[i] = codec.as_kind("bytes_bytes")
            else:
                run.append(i)
    if len(run) == 1:
        placed[run[0]] = codecs[run[0]].as_kind("array_bytes")  # type: ignore[attr-defined]
    elif run:
        if spec is None:
            return None
        for codec in placed[: run[0]]:  # array→array codecs, all placed
            spec = codec.encoded_spec(spec)
        for j, i in enumerate(run):
            codec = codecs[i]
            kind = codec.probe_kind(spec)  # type: ignore[attr-defined]
            if kind == "array_bytes":
                placed[i] = codec.as_kind("array_bytes")  # type: ignore[attr-defined]
                for rest in run[j + 1 :]:
                    placed[rest] = codecs[rest].as_kind("bytes_bytes")  # type: ignore[attr-defined]
                return placed
            if kind == "bytes_bytes":
                raise MetadataError(
                    f"{key}: {_label(i, codec)} acts on the bytes of {spec.dtype} chunks (a bytes→bytes codec), "
                    f"but no array→bytes codec comes before it (codecs {[c.name for c in codecs]})"
                )
            placed[i] = codec.as_kind("array_array")  # type: ignore[attr-defined]
            spec = placed[i].encoded_spec(spec)
        raise MetadataError(
            f"{key}: none of {', '.join(_label(i, codecs[i]) for i in run)} turns a chunk of {spec.dtype} into "
            "bytes; a codec list needs exactly one array→bytes codec"
        )
    return placed


def validate_chain(
    codecs: Sequence[Codec], *, key: str = "zarr.json", spec: ChunkSpec | None = None
) -> tuple[list[ArrayArrayCodec], ArrayBytesCodec, list[BytesBytesCodec]]:
    """Split ``codecs`` into (array→array codecs, the array→bytes codec,
    bytes→bytes codecs), raising :class:`MetadataError` naming ``key`` and the
    position of the first codec out of place. Kindless codecs are given their kind first
    (:func:`assign_kinds`; ``spec`` is needed when their position leaves the
    array→bytes codec open)."""
    placed = assign_kinds(codecs, key=key, spec=spec)
    if placed is None:
        raise MetadataError(
            f"{key}: the codecs {[getattr(c, 'name', c) for c in codecs]} leave open which numcodecs codec "
            "is the array→bytes codec; it is decided from the chunk's data type, which is not known here"
        )
    codecs = placed
    array_array: list[ArrayArrayCodec] = []
    array_bytes: ArrayBytesCodec | None = None
    ab_index = -1
    bytes_bytes: list[BytesBytesCodec] = []
    for i, codec in enumerate(codecs):
        kind = _kind(codec)
        label = _label(i, codec)
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


def place_codecs(*args: Any, **kwargs: Any) -> list[Codec] | None:
    """Deprecated: :func:`assign_kinds`."""
    warnings.warn("place_codecs() is deprecated: use assign_kinds()", DeprecationWarning, stacklevel=2)
    return assign_kinds(*args, **kwargs)

