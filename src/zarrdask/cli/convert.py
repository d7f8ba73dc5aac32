"""``zarrdask convert``: migrate a hierarchy to Zarr v3 (optionally sharded), in
parallel, verified and resumable (:func:`zarrdask.workflows.convert.convert`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from ..errors import NodeExistsError, ZarrdaskError
from ..workflows.convert import VerificationError
from ..workflows.convert import convert as convert_hierarchy
from ._common import (
    EXIT_PROBLEMS,
    CliError,
    describe,
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
    codec_arguments,
    parse_shape,
    source_options,
    target_store,
    usage_error,
)

__all__ = ["convert"]

_SHAPE_HELP = (
    "Comma-separated integers (applied to every array with that many dimensions) or a JSON "
    'object {"array/path": [..] or null}.'
)


@click.command(short_help="Convert a hierarchy to Zarr v3 (sharded), verified and resumable.")
@path_argument
@click.argument("dst", metavar="DST")
@click.option(
    "--zarr-format",
    type=click.Choice(["2", "3"]),
    default="3",
    show_default=True,
    help="The target's format (a v2 source can also be re-laid out as v2).",
)
@click.option("--shards", default=None, metavar="SHAPE", help="The target shard shape (v3). " + _SHAPE_HELP)
@click.option(
    "--chunks",
    default=None,
    metavar="SHAPE",
    help="The target chunk shape (inner chunks when sharded; default: the source's). " + _SHAPE_HELP,
)
@click.option(
    "--compressor",
    "compressors",
    multiple=True,
    metavar="CODEC",
    help="A bytes -> bytes codec of the target, replacing the source's (repeatable, in order): a codec "
    'name (zstd) or a JSON object ({"name": "zstd", "configuration": {"level": 5}}; for v2 targets '
    'a numcodecs configuration {"id": "zstd", "level": 5}).',
)
@click.option("--no-compression", is_flag=True, help="Store the target without compression.")
@click.option("--overwrite", is_flag=True, help="Replace target nodes whose metadata differs.")
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Compare shapes, dtypes and a SHA-256 of every array's values afterwards.",
)
@workers_option
@click.option(
    "--block-mib",
    type=click.FloatRange(min=0, min_open=True),
    default=64.0,
    show_default=True,
    help="About how many MiB one copy task moves when the target is not sharded (one task per shard otherwise).",
)
@progress_option
@json_option
def convert(
    path: str,
    node: str,
    storage_options: tuple[str, ...],
    dst: str,
    zarr_format: str,
    shards: str | None,
    chunks: str | None,
    compressors: tuple[str, ...],
    no_compression: bool,
    overwrite: bool,
    verify: bool,
    workers: int | None,
    block_mib: float,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Convert the hierarchy (or array) at PATH to Zarr v3 at DST, copying the data in
    parallel with dask.

    Metadata is converted (dtype, codecs, dimension names, fill values,
    attributes), the layout changed as asked (--chunks, --shards,
    --compressor), then every target shard (or block of chunks) is copied by one
    task and, unless --no-verify, both sides are hashed and compared.

    Running the same command again after an interruption resumes: nodes that
    exist identically are kept, shards already written are skipped. -S options
    apply to PATH and DST when they are URLs.
    """
    fmt = int(zarr_format)
    shard_spec = parse_shape(shards, "--shards")
    chunk_spec = parse_shape(chunks, "--chunks")
    if no_compression and compressors:
        raise click.UsageError("--no-compression and --compressor exclude each other")
    codecs: list[Any] | None = [] if no_compression else (
        codec_arguments(compressors, "--compressor", zarr_format=fmt) if compressors else None
    )
    source = open_node(path, node, source_options(path, [dst], storage_options))
    target = target_store(dst, storage_options)
    kwargs: dict[str, Any] = {}
    if workers is not None:
        kwargs.update(scheduler="threads", num_workers=workers)
    try:
        with progress_bar(show_progress(progress)):
            result = convert_hierarchy(
                source, target, zarr_format=fmt, shards=shard_spec, chunks=chunk_spec, compressors=codecs,
                overwrite=overwrite, verify=verify, block_bytes=max(1, int(block_mib * (1 << 20))),
                progress=False, **kwargs,
            )
    except VerificationError as e:
        if as_json:
            emit_json({"ok": False, "source": path, "target": dst, "error": describe(e)})
        raise CliError(describe(e), EXIT_PROBLEMS) from None
    except (ValueError, TypeError, FileExistsError) as e:
        if isinstance(e, NodeExistsError) or not isinstance(e, ZarrdaskError):
            # the options do not fit the source (v2 shards, a v3 source to v2, ...) or the
            # target holds something else (--overwrite replaces it)
            error = usage_error(e)
            for python, option in (("pass overwrite=True", "pass --overwrite"),
                                   ("with zarr_format=3", "with --zarr-format 3")):
                error.message = error.message.replace(python, option)
            raise error from None
        raise
    finally:
        target.close()
    if as_json:
        emit_json(
            {
                "ok": result.ok,
                "source": path,
                "target": dst,
                "zarr_format": result.target.zarr_format,
                "verified": verify,
                "tasks_run": result.tasks_run,
                "tasks_skipped": result.tasks_skipped,
                "seconds": round(result.seconds, 3),
                "arrays": [{**dataclasses.asdict(a), "ok": a.ok} for a in result.arrays],
            }
        )
    else:
        click.echo(str(result))
        if not verify:
            click.echo("not verified (--no-verify)")
    if not result.ok:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
