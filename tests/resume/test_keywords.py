"""Unknown keyword arguments are a TypeError in every mode of every writer,
before anything is written (``resume`` itself included where it is not taken)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarrdask

from . import _sources as S


@pytest.fixture
def existing(tmp_path):
    path = tmp_path / "a.zarr"
    zarrdask.create_array(str(path), shape=(8, 8), dtype="f4", chunks=(4, 4), data=np.ones((8, 8), "f4"))
    return path


@pytest.mark.parametrize("mode", ["w", "w-", "a", "r+", None])
@pytest.mark.parametrize("resume", [False, True])
def test_dask_writer(existing, mode, resume):
    before = S.files(existing)
    x = da.zeros((8, 8), chunks=4, dtype="f4")
    with pytest.raises(TypeError, match="unexpected keyword arguments 'resumable'"):
        zarrdask.to_zarr(x, str(existing), mode=mode, resumable=True, resume=resume)
    with pytest.raises(TypeError, match="'bogus'"):
        zarrdask.to_zarr(x, zarrdask.open_array(str(existing), mode="r+"), bogus=1, resume=resume)
    assert S.files(existing) == before


@pytest.fixture
def group(tmp_path):
    path = tmp_path / "g.zarr"
    ds = xr.Dataset({"v": (("t",), np.arange(4.0))}, coords={"t": np.arange(4)})
    zarrdask.xarray.to_zarr(ds, str(path))
    return path, ds


@pytest.mark.parametrize("kwargs", [
    {"mode": "w"}, {"mode": "w-"}, {"mode": "a"}, {"mode": "a-"}, {"mode": "r+"},
    {"append_dim": "t"}, {"region": {"t": slice(0, 4)}}, {},
], ids=lambda k: "-".join(map(str, k.values())) or "default")
def test_dataset_writer(group, kwargs):
    path, ds = group
    before = S.files(path)
    with pytest.raises(TypeError, match="resumable"):
        zarrdask.xarray.to_zarr(ds, str(path), resumable=True, **kwargs)
    with pytest.raises(TypeError, match="resumable"):
        ds.zarrdask.to_zarr(str(path), resumable=True, **kwargs)
    with pytest.raises(TypeError, match="resumable"):
        zarrdask.xarray.to_zarr(ds["v"], str(path), resumable=True, **kwargs)
    assert S.files(path) == before


def test_rechunk(existing, tmp_path):
    with pytest.raises(TypeError, match="resumable"):
        zarrdask.rechunk(str(existing), (8, 1), str(tmp_path / "t.zarr"), max_mem="1MB", resumable=True)
    plan = zarrdask.rechunk(str(existing), (8, 1), str(tmp_path / "t.zarr"), max_mem="1MB")
    with pytest.raises(TypeError, match="'resume'.*zarrdask.rechunk"):
        plan.execute(resume=True)
    assert not (tmp_path / "t.zarr").exists()
