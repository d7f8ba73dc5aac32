"""The ``sharding_indexed`` codec (zarr-specs ``v3-codecs-sharding-indexed``, ZEP 2).

- Binary format, byte for byte: the spec's example (shard [64, 64], inner
  [32, 32], ``bytes`` + ``crc32c`` index codecs: a 68-byte index at the end),
  ``index_location: "start"``, empty inner chunks (``2^64 - 1`` twice), edge
  shards, no checksum, a big-endian index, 0-d, 1-d and 3-d; the expected shards
  are built by hand (``tests/_sharding_util``: numpy + the ``crc32c`` package).
- Readers accept any layout: inner chunks in any order, gaps, junk, shared bytes.
- Writes: fill-valued inner chunks are left out, all-fill shards are deleted,
  inner chunks are written back to back in C order (also after partial writes).
- I/O: one inner chunk = two requests (index + chunk); a whole shard = one
  ``get``; whole-shard writes read nothing; partial-shard writes read once and
  write once; the same over HTTP (counted in the store and in the server).
- Corruption: index checksum, index entries outside the shard, truncated shards
  → typed errors naming the shard key, for whole and partial reads and writes.
- Configuration validation, at create time and for hand-written metadata.
- Hypothesis: random geometries and selections against a numpy model.
"""

from __future__ import annotations

import gzip
import json
import re
import struct
import uuid

import google_crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.crc32c_codec import Crc32cCodec
from zarrdask.codecs.gzip_codec import GzipCodec
from zarrdask.codecs.sharding import MAX_UINT64, ShardingCodec
from zarrdask.errors import ChecksumError, CodecError, CorruptChunkError, MetadataError, ZarrdaskError
from zarrdask.storage import CountingStore, FsspecStore, LocalStore, MemoryStore

from tests._sharding_util import (
    BYTES_LE,
    MAX,
    build_shard,
    count_nonfill_inner,
    encode_index,
    index_nbytes,
    inner_blocks,
    is_compact_c_order,
    layout_order,
    parse_shard,
    shard_array,
    sharding_config,
)

ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
GZIP1 = {"name": "gzip", "configuration": {"level": 1}}

#: the configuration printed in the spec ("Configuration parameters")
SPEC_CONFIG = {
    "name": "sharding_indexed",
    "configuration": {
        "chunk_shape": [32, 32],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end",
    },
}


def _data(shape, dtype="uint16", seed=0, low=1):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(low, int(info.min)), min(int(info.max), 2**31), size=shape, endpoint=True).astype(dt)


def _sharded(store, shape, shard, sharding, *, dtype="uint16", fill_value=0, path="", **kw):
    """An array whose only array→bytes codec is the ``sharding`` JSON (full control)."""
    return zarrdask.create_array(
        store, path=path, shape=shape, dtype=dtype, chunks=shard, serializer=sharding,
        compressors=None, fill_value=fill_value, **kw,
    )


# =====================================================================================
# Binary format, byte for byte
# =====================================================================================
def _expected_spec_example(data: np.ndarray, location: str, empty: set[int] = frozenset()) -> bytes:
    """The spec's example shard, built from its description: the four inner
    chunks' ``bytes`` encodings back to back in C order, then (or before them)
    the 4 x (offset, nbytes) uint64 little-endian pairs and their CRC-32C."""
    blocks = [data[i * 32 : (i + 1) * 32, j * 32 : (j + 1) * 32] for i in range(2) for j in range(2)]
    raw = [b.astype("<u2").tobytes(order="C") for b in blocks]
    index_size = 16 * 4 + 4
    pos = index_size if location == "start" else 0
    entries = []
    body = b""
    for k, piece in enumerate(raw):
        if k in empty:
            entries.append((2**64 - 1, 2**64 - 1))
            continue
        entries.append((pos, len(piece)))
        pos += len(piece)
        body += piece
    index = np.array(entries, dtype="<u8").tobytes()
    index += struct.pack("<I", google_crc32c.value(bytes(index)))
    assert len(index) == 68  # 16 (2 x uint64) * 4 (chunks per shard) + 4 (crc32c)
    return index + body if location == "start" else body + index


def test_spec_example_byte_for_byte_index_at_end():
    data = _data((64, 64), seed=1)
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(64, 64), dtype="uint16", chunks=(32, 32), shards=(64, 64), compressors=None)
    a[...] = data
    assert a.chunks == (32, 32) and a.shards == (64, 64) and a.nshards == 1
    # shards= gives the spec's recommended index codecs and the default location
    codecs = json.loads(store.get("zarr.json"))["codecs"]
    assert codecs == [sharding_config([32, 32], [BYTES_LE], crc=True, index_location="end")]
    raw = store.get("c/0/0")
    assert raw == _expected_spec_example(data, "end")
    assert len(raw) == 4 * 32 * 32 * 2 + 68
    # the index is the last 68 bytes: offsets 0, 2048, 4096, 6144 (C order)
    entries = np.frombuffer(raw[-68:-4], "<u8").reshape(2, 2, 2)
    assert entries.tolist() == [[[0, 2048], [2048, 2048]], [[4096, 2048], [6144, 2048]]]
    assert struct.unpack("<I", raw[-4:])[0] == google_crc32c.value(bytes(raw[-68:-4]))
    np.testing.assert_array_equal(a[...], data)


def test_spec_example_byte_for_byte_index_at_start():
    data = _data((64, 64), seed=2)
    store = MemoryStore()
    a = _sharded(store, (64, 64), (64, 64), sharding_config([32, 32], index_location="start"))
    a[...] = data
    raw = store.get("c/0/0")
    assert raw == _expected_spec_example(data, "start")
    entries = np.frombuffer(raw[:64], "<u8").reshape(4, 2)
    assert entries[:, 0].tolist() == [68, 68 + 2048, 68 + 4096, 68 + 6144]  # absolute offsets
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[40:50, 3:60:7], data[40:50, 3:60:7])


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("empty", [{1, 2}, {0}, {3}, {0, 1, 2}], ids=str)
def test_spec_example_empty_inner_chunks_are_max_uint64_twice(location, empty):
    data = _data((64, 64), seed=3)
    for k in empty:
        i, j = divmod(k, 2)
        data[i * 32 : (i + 1) * 32, j * 32 : (j + 1) * 32] = 0
    store = MemoryStore()
    a = _sharded(store, (64, 64), (64, 64), sharding_config([32, 32], index_location=location))
    a[...] = data
    raw = store.get("c/0/0")
    assert raw == _expected_spec_example(data, location, empty)
    entries, _ = parse_shard(raw, (2, 2), index_location=location)
    for k in range(4):
        assert (entries[k].tolist() == [MAX, MAX]) == (k in empty)
    assert a.nchunks_initialized == 4 - len(empty)
    np.testing.assert_array_equal(a[...], data)
    for k in range(4):  # each inner chunk read on its own (partial reads)
        i, j = divmod(k, 2)
        region = (slice(i * 32, (i + 1) * 32), slice(j * 32, (j + 1) * 32))
        np.testing.assert_array_equal(a[region], data[region])


