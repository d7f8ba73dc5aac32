"""The main use: ``xr.open_dataset(..., engine="zarrdask", chunks={})`` and a
dask reduction, on the same data stored chunked and sharded.

    python -m benchmarks.main_use --repeat 3

Data: one float32 variable ``t2m(time, lat, lon)`` of 365 x 360 x 720
(378 MB decoded; the smooth-field-plus-noise data of ``benchmarks.cases``,
zstd level 1), with its coordinates, written twice with zarrdask:

- ``chunked``: chunks (73, 90, 180), one dask task per chunk (80 tasks);
- ``sharded``: the same chunks as the inner chunks of (365, 180, 360)
  shards, one dask task per shard (4 tasks) as ``chunks={}`` gives them
  (xarray's own engine gives one per inner chunk: 80);
- and the sharded store again with dask chunks of the inner chunks' size
  (``chunks={"time": 73, "lat": 90, "lon": 180}``, 80 tasks).

The tables give each column's number of dask chunks in brackets.

Operations (dask's threaded scheduler, ``--threads`` threads, zarrdask's
setting ``threads`` the same): ``mean over time`` (``ds.t2m.mean("time")``),
``a time series`` (``ds.t2m.isel(lat=100, lon=200)``, which touches one
column of chunks) and ``every block read`` (each dask block read and cut to
its first element: the reading alone, with next to nothing computed). Each
column and operation runs in ``--rounds`` fresh processes, the columns
taking turns; in each the dataset is opened (not timed) and the operation
run once before ``--repeat`` timed runs. The figure is the best of all of
them. ``engine="zarr"`` (xarray's own backend, zarr-python) runs beside it
on the same stores, and so does ``memory``: no store at all, but dask blocks
of each column's sizes made by copying from the whole variable held in
memory (fresh arrays, as a read gives them). Its columns show what the
block sizes alone cost the operation, whoever reads the blocks.

Writes ``main_use.json`` (with the machine and versions) and ``main_use.md``
into ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from . import in_turn

SHAPE = (365, 360, 720)
CHUNKS = (73, 90, 180)
SHARDS = (365, 180, 360)
LAYOUTS = ("chunked", "sharded")
#: what each column reads: (store, dask chunks the size of the inner chunks rather than xarray's chunks={})
COLUMNS = {"chunked": ("chunked", False), "sharded": ("sharded", False), "sharded-inner": ("sharded", True)}
OPS = (("mean", 'mean over time: ds.t2m.mean("time")'), ("series", "a time series: ds.t2m.isel(lat=100, lon=200)"),
       ("read", "every block read (cut to its first element)"))
#: ``memory``: no store; dask blocks of the column's sizes copied from the variable held in memory
ENGINES = ("zarrdask", "zarr", "memory")


def build(root: str) -> None:
    import numpy as np
    import xarray as xr

    from .cases import make_data

    plane = make_data(max(SHAPE[1], SHAPE[2]))[: SHAPE[1], : SHAPE[2]]
    data = np.stack([plane + np.float32(0.01 * i) for i in range(SHAPE[0])]).astype("f4")
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), data)},
        coords={"time": np.arange(SHAPE[0]), "lat": np.linspace(-90, 90, SHAPE[1]),
                "lon": np.linspace(0, 360, SHAPE[2], endpoint=False)},
    )
    zstd = [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}]
    for layout in LAYOUTS:
        encoding = {"t2m": {"chunks": CHUNKS, "compressors": zstd}}
        if layout == "sharded":
            encoding["t2m"]["shards"] = SHARDS
        ds.to_zarr(os.path.join(root, f"{layout}.zarr"), mode="w", encoding=encoding, zarr_format=3,
                   consolidated=True)


def worker(path: str, engine: str, op: str, repeat: int, threads: int, inner: bool = False) -> dict:
    import warnings

    import dask
    import xarray as xr

    if engine == "zarrdask":
        import zarrdask

        zarrdask.config.set(threads=threads)
    chunks = dict(zip(("time", "lat", "lon"), CHUNKS)) if inner else {}
    if engine == "memory":
        ds = _in_memory(path, SHARDS if os.path.basename(path) == "sharded.zarr" and not inner else CHUNKS)
    else:
        with warnings.catch_warnings():  # chunks smaller than the shards zarrdask prefers: xarray warns
            warnings.simplefilter("ignore", UserWarning)
            ds = xr.open_dataset(path, engine=engine, chunks=chunks)

    def once() -> object:
        if op == "mean":
            return ds.t2m.mean("time").compute()
        if op == "read":
            return ds.t2m.data.map_blocks(_first, chunks=(1,) * len(SHAPE)).compute()
        return ds.t2m.isel(lat=100, lon=200).compute()

    with dask.config.set(scheduler="threads", num_workers=threads):
        once()
        best = cpu = float("inf")
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            once()
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
    return {"s": best, "cpu_s": cpu, "tasks": ds.t2m.data.npartitions}


def _first(block: object) -> object:
    """A block's first element (as a block of one): reading it is all the work."""
    return block[(slice(0, 1),) * len(SHAPE)]  # type: ignore[index]


