"""The test helper tests/_spec_json.py makes one only what the specs make equivalent."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests._spec_json import has_byte_order, normalize_array_document, normalize_codecs

DT = np.dtype([("a", "<i4"), ("b", [("x", "u1"), ("y", "<f4")])])
LE = {"name": "bytes", "configuration": {"endian": "little"}}


def doc(data_type, fill, codecs):
    return {"shape": [3], "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": fill,
            "codecs": codecs, "attributes": {}, "zarr_format": 3, "node_type": "array"}


STRUCT = {"name": "struct", "configuration": {"fields": [
    {"name": "a", "data_type": "int32"},
    {"name": "b", "data_type": {"name": "struct", "configuration": {"fields": [
        {"name": "x", "data_type": "uint8"}, {"name": "y", "data_type": "float32"}]}}}]}}
STRUCTURED = {"name": "structured", "configuration": {"fields": [
    ["a", "int32"], ["b", {"name": "structured", "configuration": {"fields": [["x", "uint8"], ["y", "float32"]]}}]]}}
FILL = np.array((-2, (7, 1.5)), DT)


def b64(value, dtype):
    import base64
    return base64.b64encode(np.asarray(value, dtype).tobytes()).decode()


def test_struct_and_legacy_structured_are_one():
    new = doc(STRUCT, {"a": -2, "b": {"x": 7, "y": 1.5}}, [LE])
    legacy = doc(STRUCTURED, b64(FILL, DT), [{"name": "bytes"}])  # absent endian: little
    legacy_be = doc(STRUCTURED, b64(FILL, DT.newbyteorder(">")),
                    [{"name": "bytes", "configuration": {"endian": "big"}}])
    n = normalize_array_document(new, DT)
    assert normalize_array_document(legacy, DT) == n
    assert normalize_array_document(legacy_be, DT)["fill_value"] == n["fill_value"]


@pytest.mark.parametrize("change", ["field order", "field type", "fill", "endian", "shape", "fill bytes"])
def test_a_different_array_stays_different(change):
    base = doc(STRUCT, {"a": -2, "b": {"x": 7, "y": 1.5}}, [LE])
    other = copy.deepcopy(base)
    fields = other["data_type"]["configuration"]["fields"]
    if change == "field order":
        fields.reverse()
    elif change == "field type":
        fields[0]["data_type"] = "uint32"
    elif change == "fill":
        other["fill_value"]["b"]["y"] = 2.5
    elif change == "endian":
        other["codecs"] = [{"name": "bytes", "configuration": {"endian": "big"}}]
    elif change == "shape":
        other["shape"] = [4]
    else:  # a legacy document whose base64 fill holds other bytes
        other = doc(STRUCTURED, b64(np.array((-2, (7, 2.5)), DT), DT), [LE])
    assert normalize_array_document(other, DT) != normalize_array_document(base, DT)


def test_bytes_endian():
    # dropped where it does not apply (v3-codecs-bytes.rst), kept where it does
    assert normalize_codecs([LE], np.dtype("u1")) == normalize_codecs(["bytes"], np.dtype("u1")) == [{"name": "bytes"}]
    assert normalize_codecs([LE], np.dtype([("a", "u1"), ("b", "S2")])) == [{"name": "bytes"}]
    assert normalize_codecs([LE], np.dtype("<i4")) == [LE]
    # absent on a multi-byte type: stays absent (invalid) unless the type is legacy "structured"
    assert normalize_codecs([{"name": "bytes"}], np.dtype("<i4")) == [{"name": "bytes"}]
    assert normalize_codecs([{"name": "bytes"}], DT) == [{"name": "bytes"}]
    assert normalize_codecs([{"name": "bytes"}], DT, legacy_struct=True) == [LE]
    # inside sharding: the inner chain with the array's type, the index with uint64
    shard = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": [LE], "index_codecs": [LE, {"name": "crc32c"}], "index_location": "end"}}
    got = normalize_codecs([shard], np.dtype("u1"))[0]["configuration"]
    assert got["codecs"] == [{"name": "bytes"}] and got["index_codecs"] == [LE, {"name": "crc32c"}]


@pytest.mark.parametrize(("dtype", "expected"), [
    ("u1", False), ("i1", False), ("bool", False), ("S5", False), ("V3", False), ("<i2", True), ("<U1", True),
    ("<M8[s]", True), ("<c8", True), ([("a", "u1"), ("b", "S3")], False), ([("a", "u1"), ("b", "<f2")], True),
])
def test_has_byte_order(dtype, expected):
    assert has_byte_order(np.dtype(dtype)) is expected
