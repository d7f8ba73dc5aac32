"""engine="zarrdask" gives what xarray's own engine="zarr" gives, lazily."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import zarrdask
from zarrdask.storage import LocalStore

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::RuntimeWarning")


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(0)
    time = pd.date_range("2000-01-01", periods=8, freq="D")
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), (rng.random((8, 6, 4)) * 30).astype("f4"), {"units": "K"}),
            "packed": (("y", "x"), rng.random((6, 4)) * 10),
            "count": (("x",), np.array([1, 2, -9, 4], "i2")),
            "flag": (("x",), np.array([True, False, True, False])),
            "wait": (("time",), pd.to_timedelta(np.arange(8), "h")),
            "code": (("x",), np.array([b"ab", b"cd", b"ef", b"gh"])),
            "lat": (("y",), np.linspace(-10, 10, 6), {"standard_name": "latitude"}),
        },
        coords={"time": time, "x": [10, 20, 30, 40]},
        attrs={"title": "test", "history": "made in a test"},
    )
    ds = ds.set_coords("lat")
    ds["count"].encoding["_FillValue"] = -9
    ds["packed"].encoding.update(dtype="i2", scale_factor=0.01, add_offset=1.0, _FillValue=-32768)
    ds["temp"][0, 0, 0] = np.nan
    return ds


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_identical_to_xarrays_engine(tmp_path, zarr_format, consolidated):
    path = tmp_path / "ds.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _dataset().to_zarr(path, zarr_format=zarr_format, consolidated=consolidated, mode="w")
    ref = xr.open_dataset(path, engine="zarr", consolidated=consolidated)
    ours = xr.open_dataset(path, engine="zarrdask")
    xr.testing.assert_identical(ref, ours)
    xr.testing.assert_identical(
        xr.open_dataset(path, engine="zarr", chunks={}).compute(),
        xr.open_dataset(path, engine="zarrdask", chunks={}).compute(),
    )
    for kwargs in ({"mask_and_scale": False}, {"decode_times": False}, {"decode_coords": False},
                   {"drop_variables": ["flag"]}):
        xr.testing.assert_identical(xr.open_dataset(path, engine="zarr", **kwargs),
                                    xr.open_dataset(path, engine="zarrdask", **kwargs))
    # outer and vectorised indexing through the lazy backend array
    sel = {"time": [5, 1, 1], "x": slice(None, None, 2)}
    xr.testing.assert_identical(ref.isel(sel), ours.isel(sel))
    vec = {"y": xr.DataArray([0, 3, 5], dims="p"), "x": xr.DataArray([1, 0, 3], dims="p")}
    xr.testing.assert_identical(ref.temp.isel(vec), ours.temp.isel(vec))


def test_variables_share_the_chunk_sizes_of_an_axis_of_many_chunks(tmp_path):
    from zarrdask.xarray.backend import SHARED_EDGES_FROM

    steps = SHARED_EDGES_FROM + 5  # one chunk per step, so the time axis has SHARED_EDGES_FROM + 5 chunks
    root = zarrdask.open_group(tmp_path / "many.zarr", mode="w")
    for name in ("a", "b"):
        root.create_array(name, shape=(steps, 6), dtype="f4", chunks=(1, 4), fill_value=float("nan"),
                          dimension_names=["time", "x"])
    root.create_array("few", shape=(SHARED_EDGES_FROM - 1, 3), dtype="i2", chunks=(1, 3), fill_value=0,
                      dimension_names=["t2", "y"])
    root["a"][steps - 2 :, :] = np.arange(12, dtype="f4").reshape(2, 6)
    ds = xr.open_dataset(tmp_path / "many.zarr", engine="zarrdask", chunks={})
    edges = ds.a.encoding["preferred_chunks"]["time"]
    assert edges == (1,) * steps and ds.a.encoding["preferred_chunks"]["x"] == 4
    # one object for both variables, and it is dask's chunks along time
    assert ds.b.encoding["preferred_chunks"]["time"] is edges
    assert ds.a.chunks[0] is edges and ds.b.chunks[0] is edges
    assert ds.a.chunks[1] == (4, 2)
    # below the threshold: an int, as engine="zarr" gives
    assert ds.few.encoding["preferred_chunks"] == {"t2": 1, "y": 3}
    np.testing.assert_array_equal(ds.a[steps - 3 :].values, np.r_[np.full((1, 6), np.nan, "f4"),
                                                                     np.arange(12, dtype="f4").reshape(2, 6)])
    # a second open shares the same tuple (dask's offsets of the axis are remembered across opens)
    again = xr.open_dataset(tmp_path / "many.zarr", engine="zarrdask", chunks={})
    assert again.a.chunks[0] is edges
    # explicit chunks still win, and give no warning about breaking the preferred ones
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        five = xr.open_dataset(tmp_path / "many.zarr", engine="zarrdask", chunks={"time": 5}, consolidated=False)
        assert five.a.chunks[0][:2] == (5, 5)


def test_dask_chunks_follow_shards(tmp_path):
    path = tmp_path / "sharded.zarr"
    data = np.arange(64 * 48, dtype="f4").reshape(64, 48)
    root = zarrdask.open_group(path, mode="w")
    root.create_array("v", shape=data.shape, dtype="f4", chunks=(8, 8), shards=(32, 16),
                      dimension_names=["y", "x"], data=data)
    ds = xr.open_dataset(path, engine="zarrdask", chunks={})
    assert ds.v.chunks == ((32, 32), (16, 16, 16))
    assert ds.v.encoding["shards"] == (32, 16) and ds.v.encoding["chunks"] == (8, 8)
    assert ds.v.encoding["preferred_chunks"] == {"y": 32, "x": 16}
    np.testing.assert_array_equal(ds.v.values, data)
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr"), xr.open_dataset(path, engine="zarrdask"))


class RecordingStore(LocalStore):
    """A LocalStore that records every key read."""

    def __init__(self, root):
        super().__init__(root, read_only=True)
        self.read_keys: list[str] = []

    def get_many(self, keys):
        self.read_keys.extend(keys)
        return super().get_many(keys)

    def get_ranges(self, key, ranges):
        self.read_keys.append(key)
        return super().get_ranges(key, ranges)


def test_opening_reads_no_chunk(tmp_path):
    path = tmp_path / "lazy.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _dataset().to_zarr(path, zarr_format=3, mode="w", consolidated=False)
    store = RecordingStore(path)
    ds = xr.open_dataset(store, engine="zarrdask")
    # besides metadata, only the dimension coordinates xarray turns into indexes are read
    data_reads = {k.split("/")[0] for k in store.read_keys
                  if not k.endswith(("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"))}
    assert data_reads <= {"time", "x"}
    ds["count"].values
    assert "count/c/0" in store.read_keys


def test_missing_dimension_names_is_a_clear_error(tmp_path):
    path = tmp_path / "nodims.zarr"
    root = zarrdask.open_group(path, mode="w", zarr_format=2)
    root.create_array("anon", shape=(3,), dtype="i1", chunks=(3,))
    with pytest.raises(KeyError, match="'/anon'.*_ARRAY_DIMENSIONS"):
        xr.open_dataset(path, engine="zarrdask")


def test_groups_and_datatree(tmp_path):
    path = tmp_path / "tree.zarr"
    ds = _dataset()[["temp", "count"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", zarr_format=3)
        ds.isel(time=slice(0, 2)).rename(time="t2", x="x2").to_zarr(path, group="sub/inner", mode="w",
                                                                     zarr_format=3)
    groups = xr.open_groups(path, engine="zarrdask")
    assert set(groups) >= {"/", "/sub/inner"}
    tree = xr.open_datatree(path, engine="zarrdask")
    xr.testing.assert_identical(tree["sub/inner"].to_dataset(inherit=False),
                                xr.open_dataset(path, group="sub/inner", engine="zarr"))
    xr.testing.assert_identical(xr.open_dataset(path, group="sub/inner", engine="zarrdask"),
                                xr.open_dataset(path, group="sub/inner", engine="zarr"))


def test_guess_can_open(tmp_path):
    from zarrdask.xarray import ZarrdaskBackendEntrypoint

    path = tmp_path / "g"
    zarrdask.open_group(path, mode="w")
    entry = ZarrdaskBackendEntrypoint()
    assert entry.guess_can_open(str(path)) and entry.guess_can_open("s3://bucket/x.zarr")
    assert not entry.guess_can_open(str(tmp_path / "nothing"))


def test_backend_arrays_pickle_and_read_from_threads(tmp_path):
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "p.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _dataset().to_zarr(path, zarr_format=3, mode="w")
    ds = xr.open_dataset(path, engine="zarrdask")
    lazy = ds["temp"].variable._data
    back = pickle.loads(pickle.dumps(lazy))
    np.testing.assert_array_equal(np.asarray(back), np.asarray(lazy))
    chunked = pickle.loads(pickle.dumps(xr.open_dataset(path, engine="zarrdask", chunks={})))
    xr.testing.assert_identical(chunked.compute(), ds.compute())
    expected = ds["temp"].values
    with ThreadPoolExecutor(8) as pool:
        parts = list(pool.map(lambda i: ds["temp"].isel(time=i).values, range(8)))
    np.testing.assert_array_equal(np.stack(parts), expected)
