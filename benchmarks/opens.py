"""Opening benchmark: round trips and time of ``xr.open_dataset`` and
``xr.open_datatree`` with ``engine="zarrdask"`` and ``engine="zarr"``, against
a latency-injecting HTTP server and a latency proxy in front of moto's S3.

    python -m benchmarks.opens --latency 0 20 --repeat 3

Data: a CF-like dataset (5 dimension coordinates, 6 two-dimensional auxiliary
coordinates, 40 variables) and a DataTree of 4 groups (``/``, ``/a``, ``/b``,
``/a/c``: its deepest arrays 3 levels down), Zarr v3, with and without
consolidated metadata. Round trips are counted twice: from time,
``(t(latency) - t(0)) / latency``, and from the servers' request logs
(:meth:`zarrdask.testing.servers.RequestLog.round_trips`: a request waits for
every request that had ended before it started). Both engines run in this
process, each open on new store objects (no cache carries over); times are the
best of ``--repeat``, requests and waves those of the last repetition.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Callable

import numpy as np

#: (store, open call, round-trip budget as a function of the tree's depth)
ROWS = (
    ("HTTP, consolidated", "open_dataset(chunks={})"),
    ("S3, consolidated", "open_dataset"),
    ("S3, consolidated", "open_datatree"),
    ("S3, not consolidated", "open_dataset"),
    ("S3, not consolidated", "open_datatree"),
)
ENGINES = ("zarrdask", "zarr")
TREE_DEPTH = 3  # the deepest node of the DataTree: the arrays of "/a/c"
N_VARIABLES = 40


# -- the data ------------------------------------------------------------------
def cf_dataset(n_variables: int = N_VARIABLES, seed: int = 0) -> Any:
    """A CF-like Dataset: dimension coordinates time, level, y, x and bnds;
    auxiliary coordinates lat, lon, area (y, x), time_bnds (time, bnds),
    level_bnds (level, bnds) and land (y, x); ``n_variables`` variables
    (time, level, y, x)."""
    import pandas as pd
    import xarray as xr

    rng = np.random.default_rng(seed)
    nt, nz, ny, nx = 12, 3, 8, 10
    time_ = pd.date_range("2000-01-01", periods=nt, freq="D")
    y, x = np.arange(ny, dtype="f8") * 1000.0, np.arange(nx, dtype="f8") * 1000.0
    coords = {
        "time": ("time", time_, {"standard_name": "time", "bounds": "time_bnds"}),
        "level": ("level", np.array([1000.0, 850.0, 500.0]), {"units": "hPa", "positive": "down"}),
        "y": ("y", y, {"units": "m", "standard_name": "projection_y_coordinate"}),
        "x": ("x", x, {"units": "m", "standard_name": "projection_x_coordinate"}),
        "bnds": ("bnds", np.arange(2, dtype="i4")),
        "lat": (("y", "x"), 45 + rng.random((ny, nx)), {"units": "degrees_north"}),
        "lon": (("y", "x"), 5 + rng.random((ny, nx)), {"units": "degrees_east"}),
        "area": (("y", "x"), np.full((ny, nx), 1e6), {"units": "m2"}),
        "land": (("y", "x"), rng.random((ny, nx)) > 0.3),
        "time_bnds": (("time", "bnds"), np.stack([time_, time_ + pd.Timedelta("1D")], axis=1)),
        "level_bnds": (("level", "bnds"), np.array([[1050.0, 900.0], [900.0, 700.0], [700.0, 300.0]])),
    }
    data = {
        f"v{i:02d}": (("time", "level", "y", "x"), rng.random((nt, nz, ny, nx), dtype="f4"),
                      {"units": "K", "coordinates": "lat lon"})
        for i in range(n_variables)
    }
    return xr.Dataset(data, coords=coords, attrs={"Conventions": "CF-1.8", "title": "opens benchmark"})


def cf_datatree(n_variables: int = 10) -> Any:
    """A DataTree of four groups of CF-like datasets: ``/``, ``/a``, ``/b``, ``/a/c``."""
    import xarray as xr

    return xr.DataTree.from_dict({
        "/": cf_dataset(n_variables, 0), "/a": cf_dataset(n_variables, 1),
        "/b": cf_dataset(n_variables, 2), "/a/c": cf_dataset(n_variables, 3),
    })


def write_all(root: str, zarr_format: int = 3, n_variables: int = N_VARIABLES) -> dict[str, str]:
    """Write the dataset and the tree, with and without consolidated metadata,
    below ``root``; returns ``{name: directory name}``."""
    ds, tree = cf_dataset(n_variables), cf_datatree()
    names = {}
    for consolidated in (True, False):
        suffix = "cons" if consolidated else "flat"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(os.path.join(root, f"ds-{suffix}.zarr"), mode="w", consolidated=consolidated,
                       zarr_format=zarr_format)
            tree.to_zarr(os.path.join(root, f"tree-{suffix}.zarr"), mode="w", consolidated=consolidated,
                         zarr_format=zarr_format)
        names[f"dataset-{suffix}"] = f"ds-{suffix}.zarr"
        names[f"tree-{suffix}"] = f"tree-{suffix}.zarr"
    return names


def upload(root: str, s3_url: str, bucket: str) -> None:
    """Copy every file below ``root`` to ``bucket`` on the S3 server at ``s3_url``."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3_url, region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="y")
    for here, _, files in os.walk(root):
        for name in files:
            path = os.path.join(here, name)
            key = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                client.put_object(Bucket=bucket, Key=key, Body=f.read())


