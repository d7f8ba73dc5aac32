"""v2 ``.zarray`` / ``.zgroup`` documents (zarr-specs/v2-v2.0.rst "Metadata", "Groups")."""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings

import numcodecs
import numpy as np
import pytest
zarr = pytest.importorskip("zarr")  # zarr-python, which needs numcodecs >= 0.14

from zarrdask.errors import MetadataError, UnknownDataTypeError
from zarrdask.metadata import ArrayMetadataV2, GroupMetadataV2

KEY = "group/arr/.zarray"

# the two .zarray documents in the v2 spec text
SPEC_EXAMPLE_1 = {
    "chunks": [1000, 1000],
    "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
    "dtype": "<f8",
    "fill_value": "NaN",
    "filters": [{"id": "delta", "dtype": "<f8", "astype": "<f4"}],
    "order": "C",
    "shape": [10000, 10000],
    "zarr_format": 2,
}
SPEC_EXAMPLE_2 = {
    "chunks": [10, 10],
    "compressor": {"id": "zlib", "level": 1},
    "dtype": "<i4",
    "fill_value": 42,
    "filters": None,
    "order": "C",
    "shape": [20, 20],
    "zarr_format": 2,
}


def test_spec_example_1():
    m = ArrayMetadataV2.from_json(SPEC_EXAMPLE_1)
    assert m.shape == (10000, 10000) and m.chunks == (1000, 1000)
    assert m.dtype == np.dtype("<f8") and np.isnan(m.fill_value)
    assert m.compressor == {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}
    assert m.filters == ({"id": "delta", "dtype": "<f8", "astype": "<f4"},)
    assert m.order == "C" and m.dimension_separator == "."
    assert m.to_json() == {**SPEC_EXAMPLE_1, "dimension_separator": "."}


def test_spec_example_2():
    m = ArrayMetadataV2.from_json(SPEC_EXAMPLE_2)
    assert m.fill_value == np.int32(42) and type(m.fill_value) is np.int32
    assert m.filters is None
    assert m.to_json() == {**SPEC_EXAMPLE_2, "dimension_separator": "."}


def test_spec_group_example():
    assert GroupMetadataV2.from_json({"zarr_format": 2}).to_json() == {"zarr_format": 2}


# --------------------------------------------------------------------------- zarr-python documents


def zarr_python_doc(**kwargs) -> dict:
    store: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(store=zarr.storage.MemoryStore(store_dict=store), zarr_format=2, **kwargs)
    return json.loads(store[".zarray"].to_bytes())


