"""ZOM specs with a rectilinear chunk grid: from_array, from_zarr/to_zarr, flat form, JSON Schema."""

from __future__ import annotations

import dask.array as da
import pytest

import zarrdask
from zarrdask import zom
from zarrdask.errors import MetadataError
from zarrdask.storage import MemoryStore

MONTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def test_from_array_with_dask_chunks():
    x = da.zeros((365, 10), chunks=(MONTHS, 5))
    spec = zom.ArraySpec.from_array(x, chunks=x.chunks)
    assert spec.to_json()["chunk_grid"] == {
        "name": "rectilinear",
        "configuration": {"kind": "inline", "chunk_shapes": [[31, 28, 31, 30, 31, 30, [31, 2], 30, 31, 30, 31], 5]},
    }
    assert zom.schema_errors(spec.to_json()) == []
    # regular dask chunks (a smaller last block) give a regular grid
    y = da.zeros((59, 10), chunks=((31, 28), 5))
    assert zom.ArraySpec.from_array(y, chunks=y.chunks).to_json()["chunk_grid"]["name"] == "regular"
    with pytest.raises(ValueError, match="zarr_format=3"):
        zom.ArraySpec.from_array(x, chunks=x.chunks, zarr_format=2)


def test_round_trip_through_a_store_and_the_flat_form():
    x = da.zeros((365, 10), chunks=(MONTHS, 5))
    store = MemoryStore()
    arr = zom.ArraySpec.from_array(x, chunks=x.chunks)
    zom.to_zarr(arr, store, path="t")
    assert zarrdask.open_array(store, path="t").chunks == (MONTHS, (5, 5))
    assert zom.from_zarr(store, path="t") == arr
    flat = zom.from_zarr(store).to_flat()
    assert flat["/t"].chunk_grid["name"] == "rectilinear"
    assert zom.from_flat(flat).to_flat() == flat


def test_schema_and_to_zarr_refuse_bad_edges():
    x = da.zeros((365, 10), chunks=(MONTHS, 5))
    doc = zom.ArraySpec.from_array(x, chunks=x.chunks).to_json()
    doc["chunk_grid"]["configuration"]["chunk_shapes"][0] = [31, 28]
    assert zom.schema_errors(doc) == []  # coverage of the shape is beyond a JSON Schema
    with pytest.raises(MetadataError, match="chunk_shapes\\[0\\]"):
        zom.to_zarr(zom.from_json(doc), MemoryStore())
    doc["chunk_grid"]["configuration"]["chunk_shapes"][0] = [[31, 0]]
    assert any("chunk_shapes/0/0" in e for e in zom.schema_errors(doc))
