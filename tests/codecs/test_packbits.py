"""The ``packbits`` codec (zarr-extensions codecs/packbits)."""

from __future__ import annotations

import json
import pickle

import ml_dtypes
import numpy as np
import pytest

import zarrdask
from zarrdask.codecs import packbits as packbits_module
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.packbits import PackBitsCodec, layout_of
from zarrdask.codecs.registry import codec_from_json
from zarrdask.errors import CodecError, CorruptChunkError

from ._helpers import spec_of

ENCODINGS = ["none", "first_byte", "last_byte"]


def _reference(data: np.ndarray, first: int, last: int, encoding: str) -> bytes:
    """The README's algorithm one bit at a time (LSB-first; components of a
    complex element real then imaginary)."""
    layout = layout_of(data.dtype)
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8).reshape(-1, layout.container)
    bits = []
    for row in raw:
        value = int.from_bytes(row.tobytes(), "little")
        bits += [(value >> j) & 1 for j in range(first, last + 1)]
    padding = -len(bits) % 8
    bits += [0] * padding
    payload = bytes(sum(bits[i + j] << j for j in range(8)) for i in range(0, len(bits), 8))
    pad = bytes([padding])
    return {"none": payload, "first_byte": pad + payload, "last_byte": payload + pad}[encoding]


def _codec(encoding="none", first=None, last=None):
    return PackBitsCodec(padding_encoding=encoding, first_bit=first, last_bit=last)


def _round_trip(codec, data):
    spec = spec_of(data)
    codec.validate(spec)
    encoded = codec.encode(data, spec)
    assert len(encoded) == codec.encoded_size(spec)
    return encoded, codec.decode(encoded, spec, "c/0")


# -- bytes as zarrs writes them (zarr-python 3.4 with the zarrs pipeline, zarrs 0.2.3) --
def test_bool_bytes_as_zarrs_writes_them():
    data = np.array([1, 0, 0, 1, 1, 0, 1, 0, 1], bool)
    encoded, decoded = _round_trip(_codec(), data)
    assert encoded == bytes.fromhex("5901")
    np.testing.assert_array_equal(decoded, data)


def test_int16_bits_1_to_3_bytes_as_zarrs_writes_them():
    data = np.array([-2, 2, 4, 6, 8, 10, 12, 14, -8], "i2")
    encoded, decoded = _round_trip(_codec("first_byte", 1, 3), data)
    assert encoded == bytes.fromhex("058fc6fa04")
    # bits 1..3, sign-extended to 16 bits (README); zarrs extends only to the byte's end
    assert decoded.tolist() == [-2, 2, 4, 6, -8, -6, -4, -2, -8]


def test_numcodecs_bit_order_differs():
    import numcodecs

    data = np.array([True, False, False, True])
    assert bytes(numcodecs.PackBits().encode(data)) == bytes([4, 0b10010000])  # MSB first
    assert _codec("first_byte").encode(data, spec_of(data)) == bytes([4, 0b00001001])  # LSB first


# -- against the bit-by-bit reference ---------------------------------------
def _values(dtype, n=37, seed=0):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype == np.dtype(bool):
        return rng.integers(0, 2, n).astype(bool)
    if dtype.names:
        out = np.zeros(n, dtype)
        for f in ("real", "imag"):
            out[f] = _values(dtype.fields[f][0], n, seed + 1)
        return out
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    try:
        info = ml_dtypes.iinfo(dtype)
        return rng.integers(int(info.min), int(info.max), n, endpoint=True).astype(dtype)
    except ValueError:
        return (rng.standard_normal(n) * 2).astype(dtype)


ALL_TYPES = [
    bool, "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8", "c8", "c16",
    ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.float4_e2m1fn,
    ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
    ml_dtypes.bfloat16,
    [("real", ml_dtypes.bfloat16), ("imag", ml_dtypes.bfloat16)],
    [("real", "f2"), ("imag", "f2")],
    [("real", ml_dtypes.float4_e2m1fn), ("imag", ml_dtypes.float4_e2m1fn)],
    [("real", ml_dtypes.float6_e3m2fn), ("imag", ml_dtypes.float6_e3m2fn)],
]
BITS = {"int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4, "float6_e2m3fn": 6, "float6_e3m2fn": 6}


def _ids(t):
    return str(np.dtype(t)) if not isinstance(t, list) else "complex_" + str(np.dtype(t[0][1]))


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=_ids)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_full_width_matches_reference_and_round_trips(dtype, encoding):
    data = _values(dtype).reshape(37)
    encoded, decoded = _round_trip(_codec(encoding), data)
    n = layout_of(data.dtype).bits
    assert encoded == _reference(data, 0, n - 1, encoding)
    assert decoded.dtype == data.dtype and decoded.shape == data.shape
    assert decoded.tobytes() == data.tobytes()  # ml_dtypes' canonical bytes: upper bits zero


