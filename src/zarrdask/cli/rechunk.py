"""``zarrdask rechunk``: copy an array or a group to new chunks (and shards) with
every worker's memory under a budget (:func:`zarrdask.rechunk`)."""

from __future__ import annotations

import time
from typing import Any

import click

from ..core.array import Array
from ..errors import NodeExistsError, ZarrdaskError
from ..workflows.rechunk import rechunk as plan_rechunk
from ._common import (
    emit_json,
    json_option,
    open_node,
    path_argument,
    progress_bar,
    progress_option,
    workers_option,
    show_progress,
)
from ._workflow import (
    index_keys,
    parse_bytes,
    parse_shape,
    source_options,
    target_store,
    usage_error,
)

__all__ = ["plan_json", "rechunk"]

_SHAPE_HELP = (
    "Comma-separated lengths (64,64; -1: the whole dimension; none: keep the source's), a lone "
    "length for every dimension (64), NAME=LENGTH by dimension name (time=365,lat=30), or JSON "
    '({"array/path": [..]} for a group).'
)


def _stage_json(stage: Any) -> dict[str, Any]:
    return {
        "reads": stage.reads,
        "writes": stage.writes,
        "block": list(stage.block),
        "ntasks": stage.ntasks,
        "peak_memory": stage.peak_memory,
        "bytes_read": stage.bytes_read,
        "bytes_written": stage.bytes_written,
        "chunk_reads": stage.chunk_reads,
        "unit_writes": stage.unit_writes,
    }


def plan_json(plan: Any) -> dict[str, Any]:
    """A :class:`~zarrdask.workflows.RechunkPlan` as JSON: its totals and every array's stages."""
    return {
        "max_mem": plan.max_mem,
        "nstages": plan.nstages,
        "ntasks": plan.ntasks,
        "bytes_read": plan.bytes_read,
        "bytes_written": plan.bytes_written,
        "peak_memory": plan.peak_memory,
        "worker_peak_memory": plan.worker_peak_memory,
        "arrays": [
            {
                "name": a.name,
                "shape": list(a.shape),
                "dtype": str(a.dtype),
                "source_chunks": list(a.source_chunks),
                "target_chunks": list(a.target_chunks),
                "target_shards": None if a.target_shards is None else list(a.target_shards),
                "intermediate_chunks": None if a.intermediate_chunks is None else list(a.intermediate_chunks),
                "ntasks": a.ntasks,
                "peak_memory": a.peak_memory,
                "worker_peak_memory": a.worker_peak_memory,
                "stages": [_stage_json(s) for s in a.stages],
            }
            for a in plan.arrays
        ],
    }


@click.command(short_help="Rechunk an array or a group under a memory budget.")
@path_argument
@click.argument("dst", metavar="DST")
@click.option("-c", "--chunks", default=None, metavar="SHAPE", help="The target chunk shape. " + _SHAPE_HELP)
@click.option(
    "--shards",
    default=None,
    metavar="SHAPE",
    help="The target shard shape, in the same forms (none or a dimension left out: one chunk per shard "
    "along it). Default: not sharded.",
)
@click.option(
    "-m",
    "--max-mem",
    default="256MB",
    show_default=True,
    metavar="SIZE",
    help="The memory a worker may use: its tasks, one per thread, and what it holds besides them "
    "(256MB, 1GiB, ...).",
)
@click.option(
    "--temp",
    "temp",
    default=None,
    metavar="PATH",
    help="Where an intermediate copy may go when a one-pass copy cannot stay under --max-mem "
    "(another store than DST; the intermediate arrays are removed once the target is written).",
)
@click.option(
    "--zarr-format",
    type=click.Choice(["2", "3"]),
    default=None,
    help="The target's format (default: the source's). Changing it gives that format's default codecs; "
    "a v2 source needs 3 for --shards.",
)
@click.option("--dry-run", is_flag=True, help="Print the plan and exit without writing anything.")
@click.option(
    "--resume",
    is_flag=True,
    help="Make the copy resumable, or finish one that was killed: run the same command again with --resume "
    "and only the blocks not recorded as copied are copied (a record is kept in DST until the copy completes).",
)
@workers_option
@progress_option
@json_option
def rechunk(
    path: str,
    node: str,
    storage_options: tuple[str, ...],
    dst: str,
    chunks: str | None,
    shards: str | None,
    max_mem: str,
    temp: str | None,
    zarr_format: str | None,
    dry_run: bool,
    resume: bool,
    workers: int | None,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Copy the array or group at PATH to DST with new chunks (and shards), in
    parallel, keeping every worker's memory under --max-mem.

    Prints the plan (stages, tasks, chunks and bytes moved, peak memory per
    task and per worker), then runs
    it. When one pass cannot stay under the budget, --temp gives a place for an
    intermediate copy (two passes). For a group, --chunks applies to every
    array with that many dimensions, or by dimension name to every array that
    has the dimension; arrays it does not apply to are copied unchanged.
    Every array keeps its dtype, fill value, codecs, attributes and dimension
    names. DST must be empty (with --resume: empty, or holding the copy a
    killed run of the same command with --resume began). -S options apply to
    PATH, DST and --temp when they are URLs.
    """
    if chunks is None and shards is None:
        raise click.UsageError("give the target layout with --chunks and/or --shards")
    budget = parse_bytes(max_mem, "--max-mem")
    chunk_spec = parse_shape(chunks, "--chunks", lone_int=True, allow_names=True, allow_none=True)
    shard_spec = parse_shape(shards, "--shards", lone_int=True, allow_names=True, allow_none=True)
    source = open_node(path, node, source_options(path, [dst, temp], storage_options))
    if isinstance(source, Array):  # NAME=LENGTH with integer names: dimension indices
        chunk_spec, shard_spec = index_keys(chunk_spec), index_keys(shard_spec)
    target = target_store(dst, storage_options)
    temp_store = None if temp is None else target_store(temp, storage_options)
    try:
        try:
            plan = plan_rechunk(
                source, chunk_spec, target, max_mem=budget, target_shards=shard_spec, temp_store=temp_store,
                target_options=None if zarr_format is None else {"zarr_format": int(zarr_format)},
                resume=resume,
            )
        except (ValueError, TypeError, FileExistsError) as e:
            # RechunkPlanError (no plan fits max_mem), shapes that do not fit the source,
            # something at DST already
            if isinstance(e, NodeExistsError) or not isinstance(e, ZarrdaskError):
                error = usage_error(e)
                error.message = error.message.replace("Pass temp_store=", "Pass --temp PATH")
                raise error from None
            raise
        if not as_json:
            click.echo(str(plan))
        seconds = None
        if not dry_run:
            kwargs: dict[str, Any] = {}
            if workers is not None:
                kwargs.update(scheduler="threads", num_workers=workers)
            t0 = time.perf_counter()
            with progress_bar(show_progress(progress)):
                plan.execute(progress=False, **kwargs)
            seconds = time.perf_counter() - t0
    finally:
        target.close()
        if temp_store is not None:
            temp_store.close()
    if as_json:
        emit_json(
            {
                "source": path,
                "target": dst,
                "executed": not dry_run,
                "seconds": None if seconds is None else round(seconds, 3),
                **plan_json(plan),
            }
        )
    elif dry_run:
        click.echo("dry run: nothing written")
    else:
        click.echo(f"rechunked {path} to {dst} in {seconds:.1f} s")
        if plan.nstages > 1:
            click.echo(f"the intermediate arrays in {temp} are removed")
