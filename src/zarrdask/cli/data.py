"""``zarrdask cat``: print values of an array."""

from __future__ import annotations

import shutil
import sys

import click
import numpy as np

from ..core.array import Array
from ._common import emit_json, json_option, open_node, path_argument
from ._selection import is_orthogonal, parse_selection

__all__ = ["cat"]


@click.command(short_help="Print the values of an array.")
@path_argument
@click.option(
    "-s",
    "--slice",
    "selection",
    default="",
    metavar="SELECTION",
    help="numpy-style selection: integers, start:stop:step slices, '...', and [i, j, ...] "
    "lists (orthogonal), separated by commas, e.g. '0:10,5' or '...,::2'. Default: everything.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=1_000_000,
    show_default=True,
    help="Refuse to print more than this many values (0: no limit).",
)
@json_option
def cat(
    path: str, node: str, storage_options: tuple[str, ...], selection: str, limit: int, as_json: bool
) -> None:
    """Print the values of the array at PATH (or the part selected with --slice)."""
    try:
        sel = parse_selection(selection)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="'--slice'") from None
    obj = open_node(path, node, storage_options)
    if not isinstance(obj, Array):
        raise click.UsageError(f"{obj.name!r} in {path!r} is a group; cat prints arrays (see 'zarrdask ls')")
    if limit:
        n = _selection_size(obj, sel)
        if n is not None and n > limit:
            raise click.UsageError(
                f"the selection holds {n:,} values, more than --limit {limit:,}; "
                "narrow it with --slice or raise --limit (0: no limit)"
            )
    values = obj.oindex[sel] if is_orthogonal(sel) else obj[sel]
    values = np.asarray(values)
    if as_json:
        emit_json(
            {
                "path": obj.name,
                "selection": selection,
                "shape": list(values.shape),
                "dtype": str(values.dtype),
                "values": values,
            }
        )
        return
    if values.ndim == 0:
        click.echo(str(values[()]))
        return
    width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120
    click.echo(np.array2string(values, threshold=sys.maxsize, max_line_width=width, separator=" "))


def _selection_size(array: Array, sel: tuple) -> int | None:
    """The number of values ``sel`` selects, or ``None`` if that is not simple to know."""
    shape = array.shape
    parts = list(sel)
    if Ellipsis in parts:
        i = parts.index(Ellipsis)
        parts[i : i + 1] = [slice(None)] * max(0, len(shape) - (len(parts) - 1))
    parts += [slice(None)] * max(0, len(shape) - len(parts))
    if len(parts) != len(shape):
        return None  # the read reports the error
    size = 1
    for p, n in zip(parts, shape):
        if isinstance(p, slice):
            size *= len(range(*p.indices(n)))
        elif isinstance(p, list):
            size *= len(p)
    return size if size >= 0 else None

