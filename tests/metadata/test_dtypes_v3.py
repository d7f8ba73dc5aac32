"""v3 data types and fill values (v3-core.rst, v3-data-types.rst, zarr-extensions/data-types-*.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.errors import MetadataError, UnknownDataTypeError
from zarrdask.metadata import (
    data_type_to_v3,
    decode_fill_value_v3,
    encode_fill_value_v3,
    parse_data_type_v3,
)

KEY = "a/b/zarr.json"

CORE = {
    "bool": "?", "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
    "float16": "f2", "float32": "f4", "float64": "f8", "complex64": "c8", "complex128": "c16",
}


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_both_ways(name):
    dt = parse_data_type_v3(name)
    assert dt == np.dtype(CORE[name]) and dt.isnative
    assert data_type_to_v3(dt) == name
    assert data_type_to_v3(dt.newbyteorder()) == name  # byte order belongs to the bytes codec
    assert parse_data_type_v3({"name": name}) == dt  # extension object without configuration


@pytest.mark.parametrize(("name", "size"), [("r8", 1), ("r16", 2), ("r24", 3), ("r128", 16)])
def test_raw_bits(name, size):
    assert parse_data_type_v3(name) == np.dtype(f"V{size}")


def test_raw_bytes_and_null_terminated_bytes():
    # zarr-python 3.1 names for numpy V<n> and S<n>
    rb = {"name": "raw_bytes", "configuration": {"length_bytes": 4}}
    nt = {"name": "null_terminated_bytes", "configuration": {"length_bytes": 5}}
    assert parse_data_type_v3(rb) == np.dtype("V4")
    assert parse_data_type_v3(nt) == np.dtype("S5")
    assert data_type_to_v3(np.dtype("V4")) == rb
    assert data_type_to_v3(np.dtype("S5")) == nt


@pytest.mark.parametrize(("name", "code"), [("numpy.datetime64", "M8"), ("numpy.timedelta64", "m8")])
@pytest.mark.parametrize(("unit", "scale", "suffix"), [
    ("ns", 1, "[ns]"), ("us", 10, "[10us]"), ("s", 1, "[s]"), ("D", 1, "[D]"), ("Y", 1, "[Y]"),
    ("as", 1, "[as]"), ("generic", 1, ""),
])
def test_time_types(name, code, unit, scale, suffix):
    doc = {"name": name, "configuration": {"unit": unit, "scale_factor": scale}}
    dt = parse_data_type_v3(doc)
    assert dt == np.dtype(code + suffix)
    assert data_type_to_v3(dt) == doc


def test_time_extension_examples():
    # data-types-numpy.timedelta64.md: equivalent to timedelta64[10us]
    doc = {"name": "numpy.timedelta64", "configuration": {"unit": "us", "scale_factor": 10}}
    assert parse_data_type_v3(doc) == np.dtype("m8[10us]")
    doc = {"name": "numpy.datetime64", "configuration": {"unit": "μs", "scale_factor": 1}}
    assert parse_data_type_v3(doc) == np.dtype("M8[us]")


def test_fixed_length_utf32():
    doc = {"name": "fixed_length_utf32", "configuration": {"length_bytes": 48}}
    assert parse_data_type_v3(doc) == np.dtype("U12")
    assert data_type_to_v3(np.dtype("<U12")) == doc
    assert data_type_to_v3(np.dtype(">U12")) == doc


def test_variable_length():
    assert parse_data_type_v3("string") == np.dtypes.StringDType()
    assert parse_data_type_v3("bytes") == np.dtype(object)
    assert parse_data_type_v3("variable_length_bytes") == np.dtype(object)
    assert data_type_to_v3(np.dtypes.StringDType()) == "string"
    assert data_type_to_v3(np.dtype(object)) == "variable_length_bytes"


STRUCT_XY = {"name": "struct", "configuration": {"fields": [
    {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}
STRUCT_TS = {"name": "struct", "configuration": {"fields": [
    {"name": "timestamp", "data_type": {"name": "numpy.datetime64",
                                        "configuration": {"unit": "s", "scale_factor": 1}}},
    {"name": "value", "data_type": "float32"}]}}
STRUCT_NESTED = {"name": "struct", "configuration": {"fields": [
    {"name": "point", "data_type": STRUCT_XY}, {"name": "value", "data_type": "float64"}]}}
STRUCT_BYTES = {"name": "struct", "configuration": {"fields": [
    {"name": "id", "data_type": "int32"}, {"name": "flags", "data_type": "uint8"},
    {"name": "value", "data_type": "float64"}]}}


def test_struct_extension_examples():
    assert parse_data_type_v3(STRUCT_XY) == np.dtype([("x", "f4"), ("y", "f4")])
    assert parse_data_type_v3(STRUCT_TS) == np.dtype([("timestamp", "M8[s]"), ("value", "f4")])
    nested = parse_data_type_v3(STRUCT_NESTED)
    assert nested == np.dtype([("point", [("x", "f4"), ("y", "f4")]), ("value", "f8")])
    assert nested.itemsize == 16 and nested.fields["value"][1] == 8
    packed = parse_data_type_v3(STRUCT_BYTES)  # 4 + 1 + 8 bytes, offsets 0, 4, 5: no padding
    assert packed.itemsize == 13 and [packed.fields[n][1] for n in packed.names] == [0, 4, 5]
    for doc in (STRUCT_XY, STRUCT_TS, STRUCT_NESTED, STRUCT_BYTES):
        assert data_type_to_v3(parse_data_type_v3(doc), struct_name="struct") == doc


def test_struct_field_without_configuration():
    doc = {"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": {"name": "float64"}}]}}
    assert parse_data_type_v3(doc) == np.dtype([("a", "f8")])


def test_structured_legacy_form():
    doc = {"name": "structured", "configuration": {"fields": [["x", "float32"], ["y", "float32"]]}}
    assert parse_data_type_v3(doc) == np.dtype([("x", "f4"), ("y", "f4")])
    # zarr-python 3.1.6 writes (and only reads) this form; it is our default output
    dt = np.dtype([("a", ">i4"), ("b", [("c", "u1"), ("d", "S2")])])
    assert data_type_to_v3(dt) == {"name": "structured", "configuration": {"fields": [
        ["a", "int32"],
        ["b", {"name": "structured", "configuration": {"fields": [
            ["c", "uint8"], ["d", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 2}}]]}}]]}}
    assert parse_data_type_v3(data_type_to_v3(dt)) == dt.newbyteorder("=")


def test_struct_name_option():
    with pytest.raises(ValueError):
        data_type_to_v3(np.dtype([("a", "i4")]), struct_name="record")


@pytest.mark.parametrize("dtype", [
    np.dtype([("a", "<i4"), ("b", "<f4", (2,))]),  # subarray field: no v3 form
    np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4]}),  # padding
    np.dtype(("<i4", (2,))),
    np.dtype("<f16") if np.dtype("g").itemsize == 16 else np.dtype("<c32"),
])
def test_data_type_to_v3_unrepresentable(dtype):
    with pytest.raises(UnknownDataTypeError):
        data_type_to_v3(dtype)


BAD = [
    ("float128", "data_type", UnknownDataTypeError),
    ("urn:example:datetime", "data_type", UnknownDataTypeError),
    ({"name": "urn:example:datetime", "configuration": {"unit": "ns"}}, "data_type", UnknownDataTypeError),
    ("r0", "data_type", UnknownDataTypeError),
    ("r12", "data_type", UnknownDataTypeError),
    ("<f8", "data_type", UnknownDataTypeError),
    (5, "data_type", MetadataError),
    (None, "data_type", MetadataError),
    ({"configuration": {}}, "data_type.name", MetadataError),
    ({"name": "int32", "configuration": {"x": 1}}, "data_type.configuration", MetadataError),
    ({"name": "int32", "must_understand": False}, "data_type.must_understand", MetadataError),
    ({"name": "int32", "foo": 1}, "data_type", MetadataError),
    ({"name": "numpy.datetime64"}, "data_type.configuration", MetadataError),
    ({"name": "numpy.datetime64", "configuration": {"unit": "ns"}}, "data_type.configuration.scale_factor",
     MetadataError),
    ({"name": "numpy.datetime64", "configuration": {"unit": "xs", "scale_factor": 1}},
     "data_type.configuration.unit", MetadataError),
    ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 0}},
     "data_type.configuration.scale_factor", MetadataError),
    ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 2**31}},
     "data_type.configuration.scale_factor", MetadataError),
    ({"name": "numpy.datetime64", "configuration": {"unit": "generic", "scale_factor": 2}},
     "data_type.configuration.scale_factor", MetadataError),
    ({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 1, "x": 1}},
     "data_type.configuration", MetadataError),
    ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 5}},
     "data_type.configuration.length_bytes", MetadataError),
    ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 0}},
     "data_type.configuration.length_bytes", MetadataError),
    ({"name": "raw_bytes", "configuration": {"length_bytes": "4"}},
     "data_type.configuration.length_bytes", MetadataError),
    ({"name": "struct", "configuration": {"fields": []}}, "data_type.configuration.fields", MetadataError),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8"},
                                                      {"name": "a", "data_type": "int8"}]}},
     "data_type.configuration.fields[1]", MetadataError),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "string"}]}},
     "data_type.configuration.fields[0].data_type", MetadataError),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "nope"}]}},
     "data_type.configuration.fields[0].data_type", UnknownDataTypeError),
    ({"name": "struct", "configuration": {"fields": [{"name": "", "data_type": "int8"}]}},
     "data_type.configuration.fields[0]", MetadataError),
    ({"name": "struct", "configuration": {"fields": [["a", "int8", [2]]]}},
     "data_type.configuration.fields[0]", MetadataError),
]


@pytest.mark.parametrize(("doc", "field", "cls"), BAD)
def test_bad_data_type(doc, field, cls):
    with pytest.raises(cls) as ei:
        parse_data_type_v3(doc, key=KEY)
    msg = str(ei.value)
    assert KEY in msg and repr(field) in msg and "expected" in msg


def test_unknown_names_the_value():
    with pytest.raises(UnknownDataTypeError, match="urn:example:datetime"):
        parse_data_type_v3("urn:example:datetime", key=KEY)


# --------------------------------------------------------------------------- fill values


def bits(x, u):
    return int(np.asarray(x).view(u))


@pytest.mark.parametrize(("hex_", "dtype", "u"), [
    ("0x7fc00001", "float32", "u4"),
    ("0x7ff8000000000001", "float64", "u8"),
    ("0xfff8000000000000", "float64", "u8"),  # negative NaN
    ("0x7e01", "float16", "u2"),
    ("0x7f800001", "float32", "u4"),  # signalling NaN
])
def test_hex_nan_payload_round_trip_exact(hex_, dtype, u):
    dt = np.dtype(dtype)
    v = decode_fill_value_v3(hex_, dt)
    assert np.isnan(v) and bits(v, u) == int(hex_, 16)
    assert encode_fill_value_v3(v, dt) == hex_


@pytest.mark.parametrize(("hex_", "dtype", "expected"), [
    ("0x7fc00000", "float32", "NaN"),  # v3-data-types.rst: "NaN" is equivalent to 0x7fc00000
    ("0x3f800000", "float32", 1.0),
    ("0x3FF0000000000000", "float64", 1.0),
    ("0x7ff0000000000000", "float64", "Infinity"),
    ("0x3c00", "float16", 1.0),
])
def test_hex_non_payload(hex_, dtype, expected):
    dt = np.dtype(dtype)
    assert encode_fill_value_v3(decode_fill_value_v3(hex_, dt), dt) == expected


def test_nan_forms():
    for dtype, u, b in (("float16", "u2", 0x7E00), ("float32", "u4", 0x7FC00000),
                        ("float64", "u8", 0x7FF8000000000000)):
        v = decode_fill_value_v3("NaN", np.dtype(dtype))
        assert bits(v, u) == b
        assert encode_fill_value_v3(v, np.dtype(dtype)) == "NaN"
        assert encode_fill_value_v3(np.nan, np.dtype(dtype)) == "NaN"


DECODE = [
    (True, "bool", np.True_),
    (0, "uint8", np.uint8(0)),
    (255, "uint8", np.uint8(255)),
    (-(2**63), "int64", np.int64(-(2**63))),
    (2**64 - 1, "uint64", np.uint64(2**64 - 1)),
    (1.5, "float32", np.float32(1.5)),
    (3, "float64", np.float64(3)),
    ("Infinity", "float64", np.float64(np.inf)),
    ("-Infinity", "float16", np.float16(-np.inf)),
    (0.1, "float16", np.float16(0.1)),  # rounded to nearest
    ([1, 2], "complex64", np.complex64(1 + 2j)),
    (["-Infinity", 0.5], "complex128", np.complex128(complex(-np.inf, 0.5))),
    (["0x3f800000", "0x40000000"], "complex64", np.complex64(1 + 2j)),
    ([1, 2], "r16", np.void(b"\x01\x02")),
    ("AQI=", "r16", np.void(b"\x01\x02")),
    ("", "string", ""),
    ("foo", "string", "foo"),
    ([1, 2, 3], "bytes", b"\x01\x02\x03"),  # data-types-bytes.md examples
    ("AQID", "bytes", b"\x01\x02\x03"),
    ("AQID", "variable_length_bytes", b"\x01\x02\x03"),
]


@pytest.mark.parametrize(("doc", "data_type", "expected"), DECODE)
def test_decode(doc, data_type, expected):
    dt = parse_data_type_v3(data_type)
    got = decode_fill_value_v3(doc, dt, data_type=data_type)
    assert type(got) is type(expected)
    if isinstance(got, np.generic):
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()
    else:
        assert got == expected


def test_complex_nan_parts():
    v = decode_fill_value_v3(["NaN", "0x7fc00001"], np.dtype("complex64"))
    assert bits(v.real, "u4") == 0x7FC00000 and bits(v.imag, "u4") == 0x7FC00001
    assert encode_fill_value_v3(v, np.dtype("complex64")) == ["NaN", "0x7fc00001"]
    assert encode_fill_value_v3(complex(np.inf, -np.inf), np.dtype("complex128")) == ["Infinity", "-Infinity"]


def test_datetime_fill():
    for name in ("numpy.datetime64", "numpy.timedelta64"):
        dtj = {"name": name, "configuration": {"unit": "s", "scale_factor": 10}}
        dt = parse_data_type_v3(dtj)
        assert np.isnat(decode_fill_value_v3("NaT", dt, data_type=dtj))
        assert np.isnat(decode_fill_value_v3(-(2**63), dt, data_type=dtj))  # equivalent forms
        v = decode_fill_value_v3(5, dt, data_type=dtj)
        assert v.dtype == dt and int(np.asarray(v).view("i8")) == 5
        assert encode_fill_value_v3(v, dt) == 5
        assert encode_fill_value_v3(decode_fill_value_v3("NaT", dt), dt) == -(2**63)  # as zarr-python


def test_fixed_length_utf32_fill():
    dtj = {"name": "fixed_length_utf32", "configuration": {"length_bytes": 48}}
    dt = parse_data_type_v3(dtj)
    assert decode_fill_value_v3("foo", dt) == np.str_("foo")
    assert encode_fill_value_v3("foo", dt) == "foo"
    assert decode_fill_value_v3("x" * 12, dt) == "x" * 12
    with pytest.raises(MetadataError, match="at most 12"):
        decode_fill_value_v3("x" * 13, dt, key=KEY)


def test_raw_fill_forms_follow_data_type_json():
    v = np.void(b"\x01\x02")
    dt = np.dtype("V2")
    assert encode_fill_value_v3(v, dt, data_type="r16") == [1, 2]
    assert encode_fill_value_v3(v, dt) == "AQI="  # raw_bytes, as zarr-python
    assert encode_fill_value_v3(b"ab", np.dtype("S3")) == "YWI="


def test_struct_fill_object_form():
    dt = parse_data_type_v3(STRUCT_XY)
    v = decode_fill_value_v3({"x": 1.23, "y": 4.56}, dt, data_type=STRUCT_XY)
    assert v.dtype == dt and v["x"] == np.float32(1.23) and v["y"] == np.float32(4.56)
    assert encode_fill_value_v3(v, dt, data_type=STRUCT_XY) == {"x": float(np.float32(1.23)),
                                                                "y": float(np.float32(4.56))}
    dt = parse_data_type_v3(STRUCT_NESTED)
    doc = {"point": {"x": 1.0, "y": 2.0}, "value": 3.14}
    v = decode_fill_value_v3(doc, dt, data_type=STRUCT_NESTED)
    assert v["point"]["y"] == 2.0 and v["value"] == 3.14
    assert encode_fill_value_v3(v, dt, data_type=STRUCT_NESTED) == doc
    dt = parse_data_type_v3(STRUCT_TS)
    doc = {"timestamp": "NaT", "value": "NaN"}
    v = decode_fill_value_v3(doc, dt, data_type=STRUCT_TS)
    assert np.isnat(v["timestamp"]) and np.isnan(v["value"])
    assert encode_fill_value_v3(v, dt, data_type=STRUCT_TS) == {"timestamp": -(2**63), "value": "NaN"}


def test_structured_fill_base64_little_endian():
    dtj = {"name": "structured", "configuration": {"fields": [["a", "int32"], ["b", "uint16"]]}}
    dt = parse_data_type_v3(dtj)
    v = decode_fill_value_v3("AQAAAAIA", dt, data_type=dtj)  # 01 00 00 00 | 02 00
    assert v["a"] == 1 and v["b"] == 2
    assert encode_fill_value_v3(v, dt, data_type=dtj) == "AQAAAAIA"
    assert encode_fill_value_v3((1, 2), dt) == "AQAAAAIA"  # default form is "structured"
    # a big-endian numpy dtype gives the same packed little-endian bytes
    be = np.dtype([("a", ">i4"), ("b", ">u2")])
    assert encode_fill_value_v3(np.array((1, 2), be)[()], be) == "AQAAAAIA"


BAD_FILLS = [
    (None, "float64", "fill_value"),
    (1, "bool", "fill_value"),
    ("true", "bool", "fill_value"),
    (300, "uint8", "fill_value"),
    (-1, "uint8", "fill_value"),
    (2**63, "int64", "fill_value"),
    (1.0, "int32", "fill_value"),  # "no fraction or exponent part"
    (True, "int32", "fill_value"),
    ("nan", "float32", "fill_value"),
    ("0x7fc0", "float32", "fill_value"),  # wrong digit count
    ("0x7fc0000000", "float32", "fill_value"),
    ("0xzzzzzzzz", "float32", "fill_value"),
    (True, "float64", "fill_value"),
    ([1.0], "complex64", "fill_value"),
    (1.0, "complex64", "fill_value"),
    ([1.0, "x"], "complex64", "fill_value[1]"),
    ([1, 2, 3], "r16", "fill_value"),
    ([1, 256], "r16", "fill_value"),
    ("!!", "r16", "fill_value"),
    (5, "string", "fill_value"),
    ([300], "bytes", "fill_value"),
    ("x", {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}, "fill_value"),
    (1.5, {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}, "fill_value"),
    ({"x": 1.0}, STRUCT_XY, "fill_value"),  # every field is required
    ({"x": 1.0, "y": 2.0, "z": 3.0}, STRUCT_XY, "fill_value"),
    ({"x": 1.0, "y": "bad"}, STRUCT_XY, "fill_value.y"),
    ({"point": {"x": 1, "y": "no"}, "value": 1}, STRUCT_NESTED, "fill_value.point.y"),
    (5, STRUCT_XY, "fill_value"),
]


@pytest.mark.parametrize(("doc", "data_type", "field"), BAD_FILLS)
def test_bad_fill_value(doc, data_type, field):
    dt = parse_data_type_v3(data_type)
    with pytest.raises(MetadataError) as ei:
        decode_fill_value_v3(doc, dt, key=KEY, data_type=data_type)
    msg = str(ei.value)
    assert KEY in msg and repr(field) in msg and "expected" in msg


def test_encode_validates():
    with pytest.raises(MetadataError, match="fill_value"):
        encode_fill_value_v3(300, np.dtype("uint8"))
    with pytest.raises(MetadataError, match="fill_value"):
        encode_fill_value_v3(None, np.dtype("uint8"))


def test_data_type_mismatch():
    with pytest.raises(MetadataError):
        decode_fill_value_v3(0, np.dtype("int8"), data_type="float32")


# --------------------------------------------------------------------------- hypothesis


def _json_round(x):
    return json.loads(json.dumps(x, allow_nan=False))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([("float16", "u2"), ("float32", "u4"), ("float64", "u8")]), st.data())
def test_float_bits_round_trip_exact(types, data):
    name, u = types
    dt = np.dtype(name)
    b = data.draw(st.integers(0, 2 ** (8 * dt.itemsize) - 1))
    x = np.array(b, dtype=u).view(dt)[()]
    dec = decode_fill_value_v3(_json_round(encode_fill_value_v3(x, dt)), dt)
    assert bits(dec, u) == b


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_complex64_bits_round_trip_exact(b):
    dt = np.dtype("complex64")
    x = np.array(b, dtype="u8").view(dt)[()]
    dec = decode_fill_value_v3(_json_round(encode_fill_value_v3(x, dt)), dt)
    assert bits(dec, "u8") == b


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]), st.data())
def test_int_round_trip(name, data):
    dt = np.dtype(name)
    info = np.iinfo(dt)
    v = data.draw(st.integers(int(info.min), int(info.max)))
    assert decode_fill_value_v3(_json_round(encode_fill_value_v3(v, dt)), dt) == v


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=3, max_size=3), st.integers(-(2**31), 2**31 - 1), st.floats(width=32))
def test_struct_round_trip(raw, i, f):
    dt = np.dtype([("r", "V3"), ("i", "i4"), ("f", "f4")])
    v = np.array((raw, i, f), dtype=dt)[()]
    for form in ("struct", "structured"):
        dtj = data_type_to_v3(dt, struct_name=form)
        dec = decode_fill_value_v3(_json_round(encode_fill_value_v3(v, dt, data_type=dtj)), dt, data_type=dtj)
        assert dec.tobytes() == v.tobytes()


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=6))
def test_utf32_round_trip(s):
    dt = np.dtype("U6")
    s = s.rstrip("\x00")
    assert decode_fill_value_v3(_json_round(encode_fill_value_v3(s, dt)), dt) == s
