"""The ``zfp`` codec (zarr-extensions codecs/zfp): configuration, modes and their
error bounds, data types and chunk shapes, hostile chunks, zfpy missing, arrays.

No peer writes or reads this codec here: zarr-python 3.4 has no ``zfp`` codec,
and the ``zarrs`` wheel for zarr-python is built without its zfp feature
("codec zfp is not supported"). zfpy — the same zfp library, through its own
Python functions — is the cross-check: for the modes it offers, its headerless
streams are byte for byte the codec's.
"""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs import zfp as zfp_module
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.codecs.zfp import ZfpCodec, field_shape
from zarrdask.errors import (
    CodecError,
    CorruptChunkError,
    MetadataError,
    MissingDependencyError,
    UnknownCodecError,
)

zfpy = pytest.importorskip("zfpy")
try:  # (installed with tensorstore; zarrdask's own dependency soon)
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

#: ml_dtypes' integer types (one value a byte) and their bits; its floats below float32
ML_INTS = [] if ml_dtypes is None else [(np.dtype(t), b, t.__name__.startswith("int")) for t, b in (
    (ml_dtypes.int4, 4), (ml_dtypes.uint4, 4), (ml_dtypes.int2, 2), (ml_dtypes.uint2, 2))]
ML_FLOATS = [] if ml_dtypes is None else [np.dtype(t) for t in (
    ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)]

#: the README's examples/*.json, as written there
EXAMPLES = {
    "expert": {"name": "zfp", "configuration": {"mode": "expert", "minbits": 1, "maxbits": 13, "maxprec": 19,
                                                "minexp": -2}},
    "fixed_accuracy": {"name": "zfp", "configuration": {"mode": "fixed_accuracy", "tolerance": 0.05}},
    "fixed_precision": {"name": "zfp", "configuration": {"mode": "fixed_precision", "precision": 19}},
    "fixed_rate": {"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": 10.5}},
    "reversible": {"name": "zfp", "configuration": {"mode": "reversible"}},
}
SHAPES = [(7,), (5, 9), (3, 5, 6), (2, 3, 5, 6)]
REVERSIBLE = ZfpCodec("reversible")


def _spec(shape, dtype, fill=0):
    return ChunkSpec(tuple(shape), np.dtype(dtype), fill)


def _round_trip(codec, x, key="c/0"):
    spec = _spec(x.shape, x.dtype)
    codec.validate(spec)
    data = codec.encode(x, spec)
    y = codec.decode(data, spec, key)
    assert y.shape == x.shape and y.dtype == x.dtype
    return data, y


def _smooth(shape, dtype="f8"):
    grids = np.meshgrid(*(np.linspace(0, 3, n) for n in shape), indexing="ij")
    return (np.sin(sum(grids)) * 100 + 7).astype(dtype)


# -- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_readme_examples_round_trip_their_json(name):
    codec = codec_from_json(EXAMPLES[name])
    assert isinstance(codec, ZfpCodec) and codec.mode == name
    assert codec.to_json() == EXAMPLES[name]
    assert type(codec.to_json()["configuration"].get("rate", 0.0)) is float  # 10.5 stays 10.5
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert codec_from_json(codec.to_json()) == codec


def test_numbers_keep_their_json_form():
    assert ZfpCodec("fixed_accuracy", tolerance=1).get_config() == {"mode": "fixed_accuracy", "tolerance": 1}
    assert ZfpCodec("fixed_rate", rate=np.float32(8)).get_config()["rate"] == 8.0
    assert ZfpCodec("fixed_precision", precision=np.int64(12)).get_config()["precision"] == 12
    assert ZfpCodec("fixed_accuracy", tolerance=0).get_config()["tolerance"] == 0  # near-lossless: allowed


