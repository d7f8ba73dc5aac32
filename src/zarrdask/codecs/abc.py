"""The codec model (zarr-specs v3 core, "Codecs").

A codec is one of three kinds:

* :class:`ArrayArrayCodec` — array → array (``transpose``, numcodecs filters);
* :class:`ArrayBytesCodec` — array → bytes (``bytes``, ``sharding_indexed``);
* :class:`BytesBytesCodec` — bytes → bytes (``gzip``, ``zstd``, ``blosc``, ``crc32c``).

A codec object is a *codec spec*: built from its JSON configuration
(``from_config``), it holds only that configuration. It is *bound* to a
:class:`ChunkSpec` (the decoded side: shape, dtype, fill value) in one
vocabulary:

* ``encoded_spec(spec)`` — the chunk spec on the encoded side (``transpose``
  permutes the shape);
* ``complete(spec)`` — the codec spec with the settings the chunk spec
  decides filled in (blosc ``typesize``): what new metadata records;
* ``bind(spec)`` — the codec bound to chunks of ``spec``, ready to run: the
  kinds of the codecs it contains decided (a :class:`KindlessCodec`, whose
  JSON does not state its kind, becomes one with ``as_kind(kind)``).

Every encode / decode call receives the decoded side's spec, so the same codec
object serves every chunk of an array. A
:class:`~zarrdask.codecs.chain.CodecChain` is itself an array → bytes codec.
The former names ``resolve``, ``evolve``, ``place``, ``placed``,
``UnplacedCodec`` remain as deprecated aliases; a codec class that overrides
an old name is bound under the new one (with a ``DeprecationWarning``).

Codecs must pickle (dask ships them to workers) and be thread-safe: the chunk
engine calls them from a thread pool.

Partial decoding is a declared capability, checked once per read
(``isinstance``), never discovered:

* :class:`PartialDecode` — an array→bytes codec that reads or decodes part of
  a stored chunk: ``partial_steps`` (a read through byte ranges, in steps:
  ``sharding_indexed`` reads its index, then the inner chunks needed; the
  ``bytes`` codec the span of elements a small selection needs) and
  ``decode_span`` (the elements of a span, from the whole stored chunk). A
  :class:`~zarrdask.codecs.chain.CodecChain` forwards them where no other
  codec is in the way.
* :class:`PartialBytesDecode` — a bytes→bytes codec that decodes a byte range
  of its output without decoding the rest (``blosc``).

Every array→bytes codec decodes into a caller's buffer
(:meth:`ArrayBytesCodec.decode_into`; the default decodes, then copies).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generator

import numpy as np

from ..errors import CorruptChunkError
from ..indexing.span import ElementSpan
from ..storage.byte_range import OffsetRequest
from ..storage.readers import RangeReader

if TYPE_CHECKING:
    from ..indexing import ChunkProjection
    from ..storage.byte_range import ByteRequest

#: a partial read of one stored chunk, in steps: the generator yields the byte
#: ranges it needs next, is sent their bytes (``None``: the chunk is missing)
#: and returns the part of the chunk it read (``None``: missing)
PartialSteps = Generator["list[ByteRequest]", "list[bytes] | None", "np.ndarray | None"]


def _same_object(value: Any, fill_value: Any) -> bool:
    """``value == fill_value`` for one element of an object array (arrays compare whole)."""
    if isinstance(value, np.ndarray) or isinstance(fill_value, np.ndarray):
        return isinstance(value, np.ndarray) and isinstance(fill_value, np.ndarray) and np.array_equal(value, fill_value)
    try:
        return bool(value == fill_value)
    except (TypeError, ValueError):
        return False


def is_fill(chunk: np.ndarray, fill_value: Any) -> bool:
    """Whether every element of ``chunk`` equals ``fill_value``; floating-point and
    complex elements by their bits, so that a chunk left out reads back exactly
    (a NaN's payload, the sign of zero, which part of a complex number is NaN).

    Most chunks differ from the fill value in their first element, so that is
    looked at before the whole chunk is compared.
    """
    if chunk.size == 0:
        return True
    if chunk.dtype.hasobject:  # bytes, or any objects (json2, vlen-array: arrays)
        return all(_same_object(v, fill_value) for v in chunk.reshape(-1))
    fill = np.asarray(fill_value, dtype=chunk.dtype)
    if chunk.dtype.kind in "fc" and chunk.dtype.itemsize in (1, 2, 4, 8, 16):
        return _same_bits(chunk, fill)
    if chunk.dtype.kind == "V":
        fill_bytes = fill.tobytes()
        if chunk.reshape(-1)[:1].tobytes() != fill_bytes:
            return False
        return np.ascontiguousarray(chunk).tobytes() == fill_bytes * chunk.size
    first = chunk.reshape(-1)[0] if chunk.flags.contiguous else chunk[(0,) * chunk.ndim]
    if chunk.dtype.kind in "mM" and np.isnat(fill):
        return bool(np.isnat(first)) and bool(np.isnat(chunk).all())
    nan_fill = chunk.dtype.kind in "fc" and bool(np.isnan(fill))  # long doubles: by value
    if nan_fill:
        if not np.isnan(first):
            return False
        if chunk.dtype.kind == "f":
            return bool(np.isnan(chunk).all())
        return bool(np.array_equal(chunk, np.broadcast_to(fill, chunk.shape), equal_nan=True))
    if first != fill:
        return False
    return not bool((chunk != fill).any())


def _same_bits(chunk: np.ndarray, fill: np.ndarray) -> bool:
    """Whether every element of the float or complex ``chunk`` has the bits of ``fill``."""
    size = chunk.dtype.itemsize
    unit = np.dtype(f"u{min(size, 8)}")  # complex128: two 8-byte halves
    want = fill.reshape(1).view(unit)
    first = chunk.reshape(-1)[:1] if chunk.flags.c_contiguous else chunk[(0,) * chunk.ndim].reshape(1)
    if not np.array_equal(np.ascontiguousarray(first).view(unit), want):
        return False
    bits = np.ascontiguousarray(chunk).reshape(-1).view(unit).reshape(-1, want.size)
    return bool((bits == want).all())


@dataclass(frozen=True)
class ChunkSpec:
    """What a chunk looks like on the decoded side of a codec.

    ``order`` is the memory layout of the decoded chunk: always ``"C"`` in v3,
    the array's ``order`` in v2. ``write_empty``: store chunks (and inner chunks
    of shards) that equal the fill value everywhere; otherwise they are left out.
    ``read_missing``: an inner chunk a shard does not hold (an empty index
    entry) reads as the fill value; otherwise a codec holding inner chunks
    (``sharding_indexed``) raises :class:`~zarrdask.errors.ChunkNotFoundError`
    listing them (strict reads, the array option ``read_missing_chunks``).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    order: str = "C"
    write_empty: bool = False
    read_missing: bool = True

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def with_shape(self, shape: tuple[int, ...]) -> "ChunkSpec":
        return ChunkSpec(tuple(shape), self.dtype, self.fill_value, self.order, self.write_empty, self.read_missing)


