"""The DataTree writer: ``zarrdask.xarray.to_zarr(tree, ...)`` and
``tree.zarrdask.to_zarr(...)`` write what xarray's ``DataTree.to_zarr`` writes,
read back identical by xarray's own engine="zarr"; dask variables one task per
shard, on the threaded scheduler and on a distributed cluster."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

import dask.array as da  # noqa: E402

import zarrdask  # noqa: E402
from zarrdask.errors import AlignmentWarning, ContainsGroupError  # noqa: E402
from zarrdask.xarray import to_zarr  # noqa: E402

FORMATS = [2, 3]


def _tree(chunked: bool = False, first_time: int = 0) -> xr.DataTree:
    rng = np.random.default_rng(first_time)
    root = xr.Dataset({"t2m": (("time", "lat"), rng.random((6, 4)))},
                      coords={"time": np.arange(first_time, first_time + 6), "lat": [10.0, 20.0, 30.0, 40.0]},
                      attrs={"title": "root"})
    ocean = xr.Dataset({"sst": (("time", "lat"), rng.random((6, 4)).astype("f4"))}, attrs={"realm": "ocean"})
    deep = xr.Dataset({"depth": ("z", [1, 5, 10]), "salt": (("time", "z"), rng.random((6, 3)))})
    tree = xr.DataTree.from_dict({"/": root, "/ocean": ocean, "/ocean/deep": deep, "/empty": xr.Dataset()})
    return tree.chunk({"time": 2}) if chunked else tree


def _open(path, **kwargs) -> xr.DataTree:
    return xr.open_datatree(path, engine="zarr", **kwargs).compute()


@pytest.mark.parametrize("zarr_format", FORMATS)
@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("consolidated", [None, False])
def test_tree_round_trips_through_xarrays_engine(tmp_path, zarr_format, chunked, consolidated):
    tree = _tree(chunked)
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    to_zarr(tree, ours, zarr_format=zarr_format, consolidated=consolidated)
    tree.to_zarr(theirs, zarr_format=zarr_format, consolidated=consolidated)
    opened = {} if consolidated is None else {"consolidated": consolidated}  # none written: none looked for
    xr.testing.assert_identical(_open(ours, **opened), _open(theirs, **opened))
    xr.testing.assert_identical(_open(ours, **opened), tree.compute())
    xr.testing.assert_identical(xr.open_datatree(ours, engine="zarrdask", **opened).compute(), tree.compute())
    assert zarrdask.open_group(str(ours)).zarr_format == zarr_format
    if consolidated is False:
        with pytest.raises(zarrdask.errors.MetadataError, match="no consolidated metadata"):
            zarrdask.open_group(str(ours), consolidated=True)
    else:
        zarrdask.open_group(str(ours), consolidated=True)


def test_accessor_and_return_value(tmp_path):
    group = _tree().zarrdask.to_zarr(tmp_path / "a.zarr")
    assert isinstance(group, zarrdask.Group)
    assert sorted(name for name, _ in group.members(max_depth=None)) == [
        "empty", "lat", "ocean", "ocean/deep", "ocean/deep/depth", "ocean/deep/salt", "ocean/sst", "t2m", "time"]


@pytest.mark.parametrize("zarr_format", FORMATS)
def test_inherited_coordinates(tmp_path, zarr_format):
    tree = _tree()
    to_zarr(tree, tmp_path / "no.zarr", zarr_format=zarr_format)
    to_zarr(tree, tmp_path / "yes.zarr", zarr_format=zarr_format, write_inherited_coords=True)
    no, yes = zarrdask.open_group(str(tmp_path / "no.zarr")), zarrdask.open_group(str(tmp_path / "yes.zarr"))
    assert "time" not in dict(no["ocean"].members()) and "time" in dict(yes["ocean"].members())
    assert "lat" in dict(yes["ocean/deep"].members())
    for path in ("no.zarr", "yes.zarr"):
        xr.testing.assert_identical(_open(tmp_path / path), tree)
    # a child opened alone gets its inherited coordinates only where they were written
    assert "time" in xr.open_dataset(tmp_path / "yes.zarr", group="ocean", engine="zarr").coords
    assert "time" not in xr.open_dataset(tmp_path / "no.zarr", group="ocean", engine="zarr").coords


def test_encoding_per_group(tmp_path):
    tree = _tree()
    enc = {"/": {"t2m": {"chunks": (3, 2)}}, "/ocean/deep": {"salt": {"chunks": (1, 3), "dtype": "f4"}}}
    to_zarr(tree, tmp_path / "e.zarr", encoding=enc)
    assert zarrdask.open_array(str(tmp_path / "e.zarr"), path="t2m").chunks == (3, 2)
    salt = zarrdask.open_array(str(tmp_path / "e.zarr"), path="ocean/deep/salt")
    assert salt.chunks == (1, 3) and salt.dtype == np.dtype("f4")
    with pytest.raises(ValueError, match="/nowhere"):
        to_zarr(tree, tmp_path / "f.zarr", encoding={"/nowhere": {}})
    assert not (tmp_path / "f.zarr").exists()


def test_a_refused_group_writes_nothing_at_all(tmp_path):
    tree = _tree()
    bad = {"/ocean/deep": {"salt": {"chunks": (1, 2.5)}}}  # only the last group is wrong
    with pytest.raises(TypeError, match="chunks"):
        to_zarr(tree, tmp_path / "b.zarr", encoding=bad)
    assert not (tmp_path / "b.zarr").exists() or not any((tmp_path / "b.zarr").iterdir())


def test_modes(tmp_path):
    path = tmp_path / "m.zarr"
    tree = _tree()
    to_zarr(tree, path)
    with pytest.raises(ContainsGroupError):
        to_zarr(tree, path)  # "w-", the default
    smaller = xr.DataTree.from_dict({"/": xr.Dataset({"only": ("x", [1, 2])})})
    to_zarr(smaller, path, mode="w")  # replaces the whole tree
    xr.testing.assert_identical(_open(path), smaller)
    to_zarr(xr.DataTree.from_dict({"/new": xr.Dataset({"n": ("y", [3.0])})}), path, mode="a")  # adds a group
    assert set(_open(path).groups) == {"/", "/new"}
    # r+: into existing arrays only
    to_zarr(xr.DataTree.from_dict({"/new": xr.Dataset({"n": ("y", [4.0])})}), path, mode="r+")
    assert list(_open(path)["/new"].n.values) == [4.0]
    with pytest.raises(ValueError, match="existing arrays only"):
        to_zarr(xr.DataTree.from_dict({"/new": xr.Dataset({"other": ("y", [4.0])})}), path, mode="r+")


def test_append_along_a_dimension_of_some_groups(tmp_path):
    path = tmp_path / "a.zarr"
    first = _tree()
    to_zarr(first, path)
    more = _tree(first_time=6)
    to_zarr(more, path, append_dim="time")
    back = _open(path)
    assert back.sizes["time"] == 12
    np.testing.assert_array_equal(back["/ocean"].sst.values[6:], more["/ocean"].sst.values)
    np.testing.assert_array_equal(back["/ocean/deep"]["depth"].values, [1, 5, 10])  # no "time": rewritten as is


def test_compute_false_writes_the_metadata_of_every_group_now(tmp_path):
    path = tmp_path / "c.zarr"
    tree = _tree(chunked=True)
    delayed = to_zarr(tree, path, compute=False)
    group = zarrdask.open_group(str(path))
    assert group["ocean/deep/salt"].nchunks_initialized == 0
    assert group["ocean/sst"].shape == (6, 4)
    delayed.compute()
    xr.testing.assert_identical(_open(path), tree.compute())


def test_zip_store(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "t.zip"
    to_zarr(_tree(), str(path))
    back = xr.open_datatree(zarr.storage.ZipStore(path, mode="r"), engine="zarr").compute()
    xr.testing.assert_identical(back, _tree())


def test_dask_variables_are_aligned_to_shards(tmp_path):
    tree = _tree().chunk({"time": 3})
    enc = {"/ocean": {"sst": {"chunks": (1, 4), "shards": (2, 4)}}}
    with pytest.warns(AlignmentWarning):
        to_zarr(tree, tmp_path / "s.zarr", encoding=enc)
    xr.testing.assert_identical(_open(tmp_path / "s.zarr"), tree.compute())
    with pytest.raises(ValueError, match="cut through"):
        to_zarr(tree, tmp_path / "t.zarr", encoding=enc, safe_chunks=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AlignmentWarning)
        to_zarr(tree, tmp_path / "u.zarr", encoding=enc, align_chunks=True)


@pytest.mark.slow
def test_tree_with_dask_variables_written_on_a_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    tree = _tree().chunk({"time": 3})  # cuts through every shard of (2, 4)
    enc = {"/ocean": {"sst": {"chunks": (1, 2), "shards": (2, 4)}}, "/": {"t2m": {"chunks": (2, 2)}}}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        with pytest.warns(AlignmentWarning):
            to_zarr(tree, tmp_path / "d.zarr", encoding=enc)
    xr.testing.assert_identical(_open(tmp_path / "d.zarr"), tree.compute())