@pytest.mark.parametrize("config, field", [
    ({}, "mode"),
    ({"mode": 4, "tolerance": 0.05}, "mode"),  # numcodecs.zfpy's integer modes
    ({"mode": "accuracy", "tolerance": 0.05}, "mode"),
    ({"mode": "reversible", "write_header": False}, "write_header"),  # zarrs' former parameter
    ({"mode": "reversible", "tolerance": 0.05}, "tolerance"),
    ({"mode": "fixed_rate", "rate": 8, "precision": 3}, "precision"),
    ({"mode": "fixed_accuracy"}, "tolerance"),
    ({"mode": "fixed_rate"}, "rate"),
    ({"mode": "fixed_precision"}, "precision"),
    ({"mode": "expert", "minbits": 1, "maxbits": 13, "maxprec": 19}, "minexp"),
    ({"mode": "fixed_accuracy", "tolerance": "0.05"}, "tolerance"),
    ({"mode": "fixed_accuracy", "tolerance": True}, "tolerance"),
    ({"mode": "fixed_accuracy", "tolerance": -0.1}, "tolerance"),
    ({"mode": "fixed_accuracy", "tolerance": float("inf")}, "tolerance"),
    ({"mode": "fixed_rate", "rate": 0}, "rate"),
    ({"mode": "fixed_rate", "rate": -2.5}, "rate"),
    ({"mode": "fixed_rate", "rate": float("nan")}, "rate"),
    ({"mode": "fixed_rate", "rate": 2.0 ** 24}, "rate"),
    ({"mode": "fixed_rate", "rate": None}, "rate"),
    ({"mode": "fixed_precision", "precision": 19.0}, "precision"),
    ({"mode": "fixed_precision", "precision": -1}, "precision"),
    ({"mode": "fixed_precision", "precision": 1 << 32}, "precision"),
    ({"mode": "fixed_precision", "precision": False}, "precision"),
    ({"mode": "expert", "minbits": -1, "maxbits": 13, "maxprec": 19, "minexp": -2}, "minbits"),
    ({"mode": "expert", "minbits": 1, "maxbits": 13.5, "maxprec": 19, "minexp": -2}, "maxbits"),
    ({"mode": "expert", "minbits": 20, "maxbits": 13, "maxprec": 19, "minexp": -2}, "minbits"),
    ({"mode": "expert", "minbits": 1, "maxbits": 13, "maxprec": 0, "minexp": -2}, "maxprec"),
    ({"mode": "expert", "minbits": 1, "maxbits": 13, "maxprec": 65, "minexp": -2}, "maxprec"),
    ({"mode": "expert", "minbits": 1, "maxbits": 13, "maxprec": 19, "minexp": -2.0}, "minexp"),
    ({"mode": "expert", "minbits": 1, "maxbits": 13, "maxprec": 19, "minexp": 1 << 31}, "minexp"),
])
def test_forbidden_configurations_name_the_field(config, field):
    with pytest.raises(CodecError, match=field) as info:
        codec_from_json({"name": "zfp", "configuration": config}, key="a/zarr.json")
    assert "a/zarr.json" in str(info.value) and "'zfp'" in str(info.value)


@pytest.mark.parametrize("codec, dtype, field", [
    (ZfpCodec("fixed_accuracy", tolerance=0.1), "int32", "fixed_accuracy"),  # zfp: floating point only
    (ZfpCodec("fixed_accuracy", tolerance=0.1), "uint8", "fixed_accuracy"),
    (REVERSIBLE, "bool", "bool"),
    (REVERSIBLE, "complex64", "complex64"),
    (REVERSIBLE, "<U3", "<U3"),
    (REVERSIBLE, "S4", "S4"),
    (REVERSIBLE, "datetime64[s]", "datetime64"),
    (REVERSIBLE, np.longdouble, "float128"),
])
def test_what_a_data_type_cannot_do_is_a_codec_error(codec, dtype, field):
    with pytest.raises(CodecError, match=field):
        codec.validate(_spec((4, 4), dtype))


@pytest.mark.parametrize("dtype, q", [("f4", 10), ("f8", 30)])
@pytest.mark.parametrize("shape", SHAPES)
def test_expert_mode_with_zfps_relative_error_recipe(dtype, q, shape):
    """zfp FAQ "Can zfp bound the point-wise relative error?": expert mode
    ``0 0 p -1075`` (a maxbits zfp does not respect: blocks unbounded, longer
    than zfp_stream_maximum_size says) bounds the relative error (by 2**(q - 23|52) in 1-d)."""
    n = 32 if dtype == "f4" else 64
    x = np.random.default_rng(9).standard_normal(shape).astype(dtype) * 1e3 + 1e-3
    lossless = ZfpCodec("expert", minbits=0, maxbits=0, maxprec=64, minexp=-1075)
    assert _round_trip(lossless, x)[1].tobytes() == x.tobytes()
    _, y = _round_trip(ZfpCodec("expert", minbits=0, maxbits=0, maxprec=n - q, minexp=-1075), x)
    rel = np.abs((x.astype("f8") - y.astype("f8")) / x.astype("f8")).max()
    # the FAQ's 2**(q - 23|52) holds for 1-d blocks; the decorrelating transform of d-d
    # blocks spreads the truncation: measured up to 2**5.8 times it in 4-d, bounded here by 4**d
    assert 0 < rel <= 2.0 ** (q - (23 if dtype == "f4" else 52) + (0 if len(shape) == 1 else 2 * len(shape)))