def test_bits_per_type():
    assert {name: layout_of(np.dtype(getattr(ml_dtypes, name))).bits for name in BITS} == BITS
    assert layout_of(np.dtype(bool)).bits == 1
    assert layout_of(np.dtype("c16")) == packbits_module.Layout(8, 2, 64, False)
    assert layout_of(np.dtype(ml_dtypes.int4)).signed and not layout_of(np.dtype(ml_dtypes.uint4)).signed


def test_multi_byte_types_are_their_little_endian_bytes():
    data = np.arange(12, dtype="i4").reshape(3, 4) * -1001
    assert _codec().encode(data, spec_of(data)) == data.astype("<i4").tobytes()
    big = data.astype(">i4")  # a chunk in the other byte order is packed by value
    assert _codec().encode(big, ChunkSpec(big.shape, big.dtype, 0)) == data.astype("<i4").tobytes()


@pytest.mark.parametrize("dtype, first, last", [
    ("i2", 0, 11), ("i2", 2, 14), ("i2", 3, 3), ("u2", 4, 11), ("i1", 1, 6), ("u8", 5, 60), ("i8", 8, 23),
    ("c8", 20, 31), (ml_dtypes.int4, 1, 3), (ml_dtypes.uint4, 0, 2), (ml_dtypes.int2, 1, 1),
    ("f4", 16, 31), (bool, 0, 0), ("i4", None, 9), ("i4", 9, None),
])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_bit_ranges(dtype, first, last, encoding):
    dtype = np.dtype(dtype)
    layout = layout_of(dtype)
    lo, hi = (0 if first is None else first), (layout.bits - 1 if last is None else last)
    data = _values(dtype, 29).reshape(29)
    encoded, decoded = _round_trip(_codec(encoding, first, last), data)
    assert encoded == _reference(data, lo, hi, encoding)
    # decoding: the bits back at first_bit, sign- or zero-extended to N bits
    raw = data.reshape(-1).view(np.uint8).reshape(-1, layout.container)
    out = decoded.reshape(-1).view(np.uint8).reshape(-1, layout.container)
    for src, dst in zip(raw, out):
        value = (int.from_bytes(src.tobytes(), "little") >> lo) & ((1 << (hi - lo + 1)) - 1)
        if layout.signed and value >> (hi - lo) and hi + 1 < layout.bits:
            value |= ((1 << (layout.bits - hi - 1)) - 1) << (hi - lo + 1)
        assert int.from_bytes(dst.tobytes(), "little") == value << lo


def test_signed_values_in_range_round_trip():
    data = np.arange(-2048, 2048, 7, dtype="i2")
    _, decoded = _round_trip(_codec("none", 0, 11), data)
    np.testing.assert_array_equal(decoded, data)
    four = np.array([-8, -1, 0, 7, 3], dtype=ml_dtypes.int4)
    encoded, decoded = _round_trip(_codec(), four)
    assert encoded == bytes([0xF8, 0x70, 0x03])
    assert decoded.tobytes() == bytes([8, 15, 0, 7, 3])  # as ml_dtypes stores them


def test_blocks_cover_large_chunks(monkeypatch):
    monkeypatch.setattr(packbits_module, "_BLOCK_BITS", 64)  # many small blocks
    for dtype, first, last in [("i2", 1, 13), (bool, None, None), (ml_dtypes.int4, None, None)]:
        data = _values(dtype, 1003)
        encoded, decoded = _round_trip(_codec("last_byte", first, last), data)
        layout = layout_of(np.dtype(dtype))
        lo, hi = first or 0, layout.bits - 1 if last is None else last
        assert encoded == _reference(data, lo, hi, "last_byte")
        if first is None:
            assert decoded.tobytes() == data.tobytes()


def test_multidimensional_chunks_are_c_order():
    data = _values("u1", 24).reshape(2, 3, 4)
    codec = _codec("none", 0, 4)
    assert codec.encode(data, spec_of(data)) == _reference(data.reshape(-1), 0, 4, "none")
    fortran = np.asfortranarray(data)
    assert codec.encode(fortran, spec_of(fortran)) == codec.encode(data, spec_of(data))
    assert codec.decode(codec.encode(data, spec_of(data)), spec_of(data)).shape == (2, 3, 4)


def test_empty_chunk():
    data = np.zeros((0, 3), "i2")
    assert _round_trip(_codec("first_byte", 0, 3), data)[0] == b"\x00"
    assert _round_trip(_codec(), data)[0] == b""


