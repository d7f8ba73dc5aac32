"""numcodecs codecs in Zarr v3 arrays, under the names ``numcodecs.<id>``.

These are not in the Zarr v3 spec; they follow the convention zarr-python 3.1
uses (``zarr.codecs.numcodecs``, formerly ``numcodecs.zarr3``) so that arrays
written with it can be read and written here: the codec object is
``{"name": "numcodecs.<id>", "configuration": {...}}`` where the configuration
is the numcodecs configuration without ``"id"`` — exactly as given when the
codec was made, plus the fields zarr-python fills in from the array's data
type (``dtype`` of ``fixedscaleoffset`` / ``quantize``, ``decode_dtype`` of
``astype``, ``elementsize`` of ``shuffle``; see :meth:`NumcodecsCodec.evolve`).
zarr-python always writes ``"configuration"``, even when empty, and so does this
module. Spec context: zarr-specs v3 core, "Codecs" / "Extension codecs".

Tested example configurations (each compared with zarr-python's ``zarr.json``)::

    {"name": "numcodecs.delta", "configuration": {"dtype": "float64", "astype": "float32"}}
    {"name": "numcodecs.fixedscaleoffset",
     "configuration": {"offset": 1, "scale": 10, "astype": "int16", "dtype": "float64"}}
    {"name": "numcodecs.zlib", "configuration": {"level": 3}}
    {"name": "numcodecs.shuffle", "configuration": {"elementsize": 8}}

Array → array: ``delta``, ``fixedscaleoffset``, ``quantize``, ``bitround``,
``astype``, ``packbits``. The numcodecs filters flatten their input; the
wrapper reshapes their output to the encoded spec (:meth:`resolve`: same shape,
dtype from ``astype`` / ``encode_dtype``; ``packbits``: ``(1 + ceil(n / 8),)``
``uint8``) and the decoded result to the chunk's shape.

Bytes → bytes: ``zlib``, ``bz2``, ``lzma``, ``lz4``, ``gzip``, ``zstd``,
``blosc``, ``shuffle`` and the checksums ``crc32``, ``adler32``,
``fletcher32``, ``jenkins_lookup3``, ``crc32c`` (a checksum mismatch raises
:class:`~zarrdask.errors.ChecksumError`). ``decode(..., out=)`` decodes, checks
the size and copies (numcodecs does not report how many bytes it wrote into a
given ``out``).

A numcodecs object is built once per wrapper (once per data type for a
configuration that is completed from the data type) and reused; the numcodecs
codecs listed here keep no state between calls, so wrappers are thread-safe.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numcodecs
import numpy as np
from numcodecs.abc import Codec as Numcodec

from ..errors import ChecksumError, CodecError, CorruptChunkError, UnknownCodecError
from ._buffers import byte_view, write_into
from .abc import ArrayArrayCodec, BytesBytesCodec, ChunkSpec

__all__ = [
    "PREFIX",
    "NumcodecsCodec",
    "NumcodecsArrayArrayCodec",
    "NumcodecsBytesBytesCodec",
    "NUMCODECS_V3",
    "from_numcodecs",
    # array -> array
    "Delta",
    "FixedScaleOffset",
    "Quantize",
    "BitRound",
    "AsType",
    "PackBits",
    # bytes -> bytes
    "Zlib",
    "BZ2",
    "LZMA",
    "LZ4",
    "GZip",
    "Zstd",
    "Blosc",
    "Shuffle",
    "CRC32",
    "Adler32",
    "Fletcher32",
    "JenkinsLookup3",
    "CRC32C",
]

PREFIX = "numcodecs."


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return str(np.dtype(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


class NumcodecsCodec:
    """Shared part of the wrappers: configuration, JSON, the cached numcodecs object.

    Subclasses set ``codec_id`` through the class keyword ``codec_id=...``,
    which also sets ``name = "numcodecs.<id>"``.
    """

    codec_id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    #: configuration fields completed from the chunk spec when missing
    spec_fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, codec_id: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if codec_id is not None:
            cls.codec_id = codec_id
            cls.name = PREFIX + codec_id

    def __init__(self, **configuration: Any) -> None:
        if not self.codec_id:
            raise TypeError("use a concrete numcodecs.<id> wrapper class")
        config = {k: _jsonable(v) for k, v in configuration.items()}
        given_id = config.pop("id", self.codec_id)
        if given_id != self.codec_id:
            raise CodecError(f"codec {self.name!r}: configuration 'id' is {given_id!r}, expected {self.codec_id!r}")
        self.config = config
        self._numcodecs: dict[tuple[Any, ...], Numcodec] = {}
        if not self._missing():
            self._numcodec(None)  # configuration errors surface now

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state["config"])  # type: ignore[misc]

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "NumcodecsCodec":
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

    def evolve(self, spec: ChunkSpec) -> "NumcodecsCodec":
        """This codec with the fields zarr-python fills from the data type set."""
        if not self._missing():
            return self
        return type(self)(**self._completed(spec))

    def _numcodec(self, spec: ChunkSpec | None) -> Numcodec:
        missing = self._missing()
        cache_key = tuple(self._spec_value(f, spec) for f in missing) if (missing and spec is not None) else ()
        codec = self._numcodecs.get(cache_key)
        if codec is None:
            config = self._completed(spec)
            try:
                codec = numcodecs.get_codec({"id": self.codec_id, **config})
            except ValueError as e:
                if "codec not available" in str(e):
                    raise UnknownCodecError(f"codec {self.name!r}: numcodecs has no codec {self.codec_id!r}") from None
                raise CodecError(f"codec {self.name!r}: invalid configuration {config}: {e}") from None
            except (TypeError, KeyError) as e:
                raise CodecError(f"codec {self.name!r}: invalid configuration {config}: {e}") from None
            self._numcodecs[cache_key] = codec  # a race only builds an equal object
        return codec


def _dtype(value: Any, codec: str, field: str) -> np.dtype:
    try:
        return np.dtype(value)
    except TypeError as e:
        raise CodecError(f"codec {codec!r}: configuration field {field!r} is not a data type: {value!r} ({e})") from None


class NumcodecsArrayArrayCodec(NumcodecsCodec, ArrayArrayCodec):
    """A numcodecs filter as an array → array codec."""

    #: configuration field that must equal the decoded data type, if given
    dtype_field: ClassVar[str | None] = None

    def _encoded_dtype(self, spec: ChunkSpec) -> np.dtype:
        return spec.dtype

    def _encoded_shape(self, spec: ChunkSpec) -> tuple[int, ...]:
        return tuple(spec.shape)

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec(self._encoded_shape(spec), self._encoded_dtype(spec), spec.fill_value, spec.order)

    def validate(self, spec: ChunkSpec) -> None:
        field = self.dtype_field
        if field is not None and self.config.get(field) is not None:
            declared = _dtype(self.config[field], self.name, field)
            if declared != spec.dtype:
                raise CodecError(
                    f"codec {self.name!r}: configuration field {field!r} is {self.config[field]!r}, "
                    f"but the chunk's data type is {spec.dtype}"
                )
        self._numcodec(spec)

    @staticmethod
    def _conform(arr: Any, shape: tuple[int, ...], dtype: np.dtype, what: str, name: str) -> np.ndarray:
        arr = np.asarray(arr)
        if arr.dtype != dtype:
            if arr.dtype.itemsize != dtype.itemsize:
                raise CorruptChunkError(f"codec {name!r}: {what} has data type {arr.dtype}, expected {dtype}")
            arr = arr.view(dtype)  # e.g. bitround returns its float input viewed as integers
        if arr.size != math.prod(shape):
            raise CorruptChunkError(f"codec {name!r}: {what} has {arr.size} elements, expected shape {shape}")
        return arr.reshape(shape)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        encoded = self._numcodec(spec).encode(np.ascontiguousarray(chunk))
        return self._conform(encoded, self._encoded_shape(spec), self._encoded_dtype(spec), "the encoded chunk", self.name)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        try:
            decoded = self._numcodec(spec).decode(np.ascontiguousarray(chunk))
        except (ValueError, RuntimeError, TypeError) as e:
            raise CorruptChunkError(f"codec {self.name!r} could not decode a chunk: {e}") from None
        return self._conform(decoded, tuple(spec.shape), spec.dtype, "the decoded chunk", self.name)


class _AstypeFilter(NumcodecsArrayArrayCodec):
    """Filters whose encoded dtype is ``astype`` (default: ``dtype``)."""

    spec_fields = ("dtype",)
    dtype_field = "dtype"

    def _encoded_dtype(self, spec: ChunkSpec) -> np.dtype:
        astype = self.config.get("astype")
        return _dtype(astype, self.name, "astype") if astype is not None else spec.dtype


class Delta(_AstypeFilter, codec_id="delta"):
    pass


class FixedScaleOffset(_AstypeFilter, codec_id="fixedscaleoffset"):
    pass


class Quantize(_AstypeFilter, codec_id="quantize"):
    pass


class BitRound(NumcodecsArrayArrayCodec, codec_id="bitround"):
    def validate(self, spec: ChunkSpec) -> None:
        if spec.dtype.kind != "f":
            raise CodecError(f"codec {self.name!r}: needs a floating-point data type, found {spec.dtype}")
        super().validate(spec)


class AsType(NumcodecsArrayArrayCodec, codec_id="astype"):
    spec_fields = ("decode_dtype",)
    dtype_field = "decode_dtype"

    def __init__(self, **configuration: Any) -> None:
        if configuration.get("encode_dtype") is None:
            raise CodecError("codec 'numcodecs.astype': configuration field 'encode_dtype' is required")
        super().__init__(**configuration)

    def _encoded_dtype(self, spec: ChunkSpec) -> np.dtype:
        return _dtype(self.config["encode_dtype"], self.name, "encode_dtype")


class PackBits(NumcodecsArrayArrayCodec, codec_id="packbits"):
    def _encoded_dtype(self, spec: ChunkSpec) -> np.dtype:
        return np.dtype("uint8")

    def _encoded_shape(self, spec: ChunkSpec) -> tuple[int, ...]:
        return (1 + math.ceil(math.prod(spec.shape) / 8),)

    def validate(self, spec: ChunkSpec) -> None:
        if spec.dtype != np.dtype(bool):
            raise CodecError(f"codec {self.name!r}: needs the bool data type, found {spec.dtype}")


class NumcodecsBytesBytesCodec(NumcodecsCodec, BytesBytesCodec):
    """A numcodecs compressor or checksum as a bytes → bytes codec."""

    #: checksum codecs: a decode failure is a checksum mismatch; 4 bytes added
    is_checksum: ClassVar[bool] = False

    def validate(self, spec: ChunkSpec) -> None:
        self._numcodec(spec)

    def encoded_size(self, decoded_size: int) -> int | None:
        return decoded_size + 4 if self.is_checksum else None

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes | memoryview:
        encoded = self._numcodec(spec).encode(byte_view(data))
        return encoded if isinstance(encoded, bytes) else byte_view(encoded)

    def decode(
        self, data: bytes | memoryview, spec: ChunkSpec, key: str = "", out: memoryview | None = None
    ) -> bytes | memoryview:
        codec = self._numcodec(spec)
        try:
            result = codec.decode(byte_view(data))
        except Exception as e:  # RuntimeError, ValueError, zlib.error, lzma.LZMAError, OSError, ...
            cls = ChecksumError if (self.is_checksum and isinstance(e, RuntimeError)) else CorruptChunkError
            raise cls(f"chunk {key!r}: codec {self.name!r} could not decode it: {e}") from None
        if out is None:
            return result if isinstance(result, bytes) else byte_view(result)
        return write_into(out, result, key=key, codec=self.name)


class Zlib(NumcodecsBytesBytesCodec, codec_id="zlib"):
    pass


class BZ2(NumcodecsBytesBytesCodec, codec_id="bz2"):
    pass


class LZMA(NumcodecsBytesBytesCodec, codec_id="lzma"):
    pass


class LZ4(NumcodecsBytesBytesCodec, codec_id="lz4"):
    pass


class GZip(NumcodecsBytesBytesCodec, codec_id="gzip"):
    pass


class Zstd(NumcodecsBytesBytesCodec, codec_id="zstd"):
    pass


class Blosc(NumcodecsBytesBytesCodec, codec_id="blosc"):
    pass


class Shuffle(NumcodecsBytesBytesCodec, codec_id="shuffle"):
    spec_fields = ("elementsize",)

    def _spec_value(self, field: str, spec: ChunkSpec) -> Any:
        return spec.dtype.itemsize


class _Checksum(NumcodecsBytesBytesCodec):
    is_checksum = True


class CRC32(_Checksum, codec_id="crc32"):
    pass


class Adler32(_Checksum, codec_id="adler32"):
    pass


class Fletcher32(_Checksum, codec_id="fletcher32"):
    pass


class JenkinsLookup3(_Checksum, codec_id="jenkins_lookup3"):
    pass


class CRC32C(_Checksum, codec_id="crc32c"):
    pass


#: ``numcodecs.<id>`` name → wrapper class
NUMCODECS_V3: dict[str, type[NumcodecsCodec]] = {
    cls.name: cls
    for cls in (
        Delta, FixedScaleOffset, Quantize, BitRound, AsType, PackBits,
        Zlib, BZ2, LZMA, LZ4, GZip, Zstd, Blosc, Shuffle,
        CRC32, Adler32, Fletcher32, JenkinsLookup3, CRC32C,
    )
}  # fmt: skip


def from_numcodecs(codec: Numcodec) -> NumcodecsCodec:
    """The ``numcodecs.<id>`` wrapper of a numcodecs codec object (its full
    ``get_config()`` becomes the configuration)."""
    config = dict(codec.get_config())
    codec_id = config.pop("id", getattr(codec, "codec_id", None))
    cls = NUMCODECS_V3.get(PREFIX + str(codec_id))
    if cls is None:
        raise UnknownCodecError(
            f"numcodecs codec {codec_id!r} has no Zarr v3 wrapper; known: {sorted(NUMCODECS_V3)}"
        )
    return cls(**config)
