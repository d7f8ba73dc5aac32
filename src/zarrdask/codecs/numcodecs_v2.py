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


#: numcodecs ids of codecs that turn an object array into bytes (one must be
#: the first filter of a ``"|O"`` array: v2 spec "Data type encoding")
OBJECT_CODEC_IDS = frozenset(
    {"vlen-utf8", "vlen-bytes", "vlen-array", "json", "json2", "pickle", "msgpack", "msgpack2", "categorize"}
)


class V2ArrayBytes(ArrayBytesCodec):
    """The v2 layout step: elements in ``order`` (C/F), then the v2 filters.

    Object arrays (``"|O"``: variable-length strings and bytes, in memory
    ``StringDType`` for ``vlen-utf8`` and ``object`` otherwise) need an object
    codec as the first filter, which turns the elements into bytes.
    """

    name = "v2"

    def __init__(self, filters: Sequence[NumcodecsCodec] = ()) -> None:
        self.filters = tuple(filters)

    def get_config(self) -> dict[str, Any]:
        return {"filters": [f.get_config() for f in self.filters]}

    @property
    def object_codec_id(self) -> str | None:
        """The id of the first filter when it is an object codec (``"vlen-utf8"``, ...)."""
        codec_id = getattr(self.filters[0], "codec_id", None) if self.filters else None
        return codec_id if codec_id in OBJECT_CODEC_IDS else None

    def validate(self, spec: ChunkSpec) -> None:
        codec_id = self.object_codec_id
        if spec.dtype.hasobject and codec_id is None:
            raise CodecError(
                f"a Zarr v2 array of dtype \"|O\" needs an object codec as its first filter "
                f"(e.g. {{\"id\": \"vlen-utf8\"}} for strings, {{\"id\": \"vlen-bytes\"}} for bytes); "
                f"found filters {[f.get_config() for f in self.filters]}"
            )
        if not spec.dtype.hasobject and codec_id in ("vlen-utf8", "vlen-bytes"):
            raise CodecError(
                f"the filter {codec_id!r} is an object codec, for dtype \"|O\" only; the array's dtype is {spec.dtype}"
            )
        if codec_id == "vlen-utf8" and spec.dtype.kind != "T" or codec_id == "vlen-bytes" and spec.dtype.kind != "O":
            raise CodecError(f"the filter {codec_id!r} does not match the in-memory dtype {spec.dtype}")

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Any:
        if spec.dtype.hasobject:
            return self._encode_objects(chunk, spec)
        arr = np.asarray(chunk, dtype=spec.dtype)
        arr = np.asfortranarray(arr) if spec.order == "F" else np.ascontiguousarray(arr)
        data: Any = arr
        if not self.filters:
            return byte_view(arr.T if spec.order == "F" else arr)
        data = arr.ravel(order="K")
        for f in self.filters:
            data = f.encode(data)
        return data

    def _encode_objects(self, chunk: np.ndarray, spec: ChunkSpec) -> Any:
        from .vlen import coerce_vlen, is_vlen_dtype

        arr = np.asarray(chunk)
        if is_vlen_dtype(spec.dtype) and self.object_codec_id in ("vlen-utf8", "vlen-bytes"):
            try:
                arr = coerce_vlen(arr, spec.dtype)
            except TypeError as e:
                raise CodecError(f"filter {self.object_codec_id!r}: cannot encode the chunk: {e}") from None
        data: Any = arr.ravel(order=spec.order)
        if not data.flags.writeable:  # numcodecs' object codecs take writable buffers only
            data = data.copy()
        try:
            for f in self.filters:
                data = f.encode(data)
        except (TypeError, ValueError, UnicodeEncodeError) as e:
            raise CodecError(f"filters {[f.codec_id for f in self.filters]}: cannot encode the chunk: {e}") from None
        return data

    def _decode_filters(self, data: Any, key: str) -> Any:
        for f in reversed(self.filters):
            try:
                data = f.decode(data)
            except UnicodeDecodeError as e:
                raise CorruptChunkError(
                    f"chunk {key!r}: filter {f.codec_id}: an element is not valid UTF-8: {e}"
                ) from None
            except Exception as e:
                raise CorruptChunkError(f"chunk {key!r}: filter {f.codec_id} could not decode it: {e}") from None
        return data

    def _objects(self, data: Any, spec: ChunkSpec, key: str) -> np.ndarray:
        """The decoded object array, checked against the chunk's element count."""
        if not isinstance(data, np.ndarray):
            raise CorruptChunkError(
                f"chunk {key!r}: the filters {[f.codec_id for f in self.filters]} decoded "
                f"{type(data).__name__}, expected an array of objects"
            )
        n = int(np.prod(spec.shape, dtype=np.int64))
        if data.size != n:
            raise CorruptChunkError(
                f"chunk {key!r}: the filter {self.object_codec_id!r} decoded {data.size} elements, "
                f"expected {n} (chunk shape {tuple(spec.shape)})"
            )
        return data.reshape(spec.shape, order=spec.order)

    def decode_into(self, data: Any, spec: ChunkSpec, out: np.ndarray, key: str = "") -> None:
        """Decode into ``out``; object arrays are converted once, straight into it."""
        if spec.dtype.hasobject:
            out[...] = self._objects(self._decode_filters(data, key), spec, key)
        else:
            out[...] = self.decode(data, spec, key)

    def decode(self, data: Any, spec: ChunkSpec, key: str = "") -> np.ndarray:
        data = self._decode_filters(data, key)
        if spec.dtype.hasobject:
            arr = self._objects(data, spec, key)
            return arr if arr.dtype == spec.dtype else arr.astype(spec.dtype)
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
