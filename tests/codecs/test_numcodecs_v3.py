"""numcodecs codecs under ``numcodecs.<id>`` names, checked against zarr-python 3."""

from __future__ import annotations

import pickle

import numcodecs
import numpy as np
import pytest

from zarrdask.codecs import numcodecs_v3 as nv3
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.errors import ChecksumError, CodecError, CorruptChunkError, UnknownCodecError

from ._helpers import decode_with, encode_with, spec_of, zarr_python_write

zn = pytest.importorskip("zarr.codecs.numcodecs")
pytestmark = pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr:UserWarning")

FLOATS = np.linspace(-50, 50, 60, dtype="float64").reshape(6, 10)
BOOLS = (np.arange(30).reshape(5, 6) % 3 == 0)

# (zarr-python filter factory, data); zarrdask gets the JSON zarr-python wrote
FILTERS = [
    (lambda: zn.Delta(dtype="float64"), FLOATS),
    (lambda: zn.Delta(dtype="float64", astype="float32"), FLOATS),
    (lambda: zn.FixedScaleOffset(offset=1, scale=10, astype="int16"), FLOATS),
    (lambda: zn.FixedScaleOffset(offset=1, scale=10, dtype="float64", astype="int32"), FLOATS),
    (lambda: zn.Quantize(digits=3), FLOATS),
    (lambda: zn.BitRound(keepbits=10), FLOATS),
    (lambda: zn.AsType(encode_dtype="float32", decode_dtype="float64"), FLOATS),
    (lambda: zn.PackBits(), BOOLS),
]

COMPRESSORS = [
    lambda: zn.Zlib(level=3),
    lambda: zn.BZ2(level=4),
    lambda: zn.LZMA(),
    lambda: zn.LZ4(),
    lambda: zn.Zstd(level=2),
    lambda: zn.Blosc(),
    lambda: zn.Blosc(cname="zstd", clevel=3, shuffle=2),
    lambda: zn.Shuffle(),
    lambda: zn.CRC32(),
    lambda: zn.Adler32(),
    lambda: zn.Fletcher32(),
    lambda: zn.JenkinsLookup3(),
    lambda: zn.CRC32C(),
]


def _ours(doc_list):
    return [codec_from_json(d) for d in doc_list]


@pytest.mark.parametrize("make, data", FILTERS, ids=lambda f: getattr(f, "__name__", ""))
def test_filters_match_zarr_python(make, data):
    raw, docs = zarr_python_write(data, filters=[make()])
    codecs = _ours(docs)
    assert [c.to_json() for c in codecs] == docs  # JSON read and written back unchanged
    assert encode_with(codecs, data) == raw  # the same chunk bytes
    decoded = decode_with(codecs, raw, spec_of(data))
    assert decoded.shape == data.shape and decoded.dtype == data.dtype
    expected = decode_with(codecs, encode_with(codecs, data), spec_of(data))
    np.testing.assert_array_equal(decoded, expected)


@pytest.mark.parametrize("make", COMPRESSORS, ids=lambda f: "")
def test_compressors_match_zarr_python(make):
    data = (np.arange(3000, dtype="int32") % 101).reshape(30, 100)
    raw, docs = zarr_python_write(data, compressors=[make()])
    codecs = _ours(docs)
    assert [c.to_json() for c in codecs] == docs
    assert encode_with(codecs, data) == raw
    np.testing.assert_array_equal(decode_with(codecs, raw, spec_of(data)), data)


@pytest.mark.parametrize(
    "make, data, zarrdask_config",
    [
        (lambda: zn.FixedScaleOffset(offset=1, scale=10, astype="int16"), FLOATS, {"offset": 1, "scale": 10, "astype": "int16"}),
        (lambda: zn.Quantize(digits=3), FLOATS, {"digits": 3}),
        (lambda: zn.AsType(encode_dtype="float32"), FLOATS, {"encode_dtype": "float32"}),
    ],
)
def test_evolve_fills_what_zarr_python_fills(make, data, zarrdask_config):
    _, docs = zarr_python_write(data, filters=[make()])
    ours = type(codec_from_json(docs[0])).from_config(zarrdask_config)
    assert ours.evolve(spec_of(data)).to_json() == docs[0]


def test_shuffle_elementsize_from_the_data_type():
    data = np.arange(100, dtype="float64")
    raw, docs = zarr_python_write(data, compressors=[zn.Shuffle()])
    assert docs[1] == {"name": "numcodecs.shuffle", "configuration": {"elementsize": 8}}
    unset = nv3.Shuffle()
    assert unset.evolve(spec_of(data)).to_json() == docs[1]
    assert encode_with([BytesCodec(), unset], data) == raw


