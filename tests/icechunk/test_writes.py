"""Writes into icechunk sessions in this process: straight through the session
(threaded and synchronous schedulers), through forks (``compute=False``),
refusals before anything is written, and failed task attempts."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.errors import IcechunkSessionError, ReadOnlyError
from zarrdask.storage import IcechunkSessionStore
from zarrdask.storage.icechunk import PendingMerge

from .conftest import forks_sessions_with_changes, snapshot_count

icechunk = pytest.importorskip("icechunk")


def _updated(session, path):
    return sorted(tuple(c) for c in session.status().updated_chunks.get(path, []))


def test_threaded_writes_go_straight_into_a_session_with_changes(repo):
    session = repo.writable_session("main")
    zarrdask.create_array(session, path="first", shape=(3,), dtype="i1")[...] = 1  # uncommitted: no fork possible
    data = np.arange(40 * 30, dtype="f4").reshape(40, 30)
    array = zarrdask.to_zarr(da.from_array(data, chunks=(10, 15)), session, path="x", chunks=(10, 15))
    assert isinstance(array.store, IcechunkSessionStore)
    np.testing.assert_array_equal(array[...], data)
    assert _updated(session, "/x") == [(i, j) for i in range(4) for j in range(2)]
    session.commit("threads")
    np.testing.assert_array_equal(zarrdask.open_array(repo.readonly_session("main"), path="x")[...], data)


def test_lazy_write_merges_the_forks_when_computed(repo):
    session = repo.writable_session("main")
    data = np.arange(100, dtype="i8")
    lazy = zarrdask.to_zarr(da.from_array(data, chunks=10), session, path="x", chunks=(10,), compute=False)
    opened = zarrdask.open_array(session, path="x")  # the metadata is in the session at once
    assert opened.shape == (100,) and opened.nchunks_initialized == 0
    (result,) = dask.compute(lazy, scheduler="threads")
    assert isinstance(result, PendingMerge) and result.merged
    np.testing.assert_array_equal(opened[...], data)
    assert _updated(session, "/x") == [(i,) for i in range(10)]
    session.commit("lazy")
    np.testing.assert_array_equal(zarrdask.open_array(repo.readonly_session("main"), path="x")[...], data)


def test_a_failed_attempt_leaves_nothing_and_a_second_one_writes_all(repo, monkeypatch):
    session = repo.writable_session("main")
    data = np.arange(64, dtype="i4").reshape(8, 8)
    lazy = zarrdask.to_zarr(da.from_array(data, chunks=(4, 8)), session, path="x", chunks=(2, 8), fill_value=-1,
                            compute=False)
    real_set_many = IcechunkSessionStore.set_many
    failures = []

    def set_half_then_fail(self, items):
        if not failures:  # the first attempt of a task: half its chunks stored, garbage, then an error
            failures.append(first := min(items))
            real_set_many(self, {first: items[first]})
            real_set_many(self, {"x/c/3/0": items[first]})  # a chunk another task owns, with wrong values
            raise OSError("injected failure after a partial write")
        return real_set_many(self, items)

    monkeypatch.setattr(IcechunkSessionStore, "set_many", set_half_then_fail)
    with pytest.raises(OSError, match="injected"):
        dask.compute(lazy, scheduler="sync")
    assert _updated(session, "/x") == []  # nothing of the failed attempt reached the session
    assert zarrdask.open_array(session, path="x").nchunks_initialized == 0
    dask.compute(lazy, scheduler="sync")  # the retry
    np.testing.assert_array_equal(zarrdask.open_array(session, path="x")[...], data)
    assert _updated(session, "/x") == [(i, 0) for i in range(4)]


@pytest.mark.parametrize("writer", ["dask", "dask-into-array", "xarray"])
def test_read_only_session_refused_before_any_task(repo, writer):
    session = repo.writable_session("main")
    zarrdask.create_array(session, path="x", shape=(8,), chunks=(4,), dtype="f8", fill_value=0)
    session.commit("x")
    ro = repo.readonly_session("main")
    ran = []
    x = da.ones(8, chunks=4).map_blocks(lambda b: ran.append(1) or b, dtype="f8", meta=np.array((), "f8"))
    with pytest.raises(ReadOnlyError, match="read-only"):
        if writer == "dask":
            zarrdask.to_zarr(x, ro, path="y")
        elif writer == "dask-into-array":
            zarrdask.to_zarr(x, zarrdask.open_array(ro, path="x", mode="r"), mode="r+")
        else:
            zarrdask.xarray.to_zarr(xr.Dataset({"v": ("d", x)}), ro, group="g")
    assert ran == [] and snapshot_count(repo) == 2
    assert zarrdask.open_array(repo.readonly_session("main"), path="x").nchunks_initialized == 0


def test_session_with_changes_for_other_processes(repo):
    session = repo.writable_session("main")
    zarrdask.create_array(session, path="first", shape=(3,), chunks=(3,), dtype="i1")[...] = 5
    before = str(session.status())
    if not forks_sessions_with_changes():  # icechunk 1.x: refused before anything is written
        with pytest.raises(IcechunkSessionError, match="cannot fork"):
            zarrdask.to_zarr(da.ones(8, chunks=4), session, path="y", store_kwargs={"scheduler": "processes"})
        with pytest.raises(IcechunkSessionError, match="cannot fork"):
            zarrdask.xarray.to_zarr(xr.Dataset({"v": ("d", da.ones(8, chunks=4))}), session, group="g",
                                    chunkmanager_store_kwargs={"scheduler": "processes"})
        assert str(session.status()) == before
    # computed later on threads: through forks where icechunk forks the session, else through the session
    lazy = zarrdask.to_zarr(da.ones(8, chunks=4), session, path="y", compute=False)
    dask.compute(lazy, scheduler="threads")
    np.testing.assert_array_equal(zarrdask.open_array(session, path="y")[...], np.ones(8))
    np.testing.assert_array_equal(zarrdask.open_array(session, path="first")[...], np.full(3, 5))


def test_return_stored_refused_through_forks(repo):
    session = repo.writable_session("main")
    with pytest.raises(ValueError, match="return_stored"):
        zarrdask.to_zarr(da.ones(4, chunks=2), session, path="y", compute=False, return_stored=True)
    assert not session.has_uncommitted_changes


def test_a_fork_as_the_store(repo):
    session = repo.writable_session("main")
    fork = session.fork()
    data = np.arange(30, dtype="u2")
    zarrdask.to_zarr(da.from_array(data, chunks=10), fork.store, path="x", chunks=(10,))  # threads: the fork itself
    lazy = zarrdask.to_zarr(da.from_array(data * 2, chunks=5), fork, path="y", chunks=(5,), compute=False)
    lazy.compute()  # copies of the fork, merged back into it
    session.merge(fork)
    session.commit("fork")
    ro = repo.readonly_session("main")
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="x")[...], data)
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="y")[...], data * 2)


def test_a_fork_holding_chunks_the_tasks_rewrite_is_refused(repo):
    session = repo.writable_session("main")
    zarrdask.create_array(session, path="x", shape=(40,), chunks=(10,), dtype="i4", fill_value=0)
    session.commit("x")
    fork = repo.writable_session("main").fork()
    zarrdask.open_array(fork, path="x", mode="r+")[12] = 7  # chunk 1 changed in the fork
    with pytest.raises(IcechunkSessionError, match=r"\[\(1,\)\]"):
        zarrdask.to_zarr(da.ones(20, dtype="i4", chunks=10), fork, path="x", mode="r+",
                         region=(slice(0, 20),), compute=False)
    lazy = zarrdask.to_zarr(da.ones(20, dtype="i4", chunks=10), fork, path="x", mode="r+",
                            region=(slice(20, 40),), compute=False)  # chunks 2 and 3: no clash
    lazy.compute()
    expected = np.zeros(40, "i4")
    expected[12], expected[20:] = 7, 1
    np.testing.assert_array_equal(zarrdask.open_array(fork, path="x")[...], expected)


def test_dataset_writes_on_threads_and_lazily(repo):
    ds = xr.Dataset({"v": (("t", "x"), np.arange(24.0).reshape(6, 4))}, coords={"t": np.arange(6)}).chunk({"t": 2})
    session = repo.writable_session("main")
    group = zarrdask.xarray.to_zarr(ds, session, group="threads", mode="w")
    assert group.store.writable
    lazy = zarrdask.xarray.to_zarr(ds * 2, session.store, group="lazy", mode="w", compute=False)
    dask.compute(lazy)
    session.commit("two groups")
    ro = repo.readonly_session("main")
    xr.testing.assert_identical(xr.open_dataset(ro, engine="zarrdask", group="threads").load(), ds.compute())
    xr.testing.assert_identical(xr.open_dataset(ro, engine="zarrdask", group="lazy").load(), (ds * 2).compute())


def test_tree_and_empty_arrays_through_forks(repo):
    tree = xr.DataTree.from_dict({
        "/": xr.Dataset({"top": ("x", da.arange(6, chunks=3))}),
        "/child": xr.Dataset({"leaf": (("y", "z"), da.ones((4, 0), chunks=2))}),  # a zero-length axis
    })
    session = repo.writable_session("main")
    lazy = zarrdask.xarray.to_zarr(tree, session, mode="w", compute=False)
    empty = zarrdask.to_zarr(da.zeros((0, 3), chunks=2), session, path="child/empty", compute=False,
                             dimension_names=("e", "w"))
    (result, _) = dask.compute(lazy, empty)
    assert result.merged
    session.commit("tree")
    ro = repo.readonly_session("main")
    back = xr.open_datatree(ro, engine="zarrdask")
    np.testing.assert_array_equal(back["top"].values, np.arange(6))
    assert back["child"]["leaf"].shape == (4, 0)
    assert zarrdask.open_array(ro, path="child/empty").shape == (0, 3)


@pytest.mark.parametrize("given", ["session", "store"])
@pytest.mark.parametrize("writer", ["dask", "xarray"])
def test_resume_refused_in_a_session(repo, writer, given):
    """A session's uncommitted changes die with its process: resume=True would
    promise what cannot hold, so it is refused before anything is written."""
    from zarrdask.errors import ResumeRefusedError

    session = repo.writable_session("main")
    target = session if given == "session" else session.store
    x = da.ones(8, chunks=4)
    with pytest.raises(ResumeRefusedError, match="icechunk session"):
        if writer == "dask":
            zarrdask.to_zarr(x, target, path="y", resume=True)
        else:
            zarrdask.xarray.to_zarr(xr.Dataset({"v": ("d", x)}), target, group="g", resume=True)
    assert not session.has_uncommitted_changes
