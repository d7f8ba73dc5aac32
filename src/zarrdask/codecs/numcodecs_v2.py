"""Zarr v2 filters and compressor as a codec chain.

The Zarr v2 spec ("Chunks", "Filters"): a chunk's bytes are its elements in the
array's ``order`` (C or F); filters are applied in order to encode, then the
primary compressor; decoding runs the compressor, then the filters in reverse.
Here the filters plus the layout step form one array→bytes codec
(:class:`V2ArrayBytes`) and the compressor a bytes→bytes codec
(:class:`V2Compressor`), so a v2 array runs through the same
:class:`~zarrdask.codecs.chain.CodecChain` as a v3 array.

Any codec numcodecs can make is accepted as a filter or as the compressor
(:mod:`~zarrdask.codecs.numcodecs_registry`; an id numcodecs does not know
raises :class:`~zarrdask.errors.UnknownCodecError` saying what to install).
Each gets exactly what zarr-python (2 and 3) hands it, so the chunks are the
same bytes: the first filter gets the chunk as an array in the array's order,
each next one the previous one's output, and the compressor the last output —
the typed chunk itself when there are no filters. Compressors that look at the
array (``zfpy``, ``pcodec``, ``json2``; ``blosc``, which takes its type size
from the item size of what it is given) therefore write what zarr-python
writes. Decoding a ``zstd``, ``gzip``, ``blosc`` or ``crc32c`` compressor runs
the matching v3 codec, which checks sizes and decompresses straight into the
caller's buffer; other compressors decode through numcodecs.

Examples (each compared with zarr-python 3's ``.zarray`` and chunk bytes):
``{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}`` as the
compressor with ``[{"id": "delta", "dtype": "<f8"}]`` as filters;
``{"id": "zfpy", "mode": 4, "tolerance": 0.01}`` as the compressor of a
``<f8`` array; ``[{"id": "vlen-utf8"}]`` as the filters of a ``|O`` array.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numcodecs.abc import Codec as NumcodecsCodec

from ..errors import CodecError, CorruptChunkError
from .buffers import byte_view, size_error
from .abc import ArrayBytesCodec, BytesBytesCodec, ChunkSpec, PartialBytesDecode
from .elements import ElementRanges
from .bounded import DecodeBound
from .chain import CodecChain
from .numcodecs_bounded import VLEN_IDS, check_vlen_count
from .numcodecs_registry import REFUSED, get_numcodec
from .numcodecs_v3 import NumcodecsBytesBytesCodec


def numcodecs_from_config(config: dict[str, Any] | NumcodecsCodec, *, key: str = ".zarray") -> NumcodecsCodec:
    """A numcodecs codec from its v2 JSON configuration (``{"id": ..., ...}``)."""
    if isinstance(config, NumcodecsCodec):
        return config
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise CodecError(f"{key}: a codec configuration must be an object with an 'id', found {config!r}")
    return get_numcodec(config, where=key)


def _memory_bytes(data: Any) -> memoryview:
    """The bytes of ``data`` in memory order (an F-ordered array stays F-ordered),
    as numcodecs' ``ensure_bytes`` gives them."""
    if isinstance(data, np.ndarray) and data.ndim > 1 and data.flags.f_contiguous and not data.flags.c_contiguous:
        return byte_view(data.T)
    return byte_view(data)


def _object_samples() -> list[np.ndarray]:
    """One-element object arrays of the element kinds numcodecs' object codecs take."""
    out = []
    for item in ("a", b"a", np.arange(2, dtype="i4")):
        arr = np.empty(1, dtype=object)
        arr[0] = item
        out.append(arr)
    return out


def is_object_codec(codec: NumcodecsCodec) -> bool:
    """Whether ``codec`` turns an object array (of strings, bytes or arrays)
    into something without objects (bytes, a ``uint8`` array): what the first
    filter of a ``"|O"`` array must do. A probe, not a list of ids."""
    for sample in _object_samples():
        try:
            encoded = codec.encode(sample)
        except Exception:
            continue
        if not (isinstance(encoded, np.ndarray) and encoded.dtype.hasobject):
            return True
    return False


