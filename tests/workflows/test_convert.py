"""zarrdask.workflows.convert: v2 hierarchies written by zarr-python become v3
(sharded or not) that zarr-python and xarray read equal to the source; resumable;
verified."""

from __future__ import annotations

import json
import warnings

import numcodecs
import numpy as np
import pytest
import xarray as xr
zarr = pytest.importorskip("zarr")  # zarr-python, which needs numcodecs >= 0.14

import zarrdask
from zarrdask.errors import NodeConflictError
from zarrdask.storage import LocalStore, MemoryStore
from zarrdask.storage.wrappers import CountingStore
from zarrdask.workflows.convert import VerificationError, convert

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

RNG = np.random.default_rng(7)

# name: (dtype, shape, chunks, create_array keywords)
CASES = {
    "temp": (">f8", (20, 12), (8, 5), {"compressors": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)}),
    "count": ("<i4", (20,), (7,), {"compressors": numcodecs.Zstd(level=3),
                                   "filters": [numcodecs.Delta(dtype="<i4")]}),
    "mask": ("|b1", (20, 12), (10, 12), {"compressors": numcodecs.GZip(level=1)}),
    "small": ("<u2", (6, 4), (3, 3), {"compressors": None, "order": "F"}),
    "code": ("|S3", (5,), (2,), {}),
    "label": ("<U4", (5,), (5,), {"compressors": numcodecs.Zstd()}),
    "when": ("<M8[s]", (4,), (4,), {}),
}


