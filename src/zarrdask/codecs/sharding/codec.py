"""The ``sharding_indexed`` codec (zarr-specs ``v3-codecs-sharding-indexed``; ZEP 2).

A shard is one stored value holding a grid of inner chunks plus an index of
where each inner chunk's bytes are. It is an array→bytes codec: the chunk grid
of the array is the shard grid, and this codec encodes a whole shard.

Tested example configuration (the spec's)::

    {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [32, 32],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}],
        "index_location": "end"}}

Reading part of a shard (the codec's
:class:`~zarrdask.codecs.abc.PartialDecode` capability:
:meth:`ShardingCodec.partial_steps`) fetches the index with one prefix or
suffix range request (its size follows from the index codecs), then only the
inner chunks needed, with byte ranges that lie close together (setting
``coalesce_gap``) merged into one request; all of them go to the store in one
``get_ranges`` call, which remote stores serve concurrently. The read is a
generator of request batches, so the engine reads the indexes of every shard
a selection touches in one batch, then all their inner chunks in another
(``decode_partial`` runs it against one reader).

Writing part of a shard (:meth:`ShardingCodec.encode_partial`) re-encodes only
the inner chunks the write touches and copies the others' bytes unchanged.
Inner chunks are written in C order; inner chunks equal to the fill value are
left out; readers accept any order and gaps.
"""

from __future__ import annotations

import itertools
import math
import operator
import sys
from functools import lru_cache, partial
from typing import Any, Callable, Sequence

import numpy as np

from ... import config
from ..._pool import in_parts, thread_map
from ...errors import ChunkNotFoundError, CodecError, CorruptChunkError, MetadataError
from ...indexing import ChunkProjection
from ...metadata.limits import check_chunk_bytes
from ...storage.byte_range import ArrivingRanges, RangeRequest, SuffixRequest, coalesce
from ...storage.readers import RangeReader
from ..abc import ArrayBytesCodec, ChunkSpec, Codec, PartialDecode, PartialSteps, update_chunk
from ..buffers import byte_view
from ..chain import CodecChain, PendingCodecChain
from ..bytes_codec import BytesCodec
from ..crc32c_codec import Crc32cCodec, checked_payload
from .index import MAX_UINT64, ShardIndex


def _chain(codecs: Any, what: str) -> "CodecChain | PendingCodecChain":
    from ..registry import codec_from_json

    if isinstance(codecs, (CodecChain, PendingCodecChain)):
        return codecs
    if not isinstance(codecs, (list, tuple)) or not codecs:
        raise CodecError(f"codec 'sharding_indexed': '{what}' must be a non-empty list of codecs, found {codecs!r}")
    key = f"sharding_indexed.{what}"
    return CodecChain.from_codecs([codec_from_json(c, key=key) for c in codecs], key=key)


def _is_plain_index(chain: Any) -> bool:
    """Whether ``chain`` is the index codecs the specification suggests:
    bytes (little-endian), then crc32c."""
    return (isinstance(chain, CodecChain) and not chain.array_array and type(chain.array_bytes) is BytesCodec
            and chain.array_bytes.endian == "little" and len(chain.bytes_bytes) == 1
            and type(chain.bytes_bytes[0]) is Crc32cCodec)


def _iter(x: Any) -> Any:
    try:
        return list(x)
    except TypeError:
        return [x]


def _default_index_codecs() -> list[Codec]:
    return [BytesCodec(endian="little"), Crc32cCodec()]


