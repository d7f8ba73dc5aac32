"""The xarray writer behaves as xarray's own ``to_zarr``: each defect found by
running xarray's own writer tests through zarrdask, with xarray's behaviour as
the reference (read back by engine="zarr", errors of xarray's types)."""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

import dask.array as da  # noqa: E402

import zarrdask  # noqa: E402
from zarrdask.xarray import to_zarr  # noqa: E402

FORMATS = [2, 3]


def _keys_and_bytes(path) -> dict[str, bytes]:
    store = zarrdask.store_from(str(path))
    return {k: store.get(k) for k in sorted(store.list())}


# -- 1. fixed-length strings are never cut ---------------------------------------------
@pytest.mark.parametrize("zarr_format", FORMATS)
@pytest.mark.parametrize("kind", ["U", "S"])
def test_appending_longer_strings_to_fixed_length_strings_raises_and_changes_nothing(tmp_path, zarr_format, kind):
    path = tmp_path / "s.zarr"
    ds = xr.Dataset({"s": ("t", np.array(["ab", "cd"], dtype=f"{kind}2"))}, coords={"t": [0, 1]})
    to_zarr(ds, path, zarr_format=zarr_format)
    before = _keys_and_bytes(path)
    more = xr.Dataset({"s": ("t", np.array(["efghij", "k"], dtype=f"{kind}6"))}, coords={"t": [2, 3]})
    with pytest.raises(ValueError, match="Mismatched dtypes"):
        to_zarr(more, path, append_dim="t")
    assert _keys_and_bytes(path) == before  # not resized, nothing written
    back = xr.open_zarr(path)
    assert back.sizes["t"] == 2 and list(back.s.values.astype(str)) == ["ab", "cd"]
    # what fits is still appended
    to_zarr(more.astype({"s": f"{kind}2"}).assign(s=("t", np.array(["ef", "k"], dtype=f"{kind}2"))), path,
            append_dim="t")
    assert list(xr.open_zarr(path).s.values.astype(str)) == ["ab", "cd", "ef", "k"]


# -- 2. open -> select -> write -------------------------------------------------------
@pytest.mark.parametrize("zarr_format", FORMATS)
def test_open_isel_write_drops_encodings_that_no_longer_fit(tmp_path, zarr_format):
    ds = xr.Dataset({"v": (("x", "y", "t"), np.arange(80.0).reshape(4, 4, 5))},
                    coords={"t": np.arange(5)}).chunk({"x": 2, "y": 2, "t": 1})
    to_zarr(ds, tmp_path / "a.zarr", zarr_format=zarr_format)
    opened = xr.open_zarr(tmp_path / "a.zarr")
    assert opened.v.encoding["chunks"] == (2, 2, 1)
    for i, sub in enumerate([opened.isel(t=0), opened.isel(x=1, y=slice(0, 3)), opened.v.squeeze().isel(t=2)]):
        target = tmp_path / f"b{i}.zarr"
        to_zarr(sub, target, zarr_format=zarr_format)
        xr.testing.assert_identical(xr.open_zarr(target).compute(), sub.compute() if isinstance(sub, xr.Dataset)
                                    else sub.to_dataset().compute())


def test_explicit_encoding_chunks_of_the_wrong_rank_are_an_error():
    ds = xr.Dataset({"v": (("x", "y"), np.zeros((4, 4)))})
    with pytest.raises(ValueError, match="3 entries.*2 dimensions"):
        to_zarr(ds, zarrdask.MemoryStore(), encoding={"v": {"chunks": (2, 2, 1)}})


# -- 4. non-standard calendars --------------------------------------------------------
@pytest.mark.parametrize("zarr_format", FORMATS)
def test_noleap_time_axis_appends_datetime64_as_xarray(tmp_path, zarr_format):
    cftime = pytest.importorskip("cftime")
    times = xr.date_range("2000-01-01", periods=3, freq="D", calendar="noleap", use_cftime=True)
    ds = xr.Dataset({"tas": ("time", np.arange(3.0))}, coords={"time": times})
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    to_zarr(ds, ours, zarr_format=zarr_format)
    ds.to_zarr(theirs, zarr_format=zarr_format)
    more = xr.Dataset({"tas": ("time", [3.0, 4.0])},
                      coords={"time": np.array(["2000-01-04", "2000-01-05"], dtype="datetime64[us]")})
    to_zarr(more, ours, append_dim="time")
    more.to_zarr(theirs, append_dim="time")
    a, b = xr.open_zarr(ours).compute(), xr.open_zarr(theirs).compute()
    xr.testing.assert_identical(a, b)
    assert a.time.values[-1] == cftime.DatetimeNoLeap(2000, 1, 5)
    assert a.time.encoding["calendar"] == "noleap"


