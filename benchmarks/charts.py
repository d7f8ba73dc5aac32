"""The charts of the performance page, drawn from the benchmarks' results.

    python -m benchmarks.charts                      # benchmarks/results/*.json -> docs/images/perf-*.png
    python -m benchmarks.charts --results DIR --out DIR

Each chart is drawn from the JSON one benchmark wrote; a chart whose results
are missing is skipped (and said so):

* ``perf-local.png`` from ``results.json`` (``python -m benchmarks``): how many
  times faster (or leaner) zarrdask is than each peer, per case and operation;
* ``perf-remote.png`` from ``remote.json`` (``python -m benchmarks.remote``): the
  same at each added latency, for each of zarrdask's two URL paths;
* ``perf-opens.png`` from ``opens.json`` (``python -m benchmarks.opens``): round
  trips an open pays, against its budget and engine="zarr";
* ``perf-opens-local.png`` from ``opens_local.json``
  (``python -m benchmarks.opens_local``): open time against the number of members;
* ``perf-rechunk.png`` from ``rechunk.json`` (``python -m benchmarks.rechunk``):
  time and each worker's peak memory over ``max_mem``; ``perf-rechunk-s3.png``
  the same from ``s3/rechunk.json`` (``python -m benchmarks.rechunk --store s3
  --out benchmarks/results/s3``), and ``perf-rechunk-s3-maps.png`` from
  ``s3-maps/rechunk.json`` (``... --case to-maps --store s3 --out benchmarks/results/s3-maps``).

Ratios are drawn on a log scale around 1, so "2x faster" and "2x slower" are
the same length on either side of the line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLORS = {"zarr-python": "tab:orange", "zarrs": "tab:red", "tensorstore": "tab:green", "dask": "tab:purple",
          "dask-p2p": "tab:pink", "rechunker": "tab:brown", 'engine="zarr"': "tab:orange", "zarrdask": "tab:blue"}
RECHUNK_IMPLS = ("zarrdask", "dask", "dask-p2p", "rechunker")
LOCAL_OPS = (("write all", "write"), ("read all", "full read"), ("open + first 10x10 window", "open + first window"),
             ("random 10x10 windows", "1,000 random windows"), ("peak memory of a full read", "peak memory"))


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _load(results_dir: str, name: str) -> dict | None:
    path = os.path.join(results_dir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _load_results(results_dir: str, name: str) -> dict | None:
    """The results in ``name``; the opens rows may come from the remote benchmark's."""
    results = _load(results_dir, name)
    if results is None and name == "opens.json":
        results = (_load(results_dir, "remote.json") or {}).get("opens")
    return results


def _ratio_axis(ax: Any, labels: list[str], series: dict[str, list[float | None]], title: str) -> None:
    """Horizontal bars of ratios (>1: zarrdask ahead) on a log axis centred on 1."""
    n, k = len(labels), max(1, len(series))
    height = 0.8 / k
    finite = [v for vals in series.values() for v in vals if v]
    # the axis stops at 6x either way; a bar beyond runs to the frame and keeps its
    # figure, written inside the bar's end so that it stays within the frame
    span = min(max([2.0] + [max(v, 1 / v) for v in finite]) * 1.25, 6.0)
    lim = math.log10(span)
    room = lim * 1.35  # room for the figures beside the longest bars
    for j, (peer, vals) in enumerate(series.items()):
        ys = [i + (j - (k - 1) / 2) * height for i in range(n)]
        ends = [math.log10(v) if v and 1 / span <= v <= span else math.copysign(room, v - 1) if v else 0.0
                for v in vals]
        ax.barh(ys, ends, height, left=0, color=COLORS.get(peer), label=f"vs {peer}")
        for y, v, end in zip(ys, vals, ends, strict=True):
            if not v:
                continue
            cut = abs(end) == room
            outward = (v >= 1) != cut  # a figure sits beyond its bar's end, inside the end of a cut bar
            ax.annotate(f"{v:.2f}x", (end, y), xytext=(3 if outward else -3, 0), textcoords="offset points",
                        va="center", fontsize=7, ha="left" if outward else "right",
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"} if cut else None)
    ax.set_xlim(-room, room)
    ticks = [t for t in (0.25, 0.5, 1, 2, 4) if abs(math.log10(t)) <= lim]
    ax.set_xticks([math.log10(t) for t in ticks], [f"{t:g}x" for t in ticks])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)


