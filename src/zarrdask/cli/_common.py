"""What every command shares: options, opening nodes, output, errors and exit codes.

Exit codes
----------
0
    Success.
1
    Problems found: by ``verify``, ``validate``, ``convert``'s verification,
    ``demo``.
2
    Usage error, or nothing found at the path (bad option, bad ``--slice``,
    selection out of bounds, missing file, no array or group, no such member;
    for ``convert`` and ``rechunk`` also options that do not fit the source,
    no rechunk plan under ``--max-mem``, and a target that holds something else).
3
    Any other error (unreadable metadata, corrupt data met by a read, a store
    that failed).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .. import errors

# the format core, numpy and the stores are imported by the functions that use
# them: ``zarrdask --help`` imports none of them

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_ERROR = 3


# -- errors ------------------------------------------------------------------------
class CliError(click.ClickException):
    """An error shown as one line ``zarrdask: error: ...`` on stderr."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file: Any = None) -> None:
        click.echo(f"zarrdask: error: {self.format_message()}", err=True)


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip()) or "(no message)"


def describe(exc: BaseException) -> str:
    """One line naming the error: ``"NodeNotFoundError: no array or group at ..."``."""
    if isinstance(exc, KeyError) and not isinstance(exc, errors.ZarrdaskError) and exc.args:
        message = str(exc.args[0])
    else:
        message = str(exc)
    return f"{type(exc).__name__}: {_one_line(message)}"


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an exception that ended a command (see the module doc)."""
    if isinstance(exc, (errors.NodeNotFoundError, FileNotFoundError, errors.SelectionError, errors.InvalidKeyError)):
        return EXIT_USAGE
    if isinstance(exc, KeyError) and not isinstance(exc, errors.ZarrdaskError):
        return EXIT_USAGE
    return EXIT_ERROR


def as_cli_error(exc: BaseException) -> CliError:
    """The :class:`CliError` reporting ``exc``."""
    return CliError(describe(exc), exit_code_for(exc))


# -- options -------------------------------------------------------------------------
def parse_storage_options(pairs: tuple[str, ...]) -> dict[str, Any] | None:
    """``("anon=true", "region=eu-west-1")`` → ``{"anon": True, "region": "eu-west-1"}``.

    Values are parsed as JSON when they are valid JSON, else kept as strings.
    """
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, found {pair!r}", param_hint="'--storage-option'")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def path_argument(f: F) -> F:
    """The ``PATH`` argument and the options saying where the node is."""
    f = click.option(
        "-S",
        "--storage-option",
        "storage_options",
        metavar="KEY=VALUE",
        multiple=True,
        help="An fsspec storage option for URLs (repeatable); VALUE is parsed as JSON "
        "when it is valid JSON (true, 3, {...}), else taken as a string.",
    )(f)
    f = click.option(
        "-n",
        "--node",
        "node",
        default="",
        metavar="NODE",
        help="Path of the array or group inside the store (default: its root). "
        "Needed for zip files; for directories and URLs PATH/NODE works too.",
    )(f)
    return click.argument("path", metavar="PATH")(f)


def json_option(f: F) -> F:
    """``--json``: machine-readable output on stdout."""
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")(f)


def workers_option(f: F) -> F:
    """``-j/--workers``: how many threads dask uses."""
    return click.option(
        "-j",
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        help="Number of threads dask uses (default: one per core).",
    )(f)


def progress_option(f: F) -> F:
    """``--progress/--no-progress``: a dask progress bar on stderr."""
    return click.option(
        "--progress/--no-progress",
        default=None,
        help="Show a progress bar on stderr (default: when stderr is a terminal).",
    )(f)


# -- opening -------------------------------------------------------------------------
def open_store(path: str, storage_options: tuple[str, ...], mode: str = "r") -> Any:
    """The store at ``path`` (a local path or an fsspec URL)."""
    from ..storage import store_from
    from ..storage.factory import is_url

    options = parse_storage_options(storage_options)
    if not is_url(path):
        if options:
            raise click.BadParameter(
                f"storage options only apply to URLs such as s3://..., not to the local path {path!r}",
                param_hint="'--storage-option'",
            )
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such file or directory: {path!r}")
    return store_from(path, mode=mode, storage_options=options)


def open_node(path: str, node: str, storage_options: tuple[str, ...]) -> Any:
    """The array or group at ``node`` in the store at ``path``, read-only."""
    from ..core.api import open as open_any

    store = open_store(path, storage_options)
    try:
        return open_any(store, path=node, mode="r")
    except errors.NodeNotFoundError:
        where = f"{path!r}" + (f" (node {node!r})" if node else "")
        raise errors.NodeNotFoundError(f"no Zarr array or group at {where}") from None


def show_progress(progress: bool | None) -> bool:
    """Whether to show a progress bar: as asked, else when stderr is a terminal."""
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(enabled: bool) -> Any:
    """A dask progress bar on stderr, or a context that does nothing."""
    if not enabled:
        return contextlib.nullcontext()
    from dask.diagnostics import ProgressBar  # dask is imported by the commands that use it

    return ProgressBar(minimum=0.5, out=sys.stderr)


# -- output --------------------------------------------------------------------------
def jsonable(x: Any) -> Any:
    """``x`` with numpy values, tuples, bytes and non-finite floats made JSON-safe.

    NaN and infinities become the strings ``"NaN"``, ``"Infinity"`` and
    ``"-Infinity"`` (as Zarr writes fill values); bytes become base64 strings;
    dates and times their ISO form; complex numbers ``[real, imag]``.
    """
    import numpy as np

    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.generic):
        if isinstance(x, (np.datetime64, np.timedelta64)):
            return str(x)
        return jsonable(x.item())
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    if isinstance(x, complex):
        return [jsonable(x.real), jsonable(x.imag)]
    if isinstance(x, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(x)).decode("ascii")
    if isinstance(x, (datetime.date, datetime.time, datetime.timedelta)):
        return x.isoformat() if not isinstance(x, datetime.timedelta) else str(x)
    return str(x)


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout."""
    click.echo(json.dumps(jsonable(obj), indent=2, allow_nan=False))


def emit_table(rows: list[tuple[str, Any]]) -> None:
    """Print ``key : value`` lines with the keys aligned."""
    width = max((len(k) for k, _ in rows), default=0)
    for key, value in rows:
        click.echo(f"{key:<{width}} : {value}")


def human_bytes(n: int | None) -> str:
    """``1536`` → ``"1,536 (1.5 KiB)"``."""
    if n is None:
        return "n/a"
    size, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            break
        size /= 1024
    return f"{n:,}" if unit == "B" else f"{n:,} ({size:.1f} {unit})"
