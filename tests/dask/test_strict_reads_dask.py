"""Strict reads through dask: from_zarr graphs carry read_missing_chunks, and
compute() raises ChunkNotFoundError for a missing chunk or empty inner chunk."""

from __future__ import annotations

import os

import dask
import numpy as np
import pytest

import zarrdask
from zarrdask.errors import ChunkNotFoundError

DATA = np.arange(1, 13 * 11 + 1, dtype="i4").reshape(13, 11)


@pytest.fixture(params=["v2", "v3", "sharded"])
def damaged(request, tmp_path):
    """An array with a chunk deleted (sharded: an inner chunk left out of its shard)."""
    kw = {"v2": dict(zarr_format=2, chunks=(4, 4)), "v3": dict(chunks=(4, 4)),
          "sharded": dict(chunks=(2, 2), shards=(4, 4))}[request.param]
    path = tmp_path / "a.zarr"
    a = zarrdask.create_array(path, shape=DATA.shape, dtype="i4", fill_value=0, **kw)
    a[...] = DATA
    if request.param == "sharded":
        a[4:6, 4:6] = 0  # the inner chunk (0, 0) of shard (1, 1): an empty index entry
    else:
        os.remove(path / a.layout.chunk_key((1, 1)))
    return path


@pytest.mark.parametrize("inline_array", [True, False])
def test_compute_raises(damaged, inline_array):
    strict = zarrdask.open_array(damaged, mode="r", read_missing_chunks=False)
    with pytest.raises(ChunkNotFoundError, match="not stored"):
        zarrdask.from_zarr(strict, inline_array=inline_array).compute()
    with pytest.raises(ChunkNotFoundError):
        zarrdask.from_zarr(damaged, read_missing_chunks=False, inline_array=inline_array).compute()
    with pytest.raises(ChunkNotFoundError):  # one block of 2 x 2, inside the missing chunk
        zarrdask.from_zarr(strict, chunks=(2, 2))[4:6, 4:6].compute()
    # blocks not touching it are served; the default fills
    np.testing.assert_array_equal(zarrdask.from_zarr(strict)[:4].compute(), DATA[:4])
    assert zarrdask.from_zarr(damaged).compute()[5, 5] == 0
    # from_zarr's keyword overrides the array's own value
    assert zarrdask.from_zarr(strict, read_missing_chunks=True).compute()[5, 5] == 0


def test_the_graph_carries_the_value_of_when_it_was_built(damaged):
    with zarrdask.config.set(read_missing_chunks=False):
        x = zarrdask.from_zarr(damaged)
    y = zarrdask.from_zarr(damaged)
    assert x.name != y.name
    with pytest.raises(ChunkNotFoundError):
        x.compute()
    assert y.compute()[5, 5] == 0


def test_process_scheduler(damaged):
    # tasks unpickle the array in other processes, whose config is the default
    x = zarrdask.from_zarr(damaged, read_missing_chunks=False)
    with dask.config.set(scheduler="processes", num_workers=2):
        with pytest.raises(ChunkNotFoundError):
            x.compute()
        np.testing.assert_array_equal(x[:4].compute(), DATA[:4])