DTYPES = [
    "bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16",
    ">i2", ">u4", ">f4", ">f8", ">c8", "M8[ns]", "M8[s]", "M8[D]", "m8[10s]", ">M8[us]", "S1", "S7", "U1", "U5",
    ">U5", "V3", [("a", "<i4"), ("b", "<f8")], [("a", ">i4"), ("b", [("x", "u1"), ("y", "<f4")])],
    [("t", "<M8[s]"), ("s", "S3")],
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_zarr_python_documents(dtype):
    dt = np.dtype(dtype)
    kwargs = {"fill_value": np.zeros((), dt)[()]} if dt.names else {}
    doc = zarr_python_doc(shape=(7, 5), chunks=(3, 2), dtype=dt, **kwargs)
    m = ArrayMetadataV2.from_json(copy.deepcopy(doc))
    assert m.dtype == dt
    assert m.to_json() == doc
    assert json.dumps(m.to_json()) == json.dumps(doc)  # same key order too


@pytest.mark.parametrize(("dtype", "fill"), [
    ("f8", np.nan), ("f4", -np.inf), ("c16", complex(np.nan, 1)), ("i8", -(2**63)), ("u8", 2**64 - 1),
    ("S3", b"ab"), ("U3", "ab"), ("V2", b"\x01\x02"), ("M8[s]", np.datetime64(5, "s")), ("bool", True),
    ("f2", 0.1),
])
def test_zarr_python_fill_values(dtype, fill):
    doc = zarr_python_doc(shape=(4,), chunks=(2,), dtype=dtype, fill_value=fill)
    m = ArrayMetadataV2.from_json(doc)
    assert m.to_json() == doc


def test_zarr_python_options():
    doc = zarr_python_doc(shape=(10, 10), chunks=(5, 5), dtype="f8", order="F",
                          chunk_key_encoding={"name": "v2", "separator": "/"},
                          filters=[numcodecs.Delta(dtype="<f8")], compressors=numcodecs.Zlib(level=3))
    m = ArrayMetadataV2.from_json(doc)
    assert m.order == "F" and m.dimension_separator == "/"
    assert m.filters[0]["id"] == "delta" and m.compressor["id"] == "zlib"
    assert m.to_json() == doc
    doc = zarr_python_doc(shape=(), dtype="i4", compressors=None)
    m = ArrayMetadataV2.from_json(doc)
    assert m.shape == () and m.chunks == () and m.compressor is None
    assert m.to_json() == doc


def test_zarr_python_vlen_string():
    doc = zarr_python_doc(shape=(4,), chunks=(2,), dtype=np.dtypes.StringDType())
    m = ArrayMetadataV2.from_json(doc)
    assert m.dtype == np.dtype(object) and m.fill_value == ""
    assert m.filters == ({"id": "vlen-utf8"},)
    assert m.to_json() == doc


# --------------------------------------------------------------------------- behaviour


def test_unknown_keys_ignored():
    doc = {**SPEC_EXAMPLE_2, "something": [1, 2], "dimension_separator": "/"}
    m = ArrayMetadataV2.from_json(doc)
    out = m.to_json()
    assert "something" not in out and out["dimension_separator"] == "/"


def test_null_dimension_separator_is_default():
    assert ArrayMetadataV2.from_json({**SPEC_EXAMPLE_2, "dimension_separator": None}).dimension_separator == "."


def test_legacy_fill_equivalent():
    doc = {**SPEC_EXAMPLE_2, "dtype": "|S4", "fill_value": 0}
    m = ArrayMetadataV2.from_json(doc)
    assert m.fill_value == b"" and m.to_json()["fill_value"] == ""
    doc = {**SPEC_EXAMPLE_2, "dtype": "<f8", "fill_value": 0}
    assert ArrayMetadataV2.from_json(doc).to_json()["fill_value"] == 0.0


def test_input_not_aliased():
    doc = copy.deepcopy(SPEC_EXAMPLE_1)
    m = ArrayMetadataV2.from_json(doc)
    doc["compressor"]["clevel"] = 9
    doc["filters"][0]["id"] = "x"
    assert m.compressor["clevel"] == 5 and m.filters[0]["id"] == "delta"
    out = m.to_json()
    out["compressor"]["clevel"] = 1
    assert m.compressor["clevel"] == 5


def test_build_in_code():
    m = ArrayMetadataV2(shape=[10, 4], chunks=[5, 4], dtype="f4", compressor=None, fill_value=0)
    assert m.shape == (10, 4) and m.dtype == np.dtype("f4")
    assert type(m.fill_value) is np.float32
    assert m.to_json() == {"shape": [10, 4], "chunks": [5, 4], "dtype": "<f4", "fill_value": 0.0, "order": "C",
                           "filters": None, "dimension_separator": ".", "compressor": None, "zarr_format": 2}
    assert ArrayMetadataV2.from_json(m.to_json()) == m
    with pytest.raises(MetadataError, match="fill_value"):
        ArrayMetadataV2(shape=(3,), chunks=(3,), dtype="u1", compressor=None, fill_value=300)
    with pytest.raises(MetadataError, match="chunks"):
        ArrayMetadataV2(shape=(3,), chunks=(3, 1), dtype="u1", compressor=None, fill_value=0)


def test_frozen_eq_hash():
    a = ArrayMetadataV2.from_json(SPEC_EXAMPLE_1)
    b = ArrayMetadataV2.from_json(copy.deepcopy(SPEC_EXAMPLE_1))
    assert a == b and hash(a) == hash(b)  # NaN fill values compare by bits
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.order = "F"
    c = dataclasses.replace(a, fill_value=1.0)
    assert c != a and c.to_json()["fill_value"] == 1.0
    assert a.ndim == 2


# --------------------------------------------------------------------------- bad documents

REQUIRED = ["zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters"]


@pytest.mark.parametrize("name", REQUIRED)
def test_missing_required(name):
    doc = copy.deepcopy(SPEC_EXAMPLE_2)
    del doc[name]
    with pytest.raises(MetadataError) as ei:
        ArrayMetadataV2.from_json(doc, key=KEY)
    assert KEY in str(ei.value) and repr(name) in str(ei.value) and "missing" in str(ei.value)


BAD = [
    ("zarr_format", 3), ("zarr_format", "2"), ("zarr_format", True),
    ("shape", 20), ("shape", [20, -1]), ("shape", [20, 2.0]), ("shape", [20, True]), ("shape", None),
    ("chunks", [10, 0]), ("chunks", "10"), ("chunks", [10]), ("chunks", [10, 10, 10]),
    ("dtype", "i4"), ("dtype", "float64"), ("dtype", 8),
    ("compressor", "zlib"), ("compressor", {"level": 1}), ("compressor", {"id": 5}), ("compressor", []),
    ("fill_value", "x"), ("fill_value", 2**40), ("fill_value", 1.5), ("fill_value", [1]),
    ("order", "K"), ("order", None),
    ("filters", {"id": "delta"}), ("filters", [{"dtype": "<f8"}]), ("filters", ["delta"]),
    ("dimension_separator", "-"), ("dimension_separator", 1),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_bad_field(name, value):
    doc = {**SPEC_EXAMPLE_2, name: value}
    with pytest.raises(MetadataError) as ei:
        ArrayMetadataV2.from_json(doc, key=KEY)
    msg = str(ei.value)
    assert KEY in msg and "expected" in msg
    assert repr(name) in msg or f"'{name}[" in msg  # the field, or one entry of it (``shape[1]``)


def test_bad_dtype_is_unknown_data_type():
    with pytest.raises(UnknownDataTypeError, match="group/arr/.zarray"):
        ArrayMetadataV2.from_json({**SPEC_EXAMPLE_2, "dtype": "<q8"}, key=KEY)


@pytest.mark.parametrize("doc", [None, [], "x", 2])
def test_not_an_object(doc):
    with pytest.raises(MetadataError, match="group/arr/.zarray"):
        ArrayMetadataV2.from_json(doc, key=KEY)


def test_group():
    assert GroupMetadataV2.from_json({"zarr_format": 2, "extra": 1}).to_json() == {"zarr_format": 2}
    for bad in ({}, {"zarr_format": 3}, {"zarr_format": "2"}, [], None):
        with pytest.raises(MetadataError, match=r"g/\.zgroup"):
            GroupMetadataV2.from_json(bad, key="g/.zgroup")
    assert GroupMetadataV2() == GroupMetadataV2.from_json({"zarr_format": 2})
