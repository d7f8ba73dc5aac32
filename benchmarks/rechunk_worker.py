"""One measured rechunk, in a fresh process: ``python -m benchmarks.rechunk_worker``.

Reads a JSON task on stdin, prints one line ``MARKER + JSON`` with the result.
Runs in the main environment (``zarrdask``, ``dask``) and in the rechunker
environment (zarr 2, ``rechunker``), so it imports no library at module level
beyond the standard library and numpy. See ``benchmarks/rechunk.py``.

Memory: every process that runs tasks (this one on the threaded scheduler,
each worker of a ``LocalCluster``) resets its resident-set high-water mark
(Linux ``/proc/self/clear_refs``, ``5``) after the libraries are imported and
reports ``VmHWM`` minus the RSS at the reset when the run is over: the run's
own peak, with import and interpreter memory left out.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from typing import Any

from benchmarks._rss import read_peak, reset_peak  # stdlib only: also run in the rechunker venv

MARKER = "@@zarrdask-rechunk@@"

BLOSC = {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4}


def warm(impl: str, task: dict | None = None) -> bool:
    """Import what the run needs (and, on S3, make the S3 client with a first
    read), so that imports are not counted in its peak."""
    import numcodecs  # noqa: F401
    import numpy  # noqa: F401

    so = (task or {}).get("storage_options")
    if impl == "zarrdask":
        import zarrdask
        import zarrdask.workflows.rechunk  # noqa: F401

        zarrdask.open_array  # noqa: B018
        if so is not None:
            zarrdask.open_array(task["source"], mode="r", storage_options=so)[:1, :1, :1]  # type: ignore[index]
    else:
        import zarr  # noqa: F401

        if impl == "rechunker":
            import rechunker  # noqa: F401
        if so is not None:
            zarr.open_array(task["source"], mode="r", storage_options=so)[:1, :1, :1]  # type: ignore[index]
    return True


# -- the three ways of rechunking -----------------------------------------------------------
def _run_zarrdask(task: dict) -> dict:
    import zarrdask

    so = task.get("storage_options")
    src = zarrdask.open_array(task["source"], mode="r", storage_options=so)
    options = {"zarr_format": 3, "compressors": [{"name": "blosc", "configuration": BLOSC}], "fill_value": 0}
    if so is not None:
        options["storage_options"] = so
    plan = zarrdask.rechunk(
        src, tuple(task["chunks"]), task["target"], max_mem=task["max_mem"],
        target_shards=tuple(task["shards"]) if task["shards"] else None,
        temp_store=task["temp"] if so is None else zarrdask.store_from(task["temp"], mode="a", storage_options=so),
        target_options=options,
    )
    info = {"tasks": plan.ntasks, "stages": plan.nstages, "declared_peak": plan.peak_memory,
            "declared_worker_peak": getattr(plan, "worker_peak_memory", None)}
    plan.execute(progress=False)
    return info


def _run_dask(task: dict, method: str = "tasks") -> dict:
    import dask.array as da
    import zarr
    from zarr.codecs import BloscCodec

    so = task.get("storage_options")
    src = zarr.open_array(task["source"], mode="r", storage_options=so)
    shards = tuple(task["shards"]) if task["shards"] else None
    target = zarr.create_array(
        task["target"], shape=src.shape, dtype=src.dtype, chunks=tuple(task["chunks"]), shards=shards,
        compressors=BloscCodec(**BLOSC), fill_value=0, zarr_format=3, storage_options=so,
    )
    # each dask block is one target chunk, or one whole shard when sharded, so no
    # two tasks write the same object
    x = da.from_zarr(src).rechunk(shards or tuple(task["chunks"]), method=method)
    stored = da.to_zarr(x, target, compute=False)
    info = {"tasks": len(stored.__dask_graph__())}
    stored.compute()
    return info


def _run_rechunker(task: dict) -> dict:
    import rechunker
    import zarr
    from numcodecs import Blosc

    if task["shards"]:
        raise ValueError("rechunker 0.5 writes Zarr v2, which has no shards")
    src = zarr.open_array(task["source"], mode="r")
    plan = rechunker.rechunk(
        src, tuple(task["chunks"]), task["max_mem"], task["target"], temp_store=task["temp"],
        target_options={"compressor": Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)},
        # like zarrdask's, the intermediate is stored uncompressed
        temp_options={"compressor": None},
    )
    info = {"tasks": len(plan._delayed.__dask_graph__()) if hasattr(plan, "_delayed") else None}
    plan.execute()
    return info


RUNS = {"zarrdask": _run_zarrdask, "dask": _run_dask, "dask-p2p": lambda task: _run_dask(task, "p2p"),
        "rechunker": _run_rechunker}


# -- schedulers ---------------------------------------------------------------------------
@contextlib.contextmanager
def _scheduler(task: dict):
    """Yield (reset, read): functions resetting / reading the peak RSS of every
    process that runs tasks, as lists of KiB."""
    import dask

    threads = task["threads"]
    if task["scheduler"] == "threads":
        with dask.config.set(scheduler="threads", num_workers=threads):
            warm(task["impl"], task)
            yield (lambda: [reset_peak()]), (lambda: [read_peak()])
        return
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=threads, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.run(warm, task["impl"], task)

        def per_worker(fn):
            found = client.run(fn)
            return [found[w] for w in sorted(found)]

        yield (lambda: per_worker(reset_peak)), (lambda: per_worker(read_peak))


def _dir_bytes(path: str) -> int:
    from benchmarks.rechunk_s3 import bytes_under  # stdlib only for local paths

    return bytes_under(path, None)


def run(task: dict) -> dict:
    run_fn = RUNS[task["impl"]]
    with _scheduler(task) as (reset, read):
        base = reset()
        t0 = time.perf_counter()
        info = run_fn(task)
        elapsed = time.perf_counter() - t0
        peak = read()
    out = dict(info)
    out["time"] = elapsed
    out["peak_mib"] = [max(0, p - b) / 1024 for p, b in zip(peak, base, strict=True)]
    so = task.get("storage_options")
    if so is None:
        out["temp_bytes_after"] = _dir_bytes(task["temp"]) if os.path.exists(task["temp"]) else 0
        out["target_bytes"] = _dir_bytes(task["target"])
    else:  # an S3 bucket (benchmarks/rechunk_s3.py)
        from benchmarks.rechunk_s3 import bytes_under

        out["temp_bytes_after"] = bytes_under(task["temp"], so)
        out["target_bytes"] = bytes_under(task["target"], so)
    return out


def main() -> int:
    task = json.loads(sys.stdin.read())
    try:
        result = run(task)
    except Exception as e:  # noqa: BLE001 - reported to the orchestrator
        traceback.print_exc()
        result = {"error": f"{type(e).__name__}: {e}"}
    print(MARKER + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
