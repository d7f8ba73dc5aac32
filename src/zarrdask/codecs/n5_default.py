"""The ``n5_default`` codec: array → bytes, N5 blocks in "default" mode.

Spec: zarr-extensions ``codecs/n5_default`` ("Configuration parameters",
"Procedure" / "Decoding", "Chunk grid", "Limitations", "Header format").

Name: ``n5_default``. Tested example configuration (the README's, for a 2-d array)::

    {"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "zstd", "configuration": {"level": 0, "checksum": false}}]}}

``configuration.codecs`` (the only field, required) is a codec chain of 2 or 3
codecs, each rule a :class:`~zarrdask.errors.CodecError`: a ``transpose`` whose
``order`` is the full reversal ``[N-1, ..., 0]`` (N = the chunk's rank), a
``bytes`` codec with ``endian`` ``"big"`` (omitted only for 1-byte data
types), then at most one bytes → bytes codec (N5's compression: none for
``raw``, ``gzip``, ``zstd``, ``blosc``). The data type must be one N5 has:
``u?int(8|16|32|64)``, ``float(32|64)``. The JSON round-trips as written.

A stored block is the N5 header — mode (uint16 BE, 0 = default), number of
dimensions (uint16 BE), the block's dimensions (uint32 BE each) — then the
payload of the nested chain. The transpose makes the payload's first
dimension vary fastest, as N5 stores it, so N5's ``dimensions`` and
``blockSize`` (and a block header's dimensions) are in the same order as the
Zarr ``shape`` and ``chunk_shape``: the header's dimension ``i`` is the
chunk's dimension ``i`` (tensorstore's ``n5`` driver reads them so too; tested).

Decoding checks the mode (varlength and object blocks are a
:class:`~zarrdask.errors.CorruptChunkError`, as is a rank other than the
chunk's), decodes the payload through the nested chain with the header's block
shape, then pads with the fill value (truncated edge blocks, as Java N5
writes them) or truncates (padded edge blocks read with a smaller chunk, e.g.
a rectilinear grid) to the chunk's shape. Memory is bounded: a header may
declare a block of at most ``max(4 × the chunk's bytes, 64 MiB)`` bytes (at
most the ``max_chunk_bytes`` setting above the chunk's own size), else the
block is refused before anything is allocated; the payload then decodes to
exactly the declared block's size (bounded decoding of the compressor).

Encoding writes the whole chunk (edge chunks padded with the fill value, as
zarr-python 2 and tensorstore write N5), its shape in the header. Use it with
the chunk key encoding ``{"name": "v2", "configuration": {"separator": "/"}}``
beside an N5 ``attributes.json`` to share a directory with N5 readers.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Sequence

import numpy as np

from .. import config
from ..errors import CodecError, CorruptChunkError
from .abc import ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec, KindlessCodec
from .buffers import byte_view
from .bytes_codec import BytesCodec, has_endianness
from .chain import CodecChain
from .transpose import TransposeCodec

__all__ = ["N5DefaultCodec", "BLOCK_FLOOR"]

_WHERE = "codec 'n5_default'"
#: a header may always declare a block this large (bytes), whatever the chunk's size
BLOCK_FLOOR = 64 << 20
#: N5 data types (README "Limitations"), in native byte order
_N5_TYPES = frozenset(np.dtype(t) for t in ("u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f4", "f8"))
_MAX_UINT32 = 2**32 - 1


def _nested(codecs: Any) -> tuple[TransposeCodec, BytesCodec, BytesBytesCodec | None]:
    """The nested chain's codecs, each rule of the README checked."""
    from .registry import codec_from_json

    if not isinstance(codecs, (list, tuple)):
        raise CodecError(f"{_WHERE}: configuration field 'codecs' must be a list of codecs, found {codecs!r}")
    if not 2 <= len(codecs) <= 3:
        raise CodecError(
            f"{_WHERE}: configuration field 'codecs' holds {len(codecs)} codecs, expected 2 or 3 "
            "(transpose, bytes, and at most one bytes→bytes codec)"
        )
    kinds = (None, "array_bytes", "bytes_bytes")
    parsed: list[Codec] = []
    for i, doc in enumerate(codecs):
        codec = codec_from_json(doc, key=f"n5_default.codecs[{i}]", kind=kinds[i])
        if isinstance(codec, KindlessCodec):
            codec = codec.as_kind(kinds[i] or "array_array")
        parsed.append(codec)
    transpose, serializer = parsed[0], parsed[1]
    if not isinstance(transpose, TransposeCodec):
        raise CodecError(f"{_WHERE}: configuration field 'codecs[0]' must be a 'transpose' codec, found {transpose.name!r}")
    n = len(transpose.order)
    if transpose.order != tuple(range(n - 1, -1, -1)):
        raise CodecError(
            f"{_WHERE}: configuration field 'codecs[0]': transpose 'order' {list(transpose.order)} is not the full "
            f"reversal, expected {list(range(n - 1, -1, -1))}"
        )
    if not isinstance(serializer, BytesCodec):
        raise CodecError(f"{_WHERE}: configuration field 'codecs[1]' must be a 'bytes' codec, found {serializer.name!r}")
    if serializer.endian not in ("big", None):
        raise CodecError(
            f"{_WHERE}: configuration field 'codecs[1]': bytes 'endian' is {serializer.endian!r}, expected \"big\" "
            "(or omitted for 1-byte data types)"
        )
    compressor = parsed[2] if len(parsed) == 3 else None
    if compressor is not None and not isinstance(compressor, BytesBytesCodec):
        raise CodecError(
            f"{_WHERE}: configuration field 'codecs[2]' is {compressor.name!r}, a {compressor.kind.replace('_', '→')} "
            "codec; expected a bytes→bytes codec"
        )
    return transpose, serializer, compressor  # type: ignore[return-value]


