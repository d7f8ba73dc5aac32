"""Run the benchmark: ``python -m benchmarks`` (or ``python benchmarks/run.py``).

Every (implementation, case, step) runs in a fresh ``python -m benchmarks.worker``
process with the same thread settings; this process only orchestrates, then
prints the table and writes ``results.json``, ``results.png`` and ``table.md``.
See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # python benchmarks/run.py
    sys.path.insert(0, ROOT)

from benchmarks import report
from benchmarks.cases import CASES, ensure_data
from benchmarks.impls import IMPLS
from benchmarks.worker import MARKER

QUICK_SIZE = 2048


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def worker_env(threads: int, workdir: str) -> dict[str, str]:
    env = dict(os.environ)
    # byte-code caching on, in a cache of our own: an editable install (zarrdask) run
    # with PYTHONDONTWRITEBYTECODE=1 would recompile every module it imports lazily
    # (codecs, on open) in every fresh process, while site-packages ship compiled
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(workdir, "pycache")
    env.update(
        {
            "ZARRDASK_THREADS": str(threads),
            # codec- and BLAS-internal threads off everywhere: each library gets
            # exactly `threads` worker threads of its own
            "BLOSC_NTHREADS": "1",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "NUMEXPR_NUM_THREADS": "1",
            "PYTHONPATH": ROOT + os.pathsep + env.get("PYTHONPATH", ""),
        }
    )
    return env


class Runner:
    def __init__(self, threads: int, timeout: float, workdir: str) -> None:
        self.env = worker_env(threads, workdir)
        self.timeout = timeout
        self.workers = 0

    def __call__(self, task: dict) -> dict:
        self.workers += 1
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.worker"], input=json.dumps(task), capture_output=True,
                text=True, cwd=ROOT, env=self.env, timeout=self.timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {self.timeout:.0f} s"}
        for line in reversed(proc.stdout.splitlines()):
            if line.startswith(MARKER):
                result = json.loads(line[len(MARKER):])
                if "error" in result:
                    _log(f"    ! {task['op']} {task.get('impl', '')}: {result['error']}")
                    _log("      " + "\n      ".join(proc.stderr.strip().splitlines()[-8:]))
                return result
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        _log(f"    ! {task['op']} {task.get('impl', '')} crashed (exit {proc.returncode}):\n{tail}")
        return {"error": f"worker exited with {proc.returncode}: {tail.splitlines()[-1] if tail else ''}"}


def merge_reads(procs: list[dict]) -> dict:
    """One result from the read workers of one implementation: every timing kept,
    the best taken later; memory and correctness from all of them."""
    ok = [p for p in procs if "error" not in p]
    if not ok:
        return procs[0] if procs else {"error": "no read worker ran"}
    out = dict(ok[0])
    out["read_times"] = [t for p in ok for t in p["read_times"]]
    out["windows_time"] = min(p["windows_time"] for p in ok)
    warm = [p["warm_open_time"] for p in ok if "warm_open_time" in p]
    if warm:
        out["warm_open_time"] = min(warm)
    out["windows_ok"] = all(p.get("windows_ok", False) for p in ok)
    out["correct"] = all(p.get("correct", False) for p in ok)
    out["memory"] = min((p["memory"] for p in ok), key=lambda m: m["peak_above_baseline_bytes"])
    out["memory_all"] = [p["memory"]["peak_above_baseline_bytes"] for p in ok]
    out["first_read_times"] = [p["first_read_time"] for p in ok]
    out["processes"] = len(ok)
    errors = [p["error"] for p in procs if "error" in p]
    if errors:
        out["worker_errors"] = errors
    return out


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10,
                             check=False)
        dirty = subprocess.run(["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--", "src"],
                               cwd=ROOT, capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else None
    except Exception:  # noqa: BLE001 - no git: no commit to report
        return None


def source_fingerprint() -> str | None:
    """A hash of zarrdask's source files, to notice edits made while the benchmark runs."""
    import hashlib
    from importlib.util import find_spec

    spec = find_spec("zarrdask")
    if spec is None or not spec.submodule_search_locations:
        return None
    h = hashlib.sha1()
    for root in spec.submodule_search_locations:
        for dirpath, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    h.update(os.path.relpath(path, root).encode())
                    with open(path, "rb") as f:
                        h.update(f.read())
    return h.hexdigest()[:12]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("zarrdask", "zarr", "zarrs", "tensorstore", "numcodecs", "numpy", "dask"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2, help="threads per implementation (default 2)")
    p.add_argument("--size", type=int, default=8192, help="arrays are SIZE x SIZE float32 (default 8192: 256 MiB)")
    p.add_argument("--quick", action="store_true", help=f"smoke run: --size {QUICK_SIZE}, one repeat, 200 windows")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, from: {', '.join(CASES)}")
    p.add_argument("--impls", default=",".join(IMPLS), help=f"comma-separated, from: {', '.join(IMPLS)}")
    p.add_argument("--repeat", type=int, default=5, help="timed full reads / codec-floor passes (best kept; default 5)")
    p.add_argument("--write-repeat", type=int, default=3, help="timed full writes (best kept; default 3)")
    p.add_argument("--read-procs", type=int, default=2,
                   help="read workers per implementation and case, interleaved (default 2; all timings pooled)")
    p.add_argument("--first-repeat", type=int, default=3,
                   help="fresh processes timing open + first small window, read workers included (best kept; default 3)")
    p.add_argument("--windows", type=int, default=1000, help="random small windows (default 1000)")
    p.add_argument("--seed", type=int, default=1234, help="seed of the random window positions")
    p.add_argument("--graph-chunks", type=int, default=1_000_000,
                   help="chunks of the array whose dask array is built (default 1,000,000; 0 skips)")
    p.add_argument("--workdir", default=None,
                   help="where stores are written (default /dev/shm/zarrdask-bench, a tmpfs, when it has room, "
                        "else /tmp/zarrdask-bench; pass a directory on disk to include the file system)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"), help="results directory")
    p.add_argument("--keep", action="store_true", help="keep the stores written by each implementation")
    p.add_argument("--timeout", type=float, default=600, help="seconds before a worker is killed")
    args = p.parse_args(argv)
    if args.quick:
        args.size = QUICK_SIZE if args.size == 8192 else args.size
        args.repeat, args.write_repeat, args.first_repeat, args.read_procs = 1, 1, 1, 1
        args.windows = min(args.windows, 200)
        args.graph_chunks = min(args.graph_chunks, 10_000)
    if args.workdir is None:
        args.workdir = default_workdir(args.size)
    args.cases = [c for c in args.cases.split(",") if c]
    args.impls = [i for i in args.impls.split(",") if i]
    for c in args.cases:
        if c not in CASES:
            p.error(f"unknown case {c!r}; known: {', '.join(CASES)}")
    for i in args.impls:
        if i not in IMPLS:
            p.error(f"unknown implementation {i!r}; known: {', '.join(IMPLS)}")
    return args


