"""v2 data types and fill values (zarr-specs/v2-v2.0.rst "Data type encoding", "Fill value encoding")."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.errors import MetadataError, UnknownDataTypeError
from zarrdask.metadata import (
    decode_fill_value_v2,
    default_fill_value,
    dtype_to_v2,
    encode_fill_value_v2,
    normalize_fill_value,
    parse_dtype_v2,
)

KEY = "group/arr/.zarray"

SIMPLE = [
    "|b1", "|i1", "<i2", "<i4", "<i8", ">i2", ">i4", ">i8", "|u1", "<u2", "<u4", "<u8", ">u8",
    "<f2", "<f4", "<f8", ">f2", ">f4", ">f8", "<c8", "<c16", ">c8", ">c16",
    "<M8[ns]", "<M8[us]", "<M8[s]", "<M8[D]", "<M8[Y]", ">M8[ms]", "<m8[10s]", "<m8[ns]", ">m8[h]", "<M8", "<m8",
    "|S1", "|S12", "<U1", "<U7", ">U7", "|V1", "|V16", "|O",
]


@pytest.mark.parametrize("typestr", SIMPLE)
def test_typestr_round_trip(typestr):
    dt = parse_dtype_v2(typestr)
    assert dt == np.dtype(typestr)
    assert dtype_to_v2(dt) == typestr


def test_byte_order_is_kept():
    assert parse_dtype_v2(">i4").byteorder == ">"
    assert parse_dtype_v2(">U3") == np.dtype(">U3")
    assert parse_dtype_v2("<i1") == np.dtype("i1")  # single byte: order irrelevant
    assert dtype_to_v2(np.dtype("i4")) == "<i4"  # explicit order for native
    assert dtype_to_v2(np.dtype(">m8[10s]")) == ">m8[10s]"


def test_datetime_units():
    assert parse_dtype_v2("<M8[ns]") == np.dtype("datetime64[ns]")
    assert parse_dtype_v2("<m8[10s]") == np.dtype("timedelta64[10s]")
    assert np.datetime_data(parse_dtype_v2("<m8[10s]")) == ("s", 10)


SPEC_STRUCTS = [
    [["r", "|u1"], ["g", "|u1"], ["b", "|u1"]],
    [["x", "<f4"], ["y", "<f4"], ["z", "<f4", [2, 2]]],
    [["foo", "<f4"], ["bar", [["baz", "<f4"], ["qux", "<i4"]]]],
    [["a", ">i4"], ["b", "<M8[s]"], ["c", "|S3"], ["d", "<U2"], ["e", "|V3"], ["f", ">c16", [3]]],
]


@pytest.mark.parametrize("doc", SPEC_STRUCTS)
def test_structured_round_trip(doc):
    dt = parse_dtype_v2(doc)
    assert dt.names == tuple(f[0] for f in doc)
    assert dtype_to_v2(dt) == doc


def test_structured_spec_examples_meaning():
    dt = parse_dtype_v2(SPEC_STRUCTS[1])
    assert dt["z"].shape == (2, 2) and dt["z"].base == np.dtype("<f4")
    dt = parse_dtype_v2(SPEC_STRUCTS[2])
    assert dt["bar"].names == ("baz", "qux")
    assert dt.itemsize == 12


BAD_DTYPES = [
    ("i4", "dtype"), ("=i4", "dtype"), ("|i4", "dtype"), ("<i3", "dtype"), ("<f16", "dtype"), ("<c32", "dtype"),
    ("<M8[xx]", "dtype"), ("<i4[s]", "dtype"), ("|S0", "dtype"), ("|S", "dtype"), ("|U3", "dtype"),
    ("<b2", "dtype"), ("float64", "dtype"), ("", "dtype"), ("<O", "dtype"),
    (5, "dtype"), ({"a": 1}, "dtype"), (None, "dtype"), ([], "dtype"),
    ([["a"]], "dtype[0]"), ([["a", "<i4"], ["a", "<i4"]], "dtype[1][0]"), ([["", "<i4"]], "dtype[0][0]"),
    ([[1, "<i4"]], "dtype[0][0]"), ([["a", "<i4", [0]]], "dtype[0][2][0]"), ([["a", "<i4", 2]], "dtype[0][2]"),
    ([["a", "|O"]], "dtype[0][1]"), ([["a", "<i5"]], "dtype[0][1]"), ([["a", [["b", "x"]]]], "dtype[0][1][0][1]"),
    (["<i4"], "dtype[0]"),
]


@pytest.mark.parametrize(("doc", "field"), BAD_DTYPES)
def test_bad_dtype(doc, field):
    with pytest.raises(MetadataError) as ei:
        parse_dtype_v2(doc, key=KEY)
    msg = str(ei.value)
    assert KEY in msg and repr(field) in msg and "expected" in msg


def test_unknown_dtype_is_typed():
    with pytest.raises(UnknownDataTypeError):
        parse_dtype_v2("<q8", key=KEY)


@pytest.mark.parametrize("dtype", [
    np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4]}),  # padding
    np.dtype(("<i4", (2,))),  # subarray at top level
    np.dtype("<f16") if np.dtype("g").itemsize == 16 else np.dtype("<c32"),
])
def test_dtype_to_v2_unrepresentable(dtype):
    with pytest.raises(UnknownDataTypeError):
        dtype_to_v2(dtype)


def test_string_dtype_maps_to_object():
    assert dtype_to_v2(np.dtypes.StringDType()) == "|O"
    assert parse_dtype_v2("|O") == np.dtype(object)


# --------------------------------------------------------------------------- fill values

STRUCT = np.dtype([("a", "<i4"), ("b", "<f8")])
BE_STRUCT = np.dtype([("a", ">i4"), ("b", ">u2")])

DECODE = [
    (None, "<f8", None),
    (False, "|b1", np.False_),
    (True, "|b1", np.True_),
    (1, "|b1", np.True_),
    (42, "<i4", np.int32(42)),
    (-128, "|i1", np.int8(-128)),
    (2**64 - 1, "<u8", np.uint64(2**64 - 1)),
    (3.0, "<i4", np.int32(3)),  # integral float tolerated in v2
    (1.5, "<f8", np.float64(1.5)),
    (2, "<f4", np.float32(2)),
    ("Infinity", "<f8", np.float64(np.inf)),
    ("-Infinity", ">f4", np.float32(-np.inf)),
    ([1.0, -2.0], "<c16", np.complex128(1 - 2j)),
    ([0.0, 0.0], "<c8", np.complex64(0)),
    (["Infinity", "-Infinity"], "<c16", np.complex128(complex(np.inf, -np.inf))),
    (5, "<M8[s]", np.datetime64(5, "s")),
    (-9223372036854775808, "<M8[ns]", np.datetime64("NaT", "ns")),
    ("NaT", "<m8[10s]", np.timedelta64("NaT", "10s")),
    (7, "<m8[10s]", np.timedelta64(7, "10s")),
    ("YWI=", "|S3", np.bytes_(b"ab")),
    ("", "|S3", np.bytes_(b"")),
    (0, "|S3", np.bytes_(b"")),  # zarr-python 2 legacy
    ("ab", "<U3", np.str_("ab")),
    ("", ">U3", np.str_("")),
    ("AQI=", "|V2", np.void(b"\x01\x02")),
    (0, "|V2", np.void(b"\x00\x00")),
    ("", "|O", ""),
    (0, "|O", 0),
    ({"x": 1}, "|O", {"x": 1}),
]


@pytest.mark.parametrize(("doc", "dtype", "expected"), DECODE)
def test_decode_fill_value(doc, dtype, expected):
    got = decode_fill_value_v2(doc, np.dtype(dtype))
    if expected is None:
        assert got is None
        return
    assert type(got) is type(expected)
    if isinstance(got, np.generic):
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes() or got == expected
    else:
        assert got == expected


def test_decode_nan_is_canonical():
    for t, u, bits in (("<f2", "u2", 0x7E00), ("<f4", "u4", 0x7FC00000), ("<f8", "u8", 0x7FF8000000000000)):
        v = decode_fill_value_v2("NaN", np.dtype(t))
        assert np.isnan(v) and int(np.asarray(v).view(u)) == bits


def test_decode_complex_nan():
    v = decode_fill_value_v2(["NaN", 1.0], np.dtype("<c8"))
    assert np.isnan(v.real) and v.imag == 1.0


def test_structured_fill_values():
    value = np.array((7, 2.5), dtype=STRUCT)[()]
    enc = encode_fill_value_v2(value, STRUCT)
    assert isinstance(enc, str)
    dec = decode_fill_value_v2(enc, STRUCT)
    assert dec.dtype == STRUCT and dec["a"] == 7 and dec["b"] == 2.5
    assert decode_fill_value_v2(0, STRUCT).tobytes() == bytes(12)  # legacy 0
    # big-endian structured: base64 of the bytes in the stored byte order
    be = np.array((1, 2), dtype=BE_STRUCT)[()]
    enc = encode_fill_value_v2(be, BE_STRUCT)
    import base64

    assert base64.b64decode(enc) == b"\x00\x00\x00\x01\x00\x02"
    dec = decode_fill_value_v2(enc, BE_STRUCT)
    assert dec["a"] == 1 and dec["b"] == 2


def test_structured_fill_from_tuple_and_dict():
    assert encode_fill_value_v2((7, 2.5), STRUCT) == encode_fill_value_v2({"a": 7, "b": 2.5}, STRUCT)


ENCODE = [
    (np.nan, "<f8", "NaN"),
    (np.float32(np.nan), "<f4", "NaN"),
    (np.array(0x7FC00001, "u4").view("f4")[()], "<f4", "NaN"),  # v2 has no payload form
    (np.inf, "<f8", "Infinity"),
    (-np.inf, "<f2", "-Infinity"),
    (1.5, "<f4", 1.5),
    (0, "<f8", 0.0),
    (complex(np.nan, np.inf), "<c8", ["NaN", "Infinity"]),
    (1 + 2j, "<c16", [1.0, 2.0]),
    (True, "|b1", True),
    (np.uint64(2**64 - 1), "<u8", 2**64 - 1),
    (np.datetime64(5, "s"), "<M8[s]", 5),
    (np.datetime64("NaT", "ns"), "<M8[ns]", -(2**63)),
    (b"ab", "|S3", "YWI="),
    ("ab", "<U3", "ab"),
    (b"\x01\x02", "|V2", "AQI="),
    (None, "<i4", None),
    ("", "|O", ""),
    (b"", "|O", ""),
]


@pytest.mark.parametrize(("value", "dtype", "expected"), ENCODE)
def test_encode_fill_value(value, dtype, expected):
    got = encode_fill_value_v2(value, np.dtype(dtype))
    assert got == expected and type(got) is type(expected)
    json.dumps(got, allow_nan=False)


BAD_FILLS = [
    (300, "|u1"), (-1, "<u4"), (2**63, "<i8"), (1.5, "<i4"), (True, "<i4"), ("1", "<i4"),
    ("abc", "<f8"), ("nan", "<f8"), ("0x7fc00000", "<f4"), (True, "<f8"), ([1.0], "<c8"), ("x", "<c8"),
    ("x", "<M8[s]"), (1.5, "<M8[s]"), (2**63, "<m8[s]"),
    ("!!", "|S3"), ("YWJjZA==", "|S3"), (5, "|S3"), (3, "|b1"), ("true", "|b1"),
    ("abcd", "<U3"), (5, "<U3"), ("AQID", "|V2"), (1, "|V2"), ("AAAA", "[('a', '<i4'), ('b', '<f8')]"),
]


@pytest.mark.parametrize(("doc", "dtype"), BAD_FILLS)
def test_bad_fill_value(doc, dtype):
    dt = STRUCT if dtype.startswith("[") else np.dtype(dtype)
    with pytest.raises(MetadataError) as ei:
        decode_fill_value_v2(doc, dt, key=KEY)
    msg = str(ei.value)
    assert KEY in msg and "'fill_value'" in msg and "expected" in msg


def test_encode_validates_range():
    with pytest.raises(MetadataError, match="fill_value"):
        encode_fill_value_v2(300, np.dtype("u1"))
    with pytest.raises(MetadataError, match="fill_value"):
        normalize_fill_value(b"toolong", np.dtype("S3"))


@pytest.mark.parametrize(("dtype", "expected"), [
    ("|b1", np.False_), ("<i2", np.int16(0)), ("<u8", np.uint64(0)), ("<f4", np.float32(0)),
    ("<c16", np.complex128(0)), ("|S3", np.bytes_(b"")), ("<U3", np.str_("")),
])
def test_default_fill_value(dtype, expected):
    got = default_fill_value(np.dtype(dtype))
    assert type(got) is type(expected) and got == expected


def test_default_fill_value_special():
    assert np.isnat(default_fill_value(np.dtype("M8[ns]")))  # zarr-python 3.1.6 default
    assert default_fill_value(np.dtype("M8[ns]")).dtype == np.dtype("M8[ns]")
    assert np.isnat(default_fill_value(np.dtype("m8[10s]")))
    assert default_fill_value(np.dtype("V3")).tobytes() == bytes(3)
    v = default_fill_value(STRUCT)
    assert v.dtype == STRUCT and v.tobytes() == bytes(12)
    assert default_fill_value(np.dtype(object)) == b""
    assert default_fill_value(np.dtypes.StringDType()) == ""


# --------------------------------------------------------------------------- hypothesis


def _json_round(x):
    return json.loads(json.dumps(x, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["|i1", "<i2", ">i4", "<i8", "|u1", "<u2", "<u4", ">u8"]), st.data())
def test_int_round_trip(typestr, data):
    dt = np.dtype(typestr)
    info = np.iinfo(dt)
    v = data.draw(st.integers(int(info.min), int(info.max)))
    enc = _json_round(encode_fill_value_v2(v, dt))
    assert enc == v
    assert decode_fill_value_v2(enc, dt) == v


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([("<f2", "u2"), ("<f4", "u4"), (">f8", "u8")]), st.data())
def test_float_round_trip(types, data):
    t, u = types
    dt = np.dtype(t)
    bits = data.draw(st.integers(0, 2 ** (8 * dt.itemsize) - 1))
    x = np.array(bits, dtype=u).view(dt.newbyteorder("="))[()]
    dec = decode_fill_value_v2(_json_round(encode_fill_value_v2(x, dt)), dt)
    if np.isnan(x):
        assert np.isnan(dec)
    else:
        assert np.asarray(dec).view(u) == bits


@settings(max_examples=100, deadline=None)
@given(st.complex_numbers(allow_nan=False))
def test_complex_round_trip(z):
    dt = np.dtype("<c16")
    assert decode_fill_value_v2(_json_round(encode_fill_value_v2(z, dt)), dt) == z


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=0, max_size=8))
def test_bytes_round_trip(b):
    dt = np.dtype("S8")
    assert decode_fill_value_v2(encode_fill_value_v2(b, dt), dt) == b.rstrip(b"\x00")
    dv = np.dtype("V8")
    b8 = b.ljust(8, b"\x00")
    assert decode_fill_value_v2(encode_fill_value_v2(b8, dv), dv).tobytes() == b8
