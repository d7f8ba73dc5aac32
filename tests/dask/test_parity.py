"""What users of dask's ``to_zarr`` / ``from_zarr`` expect of zarrdask's:
empty arrays, ``return_stored``, ``inline_array``, ``overwrite``, ``name``,
keywords that are never silently ignored, unknown chunk sizes, and dask's
warning type. (dask's own tests run routed to zarrdask in tests/dask_suite.)"""

from __future__ import annotations

import re
import warnings

import dask.array as da
import numpy as np
import pytest
from dask.array.core import PerformanceWarning

import zarrdask
from zarrdask.dask.graph import BlockSource
from zarrdask.errors import (
    AlignmentWarning,
    RegionEdgeWarning,
    ArrayMismatchError,
    NodeExistsError,
    UnknownChunkSizesError,
    ZarrdaskWarning,
)
from zarrdask.storage import MemoryStore


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("shape, chunks", [((0,), (1,)), ((0, 3), (1, 3)), ((3, 0), (3, 1)), ((0, 0), (1, 1))])
def test_empty_arrays_round_trip(tmp_path, zarr_format, shape, chunks):
    zarr = pytest.importorskip("zarr")
    x = da.ones(shape, dtype="f4")
    path = tmp_path / "e.zarr"
    arr = zarrdask.to_zarr(x, path, zarr_format=zarr_format)
    assert arr.shape == shape and arr.chunks == chunks  # a zero-length axis: chunks of 1, as zarr-python's
    y = zarrdask.from_zarr(path)
    assert y.shape == shape and y.dtype == np.dtype("f4")
    assert y.compute().shape == shape
    peer = zarr.open_array(path, mode="r")
    assert peer.shape == shape and peer.chunks == chunks and peer[...].shape == shape


@pytest.mark.parametrize("compute", [True, False])
def test_return_stored_gives_the_stored_values(compute):
    store = MemoryStore()
    x = da.from_array(np.arange(12) + 0.5, chunks=3)
    out = zarrdask.to_zarr(x, store, chunks=(3,), dtype="i4", compute=compute, return_stored=True)
    assert isinstance(out, da.Array) and out.chunks == x.chunks
    stored = zarrdask.open_array(store)
    assert stored.nchunks_initialized == (4 if compute else 0)  # compute=False: nothing written yet
    np.testing.assert_array_equal(out.compute(), np.arange(12))  # as stored: cast to i4
    np.testing.assert_array_equal(stored[...], np.arange(12))
    if compute:  # without return_stored: the array written
        assert isinstance(zarrdask.to_zarr(x, store, chunks=(3,), mode="w"), zarrdask.Array)


def test_return_stored_into_a_region_is_chunked_as_the_blocks_written():
    a = zarrdask.create_array(MemoryStore(), shape=(10,), dtype="i4", chunks=(4,), fill_value=-1)
    with pytest.warns(RegionEdgeWarning, match=r"region \(3:9\)"):
        out = zarrdask.to_zarr(da.arange(6, chunks=2), a, region=(slice(3, 9),), align="rechunk", return_stored=True)
    assert out.chunks == ((5, 1),)  # the blocks after aligning them with the chunks (edges at 8)
    np.testing.assert_array_equal(out.compute(), np.arange(6))
    np.testing.assert_array_equal(a[...], [-1, -1, -1, 0, 1, 2, 3, 4, 5, -1])


