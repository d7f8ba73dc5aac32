"""Turn the raw results into table rows, a text table, a Markdown table and a plot.

Ratio columns are *zarrdask's advantage*: ``zd vs zp`` is zarr-python's time
divided by zarrdask's (equivalently zarrdask's MB/s over zarr-python's; for
memory, zarr-python's peak over zarrdask's), so above 1 means zarrdask is
better. ``zd / floor`` is the other way round: zarrdask's read time divided by
the codec floor's (1.00 = no overhead at all).
"""

from __future__ import annotations

from typing import Any

MiB = 1 << 20
ZD, ZP, ZR, TS = "zarrdask", "zarr-python", "zarrs", "tensorstore"
SHORT = {ZP: "zp", ZR: "zarrs", TS: "ts"}
PEERS = (ZP, ZR, TS)

# the targets of issue 16, as {peer: minimum of zarrdask's advantage}
TARGETS = {
    "write all": {ZR: 1.0, TS: 1.2},
    "read all": {ZR: 1.0, TS: 1.2},
    "first window": {TS: 1.0},  # zarrdask's time at most tensorstore's
    "warm open": {TS: 1.0},
    "random windows": {TS: 1.0},
}
#: zarrdask's full read at most this multiple of the floor *including* one copy into place
FLOOR_MAX = 1.15
MEMORY_MAX = 1.1
#: a dask sum over the sharded case at least this fraction of the direct read's throughput
DASK_MIN = 0.9


def _best(times: Any) -> float | None:
    if not times:
        return None
    vals = [t for t in times if isinstance(t, (int, float))]
    return min(vals) if vals else None


