"""v3 ``zarr.json`` documents (zarr-specs/v3-core.rst "Array metadata", "Group metadata",
"Additional fields", "Node names"; chunk grid and chunk key encoding specs)."""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings

import numpy as np
import pytest
zarr = pytest.importorskip("zarr")  # zarr-python, which needs numcodecs >= 0.14

from tests._spec_json import normalize_array_document
from zarrdask.errors import InvalidKeyError, MetadataError, UnknownDataTypeError
from zarrdask.metadata import (
    ArrayMetadataV3,
    ChunkKeyEncodingSpec,
    GroupMetadataV3,
    validate_node_name,
)

KEY = "a/b/zarr.json"

# v3-core.rst "Array metadata" example
SPEC_ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [10000, 1000],
    "dimension_names": ["rows", "columns"],
    "data_type": "float64",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1000, 100]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "fill_value": "NaN",
    "attributes": {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]},
}
# the second example, with a made-up extension data type
SPEC_ARRAY_EXT = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [10000, 1000],
    "data_type": {"name": "urn:example:datetime", "configuration": {"unit": "ns"}},
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1000, 100]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "fill_value": None,
}
SPEC_GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {"spam": "ham", "eggs": 42}}
# data-types-struct.md example
STRUCT_EXAMPLE = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [100],
    "data_type": {"name": "struct", "configuration": {"fields": [
        {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}},
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100]}},
    "chunk_key_encoding": {"name": "default"},
    "fill_value": {"x": 0.0, "y": 0.0},
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
}


def test_spec_array_example():
    m = ArrayMetadataV3.from_json(copy.deepcopy(SPEC_ARRAY))
    assert m.shape == (10000, 1000) and m.chunk_shape == (1000, 100)
    assert m.data_type == np.dtype("float64") and np.isnan(m.fill_value)
    assert m.chunk_key_encoding == ChunkKeyEncodingSpec("default", "/")
    assert m.dimension_names == ("rows", "columns")
    assert m.codecs == ({"name": "bytes", "configuration": {"endian": "little"}},)
    assert m.attributes == {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]}
    assert m.to_json() == SPEC_ARRAY
    assert json.dumps(m.to_json()) == json.dumps(SPEC_ARRAY)  # key order kept


def test_spec_array_extension_example_unknown_type():
    with pytest.raises(UnknownDataTypeError, match="urn:example:datetime"):
        ArrayMetadataV3.from_json(SPEC_ARRAY_EXT, key=KEY)


def test_struct_extension_example():
    m = ArrayMetadataV3.from_json(copy.deepcopy(STRUCT_EXAMPLE))
    assert m.data_type == np.dtype([("x", "f4"), ("y", "f4")])
    assert m.chunk_key_encoding.separator == "/"
    assert m.to_json() == STRUCT_EXAMPLE


def test_spec_group_example():
    g = GroupMetadataV3.from_json(copy.deepcopy(SPEC_GROUP))
    assert g.attributes == {"spam": "ham", "eggs": 42} and g.consolidated_metadata is None
    assert g.to_json() == SPEC_GROUP


# --------------------------------------------------------------------------- zarr-python documents


def zarr_python_doc(path: str = "zarr.json", **kwargs) -> dict:
    store: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(store=zarr.storage.MemoryStore(store_dict=store), zarr_format=3, **kwargs)
    return json.loads(store[path].to_bytes())


DTYPES = [
    "bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16",
    ">i4", ">f8", "M8[ns]", "M8[s]", "M8[D]", "M8", "m8[10s]", "m8[us]", "S1", "S7", "U1", "U5", "V3",
    [("a", "<i4"), ("b", "<f8")], [("a", ">i4"), ("b", [("x", "u1"), ("y", "<f4")])], [("t", "<M8[s]"), ("s", "S3")],
    "T",
]


