"""The ``cast_value`` codec (zarr-extensions codecs/cast_value), at codec level:
configuration, rounding against an exact reference, out_of_range, special
values, scalar_map, the fill value. Array level, the README examples and
sharding / rechunk: tests/codecs/test_scale_offset.py; zarr-python 3.4:
tests/interop/test_cast_scale_zarr34.py."""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.cast_value import ROUNDING_MODES, CastValueCodec, cast_values
from zarrdask.codecs.numeric_types import numeric_type
from zarrdask.codecs.registry import codec_from_json
from zarrdask.errors import CodecError, CorruptChunkError

README_NUMPY_EXAMPLE = {
    "data_type": "uint8",
    "rounding": "towards-zero",
    "out_of_range": "wrap",
    # the README writes "+Infinity", which is no float64 fill value form (see test_readme_plus_infinity)
    "scalar_map": {"encode": [["NaN", 0], ["Infinity", 0], ["-Infinity", 0]]},
}


def spec(dtype, fill=0, shape=(4,)):
    return ChunkSpec(shape, np.dtype(dtype), np.asarray(fill).astype(dtype)[()])


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize("config", [
    {"data_type": "uint8"},
    {"data_type": "int16", "rounding": "nearest-even"},
    {"data_type": "float32", "rounding": "towards-negative", "out_of_range": "clamp"},
    README_NUMPY_EXAMPLE,
    {"data_type": "uint8", "scalar_map": {"decode": [[0, "NaN"]]}},
])
def test_json_round_trip(config):
    doc = {"name": "cast_value", "configuration": config}
    codec = codec_from_json(doc)
    assert isinstance(codec, CastValueCodec)
    assert codec.to_json() == doc
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert codec.rounding == config.get("rounding", "nearest-even")


@pytest.mark.parametrize("config, match", [
    (None, "data_type"),
    ({}, "data_type"),
    ({"rounding": "towards-zero"}, "'data_type' is required"),
    ({"data_type": "uint8", "endian": "little"}, "unknown configuration field"),
    ({"data_type": "uint8", "rounding": "nearest"}, "'rounding'"),
    ({"data_type": "uint8", "rounding": 1}, "'rounding'"),
    ({"data_type": "uint8", "out_of_range": "saturate"}, "'out_of_range'"),
    ({"data_type": "uint8", "out_of_range": None}, "'out_of_range'"),
    ({"data_type": "float32", "out_of_range": "wrap"}, "'wrap' needs an integral data_type"),
    ({"data_type": "bool"}, "integer and floating-point"),
    ({"data_type": "complex64"}, "integer and floating-point"),
    ({"data_type": "string"}, "integer and floating-point"),
    ({"data_type": "no_such_type"}, "data_type"),
    ({"data_type": "uint8", "scalar_map": None}, "'scalar_map'"),
    ({"data_type": "uint8", "scalar_map": [["NaN", 0]]}, "'scalar_map'"),
    ({"data_type": "uint8", "scalar_map": {"encode": [], "both": []}}, "'scalar_map'"),
    ({"data_type": "uint8", "scalar_map": {"encode": [["NaN", 0, 1]]}}, "scalar_map.encode"),
    ({"data_type": "uint8", "scalar_map": {"encode": ["NaN"]}}, "scalar_map.encode"),
])
def test_invalid_configuration(config, match):
    doc = {"name": "cast_value"} if config is None else {"name": "cast_value", "configuration": config}
    with pytest.raises(CodecError, match=match):
        codec_from_json(doc)


@pytest.mark.parametrize("source", ["bool", "complex64", "U3", "S2", "M8[s]", [("a", "i4")]])
def test_non_numeric_array_type_is_refused(source):
    with pytest.raises(CodecError, match="integer and floating-point"):
        CastValueCodec("int32").validate(ChunkSpec((2,), np.dtype(source), None))


