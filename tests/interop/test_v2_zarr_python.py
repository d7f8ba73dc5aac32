"""Zarr v2 interoperability with zarr-python 3, in both directions.

zarr-python 3 writes v2 arrays across dtypes x compressors x filters x order x
dimension separators; zarrdask reads them equal. The reverse: zarrdask writes,
zarr-python reads equal, and the ``.zarray`` documents are equivalent (parsed
JSON, see ``_util.normalize_v2_array_doc`` for the accepted differences). For
the same data and configuration, the chunk files are byte-identical.

Design: not a cartesian product but a covering one (``CASES``):

- every compressor (none, zlib, gzip, bz2, lzma, zstd, blosc lz4/zstd with each
  shuffle 0/1/2/-1) with at least two dtypes;
- every filter (delta, fixedscaleoffset, quantize) with a fitting dtype;
- every (order, separator) pair several times;
- shapes that are not multiples of the chunks (edge chunks), a zero-size
  dimension, 1-d and 3-d shapes;
- explicit fill values, including NaN/±inf, NaT, bytes, unicode, complex;
- big-endian ``>i4``/``>f8``, bool, complex, ``datetime64[ns]``,
  ``timedelta64[s]``, ``|S5``, ``<U4`` and structured dtypes.

Known zarr-python 3.1 limitations, adapted around (see the tests' comments):

- a structured dtype with a sub-array field (``("b", "<f8", (2,))``) is
  written by zarr-python as ``["b", "|V16"]`` (the field's shape is lost) and
  its values are scrambled when written from a numpy array of the real dtype;
  zarr-python also cannot open the spec's ``["b", "<f8", [2]]``. That dtype is
  therefore tested against tensorstore's ``zarr`` (v2) driver and against a
  reference decoder written from the v2 spec (``_reference_read``).
- ``gzip``: numcodecs' GZip writes the current time into the gzip header, so
  gzip chunks are compared without their 10-byte header.
"""

from __future__ import annotations

import base64
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
zarrdask = pytest.importorskip("zarrdask")

