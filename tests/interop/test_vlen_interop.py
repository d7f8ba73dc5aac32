"""Variable-length strings and bytes with zarr-python 3, both directions, v2 and v3.

- zarr-python writes, zarrdask reads (and writes into it, and zarr-python reads that);
- zarrdask writes, zarr-python reads;
- the metadata documents are the ones zarr-python writes for the same array
  (one documented difference: v3 ``bytes`` is written under its registered
  name ``"bytes"``, zarr-python 3.1 writes ``"variable_length_bytes"``);
- uncompressed chunk and shard files are byte-identical.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

import zarrdask  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::RuntimeWarning")

T = np.dtypes.StringDType()
WORDS = ["", "a", "bé", "中文", "😀", "x" * 5000, "\x00", "tab\t"]
BLOBS = [b"", b"a", b"\x00\xff", "bé".encode(), b"x" * 5000, b"\x00"]


def _values(kind: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pool = WORDS if kind == "string" else BLOBS
    out = np.empty(shape, dtype=object)
    flat = out.reshape(-1)
    for i in range(flat.size):
        flat[i] = pool[int(rng.integers(0, len(pool)))]
    return out.astype(T) if kind == "string" else out


def _zp_dtype(kind: str) -> Any:
    return str if kind == "string" else zarr.dtype.VariableLengthBytes()


def _zd_dtype(kind: str) -> Any:
    return str if kind == "string" else bytes


def _same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    assert got.tolist() == expected.tolist()


def _zp_create(path: Path, kind: str, fmt: int, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.create_array(str(path), dtype=_zp_dtype(kind), zarr_format=fmt, **kw)


CASES = [
    pytest.param(2, {"shape": (9, 7), "chunks": (4, 3)}, id="v2"),
    pytest.param(2, {"shape": (9, 7), "chunks": (4, 3), "order": "F"}, id="v2-F"),
    pytest.param(2, {"shape": (9, 7), "chunks": (4, 3), "compressors": None}, id="v2-raw"),
    pytest.param(3, {"shape": (9, 7), "chunks": (4, 3)}, id="v3"),
    pytest.param(3, {"shape": (9, 7), "chunks": (4, 3), "compressors": None}, id="v3-raw"),
    pytest.param(3, {"shape": (9, 7), "chunks": (2, 3), "shards": (4, 6)}, id="v3-sharded"),
    pytest.param(3, {"shape": (0,), "chunks": (5,)}, id="v3-empty"),
    pytest.param(2, {"shape": (0,), "chunks": (5,)}, id="v2-empty"),
]
KINDS = ["string", "bytes"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt, kw", CASES)
def test_zarr_python_writes_zarrdask_reads(tmp_path, kind, fmt, kw):
    data = _values(kind, kw["shape"])
    z = _zp_create(tmp_path / "a", kind, fmt, **kw)
    if data.size:
        z[...] = data
    a = zarrdask.open_array(tmp_path / "a", mode="r")
    assert a.dtype == (T if kind == "string" else np.dtype(object))
    _same(a[...], data)
    if data.ndim == 2:
        _same(a[1:8:3, 2:], data[1:8:3, 2:])
        _same(a.oindex[[8, 0], [6, 1, 3]], data[np.ix_([8, 0], [6, 1, 3])])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt, kw", CASES)
def test_zarrdask_writes_zarr_python_reads(tmp_path, kind, fmt, kw):
    data = _values(kind, kw["shape"], seed=1)
    a = zarrdask.create_array(tmp_path / "a", dtype=_zd_dtype(kind), zarr_format=fmt, **kw)
    if data.size:
        a[...] = data
    z = zarr.open_array(str(tmp_path / "a"), mode="r")
    _same(z[...], data)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt, kw", [c for c in CASES if "empty" not in c.id])
def test_partial_writes_both_ways(tmp_path, kind, fmt, kw):
    """Each side writes parts (leaving missing chunks) into an array the other made."""
    fill = "" if kind == "string" else b""
    expected = np.empty(kw["shape"], dtype=object)
    expected[...] = fill
    z = _zp_create(tmp_path / "a", kind, fmt, **kw)
    part = _values(kind, (3, 4), seed=2)
    z[1:4, 2:6] = part
    expected[1:4, 2:6] = part
    a = zarrdask.open_array(tmp_path / "a")
    _same(a[...], expected.astype(a.dtype))
    part = _values(kind, (2, 5), seed=3)
    a[3:5, 1:6] = part  # read-modify-write of chunks zarr-python wrote
    expected[3:5, 1:6] = part
    a[8, 6] = WORDS[5] if kind == "string" else BLOBS[4]
    expected[8, 6] = a[8, 6]
    z = zarr.open_array(str(tmp_path / "a"), mode="r+")
    _same(z[...], expected.astype(a.dtype))
    one = np.empty((1, 1), dtype=object)
    one[0, 0] = "zp" if kind == "string" else b"zp"
    z[0:1, 0:1] = one  # (zarr-python 3.1.6 cannot assign a scalar to one element of a bytes array)
    expected[0, 0] = one[0, 0]
    _same(zarrdask.open_array(tmp_path / "a", mode="r")[...], expected.astype(a.dtype))


def _doc(path: Path, fmt: int) -> dict:
    doc = json.loads((path / (".zarray" if fmt == 2 else "zarr.json")).read_text())
    doc.pop("storage_transformers", None)  # zarr-python writes [], zarrdask leaves the default out
    return doc


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt, kw", CASES)
def test_metadata_is_what_zarr_python_writes(tmp_path, kind, fmt, kw):
    _zp_create(tmp_path / "zp", kind, fmt, **kw)
    # v2: zarrdask's default fill value (None) stays null like every v2 type; zarr-python's
    # default is "", so it is passed explicitly here (fill_value=None: both write null)
    fill = {"fill_value": "" if kind == "string" else b""} if fmt == 2 else {}
    zarrdask.create_array(tmp_path / "zd", dtype=_zd_dtype(kind), zarr_format=fmt, **fill, **kw)
    zp, zd = _doc(tmp_path / "zp", fmt), _doc(tmp_path / "zd", fmt)
    if fmt == 3 and kind == "bytes":
        assert zp["data_type"] == "variable_length_bytes" and zd["data_type"] == "bytes"
        zd["data_type"] = zp["data_type"]
    assert zd == zp


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt, kw", [c for c in CASES if c.values[1].get("compressors", "x") is None]
                         + [pytest.param(3, {"shape": (9, 7), "chunks": (2, 3), "shards": (4, 6),
                                             "compressors": None}, id="v3-sharded-raw")])
def test_chunk_files_are_byte_identical(tmp_path, kind, fmt, kw):
    data = _values(kind, kw["shape"], seed=4)
    z = _zp_create(tmp_path / "zp", kind, fmt, **kw)
    z[...] = data
    a = zarrdask.create_array(tmp_path / "zd", dtype=_zd_dtype(kind), zarr_format=fmt, **kw)
    a[...] = data
    names = sorted(p.relative_to(tmp_path / "zp") for p in (tmp_path / "zp").rglob("*")
                   if p.is_file() and p.name not in (".zarray", ".zattrs", "zarr.json"))
    assert names and names == sorted(p.relative_to(tmp_path / "zd") for p in (tmp_path / "zd").rglob("*")
                                     if p.is_file() and p.name not in (".zarray", ".zattrs", "zarr.json"))
    for name in names:
        zp, zd = (tmp_path / "zp" / name).read_bytes(), (tmp_path / "zd" / name).read_bytes()
        if "shards" in kw:  # zarr-python lays inner chunks out in Morton order, zarrdask in C order
            assert _inner_chunks(zp) == _inner_chunks(zd), name
        else:
            assert zp == zd, name


def _inner_chunks(shard: bytes, n: int = 4) -> list[bytes | None]:
    """Each inner chunk's bytes, by the (end-located, crc32c-checked) index of ``n`` entries."""
    index = np.frombuffer(shard[-(16 * n + 4) : -4], "<u8").reshape(n, 2)
    return [None if off == 2**64 - 1 else shard[int(off) : int(off + size)] for off, size in index]