@pytest.mark.parametrize("dtype", ["f4", "f8", "i4", "i8"])
@pytest.mark.parametrize("maxbits", [0, 1, 5, 9, 14, 18, 40])
def test_expert_mode_with_any_maxbits_round_trips(dtype, maxbits):
    x = (_smooth((6, 7, 5), "f8") * 1e4).astype(dtype)
    for minexp in (-1075, -1074, -3):
        codec = ZfpCodec("expert", minbits=0, maxbits=maxbits, maxprec=64, minexp=minexp)
        data, y = _round_trip(codec, x)
        if minexp == -1075 and maxbits < 5:  # unbounded reversible blocks
            assert x.tobytes() == y.tobytes()
        else:
            assert len(data) <= -(-math.prod(-(-n // 4) for n in x.shape) * max(maxbits, 0) // 64) * 8 or \
                maxbits < 19


# -- modes --------------------------------------------------------------------------------

SPECIALS = [0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1e-310, 1e300, -1.5]


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("shape", [(), (1,), *SHAPES, (4, 1, 3, 1, 2, 1)])
def test_reversible_is_bit_exact_for_floats(dtype, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype) * 1e3
    flat = x.reshape(-1)
    with np.errstate(over="ignore"):
        specials = np.array(SPECIALS, dtype=dtype)
    flat[: min(flat.size, len(specials))] = specials[: flat.size]
    _, y = _round_trip(REVERSIBLE, x)
    assert x.tobytes() == y.tobytes()  # NaN, -0.0 and subnormals too


@pytest.mark.parametrize("dtype", ["i4", "i8", "u4", "u8", "i1", "u1", "i2", "u2"])
def test_reversible_is_exact_for_integers_over_their_range(dtype):
    info = np.iinfo(dtype)
    top = min(int(info.max), np.iinfo("i4" if np.dtype(dtype).itemsize <= 4 else "i8").max)
    x = np.random.default_rng(2).integers(info.min, top, (6, 7), endpoint=True).astype(dtype)
    x.flat[:2] = [info.min, top]
    _, y = _round_trip(REVERSIBLE, x)
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), *ML_FLOATS, *(t for t, _, _ in ML_INTS)], ids=str)
def test_reversible_is_exact_for_lower_precision_types(dtype):
    ints = {t: b for t, b, _ in ML_INTS}
    if dtype in ints:
        info = ml_dtypes.iinfo(dtype)
        x = np.arange(int(info.min), int(info.max) + 1).repeat(5)[:20].reshape(4, 5).astype(dtype)
    else:
        x = (np.random.default_rng(3).standard_normal((4, 5)) * 3).astype(dtype)
    _, y = _round_trip(REVERSIBLE, x)
    assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("tolerance", [0.5, 0.05, 1e-4])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("shape", SHAPES)
def test_fixed_accuracy_keeps_the_tolerance(tolerance, dtype, shape):
    x = np.random.default_rng(4).standard_normal(shape).astype(dtype) * 10
    _, y = _round_trip(ZfpCodec("fixed_accuracy", tolerance=tolerance), x)
    assert np.abs(x.astype("f8") - y.astype("f8")).max() <= tolerance


@pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes is not installed")
def test_fixed_accuracy_of_lower_precision_floats_keeps_it_up_to_their_rounding():
    x = (np.random.default_rng(5).standard_normal((8, 8)) * 10).astype(ml_dtypes.bfloat16)
    _, y = _round_trip(ZfpCodec("fixed_accuracy", tolerance=0.05), x)
    xf, yf = x.astype("f8"), y.astype("f8")
    ulp = np.abs(xf) * 2.0 ** -8 + 1e-30  # half a bfloat16 ulp of the value, generously
    assert (np.abs(xf - yf) <= 0.05 + ulp).all()


