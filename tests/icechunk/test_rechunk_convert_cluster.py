"""``zarrdask.rechunk`` and ``zarrdask.convert`` into a writable icechunk session
on a ``distributed`` cluster of worker processes: the tasks write through forks
of the session, exactly the successful tasks' forks are merged, the user
commits; a task that fails once (after writing part of its chunks and a chunk
another task owns) and is retried leaves no duplicate or lost chunk; an
intermediate stays outside the session; ``resume=True`` is refused."""

from __future__ import annotations

import os

import dask
import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import IcechunkSessionError, ResumeRefusedError
from zarrdask.storage import IcechunkSessionStore

from .conftest import fail_first_chunk_write, restore_set_many

icechunk = pytest.importorskip("icechunk")
pytest.importorskip("distributed")

DATA = np.random.default_rng(7).random((48, 40)).astype("f4")


def _keys(session, path):
    """The stored objects of the array at ``path``, as the session lists them (duplicates kept)."""
    return sorted(zarrdask.open_array(session, path=path).stored_keys())


def _local_source(tmp_path):
    return zarrdask.create_array(str(tmp_path / "src"), shape=DATA.shape, chunks=(1, 40), dtype="f4", data=DATA)


def _icechunk_source(tmp_path):
    """The source array in its own repository, read through a read-only session (it pickles)."""
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "source-repo")))
    session = repo.writable_session("main")
    zarrdask.create_array(session, path="src", shape=DATA.shape, chunks=(1, 40), dtype="f4", data=DATA)
    session.commit("source")
    return zarrdask.open_array(repo.readonly_session("main"), path="src")


@pytest.mark.parametrize("source_kind", ["local", "icechunk"])
@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
def test_rechunk_into_a_session_from_the_cluster(client, repo, tmp_path, source_kind, sharded):
    source = _local_source(tmp_path) if source_kind == "local" else _icechunk_source(tmp_path)
    shards = (48, 16) if sharded else None
    session = repo.writable_session("main")
    plan = zarrdask.rechunk(source, (24, 8), session, max_mem="1MB", target_shards=shards, target_path="a/x")
    assert plan.nstages == 1
    target = plan.execute(progress=False)
    np.testing.assert_array_equal(target[...], DATA)  # merged into the session before execute returned
    session.commit("rechunked")
    ro = repo.readonly_session("main")
    back = zarrdask.open_array(ro, path="a/x")
    assert back.chunks == (24, 8) and back.shards == shards
    np.testing.assert_array_equal(back[...], DATA)
    np.testing.assert_array_equal(zarrdask.from_zarr(ro, path="a/x").compute(), DATA)  # on the workers
    grid = (1, 3) if sharded else (2, 5)
    assert _keys(ro, "a/x") == sorted(f"a/x/c/{i}/{j}" for i in range(grid[0]) for j in range(grid[1]))


def test_rechunk_through_an_intermediate_outside_the_session(client, repo, tmp_path):
    source = _local_source(tmp_path)
    temp = tmp_path / "temp"
    session = repo.writable_session("main")
    plan = zarrdask.rechunk(source, (48, 4), session, max_mem="4kB", temp_store=str(temp), target_path="x")
    assert plan.nstages == 2
    plan.execute(progress=False)
    session.commit("two stages")
    ro = repo.readonly_session("main")
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="x")[...], DATA)
    assert _keys(ro, "x") == sorted(f"x/c/0/{j}" for j in range(10))
    assert not [f for _, _, files in os.walk(temp) for f in files if f != "zarr.json"]  # intermediate removed
    assert sorted(zarrdask.open_group(ro).array_keys()) == ["x"]  # nothing of it entered the session

    other = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "other")))
    scratch = other.writable_session("main")
    session = repo.writable_session("main")
    with pytest.raises(IcechunkSessionError, match="temp_store .* writable icechunk session"):
        zarrdask.rechunk(source, (48, 4), session, max_mem="4kB", temp_store=scratch, target_path="y").execute(
            progress=False)
    assert not session.has_uncommitted_changes and not scratch.has_uncommitted_changes  # nothing written


def test_group_rechunk_lazy_graph_merged_when_computed(client, repo, tmp_path):
    src = zarrdask.open_group(str(tmp_path / "g"), mode="w", attributes={"title": "t"})
    src.create_array("a", shape=DATA.shape, chunks=(1, 40), dtype="f4", data=DATA)
    src.create_array("sub/b", shape=(40,), chunks=(5,), dtype="i8", data=np.arange(40))
    session = repo.writable_session("main")
    graph = zarrdask.rechunk(src, {"a": (16, 40), "sub/b": (20,)}, session, max_mem="1MB").to_dask()
    assert zarrdask.open_array(session, path="a").nchunks_initialized == 0  # metadata only, so far
    dask.compute(graph)  # on the cluster; the value merges the forks when it comes back
    session.commit("group")
    ro = repo.readonly_session("main")
    group = zarrdask.open_group(ro)
    assert group.attrs.asdict() == {"title": "t"}
    np.testing.assert_array_equal(group["a"][...], DATA)
    np.testing.assert_array_equal(group["sub/b"][...], np.arange(40))
    assert _keys(ro, "sub/b") == ["sub/b/c/0", "sub/b/c/1"]


