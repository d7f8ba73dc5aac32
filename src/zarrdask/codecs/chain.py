"""The codec chain (zarr-specs v3 core, "Codecs": array→array codecs, then
exactly one array→bytes codec, then bytes→bytes codecs).

A :class:`CodecChain` is itself an :class:`~zarrdask.codecs.abc.ArrayBytesCodec`,
so the sharding codec's inner and index chains are plain chains, and a Zarr v2
array's filters + compressor are adapted into one (see
:mod:`zarrdask.codecs.numcodecs_v2`).

Decoding can write straight into the caller's buffer: when there are no
array→array codecs and the array→bytes codec can expose the target's memory as
its encoded bytes (:meth:`ArrayBytesCodec.raw_target`), the outermost
bytes→bytes codec decompresses directly into it.

A chain is a :class:`~zarrdask.codecs.abc.PartialDecode` codec that forwards
the capability where no codec is in the way: partial reads
(``partial_steps``) when the array→bytes codec is alone and has them
(``sharding_indexed``, ``bytes``); spans decoded from a whole chunk
(``decode_span``) when the chunk's elements are stored as they are and then
compressed by one codec that decodes byte ranges
(:class:`~zarrdask.codecs.abc.PartialBytesDecode`: ``blosc``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import CodecError, CorruptChunkError
from ..indexing.span import ElementSpan
from ..storage.readers import RangeReader
from .abc import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    BytesBytesCodec,
    ChunkSpec,
    Codec,
    PartialBytesDecode,
    PartialDecode,
    PartialSteps,
)
from .buffers import byte_view, scratch_array, size_error
from .elements import elements_dtype


def bounded_decode(
    codec: BytesBytesCodec,
    data: Any,
    spec: ChunkSpec,
    key: str,
    out: memoryview | None = None,
    size: int | None = None,
) -> Any:
    """``codec.decode`` kept to the decoded ``size`` (``len(out)`` with ``out``;
    ``None``: at most the ``max_chunk_bytes`` setting). A codec that does not
    take the bound (:attr:`~zarrdask.codecs.abc.BytesBytesCodec.bounded_decode`
    false) decodes unbounded and its result's size is checked after."""
    if codec.bounded_decode:
        return codec.decode(data, spec, key, out, size=size)
    result = codec.decode(data, spec, key, out)
    if out is None and size is not None and byte_view(result).nbytes != size:
        raise size_error(key, codec.name, byte_view(result).nbytes, size)
    return result


class _CodecList:
    """JSON, equality and repr of a codec list (``codecs``)."""

    codecs: tuple[Codec, ...]

    def to_json(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [c.to_json() for c in self.codecs]

    def get_config(self) -> dict[str, Any]:
        return {"codecs": self.to_json()}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.codecs == other.codecs  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.codecs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.codecs)!r})"


