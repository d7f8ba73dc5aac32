"""The Dataset writer ``zarrdask.xarray.to_zarr`` (and ``ds.zarrdask.to_zarr``):
what it stores is what xarray's own ``Dataset.to_zarr`` stores."""

from __future__ import annotations

import json
import warnings

import dask.array as da
import numcodecs
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from dask.delayed import Delayed

import zarrdask
from zarrdask.dask.alignment import is_aligned
from zarrdask.errors import ContainsGroupError
from zarrdask.storage import MemoryStore
from zarrdask.storage.wrappers import CountingStore
from zarrdask.xarray import to_zarr

from .test_backend_matrix import cf_dataset, codec_json, same_value

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::RuntimeWarning")


def xr_to_zarr(ds: xr.Dataset, path, **kwargs):
    """xarray's own writer, quietly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ds.to_zarr(path, **kwargs)


def open_zarr(path, **kwargs) -> xr.Dataset:
    return xr.open_dataset(path, engine="zarr", **kwargs)


class WriteRecordingStore(CountingStore):
    """A CountingStore that also counts how often each key is written."""

    def __init__(self, inner=None):
        super().__init__(inner if inner is not None else MemoryStore())
        self.writes: dict[str, int] = {}

    def _record(self, keys):
        with self._lock:
            for k in keys:
                self.writes[k] = self.writes.get(k, 0) + 1

    def set(self, key, value):
        self._record([key])
        super().set(key, value)

    def set_many(self, items):
        self._record(list(items))
        super().set_many(items)

    def chunk_writes(self, name: str) -> dict[str, int]:
        return {k: n for k, n in self.writes.items() if k.startswith(f"{name}/c")}


def snapshot(store: MemoryStore) -> dict[str, bytes]:
    return {k: bytes(store.get(k)) for k in store.list()}


def _series(start: int, n: int, nx: int = 3) -> xr.Dataset:
    t = pd.date_range("2000-01-01", periods=40, freq="D")[start:start + n]
    return xr.Dataset(
        {"v": (("time", "x"), np.arange(start * nx, (start + n) * nx, dtype="f8").reshape(n, nx), {"units": "m"}),
         "w": (("time",), pd.to_timedelta(np.arange(start, start + n), "h")),
         "s": (("x",), np.arange(nx, dtype="i2"))},
        coords={"time": t, "x": np.arange(nx)}, attrs={"title": "series"},
    )


# -- the layout is xarray's ----------------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("backed", ["numpy", "dask"])
def test_identical_to_xarrays_to_zarr(tmp_path, fmt, backed):
    ds = cf_dataset()
    if backed == "dask":
        ds = ds.chunk({"time": 3, "y": 4})
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    result = to_zarr(ds, ours, zarr_format=fmt)
    assert isinstance(result, zarrdask.Group) and result.zarr_format == fmt
    xr_to_zarr(ds, theirs, zarr_format=fmt)
    a, b = open_zarr(ours, consolidated=True), open_zarr(theirs, consolidated=True)
    xr.testing.assert_identical(a, b)
    xr.testing.assert_identical(a.load(), b.load())
    for name in ("name", "code", "vlen", "label"):  # assert_identical takes "" and NaN for equal
        if name in a:
            assert list(a[name].values) == list(b[name].values) == list(cf_dataset()[name].values), name
    xr.testing.assert_identical(xr.open_dataset(ours, engine="zarrdask"), b)
    for name in b.variables:  # the CF encoding and chunking xarray's engine reports
        mine, ref = a[name].encoding, b[name].encoding
        for key in set(ref) - {"source", "compressors"}:
            assert same_value(mine[key], ref[key]), (name, key, mine[key], ref[key])
    # the stored attribute documents are xarray's, byte for byte as JSON
    for name in b.variables:
        if fmt == 2:
            for doc in (".zattrs",):
                assert json.loads((ours / name / doc).read_text()) == json.loads((theirs / name / doc).read_text())
            za, zb = (json.loads((p / name / ".zarray").read_text()) for p in (ours, theirs))
            assert {k: v for k, v in za.items() if k != "compressor"} == \
                {k: v for k, v in zb.items() if k != "compressor"}, name
        else:
            ja, jb = (json.loads((p / name / "zarr.json").read_text()) for p in (ours, theirs))
            for key in ("attributes", "dimension_names", "data_type", "fill_value", "shape", "chunk_grid",
                        "chunk_key_encoding"):
                assert ja[key] == jb[key], (name, key)
    root = ".zattrs" if fmt == 2 else "zarr.json"
    ga, gb = (json.loads((p / root).read_text()) for p in (ours, theirs))
    assert ga.get("attributes", ga) == gb.get("attributes", gb)


@pytest.mark.parametrize("fmt", [2, 3])
def test_dimension_names_as_xarray_writes_them(tmp_path, fmt):
    path = tmp_path / "dims.zarr"
    to_zarr(_series(0, 4), path, zarr_format=fmt)
    if fmt == 2:
        attrs = json.loads((path / "v" / ".zattrs").read_text())
        assert attrs == {"_ARRAY_DIMENSIONS": ["time", "x"], "units": "m"}
        assert json.loads((path / "s" / ".zattrs").read_text())["_ARRAY_DIMENSIONS"] == ["x"]
        assert not (path / "zarr.json").exists()
    else:
        doc = json.loads((path / "v" / "zarr.json").read_text())
        assert doc["dimension_names"] == ["time", "x"]
        assert doc["attributes"]["units"] == "m" and "_ARRAY_DIMENSIONS" not in doc["attributes"]
        assert json.loads((path / "time" / "zarr.json").read_text())["dimension_names"] == ["time"]
        assert not (path / ".zattrs").exists()
    # and the read side hides the v2 attribute again
    assert "_ARRAY_DIMENSIONS" not in xr.open_dataset(path, engine="zarrdask").v.attrs


def test_accessor_is_the_writer(tmp_path):
    ds = cf_dataset()
    group = ds.zarrdask.to_zarr(tmp_path / "acc.zarr", zarr_format=2, consolidated=True)
    assert isinstance(group, zarrdask.Group) and group.zarr_format == 2
    to_zarr(ds, tmp_path / "fn.zarr", zarr_format=2)
    xr.testing.assert_identical(open_zarr(tmp_path / "acc.zarr"), open_zarr(tmp_path / "fn.zarr"))
    assert (tmp_path / "acc.zarr" / ".zmetadata").exists()


def test_bad_arguments():
    ds = _series(0, 2)
    with pytest.raises(ValueError, match="zarr_format"):
        to_zarr(ds, MemoryStore(), zarr_format=4)
    with pytest.raises(TypeError, match="Dataset, DataArray or DataTree"):
        to_zarr(ds["v"].values, MemoryStore())
    with pytest.raises(ValueError, match="mode"):
        to_zarr(ds, MemoryStore(), mode="x")
    with pytest.raises(ValueError):
        to_zarr(ds, MemoryStore(), append_dim="time", region={"time": slice(0, 2)})


# -- dask variables: one task per shard ----------------------------------------


def test_dask_chunks_cutting_shards_are_written_one_task_per_shard(tmp_path):
    data = np.arange(12 * 4, dtype="f4").reshape(12, 4)
    ds = xr.Dataset({"v": (("t", "x"), data)}).chunk({"t": 3})
    enc = {"v": {"chunks": (2, 4), "shards": (4, 4)}}
    assert not is_aligned(ds.v.chunks, (4, 4), (0, 0))  # blocks 3 rows, shards 4: they cut through
    store = WriteRecordingStore()
    to_zarr(ds, store, encoding=enc)
    # every shard was stored once: no two tasks read-modify-wrote the same one
    assert store.chunk_writes("v") == {"v/c/0/0": 1, "v/c/1/0": 1, "v/c/2/0": 1}
    arr = zarrdask.open_array(store, path="v")
    assert arr.chunks == (2, 4) and arr.shards == (4, 4)
    np.testing.assert_array_equal(arr[...], data)
    # what xarray writes for the same (computed) Dataset and encoding
    theirs = tmp_path / "theirs.zarr"
    xr_to_zarr(ds.compute(), theirs, zarr_format=3, encoding=enc)
    xr.testing.assert_identical(xr.open_dataset(store, engine="zarrdask"), open_zarr(theirs))
    ours = tmp_path / "ours.zarr"
    to_zarr(ds, ours, encoding=enc)
    xr.testing.assert_identical(open_zarr(ours), open_zarr(theirs))
    assert open_zarr(ours).v.encoding["shards"] == (4, 4)
    # and read back with chunks={}: one dask chunk per shard
    assert xr.open_dataset(ours, engine="zarrdask", chunks={}).v.chunks == ((4, 4, 4), (4,))


def test_compute_false_defers_the_dask_writes():
    ds = xr.Dataset({"lazy": (("t",), da.arange(10.0, chunks=3)), "eager": (("t",), np.arange(10))})
    store = MemoryStore()
    delayed = to_zarr(ds, store, compute=False)
    assert isinstance(delayed, Delayed)
    assert not [k for k in store.list() if k.startswith("lazy/c")]  # no chunk of it yet
    before = xr.open_dataset(store, engine="zarrdask")
    assert np.isnan(before.lazy.values).all()  # metadata only: the fill value
    np.testing.assert_array_equal(before.eager.values, np.arange(10))
    delayed.compute()
    after = xr.open_dataset(store, engine="zarrdask")
    np.testing.assert_array_equal(after.lazy.values, np.arange(10.0))


# -- per-variable encoding ------------------------------------------------------


def _enc_dataset() -> xr.Dataset:
    t = pd.date_range("2000-01-01", periods=8, freq="6h")
    return xr.Dataset(
        {"v": (("time", "x"), np.arange(32.0).reshape(8, 4)),
         "p": (("time", "x"), np.linspace(0, 10, 32).reshape(8, 4)),
         "t": (("time", "x"), np.arange(32, dtype="i4").reshape(8, 4))},
        coords={"time": t},
    )


ENCODINGS = {
    3: {
        "v": {"chunks": (2, 2), "shards": (4, 4), "compressors": [{"name": "gzip", "configuration": {"level": 1}}],
              "dtype": "f4", "_FillValue": -1.0, "fill_value": -5.0},
        "p": {"chunks": (4, 4), "dtype": "i2", "scale_factor": 0.1, "add_offset": -1.0, "_FillValue": -32768,
              "serializer": {"name": "bytes", "configuration": {"endian": "big"}}, "compressors": None},
        "t": {"filters": [{"name": "transpose", "configuration": {"order": [1, 0]}}], "chunks": (8, 2)},
        "time": {"units": "hours since 1999-12-31", "calendar": "standard", "dtype": "i4"},
    },
    2: {
        "v": {"chunks": (2, 2), "compressors": numcodecs.Zlib(3), "dtype": "f4", "_FillValue": -1.0},
        "p": {"chunks": (4, 4), "dtype": "i2", "scale_factor": 0.1, "add_offset": -1.0, "_FillValue": -32768,
              "filters": [numcodecs.Delta("i2")], "compressors": None},
        "t": {"chunks": (3, 4)},
        "time": {"units": "hours since 1999-12-31", "calendar": "standard", "dtype": "i4"},
    },
}


@pytest.mark.parametrize("fmt", [2, 3])
def test_encoding_sets_the_stored_metadata(tmp_path, fmt):
    ds, enc = _enc_dataset(), ENCODINGS[fmt]
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    to_zarr(ds, ours, zarr_format=fmt, encoding=enc)
    xr_to_zarr(ds, theirs, zarr_format=fmt, encoding=enc)
    v = zarrdask.open_array(ours, path="v")
    p = zarrdask.open_array(ours, path="p")
    t = zarrdask.open_array(ours, path="t")
    time = zarrdask.open_array(ours, path="time")
    assert v.chunks == (2, 2) and v.dtype == np.float32
    assert p.dtype == np.int16 and p.chunks == (4, 4) and p.compressors == ()
    assert p.attrs["scale_factor"] == 0.1 and p.attrs["add_offset"] == -1.0
    assert time.dtype == np.int32
    assert time.attrs["units"] == "hours since 1999-12-31" and time.attrs["calendar"] == "standard"
    np.testing.assert_array_equal(time[...], np.arange(24, 72, 6))
    if fmt == 3:
        assert v.shards == (4, 4)
        inner = json.loads((ours / "v" / "zarr.json").read_text())["codecs"][0]["configuration"]["codecs"]
        assert inner[-1] == {"name": "gzip", "configuration": {"level": 1}}
        assert v.fill_value == -5.0  # the array's fill_value; _FillValue is a CF attribute
        assert v.attrs["_FillValue"] == "AAAAAAAA8L8="  # xarray's base64 of float64 -1.0
        assert p.attrs["_FillValue"] == -32768 and p.fill_value == 0
        assert codec_json(p.serializer) == {"name": "bytes", "configuration": {"endian": "big"}}
        assert [codec_json(c) for c in t.filters] == [{"name": "transpose", "configuration": {"order": [1, 0]}}]
        assert t.chunks == (8, 2)
        # the array documents are xarray's
        for name in ("v", "p", "t", "time"):
            ja, jb = (json.loads((d / name / "zarr.json").read_text()) for d in (ours, theirs))
            jb.pop("storage_transformers", None)
            assert ja == jb, name
    else:
        assert v.shards is None and v.fill_value == -1.0  # v2: _FillValue is the fill_value
        assert [c.get_config() for c in v.compressors] == [{"id": "zlib", "level": 3}]
        assert p.fill_value == -32768 and "_FillValue" not in p.attrs
        assert [c.get_config() for c in p.filters] == [numcodecs.Delta("i2").get_config()]
        assert t.chunks == (3, 4)
        for name in ("v", "p", "t", "time"):
            for doc in (".zarray", ".zattrs"):
                ja, jb = (json.loads((d / name / doc).read_text()) for d in (ours, theirs))
                if name == "time" or name == "t":
                    ja.pop("compressor", None), jb.pop("compressor", None)  # defaults differ
                assert ja == jb, (name, doc)
    got = open_zarr(ours)
    xr.testing.assert_identical(got, open_zarr(theirs))
    np.testing.assert_allclose(got.p.values, ds.p.values, atol=0.051)
    np.testing.assert_array_equal(got.v.values, ds.v.values.astype("f4"))
    np.testing.assert_array_equal(got.t.values, ds.t.values)
    np.testing.assert_array_equal(got.time.values, ds.time.values)


def test_encoding_errors():
    ds = _series(0, 4)
    with pytest.raises(ValueError, match="foo"):
        to_zarr(ds, MemoryStore(), encoding={"v": {"chunks": (2, 3), "foo": 1}})
    with pytest.raises(KeyError, match="nope"):  # as xarray
        to_zarr(ds, MemoryStore(), encoding={"nope": {"chunks": (1,)}})
    with pytest.raises(ValueError, match="chunks"):
        to_zarr(ds, MemoryStore(), encoding={"v": {"chunks": (1, 2, 3)}})


def test_write_empty_chunks():
    ds = xr.Dataset({"a": (("x",), np.array([np.nan] * 4 + [1.0] * 4))})
    kept, dropped = MemoryStore(), MemoryStore()
    to_zarr(ds, kept, encoding={"a": {"chunks": (4,)}}, write_empty_chunks=True)
    to_zarr(ds, dropped, encoding={"a": {"chunks": (4,)}}, write_empty_chunks=False)
    assert sorted(k for k in kept.list() if k.startswith("a/c")) == ["a/c/0", "a/c/1"]
    assert sorted(k for k in dropped.list() if k.startswith("a/c")) == ["a/c/1"]
    xr.testing.assert_identical(xr.open_dataset(kept, engine="zarrdask"), xr.open_dataset(dropped, engine="zarrdask"))


# -- modes ------------------------------------------------------------------------


def test_modes(tmp_path):
    path = tmp_path / "modes.zarr"
    ds = _series(0, 4)
    to_zarr(ds, path)
    with pytest.raises(ContainsGroupError):
        to_zarr(ds, path)  # "w-" (the default) refuses an existing group
    with pytest.raises(ContainsGroupError):
        to_zarr(ds, path, mode="w-", zarr_format=2)
    # "w" replaces the whole group
    to_zarr(ds[["s"]].rename(s="only"), path, mode="w")
    assert set(xr.open_dataset(path, engine="zarrdask").variables) == {"only", "x"}
    assert not (path / "v").exists()
    # "a" adds variables and overwrites the ones given, keeping the rest
    to_zarr(ds[["v"]], path, mode="a")
    to_zarr(xr.Dataset({"only": (("x",), np.array([7, 8, 9], "i2"))}), path, mode="a")
    got = open_zarr(path, consolidated=True)
    assert set(got.data_vars) == {"only", "v"}
    np.testing.assert_array_equal(got.only.values, [7, 8, 9])
    xr.testing.assert_identical(got.v, ds.v)
    # "r+" writes into existing arrays only
    with pytest.raises(ValueError, match="r\\+"):
        to_zarr(xr.Dataset({"new": (("x",), np.zeros(3))}), path, mode="r+")
    assert not (path / "new").exists()
    to_zarr(xr.Dataset({"only": (("x",), np.array([1, 2, 3], "i2"))}), path, mode="r+")
    np.testing.assert_array_equal(open_zarr(path).only.values, [1, 2, 3])
    with pytest.raises(KeyError):  # "r+" needs an existing group
        to_zarr(ds, tmp_path / "missing.zarr", mode="r+")


# -- consolidated metadata and groups --------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
def test_consolidated_metadata_read_by_xarray(tmp_path, fmt):
    ds = cf_dataset()
    on, off = tmp_path / "on.zarr", tmp_path / "off.zarr"
    to_zarr(ds, on, zarr_format=fmt, consolidated=True)
    to_zarr(ds, off, zarr_format=fmt, consolidated=False)
    if fmt == 2:
        meta = json.loads((on / ".zmetadata").read_text())
        assert meta["zarr_consolidated_format"] == 1
        assert {"temp/.zarray", "temp/.zattrs", ".zgroup", ".zattrs"} <= set(meta["metadata"])
        assert not (off / ".zmetadata").exists()
    else:
        cm = json.loads((on / "zarr.json").read_text())["consolidated_metadata"]
        assert cm["kind"] == "inline" and set(cm["metadata"]) == set(ds.variables)
        assert "consolidated_metadata" not in json.loads((off / "zarr.json").read_text())
    xr.testing.assert_identical(open_zarr(on, consolidated=True), open_zarr(off, consolidated=False))
    with pytest.raises((ValueError, KeyError, FileNotFoundError)):
        open_zarr(off, consolidated=True)
    # appending re-consolidates: xarray sees the new length through the consolidated metadata
    to_zarr(ds.isel(time=slice(0, 2)).drop_vars([v for v in ds.variables if "time" not in ds[v].dims]),
            on, append_dim="time")
    assert open_zarr(on, consolidated=True).sizes["time"] == 10


def test_group_writes_a_subgroup(tmp_path):
    path = tmp_path / "grouped.zarr"
    ds = cf_dataset()
    to_zarr(ds, path, group="sub/inner", zarr_format=2)
    theirs = tmp_path / "theirs.zarr"
    xr_to_zarr(ds, theirs, group="sub/inner", zarr_format=2)
    xr.testing.assert_identical(open_zarr(path, group="sub/inner", consolidated=False),
                                open_zarr(theirs, group="sub/inner", consolidated=False))
    xr.testing.assert_identical(xr.open_dataset(path, group="sub/inner", engine="zarrdask"),
                                open_zarr(theirs, group="sub/inner"))
    assert (path / "sub" / "inner" / "temp" / ".zarray").exists()
    assert not (path / "temp").exists()
    # a second subgroup next to it, with v3 too
    to_zarr(ds[["count"]], tmp_path / "v3.zarr", group="a/b")
    assert json.loads((tmp_path / "v3.zarr" / "a" / "b" / "count" / "zarr.json").read_text())["node_type"] == "array"


@pytest.mark.parametrize("fmt", [2, 3])
def test_group_visible_through_root_consolidated_metadata(tmp_path, fmt):
    path = tmp_path / "tree.zarr"
    ds = xr.Dataset({"a": (("x",), np.arange(3.0))})
    to_zarr(ds, path, zarr_format=fmt)
    to_zarr(ds.rename(a="b"), path, group="child", mode="w", zarr_format=fmt)
    assert list(open_zarr(path, group="child").data_vars) == ["b"]
    assert "child" in xr.open_datatree(path, engine="zarrdask").children
    fresh = tmp_path / "fresh.zarr"
    to_zarr(ds, fresh, group="sub/inner", zarr_format=fmt)
    xr.testing.assert_identical(open_zarr(fresh, group="sub/inner", consolidated=True), ds)


# -- append and region ----------------------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("backed", ["numpy", "dask"])
def test_append_like_xarray(tmp_path, fmt, backed):
    parts = [_series(0, 4), _series(4, 3), _series(7, 3)]
    if backed == "dask":
        parts = [p.chunk({"time": 2}) for p in parts]
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    enc = {"v": {"chunks": (2, 3)}}
    to_zarr(parts[0], ours, zarr_format=fmt, encoding=enc)
    xr_to_zarr(parts[0], theirs, zarr_format=fmt, encoding=enc)  # (xarray refuses the later misaligned parts)
    for part in parts[1:]:
        to_zarr(part, ours, append_dim="time")
        xr_to_zarr(part.compute(), theirs, append_dim="time")
    got = open_zarr(ours, consolidated=True)
    xr.testing.assert_identical(got, open_zarr(theirs))
    xr.testing.assert_identical(got.load(), _series(0, 10))
    # the time coordinate keeps the encoding of the first write
    assert got.time.encoding["units"] == "days since 2000-01-01 00:00:00"
    raw = open_zarr(ours, decode_times=False, decode_timedelta=False)
    np.testing.assert_array_equal(raw.time.values, np.arange(10))
    xr.testing.assert_identical(raw, open_zarr(theirs, decode_times=False, decode_timedelta=False))
    assert zarrdask.open_array(ours, path="v").chunks == (2, 3)


def test_append_misaligned_dask_into_shards():
    store = WriteRecordingStore()
    first = xr.Dataset({"v": (("t",), np.arange(6.0))})
    to_zarr(first, store, encoding={"v": {"chunks": (2,), "shards": (4,)}})
    more = xr.Dataset({"v": (("t",), np.arange(6.0, 13.0))}).chunk({"t": 3})
    store.writes.clear()
    to_zarr(more, store, append_dim="t")
    # shards 1 ([4, 8), half there already), 2 and 3: each stored by exactly one task
    assert store.chunk_writes("v") == {"v/c/1": 1, "v/c/2": 1, "v/c/3": 1}
    np.testing.assert_array_equal(zarrdask.open_array(store, path="v")[...], np.arange(13.0))


@pytest.mark.parametrize("fmt", [2, 3])
def test_region_writes(tmp_path, fmt):
    full = _series(0, 10)
    template = full.copy(deep=True)
    template["v"][:] = 0.0
    path = tmp_path / "region.zarr"
    to_zarr(template, path, zarr_format=fmt, encoding={"v": {"chunks": (3, 3)}})
    # explicit slices (variables without the region's dimension must be dropped)
    with pytest.raises(ValueError, match="drop"):
        to_zarr(full.isel(time=slice(2, 5)), path, region={"time": slice(2, 5)})
    to_zarr(full.isel(time=slice(2, 5)).drop_vars(["s", "x"]), path, region={"time": slice(2, 5)})
    # "auto" finds the slice from the stored coordinate, with a dask variable too
    to_zarr(full.isel(time=slice(5, 9)).drop_vars("s").chunk({"time": 1}), path, region="auto")
    got = open_zarr(path, consolidated=True).v.values[:, 0]
    np.testing.assert_array_equal(got, [0, 0, 6, 9, 12, 15, 18, 21, 24, 0])
    with pytest.raises(ValueError):  # a region the data does not fit
        to_zarr(full.isel(time=slice(0, 2)).drop_vars("s"), path, region={"time": slice(0, 3)})
    with pytest.raises(KeyError):  # times that are not stored
        to_zarr(_series(20, 2).drop_vars("s"), path, region="auto")
    # xarray's own region="auto" gives the same store
    theirs = tmp_path / "theirs.zarr"
    xr_to_zarr(template, theirs, zarr_format=fmt, encoding={"v": {"chunks": (3, 3)}})
    xr_to_zarr(full.isel(time=slice(2, 5)).drop_vars(["s", "x"]), theirs, region={"time": slice(2, 5)})
    xr_to_zarr(full.isel(time=slice(5, 9)).drop_vars("s"), theirs, region="auto")
    xr.testing.assert_identical(open_zarr(path), open_zarr(theirs))


# -- failed writes leave the store alone ------------------------------------------


def test_failed_writes_change_nothing():
    store = MemoryStore()
    to_zarr(_series(0, 4), store, zarr_format=3)
    before = snapshot(store)
    failing = [
        {"ds": _series(4, 2, nx=4), "append_dim": "time"},  # x differs
        {"ds": _series(4, 2).assign(v=_series(4, 2).v.astype(str)), "append_dim": "time"},  # str into float
        {"ds": _series(4, 2), "append_dim": "nope"},
        {"ds": _series(4, 2).rename(s="new"), "mode": "r+"},
        {"ds": _series(4, 2), "mode": "a", "encoding": {"nope": {}}},
        {"ds": _series(4, 2).rename(v="v2"), "mode": "a", "encoding": {"v2": {"bogus": 1}}},
    ]
    for case in failing:
        ds = case.pop("ds")
        with pytest.raises((ValueError, KeyError)):
            to_zarr(ds, store, **case)
        assert snapshot(store) == before, case


def test_failed_add_of_variables_changes_nothing():
    store = MemoryStore()
    ds = xr.Dataset({"a": (("x",), np.arange(4.0))}, attrs={"k": 1})
    to_zarr(ds, store)
    before = snapshot(store)
    new = xr.Dataset({"b": ds.a * 2, "c": ds.a * 3}, attrs={"k": 2})
    with pytest.raises(ValueError):
        to_zarr(new, store, mode="a", encoding={"c": {"chunks": (3,), "shards": (4,)}})
    assert snapshot(store) == before


def test_failed_overwrite_keeps_the_old_group():
    store = MemoryStore()
    to_zarr(_series(0, 4), store)
    before = snapshot(store)
    with pytest.raises(ValueError):
        to_zarr(_series(0, 4), store, mode="w", encoding={"v": {"bogus": 1}})
    assert snapshot(store) == before


def test_append_times_finer_than_the_stored_units():
    store = MemoryStore()
    first = xr.Dataset({"v": (("time",), np.zeros(4))}, coords={"time": pd.date_range("2000-01-01", periods=4)})
    more = xr.Dataset({"v": (("time",), np.ones(3))},
                      coords={"time": pd.date_range("2000-01-05", periods=3, freq="6h")})
    to_zarr(first, store)
    try:
        to_zarr(more, store, append_dim="time")
    except ValueError:
        return  # refusing is fine too
    got = xr.open_dataset(store, engine="zarrdask")
    np.testing.assert_array_equal(got.time.values, np.concatenate([first.time.values, more.time.values]))


def test_v2_variable_length_strings_keep_empty_strings(tmp_path):
    # v2 object-dtype strings: fill_value null as xarray writes it, so "" is not masked to NaN
    ds = xr.Dataset({"vlen": (("x",), np.array(["a", "bcd", "", "é"], dtype=object))})
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    to_zarr(ds, ours, zarr_format=2)
    xr_to_zarr(ds, theirs, zarr_format=2)
    assert list(open_zarr(theirs).vlen.values) == ["a", "bcd", "", "é"]
    assert list(open_zarr(ours).vlen.values) == ["a", "bcd", "", "é"]
    assert list(xr.open_dataset(ours, engine="zarrdask").vlen.values) == ["a", "bcd", "", "é"]
    assert json.loads((ours / "vlen" / ".zarray").read_text())["fill_value"] is None


# -- interoperability of encodings --------------------------------------------------


def test_rewrite_a_dataset_opened_with_xarrays_engine(tmp_path):
    import zarr

    src = tmp_path / "src.zarr"
    xr_to_zarr(_enc_dataset(), src, zarr_format=3)
    opened = open_zarr(src)
    to_zarr(opened, tmp_path / "copy.zarr")
    xr.testing.assert_identical(open_zarr(tmp_path / "copy.zarr"), opened)
    to_zarr(_enc_dataset(), tmp_path / "gz.zarr", encoding={"v": {"compressors": [zarr.codecs.GzipCodec(level=1)]}})


def test_roundtrip_of_sharded_dataset_keeps_its_codecs(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    ds = xr.Dataset({"a": (("t", "x"), np.arange(12.0).reshape(6, 2))})
    xr_to_zarr(ds, src, zarr_format=3, encoding={"a": {"chunks": (2, 2), "shards": (4, 2)}})
    to_zarr(xr.open_dataset(src, engine="zarrdask"), dst)
    xr.testing.assert_identical(open_zarr(dst), ds)
    codecs = [json.loads((d / "a" / "zarr.json").read_text())["codecs"] for d in (src, dst)]
    assert codecs[0] == codecs[1]


# -- remote stores ----------------------------------------------------------------------


@pytest.mark.network
def test_write_to_s3(s3_bucket, s3_storage_options):
    ds = cf_dataset()[["temp", "packed", "count", "flag"]]
    url = f"s3://{s3_bucket}/ds.zarr"
    to_zarr(ds.chunk({"time": 4}), url, zarr_format=3, storage_options=s3_storage_options,
            encoding={"temp": {"chunks": (2, 3, 2), "shards": (4, 6, 4)}})
    ours = xr.open_dataset(url, engine="zarrdask", storage_options=s3_storage_options)
    ref = xr.open_dataset(url, engine="zarr", storage_options=s3_storage_options, consolidated=True)
    xr.testing.assert_identical(ours, ref)
    np.testing.assert_array_equal(ours.temp.values, ds.temp.values)
    np.testing.assert_array_equal(ours.flag.values, ds.flag.values)
    assert ours.temp.encoding["shards"] == (4, 6, 4)
