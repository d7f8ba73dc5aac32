"""Rectilinear chunk grids with zarr-python >= 3.4 (and zarrs through its codec
pipeline for zarr-python), both directions, in a Python 3.12 venv
(:mod:`tests._zarr34`: built once, skipped with the reason when impossible)."""

from __future__ import annotations

import json

import dask.array as da
import numpy as np
import pytest

import zarrdask
from zarrdask.dask import from_zarr, to_zarr

from .. import _zarr34

MONTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_PRELUDE = """
import json, sys
import numpy as np
import zarr
zarr.config.set({"array.rectilinear_chunks": True})
if len(sys.argv) > 3 and sys.argv[3] == "zarrs":
    import zarrs  # noqa: F401
    # strict: no fallback to zarr-python's own pipeline, so zarrs (Rust) does every chunk
    zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True})
"""

_READ = _PRELUDE + """
a = zarr.open_array(sys.argv[1], mode="r")
np.save(sys.argv[2], a[...])
print(json.dumps({"read_chunk_sizes": [list(c) for c in a.read_chunk_sizes],
                  "write_chunk_sizes": [list(c) for c in a.write_chunk_sizes],
                  "pipeline": type(a.async_array.codec_pipeline).__name__}))
"""

_WRITE = _PRELUDE + """
spec = json.loads(sys.argv[2])
data = np.load(spec["data"])
kw = {"shards": spec["shards"]} if spec.get("shards") else {}
a = zarr.create_array(sys.argv[1], shape=data.shape, chunks=spec["chunks"], dtype=str(data.dtype), overwrite=True, **kw)
a[...] = data
print(json.dumps({"pipeline": type(a.async_array.codec_pipeline).__name__}))
"""


@pytest.fixture(scope="module")
def venv():
    return _zarr34.python()


def _months(seed=0):
    return da.random.default_rng(seed).random((365, 360), chunks=(MONTHS, (180, 180)))


def test_venv_has_zarr_34(venv):
    zarr_version, _ = _zarr34.versions()
    assert tuple(int(p) for p in zarr_version.split(".")[:2]) >= (3, 4)


@pytest.mark.parametrize("sharded", [False, True])
def test_zarrdask_writes_zarr_python_34_reads(venv, tmp_path, sharded):
    x = _months()
    path = str(tmp_path / "m.zarr")
    if sharded:
        to_zarr(x, path, shards="dask", chunks=(1, 60))
    else:
        to_zarr(x, path, chunks="dask")
    out = _zarr34.run(_READ, path, tmp_path / "out.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), x.compute())
    assert out["write_chunk_sizes"] == [list(MONTHS), [180, 180]]
    if not sharded:
        assert out["read_chunk_sizes"] == [list(MONTHS), [180, 180]]


def test_zarr_python_34_reads_integer_axes_and_overflow(venv, tmp_path):
    path = str(tmp_path / "o.zarr")
    x = np.arange(6 * 6 * 6, dtype="i4").reshape(6, 6, 6)
    zarrdask.create_array(path, shape=x.shape, chunks=(4, (1, 1, 1, 3), (4, 4, 4)), chunk_grid="rectilinear",
                          dtype="i4", data=x)
    _zarr34.run(_READ, path, tmp_path / "out.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), x)


@pytest.mark.parametrize("sharded", [False, True])
def test_zarr_python_34_writes_zarrdask_reads(venv, tmp_path, sharded):
    x = np.random.default_rng(1).random((365, 40))
    np.save(tmp_path / "in.npy", x)
    path = str(tmp_path / "z.zarr")
    spec = {"data": str(tmp_path / "in.npy"), "chunks": [list(MONTHS), [10, 10, 20]]}
    if sharded:
        spec = {"data": spec["data"], "chunks": [1, 10], "shards": [list(MONTHS), [20, 20]]}
    _zarr34.run(_WRITE, path, json.dumps(spec))
    doc = json.loads((tmp_path / "z.zarr" / "zarr.json").read_text())
    assert doc["chunk_grid"]["name"] == "rectilinear"
    a = zarrdask.open_array(path)
    np.testing.assert_array_equal(a[...], x)
    y = from_zarr(path)
    assert y.chunks == (MONTHS, (10, 10, 20) if not sharded else (20, 20))
    np.testing.assert_array_equal(y.compute(), x)
    # zarrdask writes back the same document, byte for byte
    raw = (tmp_path / "z.zarr" / "zarr.json").read_bytes()
    b = zarrdask.open_array(path, mode="r+")
    b.attrs.put({})
    assert (tmp_path / "z.zarr" / "zarr.json").read_bytes() == raw


def test_same_canonical_metadata_as_zarr_python_34(venv, tmp_path):
    x = np.zeros((365, 40))
    np.save(tmp_path / "in.npy", x)
    _zarr34.run(_WRITE, str(tmp_path / "z.zarr"),
                json.dumps({"data": str(tmp_path / "in.npy"), "chunks": [list(MONTHS), [10, 10, 20]]}))
    theirs = json.loads((tmp_path / "z.zarr" / "zarr.json").read_text())
    ours = zarrdask.create_array(str(tmp_path / "d.zarr"), shape=x.shape, chunks=(MONTHS, (10, 10, 20)),
                                 dtype="f8").metadata.to_json()
    assert ours["chunk_grid"] == theirs["chunk_grid"]


def _zarrs(venv):
    _, zarrs_version = _zarr34.versions()
    if zarrs_version is None:
        pytest.skip("the zarrs Python package did not install into the Python 3.12 venv")


def test_zarrs_pipeline_reads_and_writes_rectilinear(venv, tmp_path):
    _zarrs(venv)
    x = _months(3)
    path = str(tmp_path / "m.zarr")
    to_zarr(x, path, chunks="dask")
    out = _zarr34.run(_READ, path, tmp_path / "out.npy", "zarrs")
    assert out["pipeline"] == "ZarrsCodecPipeline"
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), x.compute())
    y = np.random.default_rng(4).random((365, 40))
    np.save(tmp_path / "in.npy", y)
    out = _zarr34.run(_WRITE, str(tmp_path / "z.zarr"),
                      json.dumps({"data": str(tmp_path / "in.npy"), "chunks": [list(MONTHS), [10, 30]]}), "zarrs")
    assert out["pipeline"] == "ZarrsCodecPipeline"
    np.testing.assert_array_equal(zarrdask.open_array(str(tmp_path / "z.zarr"))[...], y)