def _values(dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return RNG.random(shape).astype(dt)
    if dt.kind in "iu":
        return RNG.integers(0, 1000, shape).astype(dt)
    if dt.kind == "b":
        return RNG.random(shape) > 0.5
    if dt.kind == "S":
        return np.array([b"ab", b"", b"xyz", b"q", b"zz"][: shape[0]], dt)
    if dt.kind == "U":
        return np.array(["été", "", "abcd", "z", "ñ"][: shape[0]], dt)
    return np.array(["2000-01-01T00:00:00", "2001-02-03T04:05:06", "1999-12-31", "2020-06-01"], dt)


def _v2_hierarchy(path, *, consolidated=True, separator="."):
    root = zarr.open_group(str(path), mode="w", zarr_format=2, attributes={"title": "v2 source", "n": 3})
    dims = {"temp": ["t", "x"], "count": ["t"], "mask": ["t", "x"], "small": ["a", "b"],
            "code": ["k"], "label": ["k"], "when": ["w"]}
    for name, (dtype, shape, chunks, kw) in CASES.items():
        a = root.create_array(name, shape=shape, chunks=chunks, dtype=dtype, chunk_key_encoding={"name": "v2", "separator": separator},
                              attributes={"_ARRAY_DIMENSIONS": dims[name], "units": "K"}, **kw)
        a[...] = _values(dtype, shape)
    sub = root.create_group("sub", attributes={"kind": "nested"})
    b = sub.create_array("b", shape=(9, 9), chunks=(4, 4), dtype="<f4", fill_value=np.nan,
                         attributes={"_ARRAY_DIMENSIONS": ["p", "q"]})
    b[:4, :4] = 1.5
    if consolidated:
        zarr.consolidate_metadata(str(path))
    return root


def _assert_same(src_path, dst_path):
    src = zarr.open_group(str(src_path), mode="r")
    dst = zarr.open_group(str(dst_path), mode="r", zarr_format=3)
    names = sorted(k for k, _ in src.members(max_depth=None))
    assert sorted(k for k, _ in dst.members(max_depth=None)) == names
    for name in names:
        s, d = src[name], dst[name]
        if isinstance(s, zarr.Array):
            np.testing.assert_array_equal(d[...], s[...], err_msg=name)
            attrs = dict(s.attrs)
            dims = attrs.pop("_ARRAY_DIMENSIONS")
            assert tuple(d.metadata.dimension_names) == tuple(dims)
            got = dict(d.attrs)
            if s.fill_value is not None and s.dtype.kind in "biufc":
                # xarray reads v2's fill_value as _FillValue; v3 needs the attribute
                assert "_FillValue" in got
                got.pop("_FillValue")
            assert got == attrs
        else:
            assert dict(d.attrs) == dict(s.attrs)
    assert dict(dst.attrs) == dict(src.attrs)


@pytest.mark.parametrize("layout", ["same", "sharded"])
def test_v2_written_by_zarr_python_to_v3(tmp_path, layout):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _v2_hierarchy(src)
    kw = {"shards": (16, 10), "chunks": (8, 5)} if layout == "sharded" else {}
    result = convert(str(src), str(dst), **kw, scheduler="threads")
    assert result.ok and result.tasks_skipped == 0
    assert {a.path for a in result.arrays} == {*CASES, "sub/b"}
    assert all(a.source_sha256 == a.target_sha256 for a in result.arrays)
    _assert_same(src, dst)
    meta = json.loads((dst / "temp" / "zarr.json").read_text())
    if layout == "sharded":
        assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [16, 10]
        sharding = meta["codecs"][0]
        assert sharding["name"] == "sharding_indexed"
        assert sharding["configuration"]["chunk_shape"] == [8, 5]
        assert [c["name"] for c in sharding["configuration"]["codecs"]] == ["bytes", "blosc"]
        assert zarrdask.open_array(str(dst), path="temp").shards == (16, 10)
        # arrays of another rank keep their own layout
        assert zarrdask.open_array(str(dst), path="count").shards is None
    else:
        assert meta["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
        assert [c["name"] for c in meta["codecs"]] == ["bytes", "blosc"]
    # the source's consolidated metadata is carried over
    assert "consolidated_metadata" in json.loads((dst / "zarr.json").read_text())


def test_xarray_reads_the_result_equal_to_the_source(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _v2_hierarchy(src)
    convert(str(src), str(dst), shards=(16, 12), chunks=(8, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # v2's fill_value is xarray's _FillValue (so b"" would read as NaN); v3's is not
        before = xr.open_dataset(src, engine="zarr", mask_and_scale=False).drop_vars("small")
        after_zarr = xr.open_dataset(dst, engine="zarr").drop_vars("small")
    after_ours = xr.open_dataset(dst, engine="zarrdask").drop_vars("small")
    xr.testing.assert_identical(after_zarr, after_ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        after_zarr = xr.open_dataset(dst, engine="zarr", mask_and_scale=False).drop_vars("small")
    # xarray's v2 fill_value → _FillValue mapping is v2-only; compare values and attributes
    for name in before.variables:
        np.testing.assert_array_equal(after_zarr[name].values, before[name].values, err_msg=name)
        assert after_zarr[name].dims == before[name].dims
    assert after_zarr.attrs == before.attrs


def test_compressors_replaced_and_separator_kept(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _v2_hierarchy(src, consolidated=False, separator="/")
    convert(str(src), str(dst), compressors=[{"name": "zstd", "configuration": {"level": 5}}])
    meta = json.loads((dst / "count" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["numcodecs.delta", "bytes", "zstd"]
    assert meta["chunk_key_encoding"]["configuration"]["separator"] == "/"
    assert "consolidated_metadata" not in json.loads((dst / "zarr.json").read_text())
    _assert_same(src, dst)
    convert(str(src), str(tmp_path / "raw.zarr"), compressors=[])
    raw = json.loads((tmp_path / "raw.zarr" / "temp" / "zarr.json").read_text())
    assert [c["name"] for c in raw["codecs"]] == ["bytes"]


def test_a_single_array(tmp_path):
    src = tmp_path / "a.zarr"
    a = zarr.create_array(str(src), shape=(30,), chunks=(4,), dtype="<i8", zarr_format=2)
    a[:] = np.arange(30)
    result = convert(zarrdask.open_array(str(src), mode="r"), str(tmp_path / "b.zarr"), shards=(12,))
    assert result.ok and result.tasks_run == 3
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "b.zarr"))[:], np.arange(30))


class _FailingStore(LocalStore):
    """Dies after ``budget`` store calls writing chunks (a task stores one shard
    or chunk per call), as an interrupted conversion would."""

    budget = 3

    def set_many(self, items):
        items = dict(items)
        if any(not k.endswith(("zarr.json", ".zarray", ".zgroup", ".zattrs")) for k in items):
            if _FailingStore.budget <= 0:
                raise OSError("simulated interruption")
            _FailingStore.budget -= 1
        return super().set_many(items)


def test_resume_after_an_interruption(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _v2_hierarchy(src)
    kw = {"shards": (8, 10), "chunks": (4, 5)}
    _FailingStore.budget = 6
    with pytest.raises(OSError, match="simulated interruption"):
        convert(str(src), _FailingStore(dst), **kw, scheduler="sync")
    counting = CountingStore(LocalStore(dst))
    result = convert(str(src), counting, **kw, scheduler="sync")
    assert result.ok
    # six store calls went through before the interruption: at least one whole task's
    # (how many depends on the order dask runs the tasks in, which follows their keys)
    assert result.tasks_skipped >= 1 and result.tasks_run > 0
    total = result.tasks_run + result.tasks_skipped
    _assert_same(src, dst)
    # a third run writes nothing (only blocks holding nothing but the fill value,
    # which are never stored, are looked at again)
    again = CountingStore(LocalStore(dst))
    third = convert(str(src), again, **kw)
    assert third.tasks_run + third.tasks_skipped == total and third.tasks_run <= 1
    assert again.keys_written == 1  # the root zarr.json, with the consolidated metadata


def test_verification_finds_a_difference(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _v2_hierarchy(src)
    convert(str(src), str(dst), shards=(16, 12), chunks=(8, 6))
    target = zarrdask.open_array(str(dst), path="temp", mode="r+")
    target[0, 0] = -1.0  # the shard exists, so a resumed run does not rewrite it
    with pytest.raises(VerificationError, match="'temp'"):
        convert(str(src), str(dst), shards=(16, 12), chunks=(8, 6))


def test_refuses_to_clobber_a_different_target(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _v2_hierarchy(src)
    convert(str(src), str(dst))
    with pytest.raises(NodeConflictError, match="temp"):
        convert(str(src), str(dst), shards=(16, 12))
    result = convert(str(src), str(dst), shards=(16, 12), overwrite=True)
    # shards are whole chunks: the source's (8, 5) chunks make (16, 12) into (16, 10)
    assert result.ok and zarrdask.open_array(str(dst), path="temp").shards == (16, 10)


def test_bad_requests(tmp_path):
    src = tmp_path / "v3.zarr"
    zarrdask.create_array(str(src), shape=(4,), dtype="i4")
    with pytest.raises(ValueError, match="v3"):
        convert(str(src), MemoryStore(), zarr_format=2)
    v2 = tmp_path / "v2.zarr"
    zarrdask.create_array(str(v2), shape=(4,), dtype="i4", zarr_format=2)
    with pytest.raises(ValueError, match="no shards"):
        convert(str(v2), MemoryStore(), zarr_format=2, shards=(2,))
    with pytest.raises(KeyError):
        convert(str(tmp_path / "missing.zarr"), MemoryStore())


@pytest.mark.parametrize("fill", [0, -9, None])
def test_datasets_written_by_xarray_open_the_same_after_conversion(tmp_path, fill):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    ds = xr.Dataset(
        {"n": (("t",), np.array([0, 1, -9, 3], "i2")), "f": (("t",), np.array([1.0, np.nan, 2.0, 0.0]))},
        coords={"t": np.arange(4)},
    )
    if fill is not None:
        ds["n"].encoding["_FillValue"] = fill
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(src, zarr_format=2, mode="w")
        before = xr.open_dataset(src, engine="zarr")
        convert(str(src), str(dst), shards=(4,))
        after = xr.open_dataset(dst, engine="zarr")
    xr.testing.assert_identical(before, after)
    xr.testing.assert_identical(after, xr.open_dataset(dst, engine="zarrdask"))


def test_v2_relayout_takes_numcodecs_compressors(tmp_path):
    src = tmp_path / "src.zarr"
    _v2_hierarchy(src, consolidated=False)
    for comp in ("zstd", {"id": "gzip", "level": 1}, numcodecs.Zstd(level=2)):
        dst = tmp_path / f"dst{id(comp)}.zarr"
        convert(str(src), str(dst), zarr_format=2, compressors=comp)
        assert "id" in json.loads((dst / "temp" / ".zarray").read_text())["compressor"]
    with pytest.raises(ValueError, match="numcodecs"):
        convert(str(src), str(tmp_path / "bad.zarr"), zarr_format=2, compressors={"name": "zstd"})


def test_variable_length_strings_and_bytes(tmp_path):
    from zarr.core.dtype import VariableLengthBytes

    src, dst = tmp_path / "s.zarr", tmp_path / "d.zarr"
    g = zarr.open_group(str(src), mode="w", zarr_format=2)
    names = np.array(["a", "", "é", "long" * 1250, "z"])
    g.create_array("names", shape=(5,), chunks=(2,), dtype=str)[:] = names
    blobs = np.array([b"x", b"", b"\x00\x01"], dtype=object)
    g.create_array("blobs", shape=(3,), chunks=(2,), dtype=VariableLengthBytes())[:] = blobs
    result = convert(str(src), str(dst), shards=(4,))
    assert result.ok
    z = zarr.open_group(str(dst), mode="r")
    assert list(z["names"][:]) == list(names) and list(z["blobs"][:]) == list(blobs)
