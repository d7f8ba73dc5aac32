"""The ZOM with the small data types (bfloat16, float8/6/4, int2/int4/uint2/uint4,
complex_bfloat16 …): specs from arrays name them, round-trip through JSON and
through a store, and the JSON Schema takes them."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import UnknownDataTypeError
from zarrdask.metadata.dtypes import normalize_dtype
from zarrdask.zom import ArraySpec, ArraySpecV3, GroupSpec, GroupSpecV3, from_flat, schema_errors, validate_json

NAMES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e2m3fn", "float4_e2m1fn",
         "int4", "uint4", "int2", "uint2", "complex_bfloat16", "complex_float4_e2m1fn", "complex_float16"]


@pytest.mark.parametrize("name", NAMES)
def test_spec_from_an_array_names_the_data_type(name):
    dtype = normalize_dtype(name)
    spec = ArraySpec.from_array(np.zeros((6, 4), dtype), chunks=(3, 2), attributes={"units": "1"})
    assert isinstance(spec, ArraySpecV3) and spec.data_type == name
    doc = spec.to_json()
    assert doc["data_type"] == name and schema_errors(doc) == []
    again = ArraySpec.from_json(json.loads(json.dumps(doc)))
    assert again == spec and again.to_json() == doc
    # the fill value is the type's own default, in its JSON form
    assert doc["fill_value"] == ("0x00" if name == "float8_e8m0fnu" else [0.0, 0.0] if name.startswith("complex")
                                 else 0 if "int" in name else 0.0)


@pytest.mark.parametrize("name", ["bfloat16", "int4", "complex_bfloat16"])
def test_spec_through_a_store(tmp_path, name):
    dtype = normalize_dtype(name)
    spec = ArraySpec.from_array(np.zeros((8,), dtype), chunks=(4,), fill_value=np.ones((), dtype)[()])
    group = from_flat({"/": GroupSpecV3(attributes={"title": "t"}), "/a": spec})
    assert schema_errors(group.to_json()) == []
    group.to_zarr(str(tmp_path / "g.zarr"))
    array = zarrdask.open_array(str(tmp_path / "g.zarr"), path="a")
    assert array.dtype == dtype
    assert np.asarray(array.fill_value).tobytes() == np.ones((), dtype).tobytes()
    assert GroupSpec.from_zarr(zarrdask.open_group(str(tmp_path / "g.zarr"))) == group
    assert ArraySpec.from_zarr(array) == spec
    assert ArraySpec.from_array(array).data_type == name


@pytest.mark.parametrize(("name", "fill"), [("bfloat16", "NaN"), ("bfloat16", "0x7fc0"), ("float8_e5m2", "-Infinity"),
                                            ("int4", -8), ("uint2", 3), ("complex_bfloat16", ["NaN", 1.5]),
                                            ("complex_bfloat16", ["0x7fc0", "Infinity"])])
def test_the_json_schema_takes_the_small_types(name, fill):
    doc = ArraySpec.from_array(np.zeros((2,), "f4")).to_json()
    doc.update(data_type=name, fill_value=fill)
    validate_json(doc)
    spec = ArraySpec.from_json(doc)
    assert spec.data_type == name and spec.to_json() == doc


def test_zarr_v2_is_a_typed_error():
    for name in ("bfloat16", "int4", "complex_bfloat16"):
        with pytest.raises(UnknownDataTypeError, match=rf"'{name}'.*zarr_format=3"):
            ArraySpec.from_array(np.zeros((2,), normalize_dtype(name)), zarr_format=2)
