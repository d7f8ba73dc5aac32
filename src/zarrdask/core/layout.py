"""An array resolved once: everything about it that is not its data.

:func:`resolve` turns a v2 ``.zarray`` or a v3 ``zarr.json`` document into an
:class:`ArrayLayout` — data type, chunk grid (:mod:`zarrdask.chunking`), codec
chain, fill value, chunk key encoding, dimension names — and checks the codecs
against the chunks. :class:`~zarrdask.Array` reads its properties from it and
the chunk engine works on it; neither asks which format the array is in. The
differences between the formats are the metadata documents' (each gives the
same facts: ``grid``, ``key_encoding``, ``memory_dtype``, ``read_fill_value``,
``order``, ``dimension_names``); only the codec chain is built differently,
here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .. import config
from ..chunking import ChunkGrid, ChunkKeyEncoding, grid_for
from ..codecs.abc import ArrayBytesCodec, ChunkSpec
from ..codecs.chain import CodecChain
from ..codecs.numcodecs_v2 import numcodecs_from_config, v2_chain
from ..codecs.registry import codec_from_json
from ..codecs.sharding import ShardingCodec
from ..errors import CodecError, MetadataError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from .nodes import key_of


def _distinct_shapes(chunks: tuple) -> list[tuple[int, ...]]:
    """Chunk shapes that between them use every distinct edge length of every
    axis (a codec's checks of a chunk shape are per axis: sharding's divisibility)."""
    per_axis = [sorted({c}) if isinstance(c, int) else sorted(set(c)) or [1] for c in chunks]
    n = max((len(p) for p in per_axis), default=1)
    return [tuple(p[min(i, len(p) - 1)] for p in per_axis) for i in range(n)] or [()]


@dataclass(frozen=True)
class ArrayLayout:
    """Everything about an array but its data, format-independent (see the module
    documentation). The engine reads and writes chunks through it."""

    prefix: str  # "" or "path/"
    grid: ChunkGrid  # of the stored units: shards when sharded, else chunks
    dtype: Any  # in memory: StringDType for strings, object for bytes
    fill_value: Any  # what unwritten elements read as (never None: v2's null is the type's zero)
    codec: ArrayBytesCodec
    key_encoding: ChunkKeyEncoding
    order: str = "C"
    #: object arrays hold bytes only (Zarr ``bytes``); False for v2 arrays with
    #: another object codec (``json2``, ``pickle``, ...), whose values are anything
    objects_are_bytes: bool = True
    dimension_names: tuple[str | None, ...] | None = None
    metadata: ArrayMetadataV2 | ArrayMetadataV3 | None = field(default=None, compare=False, repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.grid.shape

    @property
    def chunk_shape(self) -> tuple:
        """The stored units' shape per axis: an ``int``, or a tuple of edges (rectilinear)."""
        return self.grid.chunks

    @property
    def regular(self) -> bool:
        return self.grid.regular

    @cached_property
    def chunk_spec(self) -> ChunkSpec:
        """The chunks' spec (rectilinear grids: of the largest chunk, for sizing batches)."""
        return ChunkSpec(self.grid.largest_chunk(), self.dtype, self.fill_value, self.order)

    def spec_at(self, spec: ChunkSpec, coords: tuple[int, ...]) -> ChunkSpec:
        """``spec`` for the chunk at ``coords`` (its own shape on a rectilinear grid)."""
        return spec if self.regular else spec.with_shape(self.grid.chunk_shape_at(coords))

    def chunk_key(self, coords: tuple[int, ...]) -> str:
        return self.prefix + self.key_encoding.encode(coords)

    # -- what the array reports ------------------------------------------------------
    @cached_property
    def sharding(self) -> ShardingCodec | None:
        """The ``sharding_indexed`` codec, when the array is sharded."""
        return self.codec.array_bytes if isinstance(self.codec, CodecChain) and \
            isinstance(self.codec.array_bytes, ShardingCodec) else None

    @cached_property
    def inner(self) -> CodecChain | None:
        """The codecs inside the shards, when sharded."""
        return self.sharding.codec_chain if self.sharding is not None else None

    @property
    def chunks(self) -> tuple:
        """The chunk shape (inner chunks when sharded); for an unsharded
        rectilinear grid the chunk sizes per axis (a dask ``chunks`` tuple)."""
        if self.sharding is not None:
            return self.sharding.chunk_shape
        return self.grid.chunks if self.regular else self.grid.dask_chunks()

    @property
    def shards(self) -> tuple | None:
        if self.sharding is None:
            return None
        return self.grid.chunks if self.regular else self.grid.dask_chunks()

    @property
    def read_grid(self) -> ChunkGrid:
        """The grid of the chunks a read decodes: inner chunks when sharded."""
        return self.grid if self.sharding is None else grid_for(self.shape, self.sharding.chunk_shape)

    @property
    def filters(self) -> tuple[Any, ...]:
        """The v2 filters (numcodecs codecs) or the v3 array→array codecs (for a
        sharded array, those before the sharding codec and those inside it)."""
        if isinstance(self.metadata, ArrayMetadataV2):
            return tuple(self.codec.array_bytes.filters)  # type: ignore[attr-defined]
        inner = tuple(self.inner.array_array) if self.inner is not None else ()
        return tuple(self.codec.array_array) + inner  # type: ignore[attr-defined]

    @property
    def serializer(self) -> ArrayBytesCodec | None:
        """The v3 array→bytes codec (inside the shards when sharded); ``None`` in v2."""
        if isinstance(self.metadata, ArrayMetadataV2):
            return None
        return self.inner.array_bytes if self.inner is not None else self.codec.array_bytes  # type: ignore[attr-defined]

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The v2 compressor (numcodecs) or the v3 bytes→bytes codecs (inside the shards when sharded)."""
        m = self.metadata
        if isinstance(m, ArrayMetadataV2):
            return (numcodecs_from_config(m.compressor),) if m.compressor else ()
        return tuple((self.inner or self.codec).bytes_bytes)  # type: ignore[union-attr]


def resolve(metadata: ArrayMetadataV2 | ArrayMetadataV3, path: str, codecs: Any = None) -> ArrayLayout:
    """The layout of the array at ``path`` described by ``metadata``; its codecs
    are built and checked against every chunk shape of the grid now, so a bad
    configuration fails when the array is opened.

    ``codecs``: codec objects to run instead of ones built from the metadata's
    JSON (v3 only), for settings that live in the objects and not in the metadata
    (a ``conditional`` codec's decision); their JSON must be the metadata's."""
    key = key_of(path, ".zarray" if isinstance(metadata, ArrayMetadataV2) else "zarr.json")
    fill = metadata.read_fill_value(key)
    grid = metadata.grid
    return ArrayLayout(
        prefix=path + "/" if path else "",
        grid=grid,
        dtype=metadata.memory_dtype,
        fill_value=fill,
        codec=_codec_chain(metadata, grid, fill, key) if codecs is None else _live_chain(metadata, grid, fill, key, codecs),
        key_encoding=metadata.key_encoding,
        order=metadata.order,
        objects_are_bytes=metadata.objects_are_bytes,
        dimension_names=metadata.dimension_names,
        metadata=metadata,
    )


#: codec chains already built and checked, by what they depend on (:func:`_chain_key`):
#: the arrays of a hierarchy mostly share a few configurations, and a chain is
#: immutable once bound to its chunk spec, so opening them builds each once
_CHAINS: dict[tuple, CodecChain] = {}
_CHAINS_MAX = 1024
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def _chain_key(metadata: ArrayMetadataV2 | ArrayMetadataV3, grid: ChunkGrid, spec: ChunkSpec) -> tuple | None:
    """Everything the codec chain of ``metadata`` is built and checked from
    (its codecs' JSON, the chunk edges, the chunk spec, the size limit), or None when that is not
    JSON (codecs given as objects are not cached)."""
    codecs = [metadata.filters, metadata.compressor] if isinstance(metadata, ArrayMetadataV2) else metadata.codecs
    try:
        text = _ENCODE(codecs)
    except (TypeError, ValueError):
        return None
    fill = spec.fill_value
    # a numpy scalar by its bits (its repr can fail: numpy 2.5 cannot print extreme datetimes)
    fill_key = (fill.dtype.str, fill.tobytes()) if isinstance(fill, np.generic) else repr(fill)
    # the chain's checks (sizes of inner chunks, shard indexes) depend on max_chunk_bytes too
    return (type(metadata), text, grid.chunks, spec.dtype, spec.dtype.str, type(fill), fill_key, spec.order,
            config.get("max_chunk_bytes"))


def _codec_chain(metadata: ArrayMetadataV2 | ArrayMetadataV3, grid: ChunkGrid, fill: Any, key: str) -> CodecChain:
    v2 = isinstance(metadata, ArrayMetadataV2)
    # (v2: an object dtype needs an object codec as the first filter)
    spec = ChunkSpec(grid.largest_chunk(), metadata.memory_dtype, None if v2 else fill, metadata.order)
    cache_key = _chain_key(metadata, grid, spec)
    chain = None if cache_key is None else _CHAINS.get(cache_key)
    if chain is None:
        chain = _build_chain(metadata, grid, spec, key)
        if cache_key is not None:
            if len(_CHAINS) >= _CHAINS_MAX:
                _CHAINS.clear()
            _CHAINS[cache_key] = chain
    return chain


def _live_chain(metadata: ArrayMetadataV2 | ArrayMetadataV3, grid: ChunkGrid, fill: Any, key: str, codecs: Any) -> CodecChain:
    """The chain of the codec objects ``codecs`` (see :func:`resolve`), checked to
    be the metadata's codecs (never cached: the objects may differ beyond their JSON)."""
    if isinstance(metadata, ArrayMetadataV2):
        raise MetadataError(f"{key}: codec objects can be given for Zarr v3 arrays only")
    live = [codec_from_json(c, key=key) for c in codecs]
    stored = [codec_from_json(c, key=key).to_json() for c in metadata.codecs]
    if [c.to_json() for c in live] != stored:
        raise MetadataError(
            f"{key}: the codecs given {[c.to_json() for c in live]} are not the array's codecs {stored}"
        )
    spec = ChunkSpec(grid.largest_chunk(), metadata.memory_dtype, fill, metadata.order)
    return _build_chain(metadata, grid, spec, key, live)


def _build_chain(
    metadata: ArrayMetadataV2 | ArrayMetadataV3, grid: ChunkGrid, spec: ChunkSpec, key: str, codecs: Any = None
) -> CodecChain:
    v2 = isinstance(metadata, ArrayMetadataV2)
    try:
        if v2:
            chain = v2_chain(metadata.filters, metadata.compressor, key=key)
        else:  # the spec places numcodecs.<id> codecs whose kind their position leaves open
            listed = metadata.codecs if codecs is None else codecs
            chain = CodecChain.from_codecs([codec_from_json(c, key=key) for c in listed], key=key, spec=spec)
        for shape in _distinct_shapes(grid.chunks):  # rectilinear: every edge length per axis
            chain.validate(spec.with_shape(shape))
    except (CodecError, MetadataError) as e:  # name the document (a codec's own check cannot)
        if key in str(e):
            raise
        raise type(e)(f"{key}: {e}") from None
    return chain


