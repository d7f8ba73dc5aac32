"""check(): the ZOM schema, templates (ZOM documents and JSON Schemas) and value rules."""

from __future__ import annotations

import json

import numpy as np

import zarrdask
from zarrdask.storage import MemoryStore
from zarrdask.zom import (
    DEFAULT_RULES,
    ArraySpec,
    GroupSpecV2,
    GroupSpecV3,
    Problem,
    Report,
    Rule,
    check,
    consistent_dimension_sizes,
    from_zarr,
    require_dimension_names,
)


def xarray_like_v2(store, temp_dims=("y", "x")):
    g = zarrdask.group(store, zarr_format=2, attributes={"title": "demo"})
    g.create_array("temp", shape=(3, 4), dtype="f4", chunks=(3, 4), attributes={"_ARRAY_DIMENSIONS": list(temp_dims)})
    g.create_array("x", shape=(4,), dtype="f8", chunks=(4,), attributes={"_ARRAY_DIMENSIONS": ["x"]})
    g.create_array("y", shape=(5,), dtype="f8", chunks=(5,), attributes={"_ARRAY_DIMENSIONS": ["y"]})
    g.create_array("raw", shape=(2,), dtype="u1", chunks=(2,))
    return g


def test_a_good_hierarchy_is_ok():
    store = MemoryStore()
    xarray_like_v2(store)
    report = check(store)
    assert report.ok and bool(report) and report.problems == () and report.checked == 5
    assert str(report) == "OK (5 node(s) checked, no problems)"
    assert report.to_json() == {"ok": True, "checked": 5, "problems": []}


def test_dimension_names_rule_v2():
    store = MemoryStore()
    xarray_like_v2(store, temp_dims=("x",))
    report = check(store)
    assert not report.ok
    assert report.problems == (Problem(
        "/temp", "dimension-names",
        "attribute '_ARRAY_DIMENSIONS' has 1 name(s) ['x'], expected 2 (one per dimension of shape [3, 4])"),)
    assert str(report).splitlines() == [
        "1 problem(s) in 5 node(s):",
        ("  /temp: [dimension-names] attribute '_ARRAY_DIMENSIONS' has 1 name(s) ['x'], expected 2 "
         "(one per dimension of shape [3, 4])"),
    ]


def test_dimension_names_rule_v3_on_a_spec():
    """v3 metadata with the wrong number of names cannot even be stored; a spec can be checked."""
    arr = ArraySpec.from_array(np.zeros((3, 4)), dimension_names=["a", "b", "c"])
    report = check(GroupSpecV3(members={"t": arr}))
    assert [str(p) for p in report.problems] == [
        ("/t: [dimension-names] dimension_names has 3 name(s) ['a', 'b', 'c'], expected 2 "
         "(one per dimension of shape [3, 4])")]
    assert check(arr.replace(dimension_names=["a", None])).ok


def test_dimension_names_must_be_strings():
    store = MemoryStore()
    zarrdask.create_array(store, shape=(2,), dtype="i1", chunks=(2,), zarr_format=2,
                          attributes={"_ARRAY_DIMENSIONS": [1]})
    (problem,) = check(store).problems
    assert problem.path == "/" and "expected a list of names (strings)" in problem.message


def test_xarray_rules():
    store = MemoryStore()
    xarray_like_v2(store)
    zarrdask.open_array(store, path="y").attrs["_ARRAY_DIMENSIONS"] = ["y"]
    g = zarrdask.open_group(store)
    g.create_array("bad", shape=(7,), dtype="f4", chunks=(7,), attributes={"_ARRAY_DIMENSIONS": ["x"]})
    report = check(store, rules=[*DEFAULT_RULES, require_dimension_names, consistent_dimension_sizes])
    assert [str(p) for p in report.problems] == [
        "/: [dimension-sizes] dimension 'x' has different sizes: 7 in 'bad', 4 in 'temp', 4 in 'x'",
        "/: [dimension-sizes] dimension 'y' has different sizes: 3 in 'temp', 5 in 'y'",
        "/raw: [require-dimension-names] the array has no attribute '_ARRAY_DIMENSIONS'",
    ]


def test_custom_rule():
    def no_big_chunks(path, node):
        if isinstance(node, ArraySpec) and node.zarr_format == 2 and np.prod(node.chunks) > 4:
            yield f"chunks {list(node.chunks)} hold more than 4 elements"

    store = MemoryStore()
    xarray_like_v2(store)
    report = check(store, rules=[Rule("small-chunks", no_big_chunks)])
    assert [p.path for p in report.problems] == ["/temp", "/y"]
    assert all(p.rule == "small-chunks" for p in report.problems)