class ShardingCodec(PartialDecode, ArrayBytesCodec):
    """``sharding_indexed``: inner chunks of ``chunk_shape`` in one stored shard.

    Parameters
    ----------
    chunk_shape
        The inner chunk shape; it must divide the shard shape.
    codecs
        The inner chunks' codecs (default: ``bytes``).
    index_codecs
        The index's codecs: an array→bytes codec and fixed-size bytes→bytes codecs
        only (default: ``bytes`` little-endian + ``crc32c``, as the spec recommends).
    index_location
        ``"end"`` (default) or ``"start"``.
    """

    name = "sharding_indexed"

    def __init__(
        self,
        chunk_shape: Sequence[int],
        codecs: Any = None,
        index_codecs: Any = None,
        index_location: str = "end",
    ) -> None:
        if isinstance(chunk_shape, (str, bytes)) or not all(
            isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) for c in _iter(chunk_shape)
        ):
            raise CodecError(
                f"codec 'sharding_indexed': 'chunk_shape' must be a list of integers, found {chunk_shape!r}"
            )
        self.chunk_shape = tuple(int(c) for c in chunk_shape)
        if any(c <= 0 for c in self.chunk_shape):
            raise CodecError(f"codec 'sharding_indexed': 'chunk_shape' must be positive, found {list(chunk_shape)}")
        if index_location not in ("start", "end"):
            raise CodecError(
                f"codec 'sharding_indexed': 'index_location' must be 'start' or 'end', found {index_location!r}"
            )
        self.index_location = index_location
        self.codec_chain = _chain(codecs if codecs is not None else [BytesCodec()], "codecs")
        self.index_chain = _chain(index_codecs if index_codecs is not None else _default_index_codecs(), "index_codecs")
        #: the index codecs are the usual bytes (little-endian) and crc32c, on a
        #: little-endian machine: an index is its checksum compared and its
        #: entries viewed, without the chain's general decode (every partial read)
        self._plain_index = sys.byteorder == "little" and _is_plain_index(self.index_chain)
        #: shard shape -> (chunks per shard, the index's spec, its encoded size): worked out
        #: once, not for every shard a read touches
        self._layouts: dict[tuple[int, ...], tuple[tuple[int, ...], ChunkSpec, int | None]] = {}

    @classmethod
    def from_config(cls, configuration: dict[str, Any]) -> "ShardingCodec":
        config_ = dict(configuration)
        missing = [k for k in ("chunk_shape", "codecs", "index_codecs") if k not in config_]
        if missing:
            raise CodecError(f"codec 'sharding_indexed': missing configuration field(s) {missing}")
        unknown = sorted(set(config_) - {"chunk_shape", "codecs", "index_codecs", "index_location"})
        if unknown:
            raise CodecError(f"codec 'sharding_indexed': unknown configuration field(s) {unknown}")
        return cls(**config_)

    def get_config(self) -> dict[str, Any]:
        return {
            "chunk_shape": list(self.chunk_shape),
            "codecs": self.codec_chain.to_json(),
            "index_codecs": self.index_chain.to_json(),
            "index_location": self.index_location,
        }

    # -- specs ---------------------------------------------------------------
    def _layout(self, spec: ChunkSpec) -> tuple[tuple[int, ...], ChunkSpec, int | None]:
        """Chunks per shard, the index's spec and its encoded size (``None``:
        variable) for shards of ``spec``'s shape."""
        shape = tuple(spec.shape)  # (a tuple is itself: no copy)
        found = self._layouts.get(shape)
        if found is None:
            cps = tuple(s // c for s, c in zip(shape, self.chunk_shape))
            index_spec = ChunkSpec((*cps, 2), np.dtype("uint64"), MAX_UINT64, "C")
            found = (cps, index_spec, self.index_chain.encoded_size(index_spec))
            if len(self._layouts) >= _LAYOUTS_KEPT:  # many shard shapes (a rectilinear grid): start again
                self._layouts.clear()
            self._layouts[shape] = found
        return found

    def chunks_per_shard(self, spec: ChunkSpec) -> tuple[int, ...]:
        """Inner chunks per shard along each dimension, for shards of ``spec``."""
        return self._layout(spec)[0]

    def _inner_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec(self.chunk_shape, spec.dtype, spec.fill_value, "C", spec.write_empty, spec.read_missing)

    def _index_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return self._layout(spec)[1]

    def index_size(self, spec: ChunkSpec) -> int:
        """Bytes the encoded index takes (fixed by the index codecs)."""
        size = self._layout(spec)[2]
        if size is None:
            raise CodecError(
                "codec 'sharding_indexed': the index codecs "
                f"{[c.name for c in self.index_chain.codecs]} give a variable-size index; "
                "use fixed-size codecs only (e.g. bytes + crc32c)"
            )
        return size

    def validate(self, spec: ChunkSpec) -> None:
        """Check the inner chunk shape against the shard shape ``spec.shape`` (same rank, divides
        it) and the ``max_chunk_bytes`` setting (each inner chunk and the index decoded), then the
        inner and index codecs. Errors name the codec and field; the array names the document."""
        where, field = f"codec {self.name!r}", "configuration.chunk_shape"
        if len(self.chunk_shape) != len(spec.shape):
            raise MetadataError(
                f"{where}: field {field!r}: found {list(self.chunk_shape)} ({len(self.chunk_shape)} dimensions), "
                f"expected as many dimensions as the shard shape {list(spec.shape)} ({len(spec.shape)})"
            )
        if any(s % c for s, c in zip(spec.shape, self.chunk_shape)):
            raise MetadataError(
                f"{where}: field {field!r}: found {list(self.chunk_shape)}, expected an inner chunk shape that "
                f"divides the shard shape {list(spec.shape)} in every dimension (v3-codecs-sharding-indexed)"
            )
        check_chunk_bytes(self.chunk_shape, spec.dtype, where, field, what="inner chunk")
        check_chunk_bytes(self._index_spec(spec).shape, np.dtype("uint64"), where, field, what="shard index")
        self.codec_chain.validate(self._inner_spec(spec))
        self.index_chain.validate(self._index_spec(spec))
        self.index_size(spec)

    def bind(self, spec: ChunkSpec) -> "ShardingCodec":
        inner = self.codec_chain.bind(self._inner_spec(spec))
        index = self.index_chain.bind(self._index_spec(spec))
        if inner is self.codec_chain and index is self.index_chain:
            return self
        return ShardingCodec(self.chunk_shape, inner, index, self.index_location)

    def complete(self, spec: ChunkSpec) -> "ShardingCodec":
        return ShardingCodec(
            self.chunk_shape,
            self.codec_chain.complete(self._inner_spec(spec)),
            self.index_chain.complete(self._index_spec(spec)),
            self.index_location,
        )

    # -- the index -------------------------------------------------------------
    def _decode_index(self, data: Any, spec: ChunkSpec, key: str) -> ShardIndex:
        _, index_spec, size = self._layout(spec)
        if self._plain_index:
            mv = byte_view(data)
            payload = checked_payload(mv) if mv.nbytes == size else None
            if payload is not None:
                return ShardIndex(np.frombuffer(payload, dtype=np.uint64).reshape(index_spec.shape))
            # anything else: the chain's decode, which says what is wrong
        entries = self.index_chain.decode(data, index_spec, key)
        return ShardIndex(np.asarray(entries, dtype=np.uint64))

    def _read_index(self, data: memoryview, spec: ChunkSpec, key: str) -> tuple[ShardIndex, np.ndarray]:
        """The index of a whole shard, checked against the shard's size, and
        the flat mask of its empty entries."""
        size = self.index_size(spec)
        n = len(data)
        if n < size:
            raise CorruptChunkError(
                f"shard {key!r}: truncated: {n} bytes, shorter than its {size}-byte index"
            )
        raw = data[:size] if self.index_location == "start" else data[n - size :]
        index = self._decode_index(raw, spec, key)
        return index, index.check(n, key)

    def _assemble(self, pieces: Sequence[Any], spec: ChunkSpec) -> bytes:
        """A shard from its inner chunks' bytes in C order (``None``: empty),
        joined with the index in one copy."""
        isz = self.index_size(spec)
        index = ShardIndex.empty(self.chunks_per_shard(spec))
        flat = index.flat()
        pos = isz if self.index_location == "start" else 0
        present = []
        for i, piece in enumerate(pieces):
            if piece is None:
                continue
            n = len(piece) if not isinstance(piece, memoryview) else piece.nbytes
            flat[i] = (pos, n)
            pos += n
            present.append(piece)
        encoded = self.index_chain.encode(index.entries, self._index_spec(spec))
        parts = [encoded, *present] if self.index_location == "start" else [*present, encoded]
        return b"".join(parts)

    def _inner_regions(self, spec: ChunkSpec) -> tuple[tuple[slice, ...], ...]:
        """Each inner chunk's region of a shard of ``spec``'s shape, in index order."""
        cps = self.chunks_per_shard(spec)
        if math.prod(cps) > _MANY_INNER:  # not kept: it would hold a tuple per inner chunk
            return _regions.__wrapped__(cps, tuple(self.chunk_shape))
        return _regions(cps, tuple(self.chunk_shape))

    # -- whole shards ------------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes:
        inner = self._inner_spec(spec)
        chain = self.codec_chain

        def enc(region: tuple[slice, ...]) -> Any:
            part = chunk[region]
            return update_chunk(chain, None, inner, _whole(inner.shape), part)

        return self._assemble(thread_map(enc, self._inner_regions(spec)), spec)

    def decode(self, data: Any, spec: ChunkSpec, key: str = "") -> np.ndarray:
        out = np.empty(spec.shape, dtype=spec.dtype)
        self.decode_into(data, spec, out, key)
        return out

    def decode_into(self, data: Any, spec: ChunkSpec, out: np.ndarray, key: str = "") -> None:
        """Decode a whole shard into ``out``; with ``spec.read_missing`` false,
        :class:`~zarrdask.errors.ChunkNotFoundError` listing every empty inner
        chunk instead, before anything is decoded (the caller knows which of
        them the read needs: an edge shard's inner chunks past the array's
        end are never stored)."""
        mv = memoryview(data).cast("B")
        index, empty = self._read_index(mv, spec, key)
        inner = self._inner_spec(spec)
        flat = index.flat()
        if not spec.read_missing and empty.any():
            raise self._missing(key, spec, np.flatnonzero(empty))
        regions = self._inner_regions(spec)
        chain = self.codec_chain
        entries, absent = flat, empty
        if len(flat) <= _MANY_INNER:  # Python ints: cheaper to take one by one than numpy's
            entries, absent = flat.tolist(), empty.tolist()

        pieces, fills = [], []
        for region, (off, n), absent_here in zip(regions, entries, absent):
            if absent_here:
                fills.append(region)
            else:  # a view, also for 0-d shards
                pieces.append((int(off), int(n), out[(*region, Ellipsis)]))
        thread_map(lambda part: chain.decode_pieces_into(mv, part, inner, key), _parts(pieces, inner))
        for region in fills:  # after the stored ones: a damaged shard is refused before anything is filled
            out[region] = spec.fill_value

    def _missing(self, key: str, spec: ChunkSpec, flat_ids: Any) -> ChunkNotFoundError:
        """The error naming the empty inner chunks ``flat_ids`` (C order) of shard ``key``
        (without the store and the array: the engine, which knows them, says them)."""
        cps = self.chunks_per_shard(spec)
        missing = [(key, tuple(int(c) for c in np.unravel_index(int(i), cps))) for i in flat_ids]
        return ChunkNotFoundError(
            f"shard {key!r}: {len(missing)} inner chunk(s) not stored (empty index entries): "
            f"{[c for _, c in missing[:10]]}", missing
        )

    def inner_chunks(self, data: Any, spec: ChunkSpec, key: str = "") -> list[memoryview | None]:
        """The stored bytes of every inner chunk of a whole shard, in C order of the
        inner chunk grid (``None`` for an empty one): views of ``data``, not copies.
        For readers that look at the inner codecs' layout themselves (Arrow views
        of ``zarrdask.vlen-offsets`` chunks)."""
        mv = memoryview(data).cast("B")
        index, empty = self._read_index(mv, spec, key)
        flat = index.flat()
        return [
            None if empty[i] else mv[int(flat[i, 0]) : int(flat[i, 0]) + int(flat[i, 1])]
            for i in range(len(flat))
        ]

    # -- parts of shards -----------------------------------------------------------
    def _fetch_index(self, reader: RangeReader, spec: ChunkSpec, key: str) -> ShardIndex | None:
        """The index alone, with one prefix or suffix request (``None``: no shard)."""
        size = self.index_size(spec)
        request = RangeRequest(0, size) if self.index_location == "start" else SuffixRequest(size)
        got = reader.read([request])
        return None if got is None else self._parse_index(got[0], spec, key)[0]

    def _parse_index(self, data: Any, spec: ChunkSpec, key: str) -> tuple[ShardIndex, np.ndarray]:
        """The index from the bytes of its prefix or suffix request, and the
        flat mask of its empty entries."""
        size = self.index_size(spec)
        if len(data) != size:
            raise CorruptChunkError(
                f"shard {key!r}: truncated: {len(data)} bytes, shorter than its {size}-byte index"
            )
        index = self._decode_index(data, spec, key)
        return index, index.check(None, key)

    def count_chunks(
        self, reader: RangeReader, spec: ChunkSpec, key: str = "", within: np.ndarray | None = None
    ) -> int:
        """The number of non-empty inner chunks of a stored shard (from its index),
        only those where the boolean mask ``within`` (chunks per shard) is true."""
        index = self._fetch_index(reader, spec, key)
        if index is None:
            return 0
        stored = ~index.is_empty()
        return int((stored & within.reshape(-1)).sum() if within is not None else stored.sum())

    def partial_steps(
        self, spec: ChunkSpec, proj: ChunkProjection, key: str = "", max_bytes: int | None = None,
        out: np.ndarray | None = None,
    ) -> PartialSteps:
        """The read of ``proj``'s part of a shard in two steps: the index, then
        the inner chunks it needs (coalesced); the generator yields the byte
        ranges, is sent their bytes (``None``: no shard) and returns the
        decoded part. A caller reading many shards runs every shard's first
        step as one batch, then every second step, so the round trips do not
        add up. ``max_bytes``: the inner chunks are read in as many steps as
        keep each step's ranges within about that many bytes (at least one
        inner chunk a step), each decoded before the next is read. ``out``:
        where to decode the part, when it has its shape and data type.
        With ``spec.read_missing`` false, a part needing inner chunks the
        shard does not hold returns (not raises) a
        :class:`~zarrdask.errors.ChunkNotFoundError` naming them, after the
        index, without reading the others."""
        return self._partial_steps(spec, proj, key, max_bytes, out)

    def partial_bytes(self, spec: ChunkSpec, proj: ChunkProjection, max_bytes: int | None = None) -> int:
        """The index, the ranges of the inner chunks needed (each counted at
        its decoded size plus the gap a coalesced range may span; with
        ``max_bytes``, one step's worth) and one inner chunk decoded."""
        inner = self._inner_spec(spec).nbytes
        count = sum(1 for _ in proj.inner_indexer(spec.shape, self.chunk_shape))
        ranges = count * inner + max(0, count - 1) * int(config.get("coalesce_gap"))
        if max_bytes is not None:
            ranges = min(ranges, max(max_bytes, inner))
        return self.index_size(spec) + ranges + inner

    def _partial_steps(
        self, spec: ChunkSpec, proj: ChunkProjection, key: str, max_bytes: int | None, into: np.ndarray | None
    ) -> PartialSteps:
        size = self.index_size(spec)
        request = RangeRequest(0, size) if self.index_location == "start" else SuffixRequest(size)
        got = yield [request]
        if got is None:
            return None
        index, empty = self._parse_index(got[0], spec, key)
        indexer = proj.inner_indexer(spec.shape, self.chunk_shape)
        fits = into is not None and into.shape == tuple(indexer.out_shape) and into.dtype == spec.dtype
        out = into if fits else np.empty(indexer.out_shape, dtype=spec.dtype)
        inner_projs = list(indexer)
        ids = _entries(inner_projs, self.chunks_per_shard(spec))
        wanted: list[tuple[ChunkProjection, int, int]] = []
        absent: list[int] = []
        # the entries needed as Python values, in one step each (not a numpy scalar per entry)
        for ip, i, (offset, nbytes), absent_here in zip(inner_projs, ids, index.flat()[ids].tolist(),
                                                       empty[ids].tolist()):
            if absent_here:
                absent.append(i)
                out[ip.out_selection] = spec.fill_value
            else:
                wanted.append((ip, offset, nbytes))
        if absent and not spec.read_missing:  # the result, not raised: the other shards' reads go on
            return self._missing(key, spec, absent)
        for part in _steps_of(wanted, max_bytes):
            groups = coalesce([(off, off + n) for _, off, n in part], config.get("coalesce_gap"))
            pieces = _Pieces(self, part, groups, spec, out, key)
            blobs = yield ArrivingRanges([RangeRequest(start, stop - start) for start, stop, _ in groups], pieces.take)
            if blobs is None:  # the shard vanished between the two requests
                return None
            pieces.finish(blobs)
        return out

    def encode_partial(
        self,
        old: Any,
        spec: ChunkSpec,
        proj: ChunkProjection,
        value: np.ndarray,
        key: str = "",
    ) -> bytes | None:
        cps = self.chunks_per_shard(spec)
        n_inner = math.prod(cps)
        pieces: list[Any] = [None] * n_inner
        if old is not None:
            mv = memoryview(old).cast("B")
            index, empty = self._read_index(mv, spec, key)
            flat = index.flat()
            for i in np.flatnonzero(~empty):
                off, n = int(flat[i, 0]), int(flat[i, 1])
                pieces[i] = mv[off : off + n]
        indexer = proj.inner_indexer(spec.shape, self.chunk_shape)
        inner_projs = list(indexer)
        inner = self._inner_spec(spec)
        chain = self.codec_chain
        flat_ids = _entries(inner_projs, cps)
        value = np.asarray(value, dtype=spec.dtype)  # a 0-d write may arrive as a scalar (a str, for strings)

        def enc(j: int) -> Any:
            ip = inner_projs[j]
            # `..., Ellipsis`: a 0-d selection stays an array (a str scalar has no [...])
            return update_chunk(chain, pieces[flat_ids[j]], inner, ip, value[(*ip.out_selection, Ellipsis)], key)

        for i, piece in zip(flat_ids, thread_map(enc, range(len(inner_projs)))):
            pieces[i] = piece
        if not spec.write_empty and all(p is None for p in pieces):
            return None
        return self._assemble(pieces, spec)


def _whole(shape: tuple[int, ...]) -> ChunkProjection:
    """The projection that selects all of a chunk of ``shape``."""
    return ChunkProjection(
        coords=(0,) * len(shape),
        chunk_selection=tuple(slice(0, n) for n in shape),
        out_selection=tuple(slice(0, n) for n in shape),
        is_complete=True,
        dims=tuple(slice(0, n, 1) for n in shape),
    )


class _Pieces:
    """The inner chunks of one step of a partial shard read (``wanted``:
    ``(projection, offset, length)``), read as the coalesced ``groups`` of
    ranges, decoded into their place in ``out``: each group as soon as its
    bytes arrive (:meth:`take`, where the reader hands them over) and the
    rest when the step is sent all the bytes (:meth:`finish`)."""

    def __init__(self, codec: ShardingCodec, wanted: list[tuple[ChunkProjection, int, int]], groups: list[Any],
                 spec: ChunkSpec, out: np.ndarray, key: str) -> None:
        self.codec, self.wanted, self.groups, self.out, self.key = codec, wanted, groups, out, key
        self.inner = codec._inner_spec(spec)
        self.taken = [False] * len(groups)
        self.error: BaseException | None = None

    def take(self, item: tuple[int, Any]) -> None:
        """Decode group ``j`` from its bytes; a failure is raised by :meth:`finish`."""
        j, blob = item
        try:
            self._decode([(j, blob)])
        except Exception as e:  # raised in the read's steps, where errors of the read belong
            self.error = self.error or e
        self.taken[j] = True

    def finish(self, blobs: list[Any]) -> None:
        """Decode every group not taken yet (in parallel where the caller is not pool work)."""
        if self.error is not None:
            raise self.error
        self._decode([(j, blob) for j, blob in enumerate(blobs) if not self.taken[j]])

    def _decode(self, groups: list[tuple[int, Any]]) -> None:
        """Decode the inner chunks of the groups ``(j, bytes)``: those filling
        a block of ``out`` through the chain's
        :meth:`~zarrdask.codecs.chain.CodecChain.decode_pieces_into`, in parts,
        each other one on its own."""
        inner, chain, out, key = self.inner, self.codec.codec_chain, self.out, self.key
        work: list[Callable[[], None]] = []
        for j, blob in groups:
            start, stop, members = self.groups[j]
            if len(blob) != stop - start:
                raise CorruptChunkError(
                    f"shard {key!r}: index entries point to bytes {start}..{stop}, past the end of the shard"
                )
            source, whole = byte_view(blob), []
            for m in members:
                ip, off, n = self.wanted[m]
                target = self._block(ip)
                if target is not None:
                    whole.append((off - start, n, target))
                else:
                    work.append(partial(self._decode_part, ip, source[off - start : off - start + n]))
            if whole:
                work.extend(partial(chain.decode_pieces_into, source, part, inner, key) for part in _parts(whole, inner))
        thread_map(_call, work)

    def _block(self, ip: ChunkProjection) -> np.ndarray | None:
        """The block of ``out`` the whole inner chunk ``ip`` fills, if it fills one."""
        if ip.is_complete and ip.pre_selection is None and all(map(isinstance, ip.out_selection, itertools.repeat(slice))):
            target = self.out[(*ip.out_selection, Ellipsis)]
            if target.shape == self.inner.shape:
                return target
        return None

    def _decode_part(self, ip: ChunkProjection, piece: memoryview) -> None:
        """Decode an inner chunk that fills no block of ``out`` whole (read
        only in part, or placed by a selection other than slices) and put
        what ``ip`` selects of it in its place."""
        inner, chain, out, key = self.inner, self.codec.codec_chain, self.out, self.key
        values = None if ip.is_complete else chain.decode_selection(piece, inner, ip, key)
        if values is not None:  # a small selection: only the span it needs decoded
            out[ip.out_selection] = values
            return
        out[ip.out_selection] = ip.select(chain.decode(piece, inner, key))


def _call(fn: Callable[[], None]) -> None:
    fn()


#: decoded bytes of inner chunks handed to the pool as one piece of work: a
#: part's hand-off (some tens of microseconds) is small beside decoding it,
#: and a shard of large inner chunks still spreads over every thread
_PART_BYTES = 1 << 18


def _parts(pieces: list[Any], inner: ChunkSpec) -> list[Sequence[Any]]:
    """The inner chunks ``pieces`` of one shard in parts for the pool (:func:`in_parts`)."""
    return in_parts(pieces, _PART_BYTES // max(1, inner.nbytes))


#: shard shapes whose layout a codec remembers (regular grids have one, or a few at the edges)
_LAYOUTS_KEPT = 256


#: inner chunks per shard above which a shard's regions and entries are not
#: held as Python objects (some 100 bytes each)
_MANY_INNER = 1 << 16


@lru_cache(maxsize=32)
def _regions(chunks_per_shard: tuple[int, ...], chunk_shape: tuple[int, ...]) -> tuple[tuple[slice, ...], ...]:
    """The region of each inner chunk of a shard, in index (C) order: worked out
    once per shard shape rather than for every shard read or written whole."""
    return tuple(
        tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunk_shape)) for coords in np.ndindex(*chunks_per_shard)
    )


def _entries(projections: Sequence[ChunkProjection], chunks_per_shard: tuple[int, ...]) -> list[int]:
    """The index entry (C order over the inner chunk grid) of each projection's inner chunk."""
    strides, step = [], 1
    for n in reversed(chunks_per_shard):
        strides.append(step)
        step *= n
    strides.reverse()
    return [sum(map(operator.mul, ip.coords, strides)) for ip in projections]


def _steps_of(wanted: list[tuple[Any, int, int]], max_bytes: int | None) -> list[list[tuple[Any, int, int]]]:
    """The inner chunks to read (``(projection, offset, length)``) in steps:
    one step without ``max_bytes``; else in offset order, each step spanning at
    most ``max_bytes`` of the shard (at least one inner chunk)."""
    if not wanted:
        return []
    if max_bytes is None:
        return [wanted]
    steps: list[list[tuple[Any, int, int]]] = []
    first = 0
    for item in sorted(wanted, key=lambda w: w[1]):
        if steps and item[1] + item[2] - first <= max_bytes:
            steps[-1].append(item)
        else:
            steps.append([item])
            first = item[1]
    return steps