#: the key order of a document zarrdask builds: its own layout (zarr-python 3.1 and 3.4 use
#: it too), asserted as zarrdask's choice since JSON leaves key order open
CANONICAL_KEYS = ["shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs",
                  "attributes", "zarr_format", "node_type", "storage_transformers"]


def zarr_python_opens(path, doc: dict):
    """The array zarr-python opens from a directory holding ``doc`` as its zarr.json."""
    path.mkdir()
    (path / "zarr.json").write_text(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_zarr_python_documents(dtype, tmp_path):
    dt = np.dtypes.StringDType() if dtype == "T" else np.dtype(dtype)
    kwargs = {"fill_value": np.zeros((), dt)[()]} if getattr(dt, "names", None) else {}
    doc = zarr_python_doc(shape=(7, 5), chunks=(3, 2), dtype=dt, **kwargs)
    m = ArrayMetadataV3.from_json(copy.deepcopy(doc))
    assert m.data_type == (dt if dtype == "T" else dt.newbyteorder("="))
    # read, then written back: zarr-python's own document, key order kept
    assert m.to_json() == doc
    assert json.dumps(m.to_json()) == json.dumps(doc)
    # built in code: zarrdask's canonical JSON means what zarr-python writes. The
    # spellings the specs make equivalent (struct / its legacy alias structured, a
    # struct fill value as an object or as base64, key order) are made one by
    # tests/_spec_json.py; everything else must be equal.
    built = ArrayMetadataV3(m.shape, m.data_type, m.chunk_shape, ChunkKeyEncodingSpec(), m.fill_value, m.codecs)
    ours = built.to_json()
    assert list(ours) == CANONICAL_KEYS
    assert normalize_array_document(ours, dt) == normalize_array_document(doc, dt)
    # and zarr-python reads zarrdask's document as the array it wrote itself
    try:
        z_theirs = zarr_python_opens(tmp_path / "theirs", doc)
    except (TypeError, ValueError):  # zarr-python 3.1 cannot open its own "M8" (no unit) document
        with pytest.raises((TypeError, ValueError)):
            zarr_python_opens(tmp_path / "ours", ours)
        return
    z_ours = zarr_python_opens(tmp_path / "ours", ours)
    assert z_ours.dtype == z_theirs.dtype
    if dtype == "T":
        assert z_ours.fill_value == z_theirs.fill_value
    else:
        assert (np.asarray(z_ours.fill_value, z_theirs.dtype).tobytes()
                == np.asarray(z_theirs.fill_value, z_theirs.dtype).tobytes())


@pytest.mark.parametrize(("dtype", "fill"), [
    ("f8", np.nan), ("f4", -np.inf), ("f4", 0.1), ("c16", complex(np.nan, 1)), ("i8", -(2**63)),
    ("u8", 2**64 - 1), ("S3", b"ab"), ("U3", "ab"), ("V2", b"\x01\x02"), ("M8[s]", np.datetime64(5, "s")),
    ("m8[s]", np.timedelta64("NaT", "s")), ("bool", True), ("f2", 0.1),
])
def test_zarr_python_fill_values(dtype, fill):
    doc = zarr_python_doc(shape=(4,), chunks=(2,), dtype=dtype, fill_value=fill)
    m = ArrayMetadataV3.from_json(doc)
    assert m.to_json() == doc
    built = ArrayMetadataV3(m.shape, m.data_type, m.chunk_shape, ChunkKeyEncodingSpec(), m.fill_value, m.codecs)
    assert built.to_json() == doc


def test_zarr_python_options():
    doc = zarr_python_doc(shape=(10, 10), chunks=(5, 5), dtype="f8", dimension_names=["x", None],
                          attributes={"a": [1, 2]}, chunk_key_encoding={"name": "v2", "separator": "."})
    m = ArrayMetadataV3.from_json(doc)
    assert m.dimension_names == ("x", None) and m.attributes == {"a": [1, 2]}
    assert m.chunk_key_encoding == ChunkKeyEncodingSpec("v2", ".")
    assert m.to_json() == doc
    doc = zarr_python_doc(shape=(16, 16), chunks=(4, 4), shards=(8, 8), dtype="u2")
    m = ArrayMetadataV3.from_json(doc)
    assert m.chunk_shape == (8, 8) and m.codecs[0]["name"] == "sharding_indexed"
    assert m.to_json() == doc
    doc = zarr_python_doc(shape=(), dtype="f8")
    m = ArrayMetadataV3.from_json(doc)
    assert m.shape == () and m.chunk_shape == ()
    assert m.to_json() == doc


def test_zarr_python_group_documents():
    store: dict = {}
    s = zarr.storage.MemoryStore(store_dict=store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.create_group(s, zarr_format=3, attributes={"a": 1})
        doc = json.loads(store["zarr.json"].to_bytes())
        assert GroupMetadataV3.from_json(doc).to_json() == doc
        g.create_array("x", shape=(3,), dtype="i2")
        zarr.consolidate_metadata(s)
    doc = json.loads(store["zarr.json"].to_bytes())
    m = GroupMetadataV3.from_json(copy.deepcopy(doc))
    assert m.consolidated_metadata["kind"] == "inline"
    assert "x" in m.consolidated_metadata["metadata"]
    assert m.to_json() == doc
    assert json.dumps(m.to_json()) == json.dumps(doc)
    inner = m.consolidated_metadata["metadata"]["x"]
    assert ArrayMetadataV3.from_json(inner).to_json() == inner


@pytest.mark.parametrize("dtype", ["f4", "c8", "M8[ms]", "U4", "S3", "V2", [("a", "<i2"), ("b", "<f4")], "T"],
                         ids=str)
def test_zarr_python_reads_our_documents(tmp_path, dtype):
    dt = np.dtypes.StringDType() if dtype == "T" else np.dtype(dtype)
    codecs = ({"name": "vlen-utf8"},) if dtype == "T" else ({"name": "bytes", "configuration": {"endian": "little"}},)
    fill = "x" if dtype == "T" else np.zeros((), dt)[()]
    if dt.kind == "f":
        fill = np.array(0x7FC00001, "u4").view("f4")[()]  # hex NaN payload
    m = ArrayMetadataV3((6,), dt, (3,), ChunkKeyEncodingSpec(), fill, codecs, attributes={"k": "v"})
    (tmp_path / "zarr.json").write_text(json.dumps(m.to_json()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.open_array(zarr.storage.LocalStore(tmp_path), mode="r")
    assert a.shape == (6,) and a.attrs["k"] == "v"
    if dtype != "T":
        assert a.dtype == dt


# --------------------------------------------------------------------------- round trips


def _doc(**changes):
    d = copy.deepcopy(SPEC_ARRAY)
    d.update(changes)
    return d


@pytest.mark.parametrize("doc", [
    _doc(fill_value="0x7ff8000000000001"),
    _doc(fill_value="0x3ff0000000000000"),  # hex form of 1.0 is kept as written
    _doc(fill_value=1),  # int form of a float kept
    _doc(data_type="float32", fill_value="0x7fc00001"),
    _doc(data_type="complex64", fill_value=["NaN", "0x7fc00001"]),
    _doc(data_type="r16", fill_value=[1, 2]),
    _doc(data_type="r16", fill_value="AQI="),
    _doc(data_type={"name": "numpy.datetime64", "configuration": {"unit": "μs", "scale_factor": 1}},
         fill_value="NaT"),
    _doc(data_type={"name": "structured", "configuration": {"fields": [["a", "int32"]]}}, fill_value="AQAAAA=="),
    _doc(data_type={"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int32"}]}},
         fill_value={"a": 1}),
    _doc(data_type={"name": "float64"}),
    _doc(data_type="bytes", fill_value=[1, 2, 3], codecs=["vlen-bytes"]),
    _doc(codecs=["bytes", {"name": "gzip", "configuration": {"level": 1}},
                 {"name": "crc32c", "must_understand": False}]),
    _doc(chunk_key_encoding="default"),
    _doc(chunk_key_encoding={"name": "v2"}),
    _doc(chunk_key_encoding={"name": "default", "configuration": {}}),
    _doc(storage_transformers=[]),
    _doc(dimension_names=None),
    _doc(dimension_names=[None, "x"]),
    _doc(attributes={}),
    _doc(my_ext={"must_understand": False, "x": [1]}),
    {k: v for k, v in SPEC_ARRAY.items() if k not in ("attributes", "dimension_names")},
])
def test_round_trip_exact(doc):
    m = ArrayMetadataV3.from_json(copy.deepcopy(doc))
    assert m.to_json() == doc
    assert json.dumps(m.to_json()) == json.dumps(doc)


def test_hex_payload_value_exact():
    m = ArrayMetadataV3.from_json(_doc(fill_value="0x7ff8000000000001"))
    assert int(np.asarray(m.fill_value).view("u8")) == 0x7FF8000000000001


def test_extra_fields_kept():
    m = ArrayMetadataV3.from_json(_doc(my_ext={"must_understand": False, "x": [1]}))
    assert m.extra_fields == {"my_ext": {"must_understand": False, "x": [1]}}


def test_replace_gives_consistent_json():
    m = ArrayMetadataV3.from_json(_doc(fill_value="0x7ff8000000000001", chunk_key_encoding="default"))
    r = dataclasses.replace(m, fill_value=2.5)
    assert r.to_json()["fill_value"] == 2.5
    assert r.to_json()["chunk_key_encoding"] == "default"  # unchanged field keeps its form
    r = dataclasses.replace(m, data_type=np.dtype("f4"), fill_value=0)
    assert r.to_json()["data_type"] == "float32" and r.to_json()["fill_value"] == 0.0
    r = dataclasses.replace(m, chunk_key_encoding=ChunkKeyEncodingSpec("v2"))
    assert r.to_json()["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    r = dataclasses.replace(m, shape=(5, 5), chunk_shape=(5, 5), dimension_names=None)
    out = r.to_json()
    assert out["shape"] == [5, 5] and out["chunk_grid"]["configuration"]["chunk_shape"] == [5, 5]
    assert "dimension_names" not in out
    # raw-bits form of the data type decides the fill value form
    m = ArrayMetadataV3.from_json(_doc(data_type="r16", fill_value=[1, 2]))
    assert dataclasses.replace(m, fill_value=b"\x03\x04").to_json()["fill_value"] == [3, 4]


def test_build_in_code_canonical():
    m = ArrayMetadataV3(shape=[4], data_type="int16", chunk_shape=[2], chunk_key_encoding={"name": "default"},
                        fill_value=3, codecs=[{"name": "bytes", "configuration": {"endian": "little"}}])
    assert type(m.fill_value) is np.int16 and m.codecs == ({"name": "bytes", "configuration": {"endian": "little"}},)
    assert m.to_json() == {
        "shape": [4], "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 3, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {}, "zarr_format": 3, "node_type": "array", "storage_transformers": [],
    }
    assert ArrayMetadataV3.from_json(m.to_json()) == m
    assert m.ndim == 1 and m.dtype == np.dtype("int16")


def test_eq_hash_frozen():
    a = ArrayMetadataV3.from_json(copy.deepcopy(SPEC_ARRAY))
    b = ArrayMetadataV3.from_json(_doc(fill_value="0x7ff8000000000000"))  # the same NaN, other form
    assert a == b and hash(a) == hash(b)
    assert a != ArrayMetadataV3.from_json(_doc(fill_value="0x7ff8000000000001"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.shape = (1,)


def test_chunk_key_encoding_spec():
    assert ChunkKeyEncodingSpec().separator == "/"
    assert ChunkKeyEncodingSpec("v2").separator == "."
    assert ChunkKeyEncodingSpec("v2", "/").to_json() == {"name": "v2", "configuration": {"separator": "/"}}
    assert ChunkKeyEncodingSpec.from_json("v2") == ChunkKeyEncodingSpec("v2", ".")
    assert ChunkKeyEncodingSpec.from_json({"name": "default", "configuration": {"separator": "."}}).separator == "."
    with pytest.raises(MetadataError):
        ChunkKeyEncodingSpec("other")
    with pytest.raises(MetadataError):
        ChunkKeyEncodingSpec("default", "-")


# --------------------------------------------------------------------------- bad documents

REQUIRED = ["zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value",
            "codecs"]


@pytest.mark.parametrize("name", REQUIRED)
def test_missing_required(name):
    doc = copy.deepcopy(SPEC_ARRAY)
    del doc[name]
    with pytest.raises(MetadataError) as ei:
        ArrayMetadataV3.from_json(doc, key=KEY)
    assert KEY in str(ei.value) and repr(name) in str(ei.value) and "missing" in str(ei.value)


BAD = [
    ({"zarr_format": 2}, "zarr_format"),
    ({"zarr_format": "3"}, "zarr_format"),
    ({"node_type": "group"}, "node_type"),
    ({"shape": 5}, "shape"),
    ({"shape": [10000, -1]}, "shape"),
    ({"shape": [10000, 1.5]}, "shape"),
    ({"shape": [10000]}, "chunk_grid.configuration.chunk_shape"),  # rank mismatch
    ({"shape": [1, 2, 3], "dimension_names": None}, "chunk_grid.configuration.chunk_shape"),
    ({"dimension_names": ["x"]}, "dimension_names"),
    ({"dimension_names": ["x", 1]}, "dimension_names"),
    ({"dimension_names": "xy"}, "dimension_names"),
    ({"data_type": "float128"}, "data_type"),
    ({"data_type": 64}, "data_type"),
    ({"chunk_grid": {"name": "irregular", "configuration": {"chunk_shape": [1, 1]}}}, "chunk_grid.name"),
    ({"chunk_grid": {"name": "rectilinear", "configuration": {"chunk_shape": [1, 1]}}}, "chunk_grid.configuration"),
    ({"chunk_grid": {"name": "regular"}}, "chunk_grid.configuration.chunk_shape"),
    ({"chunk_grid": "regular"}, "chunk_grid.configuration.chunk_shape"),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0, 1]}}},
     "chunk_grid.configuration.chunk_shape"),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": "1,1"}}},
     "chunk_grid.configuration.chunk_shape"),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1], "x": 1}}},
     "chunk_grid.configuration"),
    ({"chunk_grid": {"name": "regular", "must_understand": False, "configuration": {"chunk_shape": [1, 1]}}},
     "chunk_grid.must_understand"),
    ({"chunk_key_encoding": {"name": "nested"}}, "chunk_key_encoding.name"),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"separator": "-"}}},
     "chunk_key_encoding.configuration.separator"),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"sep": "/"}}}, "chunk_key_encoding.configuration"),
    ({"chunk_key_encoding": 5}, "chunk_key_encoding"),
    ({"fill_value": None}, "fill_value"),
    ({"fill_value": "nan"}, "fill_value"),
    ({"data_type": "uint8", "fill_value": 300}, "fill_value"),
    ({"data_type": "int32", "fill_value": 1.5}, "fill_value"),
    ({"codecs": []}, "codecs"),
    ({"codecs": {"name": "bytes"}}, "codecs"),
    ({"codecs": [{"configuration": {}}]}, "codecs[0].name"),
    ({"codecs": [{"name": "bytes", "configuration": []}]}, "codecs[0].configuration"),
    ({"codecs": [{"name": "bytes", "x": 1}]}, "codecs[0]"),
    ({"codecs": [5]}, "codecs[0]"),
    ({"codecs": [""]}, "codecs[0].name"),
    ({"attributes": []}, "attributes"),
    ({"storage_transformers": [{"name": "sharding"}]}, "storage_transformers"),
    ({"storage_transformers": {}}, "storage_transformers"),
    ({"unknown_field": 1}, "unknown_field"),
    ({"unknown_field": {"x": 1}}, "unknown_field"),
    ({"unknown_field": {"must_understand": True}}, "unknown_field"),
    ({"consolidated_metadata": None}, "consolidated_metadata"),  # groups only
]


