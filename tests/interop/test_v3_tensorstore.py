"""Zarr v3 interoperability with tensorstore's ``zarr3`` driver, both ways.

The same covering matrix as the zarr-python tests (``_v3cases.CASES``):
tensorstore writes (from the spec's ``zarr.json``, given as its ``metadata``),
zarrdask reads equal; zarrdask writes, tensorstore reads equal; both write the
same ``zarr.json`` (parsed, normalised as documented in ``_util``); and chunk
files are byte-identical where the bytes are fully determined by the spec
(``bytes``, ``transpose`` and ``crc32c`` only: tensorstore links its own
gzip/zstd/blosc libraries, whose output need not match numcodecs').

Accepted tensorstore differences: it writes ``chunk_key_encoding`` without a
``configuration`` when the separator is the default one, no ``attributes``
member, and drops ``dimension_names`` that are empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ts = pytest.importorskip("tensorstore")
zarrdask = pytest.importorskip("zarrdask")

from ._util import (  # noqa: E402
    assert_array_same,
    assert_bits_equal,
    chunk_files,
    make_data,
    normalize_v3_array_doc,
    read_json,
)
from ._v3cases import CASES, V3Case, bytes_codec, fill_json  # noqa: E402

IDS = [c.id for c in CASES]


def _kv(path: Path) -> dict[str, Any]:
    return {"driver": "file", "path": str(path)}


def ts_create(path: Path, case: V3Case) -> Any:
    return ts.open({"driver": "zarr3", "kvstore": _kv(path), "metadata": case.metadata()}, create=True).result()


def ts_open(path: Path) -> Any:
    return ts.open({"driver": "zarr3", "kvstore": _kv(path)}, open=True).result()


def ts_write(path: Path, case: V3Case, data: np.ndarray | None) -> Any:
    t = ts_create(path, case)
    if data is not None:
        t.write(data).result()
    return t


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
        **kw,
    )
    if data is not None:
        z[...] = data
    return z


# -- tensorstore writes, zarrdask reads ----------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tensorstore_writes_zarrdask_reads(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=11)
    ts_write(tmp_path, case, data)
    z = zarrdask.open_array(str(tmp_path), mode="r")
    assert z.shape == case.shape
    assert z.chunks == case.chunks
    assert z.dtype == np.dtype(case.dtype)
    if case.dimension_names:
        # all-null names are equivalent to none (tensorstore then writes none)
        assert tuple(z.dimension_names or (None,) * len(case.shape)) == tuple(case.dimension_names)
    assert_array_same(z[...], data)
    if case.shape and 0 not in case.shape:
        sel = tuple(slice(None, None, -2) for _ in case.shape)
        assert_array_same(z[sel], data[sel])


@pytest.mark.parametrize("case", [c for c in CASES if c.shape and 0 not in c.shape], ids=lambda c: c.id)
def test_tensorstore_partial_write_fill(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=12)
    t = ts_create(tmp_path, case)
    sel = tuple(slice(1, None, 2) for _ in case.shape)
    t[sel].write(data[sel]).result()
    expected = np.full(case.shape, case.fill_value, dtype=case.dtype)
    expected[sel] = data[sel]
    got = zarrdask.open_array(str(tmp_path), mode="r")[...]
    assert_bits_equal(got, t.read().result())
    assert_array_same(got, expected)


# -- zarrdask writes, tensorstore reads -----------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_zarrdask_writes_tensorstore_reads(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=13)
    zd_write(tmp_path, case, data, attributes={"a": 1})
    t = ts_open(tmp_path)
    assert tuple(t.shape) == case.shape
    assert t.dtype.numpy_dtype == np.dtype(case.dtype)
    if case.dimension_names:
        assert tuple(d.label or None for d in t.domain) == tuple(case.dimension_names)
    assert_array_same(t.read().result(), data)


@pytest.mark.parametrize("case", [c for c in CASES if c.shape and 0 not in c.shape], ids=lambda c: c.id)
def test_zarrdask_partial_writes_tensorstore_reads(tmp_path: Path, case: V3Case) -> None:
    data = case.data(seed=14)
    z = zd_write(tmp_path, case, None)
    ref = np.full(case.shape, case.fill_value, dtype=case.dtype)
    sel = tuple(slice(None, None, -2) for _ in case.shape)
    z[sel] = data[sel]
    ref[sel] = data[sel]
    assert_array_same(ts_open(tmp_path).read().result(), ref)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_zarr_json_matches_tensorstore(tmp_path: Path, case: V3Case) -> None:
    ts_create(tmp_path / "ts", case)
    zd_write(tmp_path / "zd", case, None)
    ours = normalize_v3_array_doc(read_json(tmp_path / "zd" / "zarr.json"))
    theirs = normalize_v3_array_doc(read_json(tmp_path / "ts" / "zarr.json"))
    assert ours == theirs


DETERMINISTIC = [c for c in CASES if all(x["name"] == "crc32c" for x in c.compressors)]


@pytest.mark.parametrize("case", DETERMINISTIC, ids=[c.id for c in DETERMINISTIC])
def test_chunk_files_bit_identical_tensorstore(tmp_path: Path, case: V3Case) -> None:
    case = case.aligned()
    data = case.data(seed=15)
    ts_write(tmp_path / "ts", case, data)
    zd_write(tmp_path / "zd", case, data)
    assert chunk_files(tmp_path / "zd") == chunk_files(tmp_path / "ts")


# -- tensorstore's own spellings -------------------------------------------------------------------------
@pytest.mark.parametrize("name, sep, key", [("default", "/", "c/1/0"), ("v2", ".", "1.0")])
def test_chunk_key_encoding_without_configuration(tmp_path: Path, name: str, sep: str, key: str) -> None:
    """tensorstore writes ``{"name": "default"}`` / ``{"name": "v2"}`` for the
    default separators; the spec's defaults apply."""
    case = V3Case("cke", "int32", (4, 2), (2, 2), bytes_codec("int32"), chunk_key_encoding={"name": name,
                  "separator": sep}, fill_value=0)
    data = np.arange(8, dtype="int32").reshape(4, 2)
    ts_write(tmp_path, case, data)
    assert read_json(tmp_path / "zarr.json")["chunk_key_encoding"] == {"name": name}
    assert (tmp_path / key).exists()
    assert_array_same(zarrdask.open_array(str(tmp_path), mode="r")[...], data)


