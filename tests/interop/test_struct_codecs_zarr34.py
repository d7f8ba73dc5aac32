"""zarr-python 3.4 (a Python 3.12 venv, :mod:`tests._zarr34`) and zarrdask both ways:
the ``struct`` data type and every v3 codec both implement (``bytes`` in both byte
orders, ``transpose``, ``gzip``, ``blosc``, ``zstd``, ``crc32c``, ``sharding_indexed``,
``vlen-utf8``). The registry codecs zarr-python 3.4 has (``cast_value``,
``scale_offset``) are tested in ``test_cast_scale_zarr34.py``."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask

from .. import _zarr34

STRUCT = np.dtype([("t", "<i4"), ("v", "<f8"), ("flag", "u1")])

_WRITE = """
import json, sys
import numpy as np
import zarr
spec = json.loads(sys.argv[2])
data = np.load(spec["data"])
kw = {k: spec[k] for k in ("filters", "serializer", "compressors", "shards", "fill_value") if k in spec}
a = zarr.create_array(sys.argv[1], shape=data.shape, chunks=spec["chunks"], dtype=data.dtype, overwrite=True, **kw)
a[...] = data
doc = json.load(open(sys.argv[1] + "/zarr.json"))
print(json.dumps({"data_type": doc["data_type"], "codecs": doc["codecs"]}))
"""

_READ = """
import json, sys
import numpy as np
import zarr
a = zarr.open_array(sys.argv[1], mode="r")
np.save(sys.argv[2], a[...])
print(json.dumps({"dtype": str(a.dtype)}))
"""

#: codec lists both write: (filters, serializer, compressors)
CODECS = {
    "bytes-big": (None, {"name": "bytes", "configuration": {"endian": "big"}}, None),
    "transpose+gzip": ([{"name": "transpose", "configuration": {"order": [1, 0]}}], "auto",
                       [{"name": "gzip", "configuration": {"level": 3}}]),
    "blosc": (None, "auto", [{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3,
                                                                 "shuffle": "bitshuffle", "typesize": 8,
                                                                 "blocksize": 0}}]),
    "zstd-checksum+crc32c": (None, "auto", [{"name": "zstd", "configuration": {"level": 5, "checksum": True}},
                                            {"name": "crc32c"}]),
    "sharded": (None, "auto", [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}]),
}


@pytest.fixture(scope="module")
def venv():
    return _zarr34.python()


def _struct_data() -> np.ndarray:
    x = np.zeros((6, 5), STRUCT)
    x["t"] = np.arange(30).reshape(6, 5)
    x["v"] = np.linspace(-1, 1, 30).reshape(6, 5)
    x["flag"] = np.arange(30).reshape(6, 5) % 3
    return x


def test_zarr_python_34_struct_to_zarrdask(venv, tmp_path):
    x = _struct_data()
    np.save(tmp_path / "in.npy", x)
    path = str(tmp_path / "s.zarr")
    out = _zarr34.run(_WRITE, path, json.dumps({"data": str(tmp_path / "in.npy"), "chunks": [4, 4]}))
    assert out["data_type"]["name"] in ("struct", "structured")
    a = zarrdask.open_array(path)
    assert a.dtype == STRUCT and a[...].tobytes() == x.tobytes()


def test_zarrdask_struct_to_zarr_python_34(venv, tmp_path):
    x = _struct_data()
    path = str(tmp_path / "s.zarr")
    zarrdask.create_array(path, shape=x.shape, chunks=(4, 4), dtype=STRUCT, data=x)
    _zarr34.run(_READ, path, tmp_path / "out.npy")
    assert np.load(tmp_path / "out.npy").tobytes() == x.tobytes()


@pytest.mark.parametrize("name", list(CODECS))
def test_codecs_zarr_python_34_to_zarrdask(venv, tmp_path, name):
    filters, serializer, compressors = CODECS[name]
    x = np.random.default_rng(3).standard_normal((40, 30))
    np.save(tmp_path / "in.npy", x)
    spec = {"data": str(tmp_path / "in.npy"), "chunks": [8, 10], "compressors": compressors,
            "filters": filters, "serializer": serializer}
    if name == "sharded":
        spec["shards"] = [16, 30]
    path = str(tmp_path / "z.zarr")
    _zarr34.run(_WRITE, path, json.dumps({k: v for k, v in spec.items() if v is not None}))
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], x)


@pytest.mark.parametrize("name", list(CODECS))
def test_codecs_zarrdask_to_zarr_python_34(venv, tmp_path, name):
    filters, serializer, compressors = CODECS[name]
    x = np.random.default_rng(4).standard_normal((40, 30))
    path = str(tmp_path / "z.zarr")
    kw = {"shards": (16, 30)} if name == "sharded" else {}
    zarrdask.create_array(path, shape=x.shape, chunks=(8, 10), dtype=x.dtype, filters=filters,
                          serializer=serializer, compressors=compressors, data=x, **kw)
    _zarr34.run(_READ, path, tmp_path / "out.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), x)


def test_strings_both_ways(venv, tmp_path):
    words = np.array(["α", "", "zarr", "longer text here"] * 5, dtype=np.dtypes.StringDType())
    path = str(tmp_path / "w.zarr")
    zarrdask.create_array(path, shape=words.shape, chunks=(6,), dtype=str, data=words)
    out = _zarr34.run(_READ, path, tmp_path / "out.npy")
    assert list(np.load(tmp_path / "out.npy", allow_pickle=True)) == list(words), out