def test_spec_example_with_the_spec_configuration_gzip_inner_chunks():
    """The spec's own JSON (``bytes`` + ``gzip`` level 1 inside): the layout is
    checked piece by piece (gzip headers carry a timestamp), each piece gunzips
    to the inner chunk's C-order little-endian bytes."""
    data = _data((64, 64), seed=4, low=0) % 50  # compressible
    store = MemoryStore()
    a = _sharded(store, (64, 64), (64, 64), SPEC_CONFIG)
    a[...] = data
    assert json.loads(store.get("zarr.json"))["codecs"] == [SPEC_CONFIG]
    raw = store.get("c/0/0")
    entries, pieces = parse_shard(raw, (2, 2))
    assert is_compact_c_order(entries, 0)
    assert len(raw) == sum(len(p) for p in pieces) + 68
    for piece, block in zip(pieces, inner_blocks(data, (32, 32))):
        assert gzip.decompress(piece) == block.astype("<u2").tobytes()
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[33, 1:5], data[33, 1:5])


def test_index_size_follows_from_the_index_codecs():
    spec = ChunkSpec((64, 64), np.dtype("uint16"), 0)
    assert ShardingCodec((32, 32)).index_size(spec) == 68
    assert ShardingCodec((32, 32), index_codecs=[BytesCodec("little")]).index_size(spec) == 64
    assert ShardingCodec((8, 16)).index_size(spec) == 16 * 32 + 4
    assert ShardingCodec((32, 32), index_codecs=[BytesCodec("little"), Crc32cCodec(), Crc32cCodec()]).index_size(spec) == 72


def test_default_codecs_are_bytes_and_the_recommended_index_codecs():
    c = ShardingCodec((4, 4))
    assert c.to_json() == sharding_config([4, 4], [BYTES_LE])


@pytest.mark.parametrize("location", ["end", "start"])
def test_index_without_checksum_is_16_bytes_per_inner_chunk(location):
    data = _data((8, 6), dtype="int32", seed=5)
    store = MemoryStore()
    a = _sharded(store, (8, 6), (8, 6), sharding_config([4, 3], crc=False, index_location=location), dtype="int32")
    a[...] = data
    pieces = [b.astype("<i4").tobytes() for b in inner_blocks(data, (4, 3))]
    expected = build_shard(pieces, cps=(2, 2), index_location=location, crc=False)
    assert store.get("c/0/0") == expected
    assert len(expected) == 4 * 48 + 64
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[5, 4], data[5, 4])


def test_big_endian_index_and_inner_chunks():
    data = _data((8, 8), dtype="int32", seed=6)
    store = MemoryStore()
    big = {"name": "bytes", "configuration": {"endian": "big"}}
    a = _sharded(store, (8, 8), (8, 8), sharding_config([4, 8], [big], index_endian="big"), dtype="int32")
    a[...] = data
    pieces = [b.astype(">i4").tobytes() for b in inner_blocks(data, (4, 8))]
    assert store.get("c/0/0") == build_shard(pieces, cps=(2, 1), endian="big")
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[6, 1:3], data[6, 1:3])


def test_edge_shard_index_has_the_full_shape_and_padding_is_fill():
    """An edge shard encodes the whole shard shape: inner chunks reaching past
    the array are padded with the fill value, inner chunks wholly outside are
    empty entries (the index always has every possible inner chunk)."""
    fill = 7
    data = _data((40, 50), dtype="uint16", seed=7, low=8)
    store = MemoryStore()
    a = zarrdask.create_array(
        store, shape=(40, 50), dtype="uint16", chunks=(16, 16), shards=(32, 32), compressors=None, fill_value=fill
    )
    a[...] = data
    assert sorted(k for k in store.list() if k != "zarr.json") == ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    for coords in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        full = shard_array(data, coords, (32, 32), fill)
        pieces = [
            None if np.all(b == fill) else b.astype("<u2").tobytes() for b in inner_blocks(full, (16, 16))
        ]
        key = "c/" + "/".join(map(str, coords))
        assert store.get(key) == build_shard(pieces, cps=(2, 2)), key
    entries, _ = parse_shard(store.get("c/1/1"), (2, 2))
    # rows 32..39 / cols 32..49: inner (0,0) and (0,1) hold data, (1,*) lie outside
    assert entries[2].tolist() == [MAX, MAX] and entries[3].tolist() == [MAX, MAX]
    assert entries[0].tolist() == [0, 512] and entries[1].tolist() == [512, 512]
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[35:, 45:], data[35:, 45:])
    assert a.nshards == 4 and a.nchunks == 3 * 4