def local_chart(results: dict, path: str) -> None:
    plt = _plt()
    rows = results["rows"]
    cases = list(results["cases"])
    peers = [p for p in ("zarr-python", "zarrs", "tensorstore") if p in results["meta"].get("impls", ()) or
             any(r["vs"].get(p) for r in rows)]
    fig, grid = plt.subplots(3, 2, figsize=(10, 11))
    axes = grid.ravel()
    for ax, (op, title) in zip(axes, LOCAL_OPS):
        series = {p: [next((r["vs"].get(p) for r in rows if r["case"] == c and op in r["operation"]), None)
                      for c in cases] for p in peers}
        _ratio_axis(ax, cases, series, title)
    handles, names = axes[0].get_legend_handles_labels()
    axes[-1].axis("off")
    axes[-1].legend(handles, names, loc="center", fontsize=10, frameon=False,
                    title="zarrdask's advantage\n(right of the line: zarrdask ahead)")
    m = results["meta"]
    fig.suptitle(f"Local store, {m['size']}x{m['size']} float32, {m['threads']} threads: how many times faster "
                 "(memory: leaner) zarrdask is", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _remote_paths(results: dict) -> list[str]:
    names = {impl for op in results["rows"].values() for lat in op.values() for impl in lat}
    return sorted(n for n in names if n.startswith("zarrdask"))


#: the remote benchmark's rows, as the page names them
REMOTE_LABELS = {
    "open100": "open 100 arrays by name", "open1": "open one array", "window": "1024² window, 4 shards",
    "read_sharded": "full read, 4 shards", "read_chunked": "full read, 256 chunks",
    "write_chunked": "S3 write, 256 chunks", "write_sharded": "S3 write, 4 shards",
}


def _remote_labels(results: dict) -> dict[str, str]:
    from .remote import OPS

    return {**dict(results.get("ops") or OPS), **REMOTE_LABELS}


def remote_chart(results: dict, path: str) -> None:
    plt = _plt()
    labels = _remote_labels(results)
    ops = [op for op in results["rows"]]
    latencies = results["latencies_ms"]
    ours = _remote_paths(results)
    peers = [p for p in ("zarr-python", "tensorstore")
             if any(p in lat for op in results["rows"].values() for lat in op.values())]
    fig, axes = plt.subplots(len(latencies), len(ours), figsize=(max(10.0, 5.5 * len(ours)), 4.0 * len(latencies)),
                             squeeze=False)
    for r, latency in enumerate(latencies):
        for c, ours_name in enumerate(ours):
            def ratio(op: str, peer: str, ours_name: str = ours_name, latency: float = latency) -> float | None:
                row = results["rows"][op].get(str(latency), {})
                a, b = row.get(ours_name), row.get(peer)
                if not a or not b or a.get("error") or b.get("error") or not a.get("ms") or not b.get("ms"):
                    return None
                return b["ms"] / a["ms"]
            series = {p: [ratio(op, p) for op in ops] for p in peers}
            _ratio_axis(axes[r][c], [labels.get(op, op) for op in ops], series,
                        f"{ours_name}, {latency:g} ms added per request")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=9, frameon=False)
    fig.suptitle("HTTP and S3 (moto): how many times faster zarrdask is than each peer "
                 "(right of the line: zarrdask ahead)", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def opens_chart(results: dict, path: str) -> None:
    """Round trips (request waves in the server's log) and time of each open at
    the highest latency, per implementation, each open's budget marked."""
    plt = _plt()
    from .opens import IMPLS, NAMES

    hi = str(max(results["latencies_ms"]))
    rows = results["rows"]
    impls = [i for i in IMPLS if any(i in r["impls"] for r in rows)]
    labels = [f"{r['store']}: {r['call']}" for r in rows]
    fig, (ax_w, ax_t) = plt.subplots(1, 2, figsize=(13, 0.6 * len(rows) + 2.2), sharey=True)
    height = 0.8 / len(impls)
    colors = {"zarrdask-obstore": "tab:blue", "zarrdask-fsspec": "tab:cyan", "zarr": "tab:orange"}
    for k, impl in enumerate(impls):
        ys = [i + (k - (len(impls) - 1) / 2) * height for i in range(len(rows))]
        got = [r["impls"].get(impl, {}).get(hi, {}) for r in rows]
        ax_w.barh(ys, [g.get("waves", 0) for g in got], height, color=colors.get(impl), label=NAMES[impl])
        ax_t.barh(ys, [g.get("ms", 0) for g in got], height, color=colors.get(impl), label=NAMES[impl])
    for i, r in enumerate(rows):
        ax_w.plot([r["budget"]] * 2, [i - 0.45, i + 0.45], color="black", linewidth=2,
                  label="budget" if i == 0 else None)
    ax_w.set_yticks(range(len(rows)), labels, fontsize=8)
    ax_w.invert_yaxis()
    ax_w.set_xlabel("round trips (fewer is better)")
    ax_t.set_xlabel("time, ms (lower is better)")
    for ax in (ax_w, ax_t):
        ax.grid(axis="x", alpha=0.3)
    handles, names = ax_w.get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=9, frameon=False)
    fig.suptitle(f"Opening a dataset with {float(hi):g} ms added to every request", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def opens_local_chart(results: dict, path: str) -> None:
    from .opens_local import plot

    plot(results["results"], path)


def rechunk_chart(results: dict, path: str) -> None:
    plt = _plt()
    from .rechunk import per_worker_peak

    by: dict[tuple, dict[str, dict]] = {}
    for r in results["runs"]:
        if "error" not in r:
            by.setdefault((r["scheduler"], r["target"], r["max_mem"]), {})[r["impl"]] = r
    keys = list(by)
    labels = [f"{s}, {t}, {m / 1e6:g} MB" for s, t, m in keys]
    impls = [i for i in RECHUNK_IMPLS if any(i in by[k] for k in keys)]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(13, 0.5 * len(keys) + 2.4), sharey=True)
    height = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        ys = [i + (j - (len(impls) - 1) / 2) * height for i in range(len(keys))]
        times = [by[k].get(impl, {}).get("time", 0) for k in keys]
        peaks = [per_worker_peak(by[k][impl], results["threads"]) / (k[2] / 2**20) if impl in by[k] else 0
                 for k in keys]
        ax_t.barh(ys, times, height, color=COLORS[impl], label=impl)
        ax_m.barh(ys, peaks, height, color=COLORS[impl], label=impl)
    ax_m.axvline(1.0, color="black", linestyle="--", linewidth=1, label="max_mem")
    ax_m.axvline(1.1, color="grey", linestyle=":", linewidth=1, label="1.1x max_mem")
    ax_m.set_xscale("log")
    top = max([1.2] + [v for v in ax_m.get_xlim()])
    ticks = [t for t in (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32) if t <= top * 1.5]
    ax_m.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax_m.minorticks_off()
    ax_t.set_xlabel("seconds (lower is better)")
    ax_m.set_xlabel("peak memory per worker / max_mem (log; at or under 1 keeps the promise)")
    ax_t.set_yticks(range(len(keys)), labels, fontsize=8)
    ax_t.invert_yaxis()
    for ax in (ax_t, ax_m):
        ax.grid(axis="x", alpha=0.3)
    handles, names = ax_m.get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=9, frameon=False)
    shape = "x".join(str(s) for s in results["shape"])
    where = "local disk"
    if results.get("store") == "s3":
        where = f"S3 (moto, {results.get('latency', 0) * 1000:.0f} ms per request)"
    layout = {"to-series": " to time series", "to-maps": " to maps"}.get(results.get("case", "to-series"), "")
    fig.suptitle(f"Rechunking a {shape} float32 array{layout} on {where}: time and memory (scheduler, target, "
                 "max_mem)", fontsize=11)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- compact tables for the performance page ---------------------------------------
