"""v2 → v3 conversion of specs: the mapping, and the proof — a v2 hierarchy written
by zarr-python, converted, with its chunks copied key for key, reads equal in
zarr-python 3 (and in zarrdask)."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import zarrdask
from zarrdask.errors import (
    CodecError,
    MetadataError,
    UnknownCodecError,
    UnknownDataTypeError,
)
from zarrdask.zom import (
    ArraySpecV2,
    ArraySpecV3,
    GroupSpecV2,
    GroupSpecV3,
    convert_v2_to_v3,
    from_zarr,
)

zarr = pytest.importorskip("zarr")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::RuntimeWarning")


def v2(**kw):
    base = dict(shape=[6, 4], chunks=[3, 2], dtype="<f8", compressor=None, fill_value=0.0, order="C",
                filters=None, dimension_separator=".")
    return ArraySpecV2(**{**base, **kw})


BLOSC = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}


# -- the mapping ------------------------------------------------------------------------------
@pytest.mark.parametrize("changes, expected", [
    ({}, {"data_type": "float64", "fill_value": 0.0,
          "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}),
    ({"dtype": ">i4", "fill_value": -1, "compressor": {"id": "zlib", "level": 3}},
     {"data_type": "int32", "fill_value": -1,
      "codecs": [{"name": "bytes", "configuration": {"endian": "big"}},
                 {"name": "numcodecs.zlib", "configuration": {"level": 3}}]}),
    ({"dtype": "|u1", "compressor": {**BLOSC, "shuffle": -1}, "fill_value": 7},
     {"data_type": "uint8", "fill_value": 7,
      "codecs": [{"name": "bytes"}, {"name": "blosc", "configuration": {
          "typesize": 1, "cname": "lz4", "clevel": 5, "shuffle": "bitshuffle", "blocksize": 0}}]}),
    ({"order": "F", "compressor": BLOSC, "fill_value": "NaN"},
     {"data_type": "float64", "fill_value": "NaN",
      "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                 {"name": "bytes", "configuration": {"endian": "little"}},
                 {"name": "blosc", "configuration": {
                     "typesize": 8, "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}}]}),
    ({"order": "F", "filters": [{"id": "delta", "dtype": "<f8", "astype": "<f4"}],
      "compressor": {"id": "zstd", "level": 3}},
     {"data_type": "float64", "fill_value": 0.0,
      "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                 {"name": "numcodecs.delta", "configuration": {"dtype": "<f8", "astype": "<f4"}},
                 {"name": "bytes", "configuration": {"endian": "little"}},
                 {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]}),
    ({"filters": [{"id": "fixedscaleoffset", "offset": 0, "scale": 10, "dtype": "<f8", "astype": "|u1"}],
      "compressor": {"id": "gzip", "level": 1}},
     {"data_type": "float64", "fill_value": 0.0,
      "codecs": [{"name": "numcodecs.fixedscaleoffset",
                  "configuration": {"offset": 0, "scale": 10, "dtype": "<f8", "astype": "|u1"}},
                 {"name": "bytes"},  # the serializer sees uint8
                 {"name": "gzip", "configuration": {"level": 1}}]}),
    ({"dtype": "<i2", "filters": [{"id": "shuffle", "elementsize": 2}], "fill_value": 0},
     {"data_type": "int16", "fill_value": 0,
      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                 {"name": "numcodecs.shuffle", "configuration": {"elementsize": 2}}]}),  # bytes → bytes filter
    ({"dtype": "|O", "filters": [{"id": "vlen-utf8"}], "fill_value": "", "compressor": BLOSC},
     {"data_type": "string", "fill_value": "",
      "codecs": [{"name": "vlen-utf8", "configuration": {}}, {"name": "blosc", "configuration": {
          "typesize": 1, "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}}]}),
    ({"dtype": "|O", "filters": [{"id": "vlen-bytes"}], "fill_value": None},
     {"data_type": "variable_length_bytes", "fill_value": "",
      "codecs": [{"name": "vlen-bytes", "configuration": {}}]}),
    ({"dtype": "<M8[ns]", "fill_value": "NaT"},
     {"data_type": {"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}},
      "fill_value": -9223372036854775808, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}),
    ({"dtype": ">c8", "fill_value": ["NaN", 1.0]},
     {"data_type": "complex64", "fill_value": ["NaN", 1.0],
      "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]}),
    ({"dtype": "|S4", "fill_value": "YWI="},
     {"data_type": {"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}, "fill_value": "YWI=",
      "codecs": [{"name": "bytes"}]}),
    ({"dtype": "<U2", "fill_value": "é"},
     {"data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}, "fill_value": "é",
      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}),
    ({"dtype": [["a", ">i2"], ["b", ">f4"]], "fill_value": None},
     {"data_type": {"name": "structured", "configuration": {"fields": [["a", "int16"], ["b", "float32"]]}},
      "fill_value": "AAAAAAAA", "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]}),
    ({"dtype": "<f4", "fill_value": None},  # no fill value: the type's zero
     {"data_type": "float32", "fill_value": 0.0,
      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}),
])
def test_array_mapping(changes, expected):
    out = convert_v2_to_v3(v2(**changes))
    assert isinstance(out, ArraySpecV3)
    doc = out.to_json()
    for key, value in expected.items():
        assert doc[key] == value, key
    assert doc["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    assert doc["chunk_grid"] == {"name": "regular", "configuration": {"chunk_shape": [3, 2]}}
    assert doc["storage_transformers"] == [] and "dimension_names" not in doc


def test_dimension_separator_and_dimension_names():
    spec = v2(dimension_separator="/", attributes={"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m"})
    out = spec.to_v3()
    assert out.to_json()["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "/"}}
    assert out.dimension_names == ("y", "x") and dict(out.attributes) == {"units": "m"}
    absent = ArraySpecV2(shape=[2], chunks=[2], dtype="|u1", compressor=None, fill_value=0, filters=None)
    assert absent.to_v3().chunk_key_encoding["configuration"]["separator"] == "."  # absent means "."


def test_groups_are_converted_recursively():
    tree = GroupSpecV2(attributes={"title": "t"}, members={"g": GroupSpecV2(members={"a": v2()}), "b": v2()})
    out = convert_v2_to_v3(tree)
    assert isinstance(out, GroupSpecV3) and dict(out.attributes) == {"title": "t"}
    assert list(out.to_flat()) == ["/", "/g", "/g/a", "/b"]
    assert out.members["g"].members["a"] == convert_v2_to_v3(v2())
    assert tree.to_v3() == out


@pytest.mark.parametrize("spec, error, message", [
    (v2(dtype="|O", filters=[{"id": "vlen-array", "dtype": "<i4"}], fill_value=None), UnknownCodecError,
     "/: an object array with the object codec 'vlen-array'"),
    (v2(dtype="|O", filters=None, fill_value=None), UnknownCodecError, "no object codec"),
    (v2(dtype=[["a", "<f8", [2]]], fill_value=None), UnknownDataTypeError, "subarray"),
    (v2(dtype=[["a", "<i4"], ["b", ">f8"]], fill_value=None), UnknownDataTypeError, "mixes byte orders"),
    (v2(attributes={"_ARRAY_DIMENSIONS": ["x"]}), MetadataError,
     "attribute '_ARRAY_DIMENSIONS': found ['x'], expected a list of 2 dimension names"),
    (v2(dtype="<i2", filters=[{"id": "shuffle", "elementsize": 2}, {"id": "delta", "dtype": "<i2"}], fill_value=0),
     CodecError, "filter 1 'delta' works on arrays but follows a bytes → bytes filter"),
    (v2(dtype="nonsense"), MetadataError, ".zarray: field 'dtype'"),
])
def test_unconvertible(spec, error, message):
    with pytest.raises(error) as info:
        convert_v2_to_v3(spec)
    assert message in str(info.value)


def test_errors_name_the_member_path():
    tree = GroupSpecV2(members={"g": GroupSpecV2(members={"bad": v2(attributes={"_ARRAY_DIMENSIONS": 1})})})
    with pytest.raises(MetadataError, match=r"^/g/bad: attribute '_ARRAY_DIMENSIONS'"):
        convert_v2_to_v3(tree)


def test_only_v2_specs():
    with pytest.raises(TypeError, match="already a v3"):
        convert_v2_to_v3(GroupSpecV3())
    with pytest.raises(TypeError):
        convert_v2_to_v3({"zarr_format": 2})  # type: ignore[arg-type]


def test_unknown_numcodecs_ids_keep_zarr_pythons_naming():
    out = v2(compressor={"id": "someday", "x": 1}, filters=[{"id": "future-filter"}]).to_v3()
    assert [c["name"] for c in out.to_json()["codecs"]] == [
        "numcodecs.future-filter", "bytes", "numcodecs.someday"]


# -- the proof: zarr-python reads converted hierarchies ------------------------------------------------
CASES = {
    "f8_F_blosc": dict(shape=(7, 5), dtype="<f8", chunks=(3, 2), order="F",
                       compressors=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE), fill_value=np.nan),
    "i4_big_zlib": dict(shape=(9,), dtype=">i4", chunks=(4,), compressors=numcodecs.Zlib(3), fill_value=-1),
    "delta_F_zstd": dict(shape=(6, 6), dtype="<f8", chunks=(4, 4), order="F", filters=[numcodecs.Delta("<f8")],
                         compressors=numcodecs.Zstd(3)),
    "fso_gzip": dict(shape=(10,), dtype="<f8", chunks=(3,), compressors=numcodecs.GZip(1),
                     filters=[numcodecs.FixedScaleOffset(0, 10, "<f8", "u1")]),
    "u1_slash_bitshuffle": dict(shape=(5, 5), dtype="|u1", chunks=(2, 2),
                                compressors=numcodecs.Blosc("zstd", 3, numcodecs.Blosc.AUTOSHUFFLE),
                                chunk_key_encoding={"name": "v2", "separator": "/"}),
    "i2_3d_F_slash": dict(shape=(3, 4, 5), dtype=">i2", chunks=(2, 3, 2), order="F", compressors=None,
                          chunk_key_encoding={"name": "v2", "separator": "/"}),
    "shuffle_bz2": dict(shape=(8,), dtype="<i2", chunks=(3,), filters=[numcodecs.Shuffle(2)],
                        compressors=numcodecs.BZ2()),
    "vlen_utf8": dict(shape=(5,), dtype=str, chunks=(2,)),
    "S5": dict(shape=(4,), dtype="S5", chunks=(3,), compressors=numcodecs.LZ4()),
    "U4_no_compressor": dict(shape=(4,), dtype="<U4", chunks=(3,), compressors=None),
    "datetime": dict(shape=(4,), dtype="<M8[ns]", chunks=(3,)),
    "complex_fill": dict(shape=(4,), dtype="<c16", chunks=(3,), fill_value=1 + 2j),
    "bool_lz4": dict(shape=(4,), dtype="|b1", chunks=(3,), compressors=numcodecs.LZ4()),
    "structured": dict(shape=(4,), dtype=[("a", "<i4"), ("b", "<f8")], chunks=(3,)),
}


def values(kw):
    shape, dtype = kw["shape"], np.dtype(object if kw["dtype"] is str else kw["dtype"])
    n = int(np.prod(shape))
    if dtype.kind == "O":
        return np.array(["a", "bbb", "", "cc", "é"][:n], dtype=object)
    if dtype.names:
        v = np.zeros(shape, dtype)
        v["a"], v["b"] = np.arange(n).reshape(shape), 1.5
        return v
    if dtype.kind in "SU":
        return np.array(["ab", "", "c", "dd"][:n], dtype=dtype).reshape(shape)
    if dtype.kind == "M":
        return np.arange(n).astype(dtype).reshape(shape)
    if dtype.kind == "b":
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 200).astype(dtype).reshape(shape)


def copy_chunks(src: Path, dst: Path) -> int:
    copied = 0
    for dirpath, _, files in os.walk(src):
        for f in files:
            if f in (".zarray", ".zattrs", ".zgroup", "zarr.json"):
                continue
            rel = (Path(dirpath) / f).relative_to(src)
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / rel, dst / rel)
            copied += 1
    return copied


def test_zarr_python_reads_converted_hierarchies(tmp_path):
    src, dst = tmp_path / "v2.zarr", tmp_path / "v3.zarr"
    expected = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(src, mode="w", zarr_format=2, attributes={"title": "converted"})
        sub = root.create_group("sub", attributes={"level": 1})
        for i, (name, kw) in enumerate(CASES.items()):
            parent = sub if i % 2 else root
            dims = [f"d{j}" for j in range(len(kw["shape"]))]
            arr = parent.create_array(name, **kw, attributes={"_ARRAY_DIMENSIONS": dims, "case": name})
            if name != "complex_fill":  # this one keeps its fill value: no chunks at all
                arr[...] = values(kw)
            expected[arr.path] = (arr[...], dims)

    spec = from_zarr(zarrdask.open_group(src, mode="r"))
    converted = spec.to_v3()
    converted.to_zarr(dst)
    assert copy_chunks(src, dst) > 20  # the chunk keys do not change

    z = zarr.open_group(dst, mode="r", zarr_format=3)
    assert dict(z.attrs) == {"title": "converted"} and dict(z["sub"].attrs) == {"level": 1}
    for path, (want, dims) in expected.items():
        a = z[path]
        assert a.metadata.dimension_names == tuple(dims), path
        assert dict(a.attrs) == {"case": path.rsplit("/", 1)[-1]}, path
        got = a[...]
        if want.dtype.kind in "OT":  # variable-length strings
            assert list(got) == list(want), path
        else:
            assert got.dtype == want.dtype.newbyteorder("=") or got.dtype == want.dtype, path
            np.testing.assert_array_equal(got, want, err_msg=path)
        if want.dtype.kind not in "OT":  # zarrdask has no vlen codecs yet
            np.testing.assert_array_equal(zarrdask.open_array(dst, path=path, mode="r")[...], want, err_msg=path)
    # and the converted hierarchy is what it says it is
    assert from_zarr(dst) == converted