@pytest.mark.parametrize(
    "shape, inner, shard",
    [((24,), (4,), (12,)), ((6, 8, 10), (3, 2, 5), (6, 4, 10))],
    ids=["1d", "3d"],
)
def test_1d_and_3d_shards_byte_for_byte(shape, inner, shard):
    data = _data(shape, dtype="float32", seed=8)
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=shape, dtype="float32", chunks=inner, shards=shard, compressors=None)
    a[...] = data
    grid = tuple(-(-s // c) for s, c in zip(shape, shard))
    cps = tuple(s // c for s, c in zip(shard, inner))
    for coords in np.ndindex(*grid):
        full = shard_array(data, coords, shard, 0)
        pieces = [b.astype("<f4").tobytes() for b in inner_blocks(full, inner)]
        key = "c/" + "/".join(map(str, coords))
        assert store.get(key) == build_shard(pieces, cps=cps), key
    np.testing.assert_array_equal(a[...], data)


def test_0d_sharded_array_round_trip():
    """A 0-d array has one shard with one inner chunk; its index is a single
    (offset, nbytes) pair (shape ``() + (2,)``)."""
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(), dtype="int32", chunks=(), shards=(), compressors=None, fill_value=0)
    a[...] = 5
    assert store.get("c") == build_shard([np.int32(5).astype("<i4").tobytes()], cps=())
    assert a[...] == 5
    assert a[()] == 5


def test_nested_sharding_layout_and_reads():
    """Sharding inside sharding: the outer shard's inner chunks are themselves shards."""
    inner_sharding = sharding_config([4, 4], [BYTES_LE, ZSTD])
    outer = sharding_config([8, 8], [inner_sharding], index_location="start")
    data = _data((40, 30), dtype="int16", seed=9)
    data[0:8, 0:8] = 0  # an empty (8, 8) chunk of the outer shard
    data[16:20, 16:20] = 0  # an empty (4, 4) chunk inside an (8, 8) one
    store = CountingStore(MemoryStore())
    a = _sharded(store, data.shape, (16, 16), outer, dtype="int16")
    a[...] = data
    assert a.chunks == (8, 8) and a.shards == (16, 16)
    assert a.nchunks_initialized == count_nonfill_inner(data, (8, 8), 0) == 19
    outer_entries, outer_pieces = parse_shard(store.get("c/1/1"), (2, 2), index_location="start")
    assert is_compact_c_order(outer_entries, 68)
    # the (8, 8) chunk at rows 16..23, cols 16..23 is a shard whose first (4, 4) chunk is empty
    inner_entries, _ = parse_shard(outer_pieces[0], (2, 2))
    assert inner_entries[0].tolist() == [MAX, MAX] and is_compact_c_order(inner_entries, 0)
    np.testing.assert_array_equal(a[...], data)
    store.reset()
    assert a[17, 3] == data[17, 3]
    assert store.counts["get_ranges_calls"] == 2 and store.counts["get_many_calls"] == 0
    a[18:30, 2:5] = -3
    data[18:30, 2:5] = -3
    np.testing.assert_array_equal(a[...], data)


# =====================================================================================
# Reading shards in any layout
# =====================================================================================
LAYOUTS = {
    "reverse-with-gaps": dict(order=[5, 4, 3, 2, 1, 0], gaps=[b"\xaa" * 13, b"", b"\x00" * 7, b"junk", b"", b"x"]),
    "shuffled-lead-tail": dict(order=[3, 0, 5, 1, 4, 2], lead=b"\xff" * 33, tail=b"\x01" * 9),
    "c-order-gaps": dict(gaps=[b"z" * 100] * 6),
}


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("crc", [True, False], ids=["crc", "nocrc"])
@pytest.mark.parametrize("compressed", [False, True], ids=["raw", "gzip"])
def test_reader_accepts_any_order_with_gaps(layout, location, crc, compressed):
    """The spec leaves the order of inner chunks open and allows unused space;
    a hand-built shard with inner chunks in another order, junk between them
    and an empty inner chunk reads correctly, whole and in part."""
    fill = -1
    data = _data((12, 10), dtype="int32", seed=10)
    data[6:12, 0:5] = fill  # inner chunk (1, 0) is fill: an empty entry
    # a (12, 15) shard of (6, 5) inner chunks: 2 x 3 of them; the third column
    # lies outside the (12, 10) array. Inner chunk (0, 2) is stored anyway (all
    # fill: a writer may do that), (1, 2) is left out.
    blocks = inner_blocks(shard_array(data, (0, 0), (12, 15), fill), (6, 5))
    pieces = []
    for i, b in enumerate(blocks):
        if i in (3, 5):
            pieces.append(None)
            continue
        raw = b.astype("<i4").tobytes()
        pieces.append(gzip.compress(raw, 6) if compressed else raw)
    shard = build_shard(pieces, cps=(2, 3), index_location=location, crc=crc, **LAYOUTS[layout])
    inner_codecs = [BYTES_LE, GZIP1] if compressed else [BYTES_LE]
    store = MemoryStore()
    cfg = sharding_config([6, 5], inner_codecs, crc=crc, index_location=location)
    a = _sharded(store, (12, 10), (12, 15), cfg, dtype="int32", fill_value=fill)
    store.set("c/0/0", shard)
    np.testing.assert_array_equal(a[...], data)
    for sel in [(slice(0, 6), slice(5, 10)), (7, 3), (slice(None, None, -1), 9), (slice(2, 11, 3), slice(1, 10, 4))]:
        np.testing.assert_array_equal(a[sel], data[sel])
    np.testing.assert_array_equal(a.oindex[[11, 0, 5], [9, 0, 4, 5]], data[np.ix_([11, 0, 5], [9, 0, 4, 5])])
    # a partial write rewrites the shard compactly in C order, keeping every value
    a[0, 0] = 123
    data[0, 0] = 123
    entries, _ = parse_shard(store.get("c/0/0"), (2, 3), index_location=location, crc=crc)
    assert is_compact_c_order(entries, index_nbytes(6, crc) if location == "start" else 0)
    np.testing.assert_array_equal(a[...], data)


def test_reader_accepts_inner_chunks_sharing_bytes():
    """Two index entries may point at the same bytes (nothing in the spec forbids
    it, e.g. deduplicating identical inner chunks)."""
    block = np.arange(16, dtype="<u2").reshape(4, 4)
    piece = block.tobytes()
    entries = np.array([[0, 32], [0, 32], [MAX, MAX], [0, 32]], dtype=np.uint64).reshape(2, 2, 2)
    shard = piece + encode_index(entries)
    store = MemoryStore()
    a = _sharded(store, (8, 8), (8, 8), sharding_config([4, 4]))
    store.set("c/0/0", shard)
    expected = np.zeros((8, 8), "uint16")
    expected[0:4, 0:4] = expected[0:4, 4:8] = expected[4:8, 4:8] = block
    np.testing.assert_array_equal(a[...], expected)
    np.testing.assert_array_equal(a[2:6, 2:6], expected[2:6, 2:6])


def test_nchunks_initialized_ignores_inner_chunks_outside_the_array():
    """The index has entries for inner chunks past the array's edge and another
    writer may fill them in; they are not chunks of the array, so
    ``nchunks_initialized`` (at most ``nchunks``) must not count them."""
    block = np.ones((4, 4), "<u2")
    # a (3, 6) array in one (8, 8) shard of (4, 4) inner chunks: inner row 1 is wholly outside
    store = MemoryStore()
    a = _sharded(store, (3, 6), (8, 8), sharding_config([4, 4]))
    store.set("c/0/0", build_shard([block.tobytes(), None, block.tobytes(), block.tobytes()], cps=(2, 2)))
    expected = np.zeros((3, 6), "uint16")
    expected[:, 0:4] = 1
    np.testing.assert_array_equal(a[...], expected)  # the outside inner chunks are never seen
    assert a.nchunks == 2
    assert a.nchunks_initialized == 1


# =====================================================================================
# Writes
# =====================================================================================
@pytest.mark.parametrize("fill", [0, 9, np.nan], ids=["zero", "nine", "nan"])
def test_fill_valued_inner_chunks_are_left_out(fill):
    data = _data((16, 16), dtype="float32", seed=11)
    data[0:4, 4:8] = fill
    data[8:12, :] = fill
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(16, 16), dtype="float32", chunks=(4, 4), shards=(16, 16),
                              compressors=[ZSTD], fill_value=fill)
    a[...] = data
    entries, pieces = parse_shard(store.get("c/0/0"), (4, 4))
    empty = {i for i, p in enumerate(pieces) if p is None}
    assert empty == {1, 8, 9, 10, 11}
    assert all(entries[i].tolist() == [MAX, MAX] for i in empty)
    assert a.nchunks_initialized == 11
    np.testing.assert_array_equal(a[...], data)
    # a partial write turning one more inner chunk into fill empties its entry
    a[12:16, 12:16] = fill
    data[12:16, 12:16] = fill
    entries, pieces = parse_shard(store.get("c/0/0"), (4, 4))
    assert {i for i, p in enumerate(pieces) if p is None} == {1, 8, 9, 10, 11, 15}
    assert a.nchunks_initialized == 10
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("many", [False, True], ids=["entries-as-python-ints", "entries-kept-in-numpy"])
def test_whole_shards_decode_the_same_whatever_their_number_of_inner_chunks(monkeypatch, many):
    # shards of many inner chunks keep their index entries and regions in numpy
    # rather than as Python objects; both ways read the same, empty entries included
    from zarrdask.codecs.sharding import codec as sharding_codec

    if many:
        monkeypatch.setattr(sharding_codec, "_MANY_INNER", 3)
    data = _data((16, 24), dtype="float32", seed=5)
    data[4:8, 0:4] = -1.0
    data[12:16, 20:24] = -1.0
    a = zarrdask.create_array(MemoryStore(), shape=(16, 24), dtype="float32", chunks=(4, 4), shards=(8, 12),
                              compressors=[ZSTD], fill_value=-1.0)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[:8, :12], data[:8, :12])  # one shard read whole
    codec = a.layout.codec.array_bytes  # the sharding codec
    spec = ChunkSpec((8, 12), np.dtype("float32"), -1.0)
    assert codec._inner_regions(spec)[5] == (slice(4, 8), slice(8, 12))  # 2 x 3 inner chunks, C order
    assert (codec._inner_regions(spec) is codec._inner_regions(spec)) is not many  # kept only when few