#: the former names of the codec verbs (deprecated aliases of the new ones)
_RENAMED = {"resolve": "encoded_spec", "evolve": "complete", "place": "bind"}


def _alias(old: str, new: str) -> Any:
    """A deprecated method ``old`` calling ``new``."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"{type(self).__name__}.{old}() is deprecated: use {new}()", DeprecationWarning, stacklevel=2)
        return getattr(self, new)(*args, **kwargs)

    method.__name__ = old
    method.__doc__ = f"Deprecated: :meth:`{new}`."
    method._alias = True  # type: ignore[attr-defined]
    return method


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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for old, new in _RENAMED.items():  # a codec written against the former names
            if old in cls.__dict__ and new not in cls.__dict__ and not getattr(cls.__dict__[old], "_alias", False):
                warnings.warn(f"{cls.__qualname__}.{old}() is deprecated: define {new}() instead",
                              DeprecationWarning, stacklevel=2)
                setattr(cls, new, cls.__dict__[old])

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        """Spec of the encoded side, given the decoded side (identity by default)."""
        return spec

    def validate(self, spec: ChunkSpec) -> None:
        """Raise :class:`~zarrdask.errors.CodecError` if the codec cannot handle ``spec``."""

    def complete(self, spec: ChunkSpec) -> "Codec":
        """This codec spec with the settings that depend on the data type
        filled in (blosc ``typesize``, ``bytes`` without ``endian`` for 1-byte
        types, ...): what is recorded in new array metadata. ``spec`` is the
        codec's decoded side."""
        return self

    def bind(self, spec: ChunkSpec) -> "Codec":
        """This codec bound to chunks of ``spec``: the kinds of the codecs it
        contains decided (see :class:`KindlessCodec`); only codecs holding a
        codec list (a chain, ``sharding_indexed``) change."""
        return self

    resolve = _alias("resolve", "encoded_spec")
    evolve = _alias("evolve", "complete")
    place = _alias("place", "bind")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_json() == other.to_json()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.to_json())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_config()})"


