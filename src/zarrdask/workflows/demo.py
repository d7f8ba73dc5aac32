"""``zarrdask demo``: the whole stack on a realistic dataset, end to end.

1. Builds a synthetic daily near-surface air temperature dataset (time × lat ×
   lon, float32, CF attributes; about 1 GB by default) as a lazy dask Dataset.
2. Writes it sharded, map layout (each shard holds a block of days of the whole
   globe), with dask on a ``distributed.LocalCluster``: one task per shard.
3. Opens it with ``xr.open_dataset(engine="zarrdask", chunks={})`` (one dask chunk
   per shard) and computes the climatology and an area-weighted global mean.
4. Rechunks it to the time-series layout (each shard holds the whole record of
   a patch of the globe) under a memory budget.
5. Verifies every chunk of both stores (decode, checksums) in parallel.
6. Times the two access patterns on both layouts and prints a summary.
"""

from __future__ import annotations

import contextlib
import logging
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import dask
import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr

from ..core.api import open_array, open_group
from ..dask.verify import verify
from ..xarray import to_zarr as xarray_to_zarr
from ._run import run_graph
from .plan import parse_max_mem
from .rechunk import rechunk

_MB = 1_000_000


@dataclass
class DemoResult:
    """What the demo did, with timings in seconds."""

    path: str
    shape: tuple[int, int, int]
    nbytes: int
    stored_bytes: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    global_mean: float = float("nan")
    problems: int = 0
    access: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.problems == 0

    def summary(self) -> str:
        t, y, x = self.shape
        lines = [
            f"{'dataset':<46}: t2m(time={t}, lat={y}, lon={x}) float32, {self.nbytes / _MB:,.0f} MB "
            f"in {self.path}",
        ]
        for step, label in (("write", "write (map layout, dask, one task per shard)"),
                            ("open", "open with xarray (engine='zarrdask')"),
                            ("reduce", "climatology + global mean from the shards"),
                            ("rechunk", "rechunk to the time-series layout"),
                            ("verify", "verify every chunk of both stores")):
            secs = self.timings.get(step)
            if secs is not None:
                rate = f"  ({self.nbytes / _MB / secs:,.0f} MB/s)" if step in ("write", "reduce", "rechunk") else ""
                lines.append(f"{label:<46}: {secs:7.2f} s{rate}")
        for name, stored in self.stored_bytes.items():
            lines.append(f"{'stored, ' + name + ' layout':<46}: {stored / _MB:,.0f} MB "
                         f"(ratio {self.nbytes / max(stored, 1):.2f})")
        lines.append(f"{'global mean temperature':<46}: {self.global_mean:.3f} K")
        if self.access:
            lines.append(f"{'access time (ms)':<24}{'map layout':>12}{'time-series layout':>20}")
            for pattern, by_layout in self.access.items():
                m, s = by_layout["map"] * 1e3, by_layout["series"] * 1e3
                faster = f"time-series layout {m / s:.0f}x faster" if m > s else f"map layout {s / m:.0f}x faster"
                lines.append(f"  {pattern:<22}{m:12.1f}{s:20.1f}   ({faster})")
        lines.append(f"{'verification':<46}: {'OK, no corrupt chunk' if self.ok else f'{self.problems} problems'}")
        lines.append(f"{'total':<46}: {sum(self.timings.values()):.1f} s")
        return "\n".join(lines)


def _grid(nbytes: int) -> tuple[int, int, int]:
    """(time, lat, lon) of about ``nbytes`` of float32: a 0.5° grid from 200 MB
    up, a 2° one below; time in whole shards of 32 days."""
    ny, nx = (360, 720) if nbytes >= 200 * _MB else (90, 180)
    nt = max(32, int(round(nbytes / (ny * nx * 4) / 32)) * 32)
    return nt, ny, nx