def _in_memory(path: str, blocks: tuple[int, ...]) -> object:
    """The store's variable as a Dataset of dask blocks of shape ``blocks``,
    each a fresh array copied from the whole variable read into memory first."""
    import dask.array as da
    import numpy as np
    import xarray as xr

    whole = xr.open_dataset(path, engine="zarrdask").t2m.values

    def block(block_id: tuple[int, ...] | None = None) -> np.ndarray:
        out = np.empty(blocks, whole.dtype)
        out[...] = whole[tuple(slice(i * n, (i + 1) * n) for i, n in zip(block_id, blocks))]  # type: ignore[arg-type]
        return out

    data = da.map_blocks(block, chunks=tuple((n,) * (size // n) for n, size in zip(blocks, SHAPE)), dtype=whole.dtype)
    return xr.Dataset({"t2m": (("time", "lat", "lon"), data)})


def run(repeat: int, threads: int, workdir: str | None, rounds: int = 3) -> dict:
    results: dict = {"shape": SHAPE, "chunks": CHUNKS, "shards": SHARDS, "threads": threads, "rounds": rounds,
                     "rows": {}}
    with tempfile.TemporaryDirectory(prefix="zarrdask-main-use-", dir=workdir) as root:
        build(root)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), OMP_NUM_THREADS="1",
                   BLOSC_NTHREADS="1")
        for op, _ in OPS:
            for engine in ENGINES:
                best: dict = {}
                # the columns take turns, a fresh process each, so that a spell of load on
                # the machine falls on all of them rather than on whichever ran then
                names = list(COLUMNS)
                for round_ in range(rounds):
                    for layout in in_turn(names, round_):
                        store, inner = COLUMNS[layout]
                        args = [sys.executable, "-m", "benchmarks.main_use", "--worker",
                                os.path.join(root, f"{store}.zarr"), "--engine", engine, "--op", op,
                                "--repeat", str(repeat), "--threads", str(threads)] + (["--inner"] if inner else [])
                        out = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
                        row = json.loads(out.stdout.strip().splitlines()[-1])
                        if layout in best:
                            row = {**row, "s": min(row["s"], best[layout]["s"]),
                                   "cpu_s": min(row["cpu_s"], best[layout]["cpu_s"])}
                        best[layout] = row
                for layout in names:
                    row = best[layout]
                    results["rows"].setdefault(op, {}).setdefault(engine, {})[layout] = row
                    print(f"{op:<7} {engine:<9} {layout:<8} {row['s'] * 1000:8.1f} ms "
                          f"(cpu {row['cpu_s'] * 1000:7.1f} ms)", file=sys.stderr, flush=True)
    return results


def table(results: dict) -> str:
    lines = [f"{results['threads']} threads; float32 {' x '.join(map(str, results['shape']))}, chunks "
             f"{results['chunks']}, shards {results['shards']}; best of {results['rounds']} processes per "
             "column, taking turns\n",
             "| operation | engine | chunked (ms) | sharded (ms) | sharded / chunked | sharded, dask chunks of "
             "the inner chunks (ms) | that / chunked |", "|---|---|---:|---:|---:|---:|---:|"]
    for op, label in OPS:
        for engine in ENGINES:
            row = results["rows"][op][engine]
            c, s, i = row["chunked"], row["sharded"], row["sharded-inner"]
            lines.append(f"| {label} | {engine} | {c['s'] * 1000:,.0f} ({c['tasks']}) | {s['s'] * 1000:,.0f} "
                         f"({s['tasks']}) | {s['s'] / c['s']:.2f}x | {i['s'] * 1000:,.0f} ({i['tasks']}) "
                         f"| {i['s'] / c['s']:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3, help="timed runs in each worker process")
    p.add_argument("--rounds", type=int, default=3, help="worker processes per column, the columns taking turns")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workdir", default=None)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--engine", help=argparse.SUPPRESS)
    p.add_argument("--op", help=argparse.SUPPRESS)
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.engine, args.op, args.repeat, args.threads, args.inner)))
        return
    from .run import machine_meta, save_results

    results = run(args.repeat, args.threads, args.workdir, args.rounds)
    text = table(results)
    os.makedirs(args.out, exist_ok=True)
    save_results(args.out, "main_use", machine_meta("xarray", "dask"), results, results["rows"], text + "\n")
    print(text)


if __name__ == "__main__":
    main()