def filtered_dtype(filters: Sequence[NumcodecsCodec], spec: ChunkSpec, cache: dict[Any, Any]) -> np.dtype | None:
    """The data type of what the v2 ``filters`` hand the compressor for chunks
    of ``spec`` (``spec.dtype`` without filters), when every filter maps the
    elements one to one — ``delta``, ``fixedscaleoffset``, ``quantize``,
    ``astype``, ``bitround``: then the compressor decodes to exactly the
    chunk's element count × that type's size. ``None`` otherwise (object
    arrays, ``packbits``, a compressor used as a filter). Found by encoding a
    small sample once per data type (cached in ``cache``)."""
    if not filters:
        return None if spec.dtype.hasobject else spec.dtype
    if spec.dtype.hasobject or spec.dtype.kind == "T":
        return None
    if spec.dtype not in cache:
        from .numcodecs_v3 import probe_samples

        sample = probe_samples(spec.dtype)[0]
        data: Any = sample
        for f in filters:
            try:
                data = f.encode(data)
            except Exception:  # numcodecs raises TypeError / ValueError / RuntimeError
                data = None
            if not isinstance(data, np.ndarray) or data.size != sample.size or data.dtype.hasobject:
                data = None
                break
        cache[spec.dtype] = None if data is None else data.dtype
    return cache[spec.dtype]


class V2ArrayBytes(ElementRanges, ArrayBytesCodec):
    """The v2 layout step: elements in ``order`` (C/F), then the v2 filters.

    Object arrays (``"|O"``: variable-length strings and bytes, in memory
    ``StringDType`` for ``vlen-utf8`` and ``object`` otherwise) have an object
    codec as the first filter (v2 spec, "Data type encoding"), which turns the
    elements into bytes or an array: ``vlen-utf8``, ``vlen-bytes``,
    ``vlen-array``, ``json2``, ``msgpack2``, ``pickle``, ``categorize`` or any
    other codec numcodecs has for objects.
    """

    name = "v2"

    def __init__(self, filters: Sequence[NumcodecsCodec] = (), *, compressed: bool = False) -> None:
        self.filters = tuple(filters)
        #: a compressor follows: ``encode`` returns what it gets (an array, as in
        #: zarr-python), not bytes
        self.compressed = compressed
        self._filtered: dict[Any, Any] = {}

    def get_config(self) -> dict[str, Any]:
        return {"filters": [f.get_config() for f in self.filters]}

    @property
    def object_codec_id(self) -> str | None:
        """The id of the first filter: the object codec of an object array."""
        return getattr(self.filters[0], "codec_id", None) if self.filters else None

    def validate(self, spec: ChunkSpec) -> None:
        codec_id = self.object_codec_id
        if spec.dtype.hasobject and (codec_id is None or not is_object_codec(self.filters[0])):
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

    def raw_dtype(self, spec: ChunkSpec) -> np.dtype | None:
        # no filter: the elements in the array's own dtype (then compressed, or not)
        return None if self.filters or spec.dtype.hasobject else spec.dtype

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> Any:
        if spec.dtype.hasobject:
            data = self._encode_objects(chunk, spec)
            return data if self.compressed else _memory_bytes(data)
        arr = np.asarray(chunk, dtype=spec.dtype)
        # the chunk in its order, as zarr-python hands it to the first filter / the compressor
        data = self._encode_filters(
            np.asfortranarray(arr) if spec.order == "F" else np.ascontiguousarray(arr), f"a chunk of {spec.dtype}"
        )
        return data if self.compressed else _memory_bytes(data)

    def _encode_filters(self, data: Any, what: str) -> Any:
        try:
            for f in self.filters:
                data = f.encode(data)
        except Exception as e:
            raise CodecError(f"filters {[f.codec_id for f in self.filters]}: cannot encode {what}: {e}") from None
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
        return self._encode_filters(
            data, 'the chunk (the first filter of a "|O" array must be an object codec, turning objects into bytes '
            "or an array)"
        )

    def _decode_filters(self, data: Any, spec: ChunkSpec, key: str) -> Any:
        for f in reversed(self.filters):
            if f is self.filters[0] and spec.dtype.hasobject and self.object_codec_id in VLEN_IDS:
                # the element count the header declares, before numcodecs allocates for it
                check_vlen_count(data, tuple(spec.shape), key, str(self.object_codec_id))
            try:
                data = f.decode(data)
            except UnicodeDecodeError as e:
                raise CorruptChunkError(
                    f"chunk {key!r}: filter {f.codec_id}: an element is not valid UTF-8: {e}"
                ) from None
            except REFUSED as e:
                raise CodecError(f"chunk {key!r}: filter {f.codec_id} refuses to decode it: {e}") from None
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
            out[...] = self._objects(self._decode_filters(data, spec, key), spec, key)
        else:
            out[...] = self.decode(data, spec, key)

    def decode(self, data: Any, spec: ChunkSpec, key: str = "") -> np.ndarray:
        data = self._decode_filters(data, spec, key)
        if spec.dtype.hasobject:
            arr = self._objects(data, spec, key)
            return arr if arr.dtype == spec.dtype else arr.astype(spec.dtype)
        try:
            if isinstance(data, np.ndarray):  # as zarr-python: the elements in memory order, viewed as the dtype
                arr = data.reshape(-1, order="A")
                arr = arr if arr.dtype == spec.dtype else np.ascontiguousarray(arr).view(spec.dtype)
            else:
                arr = np.frombuffer(memoryview(data), dtype=spec.dtype)
        except ValueError:
            raise size_error(key, "v2 filters", memoryview(byte_view(data)).nbytes, spec.nbytes) from None
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
        """The chunk's bytes without filters; with filters that map elements one
        to one, the element count × the filtered type's size (what bounds the
        compressor's output); else ``None``."""
        if not self.filters:
            return spec.nbytes
        dtype = filtered_dtype(self.filters, spec, self._filtered)
        return None if dtype is None else math.prod(spec.shape) * dtype.itemsize