def test_inline_array_shapes_the_graph():
    a = zarrdask.create_array(MemoryStore(), shape=(6,), dtype="i4", chunks=(2,), data=np.arange(6))
    inlined, keyed = zarrdask.from_zarr(a), zarrdask.from_zarr(a, inline_array=False)
    graph, keyed_graph = dict(inlined.dask), dict(keyed.dask)
    assert len(graph) == 3 and not any(isinstance(v, BlockSource) for v in graph.values())
    assert len(keyed_graph) == 4
    assert keyed_graph["original-" + keyed.name] is a  # the array given, as dask's graph holds it
    zarr = pytest.importorskip("zarr")
    z = zarr.array(np.arange(6), chunks=(2,))
    from_z = zarrdask.from_zarr(z, inline_array=False)
    assert dict(from_z.dask)["original-" + from_z.name] is z
    np.testing.assert_array_equal(from_z.compute(), np.arange(6))  # read through zarrdask's engine all the same
    by_path = zarrdask.from_zarr(a.store, inline_array=False)
    assert isinstance(dict(by_path.dask)["original-" + by_path.name], BlockSource)
    assert inlined.name != keyed.name
    assert zarrdask.from_zarr(a, inline_array=True).name == inlined.name
    for x in (inlined, keyed):
        np.testing.assert_array_equal(x.compute(), np.arange(6))


def test_overwrite_means_mode_w_or_w_minus(tmp_path):
    path = tmp_path / "o.zarr"
    zarrdask.to_zarr(da.zeros((4, 4), chunks=2), path)
    with pytest.raises(NodeExistsError):
        zarrdask.to_zarr(da.ones((4, 4), chunks=2), path, overwrite=False)
    with pytest.raises(NodeExistsError):  # the default, as dask's (its mode "a" creates with overwrite=False)
        zarrdask.to_zarr(da.ones((4, 4), chunks=2), path)
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], np.zeros((4, 4)))
    arr = zarrdask.to_zarr(da.ones((6, 6), chunks=3), path, overwrite=True)
    assert arr.shape == (6, 6) and arr.chunks == (3, 3)
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], np.ones((6, 6)))
    zarrdask.to_zarr(da.ones((6, 6), chunks=3), path, mode="w", overwrite=True)  # the same, said twice


@pytest.mark.parametrize("mode, overwrite", [("a", True), ("r+", True), ("w", False), ("a", False)])
def test_overwrite_contradicting_mode_is_refused(tmp_path, mode, overwrite):
    path = tmp_path / "o.zarr"
    zarrdask.to_zarr(da.zeros(4, chunks=2), path)
    expected = re.escape(f"overwrite={overwrite} means mode ") + ".*" + re.escape(f"found mode='{mode}'")
    with pytest.raises(ValueError, match=expected):
        zarrdask.to_zarr(da.ones(4, chunks=2), path, mode=mode, overwrite=overwrite)
    np.testing.assert_array_equal(zarrdask.open_array(path)[...], np.zeros(4))


def test_overwrite_with_an_open_array_or_not_a_bool_is_refused():
    a = zarrdask.create_array(MemoryStore(), shape=(4,), dtype="f8", chunks=(2,))
    with pytest.raises(ValueError, match="overwrite=True is for creating an array"):
        zarrdask.to_zarr(da.ones(4, chunks=2), a, overwrite=True)
    with pytest.raises(TypeError, match="overwrite must be True or False, found 'yes'"):
        zarrdask.to_zarr(da.ones(4, chunks=2), MemoryStore(), overwrite="yes")


def test_an_open_array_is_written_into_by_default():
    zarr = pytest.importorskip("zarr")
    a = zarrdask.create_array(MemoryStore(), shape=(4,), dtype="f8", chunks=(2,))
    zarrdask.to_zarr(da.ones(4, chunks=2), a)
    np.testing.assert_array_equal(a[...], np.ones(4))
    z = zarr.zeros((4,), chunks=(2,), dtype="f8")
    zarrdask.to_zarr(da.ones(4, chunks=2), z)
    np.testing.assert_array_equal(z[...], np.ones(4))
    with pytest.raises(ValueError, match="takes mode 'a' or 'r\\+'"):
        zarrdask.to_zarr(da.ones(4, chunks=2), a, mode="w")


def test_mode_r_is_refused():
    with pytest.raises(ValueError, match="Cannot use mode 'r' to write"):
        zarrdask.to_zarr(da.ones(4, chunks=2), MemoryStore(), mode="r")


