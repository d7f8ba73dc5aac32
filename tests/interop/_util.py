"""Helpers shared by the interoperability tests (not a test module).

Data generation per dtype, dtype-aware array comparison, and reading the files
of a store directory (chunk files and metadata documents) so that two
implementations' outputs can be compared file by file.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path
from typing import Any

import numpy as np

METADATA_NAMES = frozenset({".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"})


# -- data --------------------------------------------------------------------------
def make_data(dtype: Any, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Deterministic pseudo-random values of ``dtype`` covering the type's range,
    with NaN/inf sprinkled into floats and NaT into datetimes."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.fields is not None:
        out = np.zeros(shape, dtype)
        for i, name in enumerate(dtype.names):
            sub, _ = dtype.fields[name][:2]
            base = sub.base
            out[name] = make_data(base, shape + sub.shape, seed + 17 * (i + 1))
        return out
    kind = dtype.kind
    if kind == "b":
        vals = rng.integers(0, 2, n).astype(bool)
    elif kind in "iu":
        info = np.iinfo(dtype)
        vals = rng.integers(int(info.min), int(info.max), n, dtype=np.int64 if kind == "i" else np.uint64,
                            endpoint=True)
    elif kind == "f":
        vals = (rng.standard_normal(n) * 100).astype(dtype)
        _sprinkle_special(vals, rng)
    elif kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        re = (rng.standard_normal(n) * 100).astype(part)
        im = (rng.standard_normal(n) * 100).astype(part)
        _sprinkle_special(re, rng)
        vals = re + 1j * im
    elif kind in "mM":
        vals = rng.integers(-(2**62), 2**62, n, dtype=np.int64).view(dtype.newbyteorder("="))
        if n > 3:
            vals[rng.integers(0, n, 2)] = np.array("NaT", dtype=vals.dtype)
    elif kind == "S":
        alphabet = np.frombuffer((string.ascii_letters + string.digits).encode(), np.uint8)
        raw = rng.choice(alphabet, size=(n, dtype.itemsize)).astype(np.uint8)
        lengths = rng.integers(0, dtype.itemsize + 1, n)
        raw[np.arange(dtype.itemsize)[None, :] >= lengths[:, None]] = 0  # variable lengths
        vals = raw.view(f"S{dtype.itemsize}").reshape(n)
    elif kind == "U":
        chars = list(string.ascii_letters) + ["é", "ß", "中", "😀", "Ω"]
        width = dtype.itemsize // 4
        vals = np.array(
            ["".join(rng.choice(chars, size=int(rng.integers(0, width + 1)))) for _ in range(n)], dtype=f"U{width}"
        )
    else:  # pragma: no cover - a case the matrix doesn't use
        raise NotImplementedError(dtype)
    return np.asarray(vals).astype(dtype).reshape(shape)


def _sprinkle_special(vals: np.ndarray, rng: np.random.Generator) -> None:
    if vals.size >= 8:
        idx = rng.choice(vals.size, 3, replace=False)
        vals[idx[0]] = np.nan
        vals[idx[1]] = np.inf
        vals[idx[2]] = -np.inf


# -- comparison ----------------------------------------------------------------------
def assert_array_same(actual: Any, expected: Any, *, check_dtype: bool = True) -> None:
    """Equal shape and values; NaN equals NaN, NaT equals NaT, structured arrays
    compare as bytes (after the same dtype)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    if check_dtype:
        assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype.fields is not None or expected.dtype.kind == "V":
        assert actual.dtype.itemsize == expected.dtype.itemsize
        a = np.ascontiguousarray(actual).view(np.uint8)
        e = np.ascontiguousarray(expected).view(np.uint8)
        np.testing.assert_array_equal(a, e)
        return
    if expected.dtype.kind in "mM":
        np.testing.assert_array_equal(
            actual.astype(expected.dtype.newbyteorder("=")).view("i8"),
            expected.astype(expected.dtype.newbyteorder("=")).view("i8"),
        )
        return
    np.testing.assert_array_equal(actual, expected)


