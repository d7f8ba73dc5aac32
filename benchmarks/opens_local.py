"""Opening large hierarchies from local disk: zarrdask vs zarr-python 3 and
xarray's ``engine="zarr"``, as the hierarchy grows.

    python -m benchmarks.opens_local --members 1000 10000 --repeat 3

Stores (built once with zarrdask into ``--workdir``, consolidated metadata,
Zarr v3 and v2): ``flat`` — one group of N one-dimensional float64 arrays of
10 elements; ``tree`` — N/100 groups of 100 such arrays. Operations:

- ``members()`` of the flat group (zarr-python's ``Group.members()`` beside it);
- ``tree()`` of the tree (zarr-python's ``Group.tree()``);
- ``open_dataset`` of the flat group, ``chunks=None`` and ``chunks={}``;
- ``open_datatree`` of the tree (``chunks=None``).

Each (implementation, operation, store) runs in a fresh process: the
libraries are imported and the operation run once (imports warmed, files in
the page cache) before ``--repeat`` timed calls, each timing the open call
only (opening the group is part of ``members()`` and ``tree()``). The figure
is the best of the repeats. ``growth`` is the time at the largest size over
the time at the smallest (linear: the ratio of the sizes).

Writes ``opens_local.json``, ``opens_local.md`` and ``opens_local.png``
(log-log time against members, per implementation) into ``--out``
(default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PER_GROUP = 100
OPS = (
    ("members", "members()", "flat"),
    ("tree", "tree()", "tree"),
    ("open_dataset", "open_dataset chunks=None", "flat"),
    ("open_dataset_chunks", "open_dataset chunks={}", "flat"),
    ("open_datatree", "open_datatree", "tree"),
)
IMPLS = ("zarrdask", "zarr")


# -- the stores ----------------------------------------------------------------------
def store_path(workdir: str, kind: str, n: int, fmt: int) -> str:
    return os.path.join(workdir, f"{kind}{n}_v{fmt}.zarr")


def build(path: str, kind: str, n: int, fmt: int) -> None:
    """The store ``kind`` (``flat`` or ``tree``) of ``n`` arrays, consolidated;
    kept between runs (a marker file says it is complete)."""
    import numpy as np
    import zarrdask

    done = path + ".done"
    if os.path.exists(done):
        return
    root = zarrdask.open_group(path, mode="w", zarr_format=fmt)
    groups = [root] if kind == "flat" else [root.create_group(f"g{i:04d}") for i in range(max(n // PER_GROUP, 1))]
    per = n // len(groups)
    values = np.arange(10, dtype="f8")
    for g in groups:
        for i in range(per):
            dims = {"dimension_names": ["x"]} if fmt == 3 else {"attributes": {"_ARRAY_DIMENSIONS": ["x"]}}
            a = g.create_array(f"v{i:05d}", shape=(10,), dtype="f8", chunks=(10,), **dims)
            if i == 0:
                a[:] = values
    zarrdask.consolidate_metadata(path)
    open(done, "w").close()


# -- one measurement (in its own process) ------------------------------------------------
def _operation(impl: str, op: str, path: str) -> Any:
    """The call timed: a function of no arguments."""
    import xarray as xr

    if op in ("members", "tree"):
        if impl == "zarrdask":
            import zarrdask

            def run() -> Any:
                g = zarrdask.open_group(path, mode="r")
                return g.members() if op == "members" else g.tree()
        else:
            import zarr

            def run() -> Any:
                g = zarr.open_group(path, mode="r")
                return g.members() if op == "members" else str(g.tree())
        return run
    if op == "open_datatree":
        return lambda: xr.open_datatree(path, engine=impl, chunks=None)
    chunks = {} if op == "open_dataset_chunks" else None
    return lambda: xr.open_dataset(path, engine=impl, chunks=chunks)


def worker(impl: str, op: str, path: str, repeat: int) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")
    run = _operation(impl, op, path)
    run()  # imports, caches and the page cache warmed (what it opened is freed here)
    times, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        del out  # freeing what was opened is not timed
    return {"times": times, "cpu": cpu}


def measure(impl: str, op: str, path: str, repeat: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), ROOT,
                                                         os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    out = subprocess.run([sys.executable, "-m", "benchmarks.opens_local", "--worker", impl, op, path,
                          "--repeat", str(repeat)], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the report --------------------------------------------------------------------------
CLOCKS = (("times", "wall"), ("cpu", "CPU"))


def rows(results: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    """One row per (operation, format, size): both implementations' best times
    (wall clock and the process's CPU time), zarrdask's over engine="zarr"'s,
    and each one's growth from the smallest size."""
    best = {(clock, r["impl"], r["op"], r["format"], r["members"]): min(r[clock]) if r.get(clock) else None
            for r in results for clock, _ in CLOCKS}
    out = []
    for op, label, _ in OPS:
        for fmt in sorted({r["format"] for r in results}, reverse=True):
            for n in sizes:
                row: dict[str, Any] = {"op": op, "operation": label, "format": fmt, "members": n}
                for clock, _ in CLOCKS:
                    sfx = "" if clock == "times" else "_cpu"
                    zd, zp = best.get((clock, "zarrdask", op, fmt, n)), best.get((clock, "zarr", op, fmt, n))
                    row[f"zarrdask{sfx}_ms"] = None if zd is None else zd * 1e3
                    row[f"zarr{sfx}_ms"] = None if zp is None else zp * 1e3
                    row[f"ratio{sfx}"] = None if zd is None or not zp else zd / zp
                    if n != sizes[0]:
                        for impl in ("zarrdask", "zarr"):
                            lo, hi = best.get((clock, impl, op, fmt, sizes[0])), best.get((clock, impl, op, fmt, n))
                            row[f"growth_{impl}{sfx}"] = None if lo is None or hi is None else hi / lo
                out.append(row)
    return out


def _f(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def markdown(table: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    sizes = meta["members"]
    k = sizes[-1] // sizes[0]
    lines = [
        f"Opening consolidated hierarchies from a local directory ({k}x the members costs {k}x the time "
        f"when it grows linearly). Best of {meta['repeat']}, each case in a fresh process; engine=\"zarr\" "
        "is zarr-python's `Group.members()`/`tree()` for the first two operations. ratio = zarrdask / "
        "engine=\"zarr\" (below 1: zarrdask faster); growth = time at this size / time at the smallest.",
    ]
    for clock, name in CLOCKS:
        sfx = "" if clock == "times" else "_cpu"
        lines += ["", f"**{name} time** ({'elapsed' if clock == 'times' else 'CPU time of the process, every thread'})",
                  "", "| operation | format | members | zarrdask ms | engine=\"zarr\" ms | ratio | growth zarrdask "
                  "| growth zarr |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in table:
            lines.append(
                f"| {r['operation']} | v{r['format']} | {r['members']:,} | {_f(r[f'zarrdask{sfx}_ms'], ',.0f')} | "
                f"{_f(r[f'zarr{sfx}_ms'], ',.0f')} | {_f(r[f'ratio{sfx}'], '.2f')} | "
                f"{_f(r.get(f'growth_zarrdask{sfx}'), '.1f')} | {_f(r.get(f'growth_zarr{sfx}'), '.1f')} |")
    lines += ["", f"{meta['cpu']}, {meta['ncpu']} CPUs, load average {meta['loadavg']} when it started, "
              f"{meta['date']}; " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
              + f"; zarrdask commit {meta['commit']}."]
    return "\n".join(lines) + "\n"


def plot(results: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(CLOCKS), len(OPS), figsize=(4 * len(OPS), 3.4 * len(CLOCKS)), sharey="row")
    for row, (clock, name) in zip(axes, CLOCKS):
        for ax, (op, label, _) in zip(row, OPS):
            for impl, color in (("zarrdask", "tab:blue"), ("zarr", "tab:orange")):
                for fmt, style in ((3, "-o"), (2, "--s")):
                    pts = sorted((r["members"], min(r[clock])) for r in results
                                 if r["impl"] == impl and r["op"] == op and r["format"] == fmt and r.get(clock))
                    if pts:
                        ax.loglog([p[0] for p in pts], [p[1] * 1e3 for p in pts], style, color=color,
                                  label=f"{impl} v{fmt}")
            ax.set_title(label, fontsize=10)
            ax.set_xlabel("members")
            ax.grid(True, which="both", alpha=0.3)
        row[0].set_ylabel(f"{name} time (ms, best)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle("Opening consolidated hierarchies on local disk: time against members (log-log)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _meta(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.run import machine_meta

    return {"members": args.members, "repeat": args.repeat, "formats": args.formats, **machine_meta("xarray"),
            "finished": None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--members", type=int, nargs="+", default=[1000, 10000])
    p.add_argument("--formats", type=int, nargs="+", default=[3, 2])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--ops", nargs="+", default=[op for op, _, _ in OPS])
    p.add_argument("--impls", nargs="+", default=list(IMPLS))
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "zarrdask-opens-local"))
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--worker", nargs=3, metavar=("IMPL", "OP", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker, args.repeat)))
        return 0
    args.members = sorted(args.members)
    meta = _meta(args)  # the load average before the run
    os.makedirs(args.workdir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    results = []
    for fmt in args.formats:
        for n in args.members:
            for op, label, kind in OPS:
                if op not in args.ops:
                    continue
                path = store_path(args.workdir, kind, n, fmt)
                build(path, kind, n, fmt)
                for impl in args.impls:
                    r = measure(impl, op, path, args.repeat)
                    results.append({"impl": impl, "op": op, "format": fmt, "members": n, **r})
                    shown = (f"{min(r['times']) * 1e3:8.0f} ms, CPU {min(r['cpu']) * 1e3:8.0f} ms" if r.get("times")
                             else r.get("error"))
                    print(f"{label:26s} v{fmt} {n:>6} {impl:9s} {shown}", flush=True)
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    table = rows(results, args.members)
    text = markdown(table, meta)
    from benchmarks.run import save_results

    save_results(args.out, "opens_local", meta, results, table, text)
    plot(results, os.path.join(args.out, "opens_local.png"))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