def test_region_for_a_new_array_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="region= writes into an existing array"):
        zarrdask.to_zarr(da.ones(2, chunks=2), tmp_path / "n.zarr", region=(slice(0, 2),))
    with pytest.raises(ValueError, match="there is none"):
        zarrdask.to_zarr(da.ones(2, chunks=2), tmp_path / "n.zarr", mode="a", region=(slice(0, 2),))


def test_name_is_the_arrays_path():
    store = MemoryStore()
    zarrdask.to_zarr(da.zeros(4, chunks=2), store, name="g/a")
    zarrdask.to_zarr(da.ones(4, chunks=2), store, name="g/a", mode="r+")
    np.testing.assert_array_equal(zarrdask.open_array(store, path="g/a")[...], np.ones(4))
    with pytest.raises(TypeError, match="name= or path=, not both"):
        zarrdask.to_zarr(da.ones(4, chunks=2), store, name="g/a", path="g/a", mode="r+")


def _existing(store):
    return zarrdask.create_array(store, shape=(4, 4), dtype="i4", chunks=(2, 2), fill_value=7)


def test_unknown_keyword_is_a_type_error_when_creating(tmp_path):
    with pytest.raises(TypeError, match="unexpected keyword arguments 'bogus'"):
        zarrdask.to_zarr(da.ones(4, chunks=2), tmp_path / "u.zarr", bogus=1)
    assert not (tmp_path / "u.zarr").exists()
    with pytest.raises(TypeError, match="'data', 'shape'"):  # create_array's, but to_zarr sets them
        zarrdask.to_zarr(da.ones(4, chunks=2), tmp_path / "u.zarr", shape=(4,), data=np.ones(4))


@pytest.mark.parametrize("how", ["a", "r+", "array"])
def test_unknown_keyword_is_a_type_error_when_the_array_exists(how):
    store = MemoryStore()
    a = _existing(store)
    target, mode = (a, None) if how == "array" else (store, how)
    with pytest.raises(TypeError, match="unexpected keyword arguments 'compresor'"):
        zarrdask.to_zarr(da.ones((4, 4), chunks=2), target, mode=mode, compresor=None)
    np.testing.assert_array_equal(a[...], np.full((4, 4), 7))


@pytest.mark.parametrize("how", ["a", "r+", "array"])
def test_creation_keywords_must_match_the_existing_array(how):
    store = MemoryStore()
    a = _existing(store)
    target, mode = (a, None) if how == "array" else (store, how)
    zarrdask.to_zarr(da.ones((4, 4), chunks=2), target, mode=mode, chunks=(2, 2), dtype="int32", fill_value=7,
                     zarr_format=3, dimension_names=None, order="C", shards=None, chunk_grid="regular")
    zarrdask.to_zarr(da.ones((4, 4), chunks=2), target, mode=mode, chunks=2)
    zarrdask.to_zarr(da.ones((4, 4), chunks=2), target, mode=mode, chunks="dask")  # the blocks are the chunks
    np.testing.assert_array_equal(a[...], np.ones((4, 4)))
    a[...] = 7
    with pytest.raises(ArrayMismatchError, match=r"chunks=\(4, 4\) \(the array's chunks: \(2, 2\)\), "
                                                 r"fill_value=0 \(the array's fill_value: 7\)") as e:
        zarrdask.to_zarr(da.ones((4, 4), chunks=2), target, mode=mode, chunks=(4, 4), fill_value=0)
    assert isinstance(e.value, ValueError)
    with pytest.raises(ArrayMismatchError, match="dtype='f8'.*shards=.*zarr_format=2"):
        zarrdask.to_zarr(da.ones((4, 4), chunks=2), target, mode=mode, dtype="f8", shards=(4, 4), zarr_format=2)
    with pytest.raises(ArrayMismatchError, match="compressors=, attributes= only apply when creating an array"):
        zarrdask.to_zarr(da.ones((4, 4), chunks=2), target, mode=mode, compressors=None, attributes={"a": 1})
    np.testing.assert_array_equal(a[...], np.full((4, 4), 7))  # nothing written