@pytest.mark.parametrize("dtype, least", [("f4", 9), ("f8", 12), ("i4", 0), ("i8", 0)])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("rate", [0.5, 4, 10.5])
def test_fixed_rate_writes_rate_bits_per_value_of_the_fields_dimensionality(dtype, least, shape, rate):
    x = _smooth(shape, dtype)
    data, _ = _round_trip(ZfpCodec("fixed_rate", rate=rate), x)
    d = len(shape)
    bits = max(math.floor(4 ** d * rate + 0.5), least)  # zfp_stream_set_rate(..., dims=d, align=0)
    blocks = math.prod(-(-n // 4) for n in shape)
    assert len(data) == -(-blocks * bits // 64) * 8


def test_fixed_rate_error_shrinks_as_the_rate_grows():
    x = _smooth((16, 16), "f8")
    errors = [np.abs(_round_trip(ZfpCodec("fixed_rate", rate=r), x)[1] - x).max() for r in (4, 8, 16, 32)]
    assert errors == sorted(errors, reverse=True) and errors[-1] < 1e-6 * 100 and errors[1] < 1


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_fixed_precision_bounds_the_relative_error(dtype):
    x = _smooth((8, 8, 8), dtype)
    sizes = []
    for precision in (8, 16, 24):
        data, y = _round_trip(ZfpCodec("fixed_precision", precision=precision), x)
        sizes.append(len(data))
        # `precision` bit planes below the block's largest exponent (e_max = 7: |x| < 128), spread
        # by the 3-d transform: |error| <= 2**(e_max + 2 * 3 + 1 - precision) (measured: 2**5.7)
        assert np.abs(x.astype("f8") - y.astype("f8")).max() <= 2.0 ** (7 + 7 - precision)
    assert sizes == sorted(sizes)


@pytest.mark.parametrize("shape", SHAPES)
def test_expert_mode_with_a_modes_parameters_writes_that_modes_stream(shape):
    x = _smooth(shape, "f8")
    spec = _spec(shape, "f8")
    # zfp docs, "Compression modes": each mode is expert mode with these parameters
    as_accuracy = ZfpCodec("expert", minbits=1, maxbits=16658, maxprec=64, minexp=math.floor(math.log2(0.01)))
    assert as_accuracy.encode(x, spec) == ZfpCodec("fixed_accuracy", tolerance=0.01).encode(x, spec)
    bits = 4 ** len(shape) * 6
    as_rate = ZfpCodec("expert", minbits=bits, maxbits=bits, maxprec=64, minexp=-1074)
    assert as_rate.encode(x, spec) == ZfpCodec("fixed_rate", rate=6).encode(x, spec)
    as_precision = ZfpCodec("expert", minbits=1, maxbits=16658, maxprec=17, minexp=-1074)
    assert as_precision.encode(x, spec) == ZfpCodec("fixed_precision", precision=17).encode(x, spec)


def test_the_readme_expert_example_round_trips_within_its_budget():
    codec = codec_from_json(EXAMPLES["expert"])
    x = _smooth((8, 8), "f4")
    data, y = _round_trip(codec, x)
    assert len(data) <= -(-4 * 13 // 64) * 8  # 4 blocks of at most 13 bits
    assert np.isfinite(y).all()


# -- the same stream as zfpy's -------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f4", "f8", "i4", "i8"])
@pytest.mark.parametrize("shape", SHAPES)
def test_streams_are_zfpys_headerless_streams(dtype, shape):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 100).astype(dtype) if dtype[0] == "f" else \
        rng.integers(-1000, 1000, shape).astype(dtype)
    spec = _spec(shape, dtype)
    modes = [("fixed_rate", {"rate": 10.5}), ("fixed_precision", {"precision": 19})]
    if dtype[0] == "f":
        modes.append(("fixed_accuracy", {"tolerance": 0.05}))
    for mode, kw in modes:
        ours = ZfpCodec(mode, **kw).encode(x, spec)
        assert ours == zfpy.compress_numpy(x, write_header=False, **kw), mode
        # zfpy decodes its own stream (with a header) to what the codec decodes
        np.testing.assert_array_equal(ZfpCodec(mode, **kw).decode(ours, spec),
                                      zfpy.decompress_numpy(zfpy.compress_numpy(x, **kw)))


# -- data types ------------------------------------------------------------------------------


def _promote(values, bits, signed):
    """The README's formulas, in Python integers."""
    return [v << (31 - bits) if signed else (v - (1 << (bits - 1))) << (31 - bits) for v in values]


def _demote(values, bits, signed):
    half = 1 << (bits - 1)
    if signed:
        return [min(max(v >> (31 - bits), -half), half - 1) for v in values]
    return [min(max((v >> (31 - bits)) + half, 0), (1 << bits) - 1) for v in values]


SMALL_INTS = [("i1", 8, True), ("u1", 8, False), ("i2", 16, True), ("u2", 16, False), *ML_INTS]


@pytest.mark.parametrize("dtype, bits, signed", SMALL_INTS, ids=str)
def test_small_integers_are_promoted_and_demoted_by_the_readme_formulas(dtype, bits, signed):
    dtype = np.dtype(dtype)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    values = list(range(lo, hi + 1))[:64]
    x = np.array(values).astype(dtype)
    spec = _spec(x.shape, dtype)
    promoted = np.array(_promote(values, bits, signed), dtype="i4")
    assert REVERSIBLE.encode(x, spec) == REVERSIBLE.encode(promoted, _spec(x.shape, "i4"))
    # demotion, with int32 values between and beyond the promoted ones
    stored = [-(1 << 31), (1 << 31) - 1, 0, -1, 1, 123456789, -987654321, 5 << 23]
    data = REVERSIBLE.encode(np.array(stored, dtype="i4"), _spec((8,), "i4"))
    got = REVERSIBLE.decode(data, _spec((8,), dtype))
    assert got.astype(int).tolist() == _demote(stored, bits, signed)


@pytest.mark.parametrize("dtype, signed_type", [("u4", "i4"), ("u8", "i8")])
def test_wide_unsigned_integers_are_their_signed_type_as_in_zarrs(dtype, signed_type):
    top = np.iinfo(signed_type).max
    x = np.array([0, 1, top], dtype=dtype)
    assert REVERSIBLE.encode(x, _spec((3,), dtype)) == REVERSIBLE.encode(x.astype(signed_type),
                                                                          _spec((3,), signed_type))
    with pytest.raises(CodecError, match=str(top)):  # never silently clamped
        REVERSIBLE.encode(np.array([top + 1], dtype=dtype), _spec((1,), dtype))
    negative = REVERSIBLE.encode(np.array([-5, 7], dtype=signed_type), _spec((2,), signed_type))
    assert REVERSIBLE.decode(negative, _spec((2,), dtype)).tolist() == [0, 7]  # clamped at 0


def test_non_native_byte_order_is_encoded_as_native():
    x = _smooth((5, 6), ">f8")
    assert REVERSIBLE.encode(x, _spec(x.shape, ">f8")) == REVERSIBLE.encode(x.astype("<f8"), _spec(x.shape, "<f8"))


# -- chunk shapes ----------------------------------------------------------------------------


def test_field_shapes():
    assert field_shape(()) == (1,)
    assert field_shape((3, 4)) == (3, 4)
    assert field_shape((1, 1, 3, 1)) == (1, 1, 3, 1)  # <= 4 dimensions: kept as they are
    assert field_shape((4, 1, 3, 1, 2, 1)) == (4, 3, 2)  # the README's example
    assert field_shape((1, 1, 1, 1, 1)) == (1,)
    with pytest.raises(CodecError, match="at most 4"):
        field_shape((2, 2, 2, 2, 2))


def test_zero_dimensional_chunk_is_one_value_in_1d():
    spec0 = _spec((), "f8")
    x = np.array(3.25)
    assert REVERSIBLE.encode(x, spec0) == REVERSIBLE.encode(x.reshape(1), _spec((1,), "f8"))
    assert REVERSIBLE.decode(REVERSIBLE.encode(x, spec0), spec0)[()] == 3.25


def test_six_dimensional_chunk_is_its_squeezed_field():
    x = _smooth((4, 1, 3, 1, 2, 1), "f4")
    codec = ZfpCodec("fixed_rate", rate=7)
    data, y = _round_trip(codec, x)
    assert data == codec.encode(x.reshape(4, 3, 2), _spec((4, 3, 2), "f4"))
    with pytest.raises(CodecError, match="at most 4"):
        REVERSIBLE.validate(_spec((2, 2, 2, 2, 2), "f4"))


def test_axes_map_to_nw_nz_ny_nx_in_c_order():
    x = _smooth((3, 9), "f4")
    a = ZfpCodec("fixed_rate", rate=8).encode(x, _spec((3, 9), "f4"))
    # zfp_field_2d(nx=9, ny=3): the same stream as zfpy's for the C-order array, not its transpose
    assert a == zfpy.compress_numpy(x, rate=8, write_header=False)
    assert a != ZfpCodec("fixed_rate", rate=8).encode(np.ascontiguousarray(x.T), _spec((9, 3), "f4"))


# -- hostile chunks ------------------------------------------------------------------------

F4 = _spec((16, 16), "f4")


def _valid(codec=REVERSIBLE, spec=F4):
    return codec.encode(_smooth(spec.shape, spec.dtype), spec)


@pytest.mark.parametrize("make", [
    lambda d: b"",
    lambda d: d[:8],
    lambda d: d[:-8],
    lambda d: d + bytes(8),
    lambda d: d * 2,
    lambda d: bytes(1 << 20),
])
def test_truncated_long_and_empty_streams_are_corrupt_chunks(make):
    with pytest.raises(CorruptChunkError, match="'c/1.2': codec 'zfp'"):
        REVERSIBLE.decode(make(_valid()), F4, "c/1.2")


def test_the_stream_length_is_checked_against_the_chunk_spec_before_decoding():
    rate = ZfpCodec("fixed_rate", rate=4)  # exactly 16 blocks * 64 bits: 128 bytes
    data = rate.encode(_smooth((16, 16), "f4"), F4)
    assert len(data) == 128
    with pytest.raises(CorruptChunkError, match="takes 128 to"):  # refused before decoding
        rate.decode(data[:120], F4, "c/0")
    with pytest.raises(CorruptChunkError, match="from 128 bytes of the stream, which holds 136"):
        rate.decode(data + bytes(8), F4, "c/0")


def test_a_stream_with_a_zfp_header_is_refused_and_said_so():
    x = _smooth((16, 16), "f4")
    with pytest.raises(CorruptChunkError, match="zfp header"):
        ZfpCodec("fixed_accuracy", tolerance=0.01).decode(zfpy.compress_numpy(x, tolerance=0.01), F4, "c/0")


def test_another_configuration_is_refused_not_misread():
    data = ZfpCodec("fixed_rate", rate=8).encode(_smooth((16, 16), "f4"), F4)
    for other in (ZfpCodec("fixed_rate", rate=16), ZfpCodec("fixed_rate", rate=4)):
        with pytest.raises(CorruptChunkError, match="c/0"):
            other.decode(data, F4, "c/0")
    # zarrs (to 0.24-dev) passes dims=3 to zfp_stream_set_rate for every field: its 2-d
    # fixed-rate chunks are 4**3 * rate bits per block — refused here
    zarrs_like = ZfpCodec("expert", minbits=64 * 8, maxbits=64 * 8, maxprec=64, minexp=-1074).encode(
        _smooth((16, 16), "f4"), F4)
    with pytest.raises(CorruptChunkError):
        ZfpCodec("fixed_rate", rate=8).decode(zarrs_like, F4, "c/0")


def test_random_bytes_never_crash_the_process():
    """Garbage, flipped bytes, cut and padded streams over every mode, type and
    dimensionality, in a child process (a crash would be a failure, not a hang)."""
    script = r"""
import numpy as np
from zarrdask.codecs.zfp import ZfpCodec
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.errors import CorruptChunkError
rng = np.random.default_rng(7)
codecs = [ZfpCodec("reversible"), ZfpCodec("fixed_accuracy", tolerance=1e-3), ZfpCodec("fixed_rate", rate=3.5),
          ZfpCodec("fixed_precision", precision=30), ZfpCodec("fixed_accuracy", tolerance=0),
          ZfpCodec("expert", minbits=12, maxbits=4000, maxprec=64, minexp=-1074),
          ZfpCodec("expert", minbits=0, maxbits=0, maxprec=64, minexp=-1075),
          ZfpCodec("expert", minbits=0, maxbits=3, maxprec=20, minexp=-1074)]
counts = [0, 0]
for i in range(1500):
    c = codecs[i % len(codecs)]
    shape = tuple(int(v) for v in rng.integers(1, 9, rng.integers(1, 5)))
    dt = "f4" if c.mode == "fixed_accuracy" else ["f4", "f8", "i4", "i8", "u1", "u4"][rng.integers(0, 6)]
    spec = ChunkSpec(shape, np.dtype(dt), 0)
    if i % 2:
        data = rng.integers(0, 256, rng.integers(0, 3000)).astype(np.uint8).tobytes()
    else:
        x = (rng.standard_normal(shape) * 10).astype(dt) if dt[0] == "f" else rng.integers(0, 100, shape).astype(dt)
        data = bytearray(c.encode(x, spec))
        for _ in range(rng.integers(1, 5)):
            data[rng.integers(0, len(data))] = rng.integers(0, 256)
        data = bytes(data[: rng.integers(0, len(data) + 1)] if rng.random() < 0.3 else data)
    try:
        y = c.decode(data, spec, "k")
        assert y.shape == shape and y.dtype == np.dtype(dt)
        counts[0] += 1
    except CorruptChunkError:
        counts[1] += 1
print(counts)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    decoded, corrupt = eval(r.stdout.strip().splitlines()[-1])
    assert decoded + corrupt == 1500 and corrupt > 500


def test_decoding_a_hostile_chunk_allocates_only_what_the_spec_allows():
    spec = _spec((256, 256), "f4")  # 256 KiB decoded
    hostile = np.random.default_rng(8).integers(0, 256, 8 << 20).astype(np.uint8).tobytes()  # 8 MiB
    shorter = hostile[: spec.nbytes]
    tracemalloc.start()
    try:
        for data in (hostile, shorter):
            tracemalloc.reset_peak()
            try:
                REVERSIBLE.decode(data, spec, "c/0")
            except CorruptChunkError:
                pass
            assert tracemalloc.get_traced_memory()[1] < 3 * spec.nbytes
    finally:
        tracemalloc.stop()


# -- zfpy missing -------------------------------------------------------------------------------


@pytest.fixture
def without_zfpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "zfpy", None)  # `import zfpy` raises ImportError
    monkeypatch.setattr(zfp_module, "_lib", None)


def test_without_zfpy_the_codec_is_a_typed_error_saying_what_to_install(without_zfpy):
    codec = codec_from_json(EXAMPLES["reversible"])  # configuration alone needs no zfpy
    with pytest.raises(MissingDependencyError, match="pip install zfpy") as info:
        codec.validate(_spec((4, 4), "f4"))
    assert isinstance(info.value, UnknownCodecError) and isinstance(info.value, CodecError)
    assert isinstance(info.value, MetadataError) and "zfpy" in str(info.value)
    with pytest.raises(MissingDependencyError, match="pip install zfpy"):
        codec.decode(b"\0" * 8, _spec((4,), "f4"), "c/0")


def test_without_zfpy_creating_and_opening_an_array_is_a_typed_error(tmp_path, monkeypatch):
    path = str(tmp_path / "a.zarr")
    a = zarrdask.create_array(path, shape=(13, 11), dtype="f8", chunks=(13, 11), serializer=EXAMPLES["reversible"],
                              compressors=None, fill_value=-3.5)
    a[...] = _smooth((13, 11))
    monkeypatch.setitem(sys.modules, "zfpy", None)
    monkeypatch.setattr(zfp_module, "_lib", None)
    with pytest.raises(MissingDependencyError, match="pip install zfpy"):
        zarrdask.open_array(path)[...]
    with pytest.raises(MissingDependencyError, match="pip install zfpy"):
        zarrdask.create_array(str(tmp_path / "b.zarr"), shape=(4,), dtype="f4", chunks=(4,),
                              serializer=EXAMPLES["reversible"], compressors=None)


# -- arrays ----------------------------------------------------------------------------------


def test_array_round_trip_with_edge_chunks_and_a_compressor(tmp_path):
    x = _smooth((30, 21), "f8")
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=x.shape, dtype="f8", chunks=(8, 8),
                              serializer=EXAMPLES["fixed_accuracy"], compressors=[{"name": "zstd"}])
    a[...] = x
    b = zarrdask.open_array(str(tmp_path / "a.zarr"))
    assert b.metadata.to_json()["codecs"][0] == EXAMPLES["fixed_accuracy"]
    y = b[...]
    assert np.abs(y - x).max() <= 0.05
    assert np.abs(b[3:17, 5:19] - x[3:17, 5:19]).max() <= 0.05


@pytest.mark.parametrize("dtype", ["i2", "u1", "f4", "i8"])
def test_array_reversible_is_exact(tmp_path, dtype):
    x = (_smooth((20, 20), "f8") * 3).astype(dtype)
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=x.shape, dtype=dtype, chunks=(6, 7),
                              serializer=EXAMPLES["reversible"], compressors=None)
    a[...] = x
    a[2:5, 3] = 9
    x[2:5, 3] = 9
    np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / "a.zarr"))[...], x)


def test_zfp_as_the_inner_codec_of_shards(tmp_path):
    x = _smooth((24, 40), "f4")
    path = str(tmp_path / "s.zarr")
    a = zarrdask.create_array(path, shape=x.shape, dtype="f4", chunks=(4, 8), shards=(12, 16),
                              serializer=EXAMPLES["reversible"], compressors=None, fill_value=0)
    a[...] = x
    b = zarrdask.open_array(path)
    codecs = b.metadata.to_json()["codecs"]
    assert codecs[0]["name"] == "sharding_indexed"
    assert codecs[0]["configuration"]["codecs"] == [EXAMPLES["reversible"]]
    np.testing.assert_array_equal(b[...], x)
    np.testing.assert_array_equal(b[5:9, 3:30], x[5:9, 3:30])
    b[0:4, 0:8] = 0  # an inner chunk of fill value
    x[0:4, 0:8] = 0
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], x)


def test_rechunk_keeps_the_codec(tmp_path):
    x = _smooth((30, 30), "f8")
    src = zarrdask.create_array(str(tmp_path / "src.zarr"), shape=x.shape, dtype="f8", chunks=(10, 30),
                                serializer=EXAMPLES["fixed_accuracy"], compressors=None)
    src[...] = x
    zarrdask.rechunk(src, (30, 7), str(tmp_path / "dst.zarr"), max_mem="16MB").execute()
    dst = zarrdask.open_array(str(tmp_path / "dst.zarr"))
    assert dst.chunks == (30, 7)
    assert dst.metadata.to_json()["codecs"][0] == EXAMPLES["fixed_accuracy"]
    # decoded once (<= 0.05 away), encoded again (<= 0.05 from what was read)
    assert np.abs(dst[...] - x).max() <= 0.1
    assert np.abs(dst[...] - src[...]).max() <= 0.05


def test_numcodecs_zfpy_arrays_keep_working(tmp_path):
    import numcodecs

    x = _smooth((12, 10), "f8")
    path = str(tmp_path / "z.zarr")
    a = zarrdask.create_array(path, shape=x.shape, dtype="f8", chunks=(6, 5),
                              serializer=numcodecs.ZFPY(mode=4, tolerance=0.01), compressors=None)
    a[...] = x
    b = zarrdask.open_array(path)
    assert b.metadata.to_json()["codecs"][0]["name"] == "numcodecs.zfpy"
    assert np.abs(b[...] - x).max() <= 0.01
    # the chunk holds a zfp header: the zfp codec, which stores none, refuses it
    raw = (tmp_path / "z.zarr" / "c" / "0" / "0").read_bytes()
    with pytest.raises(CorruptChunkError, match="zfp header"):
        ZfpCodec("fixed_accuracy", tolerance=0.01).decode(raw, _spec((6, 5), "f8"), "c/0/0")


def test_codecs_are_thread_safe():
    codec = ZfpCodec("fixed_precision", precision=20)
    arrays = [_smooth((32, 32), "f4") * (i + 1) for i in range(16)]
    expected = [codec.decode(codec.encode(a, _spec(a.shape, "f4")), _spec(a.shape, "f4")) for a in arrays]

    def work(i):
        spec = _spec(arrays[i].shape, "f4")
        return codec.decode(codec.encode(arrays[i], spec), spec)

    with ThreadPoolExecutor(8) as pool:
        for got, want in zip(pool.map(work, list(range(16)) * 4), expected * 4):
            np.testing.assert_array_equal(got, want)