# -- configuration ------------------------------------------------------------
@pytest.mark.parametrize("config", [
    {}, {"padding_encoding": "none"}, {"padding_encoding": "first_byte"}, {"padding_encoding": "last_byte"},
    {"first_bit": None, "last_bit": None}, {"padding_encoding": "last_byte", "first_bit": 1, "last_bit": 3},
    {"first_bit": 2},
])
def test_json_round_trip(config):
    doc = {"name": "packbits", "configuration": config} if config else {"name": "packbits"}
    codec = codec_from_json(doc)
    assert isinstance(codec, PackBitsCodec)
    assert codec.to_json() == doc
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert pickle.loads(pickle.dumps(codec)).get_config() == config


@pytest.mark.parametrize("config, match", [
    ({"padding_encoding": "start_byte"}, "padding_encoding.*one of"),
    ({"padding_encoding": "end_byte"}, "padding_encoding.*one of"),
    ({"padding_encoding": None}, "padding_encoding"),
    ({"padding_encoding": 1}, "padding_encoding"),
    ({"first_bit": -1}, "first_bit.*non-negative"),
    ({"last_bit": 2.0}, "last_bit.*integer"),
    ({"last_bit": True}, "last_bit.*integer"),
    ({"first_bit": "0"}, "first_bit"),
    ({"first_bit": 4, "last_bit": 3}, "'last_bit' \\(3\\) is less than 'first_bit' \\(4\\)"),
    ({"start_bit": 0}, "unknown configuration field.*start_bit"),
    ({"end_bit": 3}, "unknown configuration field"),
])
def test_invalid_configurations(config, match):
    with pytest.raises(CodecError, match=match):
        codec_from_json({"name": "packbits", "configuration": config})


@pytest.mark.parametrize("dtype, config, match", [
    ("i2", {"last_bit": 16}, "'last_bit' is 16, outside the 16 bits"),
    ("i2", {"first_bit": 16}, "'first_bit' is 16, outside"),
    (bool, {"last_bit": 1}, "outside the 1 bits"),
    (ml_dtypes.int4, {"first_bit": 0, "last_bit": 4}, "outside the 4 bits"),
    (ml_dtypes.uint2, {"first_bit": 2}, "first_bit"),
    ("c8", {"last_bit": 32}, "outside the 32 bits"),
    ("i4", {"first_bit": 20}, None),  # fine: default last_bit 31
    (ml_dtypes.int4, {"first_bit": 5}, "'first_bit' is 5"),
])
def test_bits_outside_the_type(dtype, config, match):
    codec = PackBitsCodec.from_config(config)
    spec = ChunkSpec((4,), np.dtype(dtype), 0)
    if match is None:
        codec.validate(spec)
        return
    with pytest.raises(CodecError, match=match):
        codec.validate(spec)
    with pytest.raises(CodecError, match=match):
        codec.encoded_size(spec)


@pytest.mark.parametrize("dtype", ["S3", "U2", object, "M8[s]", "m8[s]", [("a", "i2"), ("b", "i2")],
                                   [("real", "f4"), ("imag", "f8")], "V3"])
def test_unsupported_data_types(dtype):
    with pytest.raises(CodecError, match="packbits.*data type"):
        _codec().validate(ChunkSpec((2,), np.dtype(dtype), 0))


# -- hostile chunks ---------------------------------------------------------
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_wrong_length_is_corrupt(encoding):
    data = _values("i2", 10)
    codec = _codec(encoding, 0, 11)
    spec = spec_of(data)
    good = codec.encode(data, spec)
    for bad in (good[:-1], good + b"\x00", b"", good * 1000):
        with pytest.raises(CorruptChunkError, match="c/9.*expected 1[56] bytes"):
            codec.decode(bad, spec, "c/9")


@pytest.mark.parametrize("encoding", ["first_byte", "last_byte"])
def test_wrong_padding_byte_is_corrupt(encoding):
    data = np.ones(9, bool)
    codec = _codec(encoding)
    good = bytearray(codec.encode(data, spec_of(data)))
    where = 0 if encoding == "first_byte" else -1
    assert good[where] == 7
    good[where] = 6
    with pytest.raises(CorruptChunkError, match="c/1.*padding.*says 6.*expected 7"):
        codec.decode(bytes(good), spec_of(data), "c/1")


def test_hostile_chunk_allocates_nothing_big():
    spec = ChunkSpec((4,), np.dtype("u1"), 0)
    with pytest.raises(CorruptChunkError):
        _codec().decode(b"\xff" * 10_000_000, spec, "c/0")


# -- arrays -------------------------------------------------------------------
def _array(store, dtype, shape, chunks, config=None, **kw):
    serializer = {"name": "packbits", "configuration": config} if config else {"name": "packbits"}
    return zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=chunks, serializer=serializer, **kw)


