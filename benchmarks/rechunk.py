"""Parallel rechunk benchmark: ``python -m benchmarks.rechunk`` (``--quick`` for a smoke run).

``--case to-series`` (default): a 2 GB float32 array of shape (2000, 500, 500)
stored in map layout, chunks (10, 500, 500) (Zarr v2, blosc lz4 + shuffle, so
every peer can read it), is rechunked to time-series layout, chunks
(2000, 25, 25) (sharded target: in (2000, 50, 50) shards). ``--case to-maps``:
a (200, 500, 500) float32 array in time-series layout, chunks (200, 25, 25)
(Zarr v2, zstd level 1; Gaussian noise, which zstd stores in 92% of its
size, 184 MB), is rechunked to map layout, chunks (10, 500, 500)
(sharded target: chunks (10, 100, 100) in (10, 500, 500) shards). Both by

- **zarrdask**: ``zarrdask.rechunk(src, chunks, target, max_mem=..., target_shards=...,
  temp_store=...).execute()``;
- **dask**: ``dask.array.from_zarr(src).rechunk(...)`` then ``to_zarr`` into an
  array created by zarr-python 3 (rechunked to whole shards for the sharded
  target, so no two tasks write one shard); dask has no memory budget: its
  peak is reported against the same ``max_mem`` for comparison;
- **dask-p2p** (cluster only): the same with ``rechunk(..., method="p2p")``,
  dask's memory-bounded peer-to-peer rechunk (workers' memory limit left at
  distributed's default, a share of the machine's memory, which is what p2p needs);
- **rechunker** 0.5.4 (zarr 2 only, so no sharded target), in an environment of
  its own (``~/.cache/zarrdask-bench/rechunker-venv``, created on first use with
  zarr 2.18.7 and numcodecs 0.15.2); its intermediate is uncompressed, like zarrdask's;

with ``max_mem`` 256 MB and 64 MB, a plain target and a sharded one (v3,
blosc lz4 + shuffle), on dask's threaded scheduler
with 2 threads and on a ``distributed.LocalCluster`` of 2 single-threaded worker
processes. Each run is a fresh process (``benchmarks/rechunk_worker.py``);
its time includes planning and creating the target; memory is the peak RSS
of every process that runs tasks, above its RSS after imports. Each target is
checked against the source on two (2000, 50, 50) columns.

``--store s3``: the source, target and intermediate are in an S3 bucket
(moto on 127.0.0.1, behind a proxy adding ``--latency`` seconds, default
0.02, to every request: ``benchmarks/rechunk_s3.py``); rechunker is left out
(its environment has no S3 client).

Results: a table on stdout and ``benchmarks/results/rechunk.md`` /
``rechunk.json`` / ``rechunk.png`` (time, and peak per worker over max_mem,
per case and implementation; ``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # python benchmarks/rechunk.py
    sys.path.insert(0, ROOT)

from benchmarks.rechunk_worker import MARKER
from benchmarks.run import _cpu_model, _git_commit, _loadavg, _versions, fs_type, worker_env

#: the layouts rechunked: the array's shape (and ``--quick`` shape), its source chunks
#: and compressor (Zarr v2), and the target's chunks — plain, and inner chunks and
#: shards for the sharded target (-1: the whole time axis)
CASES = {
    # map layout to time-series layout
    "to-series": {"shape": (2000, 500, 500), "quick": (200, 500, 500), "source_chunks": (10, 500, 500),
                  "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
                  "chunks": (-1, 25, 25), "sharded_chunks": (-1, 25, 25), "shards": (-1, 50, 50)},
    # time-series layout to map layout
    "to-maps": {"shape": (200, 500, 500), "quick": (200, 500, 500), "source_chunks": (-1, 25, 25),
                "compressor": {"id": "zstd", "level": 1}, "data": "noise",
                "chunks": (10, 500, 500), "sharded_chunks": (10, 100, 100), "shards": (10, 500, 500)},
}
IMPLS = ("zarrdask", "dask", "dask-p2p", "rechunker")
RECHUNKER_ENV = os.path.join(os.path.expanduser("~"), ".cache", "zarrdask-bench", "rechunker-venv")
RECHUNKER_PINS = ["rechunker==0.5.4", "zarr==2.18.7", "numcodecs==0.15.2"]
#: where the reference columns of the check are taken (y, x corners of 50x50 columns)
CHECK_COLUMNS = ((100, 200), (450, 0))
MB = 10**6


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- data ---------------------------------------------------------------------------------
def make_slab(t0: int, n: int, ny: int, nx: int, seed: int = 0) -> np.ndarray:
    """Time steps ``t0 .. t0+n`` of a temperature-like field: fixed waves in space, a
    seasonal cycle in time, Gaussian noise (sigma 0.5) per step, quantised to 1/256 —
    real work for the codec, the same bytes every run."""
    y = np.linspace(0, 2 * np.pi, ny, dtype=np.float32)[:, None]
    x = np.linspace(0, 2 * np.pi, nx, dtype=np.float32)[None, :]
    base = 280 + 15 * np.sin(3 * x) * np.cos(2 * y) + 10 * np.sin(5 * x + 7 * y)
    t = np.arange(t0, t0 + n, dtype=np.float32)[:, None, None]
    slab = base[None] + 8 * np.sin(2 * np.pi * t / 365.0) * np.cos(y)[None]
    slab += 0.5 * np.random.default_rng([seed, t0]).standard_normal(slab.shape, dtype=np.float32)
    return (np.round(slab * 256) / 256).astype("f4")


def make_noise(t0: int, n: int, ny: int, nx: int, seed: int = 0) -> np.ndarray:
    """Time steps ``t0 .. t0+n`` of standard Gaussian noise: data the codecs can hardly shrink."""
    return np.random.default_rng([seed, t0, 1]).standard_normal((n, ny, nx), dtype=np.float32)


def ensure_source(workdir: str, shape: tuple[int, ...], case: dict, s3: Any = None) -> str:
    """The source array of ``case`` (Zarr v2, written once per case and shape and kept in
    ``workdir``; with ``s3`` (:class:`benchmarks.rechunk_s3.S3`), written to its bucket)."""
    import zarrdask

    chunks = _resolve(case["source_chunks"], shape)
    kind = case.get("data", "waves")
    name = f"source-{kind}-{'x'.join(map(str, shape))}-{'x'.join(map(str, chunks))}-{case['compressor']['id']}.zarr"
    path = s3.url(name) if s3 is not None else os.path.join(workdir, name)
    done = os.path.join(path, ".complete")
    if s3 is None and os.path.exists(done):
        return path
    if s3 is None:
        shutil.rmtree(path, ignore_errors=True)
    _log(f"writing the source {shape} float32, chunks {chunks}, to {path} ...")
    a = zarrdask.create_array(
        path, shape=shape, dtype="f4", chunks=chunks, zarr_format=2, fill_value=0,
        compressors=case["compressor"], storage_options=None if s3 is None else s3.direct,
    )
    step = chunks[0] * max(1, 100 // chunks[0])  # whole chunks along time, about 100 steps at a time
    for t0 in range(0, shape[0], step):
        n = min(step, shape[0] - t0)
        a[t0 : t0 + n] = (make_noise if kind == "noise" else make_slab)(t0, n, shape[1], shape[2])
    if s3 is None:
        open(done, "w").close()
    return path


def _resolve(chunks: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Chunk lengths with -1 replaced by the whole dimension."""
    return tuple(s if c == -1 else c for c, s in zip(chunks, shape, strict=True))


