"""The parallel rechunk benchmark's harness (``benchmarks/rechunk.py``) on a tiny
source: every peer of the main environment runs, the target is right, and the
table checks the targets it claims to."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrdask
from benchmarks import rechunk as bench
from benchmarks import rechunk_worker as worker


@pytest.fixture
def source(tmp_path):
    path = str(tmp_path / "source.zarr")
    a = zarrdask.create_array(path, shape=(40, 20, 20), dtype="f4", chunks=(4, 20, 20), zarr_format=2,
                              compressors={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1})
    a[:] = bench.make_slab(0, 40, 20, 20)
    return path


@pytest.mark.parametrize("impl", ["zarrdask", "dask"])
@pytest.mark.parametrize("shards", [None, (40, 10, 10)])
def test_a_run_rechunks_and_reports(tmp_path, source, impl, shards):
    task = {"impl": impl, "scheduler": "threads", "threads": 2, "source": source,
            "target": str(tmp_path / "t.zarr"), "temp": str(tmp_path / "tmp.zarr"),
            "chunks": (40, 5, 5), "shards": shards, "max_mem": 60_000}
    got = worker.run(task)
    assert got["time"] > 0 and len(got["peak_mib"]) == 1 and got["tasks"] >= 1
    t = zarrdask.open_array(task["target"], mode="r")
    assert t.chunks == (40, 5, 5) and (t.shards == shards if shards else t.shards is None)
    np.testing.assert_array_equal(t[...], zarrdask.open_array(source, mode="r")[...])
    if impl == "zarrdask":
        assert got["stages"] == 2 and got["temp_bytes_after"] == 0  # the intermediate is gone


def test_the_table_checks_the_targets():
    run = {"scheduler": "cluster", "target": "plain", "max_mem": 64 * 10**6, "time": 5.0, "correct": True,
           "temp_bytes_after": 0, "tasks": 90, "stages": 2}
    results = {"threads": 2, "runs": [
        # 70 MiB > 1.1 x 61 MiB; declared 60 MiB: measured / declared 1.17
        {**run, "impl": "zarrdask", "peak_mib": [59.0, 70.0], "declared_worker_peak": 60 * 2**20},
        {**run, "impl": "dask", "time": 4.5, "peak_mib": [1200.0, 1100.0]},
        {**run, "impl": "dask-p2p", "time": 6.0, "peak_mib": [500.0, 400.0]},
    ], "shape": (1, 1, 1), "source_chunks": (1, 1, 1), "target_chunks": (1, 1, 1), "shards": (1, 1, 1),
        "ncpu": 2, "cpu": "x", "workdir": "w", "fs": "tmpfs", "load_before": 0.0, "wall_time": 1.0,
        "date": "d", "versions": {}, "commit": "c", "skipped": {}}
    head, _, row = bench.render(results).splitlines()[:3]
    assert "| zarrdask s | dask s | dask-p2p s | dask / zd time | dask-p2p / zd time |" in head
    assert "| 5.00 | 4.50 | 6.00 | 0.90x | 1.20x |" in row
    assert "70 (1.15x)" in row and "1,200 (19.66x)" in row and "500 (8.19x)" in row
    assert "60 MiB (measured / declared 1.17)" in row
    assert "| time <= dask p2p; time <= 1.2x dask tasks;" in row  # 5.0 <= 1.2 x 4.5
    assert "MISS: peak <= 1.1x" in row and "MISS: declared within 10%" in row and "; intermediate removed" in row


def test_the_source_is_the_same_every_time():
    a, b = bench.make_slab(30, 5, 8, 9), bench.make_slab(30, 5, 8, 9)
    assert a.dtype == np.float32 and a.shape == (5, 8, 9) and np.array_equal(a, b)
    assert not np.array_equal(a[0], a[1])  # noise differs from step to step
    assert os.path.basename(bench.RECHUNKER_ENV) == "rechunker-venv"