def test_shard_of_only_fill_is_deleted_and_never_created():
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=(20, 20), dtype="int32", chunks=(5, 5), shards=(10, 10), fill_value=3)
    a[...] = 3  # every inner chunk is fill: no shard is created
    assert [k for k in store.list() if k != "zarr.json"] == []
    assert a.nshards_initialized == 0 and a.nchunks_initialized == 0
    data = np.full((20, 20), 3, dtype="int32")
    data[1, 1] = 4
    data[12:20, 12:20] = 5
    a[...] = data
    assert sorted(k for k in store.list() if k != "zarr.json") == ["c/0/0", "c/1/1"]
    assert a.nshards_initialized == 2 and a.nchunks_initialized == 1 + 4
    # a partial write that leaves shard (0, 0) all fill deletes it
    a[1, 1] = 3
    assert not store.exists("c/0/0")
    # a whole-shard write of fill deletes shard (1, 1)
    store.reset()
    a[10:20, 10:20] = 3
    assert store.counts["delete_calls"] == 1 and store.counts["keys_written"] == 0
    assert not store.exists("c/1/1")
    assert a.nshards_initialized == 0
    np.testing.assert_array_equal(a[...], np.full((20, 20), 3))


def test_write_empty_chunks_true_stores_fill_valued_inner_chunks():
    """With ``write_empty_chunks=True`` chunks equal to the fill value are
    stored; for a sharded array the chunks are the inner chunks (``a.chunks``),
    as in zarr-python, which then writes every inner chunk of the shard."""
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(8, 8), dtype="uint8", chunks=(4, 4), shards=(8, 8),
                              compressors=None, fill_value=0, write_empty_chunks=True)
    data = np.zeros((8, 8), "uint8")
    data[0:4, 0:4] = 1
    a[...] = data
    entries, pieces = parse_shard(store.get("c/0/0"), (2, 2))
    assert all(p is not None for p in pieces), entries.tolist()
    assert a.nchunks_initialized == a.nchunks == 4


@pytest.mark.parametrize("location", ["end", "start"])
def test_writer_lays_out_inner_chunks_in_c_order(location):
    """Compressed inner chunks (of varying sizes) are written back to
    back in C order, the index right after (or before) them; a partial write
    into the middle of the shard re-lays it out the same way."""
    data = (_data((12, 12, 6), dtype="int32", seed=12) % 1000).astype("int32")
    store = MemoryStore()
    a = _sharded(store, data.shape, (12, 12, 6), sharding_config([4, 4, 3], [BYTES_LE, ZSTD], index_location=location),
                 dtype="int32")
    a[...] = data
    cps = (3, 3, 2)
    isz = index_nbytes(18)
    start = isz if location == "start" else 0
    raw = store.get("c/0/0/0")
    entries, pieces = parse_shard(raw, cps, index_location=location)
    assert is_compact_c_order(entries, start)
    assert layout_order(entries) == list(range(18))
    assert len(raw) == isz + sum(len(p) for p in pieces)
    a[5:7, 5:7, 2:4] = 0  # touches inner chunks (1,1,0) and (1,1,1) only
    data[5:7, 5:7, 2:4] = 0
    raw2 = store.get("c/0/0/0")
    entries2, pieces2 = parse_shard(raw2, cps, index_location=location)
    assert is_compact_c_order(entries2, start)
    assert len(raw2) == isz + sum(len(p) for p in pieces2)
    changed = {i for i in range(18) if pieces[i] != pieces2[i]}
    assert changed == {np.ravel_multi_index((1, 1, 0), cps), np.ravel_multi_index((1, 1, 1), cps)}
    np.testing.assert_array_equal(a[...], data)


# =====================================================================================
# I/O: requests and bytes
# =====================================================================================
def _counting_array(compressors, location="end", base=None):
    store = CountingStore(base if base is not None else MemoryStore())
    cfg = sharding_config([32, 32], [BYTES_LE, *compressors], index_location=location)
    a = _sharded(store, (128, 128), (64, 64), cfg)
    data = (_data((128, 128), seed=13) % 300).astype("uint16")
    a[...] = data
    store.reset()
    return store, a, data


def _inner_nbytes(store, key, flat_id, location="end"):
    entries, _ = parse_shard(store.store.get(key), (2, 2), index_location=location)
    return int(entries[flat_id, 1])


@pytest.mark.parametrize("compressors", [[], [ZSTD]], ids=["raw", "zstd"])
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("sel", [(slice(64, 96), slice(96, 128)), (70, 100), (slice(65, 90, 3), 127)], ids=["inner", "element", "strided"])
def test_reading_one_inner_chunk_is_two_requests(compressors, location, sel):
    store, a, data = _counting_array(compressors, location)
    np.testing.assert_array_equal(a[sel], data[sel])
    c = store.counts
    assert c["get_ranges_calls"] == 2 and c["ranges_requested"] == 2  # the index, then the inner chunk
    assert c["get_many_calls"] == 0 and c["keys_requested"] == 0
    chunk_nbytes = _inner_nbytes(store, "c/1/1", 1, location)  # inner chunk (0, 1) of shard (1, 1)
    assert c["bytes_read"] <= 68 + chunk_nbytes + 8
    assert c["bytes_read"] == 68 + chunk_nbytes


def test_reading_several_inner_chunks_of_one_shard_is_still_two_requests():
    store, a, data = _counting_array([])
    np.testing.assert_array_equal(a[0:32, 0:64], data[0:32, 0:64])  # two adjacent inner chunks: coalesced
    assert store.counts["get_ranges_calls"] == 2 and store.counts["get_many_calls"] == 0
    assert store.counts["bytes_read"] == 68 + 2 * 2048


def test_far_apart_inner_chunks_are_separate_ranges_of_one_call():
    """Inner chunks (0, 0) and (1, 0) of a shard have 2048 bytes between them:
    with ``coalesce_gap`` below that they are two ranges, above it one range;
    either way the index and the inner chunks take two ``get_ranges`` calls."""
    store, a, data = _counting_array([])
    sel = (np.array([0, 63]), np.array([0, 31]))
    with zarrdask.config.set(coalesce_gap=0):
        np.testing.assert_array_equal(a.oindex[sel], data[np.ix_(*sel)])
    c = store.counts
    assert c["get_ranges_calls"] == 2 and c["ranges_requested"] == 3
    assert c["bytes_read"] == 68 + 2 * 2048
    store.reset()
    with zarrdask.config.set(coalesce_gap=1 << 20):
        np.testing.assert_array_equal(a.oindex[sel], data[np.ix_(*sel)])
    c = store.counts
    assert c["get_ranges_calls"] == 2 and c["ranges_requested"] == 2
    assert c["bytes_read"] == 68 + 3 * 2048  # the gap between them is read too


