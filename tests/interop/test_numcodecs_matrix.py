"""Every codec numcodecs ships, in stores written by zarr-python 3 and read by
zarrdask, and the other way round.

The codecs are numcodecs' registry at test time
(:func:`zarrdask.codecs.numcodecs_registry.numcodecs_ids`), not a list typed
here; :data:`CASES` gives each id configurations and data types, and an id
without an entry fails :func:`test_every_numcodecs_codec_has_cases`, so a new
numcodecs codec gets covered.

- **Zarr v2**: the codec as a filter, as the compressor or as the object codec
  of a ``|O`` array, as fits it. zarr-python 3 writes the array; zarrdask's read
  must equal zarr-python's own read bit for bit (lossy codecs included). Then
  zarrdask writes the same array: the ``.zarray`` codecs and the chunk files
  must be zarr-python's, and zarr-python reads them equal.
- **Zarr v3**: every codec zarr-python offers a ``numcodecs.<id>`` wrapper for
  (found in ``zarr.codecs.numcodecs``, its kind from the wrapper's base class),
  plain and sharded, in the same two directions with ``zarr.json`` codecs and
  chunk bytes compared; plus runs of numcodecs codecs only, where zarrdask
  finds the array → bytes codec by its probe.

What zarr-python 3.1 cannot do, and what is compared instead:

- v2 ``|O`` arrays with ``json2``, ``msgpack2``, ``pickle``, ``vlen-array`` or
  ``categorize`` as the object codec: zarr-python 3 has no data type for them
  (it neither writes nor opens them; it writes ``pickle`` with ``dtype=str``
  but cannot open the result). The store is written as zarr-python 2 wrote it
  (``.zarray`` + chunks encoded by numcodecs), and zarrdask's read must equal
  numcodecs' decoding; zarrdask's own writes must give those chunk bytes.
- v3 ``base64``, ``categorize``, ``json2``, ``msgpack2``, ``pickle``,
  ``vlen-*``: zarr-python has no ``numcodecs.<id>`` wrapper for them. zarrdask
  writes and reads them (:func:`test_v3_codecs_zarr_python_lacks`).
- ``numcodecs.gzip`` / v2 ``gzip``: the gzip header holds the time of writing,
  so those chunks are compared without it.
- with numcodecs < 0.16, zarr-python cannot read v2 ``pcodec`` arrays (it hands
  the codec an array, which numcodecs' pcodec then refused); numcodecs'
  decoding is the reference there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
try:
    zn = pytest.importorskip("zarr.codecs.numcodecs")
except pytest.skip.Exception:  # zarr < 3.1.3: the wrappers live in numcodecs
    zn = pytest.importorskip("numcodecs.zarr3")

import zarrdask  # noqa: E402
from zarrdask.codecs.numcodecs_registry import numcodecs_ids  # noqa: E402

from .._sharding_util import parse_shard  # noqa: E402
from ._util import chunk_files, gzip_body, normalize_v2_array_doc, read_json  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning", "ignore::FutureWarning", "ignore::RuntimeWarning", "ignore::DeprecationWarning"
)

IDS = numcodecs_ids()
SHAPE, CHUNKS = (6, 10), (3, 5)
OBJ_SHAPE, OBJ_CHUNKS = (8,), (4,)


# -- data ------------------------------------------------------------------------------
def _objects(items: list[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def make_data(kind: str) -> np.ndarray:
    """Deterministic data of a kind: a numpy dtype string, or an object flavour."""
    if kind == "O-str":
        return _objects(["a", "bb", "", "ccc", "é中", "dd", "a", "x"])
    if kind == "O-bytes":
        return _objects([b"a", b"", b"xyz", b"\x00\xff", b"q", b"rr", b"s", b"t"])
    if kind == "O-mixed":
        return _objects(["a", 1, None, [1, 2], {"k": "v"}, 2.5, "", True])
    if kind == "O-arrays":
        return _objects([np.arange(i, dtype="<i4") - 3 for i in range(8)])
    n = SHAPE[0] * SHAPE[1]
    dtype = np.dtype(kind)
    if dtype.kind == "b":
        return (np.arange(n) * 7 % 3 == 0).reshape(SHAPE)
    if dtype.kind in "iu":
        return (np.arange(n) * 37 % 251).astype(dtype).reshape(SHAPE)
    if dtype.kind == "U":
        return np.array(["a", "bb", "ccc", "bb", "zz"] * (n // 5), dtype=dtype).reshape(SHAPE)
    x = np.linspace(-40.0, 60.0, n)
    return (x + 3 * np.sin(x)).astype(dtype).reshape(SHAPE)


def fill_for(kind: str) -> Any:
    if kind.startswith("O-"):
        return None
    return {"b": False, "U": ""}.get(np.dtype(kind).kind, 0)


# -- the table: configurations per numcodecs id ---------------------------------------------
@dataclass(frozen=True)
class Case:
    config: dict[str, Any]
    kind: str  # data: a dtype, or an object flavour ("O-str", ...)
    v2_role: str  # "filter", "compressor" or "object" (the first filter of a |O array)
    #: what zarr-python 3 does with this v2 array: "rw" write and open, "w" only
    #: write (the reference read is then numcodecs' decoding), "" neither (the
    #: store is written as zarr-python 2 wrote it)
    zarr_python: str = "rw"

    def __str__(self) -> str:
        return f"{self.v2_role}-{self.kind}-{json.dumps(self.config, sort_keys=True)}"


# zarr-python 3 has no data type for a |O array with this object codec: it neither writes nor opens
# it (pickle: it writes one with dtype=str, but cannot open it)
NO_ZP_OBJECT = ""


def _pcodec_takes_arrays() -> bool:
    """zarr-python hands a v2 compressor's decode a uint8 array; numcodecs < 0.16's
    pcodec takes bytes only, so zarr-python then cannot read v2 pcodec arrays."""
    if "pcodec" not in numcodecs_ids():
        return True
    codec = numcodecs.get_codec({"id": "pcodec"})
    try:
        codec.decode(np.frombuffer(codec.encode(np.arange(4.0)), np.uint8))
    except TypeError:
        return False
    return True


PCODEC_V2 = "rw" if _pcodec_takes_arrays() else "w"
# configurations per id; an id numcodecs has but this table lacks fails the test below
CASES: dict[str, list[Case]] = {
    "adler32": [Case({}, "<i4", "compressor")],
    "astype": [Case({"encode_dtype": "<f4", "decode_dtype": "<f8"}, "<f8", "filter")],
    "base64": [Case({}, "<i4", "compressor")],
    "bitround": [Case({"keepbits": 10}, "<f4", "filter"), Case({"keepbits": 6}, "<f8", "filter")],
    "blosc": [
        Case({"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}, "<i4", "compressor"),
        Case({"cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0}, "<f8", "compressor"),
    ],
    "bz2": [Case({"level": 5}, "<i4", "compressor")],
    "categorize": [
        Case({"labels": ["a", "bb", "ccc"], "dtype": "<U3", "astype": "|u1"}, "<U3", "filter"),
        Case({"labels": ["a", "bb", "ccc"], "dtype": "|O", "astype": "|u1"}, "O-str", "object", NO_ZP_OBJECT),
    ],
    "crc32": [Case({}, "<i4", "compressor")],
    "crc32c": [Case({}, "<i4", "compressor")],
    "delta": [Case({"dtype": "<i4"}, "<i4", "filter"), Case({"dtype": "<f8", "astype": "<f4"}, "<f8", "filter")],
    "fixedscaleoffset": [Case({"offset": 5, "scale": 10, "dtype": "<f8", "astype": "<i2"}, "<f8", "filter")],
    "fletcher32": [Case({}, "<i4", "compressor")],
    "gzip": [Case({"level": 5}, "<i4", "compressor")],
    "jenkins_lookup3": [Case({}, "<i4", "compressor")],
    # zarr-python 3 writes json2 as a compressor, but cannot open it: it takes json2 for an object codec
    "json2": [Case({}, "O-mixed", "object", NO_ZP_OBJECT), Case({}, "<i4", "compressor", "w")],
    "lz4": [Case({"acceleration": 1}, "<i4", "compressor")],
    "lzma": [Case({}, "<f8", "compressor")],
    "msgpack2": [Case({}, "O-mixed", "object", NO_ZP_OBJECT)],
    "packbits": [Case({}, "|b1", "filter")],
    "pcodec": [Case({"level": 3}, "<f8", "compressor", PCODEC_V2), Case({"level": 8}, "<i4", "compressor", PCODEC_V2)],
    "pickle": [Case({}, "O-mixed", "object", NO_ZP_OBJECT)],
    "quantize": [Case({"digits": 2, "dtype": "<f8"}, "<f8", "filter")],
    "shuffle": [Case({"elementsize": 4}, "<i4", "filter"), Case({"elementsize": 8}, "<f8", "compressor")],
    "vlen-array": [Case({"dtype": "<i4"}, "O-arrays", "object", NO_ZP_OBJECT)],
    "vlen-bytes": [Case({}, "O-bytes", "object")],
    "vlen-utf8": [Case({}, "O-str", "object")],
    "zfpy": [
        Case({"mode": 4, "tolerance": 0.01}, "<f8", "compressor"),
        Case({"mode": 3, "precision": 14}, "<f4", "compressor"),
        Case({"mode": 2, "rate": 12}, "<i4", "compressor"),
    ],
    "zlib": [Case({"level": 3}, "<i4", "compressor")],
    "zstd": [Case({"level": 3}, "<f8", "compressor")],
}


def _ships_with_numcodecs(codec_id: str) -> bool:
    """Whether numcodecs itself provides the codec (other packages register theirs
    through the same entry points: kerchunk's FITSAscii, grib, ...)."""
    cls = numcodecs.registry.codec_registry.get(codec_id)
    if cls is not None:
        return cls.__module__.split(".")[0] == "numcodecs"
    entry = getattr(numcodecs.registry, "entries", {}).get(codec_id)
    return entry is None or entry.value.split(".")[0].split(":")[0] == "numcodecs"


def test_every_numcodecs_codec_has_cases():
    missing = sorted({i for i in IDS if _ships_with_numcodecs(i)} - set(CASES))
    assert not missing, f"numcodecs {numcodecs.__version__} has codecs without cases here: {missing}; add them to CASES"


@pytest.fixture(autouse=True)
def _allow_pickle(monkeypatch):
    """Reading ``pickle`` needs numcodecs' opt-in (numcodecs >= 0.16.6)."""
    if hasattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE"):
        monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True)