@pytest.mark.parametrize("entry, match", [
    ({"encode": [["+Infinity", 0]]}, r"scalar_map.encode\[0\]\[0\]"),  # the README's spelling
    ({"encode": [["NaN", 256]]}, r"scalar_map.encode\[0\]\[1\]"),
    ({"decode": [[0, "NaN"]]}, r"scalar_map.decode\[0\]\[1\]"),  # int16 has no NaN
    ({"decode": [[1.5, 0]]}, r"scalar_map.decode\[0\]\[0\]"),
])
def test_scalar_map_entries_checked_against_the_types(entry, match):
    array_type = "int16" if "decode" in entry and entry["decode"][0][1] == "NaN" else "float64"
    codec = CastValueCodec("uint8", scalar_map=entry)
    with pytest.raises(CodecError, match=match):
        codec.validate(spec(array_type))


def test_readme_plus_infinity():
    """The README's example writes "+Infinity", not a float64 fill value form: refused, naming it."""
    config = dict(README_NUMPY_EXAMPLE, scalar_map={"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]})
    codec = CastValueCodec.from_config(config)
    with pytest.raises(CodecError, match=r"'\+Infinity'"):
        codec.validate(spec("float64"))


# --------------------------------------------------------------------------- rounding


def _reference(x: Fraction, t, mode: str) -> Fraction:
    """``x`` rounded onto the values of ``t`` (unbounded exponent), in exact arithmetic."""
    if t.is_int:
        q = Fraction(1)
    elif x == 0:
        return Fraction(0)
    else:
        k = math.floor(math.log2(abs(x)))
        while Fraction(2) ** k > abs(x):
            k -= 1
        while Fraction(2) ** (k + 1) <= abs(x):
            k += 1
        q = Fraction(2) ** (max(k, t.emin) - t.precision + 1)
    scaled = x / q
    low = math.floor(scaled)
    frac = scaled - low
    if frac == 0:
        return low * q
    up = {
        "towards-negative": False,
        "towards-positive": True,
        "towards-zero": x < 0,
        "nearest-even": frac > Fraction(1, 2) or (frac == Fraction(1, 2) and low % 2 == 1),
        "nearest-away": frac > Fraction(1, 2) or (frac == Fraction(1, 2) and x > 0),
    }[mode]
    return (low + up) * q


def _as_fraction(v, t) -> Fraction:
    if t.is_int:
        return Fraction(int(v) if t.dtype.kind in "iu" else int(np.asarray(v).astype(np.int64)))
    return Fraction(float(np.asarray(v).astype(np.float64)))


def _check_against_reference(src, dst, values):
    s, d = numeric_type(src, "t", "t"), numeric_type(dst, "t", "t")
    x = np.asarray(values).astype(src)
    for mode in ROUNDING_MODES:
        got = cast_values(x, src, dst, rounding=mode, out_of_range="clamp")
        assert got.dtype == np.dtype(dst)
        for xv, g in zip(x, got):
            want = _reference(_as_fraction(xv, s), d, mode)
            if d.is_int:
                want = min(max(want, d.lo), d.hi)
                assert _as_fraction(g, d) == want, (src, dst, mode, xv, g)
            elif want > d.hi or want < d.lo:
                top = (math.inf if want > 0 else -math.inf) if d.has_inf else (d.hi if want > 0 else d.lo)
                assert float(np.asarray(g).astype(np.float64)) == top, (src, dst, mode, xv, g)
            else:
                assert _as_fraction(g, d) == want, (src, dst, mode, xv, g)


RNG = np.random.default_rng(42)
TIES_F64 = [0.5, 1.5, 2.5, -2.5, -0.5, 1 + 2.0**-24, 1 + 3 * 2.0**-24, -(1 + 2.0**-24), 65520.0, 65519.99,
            2.0**-25, 1.5 * 2.0**-149, 2.0**-150, 3 * 2.0**-150, 1e-8, -1e-8, 0.0, -0.0, 448.0, 464.0, 480.0]
F64 = np.concatenate([RNG.standard_normal(150) * 10.0 ** RNG.integers(-45, 40, 150), TIES_F64])
I64 = np.array([2**63 - 1, -(2**63), 2**53 + 1, 2**54 + 2, 2**54 + 6, 3 * 2**53 + 1, -(2**53 + 1),
                2**24 + 1, 2**24 + 3, 2**62 + 2**38, 2**62 + 2**38 + 1, 2**62 + 2**39 + 2**38, 2**62 - 1,
                *RNG.integers(-(2**63), 2**63 - 1, 100)], dtype=np.int64)
U64 = np.array([2**64 - 1, 2**63, 2**63 + 1, 2**64 - 2**11, 2**64 - 2**10, 2**64 - 3 * 2**10,
                *RNG.integers(0, 2**64 - 1, 60, dtype=np.uint64)], dtype=np.uint64)


@pytest.mark.parametrize("dst", ["float32", "float16", "int8", "uint8", "int64", "uint64", ml_dtypes.bfloat16,
                                 ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
                                 ml_dtypes.float4_e2m1fn, ml_dtypes.float6_e3m2fn, ml_dtypes.float8_e8m0fnu,
                                 ml_dtypes.int4, ml_dtypes.uint2])
def test_float64_to_x_matches_exact_rounding(dst):
    _check_against_reference("float64", dst, F64)


@pytest.mark.parametrize("src, values, dst", [
    ("int64", I64, "float32"), ("int64", I64, "float64"), ("int64", I64, "float16"),
    ("int64", I64, ml_dtypes.bfloat16), ("uint64", U64, "float32"), ("uint64", U64, "float64"),
    ("int32", RNG.integers(-(2**31), 2**31 - 1, 200, dtype=np.int32), "float16"),
    ("int32", [16777217, 16777219, -16777217, 2**31 - 1], "float32"),
    ("float32", (RNG.standard_normal(200) * 10.0 ** RNG.integers(-10, 10, 200)), ml_dtypes.float8_e4m3),
    ("float32", (RNG.standard_normal(200) * 10.0 ** RNG.integers(-10, 10, 200)), "int16"),
    (ml_dtypes.bfloat16, [0.5, 1.5, 2.5, -3.5, 1e30, 255.5], "uint8"),
    (ml_dtypes.int4, [-8, -1, 0, 7], ml_dtypes.float4_e2m1fn),
])
def test_other_pairs_match_exact_rounding(src, values, dst):
    _check_against_reference(src, dst, values)


def test_int64_to_float32_directed_rounding():
    """int64 → float32 with insufficient mantissa (the README's example): each mode exactly."""
    x = np.array([2**24 + 1, -(2**24 + 1), 2**24 + 3, 2**62 + 2**38 + 1], dtype=np.int64)
    expected = {
        "nearest-even": [2**24, -(2**24), 2**24 + 4, 2**62 + 2**39],
        "nearest-away": [2**24 + 2, -(2**24 + 2), 2**24 + 4, 2**62 + 2**39],
        "towards-zero": [2**24, -(2**24), 2**24 + 2, 2**62],
        "towards-positive": [2**24 + 2, -(2**24), 2**24 + 4, 2**62 + 2**39],
        "towards-negative": [2**24, -(2**24 + 2), 2**24 + 2, 2**62],
    }
    for mode, want in expected.items():
        got = CastValueCodec("float32", rounding=mode).encode(x, spec("int64"))
        assert got.dtype == np.float32
        assert [int(v) for v in got] == want, mode


# --------------------------------------------------------------------------- out of range


def test_readme_out_of_range_examples():
    x, s = np.array([128.0]), spec("float64", shape=(1,))
    with pytest.raises(CodecError, match=r"128\.0 \(float64\) as int8: out of the range \[-128, 127\]"):
        CastValueCodec("int8").encode(x, s)
    assert CastValueCodec("int8", out_of_range="clamp").encode(x, s).tolist() == [127]
    assert CastValueCodec("int8", out_of_range="wrap").encode(x, s).tolist() == [-128]
    wrapped = CastValueCodec("int16", out_of_range="wrap").encode(np.array([32768, 32769, -32769]), spec("int64", shape=(3,)))
    assert wrapped.dtype == np.int16 and wrapped.tolist() == [-32768, -32767, 32767]


def test_wrap_is_modular_for_any_magnitude():
    x = np.trunc(np.concatenate([RNG.standard_normal(300) * 10.0 ** RNG.integers(0, 300, 300),
                                 [2.0**64 - 2048, -(2.0**63), 2.0**63, -(2.0**64) + 2048, 2.0**70 + 2.0**20]]))
    for dst, bits, signed in [("int64", 64, True), ("uint64", 64, False), ("int8", 8, True), ("uint32", 32, False),
                              (ml_dtypes.int4, 4, True), (ml_dtypes.uint2, 2, False)]:
        got = cast_values(x, "float64", dst, rounding="towards-zero", out_of_range="wrap")
        for xv, g in zip(x, got):
            want = int(xv) % 2**bits
            if signed and want >= 2 ** (bits - 1):
                want -= 2**bits
            assert (int(g) if np.dtype(dst).kind in "iu" else int(np.asarray(g).astype(np.int64))) == want, (dst, xv)


def test_int_to_int():
    x = np.array([-300, -1, 0, 200, 300], dtype=np.int64)
    assert cast_values(x, "int64", "uint8", out_of_range="clamp").tolist() == [0, 0, 0, 200, 255]
    assert cast_values(x, "int64", "uint8", out_of_range="wrap").tolist() == [212, 255, 0, 200, 44]
    with pytest.raises(CodecError, match=r"-300 \(int64\) as uint8.*\(3 such values"):
        cast_values(x, "int64", "uint8")
    big = np.array([2**64 - 1, 5], dtype=np.uint64)
    assert cast_values(big, "uint64", "int64", out_of_range="wrap").tolist() == [-1, 5]
    assert cast_values(big, "uint64", "int64", out_of_range="clamp").tolist() == [2**63 - 1, 5]


def test_clamp_to_infinity_and_to_finite_limits():
    x = np.array([1e300, -1e300, 65519.0, 65520.0])
    assert cast_values(x, "float64", "float16", out_of_range="clamp").tolist() == [np.inf, -np.inf, 65504.0, np.inf]
    e4m3fn = cast_values(np.array([1e6, -1e6, 460.0]), "float64", ml_dtypes.float8_e4m3fn, out_of_range="clamp")
    assert e4m3fn.astype(np.float64).tolist() == [448.0, -448.0, 448.0]
    e8m0 = cast_values(np.array([0.0, -3.0, 1e-300]), "float64", ml_dtypes.float8_e8m0fnu, out_of_range="clamp")
    assert e8m0.astype(np.float64).tolist() == [2.0**-127] * 3


def test_rounding_happens_before_the_range_check():
    # 65519 rounds to 65504 (in range); towards-positive makes it 65536 (out of range)
    assert cast_values(np.array([65519.0]), "float64", "float16").tolist() == [65504.0]
    with pytest.raises(CodecError, match="out of the range"):
        cast_values(np.array([65519.0]), "float64", "float16", rounding="towards-positive")
    # towards-zero does not bring an overflowing value back to the largest finite one
    with pytest.raises(CodecError, match="out of the range"):
        cast_values(np.array([1e39]), "float64", "float32", rounding="towards-zero")
    assert cast_values(np.array([255.4, -0.4]), "float64", "uint8").tolist() == [255, 0]


def test_wrap_on_decode_into_a_float_type_is_an_error():
    codec = CastValueCodec("int32", out_of_range="wrap")
    s = spec(ml_dtypes.float8_e4m3fn, shape=(2,))
    with pytest.raises(CorruptChunkError, match="out_of_range 'wrap' does not apply to float8_e4m3fn"):
        codec.decode(np.array([1, 1000], dtype=np.int32), s)


# --------------------------------------------------------------------------- special values


def test_nan_infinity_and_signed_zero():
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
    y = cast_values(x, "float64", "float32")
    assert np.isnan(y[0]) and y[1:3].tolist() == [np.inf, -np.inf]
    assert np.signbit(y[3]) and not np.signbit(y[4])
    assert np.signbit(cast_values(np.array([-1e-300]), "float64", "float16")[0])  # rounds to -0.0
    h = cast_values(x, "float64", ml_dtypes.float8_e5m2)
    assert np.isnan(h.astype(float)[0]) and h.astype(float)[1:3].tolist() == [np.inf, -np.inf]
    fnuz = cast_values(np.array([-0.0]), "float64", ml_dtypes.float8_e4m3fnuz)
    assert fnuz.view(np.uint8).tolist() == [0]  # the type has no -0: the same number, +0


@pytest.mark.parametrize("value, dst, what", [
    (np.nan, "uint8", "NaN"), (np.inf, "int32", "Infinity"), (-np.inf, "uint8", "Infinity"),
    (np.inf, ml_dtypes.float8_e4m3fn, "Infinity"), (np.nan, ml_dtypes.float4_e2m1fn, "NaN"),
])
def test_special_values_without_a_target_are_errors_even_with_clamp(value, dst, what):
    for out_of_range in (None, "clamp"):
        with pytest.raises(CodecError, match=f"has no {what}"):
            cast_values(np.array([1.0, value]), "float64", dst, out_of_range=out_of_range)


def test_scalar_map():
    codec = CastValueCodec.from_config(README_NUMPY_EXAMPLE)
    s = spec("float64", shape=(7,))
    codec.validate(s)
    x = np.array([np.nan, np.inf, -np.inf, 300.7, -1.5, 2.9, np.float64("nan") * -1])
    assert codec.encode(x, s).tolist() == [0, 0, 0, 44, 255, 2, 0]
    # first occurrence wins; a map entry beats exact representability; 0 matches -0.0
    codec = CastValueCodec("uint8", scalar_map={"encode": [[3, 7], [3, 9], [0, 1]], "decode": [[7, 3.5]]})
    s = spec("float64", fill=5, shape=(4,))
    assert codec.encode(np.array([3.0, -0.0, 0.0, 4.0]), s).tolist() == [7, 1, 1, 4]
    assert codec.decode(np.array([7, 1, 4], dtype=np.uint8), s.with_shape((3,))).tolist() == [3.5, 1.0, 4.0]


def test_nan_key_matches_nan_payloads():
    payload = np.array([0x7FF0000000000123, 0xFFF8000000000000], dtype=np.uint64).view(np.float64)
    codec = CastValueCodec("int8", scalar_map={"encode": [["NaN", -1]]})
    assert codec.encode(payload, spec("float64", shape=(2,))).tolist() == [-1, -1]


# --------------------------------------------------------------------------- fill value, errors


def test_fill_value_cast_in_encoded_spec():
    codec = CastValueCodec("uint8", scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]})
    encoded = codec.encoded_spec(spec("float64", fill=np.nan))
    assert encoded.dtype == np.uint8 and encoded.fill_value == 0 and isinstance(encoded.fill_value, np.uint8)
    encoded = CastValueCodec("float16").encoded_spec(spec("float64", fill=-0.0))
    assert encoded.dtype == np.float16 and np.signbit(encoded.fill_value)


