"""The codec model (zarr-specs v3 core, "Codecs").

A codec is one of three kinds:

* :class:`ArrayArrayCodec` — array → array (``transpose``, numcodecs filters);
* :class:`ArrayBytesCodec` — array → bytes (``bytes``, ``sharding_indexed``);
* :class:`BytesBytesCodec` — bytes → bytes (``gzip``, ``zstd``, ``blosc``, ``crc32c``).

A codec object is built from its JSON configuration (``from_config``) and holds
only that configuration. Every encode / decode call receives the
:class:`ChunkSpec` of the *decoded* side (shape, dtype, fill value), so the same
codec object serves every chunk of an array; ``resolve`` maps a decoded-side spec
to the encoded-side one (``transpose`` permutes the shape). A
:class:`~zarrdask.codecs.chain.CodecChain` is itself an array → bytes codec.

Codecs must pickle (dask ships them to workers) and be thread-safe: the chunk
engine calls them from a thread pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from ..indexing import ChunkProjection
    from ..storage.byte_range import ByteRequest


def _same_object(value: Any, fill_value: Any) -> bool:
    """``value == fill_value`` for one element of an object array (arrays compare whole)."""
    if isinstance(value, np.ndarray) or isinstance(fill_value, np.ndarray):
        return isinstance(value, np.ndarray) and isinstance(fill_value, np.ndarray) and np.array_equal(value, fill_value)
    try:
        return bool(value == fill_value)
    except (TypeError, ValueError):
        return False


def is_fill(chunk: np.ndarray, fill_value: Any) -> bool:
    """Whether every element of ``chunk`` equals ``fill_value`` (NaN equals NaN).

    Most chunks differ from the fill value in their first element, so that is
    looked at before the whole chunk is compared.
    """
    if chunk.size == 0:
        return True
    if chunk.dtype.hasobject:  # bytes, or any objects (json2, vlen-array: arrays)
        return all(_same_object(v, fill_value) for v in chunk.reshape(-1))
    fill = np.asarray(fill_value, dtype=chunk.dtype)
    if chunk.dtype.kind == "V":
        fill_bytes = fill.tobytes()
        if chunk.reshape(-1)[:1].tobytes() != fill_bytes:
            return False
        return np.ascontiguousarray(chunk).tobytes() == fill_bytes * chunk.size
    first = chunk.reshape(-1)[0] if chunk.flags.contiguous else chunk[(0,) * chunk.ndim]
    if chunk.dtype.kind in "mM" and np.isnat(fill):
        return bool(np.isnat(first)) and bool(np.isnat(chunk).all())
    nan_fill = chunk.dtype.kind in "fc" and bool(np.isnan(fill))
    if nan_fill:
        if not np.isnan(first):
            return False
        if chunk.dtype.kind == "f":
            return bool(np.isnan(chunk).all())
        return bool(np.array_equal(chunk, np.broadcast_to(fill, chunk.shape), equal_nan=True))
    if first != fill:
        return False
    return not bool((chunk != fill).any())


class RangeReader:
    """Byte ranges of one stored value (a store key, or a part of another value).

    ``read(ranges)`` returns the ranges in order, or ``None`` if the value is missing.
    """

    def read(self, ranges: "list[ByteRequest]") -> list[bytes] | None:
        raise NotImplementedError


@dataclass(frozen=True)
class ChunkSpec:
    """What a chunk looks like on the decoded side of a codec.

    ``order`` is the memory layout of the decoded chunk: always ``"C"`` in v3,
    the array's ``order`` in v2. ``write_empty``: store chunks (and inner chunks
    of shards) that equal the fill value everywhere; otherwise they are left out.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    order: str = "C"
    write_empty: bool = False

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def with_shape(self, shape: tuple[int, ...]) -> "ChunkSpec":
        return ChunkSpec(tuple(shape), self.dtype, self.fill_value, self.order, self.write_empty)