# -- comparison -------------------------------------------------------------------------
def assert_same(actual: Any, expected: Any) -> None:
    """Equal shape and values; numbers bit for bit (NaN payloads too), objects item by item."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype.hasobject or actual.dtype.hasobject:
        for a, e in zip(actual.reshape(-1), expected.reshape(-1)):
            if isinstance(e, np.ndarray):
                np.testing.assert_array_equal(a, e)
                assert np.asarray(a).dtype == e.dtype
            else:
                assert type(a) is type(e) and a == e, (a, e)
        return
    if expected.dtype.kind in "TU":
        np.testing.assert_array_equal(actual.astype(str), expected.astype(str))
        return
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_array_equal(np.ascontiguousarray(actual).view(np.uint8), np.ascontiguousarray(expected).view(np.uint8))


def _chunk_bytes(root: Path, gzip: bool, sharded: bool = False) -> dict[str, Any]:
    """The stored chunks; for shards their inner chunks (zarr-python lays them out
    in Morton order, zarrdask in C order: both valid), gzip ones without the header."""
    body = gzip_body if gzip else bytes
    files = chunk_files(root)
    if not sharded:
        return {k: body(v) for k, v in files.items()}
    cps = tuple(s // c for s, c in zip(SHAPE, CHUNKS))
    return {k: [None if p is None else body(p) for p in parse_shard(v, cps)[1]] for k, v in files.items()}


# -- Zarr v2 ------------------------------------------------------------------------------
@dataclass(frozen=True)
class V2Array:
    """A v2 array's codecs (numcodecs configurations) and data."""

    filters: tuple[dict[str, Any], ...]
    compressor: dict[str, Any] | None
    kind: str
    order: str = "C"
    zarr_python: str = "rw"  # as Case.zarr_python

    @classmethod
    def of(cls, codec_id: str, case: Case) -> "V2Array":
        config = {"id": codec_id, **case.config}
        if case.v2_role == "compressor":
            return cls((), config, case.kind, zarr_python=case.zarr_python)
        return cls((config,), None, case.kind, zarr_python=case.zarr_python)

    def codecs(self) -> tuple[list[Any], Any]:
        compressor = numcodecs.get_codec(self.compressor) if self.compressor else None
        return [numcodecs.get_codec(f) for f in self.filters], compressor

    @property
    def gzip(self) -> bool:
        return (self.compressor or {}).get("id") == "gzip"