def reference_columns(source: str, storage_options: dict | None = None) -> list[np.ndarray]:
    import zarrdask

    a = zarrdask.open_array(source, mode="r", storage_options=storage_options)
    return [a[:, y : y + 50, x : x + 50] for y, x in CHECK_COLUMNS]


def check_target(path: str, refs: list[np.ndarray], storage_options: dict | None = None) -> bool:
    import zarrdask

    a = zarrdask.open_array(path, mode="r", storage_options=storage_options)
    return all(np.array_equal(a[:, y : y + 50, x : x + 50], ref) for (y, x), ref in zip(CHECK_COLUMNS, refs, strict=True))


# -- the rechunker environment --------------------------------------------------------------
def rechunker_python() -> tuple[str | None, str]:
    """The Python of the rechunker environment (created if missing), or (None, why not)."""
    python = os.path.join(RECHUNKER_ENV, "bin", "python")
    if os.path.exists(os.path.join(RECHUNKER_ENV, ".complete")):
        return python, ""
    _log(f"creating the rechunker environment in {RECHUNKER_ENV} ...")
    from importlib.metadata import version

    pins = [*RECHUNKER_PINS, f"dask[array]=={version('dask')}", f"distributed=={version('distributed')}",
            f"numpy=={version('numpy')}"]
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", RECHUNKER_ENV], check=True, capture_output=True)
        subprocess.run([python, "-m", "pip", "install", "-q", *pins], check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        return None, f"could not create the rechunker environment: {(e.stderr or '')[-500:]}"
    open(os.path.join(RECHUNKER_ENV, ".complete"), "w").close()
    return python, ""


# -- running -------------------------------------------------------------------------------
def run_one(python: str, task: dict, env: dict, timeout: float) -> dict:
    try:
        proc = subprocess.run([python, "-m", "benchmarks.rechunk_worker"], input=json.dumps(task), capture_output=True,
                              text=True, cwd=ROOT, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER):])
            if "error" in result:
                result["stderr"] = proc.stderr.strip().splitlines()[-10:]
            return result
    return {"error": f"worker exited with {proc.returncode}", "stderr": proc.stderr.strip().splitlines()[-10:]}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.rechunk", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", choices=sorted(CASES), default="to-series",
                   help="to-series: map layout to time series (default); to-maps: the other way")
    p.add_argument("--quick", action="store_true", help="a (200, 500, 500) source (200 MB): checks that all runs work")
    p.add_argument("--impls", default=",".join(IMPLS), help="comma-separated, of " + ", ".join(IMPLS))
    p.add_argument("--schedulers", default="threads,cluster", help="threads (dask's threaded scheduler) and/or cluster")
    p.add_argument("--max-mem", default="256MB,64MB", help="comma-separated budgets (MB = 10^6 bytes)")
    p.add_argument("--targets", default="plain,sharded")
    p.add_argument("--threads", type=int, default=2, help="threads, or single-threaded cluster workers (default 2)")
    p.add_argument("--workdir", default=None, help="where stores go (default /dev/shm/zarrdask-rechunk-bench)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    p.add_argument("--store", choices=("local", "s3"), default="local",
                   help="local: directories in --workdir; s3: a moto bucket behind a latency proxy")
    p.add_argument("--latency", type=float, default=0.02, help="with --store s3: seconds added to every request")
    return p.parse_args(argv)