def test_reading_an_empty_inner_chunk_or_a_missing_shard_reads_only_the_index():
    store = CountingStore(MemoryStore())
    a = zarrdask.create_array(store, shape=(128, 128), dtype="uint16", chunks=(32, 32), shards=(64, 64), compressors=None)
    a[0:32, 0:32] = 1  # shard (0, 0) holds one inner chunk
    store.reset()
    assert (a[40:50, 40:50] == 0).all()  # an empty inner chunk of shard (0, 0)
    assert store.counts["get_ranges_calls"] == 1 and store.counts["bytes_read"] == 68
    store.reset()
    assert (a[100:110, 100:110] == 0).all()  # shard (1, 1) does not exist
    assert store.counts["get_ranges_calls"] == 1 and store.counts["bytes_read"] == 0


@pytest.mark.parametrize("compressors", [[], [ZSTD]], ids=["raw", "zstd"])
def test_reading_whole_shards_fetches_each_once(compressors):
    store, a, data = _counting_array(compressors)
    np.testing.assert_array_equal(a[64:128, 0:64], data[64:128, 0:64])
    c = store.counts
    assert c["get_many_calls"] == 1 and c["keys_requested"] == 1
    assert c["get_ranges_calls"] == 0
    assert c["bytes_read"] == len(store.store.get("c/1/0"))
    store.reset()
    np.testing.assert_array_equal(a[...], data)
    c = store.counts
    assert c["get_many_calls"] == 1 and c["keys_requested"] == 4 and c["get_ranges_calls"] == 0
    assert c["bytes_read"] == sum(len(store.store.get(k)) for k in ["c/0/0", "c/0/1", "c/1/0", "c/1/1"])


def test_writing_whole_shards_reads_nothing_and_writes_each_shard_once():
    store, a, data = _counting_array([ZSTD])
    a[...] = data[::-1]
    c = store.counts
    assert c["get_many_calls"] == 0 and c["get_ranges_calls"] == 0 and c["bytes_read"] == 0
    assert c["keys_written"] == 4 and c["set_calls"] == 1
    store.reset()
    a[0:64, 64:128] = 5
    c = store.counts
    assert c["get_many_calls"] == 0 and c["get_ranges_calls"] == 0
    assert c["keys_written"] == 1 and c["set_calls"] == 1


@pytest.mark.parametrize("sel", [(slice(0, 10), slice(0, 10)), (slice(0, 32), slice(0, 32)), (slice(3, 60, 5), 7)],
                         ids=["part-of-inner", "whole-inner", "strided"])
def test_partial_shard_write_reads_once_and_writes_once(sel):
    store, a, data = _counting_array([ZSTD])
    before = store.store.get("c/0/0")
    a[sel] = 9
    data[sel] = 9
    c = store.counts
    assert c["get_many_calls"] == 1 and c["keys_requested"] == 1 and c["get_ranges_calls"] == 0
    assert c["bytes_read"] == len(before)
    assert c["set_calls"] == 1 and c["keys_written"] == 1
    np.testing.assert_array_equal(a[...], data)


def test_partial_write_across_shards_batches_reads_and_writes():
    store, a, data = _counting_array([])
    a[60:70, 60:70] = 1
    data[60:70, 60:70] = 1
    c = store.counts
    assert c["get_many_calls"] == 1 and c["keys_requested"] == 4
    assert c["set_calls"] == 1 and c["keys_written"] == 4
    np.testing.assert_array_equal(a[...], data)


def test_local_store_partial_read_counts(tmp_path):
    store, a, data = _counting_array([ZSTD], base=LocalStore(str(tmp_path)))
    np.testing.assert_array_equal(a[10:20, 70:80], data[10:20, 70:80])
    assert store.counts["get_ranges_calls"] == 2 and store.counts["get_many_calls"] == 0
    assert store.counts["bytes_read"] == 68 + _inner_nbytes(store, "c/0/1", 0)


# -- over HTTP, counted in the store and in the server --------------------------------
def _served(server):
    """Every request the test HTTP server answered: ``(method, path, Range, status, body bytes)``."""
    return [(r.method, r.path, r.range, r.status, r.bytes_sent) for r in server.log.requests]


@pytest.mark.network
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("compressors", [[], [ZSTD]], ids=["raw", "zstd"])
def test_http_partial_read_is_two_range_requests(http_server, location, compressors):
    name = f"shard-{uuid.uuid4().hex[:8]}"
    cfg = sharding_config([32, 32], [BYTES_LE, *compressors], index_location=location)
    w = _sharded(str(http_server.root / name), (128, 128), (64, 64), cfg)
    data = (_data((128, 128), seed=14) % 300).astype("uint16")
    w[...] = data
    shard = (http_server.root / name / "c" / "1" / "0").read_bytes()
    entries, _ = parse_shard(shard, (2, 2), index_location=location)
    off, nbytes = (int(v) for v in entries[3])  # inner chunk (1, 1) of shard (1, 0)

    store = CountingStore(FsspecStore(f"{http_server.url}/{name}"))
    a = zarrdask.open_array(store, mode="r")
    store.reset()
    http_server.log.clear()
    np.testing.assert_array_equal(a[100:110, 40:60], data[100:110, 40:60])
    c = store.counts
    assert c["get_ranges_calls"] == 2 and c["ranges_requested"] == 2 and c["get_many_calls"] == 0
    assert c["bytes_read"] == 68 + nbytes
    # the server saw exactly two ranged GETs of the shard and moved index + chunk bytes
    path = f"/{name}/c/1/0"
    index_range = "bytes=-68" if location == "end" else "bytes=0-67"
    assert [(m, p, r, s) for m, p, r, s, _ in _served(http_server)] == [
        ("GET", path, index_range, 206),
        ("GET", path, f"bytes={off}-{off + nbytes - 1}", 206),
    ]
    assert sum(n for *_, n in _served(http_server)) == 68 + nbytes

    # a whole shard: one plain GET
    store.reset()
    http_server.log.clear()
    np.testing.assert_array_equal(a[0:64, 64:128], data[0:64, 64:128])
    assert store.counts["get_many_calls"] == 1 and store.counts["get_ranges_calls"] == 0
    assert [(m, p, r, s) for m, p, r, s, _ in _served(http_server)] == [("GET", f"/{name}/c/0/1", None, 200)]
    assert _served(http_server)[0][4] == len((http_server.root / name / "c" / "0" / "1").read_bytes())

    # a missing shard: the index request alone, answered 404, read as fill
    (http_server.root / name / "c" / "1" / "1").unlink()
    store.reset()
    http_server.log.clear()
    assert (a[70, 70:80] == 0).all()
    assert store.counts["get_ranges_calls"] == 1
    assert [(m, p, s) for m, p, _, s, _ in _served(http_server) if m == "GET"] == [("GET", f"/{name}/c/1/1", 404)]


