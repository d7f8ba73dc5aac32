"""Which variables are read at open (zarrdask.xarray.eager), and the opens
benchmark's report (budgets, table, chart) on a made-up run."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import opens as bench
from benchmarks.charts import opens_chart
from zarrdask.xarray.eager import SMALL_BYTES, read_at_open

F8 = np.dtype("f8")


def test_index_coordinates_and_small_time_variables_are_read_at_open():
    variables = {
        "time": (("time",), {"units": "days since 2000-01-01", "bounds": "time_bnds"}, (10,), F8),
        "time_bnds": (("time", "bnds"), {}, (10, 2), F8),
        "x": (("x",), {"units": "m"}, (5,), F8),
        "lat": (("y", "x"), {"units": "degrees_north"}, (4, 5), F8),  # auxiliary: lazy
        "valid": (("t2",), {"units": "hours since 2000-01-01"}, (3,), F8),  # decoded, not an index
        "big": (("t3",), {"units": "days since 2000-01-01"}, (SMALL_BYTES // 8 + 1,), F8),
        "temp": (("time", "x"), {"units": "K"}, (10, 5), np.dtype("f4")),
    }
    assert read_at_open(variables) == (["time", "x"], ["time_bnds", "valid"])
    assert read_at_open(variables, decode_times=False) == (["time", "x"], [])
    assert read_at_open(variables, drop_variables=["x", "valid"]) == (["time"], ["time_bnds"])
    assert read_at_open(variables, drop_variables="time_bnds") == (["time", "x"], ["valid"])


def test_budgets():
    assert bench.budget("S3, consolidated", "open_datatree") == 2
    assert bench.budget("S3, not consolidated", "open_dataset") == 3
    assert bench.budget("S3, not consolidated", "open_datatree", depth=3) == 5


def _made_up_run():
    def impl(ms0, ms20, waves, requests):
        return {"0": {"ms": ms0, "requests": requests, "waves": waves},
                "20": {"ms": ms20, "requests": requests, "waves": waves},
                "round_trips_from_time": (ms20 - ms0) / 20}
    return {"latencies_ms": [0, 20], "repeat": 3, "tree_depth": 3, "rows": [
        {"store": "HTTP, consolidated", "call": "open_dataset(chunks={})", "budget": 2,
         "impls": {"zarrdask-fsspec": impl(10, 50, 2, 11), "zarr": impl(20, 220, 10, 13)}},
        {"store": "S3, not consolidated", "call": "open_datatree", "budget": 5,
         "impls": {"zarrdask-fsspec": impl(100, 200, 5, 159), "zarrdask-obstore": impl(50, 150, 5, 159),
                   "zarr": impl(300, 2000, 85, 348)}},
    ]}


def test_table_and_chart(tmp_path):
    pytest.importorskip("matplotlib")
    run = _made_up_run()
    text = bench.table(run)
    rows = [line for line in text.splitlines() if line.startswith("| HTTP") or line.startswith("| S3")]
    # columns: obstore, fsspec, engine="zarr": ms, round trips (from time / in the log), requests
    assert rows[0] == ("| HTTP, consolidated | `open_dataset(chunks={})` | 2 | n/a | 50, 2.0 / 2, 11 "
                       "| 220, 10.0 / 10, 13 |")
    assert rows[1] == ("| S3, not consolidated | `open_datatree` | 5 | 150, 5.0 / 5, 159 | 200, 5.0 / 5, 159 "
                       "| 2,000, 85.0 / 85, 348 |")
    opens_chart(run, str(tmp_path / "opens.png"))
    assert (tmp_path / "opens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