@pytest.mark.parametrize(
    "codec, data, encoded_shape, encoded_dtype",
    [
        (nv3.Delta(dtype="float64", astype="float32"), FLOATS, (6, 10), "float32"),
        (nv3.FixedScaleOffset(offset=0, scale=1, astype="int8"), FLOATS, (6, 10), "int8"),
        (nv3.Quantize(digits=2, dtype="float64"), FLOATS, (6, 10), "float64"),
        (nv3.BitRound(keepbits=5), FLOATS, (6, 10), "float64"),
        (nv3.AsType(encode_dtype="float32", decode_dtype="float64"), FLOATS, (6, 10), "float32"),
        (nv3.PackBits(), BOOLS, (1 + 4,), "uint8"),
    ],
    ids=repr,
)
def test_filter_resolve_and_round_trip(codec, data, encoded_shape, encoded_dtype):
    spec = spec_of(data)
    codec.validate(spec)
    resolved = codec.resolve(spec)
    assert resolved.shape == encoded_shape and resolved.dtype == np.dtype(encoded_dtype)
    encoded = codec.encode(data, spec)
    assert encoded.shape == encoded_shape and encoded.dtype == np.dtype(encoded_dtype)
    decoded = codec.decode(encoded, spec)
    assert decoded.shape == data.shape and decoded.dtype == data.dtype
    if isinstance(codec, nv3.PackBits):
        np.testing.assert_array_equal(decoded, data)
    else:
        np.testing.assert_allclose(decoded, data, atol=0.6)
    assert pickle.loads(pickle.dumps(codec)) == codec


def test_filter_dtype_must_match_the_chunk():
    with pytest.raises(CodecError, match="int32"):
        nv3.Delta(dtype="float64").validate(ChunkSpec((3,), np.dtype("int32"), 0))
    with pytest.raises(CodecError, match="bool"):
        nv3.PackBits().validate(ChunkSpec((3,), np.dtype("int32"), 0))
    with pytest.raises(CodecError, match="floating"):
        nv3.BitRound(keepbits=3).validate(ChunkSpec((3,), np.dtype("int32"), 0))


def test_filter_completes_dtype_per_chunk_spec():
    codec = nv3.Delta()
    for dtype in ("int16", "float32"):
        data = np.arange(10, dtype=dtype)
        np.testing.assert_array_equal(codec.decode(codec.encode(data, spec_of(data)), spec_of(data)), data)


@pytest.mark.parametrize("cls", [c for c in nv3.NUMCODECS_V3.values() if issubclass(c, nv3.NumcodecsBytesBytesCodec)], ids=lambda c: c.name)
def test_bytes_codecs_round_trip_and_out(cls):
    codec = cls()
    spec = ChunkSpec((500,), np.dtype("int32"), 0)
    raw = (np.arange(500, dtype="int32") % 13).tobytes()
    encoded = codec.encode(raw, spec)
    assert bytes(codec.decode(encoded, spec, "k")) == raw
    out = bytearray(len(raw))
    codec.decode(encoded, spec, "k", out=memoryview(out))
    assert bytes(out) == raw
    with pytest.raises(CorruptChunkError, match="'k'"):
        codec.decode(encoded, spec, "k", out=memoryview(bytearray(len(raw) + 1)))
    if codec.is_checksum:
        assert codec.encoded_size(len(raw)) == len(encoded) == len(raw) + 4
    assert codec.to_json()["name"] == cls.name and "configuration" in codec.to_json()


@pytest.mark.parametrize("cls", [nv3.CRC32, nv3.Adler32, nv3.Fletcher32, nv3.JenkinsLookup3, nv3.CRC32C])
def test_checksum_mismatch(cls):
    spec = ChunkSpec((100,), np.dtype("uint8"), 0)
    encoded = bytearray(bytes(cls().encode(bytes(range(100)), spec)))
    encoded[50] ^= 0xFF
    with pytest.raises(ChecksumError, match="c/9"):
        cls().decode(bytes(encoded), spec, "c/9")


def test_compressor_garbage():
    with pytest.raises(CorruptChunkError, match="c/1"):
        nv3.Zlib().decode(b"garbage", ChunkSpec((1,), np.dtype("u1"), 0), "c/1")


def test_configuration_errors():
    with pytest.raises(CodecError, match="numcodecs.zlib"):
        nv3.Zlib(level=3, bogus=1)
    with pytest.raises(CodecError, match="encode_dtype"):
        nv3.AsType()
    with pytest.raises(CodecError, match="id"):
        nv3.Zlib(id="bz2")
    assert nv3.Zlib(id="zlib", level=1).to_json() == {"name": "numcodecs.zlib", "configuration": {"level": 1}}


def test_from_numcodecs():
    codec = nv3.from_numcodecs(numcodecs.Delta(dtype="<f8", astype="<f4"))
    assert codec.to_json() == {"name": "numcodecs.delta", "configuration": {"dtype": "<f8", "astype": "<f4"}}
    with pytest.raises(UnknownCodecError, match="categorize"):
        nv3.from_numcodecs(numcodecs.Categorize(["a"], dtype="U1"))


def test_numpy_values_become_json():
    codec = nv3.FixedScaleOffset(offset=np.float64(1.5), scale=np.int64(10), dtype=np.dtype("f8"), astype=np.int16)
    assert codec.get_config() == {"offset": 1.5, "scale": 10, "dtype": "float64", "astype": "int16"}
