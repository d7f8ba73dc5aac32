"""``packbits`` and ``reshape`` with zarrs, both directions.

zarr-python 3.4 implements neither codec (nor ``bitround``; tensorstore 0.1.86
does not register any of the three). zarrs does, and zarrs-python runs it as
zarr-python 3.4's codec pipeline (:mod:`tests._zarr34`: a Python 3.12 venv).
zarr-python still parses the metadata, so the script registers a placeholder
codec class under each name that only carries its JSON and refuses to encode
or decode; with ``codec_pipeline.strict`` zarrs does every chunk or the script
fails.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask

from .. import _zarr34

_PRELUDE = """
import json, sys
from dataclasses import dataclass
import numpy as np
import zarr
from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec
from zarr.registry import register_codec
import zarrs  # noqa: F401
zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True})

def placeholder(name, base):
    @dataclass(frozen=True)
    class Placeholder(base):
        configuration: dict
        is_fixed_size = True
        @classmethod
        def from_dict(cls, data):
            return cls(configuration=dict(data.get("configuration") or {}))
        def to_dict(self):
            return {"name": name, "configuration": self.configuration} if self.configuration else {"name": name}
        def compute_encoded_size(self, n, spec):
            return n
        async def _decode_single(self, *a):
            raise RuntimeError(name + ": zarr-python's own pipeline was used")
        async def _encode_single(self, *a):
            raise RuntimeError(name + ": zarr-python's own pipeline was used")
    register_codec(name, Placeholder)

placeholder("packbits", ArrayBytesCodec)
placeholder("reshape", ArrayArrayCodec)
"""

_READ = _PRELUDE + """
a = zarr.open_array(sys.argv[1], mode="r")
np.save(sys.argv[2], a[...])
print(json.dumps({"pipeline": type(a.async_array.codec_pipeline).__name__}))
"""

_WRITE = _PRELUDE + """
import os
doc = json.loads(sys.argv[2])
os.makedirs(sys.argv[1], exist_ok=True)
with open(os.path.join(sys.argv[1], "zarr.json"), "w") as f:
    json.dump(doc, f)
a = zarr.open_array(sys.argv[1], mode="r+")
a[...] = np.load(sys.argv[3])
print(json.dumps({"pipeline": type(a.async_array.codec_pipeline).__name__}))
"""


def _codecs(serializer, filters=(), compressors=()):
    return [*filters, serializer, *compressors]


def _document(shape, chunks, dtype, codecs, fill_value):
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value, "codecs": codecs, "attributes": {},
    }


def _sharded(inner_chunks, codecs):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner_chunks), "codecs": codecs,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"}}


ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": True}}
LE = {"name": "bytes", "configuration": {"endian": "little"}}


def _data(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, 32, shape).astype("u1")
    return (rng.integers(0, 2048, shape) * 4).astype(dtype)  # bits 2..12: zarrs sign-extends differently


CASES = {
    "bool": ("bool", (37, 21), (10, 7), [{"name": "packbits"}], False),
    "bool-first_byte-zstd": ("bool", (37, 21), (10, 7),
                             [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}, ZSTD], False),
    "uint8-bits-0-4": ("uint8", (30, 20), (8, 8),
                       [{"name": "packbits", "configuration": {"padding_encoding": "last_byte", "first_bit": 0,
                                                               "last_bit": 4}}], 3),
    # whole chunks only: zarrs 0.2.3 reads an edge chunk with first_bit > 0 without
    # shifting the bits back (its own writes too: 64 reads back as 16)
    "int16-bits-2-13": ("int16", (32, 24), (8, 8),
                        [{"name": "packbits", "configuration": {"first_bit": 2, "last_bit": 13}}], 4),
    "bool-in-shard": ("bool", (64, 48), (32, 48), [_sharded((8, 16), [{"name": "packbits"}])], False),
    # whole chunks only: zarrs 0.2.3 cannot decode part of a chunk through reshape (an edge chunk)
    "reshape-readme": ("uint16", (40, 10, 16, 3), (20, 10, 16, 3),
                       [{"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}}, LE, ZSTD], 0),
    "reshape-in-shard": ("int32", (64, 48), (32, 48),
                         [_sharded((8, 16), [{"name": "reshape", "configuration": {"shape": [[0], 4, -1]}}, LE])], 0),
}


@pytest.fixture(scope="module")
def venv():
    return _zarr34.python()


def _zarrs_or_skip():
    if _zarr34.versions()[1] is None:
        pytest.skip("zarrs (zarrs-python) did not install in the zarr-python 3.4 venv")


@pytest.mark.parametrize("case", list(CASES))
def test_zarrdask_writes_zarrs_reads(venv, tmp_path, case):
    _zarrs_or_skip()
    dtype, shape, chunks, codecs, fill = CASES[case]
    x = _data(dtype, shape)
    path = tmp_path / "a.zarr"
    (path).mkdir()
    (path / "zarr.json").write_text(json.dumps(_document(shape, chunks, dtype, codecs, fill)))
    a = zarrdask.open_array(str(path), mode="r+")
    a[...] = x
    out = _zarr34.run(_READ, path, tmp_path / "out.npy")
    assert out["pipeline"] == "ZarrsCodecPipeline"
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), x)


@pytest.mark.parametrize("case", list(CASES))
def test_zarrs_writes_zarrdask_reads(venv, tmp_path, case):
    _zarrs_or_skip()
    dtype, shape, chunks, codecs, fill = CASES[case]
    x = _data(dtype, shape, seed=1)
    np.save(tmp_path / "in.npy", x)
    theirs = tmp_path / "theirs.zarr"
    _zarr34.run(_WRITE, theirs, json.dumps(_document(shape, chunks, dtype, codecs, fill)), tmp_path / "in.npy")
    a = zarrdask.open_array(str(theirs), mode="r")
    np.testing.assert_array_equal(a[...], x)
    # and zarrdask writes the same chunk bytes (no compressor: byte for byte)
    if not any(c["name"] in ("zstd", "sharding_indexed") for c in codecs):
        ours = tmp_path / "ours.zarr"
        ours.mkdir()
        (ours / "zarr.json").write_text(json.dumps(_document(shape, chunks, dtype, codecs, fill)))
        zarrdask.open_array(str(ours), mode="r+")[...] = x
        for key in sorted(p.relative_to(theirs) for p in (theirs / "c").rglob("*") if p.is_file()):
            assert (ours / key).read_bytes() == (theirs / key).read_bytes(), key
