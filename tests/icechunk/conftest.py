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