def assert_bits_equal(actual: Any, expected: Any) -> None:
    """Bit-exact equality (NaN payloads included), ignoring byte order."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape
    native = expected.dtype.newbyteorder("=")
    a = np.ascontiguousarray(actual.astype(native)).view(np.uint8)
    e = np.ascontiguousarray(expected.astype(native)).view(np.uint8)
    np.testing.assert_array_equal(a, e)


# -- files ---------------------------------------------------------------------------
def walk_files(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every file under ``root`` as ``{relative posix path: bytes}``."""
    root = Path(root)
    out: dict[str, bytes] = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def chunk_files(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """The chunk files under ``root`` (every file but metadata documents)."""
    return {k: v for k, v in walk_files(root).items() if k.rsplit("/", 1)[-1] not in METADATA_NAMES}


def read_json(path: str | os.PathLike[str]) -> Any:
    with open(path, "rb") as f:
        return json.loads(f.read())


def gzip_body(data: bytes) -> bytes:
    """A gzip member without its 10-byte header (MTIME, XFL and OS are
    implementation choices; the deflate stream, CRC32 and ISIZE are not).
    Only for headers without optional fields (FLG == 0)."""
    assert data[:3] == b"\x1f\x8b\x08", "not a gzip member"
    assert data[3] == 0, f"gzip header with optional fields (FLG={data[3]})"
    return data[10:]


# -- metadata normalisation ----------------------------------------------------------
def normalize_v3_codec(c: Any) -> dict[str, Any]:
    """``"name"`` ≡ ``{"name": name}`` ≡ ``{"name": name, "configuration": {}}``
    (the v3 spec makes ``configuration`` optional)."""
    if isinstance(c, str):
        return {"name": c, "configuration": {}}
    c = dict(c)
    c.setdefault("configuration", {})
    c["configuration"] = c["configuration"] or {}
    return c


def normalize_v3_array_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """Documented, accepted differences between writers of ``zarr.json``:

    - ``storage_transformers: []`` (zarr-python always writes it) ≡ absent;
    - ``attributes: {}`` ≡ absent;
    - a codec without ``configuration`` ≡ one with ``configuration: {}``;
    - ``chunk_key_encoding`` without a ``configuration`` takes the spec default
      separator (``/`` for ``default``, ``.`` for ``v2``), as tensorstore writes it;
    - ``dimension_names`` absent ≡ all ``null``;
    - blosc's ``typesize`` is ignored when ``shuffle`` is ``"noshuffle"`` (the
      spec requires it only for shuffling; tensorstore then omits it).
    """
    d = dict(doc)
    if d.get("storage_transformers") == []:
        del d["storage_transformers"]
    if d.get("attributes") == {}:
        del d["attributes"]
    d["codecs"] = [normalize_v3_codec(c) for c in d.get("codecs", [])]
    for c in d["codecs"]:
        if c["name"] == "blosc" and c["configuration"].get("shuffle") == "noshuffle":
            c["configuration"] = {k: v for k, v in c["configuration"].items() if k != "typesize"}
    cke = d.get("chunk_key_encoding")
    if isinstance(cke, dict):
        sep = (cke.get("configuration") or {}).get("separator", "/" if cke.get("name") == "default" else ".")
        d["chunk_key_encoding"] = {"name": cke.get("name"), "configuration": {"separator": sep}}
    if "dimension_names" in d and all(n is None for n in d["dimension_names"]):
        del d["dimension_names"]
    return d


def normalize_v2_array_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """Accepted differences in ``.zarray``: ``filters: []`` ≡ ``null``;
    ``dimension_separator`` absent ≡ ``"."`` (the v2 spec's default); a zstd
    compressor's ``"checksum": false`` ≡ absent (numcodecs' default; zarr-python
    3.1 drops the key when it is false, numcodecs' ``get_config`` writes it)."""
    d = dict(doc)
    if d.get("filters") == []:
        d["filters"] = None
    d.setdefault("dimension_separator", ".")
    comp = d.get("compressor")
    if isinstance(comp, dict) and comp.get("id") == "zstd" and comp.get("checksum") is False:
        d["compressor"] = {k: v for k, v in comp.items() if k != "checksum"}
    return d