# -- fill values --------------------------------------------------------------------------------------------
PAYLOADS = [
    ("float32", "0x7fc00001"),
    ("float32", "0xffc00000"),  # negative quiet NaN
    ("float64", "0x7ff0000000000001"),  # signalling NaN
    ("float16", "0x7e01"),
]


@pytest.mark.parametrize("dtype, hexstr", PAYLOADS, ids=[f"{d}-{h}" for d, h in PAYLOADS])
def test_tensorstore_hex_nan_fill_bit_exact(tmp_path: Path, dtype: str, hexstr: str) -> None:
    case = V3Case("hex", dtype, (6,), (2,), bytes_codec(dtype), fill_value=0)
    md = case.metadata()
    md["fill_value"] = hexstr
    t = ts.open({"driver": "zarr3", "kvstore": _kv(tmp_path), "metadata": md}, create=True).result()
    t[:2].write(np.array([1, 2], dtype)).result()
    bits = f"u{np.dtype(dtype).itemsize}"
    assert t.read().result()[2:].view(bits).tolist() == [int(hexstr, 16)] * 4  # tensorstore's own reading
    z = zarrdask.open_array(str(tmp_path), mode="r")
    got = z[...]
    assert got[:2].tolist() == [1, 2]
    assert got[2:].view(bits).tolist() == [int(hexstr, 16)] * 4  # unwritten chunks, bit for bit
    assert np.asarray(z.fill_value, dtype).view(bits) == int(hexstr, 16)


@pytest.mark.parametrize("dtype, hexstr", PAYLOADS, ids=[f"{d}-{h}" for d, h in PAYLOADS])
def test_zarrdask_hex_nan_fill_tensorstore_reads(tmp_path: Path, dtype: str, hexstr: str) -> None:
    bits = f"u{np.dtype(dtype).itemsize}"
    value = np.array(int(hexstr, 16), bits).view(dtype)[()]
    z = zarrdask.create_array(str(tmp_path), shape=(6,), chunks=(2,), dtype=dtype, fill_value=value)
    z[:2] = np.array([1, 2], dtype)
    assert read_json(tmp_path / "zarr.json")["fill_value"] == hexstr
    assert ts_open(tmp_path).read().result()[2:].view(bits).tolist() == [int(hexstr, 16)] * 4


COMPLEX_FILLS = [
    ("complex64", ["NaN", "Infinity"]),
    ("complex128", ["-Infinity", 2.5]),
    ("complex64", ["0x7fc00001", 1.0]),
]


@pytest.mark.parametrize("dtype, encoded", COMPLEX_FILLS, ids=[f"{d}-{e}" for d, e in COMPLEX_FILLS])
def test_complex_fill_both_ways(tmp_path: Path, dtype: str, encoded: list[Any]) -> None:
    case = V3Case("cfill", dtype, (4,), (2,), bytes_codec(dtype), fill_value=0)
    md = case.metadata()
    md["fill_value"] = encoded
    t = ts.open({"driver": "zarr3", "kvstore": _kv(tmp_path / "ts"), "metadata": md}, create=True).result()
    expected = t.read().result()  # tensorstore's reading of the fill value
    got = zarrdask.open_array(str(tmp_path / "ts"), mode="r")[...]
    assert_bits_equal(got, expected)
    z = zarrdask.create_array(str(tmp_path / "zd"), shape=(4,), chunks=(2,), dtype=dtype, fill_value=expected[0])
    assert read_json(tmp_path / "zd" / "zarr.json")["fill_value"] == encoded
    assert_bits_equal(ts_open(tmp_path / "zd").read().result(), expected)
    del z


def test_fill_json_of_cases_roundtrips_through_tensorstore(tmp_path: Path) -> None:
    """The test matrix's own fill-value encoding is tensorstore's (sanity)."""
    for i, case in enumerate(c for c in CASES if c.dtype.startswith(("float", "complex"))):
        ts_create(tmp_path / str(i), case)
        assert read_json(tmp_path / str(i) / "zarr.json")["fill_value"] == fill_json(case.fill_value, case.dtype)


def test_tensorstore_hierarchy_arrays_in_zarrdask_group(tmp_path: Path) -> None:
    """Arrays written by tensorstore inside a group created by zarrdask are
    members of that group."""
    g = zarrdask.open_group(str(tmp_path), mode="w", attributes={"by": "zarrdask"})
    g.create_group("sub")
    case = V3Case("member", "float32", (5, 4), (2, 3), bytes_codec("float32"), fill_value=np.nan,
                  dimension_names=["y", "x"])
    data = make_data("float32", (5, 4), seed=16)
    ts_write(tmp_path / "sub" / "arr", case, data)
    g = zarrdask.open_group(str(tmp_path), mode="r")
    assert "sub/arr" in g
    assert sorted(g["sub"].keys()) == ["arr"]
    assert_array_same(g["sub/arr"][...], data)
    assert tuple(g["sub/arr"].dimension_names) == ("y", "x")
    assert json.loads((tmp_path / "zarr.json").read_text())["attributes"] == {"by": "zarrdask"}
