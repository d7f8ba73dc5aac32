"""icechunk repositories on local storage for the tests of this directory.

Fixtures
--------
repo
    A new icechunk repository in ``tmp_path`` (``Repository.create`` over
    ``icechunk.local_filesystem_storage``).
client
    A ``distributed`` client of a ``LocalCluster`` of two single-threaded
    worker processes (one per test module).

:func:`forks_sessions_with_changes` says which icechunk is installed: 1.x
refuses to fork a session with uncommitted changes, 2.x forks it.
"""

from __future__ import annotations

import os
from functools import cache

import pytest

import zarrdask

icechunk = pytest.importorskip("icechunk")


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture
def repo(tmp_path):
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def snapshot_count(repo, branch: str = "main") -> int:
    """How many snapshots the branch's history holds."""
    return len(list(repo.ancestry(branch=branch)))


@cache
def forks_sessions_with_changes() -> bool:
    """Whether the installed icechunk forks a session with uncommitted changes."""
    session = icechunk.Repository.create(icechunk.in_memory_storage()).writable_session("main")
    zarrdask.group(session)  # an uncommitted change
    try:
        session.fork()
    except ValueError:
        return False
    return True


def fail_first_chunk_write(marker: str, stray: str) -> None:
    """On a worker (``client.run``): the first ``set_many`` of chunks stores half
    of them, a wrong value for ``stray`` (a chunk another task owns) and a group
    ``leaked`` nobody else writes, then fails; later calls write as usual. The
    file ``marker`` says the failure happened (one per test, across workers)."""
    from zarrdask.storage.icechunk import IcechunkSessionStore as Store

    real = Store.set_many

    def set_many(self, items):
        keys = sorted(k for k in items if "/c/" in k)
        if keys and not os.path.exists(marker):
            open(marker, "w").close()
            real(self, {k: items[k] for k in keys[: max(1, len(keys) // 2)]})
            real(self, {stray: items[keys[0]], "leaked/zarr.json": b'{"zarr_format": 3, "node_type": "group"}'})
            raise OSError("injected failure after a partial write")
        return real(self, items)

    Store.set_many = set_many
    Store.real_set_many = real


def restore_set_many() -> None:
    """On a worker: undo :func:`fail_first_chunk_write`."""
    from zarrdask.storage.icechunk import IcechunkSessionStore as Store

    if hasattr(Store, "real_set_many"):
        Store.set_many = Store.real_set_many
        del Store.real_set_many
