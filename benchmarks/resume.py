"""What ``resume=True`` costs a distributed write: ``python -m benchmarks.resume``.

A float32 array (``--size`` MiB, default 256; smooth waves plus Gaussian noise
quantised to 1/256, made by the tasks themselves, so every run computes the
same bytes) is written by ``zarrdask.to_zarr`` into a sharded Zarr v3 array
(chunks 256 x 256, shards 1024 x 1024: 4 MiB shards, one task each; zstd
level 1) on a ``distributed.LocalCluster`` of ``--workers`` single-threaded
worker processes, without and with ``resume=True``. The two are run in
alternation (plain, resume, plain, ... ``--repeat`` pairs; which one goes
first alternates too), each into a fresh target. Reported: the median of the
pairs' wall-time ratios (resume / plain), the ratio of the fastest runs, and
the median of the pairs' CPU-time ratios (user + system seconds of the client
process, moto included, and of every worker: less disturbed than wall time
on a shared machine).

Targets: a directory on tmpfs (``/dev/shm`` when there is one) and, with
``--s3``, a moto S3 server on 127.0.0.1 (started here; ``--s3-size`` MiB,
default 64: moto keeps objects in memory and answers from one Python process).

Results: a table on stdout and ``benchmarks/results/resume.md`` /
``resume.json`` (``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any, Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # python benchmarks/resume.py
    sys.path.insert(0, ROOT)

from benchmarks.run import _cpu_model, _git_commit, _loadavg, _versions, fs_type  # noqa: E402

SIDE = 1024  # shard side: 1024 x 1024 float32 = 4 MiB
CHUNKS, SHARDS = (256, 256), (SIDE, SIDE)
MIB = 2**20


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def field(block_info: Any = None) -> np.ndarray:
    """One block of the field: waves plus noise, quantised (the same bytes every run)."""
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    y = np.arange(r0, r1, dtype=np.float32)[:, None] / 97.0
    x = np.arange(c0, c1, dtype=np.float32)[None, :] / 61.0
    out = 280 + 15 * np.sin(x) * np.cos(y)
    out = out + 0.5 * np.random.default_rng([r0, c0]).standard_normal(out.shape, dtype=np.float32)
    return (np.round(out * 256) / 256).astype("f4")


def source(size_mib: int) -> Any:
    import dask.array as da

    rows = max(SIDE, (size_mib * MIB // 4 // (4 * SIDE)) // SIDE * SIDE)
    shape = (rows, 4 * SIDE)
    return da.map_blocks(field, dtype="f4", chunks=tuple((SIDE,) * (n // SIDE) for n in shape))


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cluster_cpu() -> float:
    """CPU seconds of this process (client, moto) and of every worker process."""
    from distributed import get_client

    return _cpu_seconds() + sum(get_client().run(_cpu_seconds).values())


def _write(x: Any, url: str, resume: bool, storage_options: dict[str, Any] | None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (every process) of one write."""
    import zarrdask

    from numcodecs import Zstd

    cpu0, t0 = _cluster_cpu(), time.perf_counter()
    zarrdask.to_zarr(x, url, chunks=CHUNKS, shards=SHARDS, compressors=[Zstd(level=1)], resume=resume,
                     storage_options=storage_options)
    wall = time.perf_counter() - t0
    return wall, _cluster_cpu() - cpu0