@pytest.mark.parametrize(("changes", "field"), BAD)
def test_bad_array(changes, field):
    with pytest.raises(MetadataError) as ei:
        ArrayMetadataV3.from_json(_doc(**changes), key=KEY)
    msg = str(ei.value)
    # the field, or one entry of it (``shape[1]``)
    assert KEY in msg and (repr(field) in msg or f"'{field}[" in msg) and "expected" in msg


def test_storage_transformers_message():
    with pytest.raises(MetadataError, match="no storage transformers are supported"):
        ArrayMetadataV3.from_json(_doc(storage_transformers=[{"name": "x"}]), key=KEY)


@pytest.mark.parametrize("doc", [None, [], "zarr.json"])
def test_not_an_object(doc):
    with pytest.raises(MetadataError, match=KEY):
        ArrayMetadataV3.from_json(doc, key=KEY)
    with pytest.raises(MetadataError, match=KEY):
        GroupMetadataV3.from_json(doc, key=KEY)


def test_group_fields():
    doc = {"zarr_format": 3, "node_type": "group", "consolidated_metadata": None, "x": {"must_understand": False}}
    g = GroupMetadataV3.from_json(copy.deepcopy(doc))
    assert g.extra_fields == {"x": {"must_understand": False}} and g.attributes == {}
    assert g.to_json() == doc
    built = GroupMetadataV3(attributes={"a": 1})
    assert built.to_json() == {"attributes": {"a": 1}, "zarr_format": 3, "node_type": "group"}
    assert hash(built) == hash(GroupMetadataV3.from_json(built.to_json()))
    assert built == GroupMetadataV3.from_json(built.to_json())


