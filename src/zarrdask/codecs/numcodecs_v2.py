"""Zarr v2 filters and compressor as a codec chain.

The Zarr v2 spec ("Chunks", "Filters"): a chunk's bytes are its elements in the
array's ``order`` (C or F); filters are applied in order to encode, then the
primary compressor; decoding runs the compressor, then the filters in reverse.
Here the filters plus the layout step form one array→bytes codec
(:class:`V2ArrayBytes`) and the compressor the matching bytes→bytes codec
(``zstd``, ``blosc``, ``gzip`` or a ``numcodecs.<id>`` wrapper), so a v2 array runs through the same
:class:`~zarrdask.codecs.chain.CodecChain` as a v3 array.

Example: ``{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}`` as the
compressor with ``[{"id": "delta", "dtype": "<f8"}]`` as filters.
"""

from __future__ import annotations

from typing import Any, Sequence

import numcodecs
import numpy as np
from numcodecs.abc import Codec as NumcodecsCodec

from ..errors import CodecError, CorruptChunkError, UnknownCodecError
from ._buffers import byte_view, size_error
from .abc import ArrayBytesCodec, ChunkSpec
from .chain import CodecChain


def numcodecs_from_config(config: dict[str, Any] | NumcodecsCodec, *, key: str = ".zarray") -> NumcodecsCodec:
    """A numcodecs codec from its v2 JSON configuration (``{"id": ..., ...}``)."""
    if isinstance(config, NumcodecsCodec):
        return config
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise CodecError(f"{key}: a codec configuration must be an object with an 'id', found {config!r}")
    try:
        return numcodecs.get_codec(dict(config))
    except ValueError as e:
        if "codec not available" in str(e):
            raise UnknownCodecError(f"{key}: unknown codec id {config['id']!r}") from None
        raise CodecError(f"{key}: invalid configuration for codec {config['id']!r}: {e}") from None
    except TypeError as e:
        raise CodecError(f"{key}: invalid configuration for codec {config['id']!r}: {e}") from None


class V2ArrayBytes(ArrayBytesCodec):
    """The v2 layout step: elements in ``order`` (C/F), then the v2 filters."""

    name = "v2"

    def __init__(self, filters: Sequence[NumcodecsCodec] = ()) -> None:
        self.filters = tuple(filters)

    def get_config(self) -> dict[str, Any]:
        return {"filters": [f.get_config() for f in self.filters]}

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Any:
        arr = np.asarray(chunk, dtype=spec.dtype)
        arr = np.asfortranarray(arr) if spec.order == "F" else np.ascontiguousarray(arr)
        data: Any = arr
        if not self.filters:
            return byte_view(arr.T if spec.order == "F" else arr)
        data = arr.ravel(order="K")
        for f in self.filters:
            data = f.encode(data)
        return data

    def decode(self, data: Any, spec: ChunkSpec, key: str = "") -> np.ndarray:
        for f in reversed(self.filters):
            try:
                data = f.decode(data)
            except Exception as e:
                raise CorruptChunkError(f"chunk {key!r}: filter {f.codec_id} could not decode it: {e}") from None
        if isinstance(data, np.ndarray) and data.dtype == spec.dtype:
            arr = data
        else:
            buf = memoryview(data) if not isinstance(data, np.ndarray) else data
            try:
                arr = np.frombuffer(buf, dtype=spec.dtype)
            except ValueError:
                raise size_error(key, "v2 filters", memoryview(data).nbytes, spec.nbytes) from None
        n = int(np.prod(spec.shape, dtype=np.int64))
        if arr.size != n:
            raise size_error(key, "v2 filters", arr.size * spec.dtype.itemsize, spec.nbytes)
        return arr.reshape(spec.shape, order=spec.order)

    def raw_target(self, out: np.ndarray, spec: ChunkSpec) -> memoryview | None:
        if self.filters or out.dtype != spec.dtype or out.shape != spec.shape or spec.dtype.hasobject:
            return None
        if spec.order == "F":
            if not out.flags.f_contiguous:
                return None
            return byte_view(out.T)
        if not out.flags.c_contiguous:
            return None
        return byte_view(out)

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        return None if self.filters else spec.nbytes


def v2_chain(
    filters: Sequence[dict[str, Any] | NumcodecsCodec] | None,
    compressor: dict[str, Any] | NumcodecsCodec | None,
    *,
    key: str = ".zarray",
) -> CodecChain:
    """The codec chain of a v2 array."""
    fs = [numcodecs_from_config(f, key=key) for f in (filters or ())]
    from .registry import codec_from_json

    # the compressor runs as the matching v3 codec: the same bytes as numcodecs
    # writes, with typesize taken from the dtype and decoding straight into `out`
    bb = [codec_from_json(numcodecs_from_config(compressor, key=key), key=key)] if compressor else []
    return CodecChain([], V2ArrayBytes(fs), bb)
