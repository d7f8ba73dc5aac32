"""numcodecs codecs in Zarr v3 arrays, under the names ``numcodecs.<id>``.

Spec context: zarr-specs v3 core, "Codecs" (the three kinds and their order)
and "Extension codecs". These names are not in the spec; they follow the
convention of zarr-python 3 (``zarr.codecs.numcodecs``, formerly
``numcodecs.zarr3``): ``{"name": "numcodecs.<id>", "configuration": {...}}``
where the configuration is the numcodecs configuration without ``"id"`` —
exactly as given when the codec was made, plus the fields zarr-python fills in
from the data type (``dtype`` of ``fixedscaleoffset`` / ``quantize``,
``decode_dtype`` of ``astype``, ``elementsize`` of ``shuffle``; see
:meth:`NumcodecsCodec.evolve`). zarr-python always writes ``"configuration"``,
even when empty, and so does this module.

Which codecs: every id numcodecs can make (:mod:`~zarrdask.codecs.numcodecs_registry`
— no list is kept here). An id numcodecs does not know raises
:class:`~zarrdask.errors.UnknownCodecError` naming what to install.

Which kind
----------
A ``numcodecs.<id>`` object does not say whether it is an array → array,
array → bytes or bytes → bytes codec. zarrdask decides it so:

1. **By the place it is given** when an array is created:
   ``create_array(filters=...)`` are array → array, ``serializer=`` is the
   array → bytes codec, ``compressors=`` are bytes → bytes codecs.
2. **By its position in a stored codec list** (zarr-specs v3 core: array → array
   codecs, exactly one array → bytes codec, bytes → bytes codecs): a
   ``numcodecs.<id>`` before the list's array → bytes codec (``bytes``,
   ``sharding_indexed``, ``vlen-utf8``, ...) or before any array → array codec
   is array → array; one after it, or after any bytes → bytes codec, is
   bytes → bytes. When the list has no other array → bytes codec, the run of
   ``numcodecs.<id>`` codecs left in between holds it; a run of one is it.
3. **By a probe** for a longer run (``[numcodecs.bitround, numcodecs.zfpy,
   numcodecs.zlib]``): walking the run with a small sample chunk of the data
   type that reaches each codec, the first whose numcodecs ``encode`` classifies
   as array → bytes (:func:`classify`) is the array → bytes codec. The rule of
   :func:`classify`: a codec acts on the byte stream (bytes → bytes) when it
   encodes a chunk and the chunk's raw bytes alike, or when it decodes back to
   bytes; otherwise it is array → array when it keeps the chunk's shape or
   encodes to an array, and array → bytes when it encodes to bytes that decode
   to an array.

Special classes complete a configuration from the data type, as zarr-python
does: :class:`Delta`, :class:`FixedScaleOffset`, :class:`Quantize`,
:class:`AsType` (array → array) and :class:`Shuffle` (bytes → bytes);
:class:`PackBits` checks for ``bool`` chunks. Every other id gets the generic
wrapper of its kind.

The encoded side of an array → array codec is exactly what numcodecs returns,
as zarr-python hands it to the next codec: its data type and shape (``delta``
and ``fixedscaleoffset`` flatten the chunk, ``quantize``, ``bitround`` and
``astype`` keep its shape, ``packbits`` gives ``1 + ceil(n / 8)`` bytes) —
learnt from encoding a sample and cached per chunk spec. An array → bytes
codec gets the chunk as an array and returns numcodecs' bytes; its decoded
array is reshaped to the chunk. A bytes → bytes codec whose numcodecs output is
its input plus a fixed number of bytes at one end (``crc32``, ``adler32``,
``fletcher32``, ``jenkins_lookup3``, ``crc32c``) is a checksum: a decode
failure raises :class:`~zarrdask.errors.ChecksumError` and its encoded size is
known (usable in a shard index).

Tested example configurations (each compared with the ``zarr.json`` and chunk
bytes zarr-python 3 writes)::

    [{"name": "numcodecs.delta", "configuration": {"dtype": "float64", "astype": "float32"}},
     {"name": "bytes", "configuration": {"endian": "little"}},
     {"name": "numcodecs.zlib", "configuration": {"level": 3}}]
    [{"name": "numcodecs.bitround", "configuration": {"keepbits": 8}},
     {"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}},
     {"name": "numcodecs.zlib", "configuration": {}}]               # bitround a→a, zfpy a→b
    [{"name": "numcodecs.pcodec", "configuration": {"level": 3}}]  # the only codec: a→b
    [{"name": "bytes", "configuration": {"endian": "little"}},
     {"name": "numcodecs.shuffle", "configuration": {"elementsize": 8}}]

A numcodecs object is built once per wrapper (once per data type for a
configuration completed from the data type) and reused; numcodecs codecs keep
no state between calls, so wrappers are thread-safe.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Mapping

import numpy as np
from numcodecs.abc import Codec as Numcodec

from ..errors import ChecksumError, CodecError, CorruptChunkError
from .buffers import byte_view, size_error, write_into
from .abc import ArrayArrayCodec, ArrayBytesCodec, ChunkSpec, Codec, KindlessCodec
from .bounded import BoundedBytesBytesCodec, DecodeBound
from .numcodecs_bounded import decode_array_bounded, decode_bytes_bounded
from .numcodecs_registry import REFUSED, decode_buffer, get_numcodec

__all__ = [
    "PREFIX",
    "NumcodecsCodec",
    "NumcodecsArrayArrayCodec",
    "NumcodecsArrayBytesCodec",
    "NumcodecsBytesBytesCodec",
    "NumcodecsKindless",
    "SPECIAL_CLASSES",
    "Delta",
    "FixedScaleOffset",
    "Quantize",
    "AsType",
    "PackBits",
    "Shuffle",
    "classify",
    "numcodecs_codec",
    "from_numcodecs",
]

PREFIX = "numcodecs."

KINDS = ("array_array", "array_bytes", "bytes_bytes")


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return str(np.dtype(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def probe_samples(dtype: np.dtype) -> list[np.ndarray]:
    """Small 2-d chunks of ``dtype`` with distinct, non-zero values (the probes'
    input); for objects both flavours, bytes and strings."""
    if dtype.kind == "O":
        items = [["a", "bc", ""], ["def", "g", "hi"]]
        return [
            np.array([[s.encode() for s in row] for row in items], dtype=object),
            np.array(items, dtype=object),
        ]
    if dtype.kind == "T":
        return [np.array([["a", "bc", ""], ["def", "g", "hi"]], dtype=dtype)]
    if dtype.kind == "V" or dtype.fields is not None:
        return [np.zeros((2, 3), dtype=dtype)]
    return [np.arange(1, 7).astype(dtype).reshape(2, 3)]


def _encode_sample(codec: Numcodec, dtype: np.dtype, name: str) -> tuple[np.ndarray, Any]:
    """(the first sample of ``dtype`` the codec encodes, its encoding)."""
    error: Exception | None = None
    for sample in probe_samples(dtype):
        try:
            return sample, codec.encode(sample.copy())
        except Exception as e:  # numcodecs raises TypeError / ValueError / RuntimeError
            error = e
    raise CodecError(f"codec {name or codec.codec_id!r} cannot encode chunks of data type {dtype}: {error}") from None


def _same_bytes(a: Any, b: Any) -> bool:
    try:
        return bytes(byte_view(a)) == bytes(byte_view(b))
    except (TypeError, ValueError):
        return False


def classify(codec: Numcodec, dtype: np.dtype, name: str = "") -> str:
    """The kind a numcodecs codec has for chunks of ``dtype``: ``"array_array"``,
    ``"array_bytes"`` or ``"bytes_bytes"``.

    A sample chunk of ``dtype`` is encoded, and the encoding decoded.

    * The encoding keeps the sample's shape: array → array (``bitround``).
    * The codec acts on the byte stream — the sample's raw bytes (a flat
      ``uint8`` array) encode to the same bytes — and decoding does not give
      back an array of the (multi-byte) sample's type: bytes → bytes
      (``zlib``; ``crc32``, which returns a ``uint8`` array). The second
      condition keeps out filters that view any input as their configured type
      (``categorize``).
    * Otherwise an encoding that is an array: array → array (``categorize``);
      bytes that decode to an array: array → bytes (``zfpy``, ``pcodec``,
      ``json2``, ``vlen-utf8``; also bytes that cannot be decoded here, as
      ``pickle`` without its opt-in); bytes that decode to bytes: bytes → bytes
      (``blosc``, which records the item size of what it is given).
    """
    sample, encoded = _encode_sample(codec, dtype, name)
    if isinstance(encoded, np.ndarray) and encoded.shape == sample.shape:
        return "array_array"
    try:
        decoded = decode_buffer(codec, encoded)
    except Exception:
        decoded = None
    typed = isinstance(decoded, np.ndarray) and decoded.dtype == dtype and dtype.itemsize > 1
    if not typed and not dtype.hasobject:
        try:
            from_bytes = codec.encode(sample.reshape(-1).view(np.uint8).copy())
        except Exception:  # e.g. zfpy and pcodec take no uint8
            from_bytes = None
        if from_bytes is not None and _same_bytes(encoded, from_bytes):
            return "bytes_bytes"
    if isinstance(encoded, np.ndarray):
        return "array_array"
    return "array_bytes" if decoded is None or isinstance(decoded, np.ndarray) else "bytes_bytes"


class NumcodecsCodec:
    """Shared part of the wrappers: codec id, configuration, JSON, the cached
    numcodecs object.

    Generic wrappers take the id first (``NumcodecsBytesBytesCodec("zlib",
    level=3)``); the special classes have theirs fixed (``Delta(dtype="<f8")``).
    """

    #: the numcodecs id of a special class ("" for the generic wrappers)
    fixed_id: ClassVar[str] = ""
    #: configuration fields completed from the chunk spec when missing
    spec_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, codec_id: str | None = None, /, **configuration: Any) -> None:
        config = {k: _jsonable(v) for k, v in configuration.items()}
        given_id = config.pop("id", None)
        codec_id = codec_id or self.fixed_id or given_id
        if not isinstance(codec_id, str) or not codec_id:
            raise CodecError(f"{type(self).__name__}: the numcodecs codec id is missing")
        if self.fixed_id and codec_id != self.fixed_id or given_id not in (None, codec_id):
            raise CodecError(
                f"codec {PREFIX + codec_id!r}: configuration 'id' is {given_id!r}, expected {self.fixed_id or codec_id!r}"
            )
        self.codec_id = codec_id
        self.name = PREFIX + codec_id
        self.config = config
        self._numcodecs: dict[tuple[Any, ...], Numcodec] = {}
        self._probes: dict[Any, Any] = {}
        if not self._missing():
            self._numcodec(None)  # unknown ids and configuration errors surface now

    def __getstate__(self) -> dict[str, Any]:
        return {"codec_id": self.codec_id, "config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["codec_id"], **state["config"])  # type: ignore[misc]

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "NumcodecsCodec":
        """A special class from its configuration; generic wrappers need the id
        (see :func:`numcodecs_codec`)."""
        return cls(**(configuration or {}))

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": self.get_config()}

    # -- completion from the chunk spec ---------------------------------------
    def _missing(self) -> tuple[str, ...]:
        return tuple(f for f in self.spec_fields if self.config.get(f) is None)

    def _spec_value(self, field: str, spec: ChunkSpec) -> Any:
        return str(spec.dtype)

    def _completed(self, spec: ChunkSpec | None) -> dict[str, Any]:
        missing = self._missing()
        if not missing:
            return self.config
        if spec is None:
            raise CodecError(f"codec {self.name!r}: configuration field(s) {list(missing)} are not set")
        return {**self.config, **{f: self._spec_value(f, spec) for f in missing}}

    def complete(self, spec: ChunkSpec) -> Any:
        """This codec with the fields zarr-python fills from the data type set."""
        if not self._missing():
            return self
        return type(self)(self.codec_id, **self._completed(spec))

    def _numcodec(self, spec: ChunkSpec | None) -> Numcodec:
        missing = self._missing()
        cache_key = tuple(self._spec_value(f, spec) for f in missing) if (missing and spec is not None) else ()
        codec = self._numcodecs.get(cache_key)
        if codec is None:
            codec = get_numcodec({"id": self.codec_id, **self._completed(spec)}, name=self.name)
            self._numcodecs[cache_key] = codec  # a race only builds an equal object
        return codec


def _dtype(value: Any, codec: str, field: str) -> np.dtype:
    try:
        return np.dtype(value)
    except TypeError as e:
        raise CodecError(f"codec {codec!r}: configuration field {field!r} is not a data type: {value!r} ({e})") from None


def _fill_as(fill_value: Any, source: np.dtype, target: np.dtype) -> Any:
    """The fill value on the encoded side: the same bits when the item size is
    kept (bitround's float → int view), else the value converted (0 if it cannot be)."""
    if source == target or fill_value is None or source.hasobject or target.hasobject:
        return fill_value
    try:
        value = np.asarray(fill_value, dtype=source)
        if source.itemsize == target.itemsize:
            return value.view(target)[()]
        return value.astype(target)[()]
    except (TypeError, ValueError):
        return np.zeros((), dtype=target)[()]


class NumcodecsArrayArrayCodec(NumcodecsCodec, ArrayArrayCodec):
    """A numcodecs filter as an array → array codec.

    The encoded side is numcodecs' output — its shape and data type, found by
    encoding a sample (:meth:`resolve`).
    """

    #: configuration field that must equal the decoded data type, if given
    dtype_field: ClassVar[str | None] = None

    def _encoded(self, spec: ChunkSpec) -> tuple[tuple[int, ...], np.dtype]:
        """(shape, data type) of numcodecs' encoding of a chunk of ``spec``."""
        key = (tuple(spec.shape), spec.dtype)
        found = self._probes.get(key)
        if found is None:
            codec = self._numcodec(spec)
            sample, out = _encode_sample(codec, spec.dtype, self.name)
            out = np.asarray(self._check_array(out, spec))
            if out.shape == sample.shape:  # element-wise: keeps the chunk's shape
                found = (tuple(spec.shape), out.dtype)
            elif out.ndim == 1 and out.size == sample.size:  # flattens the chunk
                found = ((math.prod(spec.shape),), out.dtype)
            else:  # a size of its own (packbits): encode a whole chunk once
                full = np.zeros(spec.shape, dtype=spec.dtype)
                out = np.asarray(self._encode_raw(codec, full, spec))
                found = (tuple(out.shape), out.dtype)
            self._probes[key] = found
        return found

    def _encode_raw(self, codec: Numcodec, chunk: np.ndarray, spec: ChunkSpec) -> Any:
        try:
            encoded = codec.encode(np.ascontiguousarray(chunk))
        except Exception as e:
            raise CodecError(f"codec {self.name!r} cannot encode chunks of data type {spec.dtype}: {e}") from None
        return self._check_array(encoded, spec)

    def _check_array(self, encoded: Any, spec: ChunkSpec) -> np.ndarray:
        if not isinstance(encoded, np.ndarray):
            raise CodecError(
                f"codec {self.name!r} is used as an array → array codec, but numcodecs encodes a chunk of "
                f"{spec.dtype} to {type(encoded).__name__}, not an array: give it as a serializer or compressor"
            )
        return encoded

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        shape, dtype = self._encoded(spec)
        return ChunkSpec(shape, dtype, _fill_as(spec.fill_value, spec.dtype, dtype), spec.order,
                         read_missing=spec.read_missing)

    def validate(self, spec: ChunkSpec) -> None:
        field = self.dtype_field
        if field is not None and self.config.get(field) is not None:
            declared = _dtype(self.config[field], self.name, field)
            if declared != spec.dtype:
                raise CodecError(
                    f"codec {self.name!r}: configuration field {field!r} is {self.config[field]!r}, "
                    f"but the chunk's data type is {spec.dtype}"
                )
        self._encoded(spec)

    @staticmethod
    def _conform(arr: Any, shape: tuple[int, ...], dtype: np.dtype, what: str, name: str) -> np.ndarray:
        arr = np.asarray(arr)
        if arr.dtype != dtype:
            if arr.dtype.itemsize != dtype.itemsize or arr.dtype.hasobject or dtype.hasobject:
                raise CorruptChunkError(f"codec {name!r}: {what} has data type {arr.dtype}, expected {dtype}")
            arr = arr.view(dtype)  # e.g. bitround returns its float input viewed as integers
        if arr.size != math.prod(shape):
            raise CorruptChunkError(f"codec {name!r}: {what} has {arr.size} elements, expected shape {shape}")
        return arr.reshape(shape)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        shape, dtype = self._encoded(spec)
        encoded = self._encode_raw(self._numcodec(spec), chunk, spec)
        return self._conform(encoded, shape, dtype, "the encoded chunk", self.name)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        try:
            decoded = self._numcodec(spec).decode(np.ascontiguousarray(chunk))
        except REFUSED as e:
            raise CodecError(f"codec {self.name!r} refuses to decode: {e}") from None
        except Exception as e:
            raise CorruptChunkError(f"codec {self.name!r} could not decode a chunk: {e}") from None
        return self._conform(decoded, tuple(spec.shape), spec.dtype, "the decoded chunk", self.name)


class _AstypeFilter(NumcodecsArrayArrayCodec):
    """Filters configured with the decoded data type (``dtype``, filled in from the chunk)."""

    spec_fields = ("dtype",)
    dtype_field = "dtype"


class Delta(_AstypeFilter):
    fixed_id = "delta"


class FixedScaleOffset(_AstypeFilter):
    fixed_id = "fixedscaleoffset"


class Quantize(_AstypeFilter):
    fixed_id = "quantize"


class AsType(NumcodecsArrayArrayCodec):
    fixed_id = "astype"
    spec_fields = ("decode_dtype",)
    dtype_field = "decode_dtype"

    def __init__(self, codec_id: str | None = None, /, **configuration: Any) -> None:
        if configuration.get("encode_dtype") is None:
            raise CodecError("codec 'numcodecs.astype': configuration field 'encode_dtype' is required")
        super().__init__(codec_id, **configuration)


class PackBits(NumcodecsArrayArrayCodec):
    fixed_id = "packbits"

    def validate(self, spec: ChunkSpec) -> None:
        if spec.dtype != np.dtype(bool):  # numcodecs would silently pack any bytes as bools
            raise CodecError(f"codec {self.name!r}: needs the bool data type, found {spec.dtype}")
        super().validate(spec)


class NumcodecsArrayBytesCodec(NumcodecsCodec, ArrayBytesCodec):
    """A numcodecs codec as the array → bytes codec (``zfpy``, ``pcodec``, ...):
    numcodecs gets the chunk as an array and returns its bytes; decoding gives
    an array that is reshaped to the chunk."""

    def validate(self, spec: ChunkSpec) -> None:
        self._numcodec(spec)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes | memoryview:
        data = np.ascontiguousarray(chunk)
        if data.dtype.hasobject and not data.flags.writeable:  # numcodecs' object codecs take writable buffers only
            data = data.copy()
        try:
            encoded = self._numcodec(spec).encode(data)
        except Exception as e:
            raise CodecError(
                f"codec {self.name!r} cannot encode a chunk of data type {spec.dtype}, shape {tuple(spec.shape)}: {e}"
            ) from None
        return encoded if isinstance(encoded, bytes) else byte_view(encoded)

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        codec = self._numcodec(spec)
        try:
            decoded = decode_array_bounded(self.codec_id, codec, data, spec, key, self.name)
            if decoded is None:  # no header to check: decoded by numcodecs, checked below
                decoded = codec.decode(bytes(data) if not isinstance(data, bytes) else data)
        except CorruptChunkError:
            raise
        except REFUSED as e:
            raise CodecError(f"chunk {key!r}: codec {self.name!r} refuses to decode it: {e}") from None
        except Exception as e:
            raise CorruptChunkError(f"chunk {key!r}: codec {self.name!r} could not decode it: {e}") from None
        arr = np.asarray(decoded)
        if arr.dtype != spec.dtype:
            if spec.dtype.hasobject or spec.dtype.kind == "T":
                arr = arr.astype(spec.dtype)
            elif arr.dtype.itemsize == spec.dtype.itemsize and not arr.dtype.hasobject:
                arr = arr.view(spec.dtype)
            else:
                raise CorruptChunkError(
                    f"chunk {key!r}: codec {self.name!r} decoded data type {arr.dtype}, expected {spec.dtype}"
                )
        if arr.size != math.prod(spec.shape):
            raise CorruptChunkError(
                f"chunk {key!r}: codec {self.name!r} decoded {arr.size} elements, expected shape {tuple(spec.shape)}"
            )
        return arr.reshape(spec.shape)


class NumcodecsBytesBytesCodec(NumcodecsCodec, BoundedBytesBytesCodec):
    """A numcodecs compressor or checksum as a bytes → bytes codec."""

    def validate(self, spec: ChunkSpec) -> None:
        self._numcodec(spec)

    @property
    def checksum_size(self) -> int | None:
        """Bytes a checksum codec adds (its output is its input plus this many
        bytes at one end, for any input); ``None`` for other codecs."""
        if "checksum" not in self._probes:
            size = None
            if not self._missing():
                codec = self._numcodec(None)
                sizes = set()
                for payload in (bytes(range(7)), bytes(range(256)) * 3):
                    try:
                        out = bytes(byte_view(codec.encode(payload)))
                    except Exception:
                        sizes = set()
                        break
                    extra = len(out) - len(payload)
                    if extra <= 0 or not (out[:len(payload)] == payload or out[extra:] == payload):
                        sizes = set()
                        break
                    sizes.add(extra)
                size = sizes.pop() if len(sizes) == 1 else None
            self._probes["checksum"] = size
        return self._probes["checksum"]

    def encoded_size(self, decoded_size: int) -> int | None:
        size = self.checksum_size
        return None if size is None else decoded_size + size

    def _encode_input(self, data: Any) -> Any:
        """What numcodecs gets: the byte stream (zarr-python hands v3 bytes → bytes codecs a ``uint8`` buffer)."""
        return byte_view(data)

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes | memoryview:
        try:
            encoded = self._numcodec(spec).encode(self._encode_input(data))
        except CodecError:
            raise
        except Exception as e:
            raise CodecError(f"codec {self.name!r} could not encode a chunk of data type {spec.dtype}: {e}") from None
        return encoded if isinstance(encoded, bytes) else byte_view(encoded)

    def _values_dtype(self, spec: ChunkSpec) -> np.dtype | None:
        """The type of the values numcodecs decodes to (what it was given to
        encode): the byte stream in v3."""
        return np.dtype(np.uint8)

    def decode_within(self, data: bytes | memoryview, spec: ChunkSpec, bound: DecodeBound) -> Any:
        codec = self._numcodec(spec)
        key, out = bound.key, bound.out
        mv = byte_view(data)
        checksum = self.checksum_size
        if checksum is not None and bound.size is not None and mv.nbytes - checksum != bound.size:
            raise size_error(key, self.name, mv.nbytes - checksum, bound.size)  # before the checksum is computed
        try:
            result = decode_bytes_bounded(self.codec_id, codec, mv, bound, self._values_dtype(spec))
            if result is None:  # no bound can be given to numcodecs: the result is checked below
                result = decode_buffer(codec, mv)
        except CorruptChunkError:
            raise
        except REFUSED as e:
            raise CodecError(f"chunk {key!r}: codec {self.name!r} refuses to decode it: {e}") from None
        except Exception as e:  # RuntimeError, ValueError, zlib.error, lzma.LZMAError, OSError, ...
            cls = ChecksumError if checksum is not None else CorruptChunkError
            raise cls(f"chunk {key!r}: codec {self.name!r} could not decode it: {e}") from None
        if out is not None:
            return write_into(out, result, key=key, codec=self.name)
        result = result if isinstance(result, bytes) else byte_view(result)
        if bound.size is not None and len(result) != bound.size:
            raise size_error(key, self.name, len(result), bound.size)
        return result


class Shuffle(NumcodecsBytesBytesCodec):
    fixed_id = "shuffle"
    spec_fields = ("elementsize",)

    def _spec_value(self, field: str, spec: ChunkSpec) -> Any:
        return spec.dtype.itemsize


#: numcodecs id → the class completing its configuration from the data type
SPECIAL_CLASSES: dict[str, type[NumcodecsCodec]] = {
    cls.fixed_id: cls for cls in (Delta, FixedScaleOffset, Quantize, AsType, PackBits, Shuffle)
}

_GENERIC: dict[str, type[NumcodecsCodec]] = {
    "array_array": NumcodecsArrayArrayCodec,
    "array_bytes": NumcodecsArrayBytesCodec,
    "bytes_bytes": NumcodecsBytesBytesCodec,
}


class NumcodecsKindless(NumcodecsCodec, KindlessCodec):
    """A ``numcodecs.<id>`` codec read from JSON whose kind its position in
    the codec list decides (:func:`~zarrdask.codecs.chain_validate.assign_kinds`)."""

    def as_kind(self, kind: str) -> Codec:
        return _GENERIC[kind](self.codec_id, **self.config)  # type: ignore[return-value]

    def probe_kind(self, spec: ChunkSpec) -> str:
        return classify(self._numcodec(spec), spec.dtype, self.name)


#: deprecated name of :class:`NumcodecsKindless`
NumcodecsUnplaced = NumcodecsKindless


def numcodecs_codec(
    codec_id: str, configuration: Mapping[str, Any] | None = None, *, kind: str | None = None
) -> Codec:
    """The wrapper of numcodecs codec ``codec_id``: its special class if it has
    one, else the generic wrapper of ``kind`` (``None``: kind not known yet, an
    :class:`NumcodecsKindless`)."""
    config = dict(configuration or {})
    special = SPECIAL_CLASSES.get(codec_id)
    if special is not None:
        return special(**config)  # type: ignore[return-value]
    if kind is None:
        return NumcodecsKindless(codec_id, **config)
    if kind not in _GENERIC:
        raise ValueError(f"kind must be one of {KINDS}, found {kind!r}")
    return _GENERIC[kind](codec_id, **config)  # type: ignore[return-value]


def from_numcodecs(codec: Numcodec, kind: str | None = None) -> Codec:
    """The ``numcodecs.<id>`` wrapper of a numcodecs codec object (its full
    ``get_config()`` becomes the configuration)."""
    config = dict(codec.get_config())
    codec_id = config.pop("id", getattr(codec, "codec_id", None))
    return numcodecs_codec(str(codec_id), config, kind=kind)
