"""String variables: engine="zarrdask" gives what engine="zarr" gives, v2 and v3."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::RuntimeWarning")

T = np.dtypes.StringDType()
WORDS = ["a", "bé", "", "x" * 5000, "中文", "😀"]


def _open_both(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (xr.open_dataset(path, engine="zarrdask", **kw),
                xr.open_dataset(path, engine="zarr", consolidated=False, **kw))


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("flavour", ["object", "StringDType", "fixed"])
def test_string_variables_written_by_xarray(tmp_path, fmt, flavour):
    values = {"object": np.array(WORDS, dtype=object), "StringDType": np.array(WORDS, dtype=T),
              "fixed": np.array(WORDS)}[flavour]
    ds = xr.Dataset({"s": ("x", values), "n": ("x", np.arange(6.0))}, coords={"x": np.arange(6)})
    ds["s"].encoding["chunks"] = (4,)
    path = tmp_path / "d.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, consolidated=False)
    for kw in ({}, {"chunks": {}}):
        ours, theirs = _open_both(path, **kw)
        assert ours["s"].dtype == theirs["s"].dtype
        assert ours["s"].attrs == theirs["s"].attrs
        xr.testing.assert_identical(ours.load(), theirs.load())
        assert ours["s"].values.tolist() == WORDS


@pytest.mark.parametrize("fmt", [2, 3])
def test_partly_written_string_array_from_zarr_python(tmp_path, fmt):
    """Missing chunks read as the fill value; the fill value is handled as engine="zarr" does."""
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "d.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(str(path), mode="w", zarr_format=fmt)
        kw = {"dimension_names": ["x"]} if fmt == 3 else {}
        a = g.create_array("s", shape=(8,), chunks=(3,), dtype=str, fill_value="", **kw)
        if fmt == 2:
            a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
        a[0:2] = ["p", "é"]
        a[6] = "z"
    ours, theirs = _open_both(path)
    xr.testing.assert_identical(ours.load(), theirs.load())
