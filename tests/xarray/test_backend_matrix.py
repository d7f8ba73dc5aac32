"""engine="zarrdask" on stores written by xarray's own zarr engine: the read-side
matrix (Zarr v2 / v3 × consolidated or not × sharded or not; eager and
``chunks={}``), CF decoding, metadata-read counts and datatrees."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from zarrdask.storage import LocalStore
from zarrdask.storage.wrappers import CountingStore

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::RuntimeWarning")

METADATA_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")


def cf_dataset() -> xr.Dataset:
    """A small Dataset with every CF case the zarr engines encode: NaN floats,
    scale/offset packing, _FillValue and missing_value, _Unsigned, booleans,
    datetime64 and timedelta64 (with NaT), fixed-width bytes and unicode,
    variable-length strings, non-dimension coordinates (the ``coordinates``
    attribute) and attributes holding numpy values."""
    rng = np.random.default_rng(0)
    time = pd.date_range("2000-01-01", periods=8, freq="D")
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), (rng.random((8, 6, 4)) * 30).astype("f4"),
                     {"units": "K", "valid_max": np.float32(40.5), "levels": np.array([1, 2, 3])}),
            "packed": (("y", "x"), rng.random((6, 4)) * 10),
            "count": (("x",), np.array([1, 2, -9, 4], "i2")),
            "miss": (("x",), np.array([1.0, np.nan, 3.0, 4.0])),
            "u8": (("x",), np.array([1, 200, 255, 3], "u1")),
            "flag": (("x",), np.array([True, False, True, False])),
            "wait": (("time",), pd.to_timedelta([0, 1, 2, None, 4, 5, 6, 7], "h")),
            "when": (("x",), pd.to_datetime(["2001-01-01", None, "2002-02-02", "2003-03-03"])),
            "code": (("x",), np.array([b"ab", b"cd", b"ef", b"gh"])),
            "name": (("x",), np.array(["alpha", "b", "γδ", ""], dtype="U5")),
            "vlen": (("x",), np.array(["a", "bcd", "", "é"], dtype=object)),
            "lat": (("y",), np.linspace(-10, 10, 6), {"standard_name": "latitude"}),
        },
        coords={"time": time, "x": [10, 20, 30, 40], "label": ("x", ["p", "q", "r", "s"])},
        attrs={"title": "test", "n": np.int64(3), "f": np.float32(1.5), "arr": np.array([1.0, 2.0])},
    )
    ds = ds.set_coords("lat")
    ds["count"].encoding["_FillValue"] = -9
    ds["packed"].encoding.update(dtype="i2", scale_factor=0.01, add_offset=1.0, _FillValue=-32768)
    ds["u8"].encoding.update(dtype="i1", _Unsigned="true", _FillValue=255)
    ds["miss"].encoding["missing_value"] = -999.0
    ds["temp"][0, 0, 0] = np.nan
    return ds


# (``encoding=`` replaces a variable's own encoding, so the CF keys are repeated)
SHARD_ENCODING = {
    "temp": {"chunks": (2, 3, 2), "shards": (4, 6, 4)},
    "packed": {"chunks": (2, 2), "shards": (4, 4), "dtype": "i2", "scale_factor": 0.01, "add_offset": 1.0,
               "_FillValue": -32768},
    "count": {"chunks": (1,), "shards": (2,), "_FillValue": -9},
}

# (zarr_format, consolidated, sharded)
CASES = [(2, True, False), (2, False, False), (3, True, False), (3, False, False),
         (3, True, True), (3, False, True)]
IDS = [f"v{f}-{'cons' if c else 'nocons'}-{'sharded' if s else 'plain'}" for f, c, s in CASES]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Every case of the matrix, written once by xarray's own ``to_zarr``."""
    root = tmp_path_factory.mktemp("xarray-written")
    out = {}
    for fmt, cons, sharded in CASES:
        path = root / f"v{fmt}-{cons}-{sharded}.zarr"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cf_dataset().to_zarr(path, zarr_format=fmt, consolidated=cons,
                                 encoding=SHARD_ENCODING if sharded else None)
        out[(fmt, cons, sharded)] = path
    return out


def codec_json(codec) -> dict:
    """A codec of zarr-python, zarrdask or numcodecs as its JSON configuration."""
    for attr in ("to_json", "to_dict"):  # zarrdask, zarr-python
        if hasattr(codec, attr):
            doc = dict(getattr(codec, attr)())
            conf = {k: v for k, v in (doc.get("configuration") or {}).items() if v is not None}
            return {"name": doc["name"], "configuration": conf}
    return dict(codec.get_config())  # numcodecs