class V2Compressor(PartialBytesDecode, NumcodecsBytesBytesCodec):
    """A v2 compressor: numcodecs encodes what the filters (or the layout step)
    hand it — an array, as in zarr-python — and decodes within the size the
    chain gives (:mod:`zarrdask.codecs.numcodecs_bounded`); ``zstd``, ``gzip``,
    ``blosc`` and ``crc32c`` decode through the matching v3 codec (size checks,
    straight into the caller's buffer). ``filters`` are the array's v2
    filters: they tell the type of the values the compressor decodes to."""

    def __init__(self, codec: NumcodecsCodec, filters: Sequence[NumcodecsCodec] = ()) -> None:
        config = dict(codec.get_config())
        codec_id = config.pop("id", codec.codec_id)
        super().__init__(codec_id, **config)
        self._numcodecs[()] = codec
        self.filters = tuple(filters)
        self._filtered: dict[Any, Any] = {}
        from .registry import core_compressor

        self._decoder: BytesBytesCodec | None = core_compressor(codec, codec_id, config)

    def __getstate__(self) -> dict[str, Any]:
        return {"codec": self._numcodecs[()], "filters": self.filters}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["codec"], state.get("filters", ()))  # type: ignore[misc]

    def _encode_input(self, data: Any) -> Any:
        return data

    def _values_dtype(self, spec: ChunkSpec) -> np.dtype | None:
        return filtered_dtype(self.filters, spec, self._filtered)

    def decode_range(self, data: Any, start: int, length: int, size: int, key: str) -> Any:
        """As the matching v3 codec's ``decode_range`` (``blosc``, ``zstd``), else ``None``."""
        if not isinstance(self._decoder, PartialBytesDecode):
            return None
        return self._decoder.decode_range(data, start, length, size, key)

    def decode_within(self, data: bytes | memoryview, spec: ChunkSpec, bound: DecodeBound) -> Any:
        if self._decoder is not None:  # named as the v2 id ('zstd'), as the v3 codec
            return self._decoder.decode(data, spec, bound.key, bound.out, size=bound.size)  # type: ignore[call-arg]
        return super().decode_within(data, spec, bound)


def v2_chain(
    filters: Sequence[dict[str, Any] | NumcodecsCodec] | None,
    compressor: dict[str, Any] | NumcodecsCodec | None,
    *,
    key: str = ".zarray",
) -> CodecChain:
    """The codec chain of a v2 array."""
    fs = [numcodecs_from_config(f, key=key) for f in (filters or ())]
    bb = [V2Compressor(numcodecs_from_config(compressor, key=key), fs)] if compressor else []
    return CodecChain([], V2ArrayBytes(fs, compressed=bool(bb)), bb)