V2_PARAMS = [pytest.param(V2Array.of(i, c), id=f"{i}-{c}") for i in IDS for c in CASES.get(i, [])]
# filters and compressors together: each gets what the one before returns (blosc's
# type size from a filter's output, zfpy's header from a filter's shape), F order
V2_RUNS = [
    V2Array(({"id": "fixedscaleoffset", "offset": 5, "scale": 10, "dtype": "<f8", "astype": "<i2"},),
            {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}, "<f8"),
    V2Array(({"id": "quantize", "digits": 2, "dtype": "<f8"},), {"id": "zfpy", "mode": 4, "tolerance": 0.01}, "<f8"),
    V2Array(({"id": "delta", "dtype": "<f8"},), {"id": "zfpy", "mode": 4, "tolerance": 0.01}, "<f8"),
    V2Array(({"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"},), {"id": "pcodec", "level": 3}, "<f8",
            zarr_python=PCODEC_V2),
    V2Array(({"id": "delta", "dtype": "<i4"}, {"id": "shuffle", "elementsize": 4}),
            {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0}, "<i4", order="F"),
    V2Array(({"id": "bitround", "keepbits": 8},), {"id": "zstd", "level": 1}, "<f4", order="F"),
]
V2_PARAMS += [
    pytest.param(a, id="+".join([f["id"] for f in a.filters] + [a.compressor["id"]]) + f"-{a.order}")
    for a in V2_RUNS
    if all(c["id"] in IDS for c in (*a.filters, a.compressor))
]


