"""The ``n5_default`` codec (zarr-extensions codecs/n5_default), with real N5 data from tensorstore."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.gzip_codec import GzipCodec
from zarrdask.codecs.n5_default import N5DefaultCodec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.errors import CodecError, CorruptChunkError, MetadataError

EXAMPLE = Path("/work/shared/specs/zarr-extensions/codecs/n5_default/examples/zstd_array")
README_CODEC = {"name": "n5_default", "configuration": {"codecs": [
    {"name": "transpose", "configuration": {"order": [1, 0]}},
    {"name": "bytes", "configuration": {"endian": "big"}},
    {"name": "zstd", "configuration": {"level": 0, "checksum": False}}]}}
V2_KEYS = {"name": "v2", "configuration": {"separator": "/"}}


def _raw(ndim: int, endian: str | None = "big") -> N5DefaultCodec:
    bytes_codec = {"name": "bytes", "configuration": {"endian": endian}} if endian else {"name": "bytes"}
    return N5DefaultCodec([{"name": "transpose", "configuration": {"order": list(range(ndim - 1, -1, -1))}}, bytes_codec])


# -- configuration ----------------------------------------------------------------
def test_readme_json_round_trip():
    codec = codec_from_json(README_CODEC)
    assert isinstance(codec, N5DefaultCodec)
    assert codec.to_json() == README_CODEC
    assert codec_from_json(json.loads(json.dumps(codec.to_json()))) == codec
    assert json.loads((EXAMPLE / "zarr.json").read_text())["codecs"] == [README_CODEC]
    one_byte = {"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [2, 1, 0]}}, {"name": "bytes"}]}}
    assert codec_from_json(one_byte).to_json() == one_byte


def test_readme_example_array_reads_fill_value():
    arr = zarrdask.open_array(EXAMPLE, mode="r")
    assert arr.shape == (256, 128) and arr.dtype == np.float32
    data = arr[...]
    assert data.shape == (256, 128) and not data.any()


T2 = {"name": "transpose", "configuration": {"order": [1, 0]}}
BIG = {"name": "bytes", "configuration": {"endian": "big"}}


@pytest.mark.parametrize("configuration, match", [
    ({}, "'codecs' is required"),
    ({"codecs": [T2, BIG], "compression": "raw"}, "unknown configuration field"),
    ({"codecs": "bytes"}, "must be a list"),
    ({"codecs": [T2]}, "holds 1 codecs, expected 2 or 3"),
    ({"codecs": [T2, BIG, "zstd", "crc32c"]}, "holds 4 codecs, expected 2 or 3"),
    ({"codecs": [BIG, T2]}, r"codecs\[0\]' must be a 'transpose'"),
    ({"codecs": [{"name": "transpose", "configuration": {"order": [0, 1]}}, BIG]}, "not the full reversal"),
    ({"codecs": [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}, BIG]}, r"expected \[2, 1, 0\]"),
    ({"codecs": [T2, "zstd"]}, r"codecs\[1\]' must be a 'bytes'"),
    ({"codecs": [T2, {"name": "bytes", "configuration": {"endian": "little"}}]}, "expected \"big\""),
    ({"codecs": [T2, BIG, T2]}, r"codecs\[2\]' is 'transpose'.*expected a bytes→bytes"),
])
def test_bad_configuration(configuration, match):
    with pytest.raises(CodecError, match=match) as e:
        codec_from_json({"name": "n5_default", "configuration": configuration})
    assert "n5_default" in str(e.value)


@pytest.mark.parametrize("ndim, dtype, endian, match", [
    (3, "u2", "big", r"has 2 entries, expected 3"),
    (2, "bool", "big", "not an N5 data type"),
    (2, "f2", "big", "not an N5 data type"),
    (2, "c8", "big", "not an N5 data type"),
    (2, "u2", None, "may be omitted only for 1-byte"),
])
def test_validate_against_chunk(ndim, dtype, endian, match):
    codec = _raw(2, endian)
    with pytest.raises(CodecError, match=match):
        codec.validate(ChunkSpec((4,) * ndim, np.dtype(dtype), 0))


def test_validate_refuses_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e5m2, ml_dtypes.int4):
        with pytest.raises(CodecError, match="not an N5 data type"):
            _raw(1).validate(ChunkSpec((4,), np.dtype(t), 0))


def test_create_array_checks_the_codec(tmp_path):
    with pytest.raises((CodecError, MetadataError), match="not the full reversal|has 2 entries"):
        zarrdask.create_array(tmp_path / "x", shape=(4, 4, 4), dtype="u2", chunks=(2, 2, 2), compressors=None,
                              serializer=_raw(2))


# -- stored bytes ---------------------------------------------------------------------
def test_byte_exact_block():
    data = np.arange(6, dtype="uint16").reshape(2, 3)
    spec = ChunkSpec((2, 3), np.dtype("uint16"), 0)
    encoded = _raw(2).encode(data, spec)
    # mode 0, 2 dimensions, dims (2, 3) in Zarr order; elements big-endian with dimension 0 fastest
    expected = bytes.fromhex("0000" "0002" "00000002" "00000003") + struct.pack(">6H", 0, 3, 1, 4, 2, 5)
    assert encoded == expected
    np.testing.assert_array_equal(_raw(2).decode(expected, spec, "k"), data)


def test_round_trip_with_compressor_and_pickle():
    data = np.random.default_rng(0).random((7, 5, 3))
    spec = ChunkSpec(data.shape, data.dtype, 0.0)
    codec = N5DefaultCodec.from_compressor(3, GzipCodec(5))
    assert pickle.loads(pickle.dumps(codec)) == codec
    encoded = codec.encode(data, spec)
    assert encoded[:16] == struct.pack(">HH3I", 0, 3, 7, 5, 3) and encoded[16:18] == b"\x1f\x8b"
    np.testing.assert_array_equal(codec.decode(encoded, spec, "k"), data)
    out = np.empty((9, 5, 3))[1:8]
    codec.decode_into(encoded, spec, out, "k")
    np.testing.assert_array_equal(out, data)


def test_truncated_edge_block_is_padded_with_fill_value():
    # Java N5 writes the edge block of a (5, 7) array with block size (4, 3) at grid (1, 2) as shape (1, 1)
    spec = ChunkSpec((4, 3), np.dtype("int32"), 7)
    block = struct.pack(">HH2I", 0, 2, 1, 1) + struct.pack(">i", -5)
    got = _raw(2).decode(block, spec, "c/1/2")
    expected = np.full((4, 3), 7, dtype="int32")
    expected[0, 0] = -5
    np.testing.assert_array_equal(got, expected)
    # a (2, 3) block: elements stored with dimension 0 fastest
    block = struct.pack(">HH2I", 0, 2, 2, 3) + struct.pack(">6i", 0, 3, 1, 4, 2, 5)
    expected = np.full((4, 3), 7, dtype="int32")
    expected[:2] = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(_raw(2).decode(block, spec, "k"), expected)
    out = np.zeros((4, 3), dtype="int32")
    _raw(2).decode_into(block, spec, out, "k")
    np.testing.assert_array_equal(out, expected)


def test_larger_block_is_truncated():
    spec = ChunkSpec((2, 2), np.dtype("uint8"), 0)
    block = struct.pack(">HH2I", 0, 2, 3, 3) + bytes(np.arange(9, dtype="u1").reshape(3, 3).T.copy())
    np.testing.assert_array_equal(_raw(2, None).decode(block, spec, "k"), [[0, 1], [3, 4]])
    mixed = struct.pack(">HH2I", 0, 2, 1, 3) + bytes([1, 2, 3])  # smaller along 0, larger along 1
    np.testing.assert_array_equal(_raw(2, None).decode(mixed, spec, "k"), [[1, 2], [0, 0]])


# -- hostile blocks -----------------------------------------------------------------
SPEC_2D = ChunkSpec((4, 3), np.dtype("uint16"), 0)


@pytest.mark.parametrize("stored, match", [
    (b"\x00\x00\x00", "3 bytes, shorter than an N5 block header"),
    (struct.pack(">HHII", 1, 2, 4, 3) + bytes(4), r"mode 1 \(varlength\), expected 0"),
    (struct.pack(">HHII", 2, 2, 4, 3), r"mode 2 \(object\)"),
    (struct.pack(">HHIII", 0, 3, 4, 3, 1) + bytes(24), "declares 3 dimensions, expected 2"),
    (struct.pack(">HHI", 0, 2, 4), "shorter than the 12-byte N5 block header"),
    (struct.pack(">HHII", 0, 2, 65535, 65535), r"block of shape \[65535, 65535\].*expected at most"),
    (struct.pack(">HHII", 0, 2, 4, 3) + bytes(23), "expected 24 bytes"),
    (struct.pack(">HHII", 0, 2, 2, 3) + bytes(24), "expected 12 bytes"),
])
def test_hostile_blocks(stored, match):
    with pytest.raises(CorruptChunkError, match=match) as e:
        _raw(2).decode(stored, SPEC_2D, "arr/1/2")
    assert "arr/1/2" in str(e.value)


def test_hostile_compressed_block_is_bounded():
    codec = N5DefaultCodec.from_compressor(2, GzipCodec(1))
    big = codec.encode(np.zeros((64, 64), dtype="uint16"), ChunkSpec((64, 64), np.dtype("uint16"), 0))
    # a header claiming (4, 3) in front of a payload that inflates to 64 * 64 * 2 bytes
    forged = struct.pack(">HHII", 0, 2, 4, 3) + big[12:]
    with pytest.raises(CorruptChunkError, match="arr/0/0"):
        codec.decode(forged, SPEC_2D, "arr/0/0")
    assert N5DefaultCodec.block_limit(SPEC_2D) == 64 << 20
    assert N5DefaultCodec.block_limit(ChunkSpec((4096, 4096), np.dtype("f8"), 0)) == 4 * 4096 * 4096 * 8


# -- interop with tensorstore's n5 driver -----------------------------------------------
ts = pytest.importorskip("tensorstore")

N5_COMPRESSIONS = {
    "raw": ({"type": "raw"}, None),
    "gzip": ({"type": "gzip", "level": 6, "useZlib": False}, {"name": "gzip", "configuration": {"level": 6}}),
    "zstd": ({"type": "zstd", "level": 3}, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}),
}


def _zarr_json_for_n5(n5: dict, fill_value=0) -> dict:
    """The Zarr v3 document for N5 ``attributes.json`` (README "Storage"), by hand."""
    compression, codec = N5_COMPRESSIONS[n5["compression"]["type"]]
    ndim = len(n5["dimensions"])
    codecs = [{"name": "transpose", "configuration": {"order": list(range(ndim - 1, -1, -1))}},
              {"name": "bytes", "configuration": {"endian": "big"}}]
    return {
        "zarr_format": 3, "node_type": "array", "shape": n5["dimensions"], "data_type": n5["dataType"],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": n5["blockSize"]}},
        "chunk_key_encoding": V2_KEYS, "fill_value": fill_value,
        "codecs": [{"name": "n5_default", "configuration": {"codecs": codecs + ([codec] if codec else [])}}],
    }


@pytest.mark.parametrize("compression", sorted(N5_COMPRESSIONS))
@pytest.mark.parametrize("dtype", ["uint16", "float64", "int8"])
def test_read_n5_written_by_tensorstore(tmp_path, compression, dtype):
    shape, block = [13, 7, 5], [4, 3, 5]  # edge blocks along two dimensions
    data = (np.arange(np.prod(shape)).reshape(shape) % 120 - 7).astype(dtype)
    path = tmp_path / "n5arr"
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)},
                 "metadata": {"dimensions": shape, "blockSize": block, "dataType": dtype,
                              "compression": N5_COMPRESSIONS[compression][0]},
                 "create": True}).result()
    t[...] = data
    t[0:4, 3:6, :] = 0  # an all-zero block tensorstore may leave unwritten
    data[0:4, 3:6, :] = 0
    n5 = json.loads((path / "attributes.json").read_text())
    (path / "zarr.json").write_text(json.dumps(_zarr_json_for_n5(n5)))
    arr = zarrdask.open_array(path, mode="r")
    assert arr.shape == tuple(shape)
    np.testing.assert_array_equal(arr[...], data)
    np.testing.assert_array_equal(arr[5:13, 2:7, 1:3], data[5:13, 2:7, 1:3])


@pytest.mark.parametrize("compression", sorted(N5_COMPRESSIONS))
def test_tensorstore_reads_n5_written_by_zarrdask(tmp_path, compression):
    shape, block = (11, 9), (4, 4)
    data = np.random.default_rng(3).integers(-1000, 1000, shape).astype("int32")
    n5_compression, codec = N5_COMPRESSIONS[compression]
    path = tmp_path / "both"
    arr = zarrdask.create_array(path, shape=shape, dtype="int32", chunks=block, fill_value=0, compressors=None,
                                serializer=N5DefaultCodec.from_compressor(2, codec), chunk_key_encoding=V2_KEYS)
    arr[...] = data
    attributes = {"dimensions": list(shape), "blockSize": list(block), "dataType": "int32", "compression": n5_compression}
    (path / "attributes.json").write_text(json.dumps(attributes))
    edge = (path / "2" / "2").read_bytes()  # padded to the full block, as tensorstore writes
    assert edge[:12] == struct.pack(">HHII", 0, 2, 4, 4)
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}, "open": True}).result()
    assert t.shape == shape
    np.testing.assert_array_equal(t.read().result(), data)


def test_java_style_truncated_edge_blocks_in_an_array(tmp_path):
    shape, block = (5, 7), (4, 3)
    data = np.arange(35, dtype=">u2").reshape(shape).astype("uint16")
    path = tmp_path / "java"
    n5 = {"dimensions": list(shape), "blockSize": list(block), "dataType": "uint16", "compression": {"type": "raw"}}
    (path).mkdir()
    (path / "attributes.json").write_text(json.dumps(n5))
    (path / "zarr.json").write_text(json.dumps(_zarr_json_for_n5(n5, fill_value=0)))
    for i in range(2):
        for j in range(3):
            part = data[i * 4:(i + 1) * 4, j * 3:(j + 1) * 3]  # truncated at the edges
            body = np.ascontiguousarray(part.T).astype(">u2").tobytes()
            (path / str(i)).mkdir(exist_ok=True)
            (path / str(i) / str(j)).write_bytes(struct.pack(">HH2I", 0, 2, *part.shape) + body)
    np.testing.assert_array_equal(zarrdask.open_array(path, mode="r")[...], data)
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}, "open": True}).result()
    np.testing.assert_array_equal(t.read().result(), data)  # tensorstore reads the same blocks


# -- shards and rechunk ------------------------------------------------------------------
def test_shard_round_trip(tmp_path):
    data = np.random.default_rng(5).random((12, 10)).astype("float32")
    arr = zarrdask.create_array(tmp_path / "s.zarr", shape=data.shape, dtype=data.dtype, chunks=(3, 5), shards=(6, 10),
                                compressors=None, serializer=N5DefaultCodec.from_compressor(2, GzipCodec(1)))
    arr[...] = data
    back = zarrdask.open_array(tmp_path / "s.zarr", mode="r")
    np.testing.assert_array_equal(back[...], data)
    np.testing.assert_array_equal(back[4:11, 2:3], data[4:11, 2:3])
    doc = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())
    assert doc["codecs"][0]["configuration"]["codecs"][0]["name"] == "n5_default"


def test_rechunk_round_trip(tmp_path):
    data = np.random.default_rng(6).integers(0, 255, (13, 7, 5)).astype("uint8")
    src = zarrdask.create_array(tmp_path / "src", shape=data.shape, dtype=data.dtype, chunks=(4, 3, 5), compressors=None,
                                serializer=N5DefaultCodec.from_compressor(3), chunk_key_encoding=V2_KEYS)
    src[...] = data
    zarrdask.rechunk(src, (13, 2, 2), str(tmp_path / "dst"), max_mem="16MB").execute()
    dst = zarrdask.open_array(tmp_path / "dst", mode="r")
    assert dst.chunks == (13, 2, 2)
    np.testing.assert_array_equal(dst[...], data)
    assert json.loads((tmp_path / "dst" / "zarr.json").read_text())["codecs"][0]["name"] == "n5_default"
