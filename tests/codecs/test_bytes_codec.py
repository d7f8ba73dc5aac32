"""The ``bytes`` codec (zarr-specs v3 codecs/bytes)."""

from __future__ import annotations

import pickle
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.bytes_codec import BytesCodec, has_endianness
from zarrdask.errors import CodecError, CorruptChunkError

from ._helpers import spec_of

NATIVE = sys.byteorder
OTHER = "big" if NATIVE == "little" else "little"

STRUCT = np.dtype([("a", "<i4"), ("b", "u1"), ("c", "<f8", (2,))])
DTYPES = [
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
    "M8[s]", "m8[ns]", "U3", "S3", "V4", STRUCT,
]  # fmt: skip


def sample(dtype, shape=(3, 4)) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "U":
        return np.array(["", "a", "ab", "abc", "xÿ€", "😀"] * n, dtype=dtype)[:n].reshape(shape)
    if dtype.kind == "b":
        return (raw[:n] % 2).astype(bool).reshape(shape)
    if dtype.kind in "fc":
        return (rng.standard_normal(n) * 100).astype(dtype).reshape(shape)
    return raw.view(dtype).reshape(shape).copy()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_round_trip(dtype, endian):
    data = sample(dtype)
    codec = BytesCodec(endian)
    spec = spec_of(data)
    codec.validate(spec)
    encoded = codec.encode(data, spec)
    assert len(encoded) == codec.encoded_size(spec) == data.nbytes
    decoded = codec.decode(encoded, spec, "c/0/0")
    assert decoded.shape == data.shape
    assert decoded.dtype == data.dtype
    assert decoded.dtype.isnative or not has_endianness(decoded.dtype)
    np.testing.assert_array_equal(decoded, data)


@pytest.mark.parametrize("dtype", ["int16", "int32", "float64", "complex64", "M8[ms]", "U2", STRUCT], ids=str)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_encoded_bytes_are_the_requested_byte_order(dtype, endian):
    data = sample(dtype, (2, 3))
    order = "<" if endian == "little" else ">"
    expected = np.ascontiguousarray(data, dtype=np.dtype(dtype).newbyteorder(order)).tobytes()
    assert bytes(BytesCodec(endian).encode(data, spec_of(data))) == expected


def test_spec_examples_int32_and_complex128_big_endian():
    # "the int32 data type is encoded as a 4-byte big endian two's complement integer"
    data = np.array([1, -2], dtype="int32")
    assert bytes(BytesCodec("big").encode(data, spec_of(data))) == b"\x00\x00\x00\x01\xff\xff\xff\xfe"
    # "complex128 ... two consecutive 8-byte big endian IEEE 754 binary64 values"
    z = np.array([1 + 2j])
    assert bytes(BytesCodec("big").encode(z, spec_of(z))) == bytes.fromhex("3ff0000000000000" "4000000000000000")
    # bool: "false encoded as \x00 and true encoded as \x01"
    b = np.array([False, True])
    assert bytes(BytesCodec(None).encode(b, spec_of(b))) == b"\x00\x01"


def test_utf32_code_units_follow_endian():
    data = np.array(["ab"], dtype="U2")
    assert bytes(BytesCodec("little").encode(data, spec_of(data))) == b"a\0\0\0b\0\0\0"
    assert bytes(BytesCodec("big").encode(data, spec_of(data))) == b"\0\0\0a\0\0\0b"


def test_c_order_of_non_contiguous_input():
    data = np.arange(12, dtype="<i4").reshape(3, 4)
    f = np.asfortranarray(data)
    assert bytes(BytesCodec("little").encode(f, spec_of(data))) == data.tobytes()
    t = data.T  # a view
    assert bytes(BytesCodec("little").encode(t, spec_of(t))) == np.ascontiguousarray(t).tobytes()


def test_decode_is_zero_copy_for_native_order():
    data = np.arange(12, dtype="int32").reshape(3, 4)
    raw = bytearray(data.tobytes())
    decoded = BytesCodec(NATIVE).decode(memoryview(raw), spec_of(data))
    assert np.shares_memory(decoded, np.frombuffer(raw, dtype=np.uint8))
    np.testing.assert_array_equal(decoded, data)


