"""``sharding_indexed`` interoperability with zarr-python 3 and tensorstore, both ways.

The matrix (local directories in ``tmp_path``): index at the start and the end,
with and without ``crc32c`` in the index codecs, raw / zstd / gzip / blosc inner
chunks, on an array whose shape is not a multiple of the shard shape (edge
shards), with an inner chunk equal to the fill value in several shards (empty
index entries) and one shard entirely fill (not stored: a missing shard).

- each library writes, zarrdask reads equal (whole and selections), and the reverse;
- shard files are compared with zarr-python's for the same data and
  configuration: the same keys, the same empty entries, the same encoded inner
  chunks, each shard's inner chunks laid out validly (inside the shard, not
  overlapping each other or the index); the spec leaves their order open
  (zarr-python lays them out in Morton order, zarrdask in C order), so
  zarr-python's shard is laid out again in C order by hand and then compared
  byte for byte with zarrdask's; with tensorstore (C order too) raw shards are
  byte-identical;
- nested sharding both ways, partial writes into the other library's shards
  both ways, 0-d, ``crc32c`` after and ``transpose`` before the sharding codec,
  and the I/O of partial reads of zarr-python's (Morton-ordered) shards.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")
zarrdask = pytest.importorskip("zarrdask")

from zarrdask.storage import CountingStore, LocalStore  # noqa: E402

from tests._peers import BLOSC_TYPESIZE_REASON, zarr_python_blosc_uses_typesize  # noqa: E402
from tests._sharding_util import (  # noqa: E402
    BYTES_LE,
    MAX,
    build_shard,
    count_nonfill_inner,
    is_compact_c_order,
    parse_shard,
    sharding_config,
)

from ._util import assert_array_same, chunk_files, gzip_body  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::RuntimeWarning")

# -- the matrix --------------------------------------------------------------------------------
SHAPE = (37, 29)
SHARD = (16, 12)
INNER = (8, 4)  # 2 x 3 inner chunks per shard: zarr-python's Morton order differs from C order
INNER_ROW = (16, 4)  # 1 x 3 inner chunks per shard: one row, Morton order is C order

ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
BLOSC = {"name": "blosc", "configuration": {"typesize": 4, "cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                            "blocksize": 0}}

#: compressor name → (inner bytes→bytes codecs, dtype, fill value)
COMPRESSORS: dict[str, tuple[list[dict[str, Any]], str, Any]] = {
    "raw": ([], "uint16", 0),
    "zstd": ([ZSTD], "float32", np.nan),
    "gzip": ([GZIP], "int64", -5),
    "blosc": ([BLOSC], "int32", 0),
}
MATRIX = [(loc, crc, comp) for loc in ("end", "start") for crc in (True, False) for comp in COMPRESSORS]
MATRIX_IDS = [f"{loc}-{'crc' if crc else 'nocrc'}-{comp}" for loc, crc, comp in MATRIX]

MISSING_SHARD = (1, 1)  # rows 16..31, cols 12..23: all fill, never stored


def _bytes_codec(dtype: str) -> dict[str, Any]:
    return {"name": "bytes"} if np.dtype(dtype).itemsize == 1 else BYTES_LE


def _config(loc: str, crc: bool, comp: str, inner: tuple[int, ...] = INNER) -> dict[str, Any]:
    codecs, dtype, _ = COMPRESSORS[comp]
    return sharding_config(inner, [_bytes_codec(dtype), *codecs], crc=crc, index_location=loc)


def _data(dtype: str, fill: Any, seed: int = 0, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        data = (rng.standard_normal(shape) * 10).astype(dt)
    else:
        data = rng.integers(1, 1000, size=shape).astype(dt)
    r, c = MISSING_SHARD
    data[r * 16 : (r + 1) * 16, c * 12 : (c + 1) * 12] = fill  # a shard of fill: missing
    data[0:8, 4:8] = fill  # inner chunk (0, 1) of shard (0, 0)
    data[16:24, 0:4] = fill  # inner chunk (0, 0) of shard (1, 0)
    data[32:37, 28:29] = fill  # inner chunk (0, 1) of the edge shard (2, 2): one column inside the array
    return data


def _fill_json(fill: Any) -> Any:
    return "NaN" if isinstance(fill, float) and np.isnan(fill) else fill


def _key(coords) -> str:
    return "c/" + "/".join(map(str, coords))


def _grid(shape=SHAPE, shard=SHARD):
    return tuple(-(-s // c) for s, c in zip(shape, shard))


# -- writers / readers -------------------------------------------------------------------------------
def zp_create(path: Path, cfg: dict[str, Any], dtype: str, fill: Any, *, shape=SHAPE, shard=SHARD,
              write_empty_chunks: bool = False) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.create_array(
            str(path), shape=shape, dtype=dtype, chunks=shard, serializer=cfg, compressors=None, filters=None,
            fill_value=fill, config={"write_empty_chunks": write_empty_chunks},
        )


def zp_open(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r+")


def zd_create(path: Path, cfg: Any, dtype: str, fill: Any, *, shape=SHAPE, shard=SHARD, **kw: Any) -> Any:
    return zarrdask.create_array(
        str(path), shape=shape, dtype=dtype, chunks=shard, serializer=cfg, compressors=None, fill_value=fill, **kw
    )


def _metadata(codecs: list[Any], dtype: str, fill: Any, shape=SHAPE, shard=SHARD) -> dict[str, Any]:
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": _fill_json(fill), "codecs": codecs,
    }


def ts_create(path: Path, codecs: list[Any], dtype: str, fill: Any, shape=SHAPE, shard=SHARD) -> Any:
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
            "metadata": _metadata(codecs, dtype, fill, shape, shard)}
    return ts.open(spec, create=True).result()


def ts_open(path: Path) -> Any:
    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}, open=True).result()


SELECTIONS = [
    (Ellipsis,),
    (5, slice(None)),
    (slice(2, None, 3), slice(1, None, 4)),
    (slice(16, 32), slice(12, 24)),  # the missing shard
    (36, 28),  # the edge shard
    (slice(30, 37), slice(20, 29)),
]
OINDEX = ([36, 0, 17, 17], [28, 3, 12, 0])


#: zarrdask only: zarr-python refuses negative steps
NEGATIVE = [(slice(None, None, -3), slice(None, 5, -2)), (slice(30, 10, -1), 7)]


def _check_reads(read, oread, data: np.ndarray, *, negative: bool = False) -> None:
    for sel in SELECTIONS + (NEGATIVE if negative else []):
        assert_array_same(np.asarray(read(sel)), data[sel])
    if oread is not None:
        assert_array_same(np.asarray(oread(OINDEX)), data[np.ix_(*OINDEX)])


def _stored_shards(root: Path) -> set[str]:
    return set(chunk_files(root))


def _expected_shards(data: np.ndarray, fill: Any, shard=SHARD) -> set[str]:
    keys = set()
    for coords in np.ndindex(*_grid(data.shape, shard)):
        region = tuple(slice(i * s, (i + 1) * s) for i, s in zip(coords, shard))
        block = data[region]
        if not np.array_equal(block, np.broadcast_to(np.asarray(fill, block.dtype), block.shape),
                              equal_nan=block.dtype.kind == "f"):
            keys.add(_key(coords))
    return keys


# =================================================================================================
# Each library writes, the other reads
# =================================================================================================
@pytest.mark.parametrize("loc, crc, comp", MATRIX, ids=MATRIX_IDS)
def test_zarr_python_writes_zarrdask_reads(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    data = _data(dtype, fill, seed=1)
    z = zp_create(tmp_path, _config(loc, crc, comp), dtype, fill)
    z[...] = data
    assert _stored_shards(tmp_path) == _expected_shards(data, fill)
    assert _key(MISSING_SHARD) not in _stored_shards(tmp_path)
    a = zarrdask.open_array(str(tmp_path), mode="r")
    assert a.chunks == INNER and a.shards == SHARD
    _check_reads(lambda s: a[s], lambda s: a.oindex[s], data, negative=True)
    assert a.nchunks_initialized == count_nonfill_inner(data, INNER, fill)
    assert a.nshards_initialized == len(_expected_shards(data, fill))


@pytest.mark.parametrize("loc, crc, comp", MATRIX, ids=MATRIX_IDS)
def test_zarrdask_writes_zarr_python_reads(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    data = _data(dtype, fill, seed=2)
    a = zd_create(tmp_path, _config(loc, crc, comp), dtype, fill)
    a[...] = data
    assert _stored_shards(tmp_path) == _expected_shards(data, fill)
    z = zp_open(tmp_path)
    _check_reads(lambda s: z[s], lambda s: z.oindex[s], data)


@pytest.mark.parametrize("loc, crc, comp", MATRIX, ids=MATRIX_IDS)
def test_tensorstore_writes_zarrdask_reads(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    data = _data(dtype, fill, seed=3)
    t = ts_create(tmp_path, [_config(loc, crc, comp)], dtype, fill)
    t.write(data).result()
    assert _stored_shards(tmp_path) == _expected_shards(data, fill)
    a = zarrdask.open_array(str(tmp_path), mode="r")
    _check_reads(lambda s: a[s], lambda s: a.oindex[s], data, negative=True)
    assert a.nchunks_initialized == count_nonfill_inner(data, INNER, fill)


@pytest.mark.parametrize("loc, crc, comp", MATRIX, ids=MATRIX_IDS)
def test_zarrdask_writes_tensorstore_reads(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    data = _data(dtype, fill, seed=4)
    a = zd_create(tmp_path, _config(loc, crc, comp), dtype, fill)
    a[...] = data
    t = ts_open(tmp_path)
    assert_array_same(t.read().result(), data)
    assert_array_same(t[30:37, 20:29].read().result(), data[30:37, 20:29])
    assert_array_same(t[16:32, 12:24].read().result(), data[16:32, 12:24])


# =================================================================================================
# Stored bytes
# =================================================================================================
def _assert_valid_layout(entries: np.ndarray, index: range, key: str) -> None:
    """What the spec fixes about where inner chunks lie: each non-empty entry
    inside the shard (checked by ``parse_shard``), none overlapping the index
    or another one; their order and any unused space are left open."""
    flat = np.asarray(entries, dtype=np.uint64).reshape(-1, 2)
    spans = sorted((int(off), int(off + nb)) for off, nb in flat.tolist() if not (off == MAX and nb == MAX))
    for (a0, a1), (b0, _) in zip(spans, spans[1:]):
        assert a1 <= b0, f"{key}: inner chunks at [{a0}, {a1}) and [{b0}, ...) overlap"
    for a0, a1 in spans:
        assert a1 <= index.start or a0 >= index.stop, f"{key}: inner chunk [{a0}, {a1}) overlaps the index"


def _compare_shard(key: str, ours: bytes, theirs: bytes, cps, loc: str, crc: bool, gzipped: bool) -> None:
    """The same index structure (the same empty entries, each inner chunk the
    same size) and the same encoded inner chunks, each laid out validly;
    zarrdask's laid out back to back in C order, its documented layout."""
    e_ours, p_ours = parse_shard(ours, cps, index_location=loc, crc=crc)
    e_theirs, p_theirs = parse_shard(theirs, cps, index_location=loc, crc=crc)
    assert [p is None for p in p_ours] == [p is None for p in p_theirs], f"{key}: empty entries differ"
    for i, (x, y) in enumerate(zip(p_ours, p_theirs)):
        if x is None:
            continue
        if gzipped:  # numcodecs' GZip, which zarr-python uses, stamps the time into the header
            x, y = gzip_body(x), gzip_body(y)
        assert x == y, f"{key}: inner chunk {i} differs ({len(x)} vs {len(y)} bytes)"
    isz = 16 * math.prod(cps) + 4 * crc
    for raw, entries in ((ours, e_ours), (theirs, e_theirs)):
        _assert_valid_layout(entries, range(0, isz) if loc == "start" else range(len(raw) - isz, len(raw)), key)
    assert build_shard(p_ours, cps=cps, index_location=loc, crc=crc) == ours, \
        f"{key}: zarrdask writes inner chunks back to back in C order, then (or after) the index"