@pytest.mark.network
def test_http_corrupt_shards_name_the_key(http_server):
    """Over HTTP an index entry past the end of the shard (the server answers
    416) and a flipped index byte are still reported against the shard's key."""
    name = f"shard-bad-{uuid.uuid4().hex[:8]}"
    w = _sharded(str(http_server.root / name), (64, 64), (64, 64), sharding_config([32, 32]))
    w[...] = (_data((64, 64), seed=16) % 300).astype("uint16")
    path = http_server.root / name / "c" / "0" / "0"
    raw = path.read_bytes()
    entries, _ = parse_shard(raw, (2, 2))
    entries = entries.copy()
    entries[0] = (len(raw) + 1000, 2048)
    path.write_bytes(raw[:-68] + encode_index(entries))
    a = zarrdask.open_array(FsspecStore(f"{http_server.url}/{name}"), mode="r")
    for sel in [(5, 5), (slice(0, 32), slice(0, 32)), Ellipsis]:
        with pytest.raises(CorruptChunkError, match="'c/0/0'"):
            a[sel]
    flipped = bytearray(raw)
    flipped[-20] ^= 1
    path.write_bytes(bytes(flipped))
    for sel in [(5, 5), Ellipsis]:
        with pytest.raises(ChecksumError, match="c/0/0"):
            a[sel]


# =====================================================================================
# Corruption
# =====================================================================================
PATH = "g/arr"
KEY = "g/arr/c/1/0"  # the shard the corruption tests damage
READS = {
    "whole": (slice(64, 128), slice(0, 64)),  # the whole shard: one get
    "inner": (slice(64, 96), slice(0, 32)),  # one inner chunk: index + chunk ranges
    "element": (65, 1),
    "oindex": ("o", ([64, 127], [0, 63])),
}


def _corruptible(location="end", crc=True, compressors=()):
    store = MemoryStore()
    cfg = sharding_config([32, 32], [BYTES_LE, *compressors], crc=crc, index_location=location)
    a = _sharded(store, (128, 128), (64, 64), cfg, path=PATH)
    a[...] = (_data((128, 128), seed=15) % 1000).astype("uint16")
    return store, a


def _read(a, how):
    sel = READS[how]
    if sel[0] == "o":
        return a.oindex[sel[1]]
    return a[sel]


def _rewrite_index(raw: bytes, location: str, entries: np.ndarray, crc: bool = True) -> bytes:
    isz = index_nbytes(4, crc)
    index = encode_index(entries, crc=crc)
    return index + raw[isz:] if location == "start" else raw[: len(raw) - isz] + index


@pytest.mark.parametrize("how", list(READS))
@pytest.mark.parametrize("location", ["end", "start"])
def test_index_checksum_mismatch_raises_checksum_error_naming_the_shard(location, how):
    store, a = _corruptible(location)
    raw = bytearray(store.get(KEY))
    raw[len(raw) - 30 if location == "end" else 30] ^= 0x01  # a byte of an entry inside the index
    store.set(KEY, bytes(raw))
    with pytest.raises(ChecksumError, match=KEY):
        _read(a, how)
    a[0:64, 0:64]  # other shards are unaffected


@pytest.mark.parametrize("how", list(READS))
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize(
    "bad",
    ["past-end", "straddles-end", "overflows-uint64", "offset-max-only", "nbytes-max-only"],
)
def test_index_entry_outside_the_shard_raises_corrupt_chunk_error(location, how, bad):
    store, a = _corruptible(location)
    raw = store.get(KEY)
    entries, _ = parse_shard(raw, (2, 2), index_location=location)
    entries = entries.copy()
    n = len(raw)
    entries[0] = {
        "past-end": (n + 100, 2048),
        "straddles-end": (n - 1000, 2048),
        "overflows-uint64": (2**63, 2**63 + 10),
        "offset-max-only": (MAX, 2048),
        "nbytes-max-only": (0, MAX),
    }[bad]
    store.set(KEY, _rewrite_index(raw, location, entries))
    with pytest.raises(CorruptChunkError, match=KEY) as e:
        _read(a, how)
    assert not isinstance(e.value, ChecksumError)


@pytest.mark.parametrize("how", list(READS))
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("cut", [1, 100, 2048 + 68, None], ids=["1", "100", "chunk+index", "all-but-10"])
def test_truncated_shard_raises_corrupt_chunk_error(location, how, cut):
    """A shard cut short: with the index at the end the index bytes are wrong
    (checksum); with the index at the start the entries of the last inner chunk
    point past the end; shorter than the index it is reported as truncated.
    Reads that touch the lost inner chunk (1, 1) must fail either way."""
    store, a = _corruptible(location)
    raw = store.get(KEY)
    keep = 10 if cut is None else len(raw) - cut
    store.set(KEY, raw[:keep])
    sel = {"whole": READS["whole"], "inner": (slice(96, 128), slice(32, 64)), "element": (127, 63),
           "oindex": ("o", ([64, 127], [0, 63]))}[how]
    with pytest.raises(CorruptChunkError, match=KEY):
        a.oindex[sel[1]] if sel[0] == "o" else a[sel]


@pytest.mark.parametrize("how", list(READS))
def test_shard_shorter_than_its_index_is_reported_as_truncated(how):
    store, a = _corruptible("end")
    for value in (b"", b"\x00" * 67):
        store.set(KEY, value)
        with pytest.raises(CorruptChunkError, match=f"{KEY}.*truncated"):
            _read(a, how)


@pytest.mark.parametrize("how", list(READS))
def test_entry_with_the_wrong_size_for_raw_inner_chunk(how):
    """``nbytes`` too small for a ``bytes``-encoded inner chunk: an error, not
    a short or shifted chunk."""
    store, a = _corruptible("end", crc=False)
    raw = store.get(KEY)
    entries, _ = parse_shard(raw, (2, 2), crc=False)
    entries = entries.copy()
    entries[0, 1] = 2046
    store.set(KEY, _rewrite_index(raw, "end", entries, crc=False))
    with pytest.raises(CorruptChunkError, match=KEY):
        _read(a, how)


@pytest.mark.parametrize("how", list(READS))
def test_corrupt_compressed_inner_chunk(how):
    store, a = _corruptible("end", compressors=[ZSTD])
    raw = bytearray(store.get(KEY))
    entries, _ = parse_shard(bytes(raw), (2, 2))
    raw[int(entries[0, 0]) + 6] ^= 0xFF
    store.set(KEY, bytes(raw))
    with pytest.raises(CorruptChunkError, match=KEY):
        _read(a, how)


@pytest.mark.parametrize("location", ["end", "start"])
def test_partial_write_into_a_corrupt_shard_fails_and_changes_nothing(location):
    store, a = _corruptible(location)
    raw = bytearray(store.get(KEY))
    raw[len(raw) - 30 if location == "end" else 30] ^= 0x01
    store.set(KEY, bytes(raw))
    before = dict((k, store.get(k)) for k in store.list())
    with pytest.raises(ChecksumError, match=KEY):
        a[60:70, 0:10] = 1  # shards (0, 0) and (1, 0): neither is written
    assert dict((k, store.get(k)) for k in store.list()) == before
    with pytest.raises(ChecksumError, match=KEY):
        _ = a.nchunks_initialized


def test_corruption_errors_are_value_errors_and_zarrdask_errors():
    assert issubclass(ChecksumError, CorruptChunkError)
    assert issubclass(CorruptChunkError, ValueError) and issubclass(CorruptChunkError, ZarrdaskError)