def _parse_mb(text: str) -> int:
    text = text.strip().upper()
    return int(float(text[:-2]) * MB) if text.endswith("MB") else int(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    impls = [i for i in args.impls.split(",") if i]
    unknown = set(impls) - set(IMPLS)
    if unknown:
        raise SystemExit(f"unknown implementation(s) {sorted(unknown)}; known: {', '.join(IMPLS)}")
    if args.store == "local":
        return _run_all(args, impls, None)
    from benchmarks.rechunk_s3 import s3_bucket

    with s3_bucket(args.latency) as s3:
        return _run_all(args, impls, s3)


def _run_all(args: argparse.Namespace, impls: list[str], s3: Any) -> int:
    case = CASES[args.case]
    shape = case["quick"] if args.quick else case["shape"]
    workdir = args.workdir or ("/dev/shm/zarrdask-rechunk-bench" if os.path.isdir("/dev/shm") else "/tmp/zarrdask-rechunk-bench")
    os.makedirs(workdir, exist_ok=True)
    started = time.perf_counter()
    load_before = _loadavg()
    source = ensure_source(workdir, shape, case, s3)
    refs = reference_columns(source, None if s3 is None else s3.direct)
    pythons = {"zarrdask": sys.executable, "dask": sys.executable, "dask-p2p": sys.executable}
    skipped: dict[str, str] = {}
    if "rechunker" in impls and s3 is not None:
        skipped["rechunker"] = "its environment has no S3 client (--store s3)"
    elif "rechunker" in impls:
        py, why = rechunker_python()
        if py is None:
            skipped["rechunker"] = why
        else:
            pythons["rechunker"] = py
    env = worker_env(args.threads, workdir)
    if s3 is not None:
        from benchmarks.rechunk_s3 import AWS_ENV

        env.update(AWS_ENV)
    # byte code where each package keeps it (the rechunker environment's, compiled by
    # pip), and zarrdask's compiled now, so that no run compiles modules it imports
    env.pop("PYTHONPYCACHEPREFIX", None)
    import zarrdask

    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(zarrdask.__file__)], env=env,
                   check=False, capture_output=True)
    runs = _runs(args, impls, shape, case, source, refs, pythons, skipped, env, workdir, s3)
    results = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"), "case": args.case,
        "shape": shape, "source_chunks": _resolve(case["source_chunks"], shape),
        "source_compressor": case["compressor"],
        "target_chunks": _resolve(case["chunks"], shape),
        "sharded_chunks": _resolve(case["sharded_chunks"], shape),
        "shards": _resolve(case["shards"], shape),
        "threads": args.threads, "cpu": _cpu_model(), "ncpu": os.cpu_count(),
        "workdir": workdir, "fs": fs_type(workdir), "load_before": load_before,
        "store": args.store, "latency": args.latency if s3 is not None else 0.0,
        "versions": {**{k: v for k, v in _versions().items() if k not in ("zarrs", "tensorstore")},
                     **_rechunker_versions(pythons.get("rechunker"))},
        "commit": _git_commit(), "skipped": skipped, "runs": runs,
        "wall_time": time.perf_counter() - started,
    }
    text = render(results)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "rechunk.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "rechunk.md"), "w") as f:
        f.write(text + "\n")
    try:
        from benchmarks.charts import rechunk_chart

        rechunk_chart(results, os.path.join(args.out, "rechunk.png"))
    except ImportError as e:  # pragma: no cover - matplotlib is a benchmark dependency
        _log(f"no chart ({e}); pip install matplotlib")
    return 0 if all("error" not in r and r.get("correct") for r in runs) else 1