def test_bool_array(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, (33, 21)).astype(bool)
    a = _array(str(tmp_path / "b.zarr"), bool, x.shape, (10, 7), compressors=None)
    a[...] = x
    meta = json.loads((tmp_path / "b.zarr" / "zarr.json").read_text())
    assert meta["codecs"] == [{"name": "packbits"}]
    stored = (tmp_path / "b.zarr" / "c" / "0" / "0").read_bytes()
    assert stored == _reference(x[:10, :7], 0, 0, "none") and len(stored) == 9
    b = zarrdask.open_array(str(tmp_path / "b.zarr"), mode="r")
    np.testing.assert_array_equal(b[...], x)
    np.testing.assert_array_equal(b[5:25:3, 4], x[5:25:3, 4])


@pytest.mark.parametrize("dtype, config", [
    ("u1", {"padding_encoding": "last_byte", "first_bit": 0, "last_bit": 4}),
    ("i2", {"padding_encoding": "first_byte", "first_bit": 2, "last_bit": 13}),
])
def test_integer_arrays_with_zstd(tmp_path, dtype, config):
    rng = np.random.default_rng(4)
    if dtype == "u1":
        x = rng.integers(0, 32, (30, 20)).astype(dtype)
    else:
        x = (rng.integers(-2048, 2048, (30, 20)) * 4).astype(dtype)
    a = _array(str(tmp_path / "i.zarr"), dtype, (34, 20), (8, 8), config, fill_value=4 if dtype == "i2" else 3,
               compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a[:30] = x
    meta = json.loads((tmp_path / "i.zarr" / "zarr.json").read_text())
    assert meta["codecs"][0] == {"name": "packbits", "configuration": config}
    out = zarrdask.open_array(str(tmp_path / "i.zarr"), mode="r")[...]
    np.testing.assert_array_equal(out[:30], x)
    assert (out[30:] == a.fill_value).all()


def test_inside_a_shard(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2, (64, 48)).astype(bool)
    a = _array(str(tmp_path / "s.zarr"), bool, x.shape, (8, 16), {"padding_encoding": "first_byte"},
               shards=(32, 48), compressors=None)
    a[...] = x
    meta = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())
    inner = meta["codecs"][0]["configuration"]["codecs"]
    assert inner == [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}]
    b = zarrdask.open_array(str(tmp_path / "s.zarr"), mode="r")
    np.testing.assert_array_equal(b[...], x)
    np.testing.assert_array_equal(b[3:40:5, 17:19], x[3:40:5, 17:19])
    b2 = zarrdask.open_array(str(tmp_path / "s.zarr"), mode="r+")
    b2[10, 10] = not x[10, 10]
    x[10, 10] = not x[10, 10]
    np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / "s.zarr"), mode="r")[...], x)


def test_rechunk(tmp_path):
    rng = np.random.default_rng(6)
    x = rng.integers(-512, 512, (40, 30)).astype("i2")
    a = _array(str(tmp_path / "src.zarr"), "i2", x.shape, (16, 16), {"last_bit": 9})
    a[...] = x
    zarrdask.rechunk(a, (40, 7), str(tmp_path / "dst.zarr"), max_mem="16MB").execute()
    b = zarrdask.open_array(str(tmp_path / "dst.zarr"), mode="r")
    assert b.chunks == (40, 7)
    np.testing.assert_array_equal(b[...], x)
    codecs = json.loads((tmp_path / "dst.zarr" / "zarr.json").read_text())["codecs"]
    assert codecs[0] == {"name": "packbits", "configuration": {"last_bit": 9}}


@pytest.mark.parametrize("dtype, name", [
    (ml_dtypes.int4, "int4"), (ml_dtypes.uint2, "uint2"), (ml_dtypes.float4_e2m1fn, "float4_e2m1fn"),
    (ml_dtypes.float6_e3m2fn, "float6_e3m2fn"),
    ([("real", ml_dtypes.float4_e2m1fn), ("imag", ml_dtypes.float4_e2m1fn)], "complex_float4_e2m1fn"),
])
def test_sub_byte_arrays(tmp_path, dtype, name):
    dtype = np.dtype(dtype)
    x = _values(dtype, 7 * 9, seed=7).reshape(7, 9)
    a = _array(str(tmp_path / "m.zarr"), dtype, (7, 9), (4, 4), {"padding_encoding": "last_byte"}, compressors=None)
    a[...] = x
    meta = json.loads((tmp_path / "m.zarr" / "zarr.json").read_text())
    assert meta["data_type"] == name
    n = layout_of(dtype).bits
    edge = np.zeros((4, 4), dtype)
    edge[:3, :1] = x[4:, 8:]  # an edge chunk is packed whole, the overhang filled with the fill value (0)
    assert (tmp_path / "m.zarr" / "c" / "1" / "2").read_bytes() == _reference(edge, 0, n - 1, "last_byte")
    assert zarrdask.open_array(str(tmp_path / "m.zarr"), mode="r")[...].tobytes() == x.tobytes()