def same_value(a, b) -> bool:
    if isinstance(a, float | np.floating) and isinstance(b, float | np.floating):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, np.dtype) or isinstance(b, np.dtype):
        return np.dtype(a) == np.dtype(b)
    return bool(np.all(a == b)) if not isinstance(a, dict) else a == b


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_identical_to_xarrays_engine_eager(stores, case):
    _, cons, _ = case
    path = stores[case]
    ref = xr.open_dataset(path, engine="zarr", consolidated=cons)
    ours = xr.open_dataset(path, engine="zarrdask")
    xr.testing.assert_identical(ref, ours)
    xr.testing.assert_identical(ref.load(), ours.load())
    for name in ("name", "code", "vlen", "label"):  # assert_identical takes "" and NaN for equal
        assert list(ours[name].values) == list(ref[name].values) == list(cf_dataset()[name].values), name
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr", consolidated=cons, mask_and_scale=False),
                                xr.open_dataset(path, engine="zarrdask", mask_and_scale=False))
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr", consolidated=cons, decode_times=False),
                                xr.open_dataset(path, engine="zarrdask", decode_times=False))
    # the decoded Dataset is the one that was written
    xr.testing.assert_identical(ours.load(), xr.open_dataset(path, engine="zarr", consolidated=cons).load())
    assert ours.attrs == ref.attrs


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_identical_with_dask_chunks(stores, case):
    _, cons, sharded = case
    path = stores[case]
    ref = xr.open_dataset(path, engine="zarr", consolidated=cons, chunks={})
    ours = xr.open_dataset(path, engine="zarrdask", chunks={})
    for name, var in ours.variables.items():
        if name in ours.indexes:
            continue
        assert var.chunks is not None, name
        # one dask chunk per shard (per chunk when unsharded)
        unit = var.encoding["shards"] or var.encoding["chunks"]
        expected = tuple(tuple(min(u, n - i) for i in range(0, n, u)) for u, n in zip(unit, var.shape))
        assert var.chunks == expected, name
        if not sharded:
            assert var.chunks == ref[name].chunks, name
    xr.testing.assert_identical(ref.compute(), ours.compute())
    if sharded:
        assert ours.temp.chunks == ((4, 4), (6,), (4,))
        assert ours["count"].chunks == ((2, 2),)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_encoding_like_xarrays_engine(stores, case):
    fmt, cons, sharded = case
    path = stores[case]
    ref = xr.open_dataset(path, engine="zarr", consolidated=cons)
    ours = xr.open_dataset(path, engine="zarrdask")
    for name in ref.variables:
        theirs, mine = ref[name].encoding, ours[name].encoding
        keys = set(theirs) - {"source", "preferred_chunks", "compressors", "serializer"}
        assert keys <= set(mine), (name, keys - set(mine))
        for key in keys:
            assert same_value(mine[key], theirs[key]), (name, key, mine[key], theirs[key])
        assert mine["shards"] == theirs["shards"]
        unit = mine["shards"] or mine["chunks"]
        assert mine["preferred_chunks"] == dict(zip(ours[name].dims, unit))
        if not sharded or mine["shards"] is None:
            assert [codec_json(c) for c in mine["compressors"]] == [codec_json(c) for c in theirs["compressors"]]
            if fmt == 3:
                assert codec_json(mine["serializer"]) == codec_json(theirs["serializer"])
    # spot checks of what xarray's engine puts there
    assert ours.packed.encoding["scale_factor"] == 0.01 and ours.packed.encoding["add_offset"] == 1.0
    assert ours.packed.encoding["dtype"] == np.dtype("i2") and ours.packed.encoding["_FillValue"] == -32768
    assert ours.time.encoding["units"] == "days since 2000-01-01 00:00:00"
    assert ours.time.encoding["calendar"] == "proleptic_gregorian"
    assert ours.wait.encoding["units"] == "hours"
    assert math.isnan(ours.temp.encoding["_FillValue"])
    if fmt == 3:
        assert math.isnan(ours.temp.encoding["fill_value"])
    if sharded:
        assert ours.temp.encoding["chunks"] == (2, 3, 2) and ours.temp.encoding["shards"] == (4, 6, 4)


