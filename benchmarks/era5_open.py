"""Opening a reanalysis-scale dataset lazily: ``xr.open_dataset(path,
chunks={})`` of a consolidated store laid out like ARCO-ERA5, zarrdask
against xarray's ``engine="zarr"``.

    python -m benchmarks.era5_open --repeat 5

The store (metadata only: no chunk is written, so it takes a few kilobytes
in ``--workdir``) holds 20 float32 variables of 350,640 x 721 x 1440
(hourly, 40 years, a quarter-degree grid), one time step per chunk:
350,640 chunks each, 7 million in all, plus the ``time``, ``latitude`` and
``longitude`` coordinates (written), v3, consolidated.

Each engine runs in its own process, the engines alternate, and each
process opens the store once (imports and caches warmed) before
``--repeat`` timed opens; the figure is the best. ``chunks=None`` (no dask
arrays) is timed beside it: what the backend itself costs.
With ``--profile`` the zarrdask process also prints where an open's time goes
(cProfile, the 25 costliest functions by their own time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

STEPS = 350_640
GRID = (721, 1440)
N_VARS = 20
ENGINES = ("zarrdask", "zarr")


def build(path: str) -> None:
    import numpy as np

    import zarrdask

    g = zarrdask.open_group(path, mode="w")
    coords = {"time": np.arange(STEPS, dtype="i8"), "latitude": np.linspace(90, -90, GRID[0]),
              "longitude": np.linspace(0, 359.75, GRID[1])}
    for name, values in coords.items():
        g.create_array(name, shape=values.shape, dtype=values.dtype, chunks=values.shape,
                       dimension_names=[name])[...] = values
    g["time"].attrs.update({"units": "hours since 1940-01-01", "calendar": "proleptic_gregorian"})
    for i in range(N_VARS):
        g.create_array(f"var{i:02d}", shape=(STEPS, *GRID), dtype="f4", chunks=(1, *GRID), fill_value=float("nan"),
                       dimension_names=["time", "latitude", "longitude"],
                       attributes={"units": "K", "long_name": f"variable {i}"})
    zarrdask.consolidate_metadata(path)


def worker(path: str, engine: str, repeat: int, profile: bool) -> dict:
    import xarray as xr

    out = {}
    for label, chunks in (("chunks={}", {}), ("chunks=None", None)):
        xr.open_dataset(path, engine=engine, chunks=chunks)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            xr.open_dataset(path, engine=engine, chunks=chunks)
            best = min(best, time.perf_counter() - t0)
        out[label] = best
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(xr.open_dataset, path, engine=engine, chunks={})
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2, help="processes per engine, alternating")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--workdir", default=None)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--engine", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.engine, args.repeat, args.profile)))
        return
    from .run import machine_meta, save_results

    results: dict = {"steps": STEPS, "grid": GRID, "variables": N_VARS, "repeat": args.repeat, "rows": {}}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(x for x in sys.path if x))
    with tempfile.TemporaryDirectory(prefix="zarrdask-era5-", dir=args.workdir) as root:
        path = os.path.join(root, "era5.zarr")
        build(path)
        for r in range(args.rounds):
            for engine in ENGINES:
                cmd = [sys.executable, "-m", "benchmarks.era5_open", "--worker", path, "--engine", engine,
                       "--repeat", str(args.repeat)]
                if args.profile and engine == "zarrdask" and r == 0:
                    cmd.append("--profile")
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                if "--profile" in cmd:
                    print(done.stderr, file=sys.stderr)
                row = json.loads(done.stdout.strip().splitlines()[-1])
                for label, s in row.items():
                    best = results["rows"].setdefault(label, {}).get(engine)
                    results["rows"][label][engine] = s if best is None else min(best, s)
                print(f"{engine:<9} " + "  ".join(f"{k} {v * 1000:7.0f} ms" for k, v in row.items()), file=sys.stderr)
    lines = [f"{N_VARS} variables of {STEPS:,} x {GRID[0]} x {GRID[1]} float32, one time step per chunk "
             f"({N_VARS * STEPS:,} chunks); best of {args.rounds} processes x {args.repeat} opens\n",
             "| open | zarrdask (ms) | engine=\"zarr\" (ms) | zarrdask / zarr |", "|---|---:|---:|---:|"]
    for label, row in results["rows"].items():
        lines.append(f"| `open_dataset({label})` | {row['zarrdask'] * 1000:,.0f} | {row['zarr'] * 1000:,.0f} | "
                     f"{row['zarrdask'] / row['zarr']:.2f}x |")
    text = "\n".join(lines)
    os.makedirs(args.out, exist_ok=True)
    save_results(args.out, "era5_open", machine_meta("xarray", "dask"), results, results["rows"], text + "\n")
    print(text)


if __name__ == "__main__":
    main()