def test_partial_zom_template():
    store = MemoryStore()
    xarray_like_v2(store)
    template = {"zarr_format": 2, "attributes": {"title": "demo"}, "members": {
        "temp": {"shape": [3, 4], "dtype": "<f4", "attributes": {"_ARRAY_DIMENSIONS": ["y", "x"]}},
        "x": {"shape": [4]},
    }}
    assert check(store, template).ok
    template["members"]["temp"]["dtype"] = "<f8"
    template["members"]["x"]["attributes"] = {"units": "m"}
    template["members"]["missing"] = {"shape": [1]}
    template["members"]["raw"] = {"members": {}}
    template["attributes"]["title"] = "other"
    report = check(store, template)
    assert [str(p) for p in report.problems] == [
        "/: [template] attribute 'title' is 'demo', the template expects 'other'",
        "/temp: [template] field 'dtype' is '<f4', the template expects '<f8'",
        "/x: [template] attribute 'units' is missing, the template expects 'm'",
        "/missing: [template] missing: the template expects an array here",
        "/raw: [template] an array, the template expects a group",
    ]
    report = check(store, {"zarr_format": 3})
    assert [str(p) for p in report.problems] == ["/: [template] a v2 group, the template expects zarr_format 3"]


def test_spec_template_exact_and_from_file(tmp_path):
    store = MemoryStore()
    xarray_like_v2(store)
    spec = from_zarr(store)
    assert check(store, spec, exact=True).ok
    path = tmp_path / "template.json"
    path.write_text(json.dumps(spec.replace(attributes={"title": "other"}).to_json()))
    report = check(store, str(path), exact=True)
    assert [str(p) for p in report.problems] == ["/: [template] field 'attributes.title': 'other' != 'demo'"]
    report = check(store, path)
    assert [str(p) for p in report.problems] == [
        "/: [template] attribute 'title' is 'demo', the template expects 'other'"]


def test_json_schema_template():
    """The ZEP's xarray example: every array must have _ARRAY_DIMENSIONS, as a JSON Schema."""
    store = MemoryStore()
    xarray_like_v2(store)
    template = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"members": {"additionalProperties": {
            "if": {"required": ["shape"]},
            "then": {"properties": {"attributes": {"required": ["_ARRAY_DIMENSIONS"]}}},
        }}},
    }
    report = check(store, template)
    assert [str(p) for p in report.problems] == [
        "/raw: [template-schema] /members/raw/attributes: '_ARRAY_DIMENSIONS' is a required property"]


def test_schema_problems_are_reported():
    spec = GroupSpecV2(members={"a": {"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|u1",
                                      "compressor": None, "fill_value": 0, "order": "C", "filters": {}}})
    report = check(spec)
    assert [str(p) for p in report.problems] == [
        "/a: [schema] /members/a/filters: {} is not of type 'array'"]
    assert check(spec, schema=False).ok


def test_paths_and_unreadable_hierarchies(tmp_path):
    store = MemoryStore()
    xarray_like_v2(store)
    sub = check(store, path="temp")
    assert sub.ok and sub.checked == 1
    target = tmp_path / "missing.zarr"
    report = check(str(target))
    assert not report.ok and report.problems[0].rule == "read" and str(target) in str(report)
    bad = MemoryStore()
    bad.set("zarr.json", b'{"zarr_format": 3, "node_type": "array"}')
    (problem,) = check(bad).problems
    assert problem.rule == "read" and "shape" in problem.message


def test_report_is_a_value():
    r = Report((Problem("/a", "r", "m"),), 3, "x.zarr")
    assert str(r) == "x.zarr: 1 problem(s) in 3 node(s):\n  /a: [r] m"
    assert not r and r.to_json()["problems"] == [{"path": "/a", "rule": "r", "message": "m"}]
    assert isinstance(check(GroupSpecV2()), Report)


def test_exact_with_a_partial_template_says_so():
    import pytest

    import zarrdask
    from zarrdask.errors import MetadataError
    from zarrdask.storage import MemoryStore
    from zarrdask.zom import check

    store = MemoryStore()
    zarrdask.open_group(store, mode="w")
    with pytest.raises(MetadataError, match="complete ZOM document"):
        check(store, template={"members": {}}, exact=True)