def test_rechunk_into_a_session_on_the_threaded_scheduler(client, repo, tmp_path):
    session = repo.writable_session("main")
    target = zarrdask.rechunk(_local_source(tmp_path), (12, 40), session, max_mem="1MB", target_path="t").execute(
        progress=False, scheduler="threads")
    np.testing.assert_array_equal(target[...], DATA)
    session.commit("threads")
    np.testing.assert_array_equal(zarrdask.open_array(repo.readonly_session("main"), path="t")[...], DATA)


def test_dataset_rechunk_into_a_session_from_the_cluster(client, repo, tmp_path):
    ds = xr.Dataset({"t": (("time", "x"), DATA)}, coords={"time": np.arange(48)}, attrs={"title": "d"})
    ds.to_zarr(str(tmp_path / "ds.zarr"), zarr_format=3, consolidated=False, encoding={"t": {"chunks": (1, 40)}})
    source = xr.open_dataset(str(tmp_path / "ds.zarr"), engine="zarrdask", chunks=None, consolidated=False)
    session = repo.writable_session("main")
    plan = zarrdask.rechunk(source, {"time": 48, "x": 4}, session, max_mem="8kB", temp_store=str(tmp_path / "tmp"),
                            target_path="d")
    assert plan.nstages == 2
    plan.execute(progress=False)
    session.commit("dataset")
    back = xr.open_dataset(repo.readonly_session("main"), engine="zarrdask", group="d").load()
    xr.testing.assert_identical(back, ds)
    assert back.t.encoding["chunks"] == (48, 4)


def _v2_dataset(tmp_path):
    """A v2 hierarchy written by xarray through zarr-python: two variables, a coordinate, attributes."""
    rng = np.random.default_rng(1)
    ds = xr.Dataset(
        {"temp": (("time", "x"), rng.random((12, 10)).astype("f4"), {"units": "K"}),
         "count": (("x",), np.arange(10, dtype="i2"), {"long_name": "count"})},
        coords={"time": np.arange(12), "x": np.arange(10) * 0.5}, attrs={"title": "v2 source"},
    )
    path = str(tmp_path / "v2.zarr")
    ds.to_zarr(path, zarr_format=2, consolidated=False, encoding={"temp": {"chunks": (3, 5)}})
    return ds, path


def test_convert_v2_hierarchy_into_a_session_from_the_cluster(client, repo, tmp_path):
    ds, path = _v2_dataset(tmp_path)
    session = repo.writable_session("main")
    result = zarrdask.convert(path, session, target_path="v3", shards={"temp": (6, 10)})
    assert result.ok and result.tasks_run > 0 and len(result.arrays) == 4  # verified on the workers
    session.commit("converted")
    ro = repo.readonly_session("main")
    temp = zarrdask.open_array(ro, path="v3/temp")
    assert temp.zarr_format == 3 and temp.dimension_names == ("time", "x") and temp.shards == (6, 10)
    assert temp.attrs.asdict()["units"] == "K"
    assert zarrdask.open_group(ro, path="v3").attrs.asdict() == {"title": "v2 source"}
    assert _keys(ro, "v3/temp") == ["v3/temp/c/0/0", "v3/temp/c/1/0"]
    xr.testing.assert_identical(xr.open_dataset(ro, engine="zarrdask", group="v3").load(), ds)
    xr.testing.assert_identical(xr.open_zarr(ro.store, group="v3", consolidated=False).load(), ds)


def test_retried_task_leaves_no_duplicate_or_lost_chunk(client, repo, tmp_path):
    session = repo.writable_session("main")
    plan = zarrdask.rechunk(_local_source(tmp_path), (8, 40), session, max_mem="1MB", target_path="r",
                            target_options={"compressors": None})
    client.run(fail_first_chunk_write, str(tmp_path / "rechunk-failed"), "r/c/5/0")
    try:
        plan.execute(progress=False, retries=1)
    finally:
        client.run(restore_set_many)
    assert os.path.exists(tmp_path / "rechunk-failed")
    session.commit("rechunked, retried")  # icechunk 1.x forks only a session without uncommitted changes

    ds, path = _v2_dataset(tmp_path)
    session = repo.writable_session("main")
    client.run(fail_first_chunk_write, str(tmp_path / "convert-failed"), "v3/temp/c/3/1")
    try:
        result = zarrdask.convert(path, session, target_path="v3", block_bytes=64, retries=1)
    finally:
        client.run(restore_set_many)
    assert os.path.exists(tmp_path / "convert-failed") and result.ok
    session.commit("converted, retried")

    ro = repo.readonly_session("main")
    assert sorted(zarrdask.open_group(ro).group_keys()) == ["v3"]  # nothing of the failed attempts
    assert _keys(ro, "r") == [f"r/c/{i}/0" for i in range(6)]
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="r")[...], DATA)
    stored = IcechunkSessionStore(ro, read_only=True)
    for i in range(6):  # every chunk holds its own values (uncompressed: the bytes are the values)
        np.testing.assert_array_equal(np.frombuffer(stored.get(f"r/c/{i}/0"), "<f4").reshape(8, 40),
                                      DATA[8 * i:8 * i + 8])
    assert _keys(ro, "v3/temp") == sorted(f"v3/temp/c/{i}/{j}" for i in range(4) for j in range(2))
    xr.testing.assert_identical(xr.open_dataset(ro, engine="zarrdask", group="v3").load(), ds)


def test_resume_is_refused_inside_a_session(client, repo, tmp_path):
    session = repo.writable_session("main")
    with pytest.raises(ResumeRefusedError, match="icechunk session"):
        zarrdask.rechunk(_local_source(tmp_path), (8, 40), session, max_mem="1MB", resume=True)
    assert not session.has_uncommitted_changes