class CodecChain(_CodecList, PartialDecode, ArrayBytesCodec):
    """An ordered chain of codecs acting as one array→bytes codec."""

    name = "chain"

    def __init__(
        self,
        array_array: Sequence[ArrayArrayCodec],
        array_bytes: ArrayBytesCodec,
        bytes_bytes: Sequence[BytesBytesCodec],
    ) -> None:
        self.array_array = tuple(array_array)
        self.array_bytes = array_bytes
        self.bytes_bytes = tuple(bytes_bytes)
        #: per (shape, data type, order): whether a scratch array of it is decoded into as bytes
        self._raw_scratch: dict[tuple, bool] = {}

    @classmethod
    def from_codecs(
        cls, codecs: Sequence[Codec], *, key: str = "zarr.json", spec: ChunkSpec | None = None
    ) -> "CodecChain | PendingCodecChain":
        """Build a chain from codec objects, checking the order rules of v3 core.

        Codecs whose kind their JSON leaves open (``numcodecs.<id>``) are given one
        by their position (:func:`~zarrdask.codecs.chain_validate.assign_kinds`);
        with ``spec`` (the chain's decoded side) the chain is bound to it, every codec inside decided,
        down into a sharding codec's inner chain. Without ``spec``, a list whose
        array→bytes codec only the data type can tell gives a
        :class:`PendingCodecChain`.
        """
        from .chain_validate import assign_kinds, validate_chain

        kinded = assign_kinds(codecs, key=key, spec=spec)
        if kinded is None:
            return PendingCodecChain(codecs, key=key)
        aa, ab, bb = validate_chain(kinded, key=key)
        chain = cls(aa, ab, bb)
        return chain.bind(spec) if spec is not None else chain

    def bind(self, spec: ChunkSpec) -> "CodecChain":
        ab = self.array_bytes.bind(self.encoded_spec(spec))
        return self if ab is self.array_bytes else CodecChain(self.array_array, ab, self.bytes_bytes)  # type: ignore[arg-type]

    @property
    def codecs(self) -> tuple[Codec, ...]:  # type: ignore[override]
        return (*self.array_array, self.array_bytes, *self.bytes_bytes)

    def _specs(self, spec: ChunkSpec) -> list[ChunkSpec]:
        """Decoded-side specs of each array→array codec, then the array→bytes one."""
        specs = [spec]
        for codec in self.array_array:
            specs.append(codec.encoded_spec(specs[-1]))
        return specs

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return self._specs(spec)[-1]

    def validate(self, spec: ChunkSpec) -> None:
        specs = self._specs(spec)
        for codec, s in zip(self.array_array, specs):
            codec.validate(s)
        self.array_bytes.validate(specs[-1])
        for codec in self.bytes_bytes:
            codec.validate(specs[-1])

    # -- partial decoding (forwarded where no codec is in the way) ------------
    @property
    def _partial(self) -> PartialDecode | None:
        """The array→bytes codec when it reads parts of chunks and is alone."""
        ab = self.array_bytes
        return ab if isinstance(ab, PartialDecode) and not self.array_array and not self.bytes_bytes else None

    @property
    def supports_partial_decode(self) -> bool:  # type: ignore[override]
        return self._partial is not None

    def partial_steps(
        self, spec: ChunkSpec, proj: Any, key: str = "", max_bytes: int | None = None,
        out: np.ndarray | None = None,
    ) -> PartialSteps | None:
        partial = self._partial
        return None if partial is None else partial.partial_steps(spec, proj, key, max_bytes, out)

    def partial_bytes(self, spec: ChunkSpec, proj: Any, max_bytes: int | None = None) -> int:
        partial = self._partial
        return 2 * spec.nbytes if partial is None else partial.partial_bytes(spec, proj, max_bytes)

    def decode_partial(self, reader: RangeReader, spec: ChunkSpec, proj: Any, key: str = "") -> np.ndarray | None:
        partial = self._partial
        if partial is None:
            return super().decode_partial(reader, spec, proj, key)
        return partial.decode_partial(reader, spec, proj, key)

    def decode_span(self, data: Any, spec: ChunkSpec, span: ElementSpan, key: str = "") -> np.ndarray | None:
        """The span's elements (as their stored data type) when the chunk's
        elements are stored as they are, then compressed by one codec that
        decodes byte ranges (``blosc``); else ``None``."""
        bb = self.bytes_bytes
        if len(bb) != 1 or not isinstance(bb[0], PartialBytesDecode):
            return None
        stored = self._elements_dtype(spec)
        if stored is None:
            return None
        size = stored.itemsize
        raw = bb[0].decode_range(data, span.first * size, span.count * size, spec.nbytes, key)
        return None if raw is None else np.frombuffer(raw, dtype=stored, count=span.count)

    def encode_partial(
        self, old: Any, spec: ChunkSpec, proj: Any, value: np.ndarray, key: str = ""
    ) -> Any:
        if not self.array_array and not self.bytes_bytes:
            return self.array_bytes.encode_partial(old, spec, proj, value, key)
        return super().encode_partial(old, spec, proj, value, key)

    def complete(self, spec: ChunkSpec) -> "CodecChain":
        specs = self._specs(spec)
        aa = [c.complete(s) for c, s in zip(self.array_array, specs)]
        # re-resolve: an evolved array→array codec may change the next spec
        chain = CodecChain(aa, self.array_bytes, self.bytes_bytes)
        inner = chain.encoded_spec(spec)
        return CodecChain(aa, self.array_bytes.complete(inner), [c.complete(inner) for c in self.bytes_bytes])

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        size = self.array_bytes.encoded_size(self.encoded_spec(spec))
        for codec in self.bytes_bytes:
            if size is None:
                return None
            size = codec.encoded_size(size)
        return size

    # -- encode / decode ---------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes | memoryview:
        specs = self._specs(spec)
        for codec, s in zip(self.array_array, specs):
            chunk = codec.encode(chunk, s)
        data = self.array_bytes.encode(chunk, specs[-1])
        for codec in self.bytes_bytes:
            data = codec.encode(data, specs[-1])
        return data

    def _decoded_sizes(self, spec: ChunkSpec) -> list[int | None]:
        """The decoded size of each bytes→bytes codec (``spec`` is the array→bytes
        codec's decoded side): the array→bytes codec's encoded size, then each
        codec's encoded size of the one before; ``None`` where not fixed."""
        size = self.array_bytes.encoded_size(spec)
        sizes = []
        for codec in self.bytes_bytes:
            sizes.append(size)
            size = None if size is None else codec.encoded_size(size)
        return sizes

    def _decode_bytes(self, data: Any, spec: ChunkSpec, key: str, stop: int) -> Any:
        if len(self.bytes_bytes) > stop:
            sizes = self._decoded_sizes(spec)
            for i in range(len(self.bytes_bytes) - 1, stop - 1, -1):
                data = bounded_decode(self.bytes_bytes[i], data, spec, key, size=sizes[i])
        return data

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        specs = self._specs(spec)
        data = self._decode_bytes(data, specs[-1], key, 0)
        chunk = self.array_bytes.decode(data, specs[-1], key)
        for codec, s in zip(reversed(self.array_array), reversed(specs[:-1])):
            chunk = codec.decode(chunk, s)
        if chunk.shape != spec.shape:
            raise CorruptChunkError(
                f"chunk {key!r}: decoded to shape {chunk.shape}, expected {spec.shape}"
            )
        return chunk

    def decode_into(
        self, data: bytes | memoryview, spec: ChunkSpec, out: np.ndarray, key: str = ""
    ) -> None:
        """Decode into ``out`` (shape ``spec.shape``; it may be a strided view of a
        larger array) with as few copies as the codecs allow: straight into
        ``out``'s memory when it is contiguous, else into a reused scratch chunk
        copied into place."""
        ab = self.array_bytes
        if not self.array_array:
            target = ab.raw_target(out, spec)
            if target is not None:
                self._decode_raw(data, spec, target, key)
                return
            if spec.dtype.hasobject or not self.bytes_bytes:
                # a shard: decodes inner chunk by inner chunk; variable-length
                # elements: converted once, straight into `out`; uncompressed:
                # the array→bytes codec's decode is a view of `data` (or one
                # converted copy), copied into place once
                ab.decode_into(self._decode_bytes(data, spec, key, 0), spec, out, key)
                return
            scratch = scratch_array(spec.shape, spec.dtype, spec.order)
            with scratch as buf:
                if self._decodes_raw(spec, buf):
                    self._decode_raw(data, spec, scratch.raw, key)
                    out[...] = buf
                    return
        out[...] = self.decode(data, spec, key)

    def decode_pieces_into(self, source: Any, pieces: Sequence[tuple[int, int, np.ndarray]], spec: ChunkSpec,
                           key: str = "") -> None:
        """:meth:`decode_into` of every chunk ``(offset, nbytes, out)`` of
        ``pieces``, the bytes ``source[offset:offset + nbytes]`` (a shard's
        inner chunks, in this thread): the usual chunks decoded by the
        bytes→bytes codec's exact decoder (:meth:`~BytesBytesCodec.exact_decoder`)
        into one scratch chunk, set up once for them all, and copied into
        place; any other chunk, and any ``out`` contiguous enough to decode
        into directly, through :meth:`decode_into`. A chunk not wholly
        inside ``source`` is refused (:class:`~zarrdask.errors.CorruptChunkError`)."""
        codecs = self.bytes_bytes
        source = byte_view(source)
        if not self.array_array and len(codecs) == 1 and codecs[0].exact_decode and not spec.dtype.hasobject:
            scratch = scratch_array(spec.shape, spec.dtype, spec.order)
            with scratch as buf:
                exact = self._decodes_raw(spec, buf) and codecs[0].exact_decoder(source, scratch.raw)
                if exact:
                    rest = []
                    for piece in pieces:
                        if piece[2].flags.c_contiguous or not exact(piece[0], piece[1]):
                            rest.append(piece)
                        else:
                            piece[2][...] = buf
                    pieces = rest
            # the rest once the scratch chunk is given back: the long way
            # bounds a chunk's decoding by the memory of one chunk
        for offset, nbytes, out in pieces:
            if offset < 0 or offset + nbytes > source.nbytes:
                raise CorruptChunkError(
                    f"chunk {key!r}: bytes {offset}..{offset + nbytes} are past the end of "
                    f"the {source.nbytes} bytes it is read from"
                )
            self.decode_into(source[offset:offset + nbytes], spec, out, key)

    def _decodes_raw(self, spec: ChunkSpec, buf: np.ndarray) -> bool:
        """Whether the array→bytes codec decodes into the scratch array
        ``buf`` of ``spec`` as its bytes (:meth:`~ArrayBytesCodec.raw_target`),
        asked once per shape, data type and order."""
        key = (tuple(spec.shape), spec.dtype, spec.order)
        raw = self._raw_scratch.get(key)
        if raw is None:
            raw = self._raw_scratch[key] = self.array_bytes.raw_target(buf, spec) is not None
        return raw

    def raw_dtype(self, spec: ChunkSpec) -> np.dtype | None:
        """The data type a stored chunk's bytes are, element by element in C
        order, when they are exactly that (the array→bytes codec alone, and it
        stores elements as they are; the byte order may differ from
        ``spec.dtype``'s); else ``None``. Lets a store read them straight into
        the output (capability ``in_place_reads``)."""
        return None if self.bytes_bytes else self._elements_dtype(spec)

    def _elements_dtype(self, spec: ChunkSpec) -> np.dtype | None:
        """The data type the array→bytes codec stores a C-order chunk's elements
        as, one after another, before any bytes→bytes codec; else ``None``."""
        return None if self.array_array else elements_dtype(self.array_bytes, spec)

    def decode_to_bytes(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> Any:
        """The array→bytes codec's encoded form of a stored chunk: ``data`` with
        the bytes→bytes codecs decoded (``data`` itself when there are none).
        Lets a reader look at the serializer's layout directly (Arrow views of
        ``zarrdask.vlen-offsets`` chunks)."""
        return self._decode_bytes(data, self.encoded_spec(spec), key, 0)

    def _decode_raw(self, data: Any, spec: ChunkSpec, target: memoryview, key: str) -> None:
        """Decode the bytes→bytes codecs, the outermost straight into ``target``
        (the usual chunk of a lone codec with :meth:`~BytesBytesCodec.decode_exact`
        through it, anything else the long way, which says what is wrong)."""
        codecs = self.bytes_bytes
        if len(codecs) == 1 and codecs[0].exact_decode and codecs[0].decode_exact(data, target):
            return
        data = self._decode_bytes(data, spec, key, 1)
        if codecs:
            bounded_decode(codecs[0], data, spec, key, out=target)
            return
        if len(data) != len(target):
            raise CorruptChunkError(
                f"chunk {key!r}: holds {len(data)} bytes, expected {len(target)}"
            )
        target[:] = data


class PendingCodecChain(_CodecList, ArrayBytesCodec):
    """A codec list whose array→bytes codec is one of several ``numcodecs.<id>``
    codecs, decided only with the chunk's data type (a sharding codec's inner
    codecs read before the array's data type is known). :meth:`bind` makes the
    :class:`CodecChain`; an array places its codecs when it is opened, so
    encoding and decoding never see this class."""

    name = "chain"

    def __init__(self, codecs: Sequence[Codec], *, key: str = "zarr.json") -> None:
        self.pending = tuple(codecs)
        self.key = key

    @property
    def codecs(self) -> tuple[Codec, ...]:  # type: ignore[override]
        return self.pending

    def bind(self, spec: ChunkSpec) -> CodecChain:
        return CodecChain.from_codecs(self.pending, key=self.key, spec=spec)  # type: ignore[return-value]

    def validate(self, spec: ChunkSpec) -> None:
        self.bind(spec).validate(spec)

    def complete(self, spec: ChunkSpec) -> CodecChain:
        return self.bind(spec).complete(spec)

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return self.bind(spec).encoded_spec(spec)

    def _unbound(self, *args: Any, **kwargs: Any) -> Any:
        raise CodecError(
            f"{self.key}: the codecs {[c.name for c in self.pending]} are not bound yet; "
            "call bind(spec) with the chunk spec first"
        )

    encode = decode = decode_into = encode_partial = encoded_size = raw_target = _unbound  # type: ignore[assignment]
