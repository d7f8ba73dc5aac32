"""Strings and bytes through the dask path: from_zarr and to_zarr."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.vlen_offsets import VlenOffsetsCodec
from zarrdask.errors import AlignmentWarning, RegionEdgeWarning, UnknownDataTypeError

T = np.dtypes.StringDType()


def _strings(shape, seed=0):
    rng = np.random.default_rng(seed)
    words = np.array(["", "a", "bé", "中文", "😀", "x" * 5000], dtype=object)
    return words[rng.integers(0, len(words), shape)].astype(T)


@pytest.mark.parametrize("fmt, kw", [(2, {}), (3, {}), (3, {"shards": (4, 6)}),
                                     (3, {"shards": (4, 6), "serializer": VlenOffsetsCodec()})])
def test_from_zarr_reads_strings(tmp_path, fmt, kw):
    data = _strings((9, 7))
    a = zarrdask.create_array(tmp_path / "a", shape=data.shape, chunks=(2, 3), dtype=str, zarr_format=fmt,
                              data=data, **kw)
    x = zarrdask.from_zarr(a)
    assert x.dtype == T
    assert x.compute().tolist() == data.tolist()
    assert x[1:8:3, 2:].compute().tolist() == data[1:8:3, 2:].tolist()


@pytest.mark.parametrize("fmt", [2, 3])
def test_to_zarr_writes_strings_and_bytes(tmp_path, fmt):
    data = _strings((10, 6), seed=1)
    x = da.from_array(data, chunks=(3, 4))  # misaligned with the chunks: rechunked
    with pytest.warns(AlignmentWarning, match="cut through chunks"):
        out = zarrdask.to_zarr(x, tmp_path / "s", chunks=(5, 3), zarr_format=fmt)
    assert out.dtype == T and out[...].tolist() == data.tolist()
    zarr = pytest.importorskip("zarr")
    assert zarr.open_array(str(tmp_path / "s"), mode="r")[...].tolist() == data.tolist()

    objects = da.from_array(data.astype(object), chunks=(5, 3))
    with pytest.raises(UnknownDataTypeError, match="dtype=str"):
        zarrdask.to_zarr(objects, tmp_path / "o", zarr_format=fmt)
    out = zarrdask.to_zarr(objects, tmp_path / "o", dtype=str, zarr_format=fmt)
    assert out[...].tolist() == data.tolist()

    blobs = np.empty((4,), dtype=object)
    blobs[:] = [b"", b"\x00\xff", b"x" * 100, b"z"]
    out = zarrdask.to_zarr(da.from_array(blobs, chunks=2), tmp_path / "b", dtype=bytes, zarr_format=fmt)
    assert out[...].tolist() == blobs.tolist()
    assert zarrdask.from_zarr(tmp_path / "b").compute().tolist() == blobs.tolist()


def test_to_zarr_region_into_a_sharded_string_array(tmp_path):
    a = zarrdask.create_array(tmp_path / "a", shape=(12,), chunks=(2,), shards=(4,), dtype=str, fill_value="-")
    part = np.array(["p", "q", "r", "s", "t"], dtype=T)
    with pytest.warns(RegionEdgeWarning, match="inside shards"):
        zarrdask.to_zarr(da.from_array(part, chunks=5), tmp_path / "a", mode="r+", region=(slice(3, 8),))
    assert a[...].tolist() == ["-"] * 3 + list("pqrst") + ["-"] * 4