@pytest.mark.parametrize("kind", KINDS)
def test_v2_null_fill_value_as_zarr_python_writes_it(tmp_path, kind):
    _zp_create(tmp_path / "zp", kind, 2, shape=(3,), chunks=(2,), fill_value=None)
    zarrdask.create_array(tmp_path / "zd", shape=(3,), chunks=(2,), dtype=_zd_dtype(kind), zarr_format=2)
    assert _doc(tmp_path / "zp", 2) == _doc(tmp_path / "zd", 2)
    fill = "" if kind == "string" else b""
    assert zarrdask.open_array(tmp_path / "zp", mode="r")[...].tolist() == [fill] * 3
    assert zarrdask.open_array(tmp_path / "zd", mode="r").fill_value is None  # null, reads as ""/b""


def test_zarr_python_reads_the_registered_bytes_name_and_we_read_its_older_name(tmp_path):
    z = _zp_create(tmp_path / "zp", "bytes", 3, shape=(3,), chunks=(2,), fill_value=b"\x01\x02")
    z[:2] = [b"a", b""]
    a = zarrdask.open_array(tmp_path / "zp", mode="r")
    assert a.fill_value == b"\x01\x02" and a[...].tolist() == [b"a", b"", b"\x01\x02"]
    zarrdask.create_array(tmp_path / "zd", shape=(3,), chunks=(2,), dtype=bytes, fill_value=b"\x01\x02",
                          data=np.array([b"a", b"", b"\x01\x02"], dtype=object))
    z = zarr.open_array(str(tmp_path / "zd"), mode="r")
    assert z.fill_value == b"\x01\x02" and z[...].tolist() == [b"a", b"", b"\x01\x02"]


@pytest.mark.parametrize("fmt", [2, 3])
def test_custom_string_fill_values_both_ways(tmp_path, fmt):
    z = _zp_create(tmp_path / "zp", "string", fmt, shape=(5,), chunks=(2,), fill_value="missing")
    z[1] = "é"
    assert zarrdask.open_array(tmp_path / "zp", mode="r")[...].tolist() == ["missing", "é"] + ["missing"] * 3
    a = zarrdask.create_array(tmp_path / "zd", shape=(5,), chunks=(2,), dtype=str, fill_value="missing",
                              zarr_format=fmt)
    a[1] = "é"
    assert zarr.open_array(str(tmp_path / "zd"), mode="r")[...].tolist() == ["missing", "é"] + ["missing"] * 3


def test_zarr_python_2_legacy_documents(tmp_path):
    """zarr-python 2 wrote ``fill_value: 0`` (or null) for object arrays; both read as ""."""
    z = _zp_create(tmp_path / "a", "string", 2, shape=(4,), chunks=(2,))
    z[:2] = ["a", "b"]
    for fill in (0, None):
        doc = json.loads((tmp_path / "a" / ".zarray").read_text())
        doc["fill_value"] = fill
        (tmp_path / "a" / ".zarray").write_text(json.dumps(doc))
        a = zarrdask.open_array(tmp_path / "a", mode="r")
        assert a[...].tolist() == ["a", "b", "", ""]
