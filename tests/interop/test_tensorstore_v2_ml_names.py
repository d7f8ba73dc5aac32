"""Zarr v2 arrays that tensorstore's ``zarr`` driver writes with ``ml_dtypes`` types: it
writes the type's name as the v2 ``dtype`` (``"bfloat16"``), which zarrdask reads;
writing such a type to v2 is a typed error that says to use v3."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import zarrdask
from zarrdask.errors import UnknownDataTypeError

ts = pytest.importorskip("tensorstore")

NAMES = ["bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float4_e2m1fn", "int4", "int2"]


@pytest.mark.parametrize("name", NAMES)
def test_tensorstore_v2_names_read(tmp_path, name):
    path = tmp_path / f"{name}.zarr"
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(path)},
                 "metadata": {"chunks": [3], "compressor": None}}, create=True, dtype=name, shape=[7]).result()
    values = np.array([1, -1, 0, 1, -2, 0, 1]).astype(getattr(ml_dtypes, name))
    t[:5] = values[:5]
    assert json.loads((path / ".zarray").read_text())["dtype"] == name
    a = zarrdask.open_array(str(path))
    assert a.dtype == np.dtype(getattr(ml_dtypes, name))
    got = a[:5]
    assert got.tobytes() == values[:5].tobytes()


def test_v2_write_of_ml_dtype_is_a_typed_error(tmp_path):
    path = tmp_path / "x.zarr"
    with pytest.raises(UnknownDataTypeError, match="'bfloat16'.*no Zarr v2 encoding.*zarr_format=3"):
        zarrdask.create_array(str(path), shape=(4,), dtype=ml_dtypes.bfloat16, zarr_format=2)
    assert not path.exists() or not any(path.iterdir())
    for dtype in ("float8_e5m2", "int4", "complex_bfloat16"):
        with pytest.raises(UnknownDataTypeError, match="no Zarr v2 encoding"):
            zarrdask.create_array(str(tmp_path / f"{dtype}.zarr"), shape=(4,), dtype=dtype, zarr_format=2)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, "float8_e5m2", "int4"])
def test_create_array_takes_ml_dtypes_and_names(tmp_path, dtype):
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(5,), dtype=dtype, chunks=(2,))
    values = np.array([1, -2, 3, 0, -1]).astype(np.dtype(dtype))
    a[:] = values
    b = zarrdask.open_array(str(tmp_path / "a.zarr"))
    assert b.dtype == np.dtype(dtype) and b[:].tobytes() == values.tobytes()
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    assert json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())["data_type"] == name