# =====================================================================================
# Configuration validation
# =====================================================================================
def _doc(sharding, shard=(64, 64), shape=(128, 128)):
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [sharding], "attributes": {},
    }


def _cfg(**changes):
    cfg = sharding_config([32, 32])
    cfg["configuration"].update(changes)
    return cfg


GZIP_INDEX = [BYTES_LE, GZIP1]
ZSTD_INDEX = [BYTES_LE, ZSTD]

BAD_CONFIGS = {
    # name: (configuration, error type, message pattern)
    "not-dividing": (_cfg(chunk_shape=[30, 32]), MetadataError, r"\[30, 32\].*divide.*\[64, 64\]"),
    "wrong-rank": (_cfg(chunk_shape=[32]), MetadataError, r"\[32\].*1 dimensions.*\[64, 64\].*2"),
    "rank-too-high": (_cfg(chunk_shape=[32, 32, 1]), MetadataError, r"3 dimensions"),
    "gzip-index": (_cfg(index_codecs=GZIP_INDEX), CodecError, r"index codecs.*gzip.*variable-size"),
    "zstd-index": (_cfg(index_codecs=ZSTD_INDEX), CodecError, r"index codecs.*zstd.*variable-size"),
    "bad-location": (_cfg(index_location="middle"), CodecError, r"index_location.*'start' or 'end'.*'middle'"),
    "location-not-a-string": (_cfg(index_location=1), CodecError, r"index_location"),
    "zero-chunk": (_cfg(chunk_shape=[0, 32]), CodecError, r"chunk_shape.*positive"),
    "negative-chunk": (_cfg(chunk_shape=[-32, 32]), CodecError, r"chunk_shape.*positive"),
    "non-integer-chunk": (_cfg(chunk_shape=[32.5, 32]), CodecError, r"chunk_shape.*integer"),
    "string-chunk": (_cfg(chunk_shape="32"), CodecError, r"chunk_shape"),
    "no-array-bytes-in-index": (_cfg(index_codecs=[{"name": "crc32c"}]), MetadataError, r"index_codecs"),
    "no-array-bytes-inside": (_cfg(codecs=[GZIP1]), MetadataError, r"sharding_indexed.codecs"),
    "two-array-bytes-in-index": (_cfg(index_codecs=[BYTES_LE, BYTES_LE]), MetadataError, r"index_codecs"),
    "empty-index-codecs": (_cfg(index_codecs=[]), CodecError, r"index_codecs"),
    "unknown-field": (_cfg(foo=1), CodecError, r"unknown configuration field.*foo"),
}


def _missing(field):
    cfg = sharding_config([32, 32])
    del cfg["configuration"][field]
    return cfg


for _field in ("chunk_shape", "codecs", "index_codecs"):
    BAD_CONFIGS[f"missing-{_field}"] = (_missing(_field), CodecError, rf"missing.*{_field}")


@pytest.mark.parametrize("name", list(BAD_CONFIGS))
def test_bad_configuration_at_create_time(name):
    cfg, error, pattern = BAD_CONFIGS[name]
    store = MemoryStore()
    with pytest.raises(error, match=pattern):
        _sharded(store, (128, 128), (64, 64), cfg)
    assert list(store.list()) == []  # nothing written


@pytest.mark.parametrize("name", list(BAD_CONFIGS))
def test_bad_hand_written_metadata_fails_with_a_typed_error_on_use(name):
    cfg, error, pattern = BAD_CONFIGS[name]
    store = MemoryStore({"zarr.json": json.dumps(_doc(cfg)).encode()})
    with pytest.raises(error, match=pattern):
        a = zarrdask.open_array(store, mode="r")
        a[0, 0]


def test_bad_hand_written_metadata_fails_when_opened():
    """Opening an array whose sharding configuration is invalid fails at once
    (as zarr-python and tensorstore do), not at the first read or write.
    One test over every bad configuration: they share one cause."""
    opened = []
    for name, (cfg, error, pattern) in BAD_CONFIGS.items():
        store = MemoryStore({"zarr.json": json.dumps(_doc(cfg)).encode()})
        try:
            zarrdask.open_array(store, mode="r")
        except error as e:
            assert re.search(pattern, str(e)), (name, str(e))
            continue
        opened.append(name)
    assert opened == [], f"open_array accepted invalid sharding configurations: {opened}"


def test_create_array_shards_must_be_a_multiple_of_chunks():
    with pytest.raises(MetadataError, match=r"shards \(64, 64\).*multiple of chunks \(30, 30\)"):
        zarrdask.create_array(MemoryStore(), shape=(128, 128), dtype="uint8", chunks=(30, 30), shards=(64, 64))
    with pytest.raises(MetadataError, match=r"shards \(64,\).*2 dimensions"):
        zarrdask.create_array(MemoryStore(), shape=(128, 128), dtype="uint8", chunks=(32, 32), shards=(64,))
    with pytest.raises(ValueError, match="Zarr v2 has no sharding"):
        zarrdask.create_array(MemoryStore(), shape=(128, 128), dtype="uint8", chunks=(32, 32), shards=(64, 64),
                              zarr_format=2)


def test_codec_objects_validate_like_json():
    with pytest.raises(CodecError, match="index_location"):
        ShardingCodec((32, 32), index_location="begin")
    with pytest.raises(CodecError, match="variable-size"):
        _sharded(MemoryStore(), (64, 64), (64, 64), ShardingCodec((32, 32), index_codecs=[BytesCodec(), GzipCodec(1)]))
    with pytest.raises(MetadataError, match="divide"):
        _sharded(MemoryStore(), (64, 64), (64, 64), ShardingCodec((24, 32)))


def test_array_properties_sharded_and_not():
    a = zarrdask.create_array(MemoryStore(), shape=(100, 50), dtype="int8", chunks=(10, 5), shards=(20, 25))
    assert a.chunks == (10, 5) and a.shards == (20, 25)
    assert a.nshards == 5 * 2 and a.nchunks == 10 * 10
    assert a.nshards_initialized == 0 and a.nchunks_initialized == 0
    a[0:11, 0:6] = 1
    assert a.nshards_initialized == 1 and a.nchunks_initialized == 4
    assert isinstance(a._sharding, ShardingCodec)
    # the codecs inside the shards, as zarr-python reports them
    assert type(a.serializer).__name__ == "BytesCodec" and a.filters == ()
    assert [type(c).__name__ for c in a.compressors] == ["ZstdCodec"]
    b = zarrdask.create_array(MemoryStore(), shape=(100, 50), dtype="int8", chunks=(10, 5))
    assert b.chunks == (10, 5) and b.shards is None and b.nshards is None and b.nshards_initialized is None


def test_codec_json_round_trip_and_evolve():
    cfg = sharding_config([4, 4], [BYTES_LE, ZSTD], crc=False, index_location="start")
    from zarrdask.codecs.registry import codec_from_json

    codec = codec_from_json(cfg)
    assert isinstance(codec, ShardingCodec)
    assert codec.to_json() == cfg
    # evolve fills in dtype-dependent settings of the inner codecs (bytes for 1-byte types)
    evolved = codec.complete(ChunkSpec((8, 8), np.dtype("uint8"), 0))
    assert evolved.get_config()["codecs"][0] == {"name": "bytes"}
    assert MAX_UINT64 == np.uint64(MAX)