# -- one open ------------------------------------------------------------------
def s3_options(url: str) -> dict[str, Any]:
    """s3fs options for the S3 server (or proxy) at ``url``, without caches or retries."""
    return {"endpoint_url": url, "key": "x", "secret": "y", "use_listings_cache": False,
            "config_kwargs": {"retries": {"total_max_attempts": 1}}}


def opener(engine: str, call: str, url: str, *, consolidated: bool | None,
           storage_options: dict[str, Any] | None = None) -> Callable[[], Any]:
    """A function doing one open (``call``: ``open_dataset``,
    ``open_dataset(chunks={})`` or ``open_datatree``) of ``url``."""
    import xarray as xr

    kwargs: dict[str, Any] = {"engine": engine, "consolidated": consolidated}
    if storage_options is not None:
        kwargs["storage_options"] = storage_options
    if call == "open_datatree":
        return lambda: xr.open_datatree(url, **kwargs)
    if call == "open_dataset(chunks={})":
        return lambda: xr.open_dataset(url, chunks={}, **kwargs)
    if call == "open_dataset":
        return lambda: xr.open_dataset(url, **kwargs)
    raise ValueError(f"unknown open call {call!r}")


def measure(open_: Callable[[], Any], log: Any) -> dict[str, Any]:
    """Time one open and count its requests and round trips from ``log``
    (a :class:`~zarrdask.testing.servers.RequestLog`)."""
    log.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        result = open_()
        ms = (time.perf_counter() - t0) * 1000
    return {"ms": ms, "requests": log.count(), "waves": log.round_trips(), "result": result}


def budget(store: str, call: str, depth: int = TREE_DEPTH) -> int:
    """The round trips an open may cost: 2 with consolidated metadata; without,
    the depth of the deepest node + 2 (3 for a flat dataset)."""
    if "not consolidated" not in store:
        return 2
    return depth + 2 if call == "open_datatree" else 3


# -- the run -------------------------------------------------------------------
def _targets(files_url: str, proxy_url: str, bucket: str) -> list[dict[str, Any]]:
    """Every row: where it opens and with what (the same URL and
    ``storage_options`` for every implementation)."""
    options = s3_options(proxy_url)
    rows = []
    for store, call in ROWS:
        name = ("tree" if call == "open_datatree" else "ds") + ("-flat" if "not" in store else "-cons")
        if store.startswith("HTTP"):
            rows.append({"store": store, "call": call, "url": f"{files_url}/{name}.zarr", "options": None,
                         "server": "files"})
        else:
            rows.append({"store": store, "call": call, "url": f"s3://{bucket}/{name}.zarr", "options": options,
                         "server": "proxy"})
    return rows


#: zarrdask's two URL paths (the setting ``url_store``) and engine="zarr"
IMPLS = {"zarrdask-obstore": "obstore", "zarrdask-fsspec": "fsspec", "zarr": None}


def _impls(row: dict[str, Any]) -> dict[str, Callable[[], Callable[[], Any]]]:
    """``{implementation: a function making a new opener}`` (new store objects each time)."""
    return {impl: (lambda impl=impl: opener("zarr" if impl == "zarr" else "zarrdask", row["call"], row["url"],
                                            consolidated=None, storage_options=row["options"]))
            for impl in IMPLS}