GROUP_BAD = [
    ({"zarr_format": 2}, "zarr_format"),
    ({"node_type": "array"}, "node_type"),
    ({"attributes": 5}, "attributes"),
    ({"consolidated_metadata": []}, "consolidated_metadata"),
    ({"consolidated_metadata": {"kind": "external", "metadata": {}}}, "consolidated_metadata.kind"),
    ({"consolidated_metadata": {"kind": "inline", "metadata": []}}, "consolidated_metadata.metadata"),
    ({"unknown": 1}, "unknown"),
    ({"unknown": {"must_understand": True}}, "unknown"),
]


@pytest.mark.parametrize(("changes", "field"), GROUP_BAD)
def test_bad_group(changes, field):
    doc = {**SPEC_GROUP, **changes}
    with pytest.raises(MetadataError) as ei:
        GroupMetadataV3.from_json(doc, key=KEY)
    msg = str(ei.value)
    assert KEY in msg and repr(field) in msg and "expected" in msg


@pytest.mark.parametrize("name", ["node", "a.b", "x" * 300, "é", "...a", "_x", "zarr.jsonx", "c"])
def test_valid_node_names(name):
    assert validate_node_name(name) == name


@pytest.mark.parametrize("name", ["", ".", "..", "...", "a/b", "/", "__x", "__zarr", "zarr.json", None, 5])
def test_invalid_node_names(name):
    with pytest.raises(MetadataError) as ei:
        validate_node_name(name)
    assert isinstance(ei.value, InvalidKeyError)
    assert repr(name) in str(ei.value)
