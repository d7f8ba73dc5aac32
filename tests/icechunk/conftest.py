"""icechunk repositories on local storage for the tests of this directory.

Fixtures
--------
repo
    A new icechunk repository in ``tmp_path`` (``Repository.create`` over
    ``icechunk.local_filesystem_storage``).
"""

from __future__ import annotations

import pytest

icechunk = pytest.importorskip("icechunk")


@pytest.fixture
def repo(tmp_path):
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def snapshot_count(repo, branch: str = "main") -> int:
    """How many snapshots the branch's history holds."""
    return len(list(repo.ancestry(branch=branch)))
