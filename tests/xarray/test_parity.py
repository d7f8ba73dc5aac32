"""engine="zarrdask" opens what engine="zarr" opens, the same way; encodings go
back through both writers; xarray's keywords are taken with their meaning."""

from __future__ import annotations

import asyncio
import json
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
zarr = pytest.importorskip("zarr")  # zarr-python, which needs numcodecs >= 0.14

import zarrdask
from zarrdask.errors import AlignmentWarning, MetadataError
from zarrdask.xarray.backend import CodecDocument, ZarrdaskBackendArray

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore:.*Zarr format 3.*:UserWarning",
                                        "ignore:Numcodecs codecs are not in the Zarr version 3:UserWarning")


def _zarr_python_cf_store(path, *, fmt: int, consolidated: bool, sharded: bool = False) -> None:
    """A CF-style group as zarr-python writes it: a 0-d grid-mapping variable and
    a 0-d scalar coordinate (v3: no ``dimension_names`` at all), a data variable,
    and (v3) an array with a ``null`` dimension name."""
    g = zarr.open_group(path, mode="w", zarr_format=fmt)
    dims = {"dimension_names": ["time", "x"]} if fmt == 3 else {}
    extra = {} if fmt == 3 else {"_ARRAY_DIMENSIONS": ["time", "x"]}
    temp = g.create_array("temp", shape=(4, 6), chunks=(2, 3), shards=(4, 6) if sharded else None, dtype="f4",
                          attributes={"grid_mapping": "crs", "coordinates": "height", "units": "K", **extra},
                          **dims)
    temp[:] = np.arange(24, dtype="f4").reshape(4, 6)
    # (no zeros: zarr-python's default fill value 0 masks them in v2, for both engines)
    for name, dim, values in (("time", "time", np.arange(1.0, 5.0)), ("x", "x", np.linspace(1, 2, 6))):
        a = g.create_array(name, shape=values.shape, dtype="f8",
                           **({"dimension_names": [dim]} if fmt == 3 else {}),
                           attributes={} if fmt == 3 else {"_ARRAY_DIMENSIONS": [dim]})
        a[:] = values
    zero_d = {} if fmt == 3 else {"_ARRAY_DIMENSIONS": []}
    crs = g.create_array("crs", shape=(), dtype="i4",
                         attributes={"grid_mapping_name": "latitude_longitude", **zero_d})
    crs[...] = 1
    height = g.create_array("height", shape=(), dtype="f8", attributes={"units": "m", **zero_d})
    height[...] = 2.0
    if fmt == 3:
        assert "dimension_names" not in json.loads((path / "crs" / "zarr.json").read_text())
        anon = g.create_array("anon", shape=(2, 3), dtype="i2", dimension_names=[None, "z"])
        anon[:] = 7
    if consolidated:
        zarr.consolidate_metadata(str(path))


CF_CASES = [(2, False, False), (2, True, False), (3, False, False), (3, True, False), (3, False, True),
            (3, True, True)]
CF_IDS = [f"v{f}-{'cons' if c else 'plain'}{'-sharded' if s else ''}" for f, c, s in CF_CASES]


