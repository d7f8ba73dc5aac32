"""``zarrdask verify``: decode every stored chunk and check every checksum."""

from __future__ import annotations

import click

from ..dask.verify import verify as verify_chunks
from ._common import (
    EXIT_PROBLEMS,
    emit_json,
    json_option,
    open_node,
    path_argument,
    progress_bar,
    progress_option,
    workers_option,
    show_progress,
)

__all__ = ["verify"]


@click.command(short_help="Decode every chunk and check every checksum.")
@path_argument
@workers_option
@click.option(
    "--batch-mib",
    type=click.FloatRange(min=0, min_open=True),
    default=8.0,
    show_default=True,
    help="About how many MiB of decoded data one dask task checks (a larger shard is a task of its own).",
)
@click.option(
    "--strict",
    is_flag=True,
    default=False,
    help="Also report every chunk of the grid that is not stored, and every empty inner chunk of a shard "
    "within the array (strict reads, read_missing_chunks=False), instead of taking them as the fill value.",
)
@progress_option
@json_option
def verify(
    path: str,
    node: str,
    storage_options: tuple[str, ...],
    workers: int | None,
    batch_mib: float,
    strict: bool,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Decode every stored chunk of the array at PATH (every array, for a group) and
    check every checksum, in parallel with dask.

    Shards are checked inner chunk by inner chunk, after their index and its
    checksum. Each problem is printed on its own line: the store key (and the
    inner chunk for shards), the error and its message. Exits with status 1 when
    there is any. With --strict, a chunk that is not stored is a problem too.
    """
    obj = open_node(path, node, storage_options)
    kwargs = {"scheduler": "threads"}
    if workers is not None:
        kwargs["num_workers"] = workers
    with progress_bar(show_progress(progress)):
        report = verify_chunks(obj, batch_bytes=max(1, int(batch_mib * (1 << 20))),
                               read_missing_chunks=False if strict else None, **kwargs)
    if as_json:
        emit_json(report.to_json())
    else:
        for p in report.problems:
            click.echo(str(p))
        n, arrays = report.keys_checked, len(report.arrays)
        what = f"{n:,} stored chunk{'s' if n != 1 else ''} or shard{'s' if n != 1 else ''} " \
            f"in {arrays} array{'s' if arrays != 1 else ''}"
        if report.ok:
            click.echo(f"OK: checked {what}")
        else:
            k = len(report.problems)
            click.echo(f"FAILED: {k} problem{'s' if k != 1 else ''} in {what}")
    if not report.ok:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
