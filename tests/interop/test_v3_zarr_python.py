"""Zarr v3 interoperability with zarr-python 3, in both directions.

The matrix (``_v3cases.CASES``, a covering design) is run three ways:

- zarr-python writes, zarrdask reads equal;
- zarrdask writes, zarr-python reads equal, and ``zarr.json`` is the document
  zarr-python writes for the same configuration (parsed JSON, modulo the
  normalisations documented in ``_util.normalize_v3_array_doc``);
- "bit for bit": with the same data and codec configuration the chunk files
  are byte-identical (gzip members compared without their 10-byte header:
  numcodecs' GZip, which zarr-python uses, stamps the current time into it).

Plus fill values (NaN, ±inf, a NaN payload written as ``"0x7fc00001"``,
complex), the spec's own JSON for them, and a v3 hierarchy both ways.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
zarrdask = pytest.importorskip("zarrdask")

from .._peers import BLOSC_TYPESIZE_REASON, zarr_python_blosc_uses_typesize  # noqa: E402
from ._util import (  # noqa: E402
    assert_array_same,
    assert_bits_equal,
    chunk_files,
    gzip_body,
    make_data,
    normalize_v3_array_doc,
    read_json,
)
from ._v3cases import CASES, V3Case, bytes_codec, fill_json, zstd  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::RuntimeWarning")

IDS = [c.id for c in CASES]


def zp_write(path: Path, case: V3Case, data: np.ndarray | None, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(
            str(path),
            shape=case.shape,
            chunks=case.chunks,
            dtype=case.dtype,
            filters=case.filters or None,
            serializer=case.serializer,
            compressors=case.compressors or None,
            chunk_key_encoding=case.chunk_key_encoding,
            fill_value=case.fill_value,
            dimension_names=case.dimension_names,
            zarr_format=3,
            **kw,
        )
        if data is not None:
            a[...] = data
    return a


def zd_write(path: Path, case: V3Case, data: np.ndarray | None, **kw: Any) -> Any:
    z = zarrdask.create_array(
        str(path),
        shape=case.shape,
        chunks=case.chunks,
        dtype=case.dtype,
        filters=case.filters or None,
        serializer=case.serializer,
        compressors=case.compressors or None,
        chunk_key_encoding=case.chunk_key_encoding,
        fill_value=case.fill_value,
        dimension_names=case.dimension_names,
        zarr_format=3,
        **kw,
    )
    if data is not None:
        z[...] = data
    return z


def _partial_selections(ndim: int, negative: bool = True) -> list[tuple[slice, ...]]:
    """Strided selections crossing chunk boundaries. zarr-python 3.1 rejects
    negative steps (``NegativeStepError``), so they are only used with zarrdask."""
    if ndim == 0:
        return []
    sels = [tuple(slice(1, None, 2) for _ in range(ndim))]
    if negative:
        sels.append(tuple(slice(None, None, -2) for _ in range(ndim)))
    return sels


# -- zarr-python writes, zarrdask reads -------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_zarr_python_writes_zarrdask_reads(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=1)
    zp_write(tmp_path, case, data)
    z = zarrdask.open_array(str(tmp_path), mode="r")
    assert z.zarr_format == 3
    assert z.shape == case.shape
    assert z.chunks == case.chunks
    assert z.dtype == np.dtype(case.dtype)
    if case.dimension_names is not None:
        assert tuple(z.dimension_names or ()) == tuple(case.dimension_names)
    assert_bits_equal(np.asarray(z.fill_value, dtype=case.dtype), np.asarray(case.fill_value, dtype=case.dtype))
    assert_array_same(z[...], data)
    for sel in _partial_selections(len(case.shape)):
        assert_array_same(z[sel], data[sel])


@pytest.mark.parametrize("case", [c for c in CASES if c.shape and 0 not in c.shape], ids=lambda c: c.id)
def test_zarr_python_unwritten_chunks_read_as_fill(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=2)
    a = zp_write(tmp_path, case, None)
    first = tuple(slice(0, c) for c in case.chunks)
    a[first] = data[first]
    expected = np.full(case.shape, case.fill_value, dtype=case.dtype)
    expected[first] = data[first]
    got = zarrdask.open_array(str(tmp_path), mode="r")[...]
    assert_bits_equal(got, np.asarray(zarr.open_array(str(tmp_path), mode="r")[...]))
    assert_array_same(got, expected)


# -- zarrdask writes, zarr-python reads -------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_zarrdask_writes_zarr_python_reads(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=3)
    zd_write(tmp_path / "zd", case, data, attributes={"k": [1, "v"]})
    a = zarr.open_array(str(tmp_path / "zd"), mode="r")
    assert a.metadata.zarr_format == 3
    assert a.shape == case.shape
    assert a.chunks == case.chunks
    assert a.dtype == np.dtype(case.dtype)
    assert dict(a.attrs) == {"k": [1, "v"]}
    if case.dimension_names is not None:
        assert tuple(a.metadata.dimension_names or ()) == tuple(case.dimension_names)
    assert_array_same(np.asarray(a[...]), data)
    for sel in _partial_selections(len(case.shape), negative=False):
        assert_array_same(np.asarray(a[sel]), data[sel])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_zarr_json_matches_zarr_python(tmp_path: Path, case: V3Case) -> None:
    zd_write(tmp_path / "zd", case, None, attributes={"k": 1})
    zp_write(tmp_path / "zp", case, None, attributes={"k": 1})
    ours = normalize_v3_array_doc(read_json(tmp_path / "zd" / "zarr.json"))
    theirs = normalize_v3_array_doc(read_json(tmp_path / "zp" / "zarr.json"))
    assert ours == theirs
    # and it is the spec's document for this configuration
    assert ours == normalize_v3_array_doc({**case.metadata(), "attributes": {"k": 1}})


@pytest.mark.parametrize("case", [c for c in CASES if c.shape and 0 not in c.shape], ids=lambda c: c.id)
def test_zarrdask_partial_writes_zarr_python_reads(tmp_path: Path, case: V3Case) -> None:
    """Partial-chunk read-modify-write, then writing the fill value over a
    region (chunks equal to the fill value are not stored)."""
    data = case.data(seed=4)
    z = zd_write(tmp_path, case, None)
    ref = np.full(case.shape, case.fill_value, dtype=case.dtype)
    sel = tuple(slice(1, None, 2) for _ in case.shape)
    z[sel] = data[sel]
    ref[sel] = data[sel]
    sel2 = tuple(slice(0, c) for c in case.chunks)  # the first chunk, back to the fill value
    z[sel2] = np.full(ref[sel2].shape, case.fill_value, dtype=case.dtype)
    ref[sel2] = case.fill_value
    assert_array_same(z[...], ref)
    assert_array_same(np.asarray(zarr.open_array(str(tmp_path), mode="r")[...]), ref)
    first_key = _chunk_key(case, (0,) * len(case.shape))
    assert not (tmp_path / first_key).exists(), "a chunk equal to the fill value was stored"


def _chunk_key(case: V3Case, idx: tuple[int, ...]) -> str:
    name, sep = case.chunk_key_encoding["name"], case.chunk_key_encoding["separator"]
    if name == "default":
        return sep.join(["c", *map(str, idx)])
    return sep.join(map(str, idx)) if idx else "0"


# -- bit for bit ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_chunk_files_bit_identical(tmp_path: Path, case: V3Case) -> None:
    case = case.aligned()
    if any(c["name"] == "blosc" for c in case.compressors) and not zarr_python_blosc_uses_typesize():
        pytest.skip(BLOSC_TYPESIZE_REASON)
    data = case.data(seed=5)
    zp_write(tmp_path / "zp", case, data)
    zd_write(tmp_path / "zd", case, data)
    theirs = chunk_files(tmp_path / "zp")
    ours = chunk_files(tmp_path / "zd")
    assert sorted(ours) == sorted(theirs)
    for key, b in theirs.items():
        a = ours[key]
        if case.has_gzip:
            if case.compressors[-1]["name"] == "crc32c":  # gzip then crc32c: the checksum covers the header
                a, b = a[:-4], b[:-4]
            a, b = gzip_body(a), gzip_body(b)
        assert a == b, f"chunk {key!r} differs ({len(a)} vs {len(b)} bytes)"


@pytest.mark.parametrize("case", [c for c in CASES if c.shape and 0 not in c.shape], ids=lambda c: c.id)
def test_chunk_keys_match_spec(tmp_path: Path, case: V3Case) -> None:
    """Chunk keys follow the chunk key encoding (both writers)."""
    data = case.data(seed=6)
    zd_write(tmp_path / "zd", case, data)
    grid = [-(-s // c) for s, c in zip(case.shape, case.chunks)]
    fill = np.asarray(case.fill_value, dtype=case.dtype)
    expected = set()
    for idx in np.ndindex(*grid):
        block = data[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, case.chunks))]
        if not np.array_equal(block, np.broadcast_to(fill, block.shape), equal_nan=block.dtype.kind in "fc"):
            expected.add(_chunk_key(case, idx))  # chunks equal to the fill value are not stored
    assert set(chunk_files(tmp_path / "zd")) == expected


def test_zero_d_chunk_keys(tmp_path: Path) -> None:
    """0-d arrays: the default encoding's key is ``c``, the v2 encoding's ``0``."""
    for name, key in (("default", "c"), ("v2", "0")):
        case = V3Case(f"0d-{name}", "int32", (), (), bytes_codec("int32"), chunk_key_encoding={"name": name,
                      "separator": "." if name == "v2" else "/"}, fill_value=0)
        zd_write(tmp_path / f"zd-{name}", case, np.int32(5))
        zp_write(tmp_path / f"zp-{name}", case, np.int32(5))
        assert set(chunk_files(tmp_path / f"zd-{name}")) == {key}
        assert set(chunk_files(tmp_path / f"zp-{name}")) == {key}
        assert zarrdask.open_array(str(tmp_path / f"zp-{name}"), mode="r")[()] == 5


# -- blosc defaults ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint16", "float64"])
def test_blosc_without_typesize_records_chosen_values(tmp_path: Path, dtype: str) -> None:
    """The v3 blosc spec: ``typesize`` is required unless ``shuffle`` is
    ``noshuffle``; when the user leaves it out the implementation "MUST record
    in the metadata the value that is chosen" (zarr-python records the data
    type's size). The chunks must then also match zarr-python's."""
    comp = {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle"}}
    case = V3Case("blosc-default", dtype, (8, 4), (4, 4), bytes_codec(dtype), [comp], fill_value=0)
    data = case.data(seed=7)
    zd_write(tmp_path / "zd", case, data)
    zp_write(tmp_path / "zp", case, data)
    conf = read_json(tmp_path / "zd" / "zarr.json")["codecs"][-1]["configuration"]
    assert conf.get("typesize") == np.dtype(dtype).itemsize
    assert read_json(tmp_path / "zd" / "zarr.json")["codecs"] == read_json(tmp_path / "zp" / "zarr.json")["codecs"]
    if not zarr_python_blosc_uses_typesize():
        pytest.skip(BLOSC_TYPESIZE_REASON)
    assert chunk_files(tmp_path / "zd") == chunk_files(tmp_path / "zp")


def test_default_codecs_match_zarr_python(tmp_path: Path) -> None:
    """With no codec arguments both write ``bytes`` (little) + ``zstd`` (level 0)."""
    data = make_data("float32", (10, 10), seed=8)
    zarrdask.create_array(str(tmp_path / "zd"), shape=(10, 10), chunks=(5, 5), dtype="float32")[...] = data
    zarr.create_array(str(tmp_path / "zp"), shape=(10, 10), chunks=(5, 5), dtype="float32")[...] = data
    assert normalize_v3_array_doc(read_json(tmp_path / "zd" / "zarr.json")) == normalize_v3_array_doc(
        read_json(tmp_path / "zp" / "zarr.json")
    )
    assert chunk_files(tmp_path / "zd") == chunk_files(tmp_path / "zp")


def test_big_endian_dtype_argument(tmp_path: Path) -> None:
    """A big-endian numpy dtype: v3 data types have no byte order, the bytes
    codec carries it; zarr-python reads the values."""
    data = make_data(">i4", (6, 5), seed=9)
    z = zarrdask.create_array(str(tmp_path), shape=(6, 5), chunks=(4, 4), dtype=">i4", compressors=None)
    z[...] = data
    doc = read_json(tmp_path / "zarr.json")
    assert doc["data_type"] == "int32"
    assert doc["codecs"] == [{"name": "bytes", "configuration": {"endian": "big"}}]
    np.testing.assert_array_equal(np.asarray(zarr.open_array(str(tmp_path), mode="r")[...]), data)
    raw = (tmp_path / "c" / "0" / "0").read_bytes()
    assert raw == np.ascontiguousarray(data[:4, :4]).astype(">i4").tobytes()


# -- fill values -------------------------------------------------------------------------------------
PAYLOAD_NAN32 = np.array(0x7FC00001, np.uint32).view(np.float32)[()]
PAYLOAD_NAN64 = np.array(0x7FF0000000000001, np.uint64).view(np.float64)[()]
FILLS = [
    ("float32", np.nan, "NaN"),
    ("float64", np.inf, "Infinity"),
    ("float16", -np.inf, "-Infinity"),
    ("float64", -0.0, -0.0),
    ("complex64", complex(np.nan, -np.inf), ["NaN", "-Infinity"]),
    ("complex128", complex(1.5, -2.0), [1.5, -2.0]),
    ("uint64", 2**64 - 1, 2**64 - 1),
    ("int64", -(2**63), -(2**63)),
    ("bool", True, True),
]


@pytest.mark.parametrize("dtype, fill, encoded", FILLS, ids=[f"{d}-{e}" for d, _, e in FILLS])
def test_fill_values_both_ways(tmp_path: Path, dtype: str, fill: Any, encoded: Any) -> None:
    case = V3Case("fill", dtype, (4, 3), (2, 2), bytes_codec(dtype), [zstd(0)], fill_value=fill)
    a = zp_write(tmp_path / "zp", case, None)
    a[:2, :2] = np.ones((2, 2), dtype)
    z = zd_write(tmp_path / "zd", case, None)
    z[:2, :2] = np.ones((2, 2), dtype)
    expected = np.full((4, 3), fill, dtype)
    expected[:2, :2] = 1
    assert read_json(tmp_path / "zd" / "zarr.json")["fill_value"] == encoded
    assert read_json(tmp_path / "zp" / "zarr.json")["fill_value"] == encoded
    assert_bits_equal(zarrdask.open_array(str(tmp_path / "zp"), mode="r")[...], expected)
    assert_bits_equal(np.asarray(zarr.open_array(str(tmp_path / "zd"), mode="r")[...]), expected)


@pytest.mark.parametrize("dtype, value, hexstr", [
    ("float32", PAYLOAD_NAN32, "0x7fc00001"),
    ("float64", PAYLOAD_NAN64, "0x7ff0000000000001"),
])
def test_hex_nan_payload_fill_read_bit_exact(tmp_path: Path, dtype: str, value: Any, hexstr: str) -> None:
    """A ``zarr.json`` with a hex-encoded fill value (here written by
    zarr-python and then given the spec's hex string, since zarr-python 3.1
    writes any NaN as ``"NaN"``): unwritten chunks keep the NaN payload."""
    case = V3Case("hexnan", dtype, (4,), (2,), bytes_codec(dtype), [], fill_value=np.nan)
    a = zp_write(tmp_path, case, None)
    a[:2] = [1.0, 2.0]
    doc = read_json(tmp_path / "zarr.json")
    doc["fill_value"] = hexstr
    (tmp_path / "zarr.json").write_text(json.dumps(doc))
    bits = f"u{np.dtype(dtype).itemsize}"
    # zarr-python itself reads the payload bit-exactly
    assert np.asarray(zarr.open_array(str(tmp_path), mode="r")[2:]).view(bits).tolist() == [int(hexstr, 16)] * 2
    z = zarrdask.open_array(str(tmp_path), mode="r")
    assert np.asarray(z.fill_value, dtype).view(bits) == int(hexstr, 16)
    got = z[...]
    assert got[:2].tolist() == [1.0, 2.0]
    assert got[2:].view(bits).tolist() == [int(hexstr, 16)] * 2


@pytest.mark.parametrize("dtype, value, hexstr", [
    ("float32", PAYLOAD_NAN32, "0x7fc00001"),
    ("float64", PAYLOAD_NAN64, "0x7ff0000000000001"),
])
def test_zarrdask_writes_hex_nan_payload(tmp_path: Path, dtype: str, value: Any, hexstr: str) -> None:
    """A NaN fill value with a non-canonical payload must be written in the
    spec's hex form to survive (``"NaN"`` means the canonical NaN); zarr-python
    then reads unwritten chunks bit-exactly."""
    z = zarrdask.create_array(str(tmp_path), shape=(4,), chunks=(2,), dtype=dtype, fill_value=value)
    z[:2] = [1.0, 2.0]
    assert read_json(tmp_path / "zarr.json")["fill_value"] == hexstr
    bits = f"u{np.dtype(dtype).itemsize}"
    assert z[2:].view(bits).tolist() == [int(hexstr, 16)] * 2
    assert np.asarray(zarr.open_array(str(tmp_path), mode="r")[2:]).view(bits).tolist() == [int(hexstr, 16)] * 2


def test_fill_json_helper_matches_spec() -> None:
    assert fill_json(PAYLOAD_NAN32, "float32") == "0x7fc00001"
    assert fill_json(np.nan, "float32") == "NaN"
    assert fill_json(complex(np.inf, 0), "complex64") == ["Infinity", 0.0]


# -- hierarchies -----------------------------------------------------------------------------------------
def test_zarr_python_v3_hierarchy_navigated_by_zarrdask(tmp_path: Path) -> None:
    root = zarr.open_group(str(tmp_path), mode="w", zarr_format=3, attributes={"title": "root"})
    a = root.create_group("a", attributes={"level": 1, "nested": {"x": [1, None, "s", 2.5]}})
    b = a.create_group("b", attributes={"unicode": "héllo"})
    data = make_data("float32", (6, 4), seed=10)
    x = b.create_array("x", shape=(6, 4), chunks=(4, 3), dtype="float32", fill_value=np.nan,
                       dimension_names=["r", "c"], attributes={"units": "m"})
    x[...] = data
    y = root.create_array("y", shape=(3,), chunks=(2,), dtype="int16", compressors=None)
    y[...] = [1, 2, 3]
    root.create_group("empty")

    g = zarrdask.open_group(str(tmp_path), mode="r")
    assert getattr(g, "zarr_format", 3) == 3
    assert sorted(g.keys()) == ["a", "empty", "y"]
    assert dict(g.attrs) == {"title": "root"}
    assert "a" in g and "a/b" in g and "a/b/x" in g and "a/nope" not in g
    assert dict(g["a"].attrs) == {"level": 1, "nested": {"x": [1, None, "s", 2.5]}}
    assert dict(g["a/b"].attrs) == {"unicode": "héllo"}
    assert dict(g["a"]["b"].attrs) == {"unicode": "héllo"}
    arr = g["a/b/x"]
    assert isinstance(arr, zarrdask.Array)
    assert dict(arr.attrs) == {"units": "m"}
    assert tuple(arr.dimension_names) == ("r", "c")
    assert_array_same(arr[...], data)
    assert_array_same(g["y"][...], np.array([1, 2, 3], "int16"))
    members = dict(g.members())
    assert members.keys() == {"a", "empty", "y"}
    assert isinstance(members["a"], zarrdask.Group) and isinstance(members["y"], zarrdask.Array)
    tree = str(g.tree())
    for name in ("a", "b", "x", "y", "empty"):
        assert name in tree
    assert_array_same(zarrdask.open_array(str(tmp_path), path="a/b/x", mode="r")[...], data)
    assert isinstance(zarrdask.open(str(tmp_path), path="a/b", mode="r"), zarrdask.Group)
    assert isinstance(zarrdask.open(str(tmp_path), path="y", mode="r"), zarrdask.Array)


def test_zarrdask_v3_hierarchy_navigated_by_zarr_python(tmp_path: Path) -> None:
    g = zarrdask.open_group(str(tmp_path), mode="w", attributes={"title": "root"})
    a = g.create_group("a")
    a.attrs.update({"level": 1, "nested": {"x": [1, None, "s", 2.5]}})
    b = a.require_group("b")
    b.attrs["unicode"] = "héllo"
    data = make_data("float32", (6, 4), seed=11)
    x = b.create_array("x", shape=(6, 4), chunks=(4, 3), dtype="float32", fill_value=np.nan,
                       dimension_names=["r", "c"], attributes={"units": "m"})
    x[...] = data
    y = g.create_array("y", shape=(3,), chunks=(2,), dtype="int16", compressors=None)
    y[...] = np.array([1, 2, 3], "int16")
    g.create_group("empty")

    root = zarr.open_group(str(tmp_path), mode="r")
    assert root.metadata.zarr_format == 3
    assert sorted(root.keys()) == ["a", "empty", "y"]
    assert dict(root.attrs) == {"title": "root"}
    assert dict(root["a"].attrs) == {"level": 1, "nested": {"x": [1, None, "s", 2.5]}}
    assert dict(root["a/b"].attrs) == {"unicode": "héllo"}
    assert dict(root["a/b/x"].attrs) == {"units": "m"}
    assert tuple(root["a/b/x"].metadata.dimension_names) == ("r", "c")
    assert_array_same(np.asarray(root["a/b/x"][...]), data)
    assert_array_same(np.asarray(root["y"][...]), np.array([1, 2, 3], "int16"))
    # the group documents are the spec's
    assert read_json(tmp_path / "zarr.json") == {"zarr_format": 3, "node_type": "group",
                                                 "attributes": {"title": "root"}}
    assert read_json(tmp_path / "empty" / "zarr.json") in (
        {"zarr_format": 3, "node_type": "group"},
        {"zarr_format": 3, "node_type": "group", "attributes": {}},
    )
    assert not (tmp_path / ".zgroup").exists()


def test_attribute_and_resize_updates_visible_both_ways(tmp_path: Path) -> None:
    z = zarrdask.create_array(str(tmp_path), shape=(5, 3), chunks=(2, 2), dtype="int32", fill_value=-1,
                              attributes={"a": 1})
    z[...] = np.arange(15).reshape(5, 3)
    a = zarr.open_array(str(tmp_path), mode="r+")
    assert dict(a.attrs) == {"a": 1}
    a.attrs["b"] = [1, 2]
    assert dict(zarrdask.open_array(str(tmp_path), mode="r").attrs) == {"a": 1, "b": [1, 2]}
    z2 = zarrdask.open_array(str(tmp_path), mode="r+")
    z2.attrs["c"] = None
    z2.resize(3, 4)
    assert set(chunk_files(tmp_path)) <= {f"c/{i}/{j}" for i in range(2) for j in range(2)}
    z2.append(np.full((2, 4), 9, "int32"))
    expected = np.full((5, 4), -1, "int32")
    expected[:3, :3] = np.arange(9).reshape(3, 3)
    expected[3:] = 9
    a = zarr.open_array(str(tmp_path), mode="r")
    assert dict(a.attrs) == {"a": 1, "b": [1, 2], "c": None}
    assert a.shape == (5, 4)
    assert_array_same(np.asarray(a[...]), expected)
    assert read_json(tmp_path / "zarr.json")["attributes"] == {"a": 1, "b": [1, 2], "c": None}


# -- numcodecs.* codecs (zarr-python's zarr.codecs.numcodecs convention) ------------------------------
def _nc(name: str, **config: Any) -> dict[str, Any]:
    return {"name": f"numcodecs.{name}", "configuration": config}


NUMCODECS_CASES = [
    ("delta-zlib", "float64", [_nc("delta", dtype="<f8")], [_nc("zlib", level=1)]),
    ("fso-bz2", "float64", [_nc("fixedscaleoffset", offset=10, scale=100, astype="<i4")], [_nc("bz2", level=9)]),
    ("quantize-lzma", "float32", [_nc("quantize", digits=3)], [_nc("lzma")]),
    ("bitround-lz4", "float32", [_nc("bitround", keepbits=8)], [_nc("lz4", acceleration=1)]),
    ("astype-zstd", "float64", [_nc("astype", encode_dtype="<f4")], [_nc("zstd", level=3)]),
    ("packbits-blosc", "bool", [_nc("packbits")], [_nc("blosc", cname="lz4", clevel=5, shuffle=1)]),
    ("shuffle-crc32", "int32", [], [_nc("shuffle"), _nc("crc32")]),
    ("adler32", "int16", [], [_nc("adler32")]),
    ("fletcher32", "uint32", [], [_nc("fletcher32")]),
    ("jenkins_lookup3", "int64", [], [_nc("jenkins_lookup3")]),
    ("gzip", "float64", [], [_nc("gzip", level=3)]),
    ("crc32c", "float32", [], [_nc("crc32c")]),
]


def _nc_data(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "bool":
        return make_data("bool", shape, seed=20)
    if dtype.startswith("float"):  # finite values in range of every lossy filter above
        return np.round(np.random.default_rng(20).uniform(-1000, 1000, shape), 2).astype(dtype)
    return make_data(dtype, shape, seed=20)


@pytest.mark.parametrize("cid, dtype, filters, compressors", NUMCODECS_CASES, ids=[c[0] for c in NUMCODECS_CASES])
def test_numcodecs_codecs_both_ways(tmp_path: Path, cid: str, dtype: str, filters: list[Any],
                                    compressors: list[Any]) -> None:
    """``{"name": "numcodecs.<id>", ...}`` codecs: zarr-python writes,
    zarrdask reads what zarr-python reads (lossy filters included); zarrdask
    writes the same ``zarr.json`` and byte-identical chunks."""
    case = V3Case(cid, dtype, (10, 4), (4, 2), bytes_codec(dtype), compressors, filters, fill_value=0)
    data = _nc_data(dtype, (10, 4))
    a = zp_write(tmp_path / "zp", case, data)
    z = zd_write(tmp_path / "zd", case, data)
    theirs = np.asarray(a[...])
    assert_array_same(zarrdask.open_array(str(tmp_path / "zp"), mode="r")[...], theirs)
    assert_array_same(np.asarray(zarr.open_array(str(tmp_path / "zd"), mode="r")[...]), z[...])
    assert_array_same(z[...], theirs)
    assert normalize_v3_array_doc(read_json(tmp_path / "zd" / "zarr.json")) == normalize_v3_array_doc(
        read_json(tmp_path / "zp" / "zarr.json"))
    ours, zps = chunk_files(tmp_path / "zd"), chunk_files(tmp_path / "zp")
    assert sorted(ours) == sorted(zps)
    for key in zps:
        x, y = ours[key], zps[key]
        if cid == "gzip":
            x, y = gzip_body(x), gzip_body(y)
        assert x == y, f"chunk {key!r} differs"


# -- consolidated metadata, extension fields, nchunks_initialized --------------------------------------------
def test_zarr_python_consolidated_hierarchy(tmp_path: Path) -> None:
    """zarr-python's consolidated metadata (``consolidated_metadata`` in the
    root ``zarr.json``) does not stop zarrdask opening and navigating."""
    root = zarr.open_group(str(tmp_path), mode="w", attributes={"t": 1})
    g = root.create_group("a", attributes={"u": 2})
    x = g.create_array("x", shape=(4,), chunks=(2,), dtype="int32", fill_value=0)
    x[...] = [1, 2, 3, 4]
    zarr.consolidate_metadata(str(tmp_path))
    assert "consolidated_metadata" in read_json(tmp_path / "zarr.json")
    zg = zarrdask.open_group(str(tmp_path), mode="r")
    assert sorted(zg.keys()) == ["a"]
    assert dict(zg.attrs) == {"t": 1}
    assert dict(zg["a"].attrs) == {"u": 2}
    assert_array_same(zg["a/x"][...], np.array([1, 2, 3, 4], "int32"))
    # zarrdask writes into it; zarr-python reads the data
    zarrdask.open_group(str(tmp_path), mode="r+")["a/x"][:2] = np.array([9, 9], "int32")
    assert np.asarray(zarr.open_array(str(tmp_path), path="a/x", mode="r")[...]).tolist() == [9, 9, 3, 4]


def test_extension_field_must_understand(tmp_path: Path) -> None:
    """v3 core "extension points": an unknown field with ``"must_understand":
    false`` is ignored, any other unknown field is an error — zarr-python and
    tensorstore behave the same."""
    case = V3Case("ext", "int32", (4,), (2,), bytes_codec("int32"), fill_value=0)
    zp_write(tmp_path, case, np.arange(4, dtype="int32"))
    doc = read_json(tmp_path / "zarr.json")
    (tmp_path / "zarr.json").write_text(json.dumps({**doc, "ext": {"must_understand": False, "x": 1}}))
    assert_array_same(zarrdask.open_array(str(tmp_path), mode="r")[...], np.arange(4, dtype="int32"))
    (tmp_path / "zarr.json").write_text(json.dumps({**doc, "ext": {"x": 1}}))
    with pytest.raises(Exception):
        zarr.open_array(str(tmp_path), mode="r")
    with pytest.raises(zarrdask.errors.MetadataError):
        zarrdask.open_array(str(tmp_path), mode="r")


@pytest.mark.parametrize("case", [c for c in CASES if c.shape][:8], ids=lambda c: c.id)
def test_nchunks_initialized_matches_zarr_python(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=21)
    a = zp_write(tmp_path, case, None)
    sel = tuple(slice(0, max(1, s // 2)) for s in case.shape)
    a[sel] = data[sel]
    assert zarrdask.open_array(str(tmp_path), mode="r").nchunks_initialized == a.nchunks_initialized


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_shrink_then_grow_agrees_with_zarr_python(tmp_path: Path, zarr_format: int) -> None:
    """Shrinking and growing again: after zarrdask's resizes zarr-python reads
    what zarrdask reads, and after zarr-python's resizes zarrdask reads what
    zarr-python reads.

    The specs say nothing about resizing. zarrdask's ``Array.resize`` promises
    that "the cut-off part of chunks straddling a shrunk edge is reset to the
    fill value, so growing again shows the fill value there, not old data" —
    that is what the first half checks, including the corner cut off in both
    dimensions. (zarr-python 3.1 does not reset: it shows the old values of
    straddling chunks again after growing; the second half only asks that
    zarrdask reads those files as zarr-python does.)"""
    data = np.arange(35, dtype="int32").reshape(5, 7)
    z = zarrdask.create_array(str(tmp_path / "zd"), shape=(5, 7), chunks=(2, 3), dtype="int32", fill_value=-1,
                              zarr_format=zarr_format)
    z[...] = data
    z.resize(3, 5)
    z.resize(5, 7)
    expected = np.full((5, 7), -1, "int32")
    expected[:3, :5] = data[:3, :5]
    assert_array_same(z[...], expected)
    assert_array_same(np.asarray(zarr.open_array(str(tmp_path / "zd"), mode="r")[...]), expected)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(str(tmp_path / "zp"), shape=(5, 7), chunks=(2, 3), dtype="int32", fill_value=-1,
                              zarr_format=zarr_format)
        a[...] = data
        a.resize((3, 5))
        a.resize((5, 7))
    assert_array_same(zarrdask.open_array(str(tmp_path / "zp"), mode="r")[...], np.asarray(a[...]))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_append_along_axis_1_read_by_zarr_python(tmp_path: Path, zarr_format: int) -> None:
    data = make_data("float64", (4, 5), seed=22)
    z = zarrdask.create_array(str(tmp_path), shape=(4, 5), chunks=(3, 2), dtype="float64", fill_value=np.nan,
                              zarr_format=zarr_format)
    z[...] = data
    extra = make_data("float64", (4, 3), seed=23)
    assert tuple(z.append(extra, axis=1)) == (4, 8)
    a = zarr.open_array(str(tmp_path), mode="r")
    assert a.shape == (4, 8)
    assert_array_same(np.asarray(a[...]), np.concatenate([data, extra], axis=1))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_open_modes_on_zarr_python_arrays(tmp_path: Path, zarr_format: int) -> None:
    """``w-`` refuses an existing zarr-python array, ``w`` replaces it (no old
    chunks left behind), ``r`` is read-only, the format is detected."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(str(tmp_path), shape=(6,), chunks=(2,), dtype="int32", fill_value=0,
                              zarr_format=zarr_format)
        a[...] = np.arange(1, 7)
    r = zarrdask.open_array(str(tmp_path), mode="r")
    assert r.zarr_format == zarr_format
    with pytest.raises(Exception):
        r[0] = 5
    with pytest.raises(Exception):
        zarrdask.open_array(str(tmp_path), mode="w-", shape=(3,), chunks=(3,), dtype="int8",
                            zarr_format=zarr_format)
    z = zarrdask.open_array(str(tmp_path), mode="w", shape=(3,), chunks=(3,), dtype="int8", fill_value=0,
                            zarr_format=zarr_format)
    assert z.shape == (3,)
    b = zarr.open_array(str(tmp_path), mode="r")
    assert b.shape == (3,) and b.dtype == np.dtype("int8")
    assert np.asarray(b[...]).tolist() == [0, 0, 0]
    assert chunk_files(tmp_path) == {}
