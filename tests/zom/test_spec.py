"""Specs: the ZEP's JSON examples, construction, immutability, flat form, members
renaming, equality, ``like`` and ``diff``."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from zarrdask.errors import MetadataError
from zarrdask.zom import (
    ABSENT,
    UNSET,
    ArraySpec,
    ArraySpecV2,
    ArraySpecV3,
    Difference,
    GroupSpec,
    GroupSpecV2,
    GroupSpecV3,
    NodeSpec,
    diff,
    from_flat,
    from_json,
)

from ._zep import ZEP_V2_GROUP, ZEP_V3_GROUP


def v3_array(**kw):
    base = dict(shape=[10, 20], data_type="float64",
                chunk_grid={"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
                fill_value="NaN", codecs=[{"name": "bytes", "configuration": {"endian": "little"}}])
    return ArraySpecV3(**{**base, **kw})


def v2_array(**kw):
    base = dict(shape=[10, 20], chunks=[5, 5], dtype="<f8", compressor=None, fill_value="NaN", filters=None)
    return ArraySpecV2(**{**base, **kw})


# -- the ZEP's examples ------------------------------------------------------------------
@pytest.mark.parametrize("text", [ZEP_V3_GROUP, ZEP_V2_GROUP], ids=["v3", "v2"])
def test_zep_examples_round_trip_unchanged(text):
    doc = json.loads(text)
    spec = GroupSpec.from_json(doc)
    assert spec.to_json() == doc
    # key order too: the same text once both are dumped the same way
    assert json.dumps(spec.to_json(), indent=2) == json.dumps(doc, indent=2)
    assert from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_zep_examples_parse_into_the_right_classes():
    v3 = GroupSpec.from_json(json.loads(ZEP_V3_GROUP))
    assert type(v3) is GroupSpecV3 and isinstance(v3, GroupSpec)
    arr = v3.members["array"]
    assert type(arr) is ArraySpecV3 and isinstance(arr, ArraySpec)
    assert arr.shape == (1000, 1000) and arr.ndim == 2
    assert arr.storage_transformers is None and arr.dimension_names == ("rows", "columns")
    assert dict(v3.attributes) == {"foo": 42, "bar": False}
    v2 = GroupSpec.from_json(json.loads(ZEP_V2_GROUP))
    assert type(v2) is GroupSpecV2 and type(v2.members["foo"]) is ArraySpecV2
    assert v2.members["foo"].dimension_separator == "/"


# -- construction --------------------------------------------------------------------------
def test_specs_are_immutable_and_hashable():
    a = v3_array(attributes={"units": "K", "list": [1, 2]})
    with pytest.raises(AttributeError):
        a.shape = (1,)  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.attributes["units"] = "C"  # type: ignore[index]
    assert a.attributes["list"] == (1, 2)  # frozen JSON: arrays are tuples
    assert a.to_json()["attributes"]["list"] == [1, 2]
    assert hash(a) == hash(v3_array(attributes={"list": [1, 2], "units": "K"}))
    assert {a, v3_array(attributes={"units": "K", "list": [1, 2]})} == {a}
    assert pickle.loads(pickle.dumps(a)) == a


def test_replace_and_optional_fields():
    a = v3_array()
    assert a.dimension_names is UNSET and "dimension_names" not in a.to_json()
    b = a.replace(dimension_names=["y", None])
    assert b.to_json()["dimension_names"] == ["y", None] and a != b
    c = a.replace(storage_transformers=None)
    assert c.to_json()["storage_transformers"] is None  # null, not absent
    v2 = v2_array()
    assert "dimension_separator" not in v2.to_json()
    assert v2.replace(dimension_separator="/").to_json()["dimension_separator"] == "/"


def test_numpy_values_are_accepted_as_json():
    a = v3_array(shape=np.array([4, 5]), attributes={"scale": np.float32(0.5), "n": np.int64(3)})
    assert a.shape == (4, 5)
    assert a.to_json()["attributes"] == {"scale": 0.5, "n": 3}


@pytest.mark.parametrize("make, field, expected", [
    (lambda: v3_array(shape="x"), "shape", "list of non-negative integers"),
    (lambda: v3_array(shape=[-1, 2]), "shape", "non-negative"),
    (lambda: v3_array(codecs={"name": "bytes"}), "codecs", "list of codec objects"),
    (lambda: v3_array(dimension_names=[1, 2]), "dimension_names", "strings or nulls"),
    (lambda: v3_array(attributes=[1]), "attributes", "JSON object"),
    (lambda: v3_array(extra_fields={"foo": 1}), "foo", "must_understand"),
    (lambda: v3_array(zarr_format=2), "zarr_format", "3"),
    (lambda: v2_array(chunks=[0, 1]), "chunks", "positive"),
    (lambda: v2_array(chunks=[5]), "chunks", "rank"),
    (lambda: v2_array(order="K"), "order", '"C" or "F"'),
    (lambda: v2_array(dimension_separator="-"), "dimension_separator", '"." or "/"'),
    (lambda: v2_array(compressor="zstd"), "compressor", "codec configuration"),
])
def test_construction_errors_name_the_field(make, field, expected):
    with pytest.raises(MetadataError) as info:
        make()
    assert repr(field) in str(info.value) and expected in str(info.value)


def test_non_json_values_are_refused():
    with pytest.raises(TypeError, match=r"attributes.when: datetime"):
        import datetime

        v3_array(attributes={"when": datetime.datetime(2020, 1, 1)})


@pytest.mark.parametrize("doc, message", [
    ({"zarr_format": 3, "node_type": "group", "attributes": {},
      "members": {"a": {"zarr_format": 3, "node_type": "array", "shape": [1]}}},
     "'/a': ArraySpecV3: missing field(s) ['data_type', 'chunk_grid', 'chunk_key_encoding', 'fill_value', 'codecs']"),
    ({"zarr_format": 2, "attributes": {}, "members": {"a": {"zarr_format": 3, "attributes": {}, "members": {}}}},
     "'/a': field 'zarr_format': found 3, expected 2"),
    ({"zarr_format": 2, "attributes": {}, "members": {"a/b": {"attributes": {}, "members": {}}}},
     'member name'),
    ({"zarr_format": 3, "attributes": {}, "members": {"__x": {"attributes": {}, "members": {}}}},
     'reserved prefix "__"'),
    ({"zarr_format": 2, "attributes": {}, "members": {"a": {"attributes": {}, "members": {}, "extra": 1}}},
     "'/a': GroupSpecV2: unknown field(s) ['extra']"),
    ({"zarr_format": 4, "attributes": {}, "members": {}}, "expected 2 or 3"),
    ({"zarr_format": 2, "attributes": {}, "members": {"b": [1]}}, "'/b': found list"),
])
def test_from_json_errors_name_the_path(doc, message):
    with pytest.raises(MetadataError) as info:
        GroupSpec.from_json(doc)
    assert message in str(info.value)


def test_from_json_on_a_concrete_class_checks_the_kind():
    doc = v2_array().to_json()
    assert ArraySpecV2.from_json(doc) == v2_array()
    assert ArraySpec.from_json(doc) == v2_array()
    with pytest.raises(MetadataError, match="expected a GroupSpec"):
        GroupSpec.from_json(doc)
    with pytest.raises(MetadataError, match="expected a ArraySpecV3"):
        ArraySpecV3.from_json(doc)


def test_members_inherit_the_format_and_zarr_version_is_read():
    doc = {"zarr_version": 2, "attributes": {}, "members": {"a": {**v2_array().to_json(), "zarr_format": 2}}}
    del doc["members"]["a"]["zarr_format"]
    spec = GroupSpec.from_json(doc)
    assert isinstance(spec, GroupSpecV2) and isinstance(spec.members["a"], ArraySpecV2)
    assert spec.to_json()["zarr_format"] == 2 and spec.to_json()["members"]["a"]["zarr_format"] == 2


def test_group_members_accept_json_and_refuse_mixed_formats():
    g = GroupSpecV3(members={"a": v3_array().to_json()})
    assert g.members["a"] == v3_array()
    with pytest.raises(MetadataError, match="a hierarchy has one format"):
        GroupSpecV3(members={"a": v2_array()})


def test_consolidated_metadata_is_not_structure():
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {}, "members": {},
           "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {}}}
    assert GroupSpec.from_json(doc).to_json() == {"zarr_format": 3, "node_type": "group", "attributes": {},
                                                  "members": {}}


# -- the members renaming rule (ZEP 6) ----------------------------------------------------------
def test_a_group_field_named_members_is_renamed():
    ext = {"must_understand": False, "value": 1}
    ext2 = {"must_understand": False, "value": 2}
    g = GroupSpecV3(extra_fields={"members": ext})
    assert g.to_json()["_members"] == ext and "members" in g.to_json()
    assert GroupSpec.from_json(g.to_json()) == g
    # the ZEP's example: both "members" and "_members" → "members" becomes "__members"
    g2 = GroupSpecV3(extra_fields={"members": ext, "_members": ext2})
    out = g2.to_json()
    assert out["__members"] == ext and out["_members"] == ext2 and out["members"] == {}
    assert GroupSpec.from_json(out) == g2
    assert g2.metadata_document()["members"] == ext  # the Zarr document has the real name


def test_v3_extension_fields_round_trip():
    ext = {"must_understand": False, "stuff": [1]}
    a = ArraySpec.from_json({**v3_array().to_json(), "my_ext": ext})
    assert dict(a.extra_fields) == {"my_ext": {"must_understand": False, "stuff": (1,)}}
    assert a.to_json()["my_ext"] == ext


# -- flat form --------------------------------------------------------------------------------
def make_tree(fmt=3):
    arr = v3_array if fmt == 3 else v2_array
    group = GroupSpecV3 if fmt == 3 else GroupSpecV2
    return group(attributes={"root": True}, members={
        "x": arr(),
        "sub": group(attributes={"level": 1}, members={"y": arr(shape=[3, 3]), "deep": group()}),
    })


@pytest.mark.parametrize("fmt", [2, 3])
def test_flat_form_round_trip(fmt):
    tree = make_tree(fmt)
    flat = tree.to_flat()
    assert list(flat) == ["/", "/x", "/sub", "/sub/y", "/sub/deep"]
    assert flat["/sub"].members == {} and flat["/sub"].attributes == {"level": 1}
    assert from_flat(flat) == tree
    assert GroupSpec.from_flat({k.lstrip("/"): v.to_json() for k, v in flat.items()}) == tree


def test_from_flat_creates_missing_groups_and_refuses_children_of_arrays():
    spec = from_flat({"/a/b/c": v3_array()})
    assert spec == GroupSpecV3(members={"a": GroupSpecV3(members={"b": GroupSpecV3(members={"c": v3_array()})})})
    with pytest.raises(MetadataError, match="below the array '/a'"):
        from_flat({"/a": v3_array(), "/a/b": v3_array()})
    with pytest.raises(MetadataError, match="one format"):
        from_flat({"/a": v3_array(), "/b": v2_array()})
    with pytest.raises(MetadataError, match="has members"):
        from_flat({"/": make_tree()})
    assert from_flat({"/": v3_array()}) == v3_array()  # a lone array


# -- equality, diff, like ------------------------------------------------------------------------
def test_equality_is_json_equality():
    assert v3_array(fill_value=1) == v3_array(fill_value=1.0)  # the same JSON number
    assert v3_array(attributes={"a": True}) != v3_array(attributes={"a": 1})  # true is not 1
    assert v3_array() != v2_array() and v3_array() != v3_array().to_json()


def test_diff_names_the_exact_path_and_field():
    a = make_tree()
    b = GroupSpecV3(attributes={"root": False}, members={
        "x": v3_array(shape=[10, 30]),
        "sub": GroupSpecV3(attributes={"level": 1}, members={"y": v3_array(shape=[3, 3], dimension_names=["a", "b"]),
                                                              "new": v3_array()}),
    })
    assert diff(a, a) == [] and a.diff(a.to_json()) == []
    d = diff(a, b)
    assert d == [
        Difference("/", "attributes.root", True, False),
        Difference("/x", "shape", [10, 20], [10, 30]),
        Difference("/sub/y", "dimension_names", ABSENT, ["a", "b"]),
        Difference("/sub/deep", "node", "group", ABSENT),
        Difference("/sub/new", "node", ABSENT, "array"),
    ]
    text = [str(x) for x in d]
    assert text[1] == "/x: field 'shape': [10, 20] != [10, 30]"
    assert text[3] == "/sub/deep: a group only on the left"
    assert text[4] == "/sub/new: an array only on the right"
    assert diff(v3_array(), make_tree()) == [Difference("/", "node_type", "array", "group")]
    assert diff(v3_array(), v2_array()) == [Difference("/", "zarr_format", 3, 2)]


def test_like_with_include_and_exclude():
    a = make_tree()
    b = a.replace(attributes={"root": "other"})
    assert a.like(a) and not a.like(b)
    assert a.like(b, exclude={"attributes"})
    assert a.like(b.to_json(), include={"members"})
    c = a.replace(members={**a.members, "x": a.members["x"].replace(attributes={"units": "m"})})
    assert not a.like(c, exclude={"attributes"})  # only the top level is excluded ...
    assert a.like(c, exclude={"attributes": True, "members": {"__all__": {"attributes"}}})  # ... unless nested
    assert a.members["x"].like(c.members["x"], exclude={"attributes"})
    assert not a.members["x"].like(c.members["x"], include=["attributes"])


# -- from_array -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, codecs", [
    ("<f8", [{"name": "bytes", "configuration": {"endian": "little"}}]),
    (">i4", [{"name": "bytes", "configuration": {"endian": "big"}}]),
    ("u1", [{"name": "bytes"}]),
])
def test_from_array_v3(dtype, codecs):
    spec = ArraySpec.from_array(np.zeros((4, 6), dtype), chunks=(2, 3), dimension_names=["y", "x"])
    assert isinstance(spec, ArraySpecV3)
    doc = spec.to_json()
    assert doc["codecs"] == codecs and doc["chunk_grid"]["configuration"]["chunk_shape"] == [2, 3]
    assert doc["dimension_names"] == ["y", "x"] and doc["fill_value"] == 0


def test_from_array_v2():
    spec = ArraySpec.from_array(np.zeros((4,), ">f4"), zarr_format=2, compressor={"id": "zstd", "level": 1})
    assert isinstance(spec, ArraySpecV2)
    assert spec.to_json() == {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": ">f4",
                              "compressor": {"id": "zstd", "level": 1}, "fill_value": 0.0, "order": "C",
                              "dimension_separator": ".", "filters": None, "attributes": {}}


def test_repr_is_readable():
    text = repr(make_tree())
    assert text.startswith("GroupSpecV3(attributes={'root': True}, members={'x': <array>, 'sub': <group>}")
    assert "dimension_names=UNSET" in repr(v3_array())
    assert isinstance(make_tree(), NodeSpec)