class KindlessCodec(Codec):
    """A codec whose JSON does not state its kind (``numcodecs.<id>``): its
    position in a codec list decides it
    (:func:`~zarrdask.codecs.chain_validate.assign_kinds`)."""

    kind: ClassVar[str] = "kindless"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "placed" in cls.__dict__ and "as_kind" not in cls.__dict__:
            warnings.warn(f"{cls.__qualname__}.placed() is deprecated: define as_kind() instead",
                          DeprecationWarning, stacklevel=2)
            cls.as_kind = cls.__dict__["placed"]  # type: ignore[method-assign]
        super().__init_subclass__(**kwargs)

    def as_kind(self, kind: str) -> Codec:
        """This codec as a codec of ``kind`` (``"array_array"``, ...)."""
        raise NotImplementedError

    placed = _alias("placed", "as_kind")

    def probe_kind(self, spec: ChunkSpec) -> str:
        """The kind this codec acts as on chunks of ``spec`` (used only where the
        position leaves it open)."""
        raise NotImplementedError


#: deprecated name of :class:`KindlessCodec`
UnplacedCodec = KindlessCodec


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

    def decode_into(self, data: bytes | memoryview, spec: ChunkSpec, out: np.ndarray, key: str = "") -> None:
        """Decode ``data`` into ``out`` (of ``spec``'s shape; it may be a
        strided view of a larger array). This default decodes, then copies;
        codecs that can do better (the chain decompressing straight into
        ``out``, a shard decoding inner chunk by inner chunk) override it."""
        chunk = self.decode(data, spec, key)
        if chunk.shape != tuple(spec.shape):
            raise CorruptChunkError(f"chunk {key!r}: decoded to shape {chunk.shape}, expected {spec.shape}")
        out[...] = chunk

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

    @property
    def supports_partial_decode(self) -> bool:
        """Whether the codec reads part of a stored chunk (:class:`PartialDecode`)."""
        return isinstance(self, PartialDecode)

    def decode_partial(
        self, reader: RangeReader, spec: ChunkSpec, proj: "ChunkProjection", key: str = ""
    ) -> np.ndarray | None:
        """The part of a chunk that ``proj`` selects, read through ``reader``:
        for :class:`PartialDecode` codecs only."""
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
    #: the codec has :meth:`decode_exact`
    exact_decode: ClassVar[bool] = False

    def decode_exact(self, data: Any, target: memoryview) -> bool:
        """Decode ``data`` into the writable byte buffer ``target`` if it is the
        usual chunk, which decodes to exactly ``target``'s size with no
        question asked on the way, and say whether it did; ``False`` (with
        ``target`` written or not) for anything else, which the caller then
        decodes with :meth:`decode`, which says what is wrong. A shortcut
        for the chunks of a read, each a few microseconds of Python less
        (codecs with :attr:`exact_decode`)."""
        return False

    def exact_decoder(self, source: memoryview, target: memoryview) -> Callable[[int, int], bool] | None:
        """:meth:`decode_exact` for many chunks lying in one buffer, all
        decoded into the same ``target``: a function of a chunk's ``offset``
        and ``nbytes`` in the flat byte buffer ``source`` that decodes it into
        ``target`` and says whether it did (``False`` too for a chunk not
        wholly inside ``source``), for use on this thread while both buffers
        are held; ``None`` when the codec has no shortcut. A codec may set up
        once here what each call would otherwise repeat."""
        if not self.exact_decode:
            return None
        end = source.nbytes

        def exact(offset: int, nbytes: int) -> bool:
            return 0 <= offset and offset + nbytes <= end and self.decode_exact(source[offset:offset + nbytes], target)

        return exact

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