def test_decode_swaps_other_order_to_native():
    data = np.arange(6, dtype="float64")
    raw = data.astype(data.dtype.newbyteorder("S")).tobytes()
    decoded = BytesCodec(OTHER).decode(raw, spec_of(data))
    assert decoded.dtype.isnative
    np.testing.assert_array_equal(decoded, data)


def test_encode_is_zero_copy_for_native_contiguous_input():
    data = np.arange(6, dtype="int64")
    encoded = BytesCodec(NATIVE).encode(data, spec_of(data))
    assert np.shares_memory(np.frombuffer(encoded, dtype=np.uint8), data)


def test_size_mismatch_is_a_corrupt_chunk_naming_key_and_sizes():
    spec = ChunkSpec((3, 4), np.dtype("int32"), 0)
    with pytest.raises(CorruptChunkError) as e:
        BytesCodec().decode(b"\0" * 47, spec, "arr/c/1/2")
    msg = str(e.value)
    assert "arr/c/1/2" in msg and "48" in msg and "47" in msg


def test_zero_size_and_zero_dimensional_chunks():
    codec = BytesCodec()
    empty = np.zeros((0, 5), dtype="float32")
    assert bytes(codec.encode(empty, spec_of(empty))) == b""
    assert codec.decode(b"", spec_of(empty)).shape == (0, 5)
    scalar = np.array(7, dtype="int16")
    enc = codec.encode(scalar, spec_of(scalar))
    assert bytes(enc) == b"\x07\x00"
    assert codec.decode(enc, spec_of(scalar)).shape == ()


@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool", "S5", "V3"])
def test_endian_may_be_omitted_for_single_byte_types(dtype):
    data = sample(dtype, (4,))
    codec = BytesCodec.from_config({})
    assert codec.endian is None and codec.to_json() == {"name": "bytes"}
    codec.validate(spec_of(data))
    np.testing.assert_array_equal(codec.decode(codec.encode(data, spec_of(data)), spec_of(data)), data)


@pytest.mark.parametrize("dtype", ["int16", "float64", "U1", "M8[s]"])
def test_endian_required_for_multi_byte_types(dtype):
    spec = ChunkSpec((2,), np.dtype(dtype), 0)
    codec = BytesCodec(endian=None)
    with pytest.raises(CodecError, match="endian"):
        codec.validate(spec)
    with pytest.raises(CodecError, match="endian"):
        codec.encode(np.zeros(2, dtype), spec)
    with pytest.raises(CodecError, match="endian"):
        codec.complete(spec)


def test_structured_without_endian_reads_little_endian_and_warns():
    data = sample(STRUCT, (3,))
    codec = BytesCodec(endian=None)
    with pytest.warns(UserWarning, match="little-endian"):
        codec.validate(spec_of(data))
    raw = np.ascontiguousarray(data, dtype=STRUCT.newbyteorder("<")).tobytes()
    np.testing.assert_array_equal(codec.decode(raw, spec_of(data)), data)


def test_object_dtype_is_rejected():
    with pytest.raises(CodecError, match="vlen"):
        BytesCodec().validate(ChunkSpec((2,), np.dtype(object), None))


def test_wrong_shape_or_dtype_is_rejected_on_encode():
    spec = ChunkSpec((2, 2), np.dtype("int32"), 0)
    with pytest.raises(CodecError, match="shape"):
        BytesCodec().encode(np.zeros((4,), "int32"), spec)
    with pytest.raises(CodecError, match="data type"):
        BytesCodec().encode(np.zeros((2, 2), "int64"), spec)


def test_json():
    assert BytesCodec().to_json() == {"name": "bytes", "configuration": {"endian": "little"}}
    assert BytesCodec("big").to_json() == {"name": "bytes", "configuration": {"endian": "big"}}
    assert BytesCodec.from_config({"endian": "big"}) == BytesCodec("big")
    assert BytesCodec.from_config(None).endian is None
    with pytest.raises(CodecError, match="middle"):
        BytesCodec.from_config({"endian": "middle"})
    with pytest.raises(CodecError, match="unknown"):
        BytesCodec.from_config({"endian": "little", "order": "C"})


