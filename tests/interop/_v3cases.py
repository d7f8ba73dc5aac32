"""The Zarr v3 interop matrix shared by the zarr-python and tensorstore tests.

A covering design, not a cartesian product:

- every numeric data type (bool, int8..int64, uint8..uint64, float16/32/64,
  complex64/128), each with a different codec pipeline, chunk key encoding and
  fill value, rotating so that every compressor (none, gzip, zstd with and
  without checksum, blosc lz4/zstd/blosclz with noshuffle/shuffle/bitshuffle),
  ``crc32c`` (alone and after a compressor), both ``bytes`` endiannesses, and
  each of the four chunk key encodings (``default``/``v2`` x ``/``/``.``) meet
  several data types;
- ``transpose`` on 3-d (two permutations) and 2-d data;
- edge chunks everywhere (shapes are not multiples of the chunk shape), plus a
  zero-size dimension and 1-d shapes;
- 0-d arrays with either chunk key encoding;
- ``dimension_names`` with and without ``null`` entries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._util import make_data

NUMERIC = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]


def bytes_codec(dtype: str, endian: str = "little") -> dict[str, Any]:
    """The ``bytes`` codec; no ``endian`` for 1-byte types (as zarr-python and
    the spec have it: it is optional there)."""
    if np.dtype(dtype).itemsize == 1:
        return {"name": "bytes"}
    return {"name": "bytes", "configuration": {"endian": endian}}


def gzip(level: int) -> dict[str, Any]:
    return {"name": "gzip", "configuration": {"level": level}}


def zstd(level: int, checksum: bool = False) -> dict[str, Any]:
    return {"name": "zstd", "configuration": {"level": level, "checksum": checksum}}


def blosc(cname: str, shuffle: str, typesize: int, clevel: int = 5) -> dict[str, Any]:
    return {"name": "blosc", "configuration": {"typesize": typesize, "cname": cname, "clevel": clevel,
                                               "shuffle": shuffle, "blocksize": 0}}


CRC32C = {"name": "crc32c"}


def transpose(order: list[int]) -> dict[str, Any]:
    return {"name": "transpose", "configuration": {"order": list(order)}}


def cke(name: str, sep: str) -> dict[str, Any]:
    return {"name": name, "separator": sep}


@dataclass
class V3Case:
    id: str
    dtype: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    serializer: dict[str, Any]
    compressors: list[dict[str, Any]] = field(default_factory=list)
    filters: list[dict[str, Any]] = field(default_factory=list)
    chunk_key_encoding: dict[str, str] = field(default_factory=lambda: cke("default", "/"))
    fill_value: Any = 0
    dimension_names: list[str | None] | None = None

    @property
    def codecs(self) -> list[dict[str, Any]]:
        return [*self.filters, self.serializer, *self.compressors]

    def data(self, seed: int = 0) -> np.ndarray:
        return make_data(self.dtype, self.shape, seed)

    @property
    def has_gzip(self) -> bool:
        return any(c["name"] == "gzip" for c in self.compressors)

    def aligned(self) -> "V3Case":
        """Same case with a whole number of chunks (edge chunks' padding bytes
        are not specified, so they are left out of byte comparisons)."""
        shape = tuple(c * (2 if i == 0 else 1) for i, c in enumerate(self.chunks)) if self.chunks else ()
        return V3Case(**{**self.__dict__, "shape": shape})

    def metadata(self) -> dict[str, Any]:
        """The ``zarr.json`` document, as the v3 spec has it."""
        doc: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(self.shape),
            "data_type": self.dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(self.chunks)}},
            "chunk_key_encoding": {"name": self.chunk_key_encoding["name"],
                                   "configuration": {"separator": self.chunk_key_encoding["separator"]}},
            "fill_value": fill_json(self.fill_value, self.dtype),
            "codecs": self.codecs,
        }
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        return doc


def _float_json(x: float, dtype: np.dtype) -> Any:
    if math.isnan(x):
        bits = np.array(x, dtype).view(f"u{dtype.itemsize}")[()]
        canonical = np.array(np.nan, dtype).view(f"u{dtype.itemsize}")[()]
        if bits != canonical:
            return "0x" + format(int(bits), f"0{2 * dtype.itemsize}x")
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(x)


def fill_json(value: Any, dtype: str) -> Any:
    """A fill value in the v3 spec's JSON encoding."""
    dt = np.dtype(dtype)
    v = np.asarray(value, dtype=dt)[()]
    if dt.kind == "b":
        return bool(v)
    if dt.kind in "iu":
        return int(v)
    if dt.kind == "f":
        return _float_json(v, dt)
    if dt.kind == "c":
        part = np.dtype(f"f{dt.itemsize // 2}")
        return [_float_json(part.type(v.real), part), _float_json(part.type(v.imag), part)]
    raise NotImplementedError(dtype)


