"""Opening benchmark: round trips and time of ``xr.open_dataset`` and
``xr.open_datatree`` with ``engine="zarrdask"`` and ``engine="zarr"``, against
a latency-injecting HTTP server and a latency proxy in front of moto's S3.

    python -m benchmarks.opens --latency 0 20 --repeat 3

Data: a CF-like dataset (5 dimension coordinates, 6 two-dimensional auxiliary
coordinates, 40 variables) and a DataTree of 4 groups (the root and three
children, one of them with a child of its own), Zarr v3, with and without
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
