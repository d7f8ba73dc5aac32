"""The small data types (``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn``,
``int2``/``int4``/``uint2``/``uint4``, ``complex_bfloat16``) through xarray:
engine="zarrdask" reads them, the Dataset writer writes them, and ``_FillValue``
is masked as xarray masks ``float16`` and ``int8`` (:mod:`zarrdask.xarray.small_types`)."""

from __future__ import annotations

import json
import warnings

import ml_dtypes
import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import UnknownDataTypeError
from zarrdask.metadata.dtypes import normalize_dtype
from zarrdask.xarray import to_zarr

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::RuntimeWarning")

#: the small floats that have a NaN (masked values become NaN in the same type, as float16)
NAN_FLOATS = ["bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e4m3", "float8_e4m3fnuz", "float8_e3m4",
              "float8_e8m0fnu"]
#: the small floats without NaN (masked to float32, as xarray promotes int8)
NO_NAN_FLOATS = ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"]
SUB_BYTE_INTS = ["int4", "uint4", "int2", "uint2"]
#: values every small float holds exactly (float8_e8m0fnu only has powers of two)
VALUES = np.array([0.5, 1.0, 2.0, 4.0, 1.0, 0.5])


def xr_write(ds: xr.Dataset, path) -> None:
    """xarray's own writer (engine="zarr", zarr-python), quietly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=3, consolidated=False)


def open_zd(path, **kwargs) -> xr.Dataset:
    return xr.open_dataset(path, engine="zarrdask", consolidated=False, **kwargs)


def stored(path, name="x") -> dict:
    return json.loads((path / name / "zarr.json").read_text())


def dataset(values: np.ndarray, fill=None, **attrs) -> xr.Dataset:
    ds = xr.Dataset({"x": ("i", values, attrs)})
    if fill is not None:
        ds.x.encoding["_FillValue"] = fill
    return ds


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


def assert_identical_bits(a: xr.Dataset, b: xr.Dataset) -> None:
    """``xr.testing.assert_identical``, with values compared bit for bit (xarray's
    own comparison cannot take the ml_dtypes types: ``numpy.isdtype`` refuses them)."""
    assert a.attrs == b.attrs
    assert set(a.variables) == set(b.variables) and set(a.coords) == set(b.coords)
    for name in a.variables:
        va, vb = a.variables[name], b.variables[name]
        assert (va.dims, va.dtype, va.attrs) == (vb.dims, vb.dtype, vb.attrs), name
        assert bits(va.values) == bits(vb.values), name


# -- reading: fill values masked as xarray masks float16 ----------------------------------
@pytest.mark.parametrize("name", NAN_FLOATS)
def test_small_float_fill_value_masked_as_float16(tmp_path, name):
    dtype = np.dtype(getattr(ml_dtypes, name))
    xr_write(dataset(VALUES.astype("f2"), fill=1.0, units="K"), tmp_path / "ref.zarr")
    to_zarr(dataset(VALUES.astype(dtype), fill=1.0, units="K"), tmp_path / "ml.zarr", zarr_format=3,
            consolidated=False)
    # the _FillValue attribute is stored as xarray stores float16's
    assert stored(tmp_path / "ml.zarr")["attributes"] == stored(tmp_path / "ref.zarr")["attributes"]
    assert stored(tmp_path / "ml.zarr")["fill_value"] == "NaN"

    ref = xr.open_dataset(tmp_path / "ref.zarr", engine="zarr", consolidated=False).x
    ref_zd = open_zd(tmp_path / "ref.zarr").x
    got = open_zd(tmp_path / "ml.zarr").x
    assert not isinstance(got.variable._data, np.ndarray)  # masked lazily
    assert ref.dtype == ref_zd.dtype == np.float16 and got.dtype == dtype
    np.testing.assert_array_equal(np.isnan(got.values.astype("f4")), np.isnan(ref.values))
    np.testing.assert_array_equal(got.values.astype("f4"), ref.values.astype("f4"))
    assert got.attrs == ref.attrs == {"units": "K"}
    assert got.encoding["_FillValue"] == ref.encoding["_FillValue"] == 1.0
    assert got.encoding["dtype"] == dtype and ref.encoding["dtype"] == np.float16


@pytest.mark.parametrize("name", NAN_FLOATS[:2])
def test_mask_and_scale_false_keeps_the_attribute(tmp_path, name):
    dtype = np.dtype(getattr(ml_dtypes, name))
    xr_write(dataset(VALUES.astype("f2"), fill=1.0), tmp_path / "ref.zarr")
    to_zarr(dataset(VALUES.astype(dtype), fill=1.0), tmp_path / "ml.zarr", zarr_format=3)
    ref = xr.open_dataset(tmp_path / "ref.zarr", engine="zarr", mask_and_scale=False).x
    got = open_zd(tmp_path / "ml.zarr", mask_and_scale=False).x
    assert got.dtype == dtype and got.attrs == ref.attrs == {"_FillValue": 1.0}
    assert "_FillValue" not in got.encoding
    np.testing.assert_array_equal(got.values.astype("f4"), VALUES.astype("f4"))
    # per variable, as xarray takes it
    assert open_zd(tmp_path / "ml.zarr", mask_and_scale={"x": False}).x.attrs == {"_FillValue": 1.0}
    assert np.isnan(open_zd(tmp_path / "ml.zarr", mask_and_scale={"y": False}).x.values.astype("f4")).sum() == 2


def test_nan_fill_value_masks_nothing_and_is_the_default(tmp_path):
    xr_write(dataset(VALUES.astype("f2")), tmp_path / "ref.zarr")
    to_zarr(dataset(VALUES.astype(ml_dtypes.bfloat16)), tmp_path / "ml.zarr", zarr_format=3)
    # as xarray gives every float: a NaN _FillValue attribute and a NaN fill value
    assert stored(tmp_path / "ml.zarr")["attributes"] == stored(tmp_path / "ref.zarr")["attributes"] \
        == {"_FillValue": "AAAAAAAA+H8="}
    assert stored(tmp_path / "ml.zarr")["fill_value"] == stored(tmp_path / "ref.zarr")["fill_value"] == "NaN"
    ref = xr.open_dataset(tmp_path / "ref.zarr", engine="zarr").x
    got = open_zd(tmp_path / "ml.zarr").x
    assert got.dtype == ml_dtypes.bfloat16 and np.isnan(got.encoding["_FillValue"]) \
        and np.isnan(ref.encoding["_FillValue"])
    assert got.attrs == ref.attrs == {}
    np.testing.assert_array_equal(got.values.astype("f4"), VALUES.astype("f4"))


@pytest.mark.parametrize("name", NO_NAN_FLOATS)
def test_small_float_without_nan_masks_to_float32(tmp_path, name):
    dtype = np.dtype(getattr(ml_dtypes, name))
    to_zarr(dataset(VALUES.astype(dtype), fill=1.0), tmp_path / "ml.zarr", zarr_format=3)
    doc = stored(tmp_path / "ml.zarr")
    assert doc["data_type"] == name and doc["fill_value"] == 0.0  # no NaN to default to
    got = open_zd(tmp_path / "ml.zarr").x
    assert got.dtype == np.float32 and got.encoding["dtype"] == dtype and got.encoding["_FillValue"] == 1.0
    np.testing.assert_array_equal(got.values, np.where(VALUES == 1.0, np.nan, VALUES).astype("f4"))
    # written again from what was read: the same stored values and attributes
    to_zarr(open_zd(tmp_path / "ml.zarr"), tmp_path / "again.zarr", zarr_format=3)
    assert stored(tmp_path / "again.zarr")["attributes"] == doc["attributes"]
    assert stored(tmp_path / "again.zarr")["data_type"] == name
    a, b = (zarrdask.open_array(str(tmp_path / p), path="x")[...] for p in ("ml.zarr", "again.zarr"))
    assert a.dtype == b.dtype == dtype and bits(a) == bits(b)
    # without a _FillValue nothing changes: the type stays
    to_zarr(dataset(VALUES.astype(dtype)), tmp_path / "plain.zarr", zarr_format=3)
    assert open_zd(tmp_path / "plain.zarr").x.dtype == dtype
    assert stored(tmp_path / "plain.zarr")["attributes"] == {}


@pytest.mark.parametrize("name", SUB_BYTE_INTS)
def test_sub_byte_int_fill_value_masked_as_int8(tmp_path, name):
    dtype = np.dtype(getattr(ml_dtypes, name))
    values = np.array([0, 1, 1, 0, 1, 0])
    xr_write(dataset(values.astype("i1"), fill=1), tmp_path / "ref.zarr")
    to_zarr(dataset(values.astype(dtype), fill=1), tmp_path / "ml.zarr", zarr_format=3)
    assert stored(tmp_path / "ml.zarr")["attributes"] == stored(tmp_path / "ref.zarr")["attributes"] \
        == {"_FillValue": 1}
    ref = xr.open_dataset(tmp_path / "ref.zarr", engine="zarr").x
    got = open_zd(tmp_path / "ml.zarr").x
    assert got.dtype == ref.dtype == np.float32
    np.testing.assert_array_equal(got.values, ref.values)
    assert got.encoding["_FillValue"] == ref.encoding["_FillValue"] == 1
    assert got.encoding["dtype"] == dtype
    # written back: NaN becomes the fill value again, in the stored type
    to_zarr(open_zd(tmp_path / "ml.zarr"), tmp_path / "again.zarr", zarr_format=3)
    back = zarrdask.open_array(str(tmp_path / "again.zarr"), path="x")[...]
    assert back.dtype == dtype and bits(back) == bits(values.astype(dtype))
    assert open_zd(tmp_path / "ml.zarr", mask_and_scale=False).x.dtype == dtype


def test_complex_bfloat16(tmp_path):
    dtype = normalize_dtype("complex_bfloat16")
    values = np.zeros(4, dtype)
    values["real"], values["imag"] = np.array([1, 2, 1, 3]), np.array([0, 0, 1, 3])
    to_zarr(dataset(values, fill=1 + 0j), tmp_path / "c.zarr", zarr_format=3)
    assert stored(tmp_path / "c.zarr")["data_type"] == "complex_bfloat16"
    assert stored(tmp_path / "c.zarr")["attributes"] == {"_FillValue": ["AAAAAAAA8D8=", "AAAAAAAAAAA="]}
    got = open_zd(tmp_path / "c.zarr").x
    assert got.dtype == dtype and got.encoding["_FillValue"] == 1 + 0j
    mask = np.isnan(got.values["real"].astype("f4"))
    np.testing.assert_array_equal(mask, [True, False, False, False])  # (1, 1) is not the fill value
    assert np.isnan(got.values["imag"].astype("f4")).tolist() == mask.tolist()
    to_zarr(open_zd(tmp_path / "c.zarr"), tmp_path / "again.zarr", zarr_format=3)
    back = zarrdask.open_array(str(tmp_path / "again.zarr"), path="x")[...]
    assert bits(back) == bits(values)
    raw = open_zd(tmp_path / "c.zarr", mask_and_scale=False).x
    assert raw.attrs == {"_FillValue": 1 + 0j} and bits(raw.values) == bits(values)


# -- writing ------------------------------------------------------------------------------
@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("name", ["bfloat16", "float8_e5m2", "float4_e2m1fn", "int4", "uint2"])
def test_writer_writes_nan_as_the_fill_value(tmp_path, name, chunked):
    dtype = np.dtype(getattr(ml_dtypes, name))
    integer = name.startswith(("int", "uint"))
    decoded = np.array([0, 1, np.nan, 3, np.nan, 2], dtype="f4")
    ds = xr.Dataset({"x": ("i", decoded, {"long_name": "x"})})
    ds.x.encoding.update({"dtype": dtype, "_FillValue": 3 if integer else 1.5, "chunks": (2,)})
    if chunked:
        ds = ds.chunk(i=3)
    to_zarr(ds, tmp_path / "w.zarr", zarr_format=3)
    doc = stored(tmp_path / "w.zarr")
    assert doc["data_type"] == name and doc["attributes"]["long_name"] == "x"
    raw = zarrdask.open_array(str(tmp_path / "w.zarr"), path="x")[...]
    fill = dtype.type(3 if integer else 1.5)
    expected = np.where(np.isnan(decoded), fill.astype("f4"), decoded).astype(dtype)
    assert raw.dtype == dtype and bits(raw) == bits(expected)
    got = open_zd(tmp_path / "w.zarr").x
    np.testing.assert_array_equal(got.values.astype("f4"), np.where(decoded == float(fill), np.nan, decoded))


@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
def test_every_family_round_trips_bit_exact(tmp_path, chunked):
    rng = np.random.default_rng(1)
    names = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "int4", "uint2", "complex_bfloat16"]
    data = {}
    for name in names:
        dtype = normalize_dtype(name)
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[dtype.itemsize]
        raw = rng.integers(0, np.iinfo(width).max, size=(6, 5), dtype=width, endpoint=True)
        if name in ("float4_e2m1fn", "int4"):
            raw &= 0x0F
        elif name == "uint2":
            raw &= 0x03
        values = raw.view(dtype)
        if dtype.names is None and name[0] in "bf":  # NaNs of other payloads would become the canonical one
            values = np.where(np.isnan(values.astype("f4")), dtype.type(0), values)
        data[name] = (("y", "x"), values)
    ds = xr.Dataset(data, attrs={"title": "ml"})
    if chunked:
        ds = ds.chunk(y=3, x=5)
    to_zarr(ds, tmp_path / "all.zarr", zarr_format=3, encoding={n: {"_FillValue": None} for n in names})
    back = open_zd(tmp_path / "all.zarr")
    assert back.attrs == {"title": "ml"}
    for name in names:
        assert back[name].dtype == normalize_dtype(name), name
        assert bits(back[name].values) == bits(np.asarray(ds[name].values)), name
        assert stored(tmp_path / "all.zarr", name)["data_type"] == name


def test_append_to_a_small_type_variable(tmp_path):
    ds = xr.Dataset({"x": ("t", np.array([1.0, np.nan, 2.0], "f4"))})
    ds.x.encoding.update({"dtype": ml_dtypes.bfloat16, "_FillValue": -1.0})
    to_zarr(ds, tmp_path / "a.zarr", zarr_format=3)
    more = xr.Dataset({"x": ("t", np.array([np.nan, 4.0], "f4"))})
    to_zarr(more, tmp_path / "a.zarr", append_dim="t")
    raw = zarrdask.open_array(str(tmp_path / "a.zarr"), path="x")[...]
    assert raw.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(raw.astype("f4"), [1, -1, 2, -1, 4])
    np.testing.assert_array_equal(open_zd(tmp_path / "a.zarr").x.values.astype("f4"), [1, np.nan, 2, np.nan, 4])


@pytest.mark.parametrize("chunked", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("name", ["bfloat16", "int4", "complex_bfloat16"])
def test_zarr_v2_is_a_typed_error_and_writes_nothing(tmp_path, name, chunked):
    dtype = normalize_dtype(name)
    ds = xr.Dataset({"a": ("i", np.arange(4.0)), "b": ("i", np.zeros(4, dtype))})
    if chunked:
        ds = ds.chunk(i=2)
    with pytest.raises(UnknownDataTypeError, match=rf"'b'.*'{name}'.*zarr_format=3"):
        to_zarr(ds, tmp_path / "new.zarr", zarr_format=2)
    assert not (tmp_path / "new.zarr").exists()
    # into an existing v2 group: the group is left as it was
    xr.Dataset({"c": ("j", np.arange(3))}).zarrdask.to_zarr(tmp_path / "old.zarr", zarr_format=2)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "old.zarr").rglob("*"))
    with pytest.raises(UnknownDataTypeError, match="zarr_format=3"):
        to_zarr(ds, tmp_path / "old.zarr", mode="a")
    after = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "old.zarr").rglob("*"))
    assert after == before
    assert list(open_zd(tmp_path / "old.zarr").data_vars) == ["c"]


@pytest.mark.slow
def test_bfloat16_and_int4_written_on_a_cluster_reopen_identical(tmp_path):
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(7)
    t2m = rng.standard_normal((8, 12)).astype(ml_dtypes.bfloat16)
    flags = rng.integers(-8, 8, size=(8, 12)).astype(ml_dtypes.int4)
    ds = xr.Dataset(
        {"t2m": (("y", "x"), t2m, {"units": "K", "long_name": "temperature"}),
         "flags": (("y", "x"), flags, {"meaning": "quality"})},
        coords={"y": np.arange(8), "x": np.arange(12.0)},
        attrs={"title": "small types"},
    ).chunk(y=4, x=6)
    enc = {"t2m": {"chunks": (2, 3), "shards": (4, 6)}, "flags": {"chunks": (4, 6)}}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        ds.zarrdask.to_zarr(tmp_path / "c.zarr", zarr_format=3, encoding=enc)
    back = open_zd(tmp_path / "c.zarr")
    assert_identical_bits(back, ds.compute())
    for name, values in (("t2m", t2m), ("flags", flags)):
        assert back[name].dtype == values.dtype
        assert bits(back[name].values) == bits(values)
    assert back.t2m.attrs == {"units": "K", "long_name": "temperature"} and back.flags.attrs == {"meaning": "quality"}
    assert stored(tmp_path / "c.zarr", "t2m")["data_type"] == "bfloat16"
    assert stored(tmp_path / "c.zarr", "flags")["data_type"] == "int4"