def synthetic_dataset(nt: int, ny: int, nx: int, *, chunk_days: int = 32, seed: int = 0) -> Any:
    """A lazy daily temperature dataset: a latitude profile, a seasonal cycle
    that flips between hemispheres, weather-like noise, and CF metadata."""
    lat = np.linspace(-90 + 90 / ny, 90 - 90 / ny, ny)
    lon = np.linspace(180 / nx, 360 - 180 / nx, nx)

    def block(block_info: Any = None) -> np.ndarray:
        (t0, t1), _, _ = block_info[None]["array-location"]
        rng = np.random.default_rng([seed, t0])
        days = np.arange(t0, t1)[:, None, None]
        phi = np.deg2rad(lat)[None, :, None]
        lam = np.deg2rad(lon)[None, None, :]
        season = np.cos(2 * np.pi * (days - 15) / 365.25)
        field_ = (288.0 - 40.0 * np.sin(phi) ** 2 + 12.0 * season * np.sin(phi)
                  + 2.0 * np.cos(3 * lam) * np.cos(phi))
        noise = rng.standard_normal((t1 - t0, ny, nx), dtype="float32") * 1.5
        return (field_ + noise).astype("float32")

    data = da.map_blocks(block, chunks=((chunk_days,) * (nt // chunk_days) + ((nt % chunk_days,) if nt % chunk_days else ()),
                                        (ny,), (nx,)), dtype="float32")
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), data, {
            "standard_name": "air_temperature", "long_name": "near-surface air temperature",
            "units": "K", "cell_methods": "time: mean"})},
        coords={
            "time": ("time", pd.date_range("2000-01-01", periods=nt, freq="D"), {"standard_name": "time"}),
            "lat": ("lat", lat, {"standard_name": "latitude", "units": "degrees_north"}),
            "lon": ("lon", lon, {"standard_name": "longitude", "units": "degrees_east"}),
        },
        attrs={"title": "zarrdask demo: synthetic daily near-surface air temperature",
               "Conventions": "CF-1.8", "source": "zarrdask.workflows.demo (synthetic)"},
    )
    return ds


@contextlib.contextmanager
def _timed(timings: dict[str, float], step: str) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    timings[step] = time.perf_counter() - t0