# -- 5. validation and encodings ------------------------------------------------------
def test_types_of_errors_are_xarrays():
    ds = xr.Dataset({"v": (("x", "y"), np.zeros((10, 9)))})
    with pytest.raises(TypeError, match="chunks"):
        to_zarr(ds, zarrdask.MemoryStore(), encoding={"v": {"chunks": (5, 4.5)}})
    store = zarrdask.MemoryStore()
    to_zarr(ds, store)
    with pytest.raises(TypeError, match="region"):
        to_zarr(ds, store, region=slice(None))
    with pytest.raises(TypeError, match="slice"):
        to_zarr(ds.isel(x=[0, 1]), store, region={"x": [0, 1]})
    with pytest.raises(KeyError):
        to_zarr(ds, zarrdask.MemoryStore(), encoding={"nope": {}})
    with pytest.raises(ValueError, match="castable"):
        to_zarr(ds, zarrdask.MemoryStore(), encoding={"v": "foo"})


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_append_misuses_are_refused_and_change_nothing(tmp_path, zarr_format):
    path = tmp_path / "a.zarr"
    ds = xr.Dataset({"v": ("t", np.arange(4.0))}, coords={"t": np.arange(4)})
    to_zarr(ds, path, zarr_format=zarr_format)
    before = _keys_and_bytes(path)
    more = xr.Dataset({"v": ("t", [9.0])}, coords={"t": [4]})
    cases = [
        (ValueError, dict(append_dim="t", encoding={"v": {"chunks": (1,)}})),  # encoding of an existing variable
        (ValueError, dict(append_dim="nope")),  # not a dimension of the store
        (ValueError, dict(append_dim="t", mode="w-")),  # append_dim needs mode a
        (ValueError, dict(append_dim="t", mode="r+")),
        (ValueError, dict(mode="a")),  # sizes differ but no append_dim
    ]
    for error, kwargs in cases:
        with pytest.raises(error):
            to_zarr(more, path, **kwargs)
        assert _keys_and_bytes(path) == before, kwargs
    with pytest.raises(ValueError):  # a dimension the variable does not have
        to_zarr(xr.Dataset({"v": ("u", [1.0])}), path, append_dim="u")
    assert _keys_and_bytes(path) == before


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_region_writes_with_scalar_variables(tmp_path, zarr_format):
    path = tmp_path / "r.zarr"
    ds = xr.Dataset({"x": 0, "y": ("z", [1, 2])})
    to_zarr(ds, path, zarr_format=zarr_format)
    to_zarr(xr.Dataset({"x": 5}), path, region={}, mode="r+")
    assert int(xr.open_zarr(path).x) == 5
    with pytest.raises(ValueError, match="none of the region's dimensions"):
        to_zarr(xr.Dataset({"x": 5, "y": ("z", [3])}), path, region={"z": slice(0, 1)})


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_variable_named_none_and_unnamed_dataarrays_round_trip(tmp_path, zarr_format):
    ds = xr.Dataset({None: (("x", "y"), [[0, 1], [2, 3]])})
    to_zarr(ds, tmp_path / "n.zarr", zarr_format=zarr_format)
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "n.zarr").compute(), ds)
    for name, coords in [(None, {}), ("x", {"x": [1, 2]}), ("v", {})]:
        arr = xr.DataArray(np.arange(2), dims="x", coords=coords, name=name)
        to_zarr(arr, tmp_path / f"da{name}.zarr", zarr_format=zarr_format)
        xr.testing.assert_identical(xr.open_dataarray(tmp_path / f"da{name}.zarr", engine="zarr").compute(), arr)


