"""The performance page's charts and tables (``benchmarks/charts.py``) from
small made-up results in the formats the benchmarks write: every chart is a
PNG, every table holds the figures it was given, and a missing result is
skipped, not an error."""

from __future__ import annotations

import json

import pytest

from benchmarks import charts

pytest.importorskip("matplotlib")
PNG = b"\x89PNG\r\n\x1a\n"


def _local() -> dict:
    rows = []
    for case in ("v3-zstd", "v2-blosc"):
        for op, unit in (("write all", "MiB/s"), ("read all", "MiB/s"), ("open + first 10x10 window", "ms"),
                         ("1000 random 10x10 windows", "s"),
                         ("peak memory of a full read", "MiB above baseline (x array)")):
            rows.append({"case": case, "operation": op, "unit": unit,
                         "display": {"zarrdask": "100", "zarr-python": "50", "zarrs": "90", "tensorstore": "80"},
                         "vs": {"zarr-python": 2.0, "zarrs": 1.11, "tensorstore": 0.8}})
    return {"meta": {"size": 64, "threads": 2, "impls": ["zarrdask", "zarr-python", "zarrs", "tensorstore"]},
            "cases": {"v3-zstd": {}, "v2-blosc": {}}, "rows": rows}


def _remote() -> dict:
    def got(ms: float, requests: int) -> dict:
        return {"ms": ms, "requests": requests, "error": None}
    rows = {op: {str(lat): {"zarrdask-fsspec": got(100 + lat, 4), "zarrdask-obstore": got(80 + lat, 4),
                            "zarr-python": got(300, 8), "tensorstore": got(90 + lat, 4)} for lat in (0, 20)}
            for op in ("window", "write_sharded")}
    return {"latencies_ms": [0, 20], "repeat": 1, "rows": rows, "needed_window_bytes": 1}


def _rechunk(store: str) -> dict:
    runs = [{"scheduler": "threads", "target": "plain", "max_mem": 64_000_000, "impl": impl, "time": t,
             "peak_mib": [peak], "correct": True}
            for impl, t, peak in (("zarrdask", 2.0, 100.0), ("dask", 4.0, 1000.0))]
    return {"shape": [10, 20, 20], "threads": 2, "runs": runs, "store": store, "latency": 0.02}


def test_every_chart_and_table(tmp_path):
    results = tmp_path / "results"
    (results / "s3").mkdir(parents=True)
    (results / "results.json").write_text(json.dumps(_local()))
    (results / "remote.json").write_text(json.dumps(_remote()))
    (results / "rechunk.json").write_text(json.dumps(_rechunk("local")))
    (results / "s3" / "rechunk.json").write_text(json.dumps(_rechunk("s3")))
    out = tmp_path / "images"
    assert charts.main(["--results", str(results), "--out", str(out)]) == 0
    for name in ("perf-local.png", "perf-remote.png", "perf-rechunk.png", "perf-rechunk-s3.png"):
        assert (out / name).read_bytes()[:8] == PNG
    # no opens results: those charts are skipped
    assert not (out / "perf-opens.png").exists() and not (out / "perf-opens-local.png").exists()
    tables = (results / "perf-tables.md").read_text()
    assert "| v3-zstd | 100 | 50 | 90 | 80 |" in tables
    assert "| zarrdask-fsspec | zarrdask-obstore | zarr-python | tensorstore |" in tables
    assert "| 100 / 4 | 80 / 4 | 300 / 8 | 90 / 4 |" in tables  # 0 ms: fsspec, obstore, zarr-python, tensorstore
    assert "| threads, plain, 64 MB | 2.0 | 4.0 |" in tables
    assert "| threads, plain, 64 MB | 0.82x | 8.19x |" in tables  # peak per thread / 61 MiB


@pytest.mark.parametrize("values", [[9.73, 1.5, 0.9], [0.05, 1.2, 2.0], [5.9, 0.17, 30.0], [1.1, 1.3, 0.95]])
def test_bars_beyond_the_axis_stay_in_the_frame(values):
    """A ratio beyond the axis (e.g. 9.73x on an axis that stops at 6x) runs to the
    frame and its figure is written inside the frame, not spilled past it."""
    plt = charts._plt()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    try:
        charts._ratio_axis(ax, ["a", "b", "c"], {"zarr-python": values, "zarrs": [v ** 0.5 for v in values]}, "t")
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        frame = ax.get_window_extent(renderer)
        figures = [t for t in ax.texts if t.get_text().endswith("x")]
        assert len(figures) == 2 * len(values)
        for text in figures:
            box = text.get_window_extent(renderer)
            assert frame.x0 - 0.5 <= box.x0 and box.x1 <= frame.x1 + 0.5, text.get_text()
        lo, hi = ax.get_xlim()
        for bar, v in zip(ax.patches, values + [v ** 0.5 for v in values]):
            end = bar.get_x() + bar.get_width()
            assert lo - 1e-9 <= end <= hi + 1e-9
            if v > 6 or v < 1 / 6:  # beyond the axis: the bar reaches the frame
                assert end == pytest.approx(hi if v > 1 else lo)
    finally:
        plt.close(fig)