@pytest.mark.parametrize("how", ["a", "array"])
def test_write_empty_chunks_applies_to_an_existing_array(how):
    store = MemoryStore()
    a = _existing(store)
    target, mode = (a, None) if how == "array" else (store, how)
    zarrdask.to_zarr(da.full((4, 4), 7, chunks=2), target, mode=mode, write_empty_chunks=True)
    assert a.nchunks_initialized == 4
    zarrdask.to_zarr(da.full((4, 4), 7, chunks=2), target, mode=mode, write_empty_chunks=False)
    assert a.nchunks_initialized == 0


def test_unknown_chunk_sizes_are_a_value_error_naming_the_fix(tmp_path):
    x = da.from_array(np.arange(10), chunks=3)
    y = x[x > 4]
    with pytest.raises(UnknownChunkSizesError, match=r"unknown chunk sizes: found NaN sizes along axis 0 "
                                                     r".*Call x\.compute_chunk_sizes\(\) first") as e:
        zarrdask.to_zarr(y, tmp_path / "n.zarr")
    assert isinstance(e.value, ValueError)
    assert not (tmp_path / "n.zarr").exists()  # refused before anything was created
    y.compute_chunk_sizes()
    zarrdask.to_zarr(y, tmp_path / "n.zarr", chunks="dask")
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "n.zarr")[...], np.arange(5, 10))


def test_alignment_warning_is_dasks_performance_warning():
    assert issubclass(AlignmentWarning, PerformanceWarning)
    assert issubclass(AlignmentWarning, ZarrdaskWarning) and issubclass(AlignmentWarning, UserWarning)
    a = zarrdask.create_array(MemoryStore(), shape=(12,), dtype="i8", chunks=(3,), shards=(6,))
    with pytest.warns(PerformanceWarning, match=r"The input Dask array will be rechunked along axis 0;") as record:
        zarrdask.to_zarr(da.arange(12, chunks=5), a)
    assert record[0].category is AlignmentWarning
    np.testing.assert_array_equal(a[...], np.arange(12))


def test_alignment_warning_uses_dasks_words_for_irregular_blocks():
    x = da.zeros((6, 2), chunks=((2, 1, 1, 2), 1))
    with pytest.warns(UserWarning, match=r"The array uses irregular chunk sizes: the input Dask array will be "
                                         r"rechunked along axis 0;"):
        zarrdask.to_zarr(x, MemoryStore())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zarrdask.to_zarr(da.zeros((7, 2), chunks=((2, 2, 2, 1), 1)), MemoryStore())  # regular: no rechunk


def test_chunks_dask_leaves_out_empty_blocks():
    x = da.from_array(np.arange(12), chunks=3)
    y = x[(x < 2) | (x > 5)]
    y.compute_chunk_sizes()
    assert y.chunks == ((2, 0, 3, 3),)  # boolean indexing leaves an empty block
    arr = zarrdask.to_zarr(y, MemoryStore(), chunks="dask")
    assert arr.chunks == ((2, 3, 3),)  # a rectilinear grid of the blocks that hold something
    np.testing.assert_array_equal(arr[...], [0, 1, 6, 7, 8, 9, 10, 11])


def test_region_edges_inside_chunks_warn_as_dask_warns():
    from dask.array.core import PerformanceWarning

    a = zarrdask.create_array(MemoryStore(), shape=(4, 4), dtype="i8", chunks=(2, 2), fill_value=0)
    x = da.arange(16).reshape(4, 4).rechunk(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zarrdask.to_zarr(x[:2, :2], a, region=(slice(0, 2), slice(0, 2)))  # on chunk boundaries: silent
    with pytest.warns(RegionEdgeWarning, match=r"region \(1:4, 2:3\).*axis 0, 1") as record, \
            pytest.warns(AlignmentWarning, match="cut through chunks"):
        zarrdask.to_zarr(x[:3, 3:4], a, region=(slice(1, 4), slice(2, 3)))
    assert issubclass(record[0].category, PerformanceWarning)
    np.testing.assert_array_equal(a[...], [[0, 1, 0, 0], [4, 5, 3, 0], [0, 0, 7, 0], [0, 0, 11, 0]])
