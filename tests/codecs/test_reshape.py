"""The ``reshape`` codec (zarr-extensions codecs/reshape)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.codecs.reshape import ReshapeCodec
from zarrdask.codecs.transpose import TransposeCodec
from zarrdask.errors import CodecError, CorruptChunkError

from ._helpers import decode_with, encode_with, spec_of

README_CONFIG = {"shape": [[0, 1], [2], 3]}
README_CHUNK = (100, 50, 64, 3)


def _spec(shape, dtype="f4"):
    return ChunkSpec(tuple(shape), np.dtype(dtype), 0)


@pytest.mark.parametrize("config, a_shape, b_shape", [
    (README_CONFIG, README_CHUNK, (5000, 64, 3)),
    ({"shape": [-1]}, (4, 5, 6), (120,)),
    ({"shape": [[0, 1, 2]]}, (4, 5, 6), (120,)),
    ({"shape": [4, -1]}, (4, 5, 6), (4, 30)),
    ({"shape": [[0], [1, 2]]}, (4, 5, 6), (4, 30)),
    ({"shape": [[0, 1], 10, [3, 4]]}, (2, 3, 10, 4, 5), (6, 10, 20)),
    ({"shape": [2, 2, 30]}, (4, 5, 6), (2, 2, 30)),
    ({"shape": [[], -1, []]}, (4, 5), (1, 20, 1)),
    ({"shape": [[0], 1, [1]]}, (4, 5), (4, 1, 5)),
    ({"shape": [[0], 2, 15]}, (4, 5, 6), (4, 2, 15)),  # dimension 0 stays the raveled index of A's first
    ({"shape": [[0, 2]]}, (4, 1, 6), (24,)),  # a gap of size 1 satisfies every constraint
    ({"shape": [2, 4, [1]]}, (8, 16), (2, 4, 16)),  # valid per the README (zarrs 0.2.3 refuses it)
    ({"shape": [-1, 7]}, (7,), (1, 7)),
    ({"shape": []}, (), ()),
    ({"shape": [1, 1]}, (), (1, 1)),
])
def test_encoded_shape_and_round_trip(config, a_shape, b_shape):
    codec = ReshapeCodec.from_config(config)
    spec = _spec(a_shape)
    codec.validate(spec)
    assert codec.encoded_spec(spec) == _spec(b_shape)
    data = np.arange(int(np.prod(a_shape)), dtype="f4").reshape(a_shape)
    encoded = codec.encode(data, spec)
    assert encoded.shape == b_shape
    np.testing.assert_array_equal(encoded.ravel(), data.ravel())  # ravel(B) == ravel(A)
    decoded = codec.decode(encoded, spec)
    np.testing.assert_array_equal(decoded, data)


def test_views_when_possible():
    codec = ReshapeCodec([-1])
    data = np.arange(24, dtype="i2").reshape(2, 3, 4)
    encoded = codec.encode(data, spec_of(data))
    assert np.shares_memory(encoded, data)
    assert np.shares_memory(codec.decode(encoded, spec_of(data)), data)
    strided = data[:, ::2]  # not contiguous: a copy in C order
    np.testing.assert_array_equal(codec.encode(strided, spec_of(strided)), strided.ravel())


def test_after_transpose_keeps_the_logical_order():
    little = codec_from_json({"name": "bytes", "configuration": {"endian": "little"}})
    codecs = [TransposeCodec((1, 0)), ReshapeCodec([-1]), little]
    data = np.arange(12, dtype="<i4").reshape(3, 4)
    raw = encode_with(codecs, data)
    assert raw == data.T.copy().tobytes()
    np.testing.assert_array_equal(decode_with(codecs, raw, spec_of(data)), data)


def test_fill_value_and_dtype_kept():
    spec = ChunkSpec((4, 6), np.dtype("u2"), 7)
    out = ReshapeCodec([[0, 1]]).encoded_spec(spec)
    assert out.dtype == spec.dtype and out.fill_value == 7 and out.shape == (24,)


# -- configuration ------------------------------------------------------------
def test_json_round_trip_and_pickle():
    doc = {"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}}
    codec = codec_from_json(doc)
    assert isinstance(codec, ReshapeCodec)
    assert codec.to_json() == doc
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert ReshapeCodec((np.int64(-1), (np.int64(0),))).get_config() == {"shape": [-1, [0]]}


@pytest.mark.parametrize("config, match", [
    ({}, "'shape' is required"),
    ({"shape": [-1], "order": "C"}, "unknown configuration field"),
    ({"shape": "C"}, "'shape' must be a list"),
    ({"shape": 3}, "'shape' must be a list"),
    ({"shape": None}, "'shape' must be a list"),
    ({"shape": [0]}, "'shape' entry 0 is 0: a size must be a positive"),
    ({"shape": [4, -2]}, "'shape' entry 1 is -2"),
    ({"shape": [-1, -1]}, "'shape' has -1 more than once"),
    ({"shape": [2.0]}, "'shape' entry 0 must be"),
    ({"shape": [True]}, "'shape' entry 0 must be"),
    ({"shape": ["x"]}, "'shape' entry 0 must be"),
    ({"shape": [[0, -1]]}, "'shape' entry 0 must list input dimensions"),
    ({"shape": [[0, 1.0]]}, "'shape' entry 0 must list input dimensions"),
    ({"shape": [[[0]]]}, "'shape' entry 0 must list input dimensions"),
    # the README's forbidden examples
    ({"shape": [[1], [0]]}, "'shape'.*strictly increasing, found \\[1, 0\\]"),
    ({"shape": [[1, 0], 10, [3, 4]]}, "'shape'.*strictly increasing"),
    ({"shape": [[3, 4], 10, [0, 1]]}, "'shape'.*strictly increasing"),
    ({"shape": [[0, 0]]}, "'shape'.*strictly increasing"),
])
def test_invalid_configurations(config, match):
    with pytest.raises(CodecError, match=match):
        codec_from_json({"name": "reshape", "configuration": config})


@pytest.mark.parametrize("shape, a_shape, match", [
    ([7, -1], (4, 5), "no size for -1"),
    ([5, 5], (4, 5), "prod\\(B_shape\\) must equal prod\\(A_shape\\)"),
    ([[0, 1], 2], (4, 5), "prod\\(B_shape\\) must equal"),
    ([[0, 1, 2]], (4, 5), "beyond the chunk's 2"),
    ([[0], [2]], (4, 5, 6), "prod\\(B_shape\\) must equal"),
    # prefix / suffix constraints
    ([2, [1], -1], (4, 5, 6), "entry 1 \\[1\\].*prod\\(B_shape\\[:1\\]\\) == prod\\(A_shape\\[:1\\]\\)"),
    # (a gap in the input dimensions: the prefix holds, the suffix does not)
    ([[0, 2], -1], (4, 5, 6), "entry 0 \\[0, 2\\].*prod\\(B_shape\\[1:\\]\\) == prod\\(A_shape\\[3:\\]\\)"),
    ([[1], [2], -1], (4, 5, 6), "entry 0 \\[1\\]"),
])
def test_constraints_against_the_chunk_shape(shape, a_shape, match):
    codec = ReshapeCodec(shape)
    spec = _spec(a_shape)
    for check in (codec.validate, codec.encoded_spec):
        with pytest.raises(CodecError, match="codec 'reshape': configuration field 'shape'.*" + match):
            check(spec)


def test_hostile_decode():
    codec = ReshapeCodec([-1])
    with pytest.raises(CorruptChunkError, match="reshape"):
        codec.decode(np.zeros(5), _spec((2, 3)))
    with pytest.raises(CodecError):
        codec.encode(np.zeros((3, 2)), _spec((2, 3)))


# -- arrays -------------------------------------------------------------------
README_CODECS = [
    {"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}},
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "zstd", "configuration": {"level": 1, "checksum": True}},
]


def test_readme_example_at_array_level(tmp_path):
    rng = np.random.default_rng(0)
    shape = (150, 50, 64, 3)
    x = rng.integers(0, 1000, shape).astype("<u2")
    a = zarrdask.create_array(str(tmp_path / "r.zarr"), shape=shape, dtype="u2", chunks=README_CHUNK,
                              filters=[README_CODECS[0]], serializer=README_CODECS[1], compressors=[README_CODECS[2]])
    a[...] = x
    meta = json.loads((tmp_path / "r.zarr" / "zarr.json").read_text())
    assert meta["codecs"] == README_CODECS
    b = zarrdask.open_array(str(tmp_path / "r.zarr"), mode="r")
    np.testing.assert_array_equal(b[...], x)
    np.testing.assert_array_equal(b[99:101, 7, ::9, 1], x[99:101, 7, ::9, 1])
    # a stored chunk is the C-order bytes of the chunk (reshape does not reorder)
    import numcodecs

    raw = numcodecs.Zstd().decode((tmp_path / "r.zarr" / "c" / "0" / "0" / "0" / "0").read_bytes())
    assert raw == x[:100].tobytes()


def test_inside_a_shard(tmp_path):
    x = np.arange(64 * 48, dtype="i4").reshape(64, 48)
    a = zarrdask.create_array(str(tmp_path / "s.zarr"), shape=x.shape, dtype="i4", chunks=(8, 16), shards=(32, 48),
                              filters=[{"name": "reshape", "configuration": {"shape": [2, -1, [1]]}}])
    a[...] = x
    inner = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())["codecs"][0]["configuration"]["codecs"]
    assert inner[0] == {"name": "reshape", "configuration": {"shape": [2, -1, [1]]}}
    b = zarrdask.open_array(str(tmp_path / "s.zarr"), mode="r")
    np.testing.assert_array_equal(b[...], x)
    np.testing.assert_array_equal(b[5:37:4, 3:45], x[5:37:4, 3:45])


def test_rechunk(tmp_path):
    x = np.arange(40 * 30, dtype="f8").reshape(40, 30)
    a = zarrdask.create_array(str(tmp_path / "src.zarr"), shape=x.shape, dtype="f8", chunks=(16, 10),
                              filters=[{"name": "reshape", "configuration": {"shape": [[0, 1]]}}])
    a[...] = x
    zarrdask.rechunk(a, (40, 6), str(tmp_path / "dst.zarr"), max_mem="16MB").execute()
    b = zarrdask.open_array(str(tmp_path / "dst.zarr"), mode="r")
    assert b.chunks == (40, 6)
    np.testing.assert_array_equal(b[...], x)
    codecs = json.loads((tmp_path / "dst.zarr" / "zarr.json").read_text())["codecs"]
    assert codecs[0] == {"name": "reshape", "configuration": {"shape": [[0, 1]]}}


def test_array_creation_refuses_a_configuration_the_chunks_break(tmp_path):
    with pytest.raises(CodecError, match="reshape.*'shape'"):
        zarrdask.create_array(str(tmp_path / "bad.zarr"), shape=(10, 10), dtype="f4", chunks=(5, 5),
                              filters=[{"name": "reshape", "configuration": {"shape": [3, -1]}}])