def test_evolve_drops_endian_for_single_byte_types():
    assert BytesCodec("little").complete(ChunkSpec((2,), np.dtype("uint8"), 0)).to_json() == {"name": "bytes"}
    codec = BytesCodec("big")
    assert codec.complete(ChunkSpec((2,), np.dtype("int32"), 0)) is codec


class TestRawTarget:
    spec = ChunkSpec((3, 4), np.dtype("float64"), 0)

    def test_native_contiguous_output_is_exposed(self):
        out = np.zeros((3, 4), "float64")
        target = BytesCodec(NATIVE).raw_target(out, self.spec)
        assert target is not None and target.format == "B" and target.nbytes == out.nbytes
        data = np.arange(12, dtype="float64").reshape(3, 4)
        target[:] = BytesCodec(NATIVE).encode(data, self.spec)
        np.testing.assert_array_equal(out, data)

    def test_single_byte_types_ignore_endian(self):
        spec = ChunkSpec((5,), np.dtype("uint8"), 0)
        assert BytesCodec(OTHER).raw_target(np.zeros(5, "uint8"), spec) is not None

    @pytest.mark.parametrize(
        "out",
        [
            np.zeros((4, 3), "float64").T,  # not C-contiguous
            np.zeros((3, 4), "float32"),  # other dtype
            np.zeros((4, 3), "float64"),  # other shape
            np.zeros((3, 4, 2), "float64")[..., 0],  # strided
        ],
    )
    def test_unsuitable_outputs(self, out):
        assert BytesCodec(NATIVE).raw_target(out, self.spec) is None

    def test_other_byte_order_or_read_only(self):
        out = np.zeros((3, 4), "float64")
        assert BytesCodec(OTHER).raw_target(out, self.spec) is None
        out.flags.writeable = False
        assert BytesCodec(NATIVE).raw_target(out, self.spec) is None

    def test_missing_endian(self):
        assert BytesCodec(None).raw_target(np.zeros((3, 4)), self.spec) is None

    def test_one_codec_answers_for_each_data_type_on_its_own(self):
        # the answer is remembered per data type: asking for one never changes another's
        codec = BytesCodec(NATIVE)
        for _ in range(2):
            assert codec.raw_target(np.zeros((3, 4)), self.spec) is not None
            other = np.zeros((3, 4), np.dtype("float64").newbyteorder())
            assert codec.raw_target(other, ChunkSpec((3, 4), other.dtype, 0)) is None
            assert codec.raw_target(np.zeros((3, 4), "u1"), ChunkSpec((3, 4), np.dtype("u1"), 0)) is not None
            packed = np.zeros((3, 4), ml_dtypes.float4_e2m1fn)  # unused upper bits: cleared on decode
            assert codec.raw_target(packed, ChunkSpec((3, 4), packed.dtype, 0)) is None


def test_pickle_and_equality():
    codec = BytesCodec("big")
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert codec != BytesCodec("little")
    assert hash(codec) == hash(BytesCodec("big"))


_dtypes = st.one_of(
    hnp.integer_dtypes(endianness="="),
    hnp.unsigned_integer_dtypes(endianness="="),
    hnp.floating_dtypes(endianness="="),
    hnp.complex_number_dtypes(endianness="="),
    hnp.datetime64_dtypes(endianness="="),
    hnp.unicode_string_dtypes(endianness="=", max_len=4),
    hnp.byte_string_dtypes(max_len=4),
    st.just(np.dtype(bool)),
)


@settings(max_examples=60, deadline=None)
@given(
    data=_dtypes.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))),
    endian=st.sampled_from(["little", "big"]),
)
def test_round_trip_property(data, endian):
    spec = spec_of(data)
    codec = BytesCodec(endian)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decoded = codec.decode(codec.encode(data, spec), spec)
    assert decoded.dtype == data.dtype and decoded.shape == data.shape
    assert decoded.tobytes() == data.tobytes()  # bitwise, so NaNs compare equal
