"""icechunk sessions and their stores as zarrdask stores (zarrdask.storage.icechunk)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import IcechunkSessionError, ReadOnlyError
from zarrdask.storage import IcechunkSessionStore, store_from

from .conftest import forks_sessions_with_changes

icechunk = pytest.importorskip("icechunk")


def _committed(repo, data):
    session = repo.writable_session("main")
    zarrdask.create_array(session, path="a", shape=data.shape, chunks=(2, 3), dtype=data.dtype)[...] = data
    session.commit("a")
    return repo.readonly_session("main")


@pytest.mark.parametrize("as_store", [False, True], ids=["session", "session.store"])
def test_session_and_its_store_are_stores(repo, as_store):
    session = repo.writable_session("main")
    store = store_from(session.store if as_store else session, mode="a")
    assert isinstance(store, IcechunkSessionStore) and store.writable
    assert not store.supports_consolidated_metadata  # icechunk keeps its own view of the hierarchy
    data = np.arange(24, dtype="i2").reshape(4, 6)
    zarrdask.open_array(session.store if as_store else session, path="g/a", mode="w", shape=(4, 6),
                        chunks=(2, 3), dtype="i2")[...] = data
    np.testing.assert_array_equal(zarrdask.open_array(session, path="g/a", mode="r")[...], data)
    assert list(zarrdask.open_group(session, path="g", mode="r").array_keys()) == ["a"]
    assert "branch 'main'" in repr(store)


def test_mode_r_and_read_only_sessions_refuse_writes(repo):
    data = np.arange(12, dtype="f4").reshape(2, 6)
    ro = _committed(repo, data)
    for store in (store_from(repo.writable_session("main"), mode="r"), store_from(ro, mode="a"),
                  store_from(ro.store, mode="a")):
        assert not store.writable
        with pytest.raises(ReadOnlyError):
            store.set("a/c/0/0", b"x")
    with pytest.raises(ReadOnlyError):
        zarrdask.open_array(ro, path="a", mode="r+")[0, 0] = 1
    np.testing.assert_array_equal(zarrdask.open_array(ro, path="a")[...], data)


def test_read_only_sessions_and_forks_pickle_writable_sessions_do_not(repo):
    data = np.arange(12, dtype="i8").reshape(3, 4)
    ro = _committed(repo, data)
    array = zarrdask.open_array(ro, path="a", mode="r")
    back = pickle.loads(pickle.dumps(array))
    np.testing.assert_array_equal(back[...], data)
    assert back.store.location == array.store.location == ("icechunk", "snapshot", ro.snapshot_id)

    session = repo.writable_session("main")
    with pytest.raises(IcechunkSessionError, match="cannot be sent to another process"):
        pickle.dumps(store_from(session, mode="a"))
    fork = store_from(session.fork(), mode="a")
    assert fork.is_fork
    copy = pickle.loads(pickle.dumps(fork))
    zarrdask.open_array(copy, path="a", mode="r+")[0, 0] = 100
    assert zarrdask.open_array(fork, path="a")[0, 0] == 0  # a copy is a session of its own
    fork.merge(copy.session)
    assert zarrdask.open_array(fork, path="a")[0, 0] == 100


def test_locations_name_the_snapshot_or_the_session(repo):
    ro = _committed(repo, np.zeros((2, 3), "u1"))
    assert store_from(ro).location == store_from(repo.readonly_session("main")).location
    one, two = repo.writable_session("main"), repo.writable_session("main")
    assert store_from(one, mode="a").location == store_from(one, mode="a").location
    assert store_from(one, mode="a").location != store_from(two, mode="a").location


def test_fork_protocol_refuses_what_icechunk_refuses(repo):
    _committed(repo, np.zeros((2, 3), "u1"))
    session = repo.writable_session("main")
    store = store_from(session, mode="a")
    assert store.fork_for_tasks().is_fork
    zarrdask.open_array(session, path="a", mode="r+")[0, 0] = 1
    if forks_sessions_with_changes():  # icechunk 2.x
        assert store.fork_for_tasks().changed_chunks("a") == []  # a fork starts with no changes of its own
    else:
        with pytest.raises(IcechunkSessionError, match="cannot fork"):
            store.fork_for_tasks()
    assert store.changed_chunks("a") == [(0, 0)]
    with pytest.raises(IcechunkSessionError, match="read-only"):
        store_from(repo.readonly_session("main")).fork_for_tasks()
    with pytest.raises(IcechunkSessionError, match="not a fork"):
        store.copy()


def test_storage_options_and_wrong_objects(repo):
    session = repo.writable_session("main")
    with pytest.raises(ValueError, match="icechunk"):
        store_from(session, mode="a", storage_options={"anon": True})
    with pytest.raises(TypeError, match="icechunk Session"):
        IcechunkSessionStore(session.store)