@pytest.mark.parametrize("case", CF_CASES, ids=CF_IDS)
def test_zero_d_and_null_dimension_names_open_as_xarrays_engine(tmp_path, case):
    fmt, consolidated, sharded = case
    path = tmp_path / "cf.zarr"
    _zarr_python_cf_store(path, fmt=fmt, consolidated=consolidated, sharded=sharded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = xr.open_dataset(path, engine="zarr")
        ours = xr.open_dataset(path, engine="zarrdask")
        xr.testing.assert_identical(ref, ours)
        assert ours.crs.dims == () and int(ours.crs) == 1 and float(ours.height) == 2.0
        assert "height" in ours.coords
        if fmt == 3:
            assert ours.anon.dims == (None, "z") == ref.anon.dims
        xr.testing.assert_identical(xr.open_dataset(path, engine="zarr", chunks={}).compute(),
                                    xr.open_dataset(path, engine="zarrdask", chunks={}).compute())
        tree_ref = xr.open_datatree(path, engine="zarr")
        tree = xr.open_datatree(path, engine="zarrdask")
        xr.testing.assert_identical(tree_ref, tree)


@pytest.mark.parametrize("fmt", [2, 3])
def test_zero_d_variables_in_mfdataset_datatree_and_appends(tmp_path, fmt):
    paths = []
    for i in range(2):
        p = tmp_path / f"part{i}.zarr"
        _zarr_python_cf_store(p, fmt=fmt, consolidated=True)
        g = zarr.open_group(p, mode="r+")
        g["time"][:] = np.arange(1.0, 5.0) + 4 * i
        zarr.consolidate_metadata(str(p))
        paths.append(p)
    kwargs = {"combine": "by_coords", "data_vars": "minimal", "coords": "minimal", "compat": "override"}
    ref = xr.open_mfdataset(paths, engine="zarr", **kwargs)
    ours = xr.open_mfdataset(paths, engine="zarrdask", **kwargs)
    xr.testing.assert_identical(ref.compute(), ours.compute())
    assert ours.sizes["time"] == 8

    # a subgroup holding 0-d variables, as a DataTree
    parent = tmp_path / "tree.zarr"
    xr.DataTree.from_dict({"/": xr.Dataset({"a": 1}), "/child": xr.open_dataset(paths[0], engine="zarr")}
                          ).to_zarr(parent, zarr_format=fmt)
    xr.testing.assert_identical(xr.open_datatree(parent, engine="zarr"), xr.open_datatree(parent, engine="zarrdask"))

    # appends into such a store, by zarrdask's writer and by xarray's
    more = xr.open_dataset(paths[1], engine="zarrdask").drop_vars(["crs", "height", "x"])
    more = more.drop_vars([v for v in more.variables if "time" not in more[v].dims])
    ours_target, ref_target = tmp_path / "ours.zarr", tmp_path / "ref.zarr"
    for target in (ours_target, ref_target):
        _zarr_python_cf_store(target, fmt=fmt, consolidated=True)
    more.zarrdask.to_zarr(ours_target, append_dim="time")
    more.to_zarr(ref_target, append_dim="time")
    for target in (ours_target, ref_target):
        got = xr.open_dataset(target, engine="zarrdask")
        assert got.sizes["time"] == 8 and got.crs.dims == ()
        xr.testing.assert_identical(got, xr.open_dataset(target, engine="zarr"))


# -- encodings go back through both writers ------------------------------------------------
def _codec_docs(path, name: str) -> list:
    doc = json.loads((path / name / "zarr.json").read_text())
    return doc["codecs"]


ENC_CASES = [(2, False), (3, False), (3, True)]


@pytest.mark.parametrize("fmt,sharded", ENC_CASES, ids=["v2", "v3", "v3-sharded"])
def test_encoding_is_accepted_unchanged_by_both_writers(tmp_path, fmt, sharded):
    import numcodecs

    src = tmp_path / "src.zarr"
    ds = xr.Dataset({"temp": (("time", "x"), np.random.default_rng(1).random((8, 12)).astype("f4"))},
                    coords={"time": np.arange(8), "x": np.arange(12)})
    if fmt == 2:
        enc = {"compressors": (numcodecs.Blosc(cname="zstd", clevel=3, shuffle=2),),
               "filters": (numcodecs.Delta(dtype="<f4"),), "chunks": (4, 6)}
    else:
        enc = {"compressors": ({"name": "zstd", "configuration": {"level": 5, "checksum": True}},),
               "filters": ({"name": "transpose", "configuration": {"order": [1, 0]}},),
               "serializer": {"name": "bytes", "configuration": {"endian": "big"}}, "chunks": (2, 3)}
        if sharded:
            enc["shards"] = (4, 6)
    ds.to_zarr(src, zarr_format=fmt, encoding={"temp": enc}, consolidated=False)
    opened = xr.open_dataset(src, engine="zarrdask", consolidated=False)
    encoding = opened.temp.encoding
    if fmt == 3:
        assert all(isinstance(c, CodecDocument) for c in (*encoding["compressors"], *encoding["filters"],
                                                          encoding["serializer"]))
        assert encoding["compressors"][0].level == 5 and encoding["compressors"][0]["name"] == "zstd"
        assert encoding["serializer"].endian == "big"
        with pytest.raises(AttributeError, match="no configuration field 'nope'"):
            encoding["serializer"].nope
    else:
        assert encoding["compressors"] == enc["compressors"] and encoding["filters"] == enc["filters"]
    assert encoding["chunks"] == enc["chunks"] and encoding["shards"] == enc.get("shards")

    subset = opened.isel(time=slice(0, 6))
    theirs, mine = tmp_path / "xarray.zarr", tmp_path / "zarrdask.zarr"
    subset.to_zarr(theirs, zarr_format=fmt)              # xarray's own writer (zarr-python)
    subset.zarrdask.to_zarr(mine, zarr_format=fmt)        # zarrdask's writer
    for out in (theirs, mine):
        xr.testing.assert_identical(xr.open_dataset(out, engine="zarr").load(), subset.load())
        if fmt == 3:
            assert _codec_docs(out, "temp") == _codec_docs(src, "temp"), out
        else:
            meta = json.loads((out / "temp" / ".zarray").read_text())
            ref = json.loads((src / "temp" / ".zarray").read_text())
            assert (meta["compressor"], meta["filters"], meta["chunks"]) == \
                (ref["compressor"], ref["filters"], ref["chunks"]), out
    # and engine="zarr"'s encoding goes through zarrdask's writer unchanged too
    from_zarr_engine = xr.open_dataset(src, engine="zarr", consolidated=False).isel(time=slice(0, 6))
    again = tmp_path / "again.zarr"
    from_zarr_engine.zarrdask.to_zarr(again, zarr_format=fmt)
    if fmt == 3:
        assert _codec_docs(again, "temp") == _codec_docs(src, "temp")


def test_codec_documents_compare_equal_to_zarr_python_codecs():
    doc = CodecDocument({"name": "blosc", "configuration": {"typesize": 4, "cname": "zstd", "clevel": 3,
                                                             "shuffle": "shuffle", "blocksize": 0}})
    assert doc == zarr.codecs.BloscCodec(typesize=4, cname="zstd", clevel=3, shuffle="shuffle", blocksize=0)
    assert doc != zarr.codecs.BloscCodec(typesize=4, cname="lz4", clevel=3, shuffle="shuffle", blocksize=0)
    assert doc.name == "blosc" and doc.cname == "zstd" and doc.to_dict() == dict(doc)
    import pickle

    assert pickle.loads(pickle.dumps(doc)) == doc and type(pickle.loads(pickle.dumps(doc))) is CodecDocument


# -- keywords on open ----------------------------------------------------------------------------
def test_open_keywords_of_xarrays_engine(tmp_path):
    path = tmp_path / "kw.zarr"
    g = zarrdask.open_group(path, mode="w")
    a = g.create_array("v", shape=(4,), chunks=(2,), dtype="i2", fill_value=-1, dimension_names=["x"])
    a[:2] = [1, 2]  # the second chunk is never written: it reads as the fill value
    v2 = zarrdask.open_group(tmp_path / "kw2.zarr", mode="w", zarr_format=2)
    b = v2.create_array("v", shape=(4,), chunks=(2,), dtype="i2", fill_value=-1,
                        attributes={"_ARRAY_DIMENSIONS": ["x"]})
    b[:2] = [1, 2]
    common = {"consolidated": False, "mode": "r", "cache_members": False, "engine": "zarrdask"}
    # v3: the fill value is not a mask unless asked for
    plain = xr.open_dataset(path, use_zarr_fill_value_as_mask=None, **common)
    assert plain.v.values.tolist() == [1, 2, -1, -1] and plain.v.encoding["fill_value"] == -1
    masked = xr.open_dataset(path, use_zarr_fill_value_as_mask=True, **common)
    assert np.isnan(masked.v.values[2:]).all() and masked.v.values[:2].tolist() == [1, 2]
    # v2: it is, unless asked not to be
    assert np.isnan(xr.open_dataset(tmp_path / "kw2.zarr", **common).v.values[2:]).all()
    unmasked = xr.open_dataset(tmp_path / "kw2.zarr", use_zarr_fill_value_as_mask=False, **common)
    assert unmasked.v.values.tolist() == [1, 2, -1, -1] and "_FillValue" not in unmasked.v.attrs
    # open_zarr passes its keywords on (engine="zarr" names xarray's engine; here it is used by name)
    xr.testing.assert_identical(
        xr.open_dataset(path, engine="zarrdask", chunks={}, consolidated=False).compute(), plain)
    # store= is used instead of filename_or_obj
    xr.testing.assert_identical(
        xr.open_dataset("ignored", engine="zarrdask", backend_kwargs={"store": g, "consolidated": False}), plain)
    # mode="r+" opens writable
    assert xr.open_dataset(path, engine="zarrdask", mode="r+", consolidated=False).v.values.tolist() == [1, 2, -1, -1]


def test_consolidated_keyword_warnings_and_errors(tmp_path):
    path = tmp_path / "nocons.zarr"
    xr.Dataset({"v": ("x", [1, 2])}).to_zarr(path, consolidated=False)
    with pytest.warns(RuntimeWarning, match="Failed to open Zarr store with consolidated metadata"):
        xr.open_dataset(path, engine="zarrdask")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.open_dataset(path, engine="zarrdask", consolidated=False)
    with pytest.raises(MetadataError, match="consolidated=True.*no consolidated metadata"):
        xr.open_dataset(path, engine="zarrdask", consolidated=True)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        xr.open_dataset(tmp_path / "missing.zarr", engine="zarrdask")
    consolidated = tmp_path / "cons.zarr"
    xr.Dataset({"v": ("x", [1, 2])}).to_zarr(consolidated, consolidated=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xr.open_dataset(consolidated, engine="zarrdask")


def test_backend_array_is_not_mistaken_for_a_wrapper(tmp_path):
    path = tmp_path / "w.zarr"
    xr.Dataset({"v": ("x", np.arange(5))}).to_zarr(path)
    ds = xr.open_dataset(path, engine="zarrdask")
    backend_array = ds.v.variable._data.array
    while not isinstance(backend_array, ZarrdaskBackendArray):
        backend_array = backend_array.array
    assert not hasattr(backend_array, "array")
    assert isinstance(backend_array.get_array(), zarrdask.Array)
    assert asyncio.run(_load_async(ds)).v.values.tolist() == list(range(5))


async def _load_async(ds: xr.Dataset) -> xr.Dataset:
    return await ds.load_async()


# -- keywords on write -----------------------------------------------------------------------------
def _misaligned() -> xr.Dataset:
    return xr.Dataset({"v": (("t", "x"), da.from_array(np.arange(120.0).reshape(12, 10), chunks=(5, 10)))})


def test_safe_chunks_true_refuses_and_writes_nothing(tmp_path):
    path = tmp_path / "safe.zarr"
    with pytest.raises(ValueError, match=r"variable 'v': its dask chunks \(\(5, 5, 2\), \(10,\)\) cut through "
                                         r"the array's chunks of shape \(4, 10\).*align_chunks=True"):
        _misaligned().zarrdask.to_zarr(path, encoding={"v": {"chunks": (4, 10)}}, safe_chunks=True)
    assert not path.exists()
    # aligned chunks pass
    _misaligned().chunk({"t": 4}).zarrdask.to_zarr(path, encoding={"v": {"chunks": (4, 10)}}, safe_chunks=True)
    # mode r+: a region whose edges cut through a chunk is refused, as xarray refuses it
    part = xr.Dataset({"v": (("t", "x"), da.zeros((3, 10), chunks=(3, 10)))})
    with pytest.raises(ValueError, match=r"region t=slice\(1, 4, None\) starts or ends inside"):
        part.zarrdask.to_zarr(path, region={"t": slice(1, 4)}, mode="r+", safe_chunks=True)
    part.zarrdask.to_zarr(path, region={"t": slice(1, 4)}, mode="r+", safe_chunks=False)
    assert xr.open_dataset(path, engine="zarrdask").v.values[1:4].sum() == 0


def test_default_rechunks_with_a_warning_and_align_chunks_silently(tmp_path):
    with pytest.warns(AlignmentWarning, match=r"array '/v': rechunking the dask array from \(5, 10\) to "
                                              r"\(8, 10\) so that each of its chunks"):
        _misaligned().zarrdask.to_zarr(tmp_path / "a.zarr", encoding={"v": {"chunks": (4, 10)}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _misaligned().zarrdask.to_zarr(tmp_path / "b.zarr", encoding={"v": {"chunks": (4, 10)}},
                                       align_chunks=True, chunkmanager_store_kwargs={"scheduler": "synchronous"})
    for name in ("a.zarr", "b.zarr"):
        np.testing.assert_array_equal(xr.open_dataset(tmp_path / name, engine="zarrdask").v.values,
                                      np.arange(120.0).reshape(12, 10))


def test_consolidated_none_writes_it_unless_the_store_cannot(tmp_path):
    _misaligned().chunk({"t": 4}).zarrdask.to_zarr(tmp_path / "c.zarr", consolidated=None)
    assert "consolidated_metadata" in json.loads((tmp_path / "c.zarr" / "zarr.json").read_text())
    _misaligned().chunk({"t": 4}).zarrdask.to_zarr(tmp_path / "n.zarr", consolidated=False)
    assert "consolidated_metadata" not in json.loads((tmp_path / "n.zarr" / "zarr.json").read_text())


def test_nczarr_dimension_references(tmp_path):
    """netCDF-C before 4.8.2 named dimensions only in ``.zarray``'s
    ``_NCZARR_ARRAY.dimrefs``; engine="zarr" reads them in mode "r", so do we."""
    path = tmp_path / "old_nczarr.zarr"
    path.mkdir()
    (path / ".zgroup").write_text(json.dumps({"zarr_format": 2, "_NCZARR_GROUP": {"dims": {"x": 2, "y": 3}}}))
    (path / "v").mkdir()
    (path / "v" / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2, 3], "dtype": "<f8", "chunks": [2, 3], "fill_value": None, "order": "C",
        "compressor": None, "filters": None, "_NCZARR_ARRAY": {"dimrefs": ["/x", "/y"], "storage": "chunked"}}))
    (path / "v" / ".zattrs").write_text(json.dumps({"units": "m", "_nczarr_attr": {"types": {"units": ">S1"}}}))
    (path / "v" / "0.0").write_bytes(np.arange(6.0).tobytes())
    ds = xr.open_dataset(path, engine="zarrdask", consolidated=False)
    assert ds.v.dims == ("x", "y") and ds.v.attrs == {"units": "m"}
    np.testing.assert_array_equal(ds.v.values, np.arange(6.0).reshape(2, 3))
    xr.testing.assert_identical(ds, xr.open_dataset(path, engine="zarr", consolidated=False))
    with pytest.raises(KeyError, match="required for xarray to determine variable dimensions"):
        xr.Dataset({"v": (("x", "y"), np.zeros((2, 3)))}).zarrdask.to_zarr(path, mode="a")


def test_vectorised_indexing_reads_only_the_chunks_of_the_points(tmp_path):
    from zarrdask.storage import LocalStore

    from .test_backend_matrix import RecordingStore

    path = tmp_path / "pts.zarr"
    values = np.arange(400.0).reshape(20, 20)
    xr.Dataset({"v": (("y", "x"), values)}).to_zarr(path, encoding={"v": {"chunks": (5, 5)}})
    store = RecordingStore(LocalStore(path, read_only=True))
    ds = xr.open_dataset(store, engine="zarrdask")
    rows, cols = xr.DataArray([1, 18, 7], dims="p"), xr.DataArray([2, 19, 7], dims="p")
    got = ds.v.isel(y=rows, x=cols)
    np.testing.assert_array_equal(got.values, values[[1, 18, 7], [2, 19, 7]])
    assert store.data_keys() == {"v/c/0/0", "v/c/3/3", "v/c/1/1"}  # not the 3x3 outer product
    ref = xr.open_dataset(path, engine="zarr")
    xr.testing.assert_identical(got.load(), ref.v.isel(y=rows, x=cols).load())
    # with slices among the arrays (split by xarray into an outer and an in-memory part)
    idx = {"y": xr.DataArray([[1, 2], [3, 4]], dims=("a", "b")), "x": slice(2, 9)}
    xr.testing.assert_identical(ds.v.isel(idx).load(), ref.v.isel(idx).load())


# -- zarr-python objects --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", [2, 3])
def test_zarr_python_objects_as_filename_or_obj_and_as_target(tmp_path, fmt):
    ds = xr.Dataset({"v": (("x",), np.arange(6.0))}, coords={"x": np.arange(1, 7)}, attrs={"title": "t"})
    store = zarr.storage.MemoryStore()
    ds.to_zarr(store, zarr_format=fmt, group="sub")
    ref = xr.open_dataset(store, engine="zarr", group="sub")
    # a zarr-python store, group and array; xarray's own ZarrStore
    xr.testing.assert_identical(xr.open_dataset(store, engine="zarrdask", group="sub"), ref)
    group = zarr.open_group(store, path="sub", mode="r")
    xr.testing.assert_identical(xr.open_dataset(group, engine="zarrdask"), ref)
    one = xr.open_dataset(group["v"], engine="zarrdask")
    assert list(one.data_vars) == ["v"] and one.v.values.tolist() == list(np.arange(6.0))
    zstore = xr.backends.ZarrStore.open_group(store, group="sub", mode="r")
    xr.testing.assert_identical(xr.open_dataset(zstore, engine="zarrdask"), ref)
    xr.testing.assert_identical(xr.open_datatree(store, engine="zarrdask")["sub"].to_dataset(), ref)
    # zarrdask's writer into a zarr-python store and into a group of one
    target = zarr.storage.LocalStore(str(tmp_path / "t.zarr"))
    ds.zarrdask.to_zarr(target, zarr_format=fmt)
    xr.testing.assert_identical(xr.open_dataset(str(tmp_path / "t.zarr"), engine="zarr"), ds)
    root = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=fmt)
    sub = root.create_group("deep")
    ds.zarrdask.to_zarr(sub)
    xr.testing.assert_identical(xr.open_dataset(root.store, engine="zarr", group="deep"), ds)