def _runs(args: argparse.Namespace, impls: list[str], shape: tuple[int, ...], case: dict, source: str,
          refs: list[np.ndarray], pythons: dict[str, str], skipped: dict[str, str], env: dict, workdir: str,
          s3: Any) -> list[dict]:
    """Every run: per scheduler, target, max_mem and implementation, in a fresh process."""
    shards = _resolve(case["shards"], shape)
    options = None if s3 is None else s3.storage_options
    runs = []
    for scheduler in args.schedulers.split(","):
        for target in args.targets.split(","):
            for mem_text in args.max_mem.split(","):
                max_mem = _parse_mb(mem_text)
                for impl in impls:
                    if impl in skipped or (impl == "rechunker" and target == "sharded") or (
                            impl == "dask-p2p" and scheduler != "cluster"):
                        continue
                    if s3 is None:
                        tpath, temp = os.path.join(workdir, "target.zarr"), os.path.join(workdir, "temp.zarr")
                        remove = lambda p: shutil.rmtree(p, ignore_errors=True)  # noqa: E731
                    else:
                        tpath, temp, remove = s3.url("target.zarr"), s3.url("temp.zarr"), s3.remove
                    for p in (tpath, temp):
                        remove(p)
                    task = {"impl": impl, "scheduler": scheduler, "threads": args.threads, "source": source,
                            "target": tpath, "temp": temp,
                            "chunks": _resolve(case["sharded_chunks" if target == "sharded" else "chunks"], shape),
                            "shards": shards if target == "sharded" else None, "max_mem": max_mem,
                            "storage_options": options}
                    _log(f"  {scheduler:8} {target:8} max_mem {max_mem // MB:4d} MB  {impl} ...")
                    result = run_one(pythons[impl], task, env, args.timeout)
                    if "error" not in result:
                        result["correct"] = check_target(tpath, refs, None if s3 is None else s3.direct)
                        _log(f"      {result['time']:.2f} s, peak per process "
                             f"{', '.join(f'{m:.0f}' for m in result['peak_mib'])} MiB, correct {result['correct']}")
                    else:
                        _log(f"      ! {result['error']}")
                    runs.append({"scheduler": scheduler, "target": target, "max_mem": max_mem, "impl": impl,
                                 **result})
                    for p in (tpath, temp):
                        remove(p)
    return runs