class PartialDecode:
    """Capability of an array→bytes codec: reading or decoding only part of a
    stored chunk (zarrs' partial decoders; zarr-python's partial-decode mixin).

    The chunk engine checks it once per read (``isinstance``). A chunk a
    selection covers only in part is read with :meth:`partial_steps` when the
    codec gives steps for it; otherwise it is fetched whole, and decoded with
    :meth:`decode_span` when that gives the elements needed.
    """

    def partial_steps(
        self, spec: ChunkSpec, proj: "ChunkProjection", key: str = "", max_bytes: int | None = None,
        out: np.ndarray | None = None,
    ) -> PartialSteps | None:
        """The read of ``proj``'s part of a stored chunk of ``spec`` through byte
        ranges, as steps (:data:`PartialSteps`): the generator returns what
        ``proj.select`` gives for the whole chunk (its data type may be the
        stored one, in another byte order), or ``None`` for a missing chunk;
        errors name ``key``. ``None`` instead of steps: this projection is read
        no cheaper in part (read the whole chunk). A caller reading many
        chunks runs every chunk's first step as one batch, then every second
        step, so the round trips do not add up. ``max_bytes``: a codec that
        can splits the ranges of a step into more steps of at most about that
        many bytes each (:meth:`partial_bytes` says what it then holds).
        ``out``: an array of the result's shape and the chunk's data type a
        codec that can decodes the part straight into (and returns)."""
        return None

    def partial_bytes(self, spec: ChunkSpec, proj: "ChunkProjection", max_bytes: int | None = None) -> int:
        """An upper bound of the bytes the steps of :meth:`partial_steps` hold
        at once besides their result (byte ranges read, chunks decoded), for
        data that does not compress; by default a whole chunk's stored and
        decoded bytes."""
        return 2 * spec.nbytes

    def decode_span(self, data: Any, spec: ChunkSpec, span: "ElementSpan", key: str = "") -> np.ndarray | None:
        """The elements of ``span`` (C order) of the whole stored chunk
        ``data``, decoding only what they need, as the data type they are
        stored in; ``None`` when the codec cannot (decode the whole chunk)."""
        return None

    def decode_selection(
        self, data: Any, spec: ChunkSpec, proj: "ChunkProjection", key: str = ""
    ) -> np.ndarray | None:
        """What ``proj`` selects of the whole stored chunk ``data`` (as
        ``proj.select`` gives it), decoding only the span of elements it needs
        (:meth:`decode_span`); ``None`` for a selection without such a span
        (index arrays, more than half the chunk) or a codec that cannot."""
        span = ElementSpan.of(proj, spec.shape)
        elements = None if span is None else self.decode_span(data, spec, span, key)
        return None if elements is None else span.select(elements)  # type: ignore[union-attr]

    def decode_partial(
        self, reader: RangeReader, spec: ChunkSpec, proj: "ChunkProjection", key: str = ""
    ) -> np.ndarray | None:
        """The part of a chunk that ``proj`` selects (what ``proj.select`` gives
        for the whole chunk), read through ``reader`` (``None`` if the chunk is
        missing): :meth:`partial_steps` run against one reader, or the whole
        chunk read and decoded where there are no steps."""
        steps = self.partial_steps(spec, proj, key)
        if steps is None:
            got = reader.read([OffsetRequest(0)])
            return None if got is None else proj.select(self.decode(got[0], spec, key))  # type: ignore[attr-defined]
        return run_steps(steps, reader)


def run_steps(steps: PartialSteps, reader: RangeReader) -> np.ndarray | None:
    """Run a partial read (:data:`PartialSteps`) against one reader."""
    try:
        requests = next(steps)
        while True:
            requests = steps.send(reader.read(requests))
    except StopIteration as done:
        return done.value


class PartialBytesDecode:
    """Capability of a bytes→bytes codec: decoding a byte range of its output
    without decoding the rest (``blosc``: only the blocks the range lies in)."""

    def decode_range(self, data: Any, start: int, length: int, size: int, key: str) -> Any:
        """Bytes ``start`` to ``start + length`` of the ``size`` bytes ``data``
        decodes to, or ``None`` when it cannot be done here (then decode it
        whole, which reports anything wrong with it)."""
        raise NotImplementedError


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
