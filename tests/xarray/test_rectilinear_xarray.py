"""xarray: irregular chunks through the backend (preferred_chunks, encoding) and the writer."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import AlignmentWarning
from zarrdask.xarray import to_zarr

MONTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _ds(seed=0):
    x = da.random.default_rng(seed).random((365, 20), chunks=(MONTHS, (10, 10)))
    return xr.Dataset({"t": (("time", "lon"), x)}, coords={"time": np.arange(365)})


def test_writer_chunks_dask_and_backend_preferred_chunks(tmp_path):
    ds = _ds()
    path = str(tmp_path / "d.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("error", AlignmentWarning)
        to_zarr(ds, path, encoding={"t": {"chunks": "dask"}})
    a = zarrdask.open_array(path, path="t")
    assert a.chunk_grid == "rectilinear" and a.chunks == (MONTHS, (10, 10))
    back = xr.open_dataset(path, engine="zarrdask", chunks={})
    assert back.t.encoding["preferred_chunks"] == {"time": MONTHS, "lon": 10}
    # as engine="zarr" reports a rectilinear grid: an int for a regular axis, else the edges
    assert back.t.encoding["chunks"] == (MONTHS, 10)
    assert back.t.chunks == ds.t.chunks
    xr.testing.assert_equal(back.compute(), ds.compute())


def test_encoding_round_trips_through_the_writer(tmp_path):
    to_zarr(_ds(1), str(tmp_path / "a.zarr"), encoding={"t": {"chunks": "dask"}})
    back = xr.open_dataset(str(tmp_path / "a.zarr"), engine="zarrdask", chunks={})
    to_zarr(back, str(tmp_path / "b.zarr"))  # the encoding's irregular chunks are kept
    assert zarrdask.open_array(str(tmp_path / "b.zarr"), path="t").chunks == (MONTHS, (10, 10))


def test_explicit_edges_in_encoding(tmp_path):
    ds = _ds(2).compute()
    to_zarr(ds, str(tmp_path / "c.zarr"), encoding={"t": {"chunks": (MONTHS, 20)}})
    assert zarrdask.open_array(str(tmp_path / "c.zarr"), path="t").chunks == (MONTHS, (20,))


def test_shards_dask(tmp_path):
    to_zarr(_ds(3), str(tmp_path / "s.zarr"), encoding={"t": {"shards": "dask", "chunks": (1, 10)}})
    a = zarrdask.open_array(str(tmp_path / "s.zarr"), path="t")
    assert a.shards == (MONTHS, (10, 10)) and a.chunks == (1, 10)


def test_bad_encoding_chunks_are_named():
    with pytest.raises(TypeError, match="encoding\\['chunks'\\]"):  # xarray's type
        to_zarr(_ds(4), zarrdask.storage.MemoryStore(), encoding={"t": {"chunks": ("a", 2)}})


def test_append_dim_adds_an_edge(tmp_path):
    ds = _ds(5)
    path = str(tmp_path / "a.zarr")
    to_zarr(ds, path, encoding={"t": {"chunks": "dask"}})
    more = xr.Dataset({"t": (("time", "lon"), da.random.default_rng(6).random((30, 20), chunks=(30, 10)))},
                      coords={"time": np.arange(365, 395)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", AlignmentWarning)
        to_zarr(more, path, append_dim="time")
    a = zarrdask.open_array(path, path="t")
    assert a.chunks == (MONTHS + (30,), (10, 10))
    np.testing.assert_array_equal(a[...], np.concatenate([ds.t.values, more.t.values]))