@pytest.mark.parametrize("inner", [INNER, INNER_ROW], ids=["2x3-inner", "1x3-inner"])
@pytest.mark.parametrize("loc, crc, comp", MATRIX, ids=MATRIX_IDS)
def test_shard_bytes_match_zarr_python(tmp_path: Path, loc: str, crc: bool, comp: str, inner) -> None:
    """zarr-python (``write_empty_chunks=False``) and zarrdask store the same
    shards for the same data and configuration, up to the order of the inner
    chunks, which the spec leaves to the writer ("The actual order of the chunk
    content is not fixed"): zarrdask lays them out in C order (zarr-python 3.1
    and 3.4 in Morton order), so zarr-python's shard laid out again in C order
    must be zarrdask's, byte for byte (gzip: up to the header's time stamp)."""
    if comp == "blosc" and not zarr_python_blosc_uses_typesize():
        pytest.skip(BLOSC_TYPESIZE_REASON)
    _, dtype, fill = COMPRESSORS[comp]
    data = _data(dtype, fill, seed=5)
    cfg = _config(loc, crc, comp, inner)
    zp_create(tmp_path / "zp", cfg, dtype, fill)[...] = data
    zd_create(tmp_path / "zd", cfg, dtype, fill)[...] = data
    theirs, ours = chunk_files(tmp_path / "zp"), chunk_files(tmp_path / "zd")
    assert sorted(ours) == sorted(theirs)
    cps = tuple(s // c for s, c in zip(SHARD, inner))
    gzipped = comp == "gzip"
    for key in theirs:
        _compare_shard(key, ours[key], theirs[key], cps, loc, crc, gzipped)
        if not gzipped:
            _, pieces = parse_shard(theirs[key], cps, index_location=loc, crc=crc)
            assert build_shard(pieces, cps=cps, index_location=loc, crc=crc) == ours[key], key


@pytest.mark.parametrize("loc", ["end", "start"])
@pytest.mark.parametrize("crc", [True, False], ids=["crc", "nocrc"])
def test_shard_bytes_match_tensorstore(tmp_path: Path, loc: str, crc: bool) -> None:
    """tensorstore also writes inner chunks in C order: raw shards are byte-identical."""
    _, dtype, fill = COMPRESSORS["raw"]
    data = _data(dtype, fill, seed=6)
    cfg = _config(loc, crc, "raw")
    ts_create(tmp_path / "ts", [cfg], dtype, fill).write(data).result()
    zd_create(tmp_path / "zd", cfg, dtype, fill)[...] = data
    theirs, ours = chunk_files(tmp_path / "ts"), chunk_files(tmp_path / "zd")
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert ours[key] == theirs[key], key


def test_write_empty_chunks_true_matches_zarr_python(tmp_path: Path) -> None:
    """With ``write_empty_chunks=True`` zarr-python stores inner chunks equal to
    the fill value too; so does zarrdask. (zarr-python also leaves out the inner
    chunks of an edge shard that lie wholly outside the array; zarrdask stores
    them as fill. The spec leaves what lies outside the array undefined, so only
    the inner chunks inside the array are compared, and whole shards only where
    no inner chunk lies outside.)"""
    cfg = _config("end", True, "raw", INNER_ROW)
    data = np.zeros(SHAPE, "uint16")
    data[0:16, 0:4] = 1
    zp_create(tmp_path / "zp", cfg, "uint16", 0, write_empty_chunks=True)[...] = data
    zd_create(tmp_path / "zd", cfg, "uint16", 0, write_empty_chunks=True)[...] = data
    theirs, ours = chunk_files(tmp_path / "zp"), chunk_files(tmp_path / "zd")
    assert sorted(ours) == sorted(theirs)
    cps = (1, 3)
    for key in sorted(theirs):
        _, p_theirs = parse_shard(theirs[key], cps)
        _, p_ours = parse_shard(ours[key], cps)
        inside = _inner_chunks_inside(key, cps)
        stored_theirs = [i for i, p in enumerate(p_theirs) if p is not None and i in inside]
        stored_ours = [i for i, p in enumerate(p_ours) if p is not None and i in inside]
        assert stored_ours == stored_theirs, f"{key}: inner chunks stored: zarrdask {stored_ours}, zarr-python {stored_theirs}"
        for i in inside:
            assert p_ours[i] == p_theirs[i], (key, i)
        if len(inside) == len(p_theirs):
            assert ours[key] == theirs[key], key


def _inner_chunks_inside(key: str, cps: tuple[int, ...]) -> set[int]:
    """Flat indices of the inner chunks of shard ``key`` that overlap the array."""
    coords = [int(c) for c in key.split("/")[1:]]
    inner = [sh // n for sh, n in zip(SHARD, cps)]
    inside = set()
    for flat, idx in enumerate(np.ndindex(*cps)):
        if all(c * sh + i * n < size for c, sh, i, n, size in zip(coords, SHARD, idx, inner, SHAPE)):
            inside.add(flat)
    return inside


# =================================================================================================
# Nested sharding
# =================================================================================================
NESTED_INNER = sharding_config([4, 2], [BYTES_LE, ZSTD], crc=True, index_location="end")
NESTED = sharding_config([8, 6], [NESTED_INNER], crc=True, index_location="start")
NESTED_RAW = sharding_config([8, 6], [sharding_config([4, 2], [BYTES_LE], index_location="end")],
                             crc=False, index_location="start")


def _nested_data(seed: int) -> np.ndarray:
    data = _data("uint16", 0, seed=seed)
    data[8:16, 0:6] = 0  # an empty (8, 6) chunk of an outer shard
    data[0:4, 6:8] = 0  # an empty (4, 2) chunk inside an (8, 6) chunk
    return data


def test_zarr_python_nested_sharding_zarrdask_reads(tmp_path: Path) -> None:
    data = _nested_data(7)
    zp_create(tmp_path, NESTED, "uint16", 0)[...] = data
    a = zarrdask.open_array(str(tmp_path), mode="r")
    assert a.chunks == (8, 6) and a.shards == SHARD
    _check_reads(lambda s: a[s], lambda s: a.oindex[s], data, negative=True)
    assert a.nchunks_initialized == count_nonfill_inner(data, (8, 6), 0)


def test_zarrdask_nested_sharding_zarr_python_reads(tmp_path: Path) -> None:
    data = _nested_data(8)
    zd_create(tmp_path, NESTED, "uint16", 0)[...] = data
    z = zp_open(tmp_path)
    _check_reads(lambda s: z[s], lambda s: z.oindex[s], data)
    # the layout: outer index at the start, inner shards with their index at the end
    outer, pieces = parse_shard((tmp_path / "c/0/0").read_bytes(), (2, 2), index_location="start")
    assert is_compact_c_order(outer, 68) and pieces[2] is None  # rows 8..15, cols 0..5
    inner, _ = parse_shard(pieces[1], (2, 3), index_location="end")
    assert inner[0].tolist() == [MAX, MAX]  # rows 0..3, cols 6..7


def test_nested_sharding_tensorstore_both_ways(tmp_path: Path) -> None:
    data = _nested_data(9)
    ts_create(tmp_path / "ts", [NESTED], "uint16", 0).write(data).result()
    a = zarrdask.open_array(str(tmp_path / "ts"), mode="r")
    _check_reads(lambda s: a[s], lambda s: a.oindex[s], data, negative=True)
    zd_create(tmp_path / "zd", NESTED, "uint16", 0)[...] = data
    assert_array_same(ts_open(tmp_path / "zd").read().result(), data)


def test_nested_raw_sharding_bytes_match_tensorstore(tmp_path: Path) -> None:
    data = _nested_data(10)
    ts_create(tmp_path / "ts", [NESTED_RAW], "uint16", 0).write(data).result()
    zd_create(tmp_path / "zd", NESTED_RAW, "uint16", 0)[...] = data
    assert chunk_files(tmp_path / "zd") == chunk_files(tmp_path / "ts")


# =================================================================================================
# Partial writes into the other library's shards
# =================================================================================================
PARTIAL = [(loc, True, comp) for loc in ("end", "start") for comp in ("raw", "zstd")] + [("end", False, "gzip")]
PARTIAL_IDS = [f"{loc}-{'crc' if crc else 'nocrc'}-{comp}" for loc, crc, comp in PARTIAL]


def _partial_writes(fill: Any, dtype: str) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(11)
    return [
        ((slice(3, 30, 4), slice(None, None, 5)), rng.integers(1, 50, (7, 6)).astype(dtype)),  # strided, many shards
        ((slice(9, 11), slice(5, 6)), np.array([[77], [78]], dtype)),  # inside one inner chunk
        ((slice(32, 37), slice(0, 8)), np.full((5, 8), fill, dtype)),  # two edge inner chunks become fill
        ((slice(16, 32), slice(0, 12)), np.full((16, 12), fill, dtype)),  # a whole shard of fill: deleted
        ((20, 14), np.array(7, dtype)),  # into the missing shard: created with one inner chunk
    ]


def _apply(model: np.ndarray, writes, setter) -> None:
    for sel, value in writes:
        setter(sel, value)
        model[sel] = value


def _check_compact(root: Path, loc: str, crc: bool) -> None:
    cps = tuple(s // c for s, c in zip(SHARD, INNER))
    start = 16 * math.prod(cps) + 4 * crc if loc == "start" else 0
    for key, raw in chunk_files(root).items():
        entries, _ = parse_shard(raw, cps, index_location=loc, crc=crc)
        assert is_compact_c_order(entries, start), key


@pytest.mark.parametrize("loc, crc, comp", PARTIAL, ids=PARTIAL_IDS)
def test_zarrdask_partial_writes_into_zarr_python_shards(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    model = _data(dtype, fill, seed=12)
    zp_create(tmp_path, _config(loc, crc, comp), dtype, fill)[...] = model
    a = zarrdask.open_array(str(tmp_path), mode="r+")
    _apply(model, _partial_writes(fill, dtype), lambda s, v: a.__setitem__(s, v))
    assert _stored_shards(tmp_path) == _expected_shards(model, fill)
    _check_compact(tmp_path, loc, crc)  # every shard was rewritten by zarrdask
    z = zp_open(tmp_path)
    _check_reads(lambda s: z[s], lambda s: z.oindex[s], model)


@pytest.mark.parametrize("loc, crc, comp", PARTIAL, ids=PARTIAL_IDS)
def test_zarr_python_partial_writes_into_zarrdask_shards(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    model = _data(dtype, fill, seed=13)
    zd_create(tmp_path, _config(loc, crc, comp), dtype, fill)[...] = model
    z = zp_open(tmp_path)
    _apply(model, _partial_writes(fill, dtype), lambda s, v: z.__setitem__(s, v))
    a = zarrdask.open_array(str(tmp_path), mode="r")
    _check_reads(lambda s: a[s], lambda s: a.oindex[s], model, negative=True)
    assert a.nchunks_initialized == count_nonfill_inner(model, INNER, fill)


@pytest.mark.parametrize("loc, crc, comp", PARTIAL, ids=PARTIAL_IDS)
def test_zarrdask_partial_writes_into_tensorstore_shards(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    model = _data(dtype, fill, seed=14)
    ts_create(tmp_path, [_config(loc, crc, comp)], dtype, fill).write(model).result()
    a = zarrdask.open_array(str(tmp_path), mode="r+")
    _apply(model, _partial_writes(fill, dtype), lambda s, v: a.__setitem__(s, v))
    assert _stored_shards(tmp_path) == _expected_shards(model, fill)
    assert_array_same(ts_open(tmp_path).read().result(), model)


@pytest.mark.parametrize("loc, crc, comp", PARTIAL, ids=PARTIAL_IDS)
def test_tensorstore_partial_writes_into_zarrdask_shards(tmp_path: Path, loc: str, crc: bool, comp: str) -> None:
    _, dtype, fill = COMPRESSORS[comp]
    model = _data(dtype, fill, seed=15)
    zd_create(tmp_path, _config(loc, crc, comp), dtype, fill)[...] = model
    t = ts_open(tmp_path)
    for sel, value in _partial_writes(fill, dtype):
        t[sel].write(value).result()
        model[sel] = value
    a = zarrdask.open_array(str(tmp_path), mode="r")
    _check_reads(lambda s: a[s], lambda s: a.oindex[s], model, negative=True)


# =================================================================================================
# I/O of partial reads of zarr-python's shards (Morton order)
# =================================================================================================
@pytest.mark.parametrize("loc", ["end", "start"])
def test_partial_read_of_a_zarr_python_shard_is_two_requests(tmp_path: Path, loc: str) -> None:
    _, dtype, fill = COMPRESSORS["zstd"]
    data = _data(dtype, fill, seed=16)
    zp_create(tmp_path, _config(loc, True, "zstd"), dtype, fill)[...] = data
    store = CountingStore(LocalStore(str(tmp_path)))
    a = zarrdask.open_array(store, mode="r")
    entries, _ = parse_shard((tmp_path / "c/0/1").read_bytes(), (2, 3), index_location=loc)
    for flat, sel in [(3, (slice(8, 16), slice(12, 16))), (5, (15, 23)), (1, (slice(0, 3), 17))]:
        store.reset()
        assert_array_same(a[sel], data[sel])
        assert store.counts["get_ranges_calls"] == 2 and store.counts["get_many_calls"] == 0
        assert store.counts["bytes_read"] == 2 * 3 * 16 + 4 + int(entries[flat, 1])


# =================================================================================================
# Other codec positions, 0-d
# =================================================================================================
def test_crc32c_after_sharding_zarr_python_both_ways(tmp_path: Path) -> None:
    """``[sharding_indexed, crc32c]``: the whole shard is checksummed (and so read whole)."""
    data = _data("uint16", 0, seed=17)
    codecs = [_config("end", True, "raw"), {"name": "crc32c"}]
    md = _metadata(codecs, "uint16", 0)
    for name in ("zp", "zd"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "zarr.json").write_text(json.dumps({**md, "attributes": {}}))
    zp_open(tmp_path / "zp")[...] = data
    zarrdask.open_array(str(tmp_path / "zd"), mode="r+")[...] = data
    assert chunk_files(tmp_path / "zd").keys() == chunk_files(tmp_path / "zp").keys()
    _check_reads(lambda s: zarrdask.open_array(str(tmp_path / "zp"), mode="r")[s], None, data)
    z = zp_open(tmp_path / "zd")
    _check_reads(lambda s: z[s], None, data)


def test_transpose_before_sharding_tensorstore_both_ways(tmp_path: Path) -> None:
    """``[transpose, sharding_indexed]``: the sharding codec sees the transposed
    shard, (12, 16), so its inner chunk shape is given in that order."""
    data = _data("uint16", 0, seed=18)
    codecs = [{"name": "transpose", "configuration": {"order": [1, 0]}}, sharding_config([4, 8])]
    ts_create(tmp_path / "ts", codecs, "uint16", 0).write(data).result()
    a = zarrdask.open_array(str(tmp_path / "ts"), mode="r")
    _check_reads(lambda s: a[s], lambda s: a.oindex[s], data, negative=True)
    md = _metadata(codecs, "uint16", 0)
    (tmp_path / "zd").mkdir()
    (tmp_path / "zd" / "zarr.json").write_text(json.dumps({**md, "attributes": {}}))
    zarrdask.open_array(str(tmp_path / "zd"), mode="r+")[...] = data
    assert_array_same(ts_open(tmp_path / "zd").read().result(), data)
    assert chunk_files(tmp_path / "zd") == chunk_files(tmp_path / "ts")


def test_0d_sharded_tensorstore_writes_zarrdask_reads(tmp_path: Path) -> None:
    ts_create(tmp_path, [sharding_config([])], "int32", 0, shape=(), shard=()).write(np.int32(42)).result()
    assert (tmp_path / "c").read_bytes() == build_shard([np.int32(42).tobytes()], cps=())
    a = zarrdask.open_array(str(tmp_path), mode="r")
    assert a[...] == 42


def test_0d_sharded_zarrdask_writes_tensorstore_reads(tmp_path: Path) -> None:
    a = zarrdask.create_array(str(tmp_path), shape=(), dtype="int32", chunks=(), shards=(), compressors=None)
    a[...] = 42
    assert (tmp_path / "c").read_bytes() == build_shard([np.int32(42).tobytes()], cps=())
    assert ts_open(tmp_path).read().result() == 42