def _fmt(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _err(d: Any) -> str | None:
    if isinstance(d, dict) and "error" in d:
        return d["error"]
    return None


def build_rows(results: dict, impls: list[str]) -> list[dict]:
    nbytes = results["meta"]["array_bytes"]
    rows: list[dict] = []
    others = [i for i in PEERS if i in impls]

    def row(case: str, op: str, unit: str, values: dict[str, float | None], *, higher_is_better: bool,
            digits: int = 0, display: dict[str, str] | None = None, floor: str = "", vs_floor: float | None = None,
            targets: dict[str, float] | None = None, floor_max: float | None = None,
            memory_ratio: float | None = None, note: str = "", dask_ratio: float | None = None) -> None:
        vs: dict[str, float | None] = {}
        zd = values.get(ZD)
        for o in others:
            ov = values.get(o)
            if zd is None or ov is None or zd == 0 or ov == 0:
                vs[o] = None
            else:
                vs[o] = zd / ov if higher_is_better else ov / zd
        missed, checked = [], []
        for o, minimum in (targets or {}).items():
            if o in vs and vs[o] is not None:
                checked.append(o)
                if vs[o] < minimum:
                    missed.append(f"vs {SHORT[o]} {vs[o]:.2f}<{minimum:.2f}")
        if floor_max is not None and vs_floor is not None:
            checked.append("floor")
            if vs_floor > floor_max:
                missed.append(f"floor {vs_floor:.2f}>{floor_max}")
        if memory_ratio is not None:
            checked.append("memory")
            if memory_ratio > MEMORY_MAX:
                missed.append(f"{memory_ratio:.2f}x array > {MEMORY_MAX}")
        if dask_ratio is not None:
            checked.append("dask")
            if dask_ratio < DASK_MIN:
                missed.append(f"{dask_ratio:.2f}x direct read < {DASK_MIN}")
        tparts = [f">= {m:.2f}x {SHORT[o]}" for o, m in (targets or {}).items() if o in others]
        if dask_ratio is not None:
            tparts.append(f">= {DASK_MIN}x direct read ({dask_ratio:.2f}x)")
        if floor_max is not None:
            tparts.append(f"<= {floor_max}x floor incl. copy")
        if memory_ratio is not None or (op.startswith("peak memory")):
            tparts.append(f"<= {MEMORY_MAX}x array")
        status = "" if not tparts else ("MISS: " + "; ".join(missed) if missed else ("PASS" if checked else "n/a"))
        disp = {i: (display or {}).get(i, _fmt(values.get(i), digits)) for i in impls}
        rows.append({
            "case": case, "operation": op, "unit": unit, "values": {i: values.get(i) for i in impls},
            "display": disp, "floor": floor, "vs": vs, "vs_floor": vs_floor, "target": ", ".join(tparts),
            "status": status, "note": note,
        })

    for name, entry in results["cases"].items():
        per = entry["impls"]

        # write all
        w = {i: _best(per[i].get("write", {}).get("times")) for i in impls}
        thr = {i: (nbytes / t / MiB if t else None) for i, t in w.items()}
        row(name, "write all", "MiB/s", thr, higher_is_better=True, targets=TARGETS["write all"])

        # read all + codec floor
        r = {i: _best(per[i].get("read", {}).get("read_times")) for i in impls}
        floor = entry.get("floor", {})
        f_dec = _best(floor.get("decode_only_times"))
        f_copy = _best(floor.get("with_copy_times"))
        vs_floor = r[ZD] / f_dec if r.get(ZD) and f_dec else None
        vs_copy = r[ZD] / f_copy if r.get(ZD) and f_copy else None
        disp = {}
        for i in impls:
            rd = per[i].get("read", {})
            mark = "" if rd.get("correct", True) else " WRONG"
            disp[i] = _fmt(nbytes / r[i] / MiB if r[i] else None) + mark
        row(name, "read all", "MiB/s", {i: (nbytes / t / MiB if t else None) for i, t in r.items()},
            higher_is_better=True, display=disp, floor=_fmt(nbytes / f_dec / MiB if f_dec else None),
            vs_floor=vs_floor, targets=TARGETS["read all"])
        row(name, "  floor incl. copy into output", "MiB/s", {}, higher_is_better=True,
            floor=_fmt(nbytes / f_copy / MiB if f_copy else None),
            vs_floor=vs_copy, floor_max=FLOOR_MAX,
            display={i: "" for i in impls},
            note="decode into scratch + one copy into a fresh output array (the issue's floor)")

        # first small window after opening (fresh process; best of the fresh processes)
        fw = {}
        for i in impls:
            ts_ = [f["time"] for f in per[i].get("first", []) if isinstance(f, dict) and "time" in f and f.get("ok", True)]
            fw[i] = min(ts_) * 1000 if ts_ else None
        row(name, "open + first 10x10 window", "ms", fw, higher_is_better=False, digits=1,
            targets=TARGETS["first window"])

        # a warm open + one small window (median of many in each read process; best process)
        wo = {}
        for i in impls:
            t = per[i].get("read", {}).get("warm_open_time")
            wo[i] = t * 1000 if t else None
        if any(v is not None for v in wo.values()):
            row(name, "warm open + 10x10 window", "ms", wo, higher_is_better=False, digits=2,
                targets=TARGETS["warm open"])

        # random windows
        wt = {}
        for i in impls:
            rd = per[i].get("read", {})
            wt[i] = rd.get("windows_time")
        n = next((per[i]["read"].get("windows_count") for i in impls if per[i].get("read", {}).get("windows_count")), None)
        row(name, f"{n or ''} random 10x10 windows", "s", wt, higher_is_better=False, digits=2,
            targets=TARGETS["random windows"])

        # peak memory of a full read
        mem, mdisp = {}, {}
        for i in impls:
            m = per[i].get("read", {}).get("memory")
            mem[i] = m["peak_above_baseline_bytes"] / MiB if m else None
            mdisp[i] = f"{mem[i]:,.0f} ({m['ratio_to_array']:.2f}x)" if m else "-"
        zd_mem = per[ZD].get("read", {}).get("memory") if ZD in impls else None
        row(name, "peak memory of a full read", "MiB above baseline (x array)", mem, higher_is_better=False,
            display=mdisp, memory_ratio=zd_mem["ratio_to_array"] if zd_mem else None)

        # dask sum
        ds, ddisp = {}, {}
        for i in impls:
            d = per[i].get("read", {}).get("dask_sum")
            if not d:
                ds[i], ddisp[i] = None, "-"
            elif "time" in d:
                ds[i] = d["time"]
                ddisp[i] = f"{d['time']:.2f}" + ("" if d.get("ok") else " WRONG")
            else:
                ds[i], ddisp[i] = None, "n/a" if "skipped" in d else "error"
        direct = r.get(ZD)
        dask_ratio = direct / ds[ZD] if direct and ds.get(ZD) else None
        sharded = entry.get("case", {}).get("shards") is not None
        row(name, "from_zarr(...).sum().compute()", "s", ds, higher_is_better=False, display=ddisp,
            dask_ratio=dask_ratio if sharded else None)

    g = results.get("graph", {})
    if g:
        nch = g.get("array", {}).get("nchunks")
        b, bd, m, md, mem, memd = {}, {}, {}, {}, {}, {}
        for i in impls:
            d = g.get(i, {})
            if "build_time" in d:
                b[i], bd[i] = d["build_time"], f"{d['build_time']:.3f}"
                m[i], md[i] = d["sum_graph_time"], f"{d['sum_graph_time']:.2f}"
                mem[i], memd[i] = d["build_mem"] / 2**20, f"{d['build_mem'] / 2**20:.2f}"
            else:
                b[i] = m[i] = mem[i] = None
                bd[i] = md[i] = memd[i] = "n/a" if "skipped" in d else ("error" if d else "-")
        row("dask", f"build dask array, {nch:,} chunks" if nch else "build dask array", "s", b,
            higher_is_better=False, display=bd)
        row("dask", "  its Python memory (tracemalloc peak)", "MiB", mem, higher_is_better=False, display=memd)
        row("dask", "  + .sum() on it (graph only)", "s", m, higher_is_better=False, display=md)
    return rows


def _columns(rows: list[dict], impls: list[str]) -> tuple[list[str], list[list[str]]]:
    others = [i for i in PEERS if i in impls]
    head = ["case", "operation", "unit", *impls, "codec floor", *[f"zd vs {SHORT[o]}" for o in others],
            "zd / floor", "target", "result"]
    body = []
    for r in rows:
        body.append([
            r["case"], r["operation"], r["unit"], *[r["display"][i] for i in impls], r["floor"],
            *[_ratio(r["vs"].get(o)) if r["vs"].get(o) is not None else "" for o in others],
            _ratio(r["vs_floor"]) if r["vs_floor"] is not None else "", r["target"], r["status"],
        ])
    return head, body


def notes(results: dict) -> list[str]:
    meta = results["meta"]
    out = [
        (
            f"{meta['size']}x{meta['size']} float32 ({meta['array_bytes'] / MiB:.0f} MiB), {meta['threads']} threads "
            f"per implementation, {meta['cpu_count']} CPUs ({meta['cpu']}); 1 MiB = 2^20 bytes."
        ),
        (
            f"Stores in {meta['workdir']} ({meta.get('workdir_fs', '?')}). Reads: {meta['read_store']}; "
            f"{meta['page_cache']}. Full reads: best of {meta['repeat']} after one warm-up read, in each of "
            f"{meta.get('read_procs', 1)} fresh processes per implementation (interleaved); writes: best of "
            f"{meta['write_repeat']}; first window: best of {meta['first_repeat']} fresh processes (imports "
            "excluded, open included)."
        ),
        (
            "Ratios: zd vs zp/zarrs/ts = how many times faster (or leaner) zarrdask is (zarrs: zarr-python with the zarrs Rust codec pipeline); zd / floor = zarrdask's read "
            "time over the codec floor's (numcodecs alone decoding every chunk, in memory, same threads)."
        ),
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + (f"; zarrdask commit {meta['git_commit']}" if meta.get("git_commit") else "")
        + (f" (source hash {meta['source_fingerprint']})" if meta.get("source_fingerprint") else ""),
    ]
    for name, entry in results["cases"].items():
        ref = entry.get("reference", {})
        parts = []
        if "stored_bytes" in ref:
            parts.append(f"compression ratio {meta['array_bytes'] / ref['stored_bytes']:.2f} (zarr-python's store)")
        sizes = [(impl, d.get("write", {}).get("stored_bytes")) for impl, d in entry["impls"].items()]
        if any(b for _, b in sizes):
            parts.append("written MiB " + ", ".join(f"{i} {b / MiB:.0f}" for i, b in sizes if b))
        bad = [i for i, v in entry.get("verify", {}).items() if isinstance(v, dict) and not v.get("ok")]
        if bad:
            parts.append("WRITTEN DATA WRONG: " + ", ".join(f"{i} ({entry['verify'][i].get('error', 'mismatch')})" for i in bad))
        elif "error" in entry.get("verify", {}):
            parts.append(f"verify failed: {entry['verify']['error']}")
        else:
            parts.append("all written stores verified by zarr-python")
        for impl, d in entry["impls"].items():
            for step in ("write", "read"):
                e = _err(d.get(step))
                if e:
                    parts.append(f"{impl} {step} ERROR: {e}")
            rd = d.get("read", {})
            if rd and "error" not in rd and not rd.get("correct", True):
                parts.append(f"{impl} read WRONG data")
            ds = rd.get("dask_sum", {}) if rd else {}
            if "error" in ds:
                parts.append(f"dask sum ERROR for {impl}: {ds['error']}")
        e = _err(entry.get("floor"))
        if e:
            parts.append(f"codec floor ERROR: {e}")
        out.append(f"{name}: {'; '.join(parts)}.")
    skipped = sorted({d["impls"][ZD].get("read", {}).get("dask_sum", {}).get("skipped", "")
                      for d in results["cases"].values() if ZD in d["impls"]} - {""})
    for reason in skipped:
        out.append(f"dask sum not measured for zarrdask: {reason}.")
    g = results.get("graph", {})
    for impl, d in g.items():
        if isinstance(d, dict) and "skipped" in d:
            out.append(f"dask array build skipped for {impl}: {d['skipped']}.")
        elif _err(d):
            out.append(f"dask array build ERROR for {impl}: {_err(d)}.")
    out.append(f"Wall time of the whole run: {meta.get('wall_time_s', 0):.0f} s ({meta.get('workers', 0)} worker processes).")
    if meta.get("source_fingerprint_end") and meta.get("source_fingerprint") != meta.get("source_fingerprint_end"):
        out.append(f"WARNING: zarrdask's source changed during the run (commit {meta.get('git_commit')} -> "
                   f"{meta.get('git_commit_end')}): rows mix two versions; re-run.")
    other = meta.get("other_cpu_fraction")
    if other is not None:
        warn = " - WARNING: the machine was busy with other work, every number is noisier" if other > 0.05 else ""
        out.append(f"Other processes used {100 * other:.0f}% of the machine's CPU time during the run "
                   f"(load average {meta.get('loadavg_before')} at the start){warn}.")
    return out


def render_text(rows: list[dict], results: dict) -> str:
    impls = list(next(iter(results["cases"].values()))["impls"]) if results["cases"] else []
    head, body = _columns(rows, impls)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    right = set(range(3, len(head) - 2))

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if k in right else str(c).ljust(w) for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(head), "  ".join("-" * w for w in widths)]
    prev = None
    for cells in body:
        if prev is not None and cells[0] != prev:
            out.append("")
        prev = cells[0]
        out.append(line(cells))
    out.append("")
    out.extend(f"- {n}" for n in notes(results))
    return "\n".join(out)