def test_invalid_variable_names_raise_xarrays_types():
    for name, error in [(0, TypeError), ((4, 5), TypeError), (True, TypeError), ("", ValueError)]:
        with pytest.raises(error, match="string"):
            to_zarr(xr.Dataset({name: xr.DataArray(np.zeros(2))}), zarrdask.MemoryStore())


@pytest.mark.parametrize("dtype", [int, float])
def test_v2_fill_value_from_the_cf_fill_value(tmp_path, dtype):
    ds = xr.Dataset({"foo": ("x", da.from_array(np.zeros(3, dtype=dtype), chunks=3))})
    to_zarr(ds, tmp_path / "f.zarr", zarr_format=2, compute=False, consolidated=False,
            encoding={"foo": {"_FillValue": -1}})
    assert zarrdask.open_array(str(tmp_path / "f.zarr"), path="foo").fill_value == -1
    unmasked = xr.open_dataset(tmp_path / "f.zarr", engine="zarr", mask_and_scale=False, consolidated=False)
    assert list(unmasked.foo.values) == [-1] * 3 and unmasked.foo.attrs["_FillValue"] == -1
    with pytest.raises(ValueError, match="_FillValue"):  # v2 has no separate fill_value, as in xarray
        to_zarr(ds, tmp_path / "g.zarr", zarr_format=2, encoding={"foo": {"fill_value": -1}})


def test_v3_compressor_objects_in_a_v2_array(tmp_path):
    zarr = pytest.importorskip("zarr")
    from numcodecs import Blosc, GZip, Zstd

    ds = xr.Dataset({"v": ("x", np.arange(10.0))})
    cases = [
        (zarr.codecs.BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle"),
         Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE)),
        ({"name": "gzip", "configuration": {"level": 3}}, GZip(level=3)),
        (zarr.codecs.ZstdCodec(level=2), Zstd(level=2)),
        (Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE), Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)),
    ]
    for given, stored in cases:
        to_zarr(ds, tmp_path / "c.zarr", mode="w", zarr_format=2, encoding={"v": {"compressors": (given,)}})
        back = xr.open_zarr(tmp_path / "c.zarr")
        assert back.v.encoding["compressors"] == (stored,)
        xr.testing.assert_identical(back.compute(), ds)
    with pytest.raises(TypeError, match="no numcodecs equivalent"):
        to_zarr(ds, tmp_path / "c.zarr", mode="w", zarr_format=2,
                encoding={"v": {"compressors": ({"name": "transpose", "configuration": {"order": [0]}},)}})


def test_default_zarr_format_setting(tmp_path):
    ds = xr.Dataset({"v": ("x", np.arange(3))})
    with zarrdask.config.set(default_zarr_format=2):
        to_zarr(ds, tmp_path / "a.zarr")
        assert zarrdask.create_array(zarrdask.MemoryStore(), shape=(2,), dtype="i1").zarr_format == 2
    assert zarrdask.open_group(str(tmp_path / "a.zarr")).zarr_format == 2
    with pytest.raises(ValueError, match="2 or 3"):
        zarrdask.config.set(default_zarr_format=4)


def test_unknown_keywords_are_a_type_error():
    ds = xr.Dataset({"v": ("x", np.arange(3))})
    with pytest.raises(TypeError):
        to_zarr(ds, zarrdask.MemoryStore(), resume_from_somewhere=True)


def test_read_only_store_is_refused_before_anything(tmp_path):
    ds = xr.Dataset({"v": ("x", np.arange(3))})
    to_zarr(ds, tmp_path / "a.zarr")
    ro = zarrdask.LocalStore(str(tmp_path / "a.zarr"), read_only=True)
    with pytest.raises(zarrdask.errors.ReadOnlyError):
        to_zarr(ds, ro, mode="w")
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "a.zarr").compute(), ds)


@pytest.mark.parametrize("zarr_format", [3])
def test_auto_shards(tmp_path, zarr_format):
    ds = xr.Dataset({"v": (("x", "y"), np.zeros((100, 5)))})
    to_zarr(ds, tmp_path / "a.zarr", encoding={"v": {"chunks": (10, 5), "shards": "auto"}})
    a = zarrdask.open_array(str(tmp_path / "a.zarr"), path="v")
    assert a.chunks == (10, 5) and a.shards == (20, 5)  # two chunks per shard where an axis has more than 8