def test_sharded_encoding_codecs_like_xarrays_engine(stores):
    path = stores[(3, False, True)]
    ref = xr.open_dataset(path, engine="zarr", consolidated=False)
    ours = xr.open_dataset(path, engine="zarrdask")
    assert [codec_json(c) for c in ours.temp.encoding["compressors"]] == \
        [codec_json(c) for c in ref.temp.encoding["compressors"]]
    assert codec_json(ours.temp.encoding["serializer"]) == codec_json(ref.temp.encoding["serializer"])


@pytest.mark.parametrize("fmt", [2, 3])
def test_cf_decoding(stores, fmt):
    ds = xr.open_dataset(stores[(fmt, True, False)], engine="zarrdask")
    src = cf_dataset()
    # floats with NaN, scale/offset packing
    assert np.isnan(ds.temp.values[0, 0, 0]) and ds.temp.dtype == np.float32
    np.testing.assert_allclose(ds.packed.values, src.packed.values, atol=0.006)
    assert ds.packed.dtype == np.float64
    # _FillValue and missing_value become NaN
    np.testing.assert_array_equal(ds["count"].values, [1, 2, np.nan, 4])
    np.testing.assert_array_equal(ds.miss.values, [1, np.nan, 3, 4])
    # _Unsigned (with its _FillValue 255, stored as int8 -1)
    np.testing.assert_array_equal(ds.u8.values, [1, 200, np.nan, 3])
    assert ds.u8.encoding["_Unsigned"] == "true" and ds.u8.encoding["dtype"] == np.int8
    # booleans, strings
    assert ds.flag.dtype == bool
    np.testing.assert_array_equal(ds.flag.values, [True, False, True, False])
    np.testing.assert_array_equal(ds.code.values, src.code.values)
    assert ds.code.dtype == np.dtype("S2")
    np.testing.assert_array_equal(ds.name.values, src.name.values)
    assert list(ds.vlen.values) == ["a", "bcd", "", "é"]
    # times and timedeltas (with NaT)
    np.testing.assert_array_equal(ds.time.values, src.time.values)
    np.testing.assert_array_equal(ds.when.values, src.when.values)
    np.testing.assert_array_equal(ds.wait.values, src.wait.values)
    assert ds.when.dtype.kind == "M" and ds.wait.dtype.kind == "m"
    # coordinates: dimension and non-dimension ones, and the coordinates attribute
    assert set(ds.coords) == {"time", "x", "label", "lat"}
    assert "coordinates" not in ds.temp.attrs and "coordinates" in ds.temp.encoding
    assert ds.lat.attrs == {"standard_name": "latitude"}
    assert ds.temp.attrs["units"] == "K" and ds.temp.attrs["levels"] == [1, 2, 3]
    # attributes with numpy values (stored as JSON)
    assert ds.attrs == {"title": "test", "n": 3, "f": 1.5, "arr": [1.0, 2.0]}
    # raw view without CF decoding
    raw = xr.open_dataset(stores[(fmt, True, False)], engine="zarrdask", mask_and_scale=False,
                          decode_times=False, decode_timedelta=False)
    assert raw.packed.dtype == np.int16 and raw.u8.dtype == np.int8
    assert raw.u8.attrs["_Unsigned"] == "true" and list(raw.u8.values) == [1, -56, -1, 3]
    assert raw.time.attrs["units"] == "days since 2000-01-01 00:00:00"


class RecordingStore(CountingStore):
    """A CountingStore that also records every read, in order."""

    def __init__(self, inner):
        super().__init__(inner)
        self.calls: list[tuple[str, list[str]]] = []

    def get_many(self, keys):
        keys = list(keys)
        self.calls.append(("get_many", keys))
        return super().get_many(keys)

    def get_ranges(self, key, ranges):
        self.calls.append(("get_ranges", [key]))
        return super().get_ranges(key, ranges)

    def metadata_calls(self) -> list[list[str]]:
        """The reads made before the first read of a non-metadata key."""
        out = []
        for _, keys in self.calls:
            if any(not k.endswith(METADATA_NAMES) for k in keys):
                break
            out.append(keys)
        return out

    def data_keys(self) -> set[str]:
        return {k for _, keys in self.calls for k in keys if not k.endswith(METADATA_NAMES)}


