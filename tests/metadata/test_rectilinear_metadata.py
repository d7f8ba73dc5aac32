"""The rectilinear chunk grid's metadata (zarr-extensions chunk-grids/rectilinear)."""

from __future__ import annotations

import json

import pytest

from zarrdask._json import dumps
from zarrdask.errors import MetadataError
from zarrdask.metadata import ArrayMetadataV3

# the extension's "Example", with its "..." filled in as zarr-python 3.4 lays a document out
EXAMPLE_GRID = {
    "name": "rectilinear",
    "configuration": {
        "kind": "inline",
        "chunk_shapes": [
            4,
            [1, 2, 3],
            [[4, 2]],
            [[1, 3], 3],
            [4, 4, 4],
        ],
    },
}


def _doc(grid=EXAMPLE_GRID, shape=(6, 6, 6, 6, 6)) -> dict:
    return {
        "shape": list(shape),
        "data_type": "uint8",
        "chunk_grid": grid,
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
        "attributes": {},
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    }


def test_extension_example_expands_as_the_text_says():
    m = ArrayMetadataV3.from_json(_doc())
    assert m.chunk_grid_name == "rectilinear"
    assert m.chunk_shape == (4, (1, 2, 3), (4, 4), (1, 1, 1, 3), (4, 4, 4))


@pytest.mark.parametrize("indent", [None, 2, 4])
def test_extension_example_round_trips_byte_for_byte(indent):
    text = json.dumps(_doc(), indent=indent)
    again = json.dumps(ArrayMetadataV3.from_json(json.loads(text)).to_json(), indent=indent)
    assert again == text


def test_extension_example_round_trips_through_a_store(tmp_path):
    import zarrdask

    (tmp_path / "a").mkdir()
    raw = json.dumps(_doc(), indent=2).encode()
    (tmp_path / "a" / "zarr.json").write_bytes(raw)
    a = zarrdask.open_array(str(tmp_path / "a"), mode="r+")
    a.attrs.update({})  # rewrites zarr.json
    a.attrs.put({})
    assert (tmp_path / "a" / "zarr.json").read_bytes() == raw
    assert dumps(a._metadata.to_json()) == dumps(_doc())


def test_canonical_form_is_zarr_python_34s():
    from dataclasses import replace

    m = replace(ArrayMetadataV3.from_json(_doc()), _source=None)
    assert m.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == [
        4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [[4, 3]]]


@pytest.mark.parametrize("shapes, field, expected", [
    ([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4]], "chunk_shapes[4]", "summing to at least"),
    ([0, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4]], "chunk_shapes[0]", "positive integer"),
    ([4, [1, 2, -3], [[4, 2]], [[1, 3], 3], [4, 4]], "chunk_shapes[1][2]", "positive integer"),
    ([4, [1, 2, 3], [[4, 0]], [[1, 3], 3], [4, 4]], "chunk_shapes[2][0][1]", "repeat count"),
    ([4, [1, 2, 3], [[0, 2]], [[1, 3], 3], [4, 4]], "chunk_shapes[2][0][0]", "positive integer"),
    ([4, [1, 2, 3], [[4, 2, 1]], [[1, 3], 3], [4, 4]], "chunk_shapes[2][0]", "run-length pair"),
    ([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4.0, 4]], "chunk_shapes[4][0]", "positive integer"),
    ([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], "4"], "chunk_shapes[4]", "positive integer"),
    ([4, [1, 2, 3]], "chunk_shapes", "rank"),
    ([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], []], "chunk_shapes[4]", "summing to at least"),
])
def test_invalid_edges_name_the_field(shapes, field, expected):
    grid = {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": shapes}}
    with pytest.raises(MetadataError, match=r"zarr\.json: field 'chunk_grid\.configuration\." +
                       field.replace("[", r"\[").replace("]", r"\]")) as e:
        ArrayMetadataV3.from_json(_doc(grid))
    assert expected in str(e.value)


@pytest.mark.parametrize("conf, field", [
    ({"chunk_shapes": [1]}, "configuration.kind"),
    ({"kind": "external", "chunk_shapes": [1]}, "configuration.kind"),
    ({"kind": "inline"}, "configuration.chunk_shapes"),
    ({"kind": "inline", "chunk_shapes": [1], "extra": 1}, "configuration"),
])
def test_invalid_configuration(conf, field):
    with pytest.raises(MetadataError, match=f"field 'chunk_grid.{field}'"):
        ArrayMetadataV3.from_json(_doc({"name": "rectilinear", "configuration": conf}, shape=(6,)))


def test_empty_axis_is_valid_for_a_zero_length_dimension():
    grid = {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[]]}}
    m = ArrayMetadataV3.from_json(_doc(grid, shape=(0,)))
    assert m.chunk_shape == ((),)


def test_overflow_by_several_chunks_is_allowed():
    grid = {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[2, 2, 5, 5]]}}
    assert ArrayMetadataV3.from_json(_doc(grid, shape=(3,))).chunk_shape == ((2, 2, 5, 5),)


def test_json_schema_accepts_the_example_and_rejects_bad_edges():
    jsonschema = pytest.importorskip("jsonschema")
    from zarrdask.zom.schema import RECTILINEAR_CHUNK_GRID_SCHEMA

    jsonschema.validate(EXAMPLE_GRID, RECTILINEAR_CHUNK_GRID_SCHEMA)
    bad = json.loads(json.dumps(EXAMPLE_GRID))
    bad["configuration"]["chunk_shapes"][2] = [[4, 0]]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, RECTILINEAR_CHUNK_GRID_SCHEMA)