def run(latencies: list[float], repeat: int) -> dict[str, Any]:
    """Measure every row at every latency (ms); see the module documentation."""
    from zarrdask.testing.servers import serve_directory, serve_proxy

    from .remote import _AWS_ENV, BUCKET, _start_moto

    results: dict[str, Any] = {"latencies_ms": latencies, "repeat": repeat, "tree_depth": TREE_DEPTH, "rows": []}
    moto, moto_url = _start_moto()
    # the opens run in a process of their own: in this one they would compete
    # for the GIL with the servers, whose request log is what is measured
    env = dict(os.environ, **_AWS_ENV, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    worker = subprocess.Popen([sys.executable, "-m", "benchmarks.opens", "--worker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)

    def ask(impl: str, row: dict[str, Any]) -> float:
        worker.stdin.write(json.dumps({"impl": impl, "row": row}) + "\n")
        worker.stdin.flush()
        answer = json.loads(worker.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"{impl} {row['store']} {row['call']}: {answer['error']}")
        return answer["ms"]

    try:
        with tempfile.TemporaryDirectory(prefix="zarrdask-opens-") as root:
            write_all(root)
            upload(root, moto_url, BUCKET)
            with serve_directory(root, etags="stat") as files, serve_proxy(moto_url) as proxy:
                servers = {"files": files, "proxy": proxy}
                for row in _targets(files.url, proxy.url, BUCKET):
                    server = servers[row["server"]]
                    out = {"store": row["store"], "call": row["call"], "budget": budget(row["store"], row["call"]),
                           "impls": {}}
                    for impl in _impls(row):
                        ask(impl, row)  # connections and imports: not what is measured
                        out["impls"][impl] = _at_latencies(lambda: ask(impl, row), server, latencies, repeat)
                        print(f"{row['store']:22} {row['call']:24} {impl:17} {out['impls'][impl]}",
                              file=sys.stderr, flush=True)
                    results["rows"].append(out)
    finally:
        worker.stdin.close()
        worker.wait(60)
        moto.terminate()
        moto.wait(10)
    return results


def _at_latencies(open_: Callable[[], float], server: Any, latencies: list[float],
                  repeat: int) -> dict[str, Any]:
    """Time (the best of ``repeat``), requests and waves (the last repetition's)
    of an open at each latency, and the round trips paid, from time."""
    out: dict[str, Any] = {}
    for latency in latencies:
        server.delay = latency / 1000
        best = None
        for _ in range(repeat):
            server.log.clear()
            ms = open_()
            best = ms if best is None else min(best, ms)
            m = {"ms": best, "requests": server.log.count(), "waves": server.log.round_trips()}
        out[str(latency)] = m
    server.delay = 0
    lo, hi = min(latencies), max(latencies)
    if hi > lo:  # round trips paid, from time
        out["round_trips_from_time"] = (out[str(hi)]["ms"] - out[str(lo)]["ms"]) / (hi - lo)
    return out


def worker() -> None:
    """The opens, asked for on stdin (``{"impl", "row"}``), timed on stdout
    (``{"ms"}``); zarrdask's URLs go where the implementation's ``url_store``
    says, engine="zarr"'s to fsspec (s3fs, fsspec's HTTP)."""
    import zarrdask

    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        try:
            open_ = _impls(task["row"])[task["impl"]]()
            with warnings.catch_warnings(), zarrdask.config.set(url_store=IMPLS[task["impl"]] or "auto"):
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                open_()
                answer: dict[str, Any] = {"ms": (time.perf_counter() - t0) * 1000}
        except Exception as e:  # reported to the parent, which stops
            answer = {"error": f"{type(e).__name__}: {e}"[:300]}
        print(json.dumps(answer), flush=True)


# -- the report ----------------------------------------------------------------
def table(results: dict[str, Any]) -> str:
    """The Markdown table of a run: at the highest latency, each open's time,
    round trips (from time and from the log) and requests, for each engine."""
    hi = str(max(results["latencies_ms"]))
    lo = str(min(results["latencies_ms"]))
    lines = [
        f"Latency {float(hi):g} ms per request (time of the best of {results['repeat']}; round trips: "
        f"(t{float(hi):g} - t{float(lo):g}) / {float(hi) - float(lo):g} ms, and waves in the server's log; "
        f"budget: what the open may cost)\n",
        "| store | open | budget | " + " | ".join(f"{NAMES[i]}: ms, round trips (time / log), requests"
                                                 for i in IMPLS) + " |",
        "|---|---|---:|" + "---:|" * len(IMPLS),
    ]
    for row in results["rows"]:
        cells = []
        for impl in IMPLS:
            m = row["impls"].get(impl)
            if m is None:
                cells.append("n/a")
                continue
            trips = m.get("round_trips_from_time")
            trips_text = f"{trips:.1f} / {m[hi]['waves']}" if trips is not None else f"{m[hi]['waves']}"
            cells.append(f"{m[hi]['ms']:,.0f}, {trips_text}, {m[hi]['requests']}")
        lines.append(f"| {row['store']} | `{row['call']}` | {row['budget']} | " + " | ".join(cells) + " |")
    lines.append(f"\nThe DataTree's deepest nodes are {results['tree_depth']} levels below its root.")
    return "\n".join(lines)


NAMES = {"zarrdask-obstore": "zarrdask (obstore)", "zarrdask-fsspec": "zarrdask (fsspec)", "zarr": 'engine="zarr"'}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--latency", type=float, nargs="+", default=[0, 20], help="ms added to every request")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="benchmarks/results/opens.json")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker()
        return
    results = run(args.latency, args.repeat)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    text = table(results)
    base = os.path.splitext(args.out)[0]
    with open(base + ".md", "w") as f:
        f.write(text + "\n")
    from .charts import opens_chart

    opens_chart(results, base + ".png")
    print(text)


if __name__ == "__main__":
    main()