def _v2_dtype(kind: str) -> Any:
    if kind == "O-str":
        return str
    if kind == "O-bytes":
        return zarr.dtype.VariableLengthBytes()
    return kind


def _shape_chunks(kind: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (OBJ_SHAPE, OBJ_CHUNKS) if kind.startswith("O-") else (SHAPE, CHUNKS)


def _chunk_slices(shape: tuple[int, ...], chunks: tuple[int, ...]) -> Any:
    """(v2 chunk key, region) of every chunk (the shapes here are whole multiples of the chunks)."""
    for index in np.ndindex(*(s // c for s, c in zip(shape, chunks))):
        yield ".".join(map(str, index)), tuple(slice(i * c, (i + 1) * c) for i, c in zip(index, chunks))


def _write_v2_like_zarr_python_2(root: Path, data: np.ndarray, filters: list[Any], compressor: Any) -> None:
    """A ``|O`` array as zarr-python 2 wrote it: ``.zarray``, chunks numcodecs encoded."""
    root.mkdir(parents=True)
    meta = {
        "zarr_format": 2, "shape": list(data.shape), "chunks": list(OBJ_CHUNKS), "dtype": "|O",
        "compressor": compressor.get_config() if compressor else None, "fill_value": None,
        "filters": [f.get_config() for f in filters], "order": "C", "dimension_separator": ".",
    }
    (root / ".zarray").write_text(json.dumps(meta))
    for key, region in _chunk_slices(data.shape, OBJ_CHUNKS):
        encoded: Any = data[region]
        for f in filters:
            encoded = f.encode(encoded)
        if compressor:
            encoded = compressor.encode(encoded)
        (root / key).write_bytes(bytes(encoded))


def _reference_read_v2(root: Path, filters: list[Any], compressor: Any, kind: str) -> np.ndarray:
    """The array as numcodecs decodes its chunks (the v2 spec's procedure, C order)."""
    shape, chunks = _shape_chunks(kind)
    out = np.empty(shape, dtype=object if kind.startswith("O-") else np.dtype(kind))
    for key, region in _chunk_slices(shape, chunks):
        decoded: Any = (root / key).read_bytes()
        if compressor:
            decoded = compressor.decode(decoded)
        for f in reversed(filters):
            decoded = f.decode(decoded)
        if out.dtype.hasobject:
            out[region] = np.asarray(decoded, dtype=object).reshape(chunks)
        else:
            out[region] = np.frombuffer(bytes(np.ascontiguousarray(decoded)), dtype=out.dtype).reshape(chunks)
    return out


def _zarr_python_v2(root: Path, a: V2Array) -> np.ndarray:
    """Write the array as zarr-python does; return zarr-python's read of it
    (numcodecs' decoding where zarr-python cannot open it)."""
    data = make_data(a.kind)
    filters, compressor = a.codecs()
    if "w" not in a.zarr_python:
        _write_v2_like_zarr_python_2(root, data, filters, compressor)
    else:
        shape, chunks = _shape_chunks(a.kind)
        array = zarr.create_array(
            root, shape=shape, chunks=chunks, dtype=_v2_dtype(a.kind), zarr_format=2, order=a.order,
            filters=filters or None, compressors=compressor, fill_value=fill_for(a.kind),
        )
        array[...] = data
    if "r" in a.zarr_python:
        return zarr.open_array(root, mode="r")[...]
    return _reference_read_v2(root, filters, compressor, a.kind)


@pytest.mark.parametrize("a", V2_PARAMS)
def test_v2_zarr_python_writes_zarrdask_reads(tmp_path, a):
    expected = _zarr_python_v2(tmp_path / "zp", a)
    actual = zarrdask.open_array(tmp_path / "zp", mode="r")[...]
    assert_same(actual, expected)


@pytest.mark.parametrize("a", V2_PARAMS)
def test_v2_zarrdask_writes_zarr_python_reads(tmp_path, a):
    expected_read = _zarr_python_v2(tmp_path / "zp", a)
    data = make_data(a.kind)
    filters, compressor = a.codecs()
    object_codec = filters[0].codec_id if filters else None
    dtype = {"O-str": str if object_codec == "vlen-utf8" else object, "O-bytes": bytes}.get(a.kind, data.dtype)
    array = zarrdask.create_array(
        tmp_path / "zd", shape=data.shape, chunks=_shape_chunks(a.kind)[1], dtype=dtype, order=a.order,
        zarr_format=2, filters=filters, compressors=compressor, fill_value=fill_for(a.kind),
    )
    array[...] = data
    ours = normalize_v2_array_doc(read_json(tmp_path / "zd" / ".zarray"))
    theirs = normalize_v2_array_doc(read_json(tmp_path / "zp" / ".zarray"))
    assert (ours["filters"], ours["compressor"]) == (theirs["filters"], theirs["compressor"])
    assert _chunk_bytes(tmp_path / "zd", a.gzip) == _chunk_bytes(tmp_path / "zp", a.gzip)
    assert_same(zarrdask.open_array(tmp_path / "zd", mode="r")[...], expected_read)
    if "r" in a.zarr_python:
        assert_same(zarr.open_array(tmp_path / "zd", mode="r")[...], expected_read)


# -- Zarr v3 -----------------------------------------------------------------------------
def _wrappers() -> dict[str, tuple[type, str]]:
    """zarr-python's ``numcodecs.<id>`` wrapper classes: id → (class, kind)."""
    kinds = {
        zn._NumcodecsArrayArrayCodec: "filters",
        zn._NumcodecsArrayBytesCodec: "serializer",
        zn._NumcodecsBytesBytesCodec: "compressors",
    }
    found = {}
    for cls in vars(zn).values():
        name = getattr(cls, "codec_name", None)
        if isinstance(cls, type) and isinstance(name, str) and name.startswith("numcodecs."):
            kind = next(k for base, k in kinds.items() if issubclass(cls, base))
            found[name.removeprefix("numcodecs.")] = (cls, kind)
    return found


WRAPPERS = _wrappers()
V3_PARAMS = [
    pytest.param(i, c, sharded, id=f"{i}-{c}-{'sharded' if sharded else 'plain'}")
    for i in IDS if i in WRAPPERS
    for c in CASES.get(i, []) if not c.kind.startswith("O-")
    for sharded in (False, True)
]
# runs of numcodecs codecs only: zarrdask finds the array → bytes codec by its probe
RUNS = [
    [("bitround", {"keepbits": 8}), ("zfpy", {"mode": 4, "tolerance": 0.05}), ("zlib", {})],
    [("delta", {"dtype": "<f8"}), ("zfpy", {"mode": 4, "tolerance": 0.01})],
    [("quantize", {"digits": 3, "dtype": "<f8"}), ("pcodec", {"level": 4}), ("crc32", {})],
    [("astype", {"encode_dtype": "<f4", "decode_dtype": "<f8"}), ("zfpy", {"mode": 3, "precision": 16}),
     ("blosc", {"cname": "lz4", "clevel": 5, "shuffle": 1}), ("adler32", {})],
]


def _v3_arguments(*codecs: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
    """create_array arguments putting zarr-python wrappers where their kind goes."""
    args: dict[str, Any] = {"filters": [], "serializer": "auto", "compressors": []}
    for codec_id, config, kind in codecs:
        codec = WRAPPERS[codec_id][0](**config)
        if kind == "serializer":
            args["serializer"] = codec
        else:
            args[kind].append(codec)
    return args


def _compare_v3(tmp_path: Path, data: np.ndarray, args: dict[str, Any], sharded: bool, gzip: bool = False) -> None:
    shape_args = {"shape": data.shape, "chunks": CHUNKS, "shards": SHAPE if sharded else None, "dtype": data.dtype}
    fill = fill_for(data.dtype.str)
    zp = zarr.create_array(tmp_path / "zp", **shape_args, fill_value=fill, **args)
    zp[...] = data
    expected = zarr.open_array(tmp_path / "zp", mode="r")[...]
    # zarr-python writes, zarrdask reads: equal to zarr-python's read, the document read back unchanged
    opened = zarrdask.open_array(tmp_path / "zp", mode="r")
    assert_same(opened[...], expected)
    theirs = read_json(tmp_path / "zp" / "zarr.json")["codecs"]
    assert opened._codec.to_json() == theirs
    # zarrdask writes the same: the same codecs and chunk bytes, and zarr-python reads it equal
    zd = zarrdask.create_array(tmp_path / "zd", **shape_args, fill_value=fill, **args)
    zd[...] = data
    assert read_json(tmp_path / "zd" / "zarr.json")["codecs"] == theirs
    assert _chunk_bytes(tmp_path / "zd", gzip, sharded) == _chunk_bytes(tmp_path / "zp", gzip, sharded)
    assert_same(zarr.open_array(tmp_path / "zd", mode="r")[...], expected)
    assert_same(zarrdask.open_array(tmp_path / "zd", mode="r")[...], expected)


@pytest.mark.parametrize("codec_id, case, sharded", V3_PARAMS)
def test_v3_zarr_python_wrappers_both_ways(tmp_path, codec_id, case, sharded):
    data = make_data(case.kind)
    _compare_v3(tmp_path, data, _v3_arguments((codec_id, case.config, WRAPPERS[codec_id][1])), sharded,
                gzip=codec_id == "gzip")


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("run", RUNS, ids=lambda run: "-".join(i for i, _ in run))
def test_v3_runs_of_numcodecs_codecs(tmp_path, run, sharded):
    missing = [i for i, _ in run if i not in WRAPPERS or i not in IDS]
    if missing:
        pytest.skip(f"zarr-python or numcodecs {numcodecs.__version__} lacks {missing}")
    data = make_data("<f8")
    _compare_v3(tmp_path, data, _v3_arguments(*((i, c, WRAPPERS[i][1]) for i, c in run)), sharded)


# -- v3 codecs zarr-python has no wrapper for -----------------------------------------------
V3_OWN = [
    pytest.param(i, c, id=f"{i}-{c}")
    for i in IDS if i not in WRAPPERS
    for c in CASES.get(i, [])
    if c.kind in ("<i4", "<f8", "<U3", "O-str", "O-bytes") and not (i == "categorize" and c.kind == "O-str")
]


@pytest.mark.parametrize("codec_id, case", V3_OWN)
def test_v3_codecs_zarr_python_lacks(tmp_path, codec_id, case):
    """zarrdask writes and reads ``numcodecs.<id>`` codecs zarr-python 3 has no
    wrapper for; the kind comes from the create_array argument (filters for
    array → array, serializer for array → bytes, compressors otherwise)."""
    from zarrdask.codecs.numcodecs_v3 import classify

    data = make_data(case.kind)
    dtype = {"O-str": np.dtypes.StringDType(), "O-bytes": np.dtype(object)}.get(case.kind, data.dtype)
    codec = numcodecs.get_codec({"id": codec_id, **case.config})
    kind = classify(codec, dtype)
    doc = {"name": f"numcodecs.{codec_id}", "configuration": case.config}
    args = {"filters": [doc]} if kind == "array_array" else {"serializer": doc} if kind == "array_bytes" else {"compressors": [doc]}
    array = zarrdask.create_array(tmp_path / "a", shape=data.shape, chunks=_shape_chunks(case.kind)[1],
                                  dtype={"O-str": str, "O-bytes": bytes}.get(case.kind, data.dtype), **args)
    array[...] = data
    position = 1 if "compressors" in args else 0  # after the serializer / first
    assert read_json(tmp_path / "a" / "zarr.json")["codecs"][position] == doc
    back = zarrdask.open_array(tmp_path / "a", mode="r")[...]
    if kind == "array_array":  # categorize: labels it does not know read as ""
        data = np.asarray(codec.decode(codec.encode(data))).reshape(data.shape)
    assert_same(back, data.astype(dtype) if dtype.kind == "T" else data)