def measure(x: Any, fresh: Callable[[], tuple[str, Callable[[], None]]], repeat: int,
            storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``repeat`` interleaved pairs of writes without and with ``resume=True``."""
    for resume in (False, True):  # warm-up: imports and caches on every worker, for both
        url, drop = fresh()
        _write(x, url, resume, storage_options)
        drop()
    times: dict[str, list[float]] = {"plain": [], "resume": []}
    cpu: dict[str, list[float]] = {"plain": [], "resume": []}
    for i in range(repeat):
        order = (False, True) if i % 2 == 0 else (True, False)
        for resume in order:
            url, drop = fresh()
            wall, seconds = _write(x, url, resume, storage_options)
            times["resume" if resume else "plain"].append(wall)
            cpu["resume" if resume else "plain"].append(seconds)
            drop()
        _log(f"  pair {i + 1}/{repeat}: plain {times['plain'][-1]:.2f} s ({cpu['plain'][-1]:.2f} s CPU), "
             f"resume {times['resume'][-1]:.2f} s ({cpu['resume'][-1]:.2f} s CPU)")
    ratios = [r / p for p, r in zip(times["plain"], times["resume"])]
    return {
        "times": times,
        "cpu": cpu,
        "plain_median_s": statistics.median(times["plain"]),
        "resume_median_s": statistics.median(times["resume"]),
        "ratio_median": statistics.median(ratios),
        "ratio_of_minimums": min(times["resume"]) / min(times["plain"]),
        "cpu_ratio_median": statistics.median([r / p for p, r in zip(cpu["plain"], cpu["resume"])]),
        "ratio_median_ci95": _interval(ratios),
        "ratios": ratios,
    }


def _interval(ratios: list[float], draws: int = 2000) -> tuple[float, float]:
    """A 95 % bootstrap interval of the median of ``ratios`` (how much the noise allows)."""
    rng = np.random.default_rng(0)
    medians = np.median(rng.choice(np.asarray(ratios), size=(draws, len(ratios))), axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def _local(root: str) -> Callable[[], tuple[str, Callable[[], None]]]:
    def fresh() -> tuple[str, Callable[[], None]]:
        path = os.path.join(root, f"w-{uuid.uuid4().hex[:8]}.zarr")
        return path, lambda: shutil.rmtree(path, ignore_errors=True)
    return fresh


def _moto() -> tuple[Any, dict[str, Any], Callable[[], tuple[str, Callable[[], None]]]]:
    from moto.server import ThreadedMotoServer

    os.environ.update({"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1"})
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = {"endpoint_url": f"http://{host}:{port}", "key": "x", "secret": "y", "use_listings_cache": False}
    import s3fs

    fs = s3fs.S3FileSystem(**options)
    fs.mkdir("bench")

    def fresh() -> tuple[str, Callable[[], None]]:
        path = f"bench/w-{uuid.uuid4().hex[:8]}.zarr"
        return f"s3://{path}", lambda: fs.rm(path, recursive=True)
    return server, options, fresh


def _table(rows: list[tuple[str, int, dict[str, Any]]]) -> str:
    lines = ["| target | MiB | tasks | plain (median) | resume=True (median) | time: resume / plain, median of "
             "pairs [95 % interval] | time: ratio of the fastest | CPU (all processes): resume / plain, median of "
             "pairs |", "|---|---|---|---|---|---|---|---|"]
    for name, mib, r in rows:
        low, high = r["ratio_median_ci95"]
        lines.append(f"| {name} | {mib} | {r['tasks']} | {r['plain_median_s']:.2f} s | {r['resume_median_s']:.2f} s "
                     f"| {_pct(r['ratio_median'])} [{low:.3f}, {high:.3f}] | {_pct(r['ratio_of_minimums'])} "
                     f"| {_pct(r['cpu_ratio_median'])} |")
    return "\n".join(lines)


def _pct(ratio: float) -> str:
    return f"{ratio:.3f} ({(ratio - 1) * 100:+.1f} %)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="MiB written to the local target (default 256)")
    parser.add_argument("--s3", action="store_true", help="also write to a moto S3 server")
    parser.add_argument("--s3-size", type=int, default=64, help="MiB written to S3 (default 64)")
    parser.add_argument("--repeat", type=int, default=7, help="pairs of writes per target (default 7)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, one thread each (default 2)")
    parser.add_argument("--workdir", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    parser.add_argument("--quick", action="store_true", help="smoke run: 32 MiB, 2 pairs")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.s3_size, args.repeat = 32, 16, 2

    import distributed

    rows = []
    workdir = tempfile.mkdtemp(prefix="zarrdask-resume-bench-", dir=args.workdir)
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster):
        try:
            x = source(args.size)
            _log(f"local ({fs_type(workdir)}): {x.nbytes / MIB:.0f} MiB, {x.npartitions} tasks")
            result = measure(x, _local(workdir), args.repeat)
            rows.append((f"local directory ({fs_type(workdir)})", round(x.nbytes / MIB), {**result,
                         "tasks": x.npartitions}))
            if args.s3:
                server, options, fresh = _moto()
                try:
                    x = source(args.s3_size)
                    _log(f"moto S3: {x.nbytes / MIB:.0f} MiB, {x.npartitions} tasks")
                    result = measure(x, fresh, args.repeat, options)
                    rows.append(("S3 (moto on 127.0.0.1)", round(x.nbytes / MIB), {**result, "tasks": x.npartitions}))
                finally:
                    server.stop()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    table = _table(rows)
    notes = (f"\n\n{args.workers} worker processes x 1 thread, {args.repeat} interleaved pairs per target; "
             f"CPU {_cpu_model()}, load average {_loadavg()}; zarrdask commit {_git_commit()}.")
    print(table + notes)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "resume.md"), "w") as f:
        f.write(table + notes + "\n")
    with open(os.path.join(args.out, "resume.json"), "w") as f:
        json.dump({"rows": [{"target": n, "mib": m, **r} for n, m, r in rows], "versions": _versions(),
                   "args": vars(args)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
