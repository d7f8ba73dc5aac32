"""The ``bitround`` codec (zarr-extensions codecs/bitround)."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import ml_dtypes
import numcodecs
import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.bitround import BitroundCodec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.errors import CodecError

from ._helpers import spec_of

#: zarr-extensions codecs/bitround/sample_data, copied as it is
SAMPLES = Path(__file__).parent / "data" / "bitround"

# sample_data/README.md: "Original" and "Rounded" columns, keepbits 3
FLOAT_ORIGINAL = np.array([0.0, 0.1, 1.2, 12.3, 123.4, 1234.5, np.nan, np.inf, -np.inf], dtype="float32")
FLOAT_ROUNDED_BITS = [
    "0_00000000_00000000000000000000000", "0_01111011_10100000000000000000000",
    "0_01111111_01000000000000000000000", "0_10000010_10000000000000000000000",
    "0_10000101_11100000000000000000000", "0_10001001_01000000000000000000000",
    "0_11111111_10000000000000000000000", "0_11111111_00000000000000000000000",
    "1_11111111_00000000000000000000000",
]
UINT8_ORIGINAL = np.array([0, 1, 10, 11, 100, 123, 200, 208, 209, 255], dtype="uint8")
UINT8_ROUNDED = np.array([0, 1, 10, 12, 96, 128, 192, 192, 224, 224], dtype="uint8")


def _float_rounded() -> np.ndarray:
    return np.array([int(b.replace("_", ""), 2) for b in FLOAT_ROUNDED_BITS], dtype="u4").view("f4")


def rounded(data, keepbits):
    return BitroundCodec(keepbits).encode(data, spec_of(data))


# -- the registry's sample data -----------------------------------------------
@pytest.mark.parametrize("name, original, expected", [
    ("bitround_uint8.zarr", UINT8_ORIGINAL, UINT8_ROUNDED),
    ("bitround_float32.zarr", FLOAT_ORIGINAL, None),
])
def test_sample_arrays(tmp_path, name, original, expected):
    expected = _float_rounded() if expected is None else expected
    a = zarrdask.open_array(str(SAMPLES / name), mode="r")
    assert a.metadata.to_json()["codecs"][0] == {"name": "bitround", "configuration": {"keepbits": 3}}
    assert a[...].tobytes() == expected.tobytes()
    # encoding the "Original" column gives the stored bytes
    stored = (SAMPLES / name / "c" / "0").read_bytes()
    assert rounded(original, 3).tobytes() == stored
    copy = tmp_path / name
    shutil.copytree(SAMPLES / name, copy)
    (copy / "c" / "0").unlink()
    w = zarrdask.open_array(str(copy), mode="r+")
    w[...] = original
    assert (copy / "c" / "0").read_bytes() == stored


# -- floats -------------------------------------------------------------------
def _finite_floats(dtype, n=20000, seed=0):
    rng = np.random.default_rng(seed)
    decades = {"f2": 5, "f4": 38, "f8": 300}[np.dtype(dtype).str[1:]]
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-decades - 8, decades, n)).astype(dtype)
    return x[np.isfinite(x)][: n // 2]


@pytest.mark.parametrize("dtype, keepbits", [("f2", 1), ("f2", 5), ("f2", 9), ("f4", 1), ("f4", 7),
                                             ("f4", 22), ("f8", 3), ("f8", 23), ("f8", 51)])
def test_floats_match_numcodecs(dtype, keepbits):
    x = _finite_floats(dtype)
    x = np.concatenate([x, np.array([0.0, -0.0, np.finfo(dtype).max, np.finfo(dtype).smallest_subnormal], dtype)])
    ours = rounded(x, keepbits)
    theirs = np.asarray(numcodecs.BitRound(keepbits).encode(x)).view(dtype)
    assert ours.dtype == x.dtype and ours.shape == x.shape
    assert ours.tobytes() == theirs.tobytes()


def test_float_rounding_is_within_half_a_unit():
    x = _finite_floats("f8")
    x = x[np.abs(x) > 1e-300]
    keepbits = 10
    error = np.abs(rounded(x, keepbits) - x) / np.abs(x)
    assert error.max() <= 2.0 ** -(keepbits + 1)


def test_round_half_to_even():
    # 1 + 2**-4 with keepbits 3: the dropped part is exactly half; mantissa 000 is even -> down
    x = np.array([1 + 2**-4, 1 + 3 * 2**-4, 1 + 2**-4 + 2**-20], dtype="f4")
    np.testing.assert_array_equal(rounded(x, 3), [1.0, 1.25, 1.125])


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8"])
def test_nan_and_inf_untouched(dtype):
    bits = {"f2": "u2", "f4": "u4", "f8": "u8"}[dtype]
    info = np.finfo(dtype)
    exp_mask = ((1 << (info.bits - 1)) - 1) ^ ((1 << info.nmant) - 1)
    patterns = [exp_mask | 1, exp_mask | ((1 << info.nmant) - 1), exp_mask | (1 << (info.nmant - 1)) | 3,
                exp_mask, (1 << (info.bits - 1)) | exp_mask | 5]  # sNaN, NaN, qNaN+payload, inf, -NaN
    x = np.array(patterns, dtype=bits).view(dtype)
    assert rounded(x, 2).view(bits).tolist() == patterns
    # numcodecs turns the signalling NaN into infinity: that is what is not copied
    assert not np.isnan(np.asarray(numcodecs.BitRound(2).encode(x)).view(dtype)[0])


def test_largest_finite_rounds_to_infinity_as_numcodecs():
    x = np.array([np.finfo("f4").max, -np.finfo("f4").max], "f4")
    np.testing.assert_array_equal(rounded(x, 3), [np.inf, -np.inf])


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", ml_dtypes.bfloat16])
def test_keepbits_at_or_above_the_mantissa_is_a_no_op(dtype):
    x = np.array([0.1, 1.2, -3.7, 1e4], dtype=dtype)
    mantissa = ml_dtypes.finfo(dtype).nmant
    for keepbits in (mantissa, mantissa + 1, 200):
        assert rounded(x, keepbits).tobytes() == x.tobytes()


def test_bfloat16():
    x = np.array([1.2, 3.3, 100.7, -0.1, np.nan, -np.inf], ml_dtypes.bfloat16)
    via_float32 = rounded(x.astype("f4"), 3)  # bfloat16 is float32's top half: same rounding
    expected = via_float32.astype(ml_dtypes.bfloat16)
    assert rounded(x, 3).tobytes() == expected.tobytes()
    np.testing.assert_array_equal(rounded(x, 3)[:4].astype("f4"), [1.25, 3.25, 104.0, -0.1015625])


@pytest.mark.parametrize("dtype", ["c8", "c16"])
def test_complex_parts_rounded_separately(dtype):
    z = (_finite_floats("f4", 400) + 1j * _finite_floats("f4", 400, seed=1)).astype(dtype).reshape(4, -1)
    part = "f4" if dtype == "c8" else "f8"
    out = rounded(z, 6)
    assert out.dtype == z.dtype and out.shape == z.shape
    assert out.real.tobytes() == rounded(np.ascontiguousarray(z.real), 6).tobytes()
    assert out.imag.tobytes() == rounded(np.ascontiguousarray(z.imag), 6).tobytes()
    assert out.real.dtype == np.dtype(part)


@pytest.mark.parametrize("part", [ml_dtypes.bfloat16, "f2", "f4"])
def test_complex_as_structured_fields(part):
    dtype = np.dtype([("real", part), ("imag", part)])
    z = np.zeros((2, 3), dtype)
    z["real"] = np.array([[1.2, 3.3, 100.7], [0.1, -5.5, 7.0]]).astype(part)
    z["imag"] = np.array([[-0.1, 5.0, 9.9], [1e3, 2.2, -3.3]]).astype(part)
    out = rounded(z, 2)
    assert out.dtype == dtype
    for f in ("real", "imag"):
        assert out[f].tobytes() == rounded(np.ascontiguousarray(z[f]), 2).tobytes()
    assert z["real"][0, 0] == np.asarray(1.2).astype(part)  # the input is not changed


# -- integers -----------------------------------------------------------------
def test_uint8_sample_table():
    assert rounded(UINT8_ORIGINAL, 3).tolist() == UINT8_ROUNDED.tolist()


def test_zarrs_unsigned_examples():
    # zarrs' own unit tests (codec_bitround_uint, codec_bitround_uint8), keepbits 3
    u32 = np.array([0, 1024, 1280, 1664, 1685, 123145182, 4294967295], "u4")
    assert rounded(u32, 3).tolist() == [0, 1024, 1280, 1536, 1792, 117440512, 3758096384]
    u8 = np.array([0, 3, 7, 15, 17, 54, 89, 128, 255], "u1")
    assert rounded(u8, 3).tolist() == [0, 3, 7, 16, 16, 56, 96, 128, 224]


def _reference_round(value: int, keepbits: int, lo: int, hi: int) -> int:
    """Round |value| to keepbits significant bits, half to even; round down where
    rounding up leaves [lo, hi]."""
    sign, mag = (-1, -value) if value < 0 else (1, value)
    drop = mag.bit_length() - keepbits
    if drop <= 0:
        return value
    low = (1 << drop) - 1
    up = (mag + ((mag >> drop) & 1) + (low >> 1)) & ~low
    out = sign * up
    return out if lo <= out <= hi else sign * (mag & ~low)


@pytest.mark.parametrize("dtype", ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8"])
@pytest.mark.parametrize("keepbits", [1, 3, 7])
def test_integers_against_a_reference(dtype, keepbits):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(keepbits)
    edges = [info.min, info.min + 1, -1, 0, 1, 2, 3, info.max - 1, info.max, info.max // 2, info.max // 2 + 1]
    values = [v for v in edges if info.min <= v <= info.max]
    values += [int(v) for v in rng.integers(info.min, info.max, 3000, dtype=dtype, endpoint=True)]
    x = np.array(values, dtype=dtype)
    expected = [_reference_round(int(v), keepbits, int(info.min), int(info.max)) for v in values]
    assert rounded(x, keepbits).tolist() == expected


def test_signed_examples():
    x = np.array([127, -127, -128, -100, 100, -1, 11, -11], "i1")
    assert rounded(x, 3).tolist() == [112, -128, -128, -96, 96, -1, 12, -12]


def test_datetimes_as_int64():
    d = np.array(["NaT", "2020-01-01T00:00:01.123456789", "1900-01-01"], "M8[ns]")
    out = rounded(d, 5)
    assert out.dtype == d.dtype
    assert out.view("i8").tolist() == rounded(d.view("i8"), 5).tolist()
    assert np.isnat(out[0])
    t = np.array([-7, 0, 1000], "m8[s]")
    assert rounded(t, 2).view("i8").tolist() == [-8, 0, 1024]


def test_large_keepbits_for_integers_is_a_no_op():
    x = np.array([0, 1, 255, 77], "u1")
    assert rounded(x, 8).tolist() == x.tolist()
    assert rounded(x, 64).tolist() == x.tolist()


def test_decode_is_identity_and_shapes_kept():
    codec = BitroundCodec(4)
    x = np.arange(24, dtype="f4").reshape(2, 3, 4) * 1.1
    spec = spec_of(x)
    enc = codec.encode(x, spec)
    assert enc.shape == x.shape and codec.encoded_spec(spec) == spec
    assert codec.decode(enc, spec) is enc
    assert codec.encode(x[:, ::2], spec_of(x[:, ::2])).shape == (2, 2, 4)  # non-contiguous input
    zero_d = np.array(1.2, "f4")
    out = codec.encode(zero_d, spec_of(zero_d))
    assert out.shape == () and out == rounded(np.array([1.2], "f4"), 4)[0]


# -- configuration ------------------------------------------------------------
def test_json_round_trip_and_pickle():
    doc = {"name": "bitround", "configuration": {"keepbits": 10}}
    codec = codec_from_json(doc)
    assert isinstance(codec, BitroundCodec)
    assert codec.to_json() == doc
    assert json.loads(json.dumps(codec.to_json())) == doc
    assert pickle.loads(pickle.dumps(codec)) == codec


@pytest.mark.parametrize("config, match", [
    ({}, "'keepbits' is required"),
    ({"keepbits": 0}, "at least 1"),
    ({"keepbits": -3}, "at least 1"),
    ({"keepbits": 2.0}, "integer"),
    ({"keepbits": "3"}, "integer"),
    ({"keepbits": True}, "integer"),
    ({"keepbits": None}, "integer"),
    ({"keepbits": 3, "dtype": "f4"}, "unknown configuration field"),
])
def test_invalid_configurations(config, match):
    with pytest.raises(CodecError, match=match):
        codec_from_json({"name": "bitround", "configuration": config})


@pytest.mark.parametrize("dtype", ["bool", "S4", "U3", object, [("a", "f4"), ("b", "f4")],
                                   [("real", "f4"), ("imag", "f8")], ml_dtypes.int4, ml_dtypes.float8_e4m3fn])
def test_unsupported_data_types(dtype):
    with pytest.raises(CodecError, match="bitround.*data type"):
        BitroundCodec(3).validate(ChunkSpec((2,), np.dtype(dtype), 0))


def test_numcodecs_alias_stays_numcodecs():
    # the deprecated alias reads through the numcodecs bridge: numcodecs' codec,
    # written back under the name it was read with
    codec = codec_from_json({"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}, kind="array_array")
    assert not isinstance(codec, BitroundCodec)
    assert codec.to_json() == {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}
    x = _finite_floats("f4", 500)
    spec = spec_of(x)
    assert codec.encode(x, spec).tobytes() == rounded(x, 3).tobytes()


# -- arrays -------------------------------------------------------------------
def _array(store, dtype="f4", shape=(40, 30), chunks=(16, 16), **kw):
    return zarrdask.create_array(store, shape=shape, dtype=dtype, chunks=chunks,
                                 filters=[{"name": "bitround", "configuration": {"keepbits": 6}}], **kw)


def test_array_round_trip(tmp_path):
    x = _finite_floats("f4", 4000)[:1200].reshape(40, 30)
    a = _array(str(tmp_path / "a.zarr"))
    a[...] = x
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["codecs"][0] == {"name": "bitround", "configuration": {"keepbits": 6}}
    b = zarrdask.open_array(str(tmp_path / "a.zarr"), mode="r")
    assert b[...].tobytes() == rounded(x, 6).tobytes()
    assert b[3:20, 5].tobytes() == rounded(x, 6)[3:20, 5].tobytes()


@pytest.mark.parametrize("dtype", ["i2", "u8", "M8[s]"])
def test_array_integers_with_zstd_and_fill_value(tmp_path, dtype):
    x = (np.arange(600) - (0 if dtype == "u8" else 300)).astype(dtype).reshape(20, 30)
    a = _array(str(tmp_path / "i.zarr"), dtype=dtype, shape=(25, 30), chunks=(10, 10),
               compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a[:20] = x
    out = zarrdask.open_array(str(tmp_path / "i.zarr"), mode="r")[...]
    assert out[:20].tobytes() == rounded(x, 6).tobytes()
    fill = np.full((5, 30), a.fill_value, dtype=dtype)  # NaT for datetimes
    assert out[20:].tobytes() == fill.tobytes()


def test_inside_a_shard(tmp_path):
    x = _finite_floats("f8", 5000)[:64 * 32].reshape(64, 32)
    a = _array(str(tmp_path / "s.zarr"), dtype="f8", shape=(64, 32), chunks=(8, 8), shards=(32, 32))
    a[...] = x
    meta = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())
    assert meta["codecs"][0]["name"] == "sharding_indexed"
    assert meta["codecs"][0]["configuration"]["codecs"][0] == {"name": "bitround", "configuration": {"keepbits": 6}}
    b = zarrdask.open_array(str(tmp_path / "s.zarr"), mode="r")
    assert b[...].tobytes() == rounded(x, 6).tobytes()
    assert b[9:13, 3:30].tobytes() == rounded(x, 6)[9:13, 3:30].tobytes()


def test_rechunk(tmp_path):
    x = _finite_floats("f4", 4000)[:1200].reshape(40, 30)
    a = _array(str(tmp_path / "src.zarr"))
    a[...] = x
    zarrdask.rechunk(a, (40, 7), str(tmp_path / "dst.zarr"), max_mem="16MB").execute()
    b = zarrdask.open_array(str(tmp_path / "dst.zarr"), mode="r")
    assert b.chunks == (40, 7)
    assert b[...].tobytes() == rounded(x, 6).tobytes()
    codecs = json.loads((tmp_path / "dst.zarr" / "zarr.json").read_text())["codecs"]
    assert {"name": "bitround", "configuration": {"keepbits": 6}} in codecs


@pytest.mark.parametrize("dtype, name", [
    (ml_dtypes.bfloat16, "bfloat16"),
    ([("real", ml_dtypes.bfloat16), ("imag", ml_dtypes.bfloat16)], "complex_bfloat16"),
    ([("real", "f2"), ("imag", "f2")], "complex_float16"),
])
def test_small_float_arrays(tmp_path, dtype, name):
    dtype = np.dtype(dtype)
    values = _finite_floats("f2", 200)[:6 * 5].reshape(6, 5)
    x = np.zeros((6, 5), dtype)
    if dtype.names:
        x["real"], x["imag"] = values.astype(dtype["real"]), (-values[::-1]).astype(dtype["real"])
    else:
        x[...] = values.astype(dtype)
    a = _array(str(tmp_path / "h.zarr"), dtype=dtype, shape=(6, 5), chunks=(4, 4))
    a[...] = x
    assert json.loads((tmp_path / "h.zarr" / "zarr.json").read_text())["data_type"] == name
    out = zarrdask.open_array(str(tmp_path / "h.zarr"), mode="r")[...]
    assert out.tobytes() == rounded(x, 6).tobytes()