@pytest.mark.parametrize("dtype, fill, codec, match", [
    ("float64", np.nan, CastValueCodec("uint8"), "has no NaN"),
    ("float64", 0.5, CastValueCodec("uint8"), "does not survive the cast"),
    ("float64", 300.0, CastValueCodec("uint8", out_of_range="clamp"), "does not survive"),
    ("int32", 1000, CastValueCodec("int8"), "out of the range"),
    # encoding maps NaN, but decoding 0 gives 0.0, not NaN
    ("float64", np.nan, CastValueCodec("uint8", scalar_map={"encode": [["NaN", 0]]}), "does not survive"),
])
def test_fill_value_must_survive_the_round_trip(dtype, fill, codec, match):
    with pytest.raises(CodecError, match=match):
        codec.validate(spec(dtype, fill=fill))
    with pytest.raises(CodecError, match="fill value"):
        codec.encoded_spec(spec(dtype, fill=fill))


def test_decode_error_is_corrupt_chunk_error():
    codec = CastValueCodec("int16")
    with pytest.raises(CorruptChunkError, match=r"cannot decode the value 300 \(int16\) as uint8"):
        codec.decode(np.array([1, 300], dtype=np.int16), spec("uint8", shape=(2,)))


@pytest.mark.parametrize("array_type, target, values", [
    ("float32", ml_dtypes.bfloat16, [1.0, -2.5, 327680.0, np.nan, -np.inf]),
    ("float32", ml_dtypes.float8_e4m3fn, [1.0, -2.5, 448.0, 0.001953125]),
    ("int8", ml_dtypes.int4, [-8, 0, 7]),
    (ml_dtypes.bfloat16, "float32", [1.0, -2.5, 327680.0, np.nan]),
    (ml_dtypes.float8_e5m2, "float16", [1.0, -0.0, 57344.0, np.inf]),
])
def test_ml_dtypes_lossless_round_trips(array_type, target, values):
    codec = CastValueCodec(np.dtype(target))
    assert codec.get_config() == {"data_type": np.dtype(target).name}
    x = np.asarray(values).astype(array_type)
    s = spec(array_type, shape=x.shape)
    codec.validate(s)
    encoded = codec.encode(x, s)
    assert encoded.dtype == np.dtype(target)
    back = codec.decode(encoded, s)
    assert back.dtype == np.dtype(array_type)
    assert back.tobytes() == x.tobytes() or np.array_equal(back.astype(float), x.astype(float), equal_nan=True)


