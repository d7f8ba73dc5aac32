"""Strict reads through the xarray backend: read_missing_chunks=False makes a
missing chunk (or a shard's empty inner chunk) a ChunkNotFoundError, eager and
through dask (chunks={})."""

from __future__ import annotations

import os

import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import ChunkNotFoundError
from zarrdask.xarray import to_zarr

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::RuntimeWarning")

DATA = np.arange(1.0, 13 * 11 + 1).reshape(13, 11)


@pytest.fixture(params=[2, 3, "sharded"])
def damaged(request, tmp_path):
    path = tmp_path / "d.zarr"
    ds = xr.Dataset({"v": (("y", "x"), DATA), "w": (("x",), np.arange(11.0))})
    encoding = {"v": {"chunks": (4, 4)}}
    if request.param == "sharded":
        encoding = {"v": {"chunks": (2, 2), "shards": (4, 4)}}
    to_zarr(ds, path, encoding=encoding, zarr_format=2 if request.param == 2 else 3)
    v = zarrdask.open_array(path, path="v", mode="r+")
    if request.param == "sharded":
        v[4:6, 4:6] = v.fill_value  # the inner chunk (0, 0) of shard (1, 1): an empty index entry
        assert os.path.exists(path / "v" / "c/1/1")
    else:
        os.remove(path / v.layout.chunk_key((1, 1)))  # the key includes the array path
    return path


@pytest.mark.parametrize("chunks", [None, {}])
def test_open_dataset_strict(damaged, chunks):
    ds = xr.open_dataset(damaged, engine="zarrdask", read_missing_chunks=False, chunks=chunks)
    with pytest.raises(ChunkNotFoundError, match=r"array '/v'"):
        ds.v.values
    np.testing.assert_array_equal(ds.v[:4].values, DATA[:4])
    np.testing.assert_array_equal(ds.w.values, np.arange(11.0))
    lenient = xr.open_dataset(damaged, engine="zarrdask", chunks=chunks)
    assert lenient.v.values[5, 5] != DATA[5, 5]  # the fill value (NaN where it masks)


def test_open_datatree_strict(damaged):
    tree = xr.open_datatree(damaged, engine="zarrdask", read_missing_chunks=False)
    with pytest.raises(ChunkNotFoundError):
        tree["v"].values
