"""The remote benchmark's floor (``benchmarks.remote.window_floor``): the
window it reads from a real HTTP server is zarrdask's, with the same requests
(the same ranges, each after the first of its shard asked ``If-Match``), and a
shard whose index was damaged is refused, not decoded."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from benchmarks import remote
from zarrdask.testing.servers import serve_directory

pytest.importorskip("obstore")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    remote.prepare(str(root))
    with serve_directory(str(root), etags="stat") as files:
        yield root, files


def _requests(files) -> list[tuple[str, str | None]]:
    return sorted((r.path, r.range) for r in files.log.requests if r.path.startswith("/sharded.zarr/c/"))


def test_the_floor_reads_zarrdasks_window_with_its_requests(served):
    import zarrdask

    root, files = served
    worker = remote.Worker("floor", files.url, "")
    store = worker.fl_open("sharded")
    with ThreadPoolExecutor(8) as pool:
        files.log.clear()
        got = remote.window_floor(store, pool)
        floor_requests = _requests(files)
    files.log.clear()
    expected = zarrdask.open_array(f"{files.url}/sharded.zarr", mode="r")[remote.WINDOW]
    zarrdask_requests = _requests(files)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, remote._data()[remote.WINDOW])
    assert floor_requests == zarrdask_requests
    assert len(floor_requests) == 12  # four indexes, then two rows of inner chunks in each shard


def test_a_damaged_index_is_refused(served, tmp_path):
    import shutil

    root, _ = served
    copy = tmp_path / "copy"
    shutil.copytree(root / "sharded.zarr", copy / "sharded.zarr")
    shard = copy / "sharded.zarr" / "c" / "1" / "1"
    raw = bytearray(shard.read_bytes())
    raw[-10] ^= 0xFF  # inside the index, before its checksum
    shard.write_bytes(bytes(raw))
    with serve_directory(str(copy), etags="stat") as files:
        store = remote.Worker("floor", files.url, "").fl_open("sharded")
        with ThreadPoolExecutor(8) as pool, pytest.raises(ValueError, match="c/1/1: index checksum"):
            remote.window_floor(store, pool)