class N5DefaultCodec(ArrayBytesCodec):
    """N5 default-mode blocks: a header with the block's shape, then the nested chain's bytes.

    Parameters
    ----------
    codecs : list
        ``[transpose (full reversal), bytes (big-endian), optional bytes→bytes codec]``
        as objects or JSON.
    """

    name = "n5_default"

    def __init__(self, codecs: Sequence[Any]) -> None:
        transpose, serializer, compressor = _nested(codecs)
        self.compressor = compressor
        self.chain = CodecChain([transpose], serializer, [compressor] if compressor is not None else [])

    @classmethod
    def from_compressor(cls, ndim: int, compressor: Any = None) -> "N5DefaultCodec":
        """The codec for ``ndim``-dimensional blocks compressed with ``compressor`` (``None``: N5's ``raw``)."""
        codecs: list[Any] = [TransposeCodec(range(ndim - 1, -1, -1)), BytesCodec(endian="big")]
        return cls(codecs if compressor is None else [*codecs, compressor])

    # -- configuration ---------------------------------------------------------
    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "N5DefaultCodec":
        config_ = dict(configuration or {})
        if "codecs" not in config_:
            raise CodecError(f"{_WHERE}: configuration field 'codecs' is required")
        unknown = sorted(set(config_) - {"codecs"})
        if unknown:
            raise CodecError(f"{_WHERE}: unknown configuration field(s) {unknown}; expected only 'codecs'")
        return cls(config_["codecs"])

    def get_config(self) -> dict[str, Any]:
        return {"codecs": self.chain.to_json()}

    @property
    def codecs(self) -> tuple[Codec, ...]:
        return self.chain.codecs

    def validate(self, spec: ChunkSpec) -> None:
        ndim, dtype = len(spec.shape), spec.dtype
        order = self.chain.array_array[0].order  # type: ignore[attr-defined]
        if len(order) != ndim:
            raise CodecError(
                f"{_WHERE}: configuration field 'codecs[0]': transpose 'order' {list(order)} has {len(order)} "
                f"entries, expected {ndim} (the chunk's dimensions)"
            )
        if dtype.newbyteorder("=") not in _N5_TYPES:
            raise CodecError(
                f"{_WHERE}: data type {dtype} is not an N5 data type; expected (u)int8/16/32/64 or float32/64"
            )
        if has_endianness(dtype) and self.chain.array_bytes.endian is None:  # type: ignore[attr-defined]
            raise CodecError(
                f"{_WHERE}: configuration field 'codecs[1]': bytes 'endian' may be omitted only for 1-byte data "
                f"types, found {dtype}; expected \"big\""
            )
        if ndim > 0xFFFF or any(s > _MAX_UINT32 for s in spec.shape):
            raise CodecError(
                f"{_WHERE}: chunk shape {list(spec.shape)} does not fit an N5 header "
                "(at most 65535 dimensions of at most 2**32 - 1 each)"
            )
        self.chain.validate(spec)

    def complete(self, spec: ChunkSpec) -> "N5DefaultCodec":
        if self.compressor is None:
            return self
        inner = self.chain.encoded_spec(spec)
        return N5DefaultCodec([*self.chain.codecs[:2], self.compressor.complete(inner)])

    # -- the header ----------------------------------------------------------------
    @staticmethod
    def header(shape: Sequence[int]) -> bytes:
        """The N5 default-mode header of a block of ``shape`` (Zarr order = N5 order)."""
        return struct.pack(f">HH{len(shape)}I", 0, len(shape), *shape)

    @staticmethod
    def block_limit(spec: ChunkSpec) -> int:
        """The most bytes a block header may declare for a chunk of ``spec``."""
        return max(4 * spec.nbytes, min(BLOCK_FLOOR, int(config.get("max_chunk_bytes"))))

    def read_header(self, mv: memoryview, spec: ChunkSpec, key: str) -> tuple[tuple[int, ...], int]:
        """The block shape a stored block's header declares (checked) and the header's size."""
        ndim = len(spec.shape)
        if mv.nbytes < 4:
            raise CorruptChunkError(f"chunk {key!r}: {_WHERE}: {mv.nbytes} bytes, shorter than an N5 block header")
        mode, n = struct.unpack(">HH", mv[:4])
        if mode != 0:
            name = {1: " (varlength)", 2: " (object)"}.get(mode, "")
            raise CorruptChunkError(
                f"chunk {key!r}: {_WHERE}: N5 block mode {mode}{name}, expected 0 (default); only default-mode "
                "blocks are supported"
            )
        if n != ndim:
            raise CorruptChunkError(
                f"chunk {key!r}: {_WHERE}: the N5 block header declares {n} dimensions, expected {ndim}"
            )
        size = 4 + 4 * n
        if mv.nbytes < size:
            raise CorruptChunkError(
                f"chunk {key!r}: {_WHERE}: {mv.nbytes} bytes, shorter than the {size}-byte N5 block header"
            )
        shape = struct.unpack(f">{n}I", mv[4:size])
        nbytes = math.prod(shape) * spec.dtype.itemsize
        limit = self.block_limit(spec)
        if nbytes > limit:
            raise CorruptChunkError(
                f"chunk {key!r}: {_WHERE}: the N5 block header declares a block of shape {list(shape)} "
                f"({nbytes} bytes), expected at most {limit} bytes for a chunk of shape {list(spec.shape)}"
            )
        return shape, size

    # -- encode / decode -----------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes:
        return b"".join((self.header(spec.shape), byte_view(self.chain.encode(chunk, spec))))

    def _block(self, data: Any, spec: ChunkSpec, key: str) -> tuple[np.ndarray | None, memoryview]:
        """``(the decoded block, or None when it has the chunk's shape, the payload)``."""
        mv = byte_view(data)
        shape, size = self.read_header(mv, spec, key)
        payload = mv[size:]
        if shape == tuple(spec.shape):
            return None, payload
        return self.chain.decode(payload, spec.with_shape(shape), key), payload

    @staticmethod
    def _overlap(block: np.ndarray, spec: ChunkSpec) -> tuple[slice, ...]:
        return tuple(slice(0, min(b, c)) for b, c in zip(block.shape, spec.shape))

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        block, payload = self._block(data, spec, key)
        if block is None:
            return self.chain.decode(payload, spec, key)
        region = self._overlap(block, spec)
        if all(b >= c for b, c in zip(block.shape, spec.shape)):
            return block[region]  # truncated: a view
        fill = 0 if spec.fill_value is None else spec.fill_value
        out = np.full(spec.shape, fill, dtype=spec.dtype)
        out[region] = block[region]
        return out

    def decode_into(self, data: bytes | memoryview, spec: ChunkSpec, out: np.ndarray, key: str = "") -> None:
        block, payload = self._block(data, spec, key)
        if block is None:
            self.chain.decode_into(payload, spec, out, key)
            return
        region = self._overlap(block, spec)
        if any(b < c for b, c in zip(block.shape, spec.shape)):
            out[...] = 0 if spec.fill_value is None else spec.fill_value
        out[region] = block[region]