def fs_type(path: str) -> str:
    """The file system type holding ``path`` (Linux /proc/mounts; "unknown" elsewhere)."""
    path = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mnt, typ = parts[1], parts[2]
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, kind = mnt, typ
    except OSError:
        pass
    return kind


def default_workdir(size: int) -> str:
    """/dev/shm (tmpfs: no disk write-back or discard noise) when it has room, else /tmp."""
    shm = "/dev/shm"
    need = 8 * size * size * 4 + (1 << 30)
    try:
        if os.path.isdir(shm) and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > need:
            return os.path.join(shm, "zarrdask-bench")
    except OSError:
        pass
    return os.path.join("/tmp", "zarrdask-bench")


def _cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) CPU jiffies of the whole machine since boot (Linux /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
    total = sum(vals[:8])  # user nice system idle iowait irq softirq steal
    return total - idle, total


def _own_cpu_seconds() -> float:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _loadavg() -> float | None:
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return None


def machine_meta(*packages: str) -> dict[str, Any]:
    """What a benchmark records about the machine and the run: CPU, load, versions
    (those of :func:`_versions` and of ``packages``), commit and date."""
    from importlib.metadata import version

    versions = _versions()
    for name in packages:
        try:
            versions[name] = version(name)
        except Exception:  # noqa: BLE001 - reported as missing
            versions[name] = "missing"
    return {"cpu": _cpu_model(), "loadavg": _loadavg(), "ncpu": os.cpu_count(), "platform": platform.platform(),
            "versions": versions, "commit": _git_commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def save_results(out: str, name: str, meta: dict, results: list, table: Any, text: str) -> None:
    """Write ``<name>.json`` (meta, every result, the table's rows) and ``<name>.md``
    (the table as text) into ``out``."""
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump({"meta": meta, "results": results, "rows": table}, f, indent=1)
    with open(os.path.join(out, f"{name}.md"), "w") as f:
        f.write(text)


def _sync() -> None:
    # flush dirty pages between steps so write-back does not run during the next measurement
    if hasattr(os, "sync"):
        os.sync()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    load_before = _loadavg()
    jiffies_before, own_before = _cpu_jiffies(), _own_cpu_seconds()
    run = Runner(args.threads, args.timeout, args.workdir)
    size, threads = args.size, args.threads
    os.makedirs(args.workdir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)

    _log(f"zarrdask benchmark: {size}x{size} float32, {threads} threads, cases {args.cases}, impls {args.impls}")
    _log(f"  stores in {args.workdir} ({fs_type(args.workdir)})")
    _log(f"  generating data in {args.workdir} ...")
    data = ensure_data(args.workdir, size)
    results: dict = {
        "meta": {
            "started": _dt.datetime.now().isoformat(timespec="seconds"),
            "argv": sys.argv[1:] if argv is None else argv,
            "size": size,
            "dtype": "float32",
            "array_bytes": size * size * 4,
            "threads": threads,
            "repeat": args.repeat,
            "write_repeat": args.write_repeat,
            "first_repeat": args.first_repeat,
            "read_procs": args.read_procs,
            "windows": args.windows,
            "window_shape": [10, 10],
            "seed": args.seed,
            "workdir": args.workdir,
            "workdir_fs": fs_type(args.workdir),
            "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "versions": _versions(),
            "git_commit": _git_commit(),
            "source_fingerprint": source_fingerprint(),
            "read_store": "every implementation reads the same store, written once by zarr-python",
            "page_cache": "warm (reads follow a write and a warm-up read; the page cache is not dropped)",
        },
        "cases": {},
        "graph": {},
    }
    base = {"threads": threads, "size": size, "data": data}

    # one small write + read of every case per implementation: byte code compiled and
    # cached, module files in the page cache, before anything is timed
    _log("  warm-up (imports, byte-code cache)")
    for impl in args.impls:
        run({**base, "op": "warm", "impl": impl, "cases": [CASES[c].scaled(size).to_json() for c in args.cases],
             "path": os.path.join(args.workdir, "warm")})
    shutil.rmtree(os.path.join(args.workdir, "warm"), ignore_errors=True)

    for name in args.cases:
        case = CASES[name].scaled(size)
        cj = case.to_json()
        cdir = os.path.join(args.workdir, f"{name}-{size}")
        ref = os.path.join(cdir, "reference.zarr")
        entry: dict = {"case": cj, "impls": {i: {} for i in args.impls}}
        results["cases"][name] = entry
        t_case = time.perf_counter()
        _log(f"[{name}] {case.title}")

        _log("  reference store (zarr-python)")
        entry["reference"] = run({**base, "op": "prepare", "case": cj, "path": ref})
        _sync()

        _log("  codec floor (numcodecs)")
        entry["floor"] = run({**base, "op": "floor", "case": cj, "path": ref, "repeat": args.repeat})

        written = {}
        for impl in args.impls:
            _log(f"  write: {impl}")
            dest = os.path.join(cdir, f"written-{impl}.zarr")
            entry["impls"][impl]["write"] = run(
                {**base, "op": "write", "impl": impl, "case": cj, "dest": dest, "repeat": args.write_repeat}
            )
            written[impl] = dest
            _sync()
        _log("  verify written stores (zarr-python)")
        entry["verify"] = run({**base, "op": "verify", "case": cj, "paths": written})
        if not args.keep:
            for dest in written.values():
                shutil.rmtree(dest, ignore_errors=True)
        _sync()

        # reads: --read-procs rounds, implementations interleaved within a round, so
        # slow drifts of the machine hit every implementation alike
        procs: dict[str, list[dict]] = {impl: [] for impl in args.impls}
        for rnd in range(args.read_procs):
            for impl in args.impls:
                _log(f"  read: {impl} ({rnd + 1}/{args.read_procs})")
                procs[impl].append(run({**base, "op": "read", "impl": impl, "case": cj, "path": ref,
                                        "repeat": args.repeat, "windows": args.windows, "seed": args.seed,
                                        "dask": rnd == 0}))
        for impl in args.impls:
            r = merge_reads(procs[impl])
            firsts = [{"time": p["first_window_time"], "ok": p.get("correct", False)} for p in procs[impl] if "error" not in p]
            for _ in range(max(0, args.first_repeat - len(firsts))):
                firsts.append(run({**base, "op": "first", "impl": impl, "case": cj, "path": ref}))
            entry["impls"][impl]["read"] = r
            entry["impls"][impl]["first"] = firsts
        entry["wall_time_s"] = time.perf_counter() - t_case
        if not args.keep:
            shutil.rmtree(cdir, ignore_errors=True)
        _log(f"  ({entry['wall_time_s']:.0f} s)")

    if args.graph_chunks:
        _log(f"dask array of an array with {args.graph_chunks:,} chunks")
        gpath = os.path.join(args.workdir, f"many-chunks-{args.graph_chunks}.zarr")
        results["graph"]["array"] = run({**base, "op": "make_many_chunks", "path": gpath, "nchunks": args.graph_chunks})
        for impl in args.impls:
            results["graph"][impl] = run({**base, "op": "graph", "impl": impl, "path": gpath})
        if not args.keep:
            shutil.rmtree(gpath, ignore_errors=True)

    if not args.keep and os.path.isfile(data):  # in RAM when the work directory is a tmpfs
        os.remove(data)
    results["meta"]["workers"] = run.workers
    results["meta"]["wall_time_s"] = time.perf_counter() - start
    # how much CPU did other processes use meanwhile? (they make every number noisier)
    jiffies_after = _cpu_jiffies()
    results["meta"]["loadavg_before"] = load_before
    results["meta"]["source_fingerprint_end"] = source_fingerprint()
    results["meta"]["git_commit_end"] = _git_commit()
    if jiffies_before and jiffies_after:
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        busy = (jiffies_after[0] - jiffies_before[0]) / hz
        capacity = (jiffies_after[1] - jiffies_before[1]) / hz
        other = max(0.0, busy - (_own_cpu_seconds() - own_before))
        results["meta"]["other_cpu_fraction"] = other / capacity if capacity else None

    rows = report.build_rows(results, args.impls)
    text = report.render_text(rows, results)
    print(text)
    md = report.render_markdown(rows, results)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(md)
    results["rows"] = rows
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    png = os.path.join(args.out, "results.png")
    try:
        report.plot(results, args.impls, png)
    except ImportError as e:
        _log(f"no plot ({e}); pip install matplotlib")
        png = None
    _log(f"wrote {os.path.join(args.out, 'results.json')}, {os.path.join(args.out, 'table.md')}"
         + (f", {png}" if png else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