def _best_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_demo(
    size: int | str = "1GB",
    *,
    workers: int = 2,
    path: str | Path | None = None,
    max_mem: int | str = "256MB",
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> DemoResult:
    """Run the demo (see the module docstring) and return what it measured.

    Parameters
    ----------
    size : int or str
        About how many bytes of float32 data to make (``"1GB"``, ``"50MB"``, ...).
    workers : int
        Worker processes of the ``distributed.LocalCluster`` (one thread each).
    path : str or Path, optional
        A directory for the two stores (default: a temporary one, removed after).
    max_mem : int or str
        The rechunk's memory budget per task.
    progress : bool
        Show dask progress bars.
    echo : callable
        Where progress lines go.
    """
    nbytes = parse_max_mem(size, "size")
    nt, ny, nx = _grid(nbytes)
    tmp = None
    if path is None:
        tmp = tempfile.mkdtemp(prefix="zarrdask-demo-")
        root = Path(tmp)
    else:
        root = Path(path)
        root.mkdir(parents=True, exist_ok=True)
    demo = _Demo(DemoResult(str(root), (nt, ny, nx), nt * ny * nx * 4), root, progress, echo)
    try:
        # distributed: imported by the demo alone (it takes about a second)
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
        client = Client(cluster)
        try:
            echo(f"zarrdask demo: {demo.result.nbytes / _MB:,.0f} MB of float32 t2m(time={nt}, lat={ny}, "
                 f"lon={nx}) on a LocalCluster of {workers} worker{'s' if workers != 1 else ''}; stores in {root}")
            demo.write_map_layout()
            demo.open_and_reduce()
            demo.rechunk_to_series(max_mem)
            demo.verify_stores()
        finally:
            client.close()
            cluster.close()
        demo.time_access()
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    echo("")
    echo(demo.result.summary())
    return demo.result


@dataclass
class _Demo:
    """The demo's steps, each recording what it measured in ``result``."""

    result: DemoResult
    root: Path
    progress: bool
    echo: Callable[[str], None]

    @property
    def map_path(self) -> Path:
        return self.root / "t2m_map.zarr"

    @property
    def series_path(self) -> Path:
        return self.root / "t2m_series.zarr"

    def run(self, collection: Any) -> Any:
        return run_graph(collection, self.progress)

    def write_map_layout(self) -> None:
        """1. The dataset written in the map layout: one shard per block of days, one task each."""
        nt, ny, nx = self.result.shape
        ds = synthetic_dataset(nt, ny, nx)
        inner, shard = (8, ny // 2, nx // 2), (32, ny, nx)
        self.echo(f"1. writing the map layout: chunks {inner}, shards {shard} ...")
        with _timed(self.result.timings, "write"):
            pending = xarray_to_zarr(ds, self.map_path, mode="w", compute=False, encoding={
                "t2m": {"chunks": inner, "shards": shard,
                        "compressors": [{"name": "zstd", "configuration": {"level": 1}}]}})
            self.run(pending)

    def open_and_reduce(self) -> None:
        """2. Opened with xarray (one dask chunk per shard); the climatology and the global mean."""
        _, ny, nx = self.result.shape
        shard = (32, ny, nx)
        self.echo("2. opening with xarray (engine='zarrdask', chunks={}) ...")
        with _timed(self.result.timings, "open"):
            opened = xr.open_dataset(self.map_path, engine="zarrdask", chunks={})
        dask_chunks = tuple(c[0] for c in opened["t2m"].chunks)
        if dask_chunks != shard:
            raise AssertionError(f"dask chunks {dask_chunks} should be the shards {shard}")
        self.echo(f"   {opened['t2m'].data.npartitions} dask chunks, one per shard {shard}")
        self.echo("   computing the climatology and the area-weighted global mean ...")
        with _timed(self.result.timings, "reduce"):
            weights = np.cos(np.deg2rad(opened["lat"]))
            clim = opened["t2m"].mean("time")
            series = opened["t2m"].weighted(weights).mean(("lat", "lon"))
            clim_v, series_v = self.run([clim.data, series.data])
        self.result.global_mean = float(np.average(np.asarray(clim_v).mean(axis=1), weights=np.asarray(weights)))
        self.echo(f"   global mean {self.result.global_mean:.3f} K; warmest day {float(np.max(series_v)):.3f} K")

    def rechunk_to_series(self, max_mem: int | str) -> None:
        """3. Rechunked to the time-series layout under ``max_mem`` per task."""
        nt, ny, nx = self.result.shape
        c = max(1, ny // 12)
        target_chunks = {"t2m": (nt, c, c), "time": (nt,), "lat": (ny,), "lon": (nx,)}
        target_shards = {"t2m": (nt, 3 * c, 3 * c), "time": None, "lat": None, "lon": None}
        self.echo(f"3. rechunking to the time-series layout: chunks {target_chunks['t2m']}, "
                  f"shards {target_shards['t2m']}, max_mem {max_mem} ...")
        with _timed(self.result.timings, "rechunk"):
            source = open_group(self.map_path, mode="r")
            plan = rechunk(source, target_chunks, self.series_path, max_mem=max_mem,
                           target_shards=target_shards, temp_store=str(self.root / "rechunk_tmp.zarr"))
            self.echo("   " + str(plan).replace("\n", "\n   "))
            plan.execute(progress=self.progress)

    def verify_stores(self) -> None:
        """4. Every chunk of both stores decoded and its checksums checked; their stored sizes."""
        self.echo("4. verifying every chunk of both stores ...")
        with _timed(self.result.timings, "verify"):
            problems = []
            for p in (self.map_path, self.series_path):
                report = verify(open_group(p, mode="r"))
                problems.extend(report.problems)
        self.result.problems = len(problems)
        for problem in problems:
            self.echo(f"   corrupt: {problem}")
        for name, p in (("map", self.map_path), ("time series", self.series_path)):
            self.result.stored_bytes[name] = open_array(p, path="t2m", mode="r").nbytes_stored

    def time_access(self) -> None:
        """5. One point's time series and one day's map, read from both layouts."""
        nt, ny, nx = self.result.shape
        self.echo("5. timing the two access patterns on both layouts ...")
        with dask.config.set(scheduler="threads"):
            a_map = open_array(self.map_path, path="t2m", mode="r")
            a_series = open_array(self.series_path, path="t2m", mode="r")
            if not np.array_equal(a_map[:, ny // 3, nx // 5], a_series[:, ny // 3, nx // 5]):
                raise AssertionError("the rechunked array differs from the source")
            self.result.access = {
                "one point, all days": {"map": _best_of(lambda: a_map[:, ny // 3, nx // 5]),
                                        "series": _best_of(lambda: a_series[:, ny // 3, nx // 5])},
                "one day, whole globe": {"map": _best_of(lambda: a_map[nt // 2]),
                                         "series": _best_of(lambda: a_series[nt // 2], repeat=1)},
            }