def _cell(v: float | None, digits: int = 0) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def local_tables(results: dict) -> str:
    """One narrow table per operation: a row per case, a column per implementation."""
    rows, impls = results["rows"], results["meta"].get("impls") or ["zarrdask", "zarr-python", "zarrs", "tensorstore"]
    out = []
    for op, title in LOCAL_OPS:
        mine = [r for r in rows if op in r["operation"] and r["case"] != "dask"]
        if not mine:
            continue
        unit = mine[0]["unit"].split(" (")[0]
        better = "higher" if unit == "MiB/s" else "lower"
        out += [f"**{title}** ({unit}, {better} is better)", "",
                "| case | " + " | ".join(impls) + " |", "|---|" + "---:|" * len(impls)]
        for r in mine:
            out.append(f"| {r['case']} | " + " | ".join(r["display"].get(i, "") for i in impls) + " |")
        out.append("")
    return "\n".join(out)


def remote_tables(results: dict) -> str:
    labels = _remote_labels(results)
    impls = _remote_paths(results) + [p for p in ("zarr-python", "tensorstore")
                                      if any(p in lat for op in results["rows"].values() for lat in op.values())]
    out = []
    for latency in results["latencies_ms"]:
        out += [f"**{latency:g} ms added to every request** (ms / requests; lower is better)", "",
                "| operation | " + " | ".join(impls) + " |", "|---|" + "---:|" * len(impls)]
        for op, by_latency in results["rows"].items():
            row = by_latency.get(str(latency), {})
            cells = []
            for impl in impls:
                r = row.get(impl)
                cells.append("n/a" if r is None else "error" if r.get("error") else
                             f"{r['ms']:,.0f} / {r['requests']}")
            out.append(f"| {labels.get(op, op)} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def rechunk_tables(results: dict) -> str:
    """Two narrow tables: each run's time, and each worker's peak over ``max_mem``;
    and zarrdask's peak per worker as its plan declared it, beside the measured one."""
    from .rechunk import declared_mib, per_worker_peak

    by: dict[tuple, dict[str, dict]] = {}
    for r in results["runs"]:
        by.setdefault((r["scheduler"], r["target"], r["max_mem"]), {})[r["impl"]] = r
    impls = [i for i in RECHUNK_IMPLS if any(i in v for v in by.values())]
    out = []
    for title, value in (("time, s", lambda r, m: f"{r['time']:.1f}"),
                         ("peak memory per worker / max_mem",
                          lambda r, m: f"{per_worker_peak(r, results['threads']) / (m / 2**20):.2f}x")):
        out += [f"**{title}**", "", "| scheduler, target, max_mem | " + " | ".join(impls) + " |",
                "|---|" + "---:|" * len(impls)]
        for (scheduler, target, max_mem), got in by.items():
            cells = [value(got[i], max_mem) if i in got and "error" not in got[i] else "n/a" for i in impls]
            out.append(f"| {scheduler}, {target}, {max_mem / 1e6:g} MB | " + " | ".join(cells) + " |")
        out.append("")
    zd = [(k, got["zarrdask"]) for k, got in by.items() if "error" not in got.get("zarrdask", {"error": ""})]
    declared = [(k, r) for k, r in zd if declared_mib(r)]
    if declared:  # what zarrdask's plan said per worker before it ran, beside what each worker then held
        out += ["**zarrdask: peak memory per worker, declared by the plan and measured (MiB)**", "",
                "| scheduler, target, max_mem | declared | measured | measured / declared |", "|---|---:|---:|---:|"]
        for (scheduler, target, max_mem), r in declared:
            d, m = declared_mib(r), per_worker_peak(r, results["threads"])
            out.append(f"| {scheduler}, {target}, {max_mem / 1e6:g} MB | {d:.0f} | {m:.0f} | {m / d:.2f} |")
        out.append("")
    return "\n".join(out)


def opens_tables(results: dict) -> str:
    """Round trips (waves in the server's log), then time, of each open at the
    highest latency; a row per open, a column per implementation."""
    from .opens import IMPLS, NAMES

    hi = str(max(results["latencies_ms"]))
    out = []
    # round trips: zarrdask's default URL path (obstore) against engine="zarr", beside the budget
    for title, cell, extra, impls in (
            ("round trips", lambda m: f"{m['waves']}", "budget", ["zarrdask-obstore", "zarr"]),
            ("time, ms (requests)", lambda m: f"{m['ms']:,.0f} ({m['requests']})", None, list(IMPLS))):
        out += [f"**{title}**, {float(hi):g} ms added to every request", "",
                "| open | " + (f"{extra} | " if extra else "") + " | ".join(NAMES[i] for i in impls) + " |",
                "|---|" + ("---:|" if extra else "") + "---:|" * len(impls)]
        for row in results["rows"]:
            cells = [cell(row["impls"][i][hi]) if i in row["impls"] else "n/a" for i in impls]
            store = row["store"].replace(", consolidated", ", consolidated").replace("not consolidated", "unconsolidated")
            lead = f"| {store}, `{row['call']}` | " + (f"{row['budget']} | " if extra else "")
            out.append(lead + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def opens_local_tables(results: dict) -> str:
    """Per operation and format: each size's time, zarrdask and engine="zarr"."""
    sizes = sorted({r["members"] for r in results["rows"]})
    by: dict[tuple, dict[int, dict]] = {}
    for r in results["rows"]:
        by.setdefault((r["operation"], r["format"]), {})[r["members"]] = r
    heads = [f"{who}, {n:,}" for n in sizes for who in ("zarrdask", "zarr")]
    out = ["| operation | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for (op, fmt), got in by.items():
        cells = [_cell(got.get(n, {}).get(key)) for n in sizes for key in ("zarrdask_ms", "zarr_ms")]
        out.append(f"| {op}, v{fmt} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


TABLES: tuple[tuple[str, Callable[[dict], str]], ...] = (
    ("results.json", local_tables), ("remote.json", remote_tables), ("opens.json", opens_tables),
    ("opens_local.json", opens_local_tables), ("rechunk.json", rechunk_tables),
    ("s3/rechunk.json", rechunk_tables), ("s3-maps/rechunk.json", rechunk_tables))


CHARTS: tuple[tuple[str, str, Callable[[dict, str], None]], ...] = (
    ("results.json", "perf-local.png", local_chart),
    ("remote.json", "perf-remote.png", remote_chart),
    ("opens.json", "perf-opens.png", opens_chart),
    ("opens_local.json", "perf-opens-local.png", opens_local_chart),
    ("rechunk.json", "perf-rechunk.png", rechunk_chart),
    ("s3/rechunk.json", "perf-rechunk-s3.png", rechunk_chart),
    ("s3-maps/rechunk.json", "perf-rechunk-s3-maps.png", rechunk_chart),
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.charts", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "images"))
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for source, image, draw in CHARTS:
        results = _load_results(args.results, source)
        if results is None:
            print(f"skipped {image}: no {os.path.join(args.results, source)}")
            continue
        draw(results, os.path.join(args.out, image))
        print(f"wrote {os.path.join(args.out, image)}")
    parts = []
    for source, render in TABLES:
        results = _load_results(args.results, source)
        if results is not None:
            parts.append(f"<!-- from {source} -->\n\n" + render(results))
    tables = os.path.join(args.results, "perf-tables.md")
    with open(tables, "w") as f:
        f.write("\n".join(parts))
    print(f"wrote {tables}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
