"""``scale_offset`` and ``cast_value`` with zarr-python >= 3.4 (its ``cast_value``
runs on ``cast-value-rs``, installed into the Python 3.12 venv of
:mod:`tests._zarr34`), both directions: each library writes the same data with
the same codecs; the stored chunks are compared byte for byte, and each library
reads the other's array equal to its own."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import zarrdask

from .. import _zarr34

_SCRIPT = """
import json, sys
import numpy as np
import zarr
case = json.loads(sys.argv[1])
data = np.load(case["data"])
kw = {"shards": case["shards"]} if case.get("shards") else {}
a = zarr.create_array(case["theirs"], shape=data.shape, chunks=case["chunks"], dtype=str(data.dtype),
                      fill_value=case["fill"], filters=case["filters"], compressors=None, overwrite=True, **kw)
a[...] = data
np.save(case["read_theirs"], zarr.open_array(case["theirs"], mode="r")[...])
np.save(case["read_ours"], zarr.open_array(case["ours"], mode="r")[...])
print(json.dumps(json.load(open(case["theirs"] + "/zarr.json"))["codecs"]))
"""

_NAN = float("nan")
_RNG = np.random.default_rng(7)


def _so(**config):
    return {"name": "scale_offset", "configuration": config} if config else {"name": "scale_offset"}


def _cv(data_type, **config):
    return {"name": "cast_value", "configuration": {"data_type": data_type, **config}}


def _floats(n, lo, hi):
    return _RNG.uniform(lo, hi, n)


CASES = {
    # scale_offset alone
    "so-float32": ("float32", [_so(offset=5, scale=0.1)], 0.0, _floats(64, -1e3, 1e3)),
    "so-int16": ("int16", [_so(offset=-10, scale=3)], -10, _RNG.integers(-50, 50, 64)),
    "so-uint64": ("uint64", [_so(offset=2**40)], 2**40, _RNG.integers(2**40, 2**63, 64, dtype=np.uint64)),
    "so-none": ("float64", [_so()], 0.0, _floats(64, -1, 1)),
    # cast_value alone, several rounding / out_of_range settings
    "cv-f64-i16-zero-clamp": ("float64", [_cv("int16", rounding="towards-zero", out_of_range="clamp")], 0.0,
                              np.r_[_floats(60, -4e4, 4e4), -0.5, 0.5, -2.5, 2.5]),
    "cv-f64-u8-numpy": ("float64", [_cv("uint8", rounding="towards-negative", out_of_range="wrap",
                                        scalar_map={"encode": [["NaN", 0], ["Infinity", 0], ["-Infinity", 0]]})],
                        0.0, np.r_[_floats(60, -1e4, 1e4), _NAN, np.inf, -np.inf, 255.99]),
    "cv-f64-i8-away": ("float64", [_cv("int8", rounding="nearest-away")], 0.0,
                       np.r_[np.arange(-60, 60) / 2.0][:64]),
    "cv-f64-f16-up-clamp": ("float64", [_cv("float16", rounding="towards-positive", out_of_range="clamp")], 0.0,
                            np.r_[_floats(58, -7e4, 7e4), _NAN, np.inf, -0.0, 1e-9, -1e-9, 65504.5]),
    "cv-f64-f32-even": ("float64", [_cv("float32")], _NAN, np.r_[_RNG.standard_normal(62) * 1e20, _NAN, -0.0]),
    "cv-i64-f32-zero": ("int64", [_cv("float32", rounding="towards-zero")], 0,
                        np.r_[_RNG.integers(-(2**62), 2**62, 60), 2**24 + 1, -(2**24 + 3), 2**62 + 2**38 + 1, 7]),
    "cv-i32-u8-wrap": ("int32", [_cv("uint8", out_of_range="wrap")], 0, _RNG.integers(-(2**31), 2**31 - 1, 64)),
    "cv-u16-i8-clamp": ("uint16", [_cv("int8", out_of_range="clamp")], 0, _RNG.integers(0, 300, 64)),
    # combined: the README's examples
    "readme-uint16": ("uint16", [_so(offset=1000), _cv("uint8")], 1000, _RNG.integers(1000, 1256, 64)),
    "readme-float64-nan": ("float64", [_so(offset=-10, scale=0.1),
                                       _cv("uint8", rounding="nearest-even",
                                           scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]})],
                           _NAN, np.r_[_floats(60, 0, 2540), _NAN, _NAN, 0.0, 2540.0]),
    "combined-i8-clamp": ("float32", [_so(offset=0.5, scale=100), _cv("int8", out_of_range="clamp",
                                                                       rounding="nearest-away")],
                          0.5, _floats(64, -2, 2)),
}


@pytest.fixture(scope="module")
def venv():
    py = _zarr34.python()
    _zarr34.require("cast_value_rs", "cast-value-rs>=0.4.2")
    return py


def _chunk_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "zarr.json"}


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_both_directions(venv, tmp_path, name, sharded):
    if sharded and not name.startswith(("readme", "cv-f64-u8", "so-int16")):
        pytest.skip("sharded: a few cases suffice")
    if sharded and name == "readme-uint16":
        pytest.skip("zarr-python 3.4 checks a shard's inner codecs with the data type's default fill "
                    "value (0), not the array's: 0 - 1000 is no uint16 (sharding.py _validate_inner_codecs)")
    dtype, filters, fill, values = CASES[name]
    x = np.asarray(values).astype(dtype).reshape(8, 8)
    chunks, shards = ((2, 4), (4, 8)) if sharded else ((4, 4), None)
    ours = tmp_path / "ours.zarr"
    a = zarrdask.create_array(str(ours), shape=x.shape, dtype=dtype, chunks=chunks, shards=shards,
                              filters=filters, compressors=None, fill_value=fill)
    a[...] = x
    our_read = zarrdask.open_array(str(ours))[...]
    np.save(tmp_path / "data.npy", x)
    case = {"data": str(tmp_path / "data.npy"), "theirs": str(tmp_path / "theirs.zarr"), "ours": str(ours),
            "read_theirs": str(tmp_path / "rt.npy"), "read_ours": str(tmp_path / "ro.npy"),
            "chunks": list(chunks), "shards": list(shards) if shards else None, "fill": fill, "filters": filters}
    their_codecs = _zarr34.run(_SCRIPT, json.dumps(case))
    their_read = np.load(tmp_path / "rt.npy")
    # zarr 3.4 reads ours as we do, we read theirs as they do
    np.testing.assert_array_equal(np.load(tmp_path / "ro.npy"), our_read)
    np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / "theirs.zarr"))[...], their_read)
    # the same bytes stored (rounding, clamping, wrapping, scalar_map agree element by element);
    # shards may order their inner chunks differently, so those compare by value
    if not sharded:
        assert _chunk_files(tmp_path / "theirs.zarr") == _chunk_files(ours)
    np.testing.assert_array_equal(their_read, our_read)
    ours_json = json.loads((ours / "zarr.json").read_text())["codecs"]
    inner = ours_json[0]["configuration"]["codecs"] if sharded else ours_json
    theirs_inner = their_codecs[0]["configuration"]["codecs"] if sharded else their_codecs
    # JSON: the same codecs (zarr-python drops a default "rounding"; zarrdask keeps what it was given)
    for mine, theirs in zip(inner[: len(filters)], theirs_inner[: len(filters)]):
        assert mine["name"] == theirs["name"]
        assert {k: v for k, v in mine.get("configuration", {}).items() if v != "nearest-even"} == \
            {k: v for k, v in theirs.get("configuration", {}).items() if v != "nearest-even"}


def test_lossless_cases_round_trip(venv, tmp_path):
    for name in ("so-int16", "so-uint64", "cv-u16-i8-clamp"):
        dtype, filters, fill, values = CASES[name]
        x = np.asarray(values).astype(dtype)
        if name == "cv-u16-i8-clamp":
            x = np.minimum(x, 127).astype(dtype)
        a = zarrdask.create_array(str(tmp_path / name), shape=x.shape, dtype=dtype, chunks=(16,),
                                  filters=filters, fill_value=fill)
        a[...] = x
        np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / name))[...], x)