# =====================================================================================
# Hypothesis: random geometries and selections against numpy
# =====================================================================================
@st.composite
def geometries(draw):
    ndim = draw(st.integers(1, 3))
    inner = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shard = tuple(c * draw(st.integers(1, 3)) for c in inner)
    shape = tuple(draw(st.integers(0, 2 * s + 3)) for s in shard)
    location = draw(st.sampled_from(["start", "end"]))
    compressed = draw(st.booleans())
    crc = draw(st.booleans())
    return shape, inner, shard, location, compressed, crc


def _basic_selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "int", "all"])) if n else "all"
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "all":
            sel.append(slice(None))
        else:
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            step = draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
            sel.append(slice(start, stop, step))
    return tuple(sel)


def _orthogonal_selection(draw, shape, unique):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["ints", "mask", "slice"])) if n else "slice"
        if kind == "ints":
            ints = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(n, 5), unique=unique))
            sel.append(np.array(ints, dtype=np.intp))
        elif kind == "mask":
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
        else:
            sel.append(slice(draw(st.integers(0, n)), None, draw(st.sampled_from([1, 2]))))
    return tuple(sel)


def _ix(sel):
    """The numpy equivalent of an orthogonal selection of slices and index arrays."""
    arrays = []
    for s, n in sel:
        if isinstance(s, slice):
            arrays.append(np.arange(n)[s])
        elif s.dtype == bool:
            arrays.append(np.flatnonzero(s))
        else:
            arrays.append(s)
    return np.ix_(*arrays)


def _make(geometry, fill):
    shape, inner, shard, location, compressed, crc = geometry
    codecs = [BYTES_LE, ZSTD] if compressed else [BYTES_LE]
    store = MemoryStore()
    a = _sharded(store, shape, shard, sharding_config(inner, codecs, crc=crc, index_location=location),
                 dtype="int32", fill_value=fill)
    return store, a


HYPOTHESIS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@HYPOTHESIS
@given(data=st.data(), geometry=geometries())
def test_hypothesis_basic_selections(data, geometry):
    shape, inner = geometry[0], geometry[1]
    fill = -1
    store, a = _make(geometry, fill)
    model = np.full(shape, fill, dtype="int32")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    for _ in range(data.draw(st.integers(1, 3))):
        sel = _basic_selection(data.draw, shape)
        target = model[sel]
        value = rng.integers(-2, 5, size=np.shape(target)).astype("int32")  # -1 (fill) appears often
        a[sel] = value
        model[sel] = value
        sel = _basic_selection(data.draw, shape)
        np.testing.assert_array_equal(a[sel], model[sel])
    np.testing.assert_array_equal(a[...], model)
    assert a.nchunks_initialized == count_nonfill_inner(model, inner, fill)


@HYPOTHESIS
@given(data=st.data(), geometry=geometries())
def test_hypothesis_orthogonal_selections(data, geometry):
    shape, inner = geometry[0], geometry[1]
    fill = 0
    store, a = _make(geometry, fill)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    model = rng.integers(-3, 3, size=shape).astype("int32")
    a[...] = model
    for _ in range(data.draw(st.integers(1, 3))):
        sel = _orthogonal_selection(data.draw, shape, unique=True)
        ix = _ix(list(zip(sel, shape)))
        value = rng.integers(-1, 2, size=model[ix].shape).astype("int32")
        a.oindex[sel] = value
        model[ix] = value
        sel = _orthogonal_selection(data.draw, shape, unique=False)  # reads may repeat and reorder
        np.testing.assert_array_equal(a.oindex[sel], model[_ix(list(zip(sel, shape)))])
    np.testing.assert_array_equal(a[...], model)
    assert a.nchunks_initialized == count_nonfill_inner(model, inner, fill)


def test_the_index_check_gives_the_empty_entries_and_names_the_first_bad_one():
    from zarrdask.codecs.sharding.index import ShardIndex

    index = ShardIndex.empty((2, 3))
    flat = index.flat()
    flat[1] = (0, 100)
    flat[4] = (100, 50)
    np.testing.assert_array_equal(index.check(150, "k"), [True, False, True, True, False, True])
    np.testing.assert_array_equal(index.check(None, "k"), index.is_empty())
    flat[5] = (140, 20)  # past the end of a 150-byte shard, fine when the size is unknown
    index.check(None, "k")
    flat[3] = (2**63, 2**63 + 10)  # runs past 2**64 - 1, whatever the size
    for size in (150, None):
        with pytest.raises(CorruptChunkError, match=r"'k': index entry 3 \(offset 9223372036854775808"):
            index.check(size, "k")
    flat[3] = MAX, MAX
    with pytest.raises(CorruptChunkError, match="index entry 5 .* outside a shard of 150 bytes"):
        index.check(150, "k")


def test_a_codec_works_out_each_shard_shapes_layout_whatever_form_and_however_many():
    codec = ShardingCodec([2, 3])
    f4 = np.dtype("f4")
    for rows in range(2, 2 * 300, 2):  # more shard shapes than the codec keeps (a rectilinear grid's edges)
        for shape in ((rows, 6), [rows, 6]):
            spec = ChunkSpec(shape, f4, 0)
            assert codec.chunks_per_shard(spec) == (rows // 2, 2)
            assert codec.index_size(spec) == rows // 2 * 2 * 16 + 4
            assert codec._index_spec(spec).shape == (rows // 2, 2, 2)


def test_the_usual_index_is_its_checksum_and_a_view_of_its_entries(monkeypatch):
    # bytes (little-endian) and crc32c, the index codecs the specification
    # suggests: every partial read parses an index, without the chain's
    # general decode; anything else about it goes through the chain, which
    # says what is wrong
    from zarrdask.codecs.chain import CodecChain

    entries = np.array([[[0, 10], [10, 5]], [[MAX, MAX], [15, 1]]], dtype=np.uint64)
    spec = ChunkSpec((4, 4), np.dtype("f4"), 0.0, "C")
    decoded, real = [], CodecChain.decode

    def spy(self, *args, **kwargs):
        decoded.append(args[1].dtype)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CodecChain, "decode", spy)
    usual = ShardingCodec([2, 2])
    index = usual._decode_index(encode_index(entries), spec, "c/0/1")
    assert np.array_equal(index.entries, entries) and index.entries.dtype == np.uint64
    assert decoded == []
    bad = bytearray(encode_index(entries))
    bad[3] ^= 0x01
    with pytest.raises(ChecksumError, match="c/0/1"):
        usual._decode_index(bytes(bad), spec, "c/0/1")
    with pytest.raises(CorruptChunkError, match="c/0/1"):
        usual._decode_index(encode_index(entries)[:-1], spec, "c/0/1")
    assert len(decoded) == 2
    for index_codecs, stored in [
        ([{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "crc32c"}], encode_index(entries, endian="big")),
        ([{"name": "bytes", "configuration": {"endian": "little"}}], encode_index(entries, crc=False)),
    ]:
        decoded.clear()
        other = ShardingCodec([2, 2], index_codecs=index_codecs)
        assert np.array_equal(other._decode_index(stored, spec, "c/0/1").entries, entries)
        assert decoded == [np.dtype("uint64")]
