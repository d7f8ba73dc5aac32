"""zarrdask.from_zarr / zarrdask.to_zarr with the small data types of every family
(ml_dtypes floats and sub-byte integers, complex types of small floats as
structured dtypes), on the threaded scheduler, sharded and not: bit-exact round trips."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import zarrdask
from zarrdask.metadata.dtypes import normalize_dtype

NAMES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn", "float6_e3m2fn",
         "int4", "uint4", "int2", "uint2", "complex_bfloat16", "complex_float8_e5m2"]
#: the bits that hold a value of the sub-byte types (ml_dtypes keeps the rest zero)
VALUE_BITS = {"float4_e2m1fn": 0x0F, "float6_e3m2fn": 0x3F, "int4": 0x0F, "uint4": 0x0F, "int2": 0x03, "uint2": 0x03}


def every_bit_pattern(name: str, shape: tuple[int, int]) -> np.ndarray:
    """Random values of the type, NaNs with every payload included."""
    dtype = normalize_dtype(name)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32}[dtype.itemsize]
    raw = np.random.default_rng(len(name)).integers(0, np.iinfo(width).max, size=shape, dtype=width,
                                                    endpoint=True)
    return (raw & VALUE_BITS.get(name, np.iinfo(width).max)).astype(width).view(dtype)


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


@pytest.mark.parametrize("shards", [None, (8, 6)], ids=["plain", "sharded"])
@pytest.mark.parametrize("name", NAMES)
def test_round_trip_bit_exact(tmp_path, name, shards):
    data = every_bit_pattern(name, (20, 18))
    path = str(tmp_path / "a.zarr")
    with dask.config.set(scheduler="threads"):
        x = da.from_array(data, chunks=(8, 6))
        zarrdask.to_zarr(x, path, chunks=(4, 3), shards=shards)
        y = zarrdask.from_zarr(path)
        assert y.dtype == data.dtype and y.chunks[0][0] == (8 if shards else 4)
        back = y.compute()
        part = y[3:17:2, 5:11].compute()  # a selection across chunks and shards
    assert back.dtype == data.dtype and bits(back) == bits(data)
    assert bits(part) == bits(data[3:17:2, 5:11])
    a = zarrdask.open_array(path)
    assert a.metadata.to_json()["data_type"] == name and bits(a[...]) == bits(data)


@pytest.mark.parametrize("name", ["bfloat16", "int4", "complex_bfloat16"])
def test_blocks_cutting_through_shards_and_regions(tmp_path, name):
    data = every_bit_pattern(name, (16, 12))
    path = str(tmp_path / "b.zarr")
    with dask.config.set(scheduler="threads"):
        zarrdask.to_zarr(da.from_array(data, chunks=(5, 7)), path, chunks=(2, 3), shards=(4, 6),
                         align="rechunk")
        assert bits(zarrdask.from_zarr(path, chunks=(3, 5)).compute()) == bits(data)
        # a region write into an existing array keeps the rest
        patch = every_bit_pattern(name, (4, 6))[::-1]
        zarrdask.to_zarr(da.from_array(patch, chunks=(4, 6)), path, mode="r+",
                         region=(slice(4, 8), slice(6, 12)))
        expected = data.copy()
        expected[4:8, 6:12] = patch
        assert bits(zarrdask.from_zarr(path).compute()) == bits(expected)


@pytest.mark.parametrize("name", ["bfloat16", "int4"])
def test_missing_chunks_read_as_the_fill_value(tmp_path, name):
    dtype = normalize_dtype(name)
    fill = dtype.type(-2)
    a = zarrdask.create_array(str(tmp_path / "c.zarr"), shape=(8, 8), dtype=dtype, chunks=(4, 4),
                              shards=(8, 8), fill_value=fill)
    a[:4, :4] = np.ones((4, 4), dtype)
    with dask.config.set(scheduler="threads"):
        got = zarrdask.from_zarr(str(tmp_path / "c.zarr"), chunks=(4, 4)).compute()
    expected = np.full((8, 8), fill, dtype)
    expected[:4, :4] = dtype.type(1)
    assert got.dtype == dtype and bits(got) == bits(expected)