# rotating pipelines for the data type sweep: (compressors, endian)
_COMPRESSORS: list[tuple[str, Any]] = [
    ("none", lambda ts: []),
    ("gzip1", lambda ts: [gzip(1)]),
    ("zstd0", lambda ts: [zstd(0)]),
    ("zstd3-checksum", lambda ts: [zstd(3, True)]),
    ("blosc-lz4-shuffle", lambda ts: [blosc("lz4", "shuffle", ts)]),
    ("blosc-zstd-bitshuffle", lambda ts: [blosc("zstd", "bitshuffle", ts, clevel=3)]),
    ("blosc-blosclz-noshuffle", lambda ts: [blosc("blosclz", "noshuffle", ts)]),
    ("crc32c", lambda ts: [CRC32C]),
    ("gzip6+crc32c", lambda ts: [gzip(6), CRC32C]),
    ("zstd1+crc32c", lambda ts: [zstd(1), CRC32C]),
    ("blosc-zstd-shuffle+crc32c", lambda ts: [blosc("zstd", "shuffle", ts, clevel=1), CRC32C]),
]
_CKES = [cke("default", "/"), cke("default", "."), cke("v2", "."), cke("v2", "/")]
_FILLS = {
    "bool": True, "int8": -128, "int16": 7, "int32": -1, "int64": 2**62, "uint8": 255, "uint16": 1,
    "uint32": 2**32 - 1, "uint64": 2**64 - 1, "float16": np.inf, "float32": np.nan, "float64": -np.inf,
    "complex64": complex(np.nan, np.inf), "complex128": 1.5 - 2j,
}

CASES: list[V3Case] = []
for _i, _dt in enumerate(NUMERIC):
    _name, _make = _COMPRESSORS[_i % len(_COMPRESSORS)]
    _endian = "big" if _i % 2 else "little"
    _cke = _CKES[_i % 4]
    _ts = np.dtype(_dt).itemsize
    CASES.append(V3Case(
        id=f"{_dt}-{_endian}-{_name}-{_cke['name']}{_cke['separator']}",
        dtype=_dt, shape=(7, 5), chunks=(3, 2), serializer=bytes_codec(_dt, _endian),
        compressors=_make(_ts), chunk_key_encoding=_cke, fill_value=_FILLS[_dt],
    ))
# the rest of the compressor rotation, on other types, so every pipeline meets >= 2 data types
for _j, (_name, _make) in enumerate(_COMPRESSORS):
    _dt = ["float32", "int16", "uint64", "complex128", "float64", "int32", "uint16", "int8", "float16", "uint32",
           "bool"][_j]
    _endian = "little" if _j % 2 else "big"
    _cke = _CKES[(_j + 1) % 4]
    CASES.append(V3Case(
        id=f"{_name}-{_dt}-{_endian}-{_cke['name']}{_cke['separator']}-1d",
        dtype=_dt, shape=(23,), chunks=(5,), serializer=bytes_codec(_dt, _endian),
        compressors=_make(np.dtype(_dt).itemsize), chunk_key_encoding=_cke, fill_value=_FILLS[_dt],
    ))
CASES += [
    V3Case("transpose-201-f8-big-3d", "float64", (5, 6, 7), (2, 3, 4), bytes_codec("float64", "big"),
           [blosc("lz4", "shuffle", 8)], [transpose([2, 0, 1])], cke("default", "/"), np.nan,
           ["z", "y", "x"]),
    V3Case("transpose-120-i2-little-3d", "int16", (4, 5, 3), (3, 2, 2), bytes_codec("int16", "little"),
           [zstd(0), CRC32C], [transpose([1, 2, 0])], cke("v2", "."), -5),
    V3Case("transpose-10-c8-big-2d", "complex64", (6, 5), (4, 4), bytes_codec("complex64", "big"),
           [gzip(5)], [transpose([1, 0])], cke("default", "."), 2 + 3j, ["row", None]),
    V3Case("transpose-021-u1-3d-nocomp", "uint8", (3, 4, 5), (2, 2, 3), bytes_codec("uint8"),
           [], [transpose([0, 2, 1])], cke("v2", "/"), 9, [None, None, None]),
    V3Case("zero-d-f8", "float64", (), (), bytes_codec("float64", "little"), [zstd(0)], fill_value=np.nan),
    V3Case("zero-d-i4-v2cke-big", "int32", (), (), bytes_codec("int32", "big"), [gzip(1)],
           chunk_key_encoding=cke("v2", "."), fill_value=-3),
    V3Case("zero-d-c16-crc32c", "complex128", (), (), bytes_codec("complex128", "little"), [CRC32C],
           fill_value=1j, dimension_names=[]),
    V3Case("dimnames-i4", "int32", (6, 4), (4, 3), bytes_codec("int32"), [zstd(0)],
           dimension_names=["time", "space"]),
    V3Case("dimnames-partial-f4", "float32", (5, 5, 2), (2, 5, 1), bytes_codec("float32", "big"), [CRC32C],
           chunk_key_encoding=cke("default", "."), fill_value=0.5, dimension_names=["t", None, "c"]),
    V3Case("chunks-bigger-than-shape", "int16", (3, 2), (5, 8), bytes_codec("int16", "big"), [zstd(2)],
           chunk_key_encoding=cke("v2", "/"), fill_value=-1),
    V3Case("transpose-5d", "float32", (2, 3, 1, 2, 3), (1, 2, 1, 2, 2), bytes_codec("float32", "big"),
           [blosc("zstd", "bitshuffle", 4), CRC32C], [transpose([4, 3, 2, 1, 0])], cke("default", "."), np.inf,
           ["a", "b", "c", "d", "e"]),
    V3Case("zero-size-dim", "float32", (0, 4), (2, 2), bytes_codec("float32"), [zstd(0)], fill_value=1.0),
]

_seen = {c.id for c in CASES}
assert len(_seen) == len(CASES), "duplicate case ids"