def render_markdown(rows: list[dict], results: dict) -> str:
    impls = list(next(iter(results["cases"].values()))["impls"]) if results["cases"] else []
    head, body = _columns(rows, impls)
    right = set(range(3, len(head) - 2))
    out = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---:" if k in right else "---" for k in range(len(head))) + "|",
    ]
    for cells in body:
        out.append("| " + " | ".join(str(c).replace("|", "\\|").strip() or " " for c in cells) + " |")
    out.append("")
    out.extend(f"- {n}" for n in notes(results))
    return "\n".join(out) + "\n"


def plot(results: dict, impls: list[str], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    nbytes = results["meta"]["array_bytes"]
    names = list(results["cases"])
    x = np.arange(len(names))
    width = 0.8 / max(1, len(impls))
    colors = {ZD: "tab:blue", ZP: "tab:orange", ZR: "tab:red", TS: "tab:green"}
    fig, axes = plt.subplots(2, 2, figsize=(14, 9))
    axes = axes.ravel()

    def bars(ax, value_of, title):
        top = 0.0
        for k, impl in enumerate(impls):
            vals = [value_of(results["cases"][n]["impls"][impl]) or 0 for n in names]
            top = max(top, *vals)
            ax.bar(x + (k - (len(impls) - 1) / 2) * width, vals, width, label=impl, color=colors.get(impl))
        ax.set_title(title)
        ax.set_xticks(x, names, rotation=15)
        ax.grid(axis="y", alpha=0.3)
        return top

    def mibs(step, key):
        def f(d):
            t = _best(d.get(step, {}).get(key))
            return nbytes / t / MiB if t else None
        return f

    bars(axes[0], mibs("write", "times"), "write all (MiB/s, higher is better)")
    axes[0].legend(fontsize=8)

    ax = axes[1]
    top = bars(ax, mibs("read", "read_times"), "read all (MiB/s, higher is better; dashes: codec floor)")
    ymax = top * 1.5 if top else 1
    for k, n in enumerate(names):
        f = _best(results["cases"][n].get("floor", {}).get("decode_only_times"))
        if f:
            v = nbytes / f / MiB
            ax.hlines(min(v, ymax * 0.97), k - 0.45, k + 0.45, colors="black", linestyles="--",
                      label="codec floor" if k == 0 else None)
            if v > ymax:
                ax.annotate(f"floor {v:,.0f}", (k, ymax * 0.97), ha="center", va="bottom", fontsize=7)
    ax.set_ylim(0, ymax)
    ax.legend(fontsize=8, loc="upper left")

    def first_ms(d):
        fs = [f["time"] for f in d.get("first", []) if isinstance(f, dict) and "time" in f]
        return min(fs) * 1000 if fs else None

    bars(axes[2], first_ms, "open + first 10x10 window (ms, lower is better)")
    axes[2].legend(fontsize=8)

    def mem(d):
        m = d.get("read", {}).get("memory")
        return m["ratio_to_array"] if m else None

    bars(axes[3], mem, "peak memory of a full read (x array size above baseline, lower is better)")
    axes[3].axhline(MEMORY_MAX, color="black", linestyle="--", label=f"target {MEMORY_MAX}x")
    axes[3].legend(fontsize=8)

    m = results["meta"]
    fig.suptitle(f"zarrdask vs zarr-python vs zarrs vs tensorstore: {m['size']}x{m['size']} float32, {m['threads']} threads"
                 f" ({m.get('workdir_fs', '')})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
