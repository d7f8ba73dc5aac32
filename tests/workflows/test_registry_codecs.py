"""Every codec of the zarr-extensions registry that zarrdask gained with the full
registry goes through the workflows: as a shard's inner codec, through ``rechunk``
(source and target keep the codec) and through ``convert`` (re-sharded v3 → v3),
with the values equal to what was written (within a lossy codec's own rounding:
the copy is compared with what the source reads, which is what the codec kept;
zfp's fixed-accuracy mode rounds again with the new chunks, within its tolerance)."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import zarrdask
from zarrdask.workflows import convert, rechunk

SHAPE, CHUNKS = (24, 20), (6, 10)

#: (id, dtype, create_array keywords)
CASES = [
    ("scale_offset", "f8", {"filters": [{"name": "scale_offset", "configuration": {"offset": 10, "scale": 4}}]}),
    ("cast_value", "f4", {"filters": [
        {"name": "scale_offset", "configuration": {"offset": -400, "scale": 0.25}},
        {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
                                                 "out_of_range": "clamp"}}]}),
    ("bitround", "f4", {"filters": [{"name": "bitround", "configuration": {"keepbits": 5}}]}),
    ("bitround-int", "u2", {"filters": [{"name": "bitround", "configuration": {"keepbits": 3}}]}),
    ("reshape", "f8", {"filters": [{"name": "reshape", "configuration": {"shape": [-1]}}]}),
    ("packbits-int4", ml_dtypes.int4, {"serializer": {"name": "packbits"}}),
    ("packbits-bool", "bool", {"serializer": {"name": "packbits", "configuration": {"padding_encoding": "last_byte"}}}),
    ("zfp-reversible", "f4", {"serializer": {"name": "zfp", "configuration": {"mode": "reversible"}}}),
    ("zfp-accuracy", "f8", {"serializer": {"name": "zfp", "configuration": {"mode": "fixed_accuracy", "tolerance": 0.01}}}),
    ("conditional", "i4", {"compressors": [{"name": "conditional", "configuration": {"codecs": [
        {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]}}]}),
    ("n5_default", "u2", {"serializer": {"name": "n5_default", "configuration": {"codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "gzip", "configuration": {"level": 1}}]}}, "compressors": None}),
]


def _data(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(7)
    if dtype == bool:
        return rng.random(SHAPE) > 0.5
    if dtype.kind == "f":
        return (rng.standard_normal(SHAPE) * 100).astype(dtype)
    if dtype == np.dtype(ml_dtypes.int4):
        return rng.integers(-8, 8, SHAPE).astype(dtype)
    return rng.integers(0, 1000, SHAPE).astype(dtype)


def _codec_names(path) -> list[str]:
    doc = json.loads((path / "zarr.json").read_text())

    def names(codecs):
        out = []
        for c in codecs:
            out.append(c["name"])
            if c["name"] == "sharding_indexed":
                out += names(c["configuration"]["codecs"])
        return out

    return names(doc["codecs"])


@pytest.mark.parametrize(("name", "dtype", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_registry_codec_in_shard_rechunk_and_convert(tmp_path, name, dtype, kwargs):
    kwargs = dict(kwargs)
    kwargs.setdefault("compressors", [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}]
                      if "serializer" not in kwargs and "compressors" not in kwargs else kwargs.get("compressors"))
    data = _data(dtype)
    codec = name.split("-")[0]

    # as the inner codec of a shard, written in two unaligned halves
    src = zarrdask.create_array(str(tmp_path / "src.zarr"), shape=SHAPE, dtype=dtype, chunks=CHUNKS,
                                shards=(12, 20), **kwargs)
    src[:13] = data[:13]
    src[13:] = data[13:]
    assert codec in _codec_names(tmp_path / "src.zarr")
    kept = src[:]
    if codec in ("reshape", "packbits", "n5_default", "conditional") or "reversible" in name:
        assert kept.tobytes() == data.tobytes()  # lossless
    elif codec == "zfp":
        assert np.max(np.abs(kept - data)) <= 0.01
    elif codec == "scale_offset":  # (x - 10) * 4 and back in float64: within an ulp or two
        np.testing.assert_allclose(kept, data, rtol=1e-14, atol=1e-12)
    elif codec == "cast_value":  # to uint8 steps of 4 from -400, clamped at 620
        assert np.all(np.abs(kept - np.clip(data, -400, 620)) <= 2)
    else:
        assert np.allclose(kept.astype("f8"), data.astype("f8"), rtol=2.0 ** -2)

    # rechunk: the target keeps the source's codecs
    plan = rechunk(zarrdask.open_array(str(tmp_path / "src.zarr")), (24, 5), str(tmp_path / "rc.zarr"),
                   max_mem="4MB")
    plan.execute()
    out = zarrdask.open_array(str(tmp_path / "rc.zarr"))
    assert out.chunks == (24, 5) and codec in _codec_names(tmp_path / "rc.zarr")
    _assert_copy(out[:], kept, name)

    # convert: re-sharded v3 → v3, codecs kept
    result = convert(str(tmp_path / "src.zarr"), str(tmp_path / "cv.zarr"), shards=(24, 20))
    assert result.ok
    assert codec in _codec_names(tmp_path / "cv.zarr")
    _assert_copy(zarrdask.open_array(str(tmp_path / "cv.zarr"))[:], kept, name)


def _assert_copy(copy: np.ndarray, kept: np.ndarray, name: str) -> None:
    if name == "zfp-accuracy":  # encoded anew with other chunks: within the tolerance again
        assert np.max(np.abs(copy - kept)) <= 0.01
    else:
        assert copy.tobytes() == kept.tobytes()
