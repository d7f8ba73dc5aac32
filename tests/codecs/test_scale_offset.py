"""The ``scale_offset`` codec (zarr-extensions codecs/scale_offset) at codec level,
and both value codecs at array level: the README's three examples byte for byte,
inside a shard, through zarrdask.rechunk."""

from __future__ import annotations

import json
import pickle

import ml_dtypes
import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.codecs.scale_offset import ScaleOffsetCodec
from zarrdask.errors import CodecError, CorruptChunkError


def spec(dtype, fill=0, shape=(4,)):
    return ChunkSpec(shape, np.dtype(dtype), np.asarray(fill).astype(dtype)[()])


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize("doc", [
    {"name": "scale_offset"},
    {"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}},
    {"name": "scale_offset", "configuration": {"offset": 1000}},
    {"name": "scale_offset", "configuration": {"scale": "0x3dcccccd"}},
    {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
])
def test_json_round_trip(doc):
    codec = codec_from_json(doc)
    assert isinstance(codec, ScaleOffsetCodec)
    assert codec.to_json() == doc
    assert pickle.loads(pickle.dumps(codec)) == codec


def test_empty_configuration_is_a_no_op():
    codec = codec_from_json({"name": "scale_offset", "configuration": {}})
    assert codec.to_json() == {"name": "scale_offset"}
    x = np.arange(4, dtype=np.int8)
    assert codec.encode(x, spec("int8")) is x and codec.decode(x, spec("int8")) is x


@pytest.mark.parametrize("config, match", [
    ({"offset": 1, "astype": "uint8"}, "unknown configuration field"),
    ({"offset": None}, "'offset'"),
    ({"scale": [1]}, "'scale'"),
    ({"scale": True}, "'scale'"),
    ({"offset": {"a": 1}}, "'offset'"),
])
def test_invalid_configuration(config, match):
    with pytest.raises(CodecError, match=match):
        codec_from_json({"name": "scale_offset", "configuration": config})


@pytest.mark.parametrize("dtype, config, match", [
    ("int32", {"scale": 0.5}, "'scale'.*int32"),
    ("uint8", {"offset": -1}, "'offset'.*uint8"),
    ("int8", {"offset": 200}, "'offset'"),
    ("float32", {"scale": 0}, "non-zero"),
    ("float64", {"scale": -0.0}, "non-zero"),
    ("int16", {"scale": 0}, "non-zero"),
    ("float32", {"offset": "NaN"}, "finite"),
    ("float32", {"scale": "Infinity"}, "finite"),
    ("float32", {"scale": "spam"}, "'scale'"),
    ("bool", {"scale": 2}, "data type.*bool"),
    ("complex64", {"scale": 2}, "complex64"),
    ("U4", {}, "<U4"),
    ("M8[s]", {"offset": 1}, "datetime64"),
])
def test_invalid_for_the_data_type(dtype, config, match):
    codec = ScaleOffsetCodec.from_config(config)
    s = ChunkSpec((2,), np.dtype(dtype), None)
    with pytest.raises(CodecError, match=match):
        codec.validate(s)


# --------------------------------------------------------------------------- arithmetic


def test_float_arithmetic_in_the_data_type():
    codec = ScaleOffsetCodec(offset=5, scale=0.1)
    x = np.array([5.0, 15.0, 25.0, 0.0, np.nan, -np.inf], dtype=np.float32)
    y = codec.encode(x, spec("float32", shape=(6,)))
    assert y.dtype == np.float32
    # float32 arithmetic: 0.1 is float32(0.1), each step rounded to float32
    want = (x - np.float32(5)) * np.float32(0.1)
    assert y.tobytes() == want.tobytes()
    back = codec.decode(y, spec("float32", shape=(6,)))
    assert back.tobytes() == (want / np.float32(0.1) + np.float32(5)).tobytes()


def test_float_overflow_is_an_error():
    codec = ScaleOffsetCodec(scale=1e30)
    with pytest.raises(CodecError, match=r"cannot encode the value 10000000000.0 \(float32\): the result overflows"):
        codec.encode(np.array([1.0, 1e10], dtype=np.float32), spec("float32", shape=(2,)))
    with pytest.raises(CorruptChunkError, match="overflows"):
        ScaleOffsetCodec(scale=1e-30).decode(np.array([1e10], dtype=np.float32), spec("float32", shape=(1,)))
    # a type without infinity (float8_e4m3fn) or without NaN either (float4_e2m1fn)
    for t, big in ((ml_dtypes.float8_e4m3fn, 192.0), (ml_dtypes.float4_e2m1fn, 6.0)):
        with pytest.raises(CodecError, match="not representable"):
            ScaleOffsetCodec(scale=4).encode(np.array([1.0, big]).astype(t), spec(t, shape=(2,)))


def test_integer_arithmetic_is_checked():
    codec = ScaleOffsetCodec(offset=-10, scale=3)
    s = spec("int8", shape=(3,))
    assert codec.encode(np.array([-10, 0, 32], dtype=np.int8), s).tolist() == [0, 30, 126]
    assert codec.decode(np.array([0, 30, 126], dtype=np.int8), s).tolist() == [-10, 0, 32]
    with pytest.raises(CodecError, match=r"cannot encode the value 33 \(int8\).*out of the range"):
        codec.encode(np.array([33, 0], dtype=np.int8), spec("int8", shape=(2,)))
    with pytest.raises(CodecError, match="value -128"):  # the intermediate -128 - (-10) is fine, * 3 is not
        codec.encode(np.array([-128], dtype=np.int8), spec("int8", shape=(1,)))
    with pytest.raises(CorruptChunkError, match=r"value 31 \(int8\): value / 3 is not an integer"):
        codec.decode(np.array([30, 31], dtype=np.int8), spec("int8", shape=(2,)))
    with pytest.raises(CodecError, match="out of the range"):  # unsigned: no negative intermediate
        ScaleOffsetCodec(offset=1000).encode(np.array([999], dtype=np.uint16), spec("uint16", shape=(1,)))
    with pytest.raises(CorruptChunkError, match="-128"):  # -128 / -1 is not an int8
        ScaleOffsetCodec(scale=-1).decode(np.array([-128], dtype=np.int8), spec("int8", shape=(1,)))
    with pytest.raises(CorruptChunkError, match="out of the range"):  # the sum overflows
        ScaleOffsetCodec(offset=100).decode(np.array([100], dtype=np.int8), spec("int8", shape=(1,)))


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_64_bit_integers_without_overflow(dtype):
    info = np.iinfo(dtype)
    codec = ScaleOffsetCodec(offset=int(info.min) + 1 if dtype == "int64" else 1, scale=2)
    x = np.array([info.min + 1 if dtype == "int64" else 1, int(info.min) + 2**61 + 1], dtype=dtype)
    y = codec.encode(x, spec(dtype, fill=x[0], shape=(2,)))
    assert [int(v) for v in y] == [(int(v) - codec._bind(np.dtype(dtype)).o) * 2 for v in x]
    assert codec.decode(y, spec(dtype, fill=x[0], shape=(2,))).tolist() == x.tolist()
    with pytest.raises(CodecError, match="out of the range"):
        codec.encode(np.array([info.max], dtype=dtype), spec(dtype, fill=x[0], shape=(1,)))


def test_ml_dtypes():
    b = np.array([1.5, 2.25, -3.0], dtype=ml_dtypes.bfloat16)
    codec = ScaleOffsetCodec(offset=0.5, scale=4)
    s = spec(ml_dtypes.bfloat16, shape=(3,))
    e = codec.encode(b, s)
    assert e.dtype == b.dtype and e.astype(float).tolist() == [4.0, 7.0, -14.0]
    assert codec.decode(e, s).astype(float).tolist() == [1.5, 2.25, -3.0]
    i4 = np.array([-8, 0, 7], dtype=ml_dtypes.int4)
    c4 = ScaleOffsetCodec(offset=-1)
    s4 = spec(ml_dtypes.int4, shape=(3,))
    with pytest.raises(CodecError, match=r"value 7 \(int4\)"):
        c4.encode(i4, s4)
    assert c4.encode(i4[:2], s4.with_shape((2,))).astype(int).tolist() == [-7, 1]
    # no offset at all for a type without zero: only the scale applies
    e8 = ScaleOffsetCodec(scale=2).encode(np.array([1.0, 0.5]).astype(ml_dtypes.float8_e8m0fnu),
                                          spec(ml_dtypes.float8_e8m0fnu, fill=1.0, shape=(2,)))
    assert e8.astype(float).tolist() == [2.0, 1.0]


def test_fill_value_transformed_in_encoded_spec():
    assert ScaleOffsetCodec(offset=5, scale=0.1).encoded_spec(spec("float32", fill=0)).fill_value == np.float32(-0.5)
    assert np.isnan(ScaleOffsetCodec(offset=-10, scale=0.1).encoded_spec(spec("float64", fill=np.nan)).fill_value)
    assert ScaleOffsetCodec(offset=1000).encoded_spec(spec("uint16", fill=1000)).fill_value == 0
    # the README's uint16 example with the default fill value 0: 0 - 1000 is no uint16
    with pytest.raises(CodecError, match="fill value.*cannot be encoded"):
        ScaleOffsetCodec(offset=1000).validate(spec("uint16", fill=0))


# --------------------------------------------------------------------------- array level: README examples

EX1 = [{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}]
EX2 = [{"name": "scale_offset", "configuration": {"offset": 1000}},
       {"name": "cast_value", "configuration": {"data_type": "uint8"}}]
EX3 = [{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
       {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
                                                "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}]


def _write(path, data, filters, fill, chunks=None, **kw):
    a = zarrdask.create_array(str(path), shape=data.shape, dtype=data.dtype, chunks=chunks or data.shape,
                              filters=filters, compressors=None, fill_value=fill, **kw)
    a[...] = data
    return a


@pytest.mark.parametrize("dtype, filters, fill, data, stored", [
    # float32: (x - 5) * 0.1 in float32 = 0, 1, 2, -0.5 (little-endian float32 bits by hand)
    ("float32", EX1, 0.0, [5.0, 15.0, 25.0, 0.0], bytes.fromhex("00000000" "0000803f" "00000040" "000000bf")),
    # uint16 [1000, 1255] - 1000, then uint8
    ("uint16", EX2, 1000, [1000, 1001, 1255, 1128], bytes([0, 1, 255, 128])),
    # float64 (x + 10) * 0.1 → [1, 255], rounded nearest-even, NaN → 0
    ("float64", EX3, "NaN", [0.0, 2540.0, np.nan, 100.0, 5.0, 15.0], bytes([1, 255, 0, 11, 2, 2])),
])
def test_readme_examples_byte_for_byte(tmp_path, dtype, filters, fill, data, stored):
    x = np.array(data, dtype=dtype)
    a = _write(tmp_path / "a.zarr", x, filters, float(fill) if fill == "NaN" else fill)
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["codecs"][:-1] == filters and meta["codecs"][-1]["name"] == "bytes"
    assert (tmp_path / "a.zarr" / "c" / "0").read_bytes() == stored
    back = zarrdask.open_array(str(tmp_path / "a.zarr"))[...]
    expected = {"float32": x, "uint16": x, "float64": np.array([0.0, 2540.0, np.nan, 100.0, 10.0, 10.0])}[dtype]
    np.testing.assert_array_equal(back, expected)


def test_readme_example_2_with_the_default_fill_value_is_refused(tmp_path):
    with pytest.raises(CodecError, match="fill value"):
        _write(tmp_path / "a.zarr", np.array([1000], dtype="uint16"), EX2, 0)


def test_hostile_stored_chunks_are_typed_errors(tmp_path):
    a = _write(tmp_path / "a.zarr", np.linspace(0, 2540, 8), EX3, float("nan"), chunks=(4,))
    chunk = tmp_path / "a.zarr" / "c" / "0"
    chunk.write_bytes(chunk.read_bytes()[:3])  # truncated
    with pytest.raises(CorruptChunkError):
        a[...]
    chunk.write_bytes(bytes(40))  # oversized
    with pytest.raises(CorruptChunkError):
        a[...]
    b = _write(tmp_path / "b.zarr", np.array([-3, 0, 3, 6], dtype="int16"), [{"name": "scale_offset",
               "configuration": {"scale": 3}}], 0)
    (tmp_path / "b.zarr" / "c" / "0").write_bytes(np.array([0, 31, 3, 6], dtype="<i2").tobytes())  # 31 / 3
    with pytest.raises(CorruptChunkError, match="value 31"):
        b[...]
    c = _write(tmp_path / "c.zarr", np.array([1.0, 2.0]), [{"name": "cast_value",
               "configuration": {"data_type": "int16"}}], 0.0)
    np.testing.assert_array_equal(c[...], [1.0, 2.0])
    d = _write(tmp_path / "d.zarr", np.array([1, 2], dtype="uint8"), [{"name": "cast_value",
               "configuration": {"data_type": "int16"}}], 0)
    (tmp_path / "d.zarr" / "c" / "0").write_bytes(np.array([1, -5], dtype="<i2").tobytes())  # -5 is no uint8
    with pytest.raises(CorruptChunkError, match=r"-5 \(int16\) as uint8"):
        d[...]


def test_missing_and_partial_chunks_read_as_fill(tmp_path):
    x = np.full(10, np.nan)
    x[2:5] = [10.0, 20.0, 30.0]
    a = _write(tmp_path / "a.zarr", x, EX3, float("nan"), chunks=(4,))
    assert sorted(p.name for p in (tmp_path / "a.zarr" / "c").iterdir()) == ["0", "1"]  # chunk 2 is all fill
    np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / "a.zarr"))[...], x)


@pytest.mark.parametrize("filters, dtype, fill, values", [
    (EX3, "float64", float("nan"), lambda n: np.where(np.arange(n) % 7 == 0, np.nan, np.arange(n) * 10.0)),
    (EX2, "uint16", 1000, lambda n: (1000 + np.arange(n) % 256).astype("uint16")),
    ([{"name": "cast_value", "configuration": {"data_type": "int8", "rounding": "towards-zero",
                                              "out_of_range": "clamp"}}],
     "float32", 0.0, lambda n: np.linspace(-200, 200, n).astype("float32")),
])
def test_inside_a_shard_and_through_rechunk(tmp_path, filters, dtype, fill, values):
    x = np.asarray(values(60)).astype(dtype).reshape(6, 10)
    src = zarrdask.create_array(str(tmp_path / "s.zarr"), shape=x.shape, dtype=dtype, chunks=(2, 5),
                                shards=(4, 10), filters=filters, fill_value=fill)
    src[...] = x
    meta = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())
    (sharding,) = meta["codecs"]
    assert sharding["name"] == "sharding_indexed"
    assert sharding["configuration"]["codecs"][: len(filters)] == filters
    reopened = zarrdask.open_array(str(tmp_path / "s.zarr"))
    expected = reopened[...]
    lossy = filters[0]["configuration"].get("out_of_range") == "clamp" or filters is EX3
    if not lossy:
        np.testing.assert_array_equal(expected, x)
    np.testing.assert_array_equal(reopened[1:5, 3:7], expected[1:5, 3:7])
    zarrdask.rechunk(reopened, (3, 3), str(tmp_path / "t.zarr"), max_mem="16MB").execute()
    target = zarrdask.open_array(str(tmp_path / "t.zarr"))
    assert target.chunks == (3, 3)
    tmeta = json.loads((tmp_path / "t.zarr" / "zarr.json").read_text())
    assert [c for c in tmeta["codecs"] if c["name"] in ("scale_offset", "cast_value")] == filters
    np.testing.assert_array_equal(target[...], expected)


def test_multiple_chunks_with_dask_write(tmp_path):
    import dask.array as da

    from zarrdask.dask import to_zarr

    x = da.linspace(0.0, 2540.0, 1000, chunks=250)
    path = str(tmp_path / "d.zarr")
    to_zarr(x, path, chunks=(250,), filters=EX3, fill_value=float("nan"))
    back = zarrdask.open_array(path)[...]
    assert np.abs(back - x.compute()).max() <= 5.0 + 1e-9  # half of 1 / scale

