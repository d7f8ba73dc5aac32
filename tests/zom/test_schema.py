"""The ZOM JSON Schemas: valid schemas, the ZEP's examples, the corrections."""

from __future__ import annotations

import json

import jsonschema
import pytest

from zarrdask.errors import MetadataError, SpecValidationError
from zarrdask.zom import GroupSpec, json_schema, schema_errors, validate_json

from ._zep import ZEP_V2_GROUP, ZEP_V3_GROUP


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("node_type", ["group", "array"])
def test_schemas_are_valid_json_schemas(fmt, node_type):
    schema = json_schema(fmt, node_type)
    jsonschema.validators.validator_for(schema).check_schema(schema)
    schema["mutated"] = True
    assert "mutated" not in json_schema(fmt, node_type)  # a fresh copy each time


def test_schema_arguments():
    with pytest.raises(ValueError):
        json_schema(4)
    with pytest.raises(ValueError):
        json_schema(3, "dataset")


def test_zep_v3_example_validates():
    doc = json.loads(ZEP_V3_GROUP)
    assert schema_errors(doc) == []
    validate_json(doc)
    GroupSpec.from_json(doc).validate()


def test_zep_v2_example_breaks_its_own_schema_only_at_filters():
    """The ZEP's v2 example has ``"filters": {}``; the v2 spec says null or a list."""
    doc = json.loads(ZEP_V2_GROUP)
    assert schema_errors(doc) == ["/members/foo/filters: {} is not of type 'array'"]
    with pytest.raises(SpecValidationError) as info:
        GroupSpec.from_json(doc).validate()
    assert info.value.errors == ("/members/foo/filters: {} is not of type 'array'",)
    assert isinstance(info.value, MetadataError)
    doc["members"]["foo"]["filters"] = None
    assert schema_errors(doc) == []


V2_ARRAY = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "compressor": {"id": "zstd", "level": 0},
            "fill_value": "NaN", "order": "C", "filters": None, "dimension_separator": ".", "attributes": {}}
V3_ARRAY = {"zarr_format": 3, "node_type": "array", "attributes": {}, "shape": [4], "data_type": "float64",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": "NaN", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "storage_transformers": []}


@pytest.mark.parametrize("change", [
    {"codecs": [{"name": "bytes"}]},  # configuration optional (v3 core)
    {"codecs": ["bytes"]},  # short-hand name
    {"data_type": {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}},
    {"data_type": "complex128", "fill_value": ["NaN", 0.0]},
    {"data_type": {"name": "struct", "configuration": {"fields": []}}, "fill_value": {"a": 1}},
    {"dimension_names": ["x", None]},
    {"my_extension": {"must_understand": False, "x": 1}},
])
def test_v3_corrections_accept_valid_documents(change):
    assert schema_errors({**V3_ARRAY, **change}, 3) == []


@pytest.mark.parametrize("change, error", [
    # jsonschema's wording: "should be non-empty" from 4.21, "is too short" before
    ({"codecs": []}, ("/codecs: [] should be non-empty", "/codecs: [] is too short")),
    ({"shape": [-1]}, "/shape/0: -1 is less than the minimum of 0"),
    ({"node_type": "group"}, "/node_type: 'array' was expected"),
    ({"my_extension": {"x": 1}}, "/my_extension: 'must_understand' is a required property"),
    ({"dimension_names": [1]}, "/dimension_names/0: 1 is not of type 'string', 'null'"),
])
def test_v3_schema_errors(change, error):
    found = schema_errors({**V3_ARRAY, **change}, 3)
    assert found == [error] or isinstance(error, tuple) and len(found) == 1 and found[0] in error


@pytest.mark.parametrize("change", [
    {"compressor": None},
    {"filters": [{"id": "delta", "dtype": "<f8"}]},
    {"dtype": [["a", "<i4"], ["b", "<f8", [2, 2]], ["c", [["d", "|u1"]]]]},
    {"dimension_separator": "/"},
])
def test_v2_corrections_accept_valid_documents(change):
    assert schema_errors({**V2_ARRAY, **change}, 2) == []


@pytest.mark.parametrize("change, error", [
    ({"compressor": {"level": 1}}, "/compressor: 'id' is a required property"),
    ({"order": "K"}, "/order: 'K' is not one of ['C', 'F']"),
    ({"zarr_version": 2}, "/: Additional properties are not allowed ('zarr_version' was unexpected)"),
    ({"chunks": [0]}, "/chunks/0: 0 is less than the minimum of 1"),
])
def test_v2_schema_errors(change, error):
    assert schema_errors({**V2_ARRAY, **change}, 2) == [error]


def test_v2_requires_fill_value_and_attributes():
    doc = {k: v for k, v in V2_ARRAY.items() if k not in ("fill_value", "attributes")}
    assert schema_errors(doc, 2) == ["/: 'attributes' is a required property", "/: 'fill_value' is a required property"]


def test_errors_point_inside_members():
    group = {"zarr_format": 3, "node_type": "group", "attributes": {},
             "members": {"g": {"attributes": {}, "members": {"a": {**V3_ARRAY, "shape": "x"}}}}}
    assert schema_errors(group) == ["/members/g/members/a/shape: 'x' is not of type 'array'"]