class Codec:
    """Common part of the three codec kinds."""

    #: the name in ``{"name": ..., "configuration": ...}``
    name: ClassVar[str] = ""
    #: one of ``"array_array"``, ``"array_bytes"``, ``"bytes_bytes"``
    kind: ClassVar[str] = ""

    @classmethod
    def from_config(cls, configuration: dict[str, Any]) -> "Codec":
        """Build the codec from the ``configuration`` object of its JSON."""
        return cls(**configuration)

    def get_config(self) -> dict[str, Any]:
        """The ``configuration`` object (may be empty)."""
        return {}

    def to_json(self) -> dict[str, Any]:
        """``{"name": ..., "configuration": ...}`` as written into ``zarr.json``."""
        config = self.get_config()
        return {"name": self.name, "configuration": config} if config else {"name": self.name}

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """Spec of the encoded side, given the decoded side (identity by default)."""
        return spec

    def validate(self, spec: ChunkSpec) -> None:
        """Raise :class:`~zarrdask.errors.CodecError` if the codec cannot handle ``spec``."""

    def evolve(self, spec: ChunkSpec) -> "Codec":
        """This codec with the settings that depend on the data type filled in
        (blosc ``typesize``, ``bytes`` without ``endian`` for 1-byte types, ...):
        what is recorded in new array metadata. ``spec`` is the codec's decoded side."""
        return self

    def place(self, spec: ChunkSpec) -> "Codec":
        """This codec with the kinds of the codecs it contains decided for
        chunks of ``spec`` (see :class:`UnplacedCodec`); only codecs holding a
        codec list (a chain, ``sharding_indexed``) change."""
        return self

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_json() == other.to_json()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.to_json())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"


class UnplacedCodec(Codec):
    """A codec whose JSON does not state its kind (``numcodecs.<id>``): its
    position in a codec list decides it
    (:func:`~zarrdask.codecs.chain_validate.place_codecs`)."""

    kind: ClassVar[str] = "unplaced"

    def placed(self, kind: str) -> Codec:
        """This codec as a codec of ``kind`` (``"array_array"``, ...)."""
        raise NotImplementedError

    def probe_kind(self, spec: ChunkSpec) -> str:
        """The kind this codec acts as on chunks of ``spec`` (used only where the
        position leaves it open)."""
        raise NotImplementedError


class ArrayArrayCodec(Codec):
    kind: ClassVar[str] = "array_array"

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        raise NotImplementedError

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        """Inverse of ``encode``; ``spec`` is the decoded side's spec."""
        raise NotImplementedError


class ArrayBytesCodec(Codec):
    kind: ClassVar[str] = "array_bytes"

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes | memoryview:
        raise NotImplementedError

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        """Decode ``data`` into an array of ``spec.shape`` / ``spec.dtype``.

        ``key`` is the store key of the chunk, used in error messages only.
        Errors are :class:`~zarrdask.errors.CorruptChunkError` naming ``key``.
        """
        raise NotImplementedError

    def raw_target(self, out: np.ndarray, spec: ChunkSpec) -> memoryview | None:
        """A writable byte view of ``out`` whose bytes are exactly this codec's
        encoding of ``out``, or ``None`` if there is none.

        Lets the chain decompress straight into the caller's buffer: for the
        ``bytes`` codec with native endianness and a contiguous ``out`` this is
        ``out``'s memory itself.
        """
        return None

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        """Size of every encoding of a chunk of ``spec``, if fixed (else ``None``)."""
        return None

    def raw_dtype(self, spec: ChunkSpec) -> np.dtype | None:
        """The data type of the elements this codec stores a chunk of ``spec``
        as, one after another in ``spec.order`` with nothing else, when it does
        (the ``bytes`` codec; v2 arrays without filters); else ``None``."""
        return None

    #: ``decode_partial`` reads only part of a stored chunk (sharding)
    supports_partial_decode: ClassVar[bool] = False

    def decode_partial(
        self, reader: RangeReader, spec: ChunkSpec, proj: "ChunkProjection", key: str = ""
    ) -> np.ndarray | None:
        """The part of a chunk that ``proj`` selects (what ``proj.select`` gives for
        the whole chunk), read through ``reader`` (``None`` if the chunk is missing). Only for codecs that set
        :attr:`supports_partial_decode`."""
        raise TypeError(f"codec {self.name!r} cannot decode part of a chunk")

    def encode_partial(
        self,
        old: bytes | None,
        spec: ChunkSpec,
        proj: "ChunkProjection",
        value: np.ndarray,
        key: str = "",
    ) -> bytes | memoryview | None:
        """The new encoding of a stored chunk (``old``, or ``None`` if missing)
        after writing ``value`` at ``proj``'s selection; ``None`` when the result
        is all fill value and ``spec.write_empty`` is false (the chunk is deleted).

        This default decodes the whole chunk, updates it and encodes it again.
        """
        if old is None:
            chunk = np.full(spec.shape, spec.fill_value, dtype=spec.dtype, order=spec.order)
        else:
            chunk = self.decode(old, spec, key)
            if not chunk.flags.writeable:
                chunk = chunk.copy(order="K")
        proj.assign(chunk, value)
        if not spec.write_empty and is_fill(chunk, spec.fill_value):
            return None
        return self.encode(chunk, spec)