def _rechunker_versions(python: str | None) -> dict[str, str]:
    if python is None:
        return {}
    code = ("import json, importlib.metadata as m; print(json.dumps({'rechunker env: ' + p: m.version(p) "
            "for p in ('rechunker', 'zarr', 'numcodecs')}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return json.loads(out.stdout) if out.returncode == 0 else {}


# -- the table ------------------------------------------------------------------------------
def per_worker_peak(run: dict, threads: int) -> float:
    """Peak MiB per worker: per worker process on a cluster; the process's peak
    shared by its threads on the threaded scheduler."""
    peaks = run["peak_mib"]
    return max(peaks) if run["scheduler"] == "cluster" else peaks[0] / threads


def declared_mib(run: dict) -> float | None:
    """The peak per worker zarrdask's plan declared, MiB (``None``: not recorded)."""
    return run["declared_worker_peak"] / 2**20 if run.get("declared_worker_peak") else None


def render(results: dict) -> str:
    threads = results["threads"]
    by: dict[tuple, dict[str, dict]] = {}
    for r in results["runs"]:
        by.setdefault((r["scheduler"], r["target"], r["max_mem"]), {})[r["impl"]] = r
    peers = [i for i in IMPLS[1:] if any(i in got for got in by.values())]
    head = ("| scheduler | target | max_mem | zarrdask s | " + " | ".join(f"{p} s" for p in peers) + " | "
            + " | ".join(f"{p} / zd time" for p in peers) + " | peak per worker, MiB (x max_mem): zarrdask | "
            + " | ".join(peers) + " | zarrdask declared peak per worker | zarrdask tasks (stages) "
            "| intermediate left | targets |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for (scheduler, target, max_mem), got in by.items():
        mib = max_mem / 2**20

        def ok(impl: str) -> dict | None:
            r = got.get(impl)
            return None if r is None or "error" in r else r

        def t(impl: str) -> str:
            r = got.get(impl)
            if r is None:
                return "n/a"
            if "error" in r:
                return "error"
            return f"{r['time']:.2f}" + ("" if r.get("correct") else " (WRONG)")

        def peak(impl: str) -> str:
            r = ok(impl)
            if r is None:
                return "n/a"
            m = per_worker_peak(r, threads)
            return f"{m:,.0f} ({m / mib:.2f}x)"

        def ratio(impl: str) -> str:
            r, z = ok(impl), ok("zarrdask")
            return "" if r is None or z is None else f"{r['time'] / z['time']:.2f}x"

        z = ok("zarrdask")
        tasks = left = verdict = declared = ""
        if z is not None:
            tasks = f"{z['tasks']} ({z['stages']})"
            left = f"{z['temp_bytes_after']:,} B"
            measured, d_mib = per_worker_peak(z, threads), declared_mib(z)
            if d_mib:
                declared = f"{d_mib:,.0f} MiB (measured / declared {measured / d_mib:.2f})"
            checks = []
            if ok("dask-p2p") is not None:
                checks.append(("time <= dask p2p", z["time"] <= got["dask-p2p"]["time"]))
            if ok("dask") is not None:
                checks.append(("time <= 1.2x dask tasks", z["time"] <= 1.2 * got["dask"]["time"]))
            checks.append(("peak <= 1.1x", measured <= 1.1 * mib))
            if d_mib:
                checks.append(("declared within 10%", abs(measured / d_mib - 1) <= 0.1))
            checks.append(("tasks >= 2 per worker and stage", z["tasks"] >= 2 * threads * z["stages"]))
            checks.append(("intermediate removed", z["temp_bytes_after"] == 0))
            verdict = "; ".join(("" if good else "MISS: ") + name for name, good in checks)
        lines.append(f"| {scheduler} | {target} | {max_mem // MB} MB | {t('zarrdask')} | "
                     + " | ".join(t(p) for p in peers) + " | " + " | ".join(ratio(p) for p in peers)
                     + f" | {peak('zarrdask')} | " + " | ".join(peak(p) for p in peers)
                     + f" | {declared} | {tasks} | {left} | {verdict} |")
    v = results["versions"]
    notes = [
        "",
        f"- Source {results['shape']} float32, chunks {results['source_chunks']} (Zarr v2, "
        f"{results.get('source_compressor', {}).get('id', 'blosc')}); target chunks {results['target_chunks']}, "
        f"sharded target chunks {results.get('sharded_chunks', results['target_chunks'])} in {results['shards']} "
        "shards (v3, blosc lz4 + shuffle).",
        ("- Stores: an S3 bucket (moto on 127.0.0.1) behind a proxy adding "
         f"{results.get('latency', 0) * 1000:.0f} ms to every request." if results.get("store") == "s3" else
         "- Stores: directories (below)."),
        f"- {threads} threads (threaded scheduler) or {threads} single-threaded worker processes (LocalCluster); "
        f"{results['ncpu']} CPUs ({results['cpu']}); stores in {results['workdir']} ({results['fs']}); "
        f"load average {results['load_before']} at the start; whole run {results['wall_time']:.0f} s; {results['date']}.",
        "- Peak per worker: each cluster worker's peak RSS above its RSS after imports (the largest of the workers); "
        f"on the threaded scheduler the process's peak divided by its {threads} threads. "
        "x max_mem: over max_mem in MiB (256 MB = 244 MiB, 64 MB = 61 MiB).",
        "- peer / zd time: how many times longer the peer takes than zarrdask (dask: rechunk(method=\"tasks\"), "
        "dask-p2p: method=\"p2p\"). Declared peak per worker: what zarrdask's plan says before it runs. "
        "Every target was checked against the source on two (all, 50, 50) columns.",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + f"; zarrdask commit {results['commit']}.",
    ]
    for impl, why in results["skipped"].items():
        notes.append(f"- {impl} skipped: {why}")
    return "\n".join(lines + notes)


if __name__ == "__main__":
    sys.exit(main())