def _no_index_dataset() -> xr.Dataset:
    """CF cases without index coordinates or times, whose values xarray would
    read at open (indexes are loaded; times are probed to pick their dtype)."""
    ds = cf_dataset()[["packed", "count", "u8", "flag", "code", "name", "miss"]]
    return ds.drop_vars(["x", "time"], errors="ignore")


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("chunks", [None, {}], ids=["eager", "dask"])
def test_consolidated_open_is_one_metadata_read(tmp_path, fmt, chunks):
    path = tmp_path / "nox.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _no_index_dataset().to_zarr(path, zarr_format=fmt, consolidated=True,
                                    encoding={"packed": {"chunks": (2, 2)}})
    store = RecordingStore(LocalStore(path, read_only=True))
    ds = xr.open_dataset(store, engine="zarrdask", chunks=chunks)
    assert store.get_many_calls == 1, store.calls
    assert store.list_calls == 0 and store.get_ranges_calls == 0
    assert store.data_keys() == set()
    ds.load()
    assert store.data_keys()  # reading values does go to the chunks
    xr.testing.assert_identical(ds, xr.open_dataset(path, engine="zarr", consolidated=True).load())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_opening_reads_no_chunk(stores, case):
    _, cons, _ = case
    store = RecordingStore(LocalStore(stores[case], read_only=True))
    xr.open_dataset(store, engine="zarrdask", chunks={})
    # the metadata, then only what xarray itself reads: the index coordinates it
    # turns into pandas indexes, and the first/last values of times it probes
    read_vars = {k.split("/")[0] for k in store.data_keys()}
    assert read_vars <= {"time", "x", "when", "wait"}, read_vars
    if cons:
        assert len(store.metadata_calls()) == 1 and store.list_calls == 0
    else:
        assert store.list_calls >= 1  # members are listed, not read from a consolidated document


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_datatree_like_xarrays_engine(tmp_path, fmt, consolidated):
    tree = xr.DataTree.from_dict({
        "/": xr.Dataset({"a": (("x",), np.arange(3.0))}, attrs={"r": 1}),
        "/c1": xr.Dataset({"b": (("y",), np.array([1, -1], "i2"))}),
        "/c1/g": xr.Dataset({"c": (("x", "y"), np.ones((3, 2), "f4"))}),
        "/c2": xr.Dataset({"s": (("z",), np.array(["a", "bc"]))}, attrs={"k": np.float32(2)}),
    })
    tree["c1"]["b"].encoding["_FillValue"] = -1
    path = tmp_path / "tree.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(path, zarr_format=fmt, consolidated=consolidated)
    ref = xr.open_datatree(path, engine="zarr")
    store = RecordingStore(LocalStore(path, read_only=True))
    ours = xr.open_datatree(store, engine="zarrdask")
    if consolidated:  # the whole hierarchy from one metadata read
        assert store.get_many_calls == 1 and store.list_calls == 0
    assert store.data_keys() == set()
    xr.testing.assert_identical(ref, ours)
    assert np.isnan(ours["c1"]["b"].values[1])
    groups = xr.open_groups(path, engine="zarrdask")
    assert set(groups) == {"/", "/c1", "/c1/g", "/c2"}
    xr.testing.assert_identical(groups["/c1/g"], xr.open_dataset(path, group="c1/g", engine="zarr"))
    xr.testing.assert_identical(xr.open_dataset(path, group="c2", engine="zarrdask"),
                                xr.open_dataset(path, group="c2", engine="zarr"))
    chunked = xr.open_datatree(path, engine="zarrdask", chunks={})
    assert chunked["c1/g"]["c"].chunks is not None
    xr.testing.assert_identical(chunked.compute(), ref.compute())


def test_sharded_uneven_dask_chunks_are_shards(tmp_path):
    path = tmp_path / "uneven.zarr"
    data = np.arange(10 * 7, dtype="i4").reshape(10, 7)
    ds = xr.Dataset({"v": (("t", "x"), data)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=3, encoding={"v": {"chunks": (2, 3), "shards": (4, 6)}})
    ours = xr.open_dataset(path, engine="zarrdask", chunks={})
    assert ours.v.chunks == ((4, 4, 2), (6, 1))
    assert ours.v.encoding["preferred_chunks"] == {"t": 4, "x": 6}
    np.testing.assert_array_equal(ours.v.values, data)
    # a user's chunks still win over the preferred ones
    assert xr.open_dataset(path, engine="zarrdask", chunks={"t": 8}).v.chunks[0] == (8, 2)
    doc = json.loads((path / "v" / "zarr.json").read_text())
    assert doc["chunk_grid"]["configuration"]["chunk_shape"] == [4, 6]