class BytesBytesCodec(Codec):
    kind: ClassVar[str] = "bytes_bytes"

    #: ``decode`` takes the keyword ``size`` and keeps to it (bounded decoding,
    #: :mod:`zarrdask.codecs.bounded`); a codec without it (a third-party one
    #: written before) is called without ``size`` and its result checked after
    bounded_decode: ClassVar[bool] = False

    def numcodecs_config(self) -> dict[str, Any] | None:
        """The configuration (``{"id": ...}``) of the numcodecs compressor that
        writes the same bytes, for a Zarr v2 array given this codec; ``None``
        (the default) when numcodecs has none."""
        return None

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes | memoryview:
        raise NotImplementedError

    def decode(
        self,
        data: bytes | memoryview,
        spec: ChunkSpec,
        key: str = "",
        out: memoryview | None = None,
        *,
        size: int | None = None,
    ) -> bytes | memoryview:
        """Decode ``data``; when ``out`` (a writable buffer of the exact decoded
        size) is given, the result is written into it and ``out`` is returned.

        ``size`` is the exact decoded size when the codec chain knows it (the
        encoded size of a fixed-size chunk), else ``None``: then at most
        ``zarrdask.config.get("max_chunk_bytes")`` bytes. A codec that sets
        :attr:`bounded_decode` refuses data that would decode to anything else
        with a :class:`~zarrdask.errors.CorruptChunkError` — before decoding it
        where a header declares the size, else at the first byte past the
        limit — and never allocates much more than the limit.
        """
        raise NotImplementedError

    def encoded_size(self, decoded_size: int) -> int | None:
        """Encoded size for a decoded size, if fixed (``crc32c``: +4; compressors: None)."""
        return None


def update_chunk(
    codec: ArrayBytesCodec,
    old: bytes | None,
    spec: ChunkSpec,
    proj: "ChunkProjection",
    value: np.ndarray,
    key: str = "",
) -> bytes | memoryview | None:
    """Encode a chunk after writing ``value`` at ``proj``: a chunk the write covers
    completely is encoded without looking at ``old``; a partly covered one goes
    through :meth:`ArrayBytesCodec.encode_partial`. ``None``: the chunk is all
    fill value (and ``spec.write_empty`` is false), so it is not stored."""
    if not proj.is_complete:
        if value.ndim == 0 and value.dtype.hasobject:
            # strings / bytes: assigning a 0-d object array to one element would
            # store the array itself, not the str / bytes it holds
            value = value[()]
        return codec.encode_partial(old, spec, proj, value, key)
    if value.shape == spec.shape and proj.pre_selection is None:
        chunk = value  # written whole: no copy
    else:  # an edge chunk: the overhang is fill
        chunk = np.full(spec.shape, spec.fill_value, dtype=spec.dtype, order=spec.order)
        proj.assign(chunk, value)
    if not spec.write_empty and is_fill(chunk, spec.fill_value):
        return None
    return codec.encode(chunk, spec)
