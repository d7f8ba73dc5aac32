"""``zarrdask demo``: the whole stack end to end on a synthetic dataset
(:func:`zarrdask.workflows.demo.run_demo`)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import Any

import click

from ..workflows.demo import run_demo
from ._common import (
    EXIT_PROBLEMS,
    emit_json,
    json_option,
    progress_option,
    show_progress,
)
from ._workflow import parse_bytes

__all__ = ["demo", "demo_json"]


def demo_json(result: Any, kept: bool) -> dict[str, Any]:
    """A :class:`~zarrdask.workflows.demo.DemoResult` as JSON: its fields, ``ok``, the
    total time, and whether the stores in ``path`` were kept (``--path``)."""
    out: dict[str, Any] = {"ok": result.ok}
    for f in dataclasses.fields(result):
        out[f.name] = getattr(result, f.name)
    out["stores_kept"] = kept
    out["total_seconds"] = sum(result.timings.values())
    return out


@click.command(short_help="Run an end-to-end demo on a synthetic dataset.")
@click.option(
    "--size",
    default="1GB",
    show_default=True,
    metavar="SIZE",
    help="About how much float32 data to make (1GB, 200MB, 5MB, ...).",
)
@click.option(
    "-w",
    "--workers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Worker processes of the distributed LocalCluster (one thread each).",
)
@click.option(
    "--path",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="A directory for the two stores, kept afterwards (default: a temporary one, removed).",
)
@click.option(
    "-m",
    "--max-mem",
    default="256MB",
    show_default=True,
    metavar="SIZE",
    help="The rechunk's memory budget per task.",
)
@progress_option
@json_option
def demo(size: str, workers: int, directory: str | None, max_mem: str, progress: bool | None,
         as_json: bool) -> None:
    """Build a synthetic daily temperature dataset (time x lat x lon, float32, CF
    attributes) of about --size, write it sharded with dask on a distributed
    LocalCluster, open it with xarray (engine="zarrdask") and compute a
    climatology and a global mean, rechunk it to the time-series layout under
    --max-mem, verify every chunk of both stores, and time the two access
    patterns (one point over all days, one day over the globe) on both layouts.

    Progress lines go to stdout (to stderr with --json, where stdout gets the
    summary as JSON), progress bars to stderr. Exits with status 1 when the
    verification finds a problem.
    """
    nbytes = parse_bytes(size, "--size")
    parse_bytes(max_mem, "--max-mem")  # a usage error before the cluster starts
    out = sys.stderr if as_json else sys.stdout

    def echo(line: str) -> None:
        click.echo(line, file=out)

    # distributed's progress bars (and anything else printed on the way) write to
    # sys.stdout: send them to stderr, so stdout holds only the lines above or the JSON
    with contextlib.redirect_stdout(sys.stderr):
        result = run_demo(nbytes, workers=workers, path=directory, max_mem=max_mem,
                          progress=show_progress(progress), echo=echo)
    if as_json:
        emit_json(demo_json(result, kept=directory is not None))
    if not result.ok:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