def test_exact_casts_and_multidimensional_chunks():
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    codec = CastValueCodec("float32")
    s = ChunkSpec(x.shape, x.dtype, np.int16(0))
    y = codec.encode(x, s)
    assert y.dtype == np.float32 and y.shape == x.shape
    assert codec.decode(y, s).dtype == np.int16
    np.testing.assert_array_equal(codec.decode(y, s), x)
    fortran = np.asfortranarray(x.astype(np.float64) + 0.5)
    np.testing.assert_array_equal(CastValueCodec("int32", rounding="towards-zero").encode(fortran, s), x)


# --------------------------------------------------------------------------- ml_dtypes by name, at array level


def _registry_knows(name):
    from zarrdask.errors import MetadataError
    from zarrdask.metadata.dtypes.api import parse_data_type_v3

    try:
        parse_data_type_v3(name)
        return True
    except MetadataError:
        return False


needs_ml_names = pytest.mark.skipif(not _registry_knows("bfloat16"),
                                    reason="the data-type registry does not know the ml_dtypes names yet")


@needs_ml_names
def test_ml_dtypes_by_name_at_array_level(tmp_path):
    import zarrdask

    filters = [{"name": "cast_value", "configuration": {"data_type": "bfloat16", "rounding": "towards-zero",
                                                        "scalar_map": {"encode": [["NaN", "0x7fc1"]]}}}]
    codec = codec_from_json(filters[0])
    assert codec.target.dtype == np.dtype(ml_dtypes.bfloat16) and codec.to_json() == filters[0]
    x = np.array([1.0, -(1 + 2**-7 + 2**-9), np.nan, 3.0], dtype=np.float32)
    a = zarrdask.create_array(str(tmp_path / "b.zarr"), shape=x.shape, dtype=x.dtype, chunks=x.shape,
                              filters=filters, compressors=None, fill_value=0.0)
    a[...] = x
    # bfloat16 little-endian: 1.0 = 0x3f80, -(1 + 2**-7) (towards zero) = 0xbf81, NaN mapped to 0x7fc1, 3.0 = 0x4040
    assert (tmp_path / "b.zarr" / "c" / "0").read_bytes() == bytes.fromhex("803f" "81bf" "c17f" "4040")
    back = zarrdask.open_array(str(tmp_path / "b.zarr"))[...]
    assert back[0] == 1.0 and back[1] == -(1 + 2**-7) and np.isnan(back[2]) and back[3] == 3.0

    wrap = [{"name": "cast_value", "configuration": {"data_type": "int4", "out_of_range": "wrap"}}]
    y = np.array([-8, 7, 8, -9, 100], dtype=np.int8)
    b = zarrdask.create_array(str(tmp_path / "i.zarr"), shape=y.shape, dtype=y.dtype, chunks=y.shape,
                              filters=wrap, fill_value=0)
    b[...] = y
    assert zarrdask.open_array(str(tmp_path / "i.zarr"))[...].tolist() == [-8, 7, -8, 7, 4]

    so = [{"name": "scale_offset", "configuration": {"offset": 0.5, "scale": 4}},
          {"name": "cast_value", "configuration": {"data_type": "float8_e4m3fn", "out_of_range": "clamp"}}]
    z = np.array([1.5, 2.25, -3.0, 1000.0], dtype=ml_dtypes.bfloat16)
    c = zarrdask.create_array(str(tmp_path / "z.zarr"), shape=z.shape, dtype=z.dtype, chunks=z.shape,
                              filters=so, fill_value=0.5)
    c[...] = z
    assert zarrdask.open_array(str(tmp_path / "z.zarr"))[...].astype(float).tolist() == [1.5, 2.25, -3.0, 112.5]
