"""Chunks written by tensorstore decode here, and chunks encoded here read in tensorstore."""

from __future__ import annotations

import json

import numpy as np
import pytest

from zarrdask.codecs.registry import codec_from_json

from ._helpers import decode_with, encode_with, spec_of

ts = pytest.importorskip("tensorstore")

DATA = (np.arange(4 * 6 * 10, dtype="int32").reshape(4, 6, 10) * 37) % 1001

CODECS = {
    "bytes-little": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "bytes-big": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "gzip": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 6}}],
    "zstd": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 3}}],
    "zstd-checksum": [
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "zstd", "configuration": {"level": 1, "checksum": True}},
    ],
    "blosc": [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}},
    ],
    "crc32c": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
    "transpose": [
        {"name": "transpose", "configuration": {"order": [2, 0, 1]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "gzip", "configuration": {"level": 1}},
        {"name": "crc32c"},
    ],
}


def _open(path, codecs, create):
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": str(path) + "/"},
    }
    if create:
        spec["metadata"] = {
            "shape": list(DATA.shape),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(DATA.shape)}},
            "data_type": "int32",
            "codecs": codecs,
        }
    return ts.open(spec, create=create).result()


@pytest.mark.parametrize("name", sorted(CODECS))
def test_both_directions(tmp_path, name):
    array = _open(tmp_path, CODECS[name], create=True)
    array[...] = DATA
    chunk = tmp_path / "c" / "0" / "0" / "0"
    docs = json.loads((tmp_path / "zarr.json").read_text())["codecs"]
    ours = [codec_from_json(d) for d in docs]
    np.testing.assert_array_equal(decode_with(ours, chunk.read_bytes(), spec_of(DATA)), DATA)

    other = DATA[::-1] + 5
    chunk.write_bytes(encode_with(ours, other))
    np.testing.assert_array_equal(_open(tmp_path, None, create=False).read().result(), other)
