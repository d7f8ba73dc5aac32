"""Arrays and groups end to end on remote stores (a real moto S3 server and a
local HTTP server on 127.0.0.1) and in zip files, reached by URL or path."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import ReadOnlyError
from zarrdask.storage import CountingStore, FsspecStore, ZipStore

pytestmark = pytest.mark.network


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_s3_roundtrip(s3_bucket, s3_storage_options, zarr_format):
    url = f"s3://{s3_bucket}/data.zarr"
    data = np.arange(20 * 30, dtype="f4").reshape(20, 30)
    root = zarrdask.open_group(url, mode="w", zarr_format=zarr_format, storage_options=s3_storage_options)
    a = root.create_array("x", shape=data.shape, dtype=data.dtype, chunks=(8, 8), attributes={"u": "m"})
    a[...] = data
    again = zarrdask.open_group(url, mode="r", storage_options=s3_storage_options)
    assert list(again.keys()) == ["x"]
    np.testing.assert_array_equal(again["x"][...], data)
    np.testing.assert_array_equal(again["x"][3:17:2, 5], data[3:17:2, 5])
    assert again["x"].attrs["u"] == "m"


def test_s3_reads_are_one_batched_call(s3_bucket, s3_storage_options):
    url = f"s3://{s3_bucket}/batched.zarr"
    a = zarrdask.create_array(url, shape=(40,), dtype="i2", chunks=(4,), storage_options=s3_storage_options)
    a[...] = np.arange(40)
    store = CountingStore(FsspecStore(url, storage_options=s3_storage_options, read_only=True))
    b = zarrdask.open_array(store, mode="r")
    store.reset()
    np.testing.assert_array_equal(b[...], np.arange(40))
    assert store.counts["get_many_calls"] == 1 and store.counts["keys_requested"] == 10


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_http_read_only(http_server, zarr_format):
    name = f"h{uuid.uuid4().hex}.zarr"
    data = np.linspace(0, 1, 64).reshape(8, 8)
    src = zarrdask.open_group(http_server.root / name, mode="w", zarr_format=zarr_format)
    src.create_array("sub/x", shape=(8, 8), dtype="f8", chunks=(3, 3), data=data)
    url = f"{http_server.url}/{name}"
    g = zarrdask.open_group(url, mode="r")
    a = g["sub/x"]
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(zarrdask.open_array(url, path="sub/x")[2:5, ::3], data[2:5, ::3])
    with pytest.raises(ReadOnlyError):
        a[0, 0] = 1.0


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zip_path(tmp_path, zarr_format):
    path = tmp_path / "data.zip"
    data = np.arange(100, dtype="u2").reshape(10, 10)
    a = zarrdask.create_array(str(path), path="a", shape=(10, 10), dtype="u2", chunks=(4, 4),
                              zarr_format=zarr_format, data=data)
    a[0, 0] = 99  # an overwrite inside the zip
    a.store.close()
    ref = data.copy()
    ref[0, 0] = 99
    b = zarrdask.open_array(str(path), path="a", mode="r")
    assert isinstance(b.store, ZipStore)
    np.testing.assert_array_equal(b[...], ref)
    # zarr-python reads the zip too
    import zarr

    zs = zarr.storage.ZipStore(str(path), mode="r")
    np.testing.assert_array_equal(zarr.open_array(zs, path="a", mode="r")[...], ref)
    zs.close()