from ._util import (  # noqa: E402
    assert_array_same,
    chunk_files,
    gzip_body,
    make_data,
    normalize_v2_array_doc,
    read_json,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::RuntimeWarning")

NaT = np.datetime64("NaT", "ns")
STRUCT = np.dtype([("a", "<i4"), ("b", "<f8")])
STRUCT_SUB = np.dtype([("a", "<i4"), ("b", "<f8", (2,))])


@dataclass
class Case:
    id: str
    dtype: Any
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    compressor: Any = None
    filters: list[Any] = field(default_factory=list)
    order: str = "C"
    sep: str = "."
    fill_value: Any = 0
    # lossy filters: compare implementations with each other, and with the
    # original data only approximately
    lossy: bool = False
    finite: bool = False  # data without NaN/inf (delta/fixedscaleoffset on floats)
    # pass the codecs to zarrdask as {"id": ...} dicts instead of numcodecs objects
    as_dicts: bool = False

    def data(self, seed: int = 0) -> np.ndarray:
        d = make_data(self.dtype, self.shape, seed)
        if self.finite:
            d = np.round(np.random.default_rng(seed).uniform(-500, 500, self.shape), 1).astype(self.dtype)
        return d


def _blosc(cname: str, shuffle: int) -> numcodecs.Blosc:
    return numcodecs.Blosc(cname=cname, clevel=5 if cname == "lz4" else 3, shuffle=shuffle)


CASES = [
    # -- no compressor / zlib / gzip / bz2 / lzma / zstd --------------------------
    Case("none-i4-C-dot", "<i4", (10, 7), (3, 4), None, order="C", sep=".", fill_value=-7),
    Case("none-f8-F-slash-nan", "<f8", (10, 7), (4, 3), None, order="F", sep="/", fill_value=np.nan),
    Case("zlib-i1-C-slash", "|i1", (9, 9), (4, 4), numcodecs.Zlib(level=1), sep="/", fill_value=-1),
    Case("zlib-f8be-F-dot-nan", ">f8", (6, 11), (4, 5), numcodecs.Zlib(level=6), order="F", fill_value=np.nan),
    Case("gzip-u2-C-dot", "<u2", (13, 5), (5, 5), numcodecs.GZip(level=5), fill_value=65535),
    Case("gzip-c16-F-slash", "<c16", (5, 6), (2, 4), numcodecs.GZip(level=1), order="F", sep="/",
         fill_value=1 + 2j),
    Case("bz2-i8-C-slash-3d", "<i8", (5, 4, 3), (2, 3, 2), numcodecs.BZ2(level=9), sep="/", fill_value=0),
    Case("bz2-S5-F-dot", "|S5", (7, 5), (3, 2), numcodecs.BZ2(level=1), order="F", fill_value=b"ab"),
    Case("lzma-f4-C-dot-inf", "<f4", (11, 3), (4, 2), numcodecs.LZMA(), fill_value=np.inf),
    Case("lzma-U4-F-slash", "<U4", (5, 5), (2, 3), numcodecs.LZMA(preset=1), order="F", sep="/", fill_value="xy"),
    Case("zstd-i4be-F-slash", ">i4", (9, 8), (4, 3), numcodecs.Zstd(level=3), order="F", sep="/", fill_value=42),
    Case("zstd-M8ns-C-dot-nat", "<M8[ns]", (7, 6), (3, 4), numcodecs.Zstd(level=1), fill_value=NaT),
    Case("zstd-m8s-C-slash", "<m8[s]", (20,), (6,), numcodecs.Zstd(level=5), sep="/",
         fill_value=np.timedelta64(3, "s"), as_dicts=True),
    # -- blosc: each cname x each shuffle (0 no, 1 byte, 2 bit, -1 auto) ------------
    Case("blosc-lz4-0-b1-C-slash", "|b1", (10, 10), (4, 3), _blosc("lz4", 0), sep="/", fill_value=True),
    Case("blosc-lz4-1-f8-F-dot-ninf", "<f8", (10, 10), (3, 4), _blosc("lz4", 1), order="F", fill_value=-np.inf),
    Case("blosc-lz4-2-u4-C-dot", "<u4", (12, 7), (5, 7), _blosc("lz4", 2), fill_value=1, as_dicts=True),
    Case("blosc-lz4-auto-i2-F-slash", "<i2", (8, 9), (3, 3), _blosc("lz4", -1), order="F", sep="/", fill_value=-2),
    Case("blosc-lz4-1-struct-C-dot", STRUCT, (9,), (4,), _blosc("lz4", 1), fill_value=np.zeros((), STRUCT)[()]),
    Case("blosc-zstd-0-f4-F-dot-nan", "<f4", (7, 9), (3, 3), _blosc("zstd", 0), order="F", fill_value=np.nan),
    Case("blosc-zstd-1-c8-C-slash", "<c8", (6, 6), (4, 4), _blosc("zstd", 1), sep="/",
         fill_value=complex(np.nan, 1.0)),
    Case("blosc-zstd-2-u8-F-slash", "<u8", (5, 13), (5, 4), _blosc("zstd", 2), order="F", sep="/", fill_value=7),
    Case("blosc-zstd-auto-f8be-C-dot", ">f8", (10, 3), (3, 3), _blosc("zstd", -1), fill_value=0.5, as_dicts=True),
    Case("blosc-zstd-1-u1-C-dot-empty", "|u1", (0, 5), (2, 2), _blosc("zstd", 1), fill_value=3),
    Case("zlib-f2-F-slash", "<f2", (6, 5), (4, 4), numcodecs.Zlib(level=9), order="F", sep="/", fill_value=np.nan),
    Case("gzip-struct-F-slash", STRUCT, (4, 5), (3, 2), numcodecs.GZip(level=6), order="F", sep="/",
         fill_value=np.zeros((), STRUCT)[()]),
    Case("zlib-c8be-C-slash-big-chunks", ">c8", (3, 2), (5, 5), numcodecs.Zlib(level=3), sep="/",
         fill_value=complex(0, np.inf)),
    Case("none-M8D-F-dot", "<M8[D]", (6, 7), (4, 4), None, order="F", fill_value=np.datetime64("1999-12-31")),
    Case("zstd-i4-0d", "<i4", (), (), numcodecs.Zstd(level=1), fill_value=5),
    Case("blosc-lz4-1-f8-0d-F", "<f8", (), (), _blosc("lz4", 1), order="F", sep="/", fill_value=np.nan),
    # -- filters ---------------------------------------------------------------------
    Case("delta-f8-zlib-C-dot", "<f8", (10, 6), (4, 3), numcodecs.Zlib(level=1),
         filters=[numcodecs.Delta(dtype="<f8")], fill_value=0.0, lossy=True, finite=True),
    Case("delta-i4-blosc-F-slash", "<i4", (10, 6), (4, 3), _blosc("lz4", 1),
         filters=[numcodecs.Delta(dtype="<i4")], order="F", sep="/", fill_value=0),
    Case("fso-f8-zstd-F-slash", "<f8", (9, 7), (4, 4), numcodecs.Zstd(level=1),
         filters=[numcodecs.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<i4")],
         order="F", sep="/", fill_value=0.0, lossy=True, finite=True),
    Case("quantize-f4-bz2-C-slash", "<f4", (8, 8), (3, 5), numcodecs.BZ2(level=5),
         filters=[numcodecs.Quantize(digits=3, dtype="<f4")], sep="/", fill_value=np.nan, lossy=True),
    Case("quantize+delta-f8-none-F-dot", "<f8", (7, 7), (3, 3), None,
         filters=[numcodecs.Quantize(digits=2, dtype="<f8"), numcodecs.Delta(dtype="<f8")],
         order="F", fill_value=0.0, lossy=True, finite=True, as_dicts=True),
]

ORDER_SEP = {(c.order, c.sep) for c in CASES}
assert ORDER_SEP == {("C", "."), ("C", "/"), ("F", "."), ("F", "/")}


def _ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


# -- writers ------------------------------------------------------------------------------
def _zp_write(path: Path, case: Case, data: np.ndarray | None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(
            str(path),
            shape=case.shape,
            chunks=case.chunks,
            dtype=case.dtype,
            compressors=case.compressor,
            filters=case.filters or None,
            order=case.order,
            chunk_key_encoding={"name": "v2", "separator": case.sep},
            fill_value=case.fill_value,
            zarr_format=2,
        )
        if data is not None:
            a[...] = data
    return a


def _codec_arg(c: Any, as_dicts: bool) -> Any:
    return c.get_config() if (as_dicts and c is not None) else c


def _zd_write(path: Path, case: Case, data: np.ndarray | None) -> Any:
    a = zarrdask.create_array(
        str(path),
        shape=case.shape,
        chunks=case.chunks,
        dtype=case.dtype,
        compressors=_codec_arg(case.compressor, case.as_dicts),
        filters=[_codec_arg(f, case.as_dicts) for f in case.filters] or None,
        order=case.order,
        dimension_separator=case.sep,
        fill_value=case.fill_value,
        zarr_format=2,
    )
    if data is not None:
        a[...] = data
    return a


def _zp_read(path: Path) -> np.ndarray:
    return np.asarray(zarr.open_array(str(path), mode="r")[...])


def _check_lossy(actual: np.ndarray, original: np.ndarray) -> None:
    finite = np.isfinite(original)
    np.testing.assert_allclose(actual[finite], original[finite], rtol=0, atol=0.1)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(original))


# -- zarr-python writes, zarrdask reads ----------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_zarr_python_writes_zarrdask_reads(tmp_path: Path, case: Case) -> None:
    data = case.data(seed=1)
    _zp_write(tmp_path / "a", case, data)
    expected = _zp_read(tmp_path / "a")  # what zarr-python itself reads back
    if case.lossy:
        _check_lossy(expected, data)
    else:
        assert_array_same(expected, data)

    z = zarrdask.open_array(str(tmp_path / "a"), mode="r")
    assert z.zarr_format == 2
    assert z.shape == case.shape
    assert z.chunks == case.chunks
    assert z.dtype == np.dtype(case.dtype)
    assert z.order == case.order
    got = z[...]
    assert_array_same(got, expected)
    if got.ndim == 2 and got.size:
        # a strided, partial selection crossing chunk boundaries
        assert_array_same(z[1::2, ::3], expected[1::2, ::3])
        assert_array_same(z[::-2, -1], expected[::-2, -1])
        assert_array_same(z.oindex[[0, -1], [True] * got.shape[1]], expected[[0, -1], :])


@pytest.mark.parametrize("case", [c for c in CASES if c.shape and 0 not in c.shape][:12], ids=lambda c: c.id)
def test_zarr_python_partial_write_fill_value(tmp_path: Path, case: Case) -> None:
    """Chunks zarr-python never wrote read as the fill value in zarrdask."""
    data = case.data(seed=2)
    a = _zp_write(tmp_path / "a", case, None)
    region = tuple(slice(0, min(c, s)) for c, s in zip(case.chunks, case.shape))
    a[region] = data[region]
    expected = _zp_read(tmp_path / "a")
    got = zarrdask.open_array(str(tmp_path / "a"), mode="r")[...]
    assert_array_same(got, expected)
    # the elements outside the first chunk are the fill value
    mask = np.ones(case.shape, bool)
    mask[region] = False
    fill = np.full(case.shape, case.fill_value, dtype=case.dtype)
    assert_array_same(got[mask], fill[mask])


# -- zarrdask writes, zarr-python reads -------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_zarrdask_writes_zarr_python_reads(tmp_path: Path, case: Case) -> None:
    data = case.data(seed=3)
    z = _zd_write(tmp_path / "a", case, data)
    own = z[...]
    if case.lossy:
        _check_lossy(own, data)
    else:
        assert_array_same(own, data)

    a = zarr.open_array(str(tmp_path / "a"), mode="r")
    assert a.metadata.zarr_format == 2
    assert a.shape == case.shape
    assert a.chunks == case.chunks
    assert a.dtype == np.dtype(case.dtype)
    assert a.order == case.order
    assert_array_same(np.asarray(a[...]), own)

    # the .zarray documents are equivalent
    _zp_write(tmp_path / "b", case, None)
    ours = normalize_v2_array_doc(read_json(tmp_path / "a" / ".zarray"))
    theirs = normalize_v2_array_doc(read_json(tmp_path / "b" / ".zarray"))
    assert ours == theirs


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_zarrdask_partial_writes_zarr_python_reads(tmp_path: Path, case: Case) -> None:
    """Read-modify-write of partial chunks, then an overwrite with fill values
    (which empties chunks): zarr-python sees the same array as zarrdask."""
    if 0 in case.shape:
        pytest.skip("nothing to write in an empty array")
    data = case.data(seed=4)
    z = _zd_write(tmp_path / "a", case, None)
    ref = np.full(case.shape, case.fill_value, dtype=case.dtype)
    sel = tuple(slice(1, None, 2) for _ in case.shape)
    z[sel] = data[sel]
    ref[sel] = data[sel]
    sel2 = tuple(slice(0, max(1, s // 2)) for s in case.shape)
    z[sel2] = np.full(ref[sel2].shape, case.fill_value, dtype=case.dtype)
    ref[sel2] = case.fill_value
    zd = z[...]
    zp = _zp_read(tmp_path / "a")
    assert_array_same(zp, zd)
    if not case.lossy:
        assert_array_same(zd, ref)


# -- bit for bit ----------------------------------------------------------------------------------
def _aligned(case: Case) -> Case:
    """The case with a shape that is a whole number of chunks (edge chunks'
    padding is not specified by the v2 spec, so their bytes may differ)."""
    shape = tuple(c * (2 if i == 0 else 1) for i, c in enumerate(case.chunks))
    return Case(**{**case.__dict__, "shape": shape})


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_chunk_files_bit_identical(tmp_path: Path, case: Case) -> None:
    case = _aligned(case)
    data = case.data(seed=5)
    _zp_write(tmp_path / "zp", case, data)
    _zd_write(tmp_path / "zd", case, data)
    theirs = chunk_files(tmp_path / "zp")
    ours = chunk_files(tmp_path / "zd")
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        a, b = ours[key], theirs[key]
        if isinstance(case.compressor, numcodecs.GZip):
            a, b = gzip_body(a), gzip_body(b)
        assert a == b, f"chunk {key!r} differs ({len(a)} vs {len(b)} bytes)"


# -- fill values in .zarray ------------------------------------------------------------------------
FILL_CASES = [
    ("<f4", np.nan, "NaN"),
    (">f8", np.inf, "Infinity"),
    ("<f8", -np.inf, "-Infinity"),
    ("<f8", 0.25, 0.25),
    ("<i4", -3, -3),
    ("|b1", True, True),
    ("<c16", 1 + 2j, [1.0, 2.0]),
    ("<c8", complex(np.nan, 1), ["NaN", 1.0]),
    ("<M8[ns]", np.datetime64("2020-01-01", "ns"), 1577836800000000000),
    ("<M8[ns]", NaT, -9223372036854775808),
    ("|S5", b"ab", base64.standard_b64encode(b"ab").decode()),
    ("<U4", "xy", "xy"),
    ("<U4", "é中", "é中"),
    ("|S5", b"\xff\x00a", base64.standard_b64encode(b"\xff\x00a").decode()),
    ("<M8[D]", np.datetime64("1999-12-31"), 10956),
    (STRUCT, np.array((1, 2.5), STRUCT)[()], base64.standard_b64encode(np.array((1, 2.5), STRUCT).tobytes()).decode()),
]


@pytest.mark.parametrize("dtype, fill, encoded", FILL_CASES, ids=[f"{np.dtype(d).str}-{e}" for d, _, e in FILL_CASES])
def test_fill_value_encoding_matches(tmp_path: Path, dtype: Any, fill: Any, encoded: Any) -> None:
    case = Case("fill", dtype, (4,), (3,), None, fill_value=fill)
    _zp_write(tmp_path / "zp", case, None)
    _zd_write(tmp_path / "zd", case, None)
    assert read_json(tmp_path / "zp" / ".zarray")["fill_value"] == encoded  # the spec's encoding
    assert read_json(tmp_path / "zd" / ".zarray")["fill_value"] == encoded
    expected = np.full((4,), fill, dtype=dtype)
    assert_array_same(zarrdask.open_array(str(tmp_path / "zp"), mode="r")[...], expected)
    assert_array_same(_zp_read(tmp_path / "zd"), expected)


def test_null_fill_value_from_zarr_python(tmp_path: Path) -> None:
    """``fill_value: null`` (no fill value): the array opens and written chunks
    read back; unwritten elements are undefined by the spec, so not checked."""
    case = Case("nullfill", "<i4", (6,), (3,), numcodecs.Zlib(1), fill_value=None)
    a = _zp_write(tmp_path / "a", case, None)
    assert read_json(tmp_path / "a" / ".zarray")["fill_value"] is None
    a[:3] = [1, 2, 3]
    z = zarrdask.open_array(str(tmp_path / "a"), mode="r")
    assert_array_same(z[:3], np.array([1, 2, 3], "<i4"))


# -- structured dtype with a sub-array field (zarr-python can't) -------------------------------------
def _reference_read(path: Path) -> np.ndarray:
    """A v2 reader written from the spec, with numcodecs: for checking files
    that zarr-python cannot open."""
    meta = read_json(path / ".zarray")

    def dt(x: Any) -> np.dtype:
        if isinstance(x, str):
            return np.dtype(x)
        return np.dtype([(f[0], f[1], tuple(f[2])) if len(f) == 3 else (f[0], dt(f[1])) for f in x])

    dtype = dt(meta["dtype"])
    shape, chunks = tuple(meta["shape"]), tuple(meta["chunks"])
    sep = meta.get("dimension_separator", ".")
    comp = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
    filters = [numcodecs.get_codec(f) for f in meta["filters"] or []]
    fill = meta["fill_value"]
    if fill is not None and dtype.fields is not None:
        fill = np.frombuffer(base64.standard_b64decode(fill), dtype)[0]
    out = np.full(shape, fill, dtype) if fill is not None else np.zeros(shape, dtype)
    for idx in np.ndindex(*[-(-s // c) for s, c in zip(shape, chunks)]):
        p = path / sep.join(map(str, idx))
        if not p.exists():
            continue
        buf = p.read_bytes()
        if comp is not None:
            buf = comp.decode(buf)
        for f in reversed(filters):
            buf = f.decode(buf)
        chunk = np.frombuffer(bytes(buf), dtype).reshape(chunks, order=meta["order"])
        sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))
        out[sel] = chunk[tuple(slice(0, s.stop - s.start) for s in sel)]
    return out


@pytest.mark.parametrize("order, sep", [("C", "."), ("F", "/")])
def test_structured_subarray_zarrdask_writes(tmp_path: Path, order: str, sep: str) -> None:
    """zarrdask writes the spec's ``[["a", "<i4"], ["b", "<f8", [2]]]``; a
    spec reference decoder and tensorstore read it equal. (zarr-python 3.1
    cannot open this dtype — "No Zarr data type found" — a zarr-python
    limitation.)"""
    ts = pytest.importorskip("tensorstore")
    case = Case("sub", STRUCT_SUB, (5, 3), (2, 2), numcodecs.Zlib(1), order=order, sep=sep,
                fill_value=np.zeros((), STRUCT_SUB)[()])
    data = case.data(seed=6)
    z = _zd_write(tmp_path / "a", case, data)
    assert_array_same(z[...], data)
    meta = read_json(tmp_path / "a" / ".zarray")
    assert meta["dtype"] == [["a", "<i4"], ["b", "<f8", [2]]]
    assert_array_same(_reference_read(tmp_path / "a"), data)
    for name in ("a", "b"):
        t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "a")},
                     "field": name}).result()
        assert_array_same(t.read().result(), data[name])


def test_structured_subarray_peer_writes(tmp_path: Path) -> None:
    """tensorstore (field by field) writes a structured v2 array with a
    sub-array field; zarrdask reads it equal."""
    ts = pytest.importorskip("tensorstore")
    data = make_data(STRUCT_SUB, (5, 3), seed=7)
    meta = {"zarr_format": 2, "shape": [5, 3], "chunks": [2, 2], "dtype": [["a", "<i4"], ["b", "<f8", [2]]],
            "compressor": {"id": "zlib", "level": 1}, "fill_value": None, "order": "F", "filters": None,
            "dimension_separator": "/"}
    kv = {"driver": "file", "path": str(tmp_path / "a")}
    for name in ("a", "b"):
        t = ts.open({"driver": "zarr", "kvstore": kv, "field": name, "metadata": meta},
                    create=name == "a", open=True).result()
        t.write(data[name]).result()
    z = zarrdask.open_array(str(tmp_path / "a"), mode="r")
    assert z.dtype == STRUCT_SUB
    assert_array_same(z[...], data)


def test_structured_subarray_as_zarr_python_writes_it(tmp_path: Path) -> None:
    """zarr-python 3.1 writes the sub-array field as ``|V16``; writing the
    values viewed as that dtype keeps the bytes right, and zarrdask reads the
    same bytes (as the ``|V16`` dtype the document declares)."""
    zdt = np.dtype([("a", "<i4"), ("b", "V16")])
    data = make_data(STRUCT_SUB, (6,), seed=8)
    case = Case("subzp", zdt, (6,), (4,), numcodecs.Zlib(1), fill_value=np.zeros((), zdt)[()])
    _zp_write(tmp_path / "a", case, data.view(zdt))
    assert read_json(tmp_path / "a" / ".zarray")["dtype"] == [["a", "<i4"], ["b", "|V16"]]
    z = zarrdask.open_array(str(tmp_path / "a"), mode="r")
    assert z.dtype == zdt
    assert_array_same(z[...].view(STRUCT_SUB), data)


# -- groups -----------------------------------------------------------------------------------------------
def test_zarr_python_v2_hierarchy_navigated_by_zarrdask(tmp_path: Path) -> None:
    root = zarr.open_group(str(tmp_path), mode="w", zarr_format=2)
    root.attrs.update({"title": "root", "nested": {"list": [1, 2.5, None, "x"]}})
    a = root.create_group("a")
    a.attrs["level"] = 1
    b = a.create_group("b")
    b.attrs.update({"level": 2, "unicode": "héllo"})
    data = make_data("<f8", (6, 4), seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = b.create_array("x", shape=(6, 4), chunks=(4, 3), dtype="<f8", fill_value=np.nan,
                           compressors=numcodecs.Zlib(1))
        y = root.create_array("y", shape=(3,), chunks=(2,), dtype="<i2", fill_value=0, compressors=None)
    x[...] = data
    x.attrs["units"] = "m"
    y[...] = [1, 2, 3]
    root.create_group("empty")

    g = zarrdask.open_group(str(tmp_path), mode="r")
    assert sorted(g.keys()) == ["a", "empty", "y"]
    assert dict(g.attrs) == {"title": "root", "nested": {"list": [1, 2.5, None, "x"]}}
    assert "a" in g and "a/b" in g and "a/b/x" in g and "nope" not in g
    assert isinstance(g["a"], zarrdask.Group)
    assert dict(g["a"].attrs) == {"level": 1}
    assert dict(g["a/b"].attrs) == {"level": 2, "unicode": "héllo"}
    assert dict(g["a"]["b"].attrs) == {"level": 2, "unicode": "héllo"}
    arr = g["a/b/x"]
    assert isinstance(arr, zarrdask.Array)
    assert dict(arr.attrs) == {"units": "m"}
    assert_array_same(arr[...], data)
    assert_array_same(g["y"][...], np.array([1, 2, 3], "<i2"))
    assert dict(g.members()).keys() == {"a", "empty", "y"}
    assert isinstance(dict(g.members())["y"], zarrdask.Array)
    tree = str(g.tree())
    for name in ("a", "b", "x", "y", "empty"):
        assert name in tree
    # open_array / open with a path into the hierarchy
    assert_array_same(zarrdask.open_array(str(tmp_path), path="a/b/x", mode="r")[...], data)
    assert isinstance(zarrdask.open(str(tmp_path), path="a/b", mode="r"), zarrdask.Group)


def test_zarrdask_v2_hierarchy_navigated_by_zarr_python(tmp_path: Path) -> None:
    g = zarrdask.open_group(str(tmp_path / "zd"), mode="w", zarr_format=2)
    g.attrs.update({"title": "root", "nested": {"list": [1, 2.5, None, "x"]}})
    a = g.create_group("a")
    a.attrs["level"] = 1
    b = a.create_group("b")
    b.attrs.update({"level": 2, "unicode": "héllo"})
    data = make_data("<f8", (6, 4), seed=10)
    x = b.create_array("x", shape=(6, 4), chunks=(4, 3), dtype="<f8", fill_value=np.nan,
                       compressors=numcodecs.Zlib(1), zarr_format=2)
    x[...] = data
    x.attrs["units"] = "m"
    y = g.create_array("y", shape=(3,), chunks=(2,), dtype="<i2", fill_value=0, compressors=None, zarr_format=2)
    y[...] = np.array([1, 2, 3])
    g.require_group("empty")

    root = zarr.open_group(str(tmp_path / "zd"), mode="r")
    assert root.metadata.zarr_format == 2
    assert sorted(root.keys()) == ["a", "empty", "y"]
    assert dict(root.attrs) == {"title": "root", "nested": {"list": [1, 2.5, None, "x"]}}
    assert dict(root["a"].attrs) == {"level": 1}
    assert dict(root["a/b"].attrs) == {"level": 2, "unicode": "héllo"}
    assert dict(root["a/b/x"].attrs) == {"units": "m"}
    assert_array_same(np.asarray(root["a/b/x"][...]), data)
    assert_array_same(np.asarray(root["y"][...]), np.array([1, 2, 3], "<i2"))

    # the documents are what zarr-python writes for the same hierarchy
    assert read_json(tmp_path / "zd" / ".zgroup") == {"zarr_format": 2}
    assert read_json(tmp_path / "zd" / "a" / "b" / ".zgroup") == {"zarr_format": 2}
    assert read_json(tmp_path / "zd" / ".zattrs") == {"title": "root", "nested": {"list": [1, 2.5, None, "x"]}}
    assert read_json(tmp_path / "zd" / "a" / "b" / ".zattrs") == {"level": 2, "unicode": "héllo"}
    assert read_json(tmp_path / "zd" / "a" / "b" / "x" / ".zattrs") == {"units": "m"}
    assert not (tmp_path / "zd" / "zarr.json").exists()


def test_attribute_updates_visible_both_ways(tmp_path: Path) -> None:
    z = zarrdask.create_array(str(tmp_path), shape=(4,), chunks=(2,), dtype="<i4", zarr_format=2,
                              attributes={"a": 1})
    a = zarr.open_array(str(tmp_path), mode="r+")
    assert dict(a.attrs) == {"a": 1}
    a.attrs["b"] = [1, 2]
    assert dict(zarrdask.open_array(str(tmp_path), mode="r").attrs) == {"a": 1, "b": [1, 2]}
    z2 = zarrdask.open_array(str(tmp_path), mode="r+")
    z2.attrs["c"] = {"d": None}
    del z2.attrs["a"]
    assert json.loads((tmp_path / ".zattrs").read_text()) == {"b": [1, 2], "c": {"d": None}}
    assert dict(zarr.open_array(str(tmp_path), mode="r").attrs) == {"b": [1, 2], "c": {"d": None}}
    del z


def test_resize_and_append_visible_to_zarr_python(tmp_path: Path) -> None:
    z = zarrdask.create_array(str(tmp_path), shape=(5, 3), chunks=(2, 2), dtype="<i4", zarr_format=2,
                              fill_value=-1, compressors=numcodecs.Zlib(1))
    z[...] = np.arange(15).reshape(5, 3)
    z.resize(3, 4)
    # chunks wholly outside the shrunken shape are deleted (zarr-python does the same)
    assert set(chunk_files(tmp_path)) <= {f"{i}.{j}" for i in range(2) for j in range(2)}
    z.append(np.full((2, 4), 9, "<i4"))
    expected = np.full((5, 4), -1, "<i4")
    expected[:3, :3] = np.arange(15).reshape(5, 3)[:3]
    expected[3:] = 9
    assert_array_same(z[...], expected)
    a = zarr.open_array(str(tmp_path), mode="r")
    assert a.shape == (5, 4)
    assert_array_same(np.asarray(a[...]), expected)
    assert read_json(tmp_path / ".zarray")["shape"] == [5, 4]


def test_zarr_python_consolidated_v2_hierarchy(tmp_path: Path) -> None:
    """A v2 hierarchy with zarr-python's ``.zmetadata`` opens and navigates."""
    root = zarr.open_group(str(tmp_path), mode="w", zarr_format=2, attributes={"t": 1})
    g = root.create_group("a", attributes={"u": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = g.create_array("x", shape=(4,), chunks=(2,), dtype="<i4", fill_value=0)
    x[...] = [1, 2, 3, 4]
    zarr.consolidate_metadata(str(tmp_path))
    assert (tmp_path / ".zmetadata").exists()
    zg = zarrdask.open_group(str(tmp_path), mode="r")
    assert sorted(zg.keys()) == ["a"]
    assert dict(zg.attrs) == {"t": 1}
    assert dict(zg["a"].attrs) == {"u": 2}
    assert_array_same(zg["a/x"][...], np.array([1, 2, 3, 4], "<i4"))


@pytest.mark.parametrize("nested", [False, True])
def test_zarray_without_dimension_separator(tmp_path: Path, nested: bool) -> None:
    """``dimension_separator`` is optional in ``.zarray`` (zarr-python 2 before
    2.8 never wrote it): absent means ``"."``. A document that names ``"/"``
    is read with nested keys."""
    case = Case("nosep", "<i4", (5, 4), (2, 3), numcodecs.Zlib(1), sep="/" if nested else ".", fill_value=0)
    data = case.data(seed=11)
    _zp_write(tmp_path, case, data)
    doc = read_json(tmp_path / ".zarray")
    if not nested:
        del doc["dimension_separator"]
    (tmp_path / ".zarray").write_text(json.dumps(doc))
    assert_array_same(zarrdask.open_array(str(tmp_path), mode="r")[...], data)


@pytest.mark.parametrize("case", [c for c in CASES if c.shape and 0 not in c.shape][:6], ids=lambda c: c.id)
def test_nchunks_initialized_matches_zarr_python(tmp_path: Path, case: Case) -> None:
    data = case.data(seed=12)
    a = _zp_write(tmp_path, case, None)
    sel = tuple(slice(0, max(1, s // 2)) for s in case.shape)
    a[sel] = data[sel]
    assert zarrdask.open_array(str(tmp_path), mode="r").nchunks_initialized == a.nchunks_initialized
