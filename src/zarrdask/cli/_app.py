"""The root ``zarrdask`` command group and :func:`main`.

Errors raised by a command become one line on stderr and an exit code
(:mod:`zarrdask.cli._common`); ``--debug`` (or ``ZARRDASK_DEBUG=1``) lets them
through with their traceback instead.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from .. import __version__
from ._common import CliError, as_cli_error


#: every command: its name, module (in zarrdask.cli) and short help, which ``--help``
#: lists without importing the module (tests/cli/test_commands.py checks they agree)
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("nodes", "Describe an array or a group."),
    "tree": ("nodes", "Print the hierarchy below a group."),
    "ls": ("nodes", "List the members of a group."),
    "cat": ("data", "Print the values of an array."),
    "verify": ("verify", "Decode every chunk and check every checksum."),
    "validate": ("validate", "Check a hierarchy against the ZOM schema, a template and rules."),
    "consolidate": ("metadata", "Write consolidated metadata for a hierarchy."),
    "convert": ("convert", "Convert a hierarchy to Zarr v3 (sharded), verified and resumable."),
    "rechunk": ("rechunk", "Rechunk an array or a group under a memory budget."),
    "demo": ("demo", "Run an end-to-end demo on a synthetic dataset."),
}


class _Listed(click.Command):
    """A command as ``--help`` lists it: its name and short help, nothing imported."""

    def __init__(self, name: str, short_help: str) -> None:
        super().__init__(name, short_help=short_help)


class ZarrdaskGroup(click.Group):
    """A click group that turns every error of its commands into a :class:`CliError`.

    Its commands (:data:`LAZY_COMMANDS`) are imported when run: ``zarrdask info``
    does not import what ``zarrdask demo`` needs (dask.array, xarray, distributed).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*LAZY_COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            if getattr(ctx, "_zarrdask_listing", False):
                return _Listed(cmd_name, LAZY_COMMANDS[cmd_name][1])
            module = importlib.import_module(f"zarrdask.cli.{LAZY_COMMANDS[cmd_name][0]}")
            self.add_command(getattr(module, cmd_name))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        ctx._zarrdask_listing = True  # type: ignore[attr-defined]  # list from LAZY_COMMANDS
        try:
            super().format_commands(ctx, formatter)
        finally:
            del ctx._zarrdask_listing  # type: ignore[attr-defined]

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, BrokenPipeError):
            raise
        except KeyboardInterrupt:
            raise CliError("interrupted", 130) from None
        except Exception as e:
            if (ctx.obj or {}).get("debug"):
                raise
            raise as_cli_error(e) from e


def _version() -> str:
    return __version__


@click.group(
    cls=ZarrdaskGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(_version(), "-V", "--version", prog_name="zarrdask")
@click.option(
    "--debug",
    is_flag=True,
    envvar="ZARRDASK_DEBUG",
    help="Show the traceback of an error instead of a one-line message (also ZARRDASK_DEBUG=1).",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Inspect, check, convert and rechunk Zarr v2 and v3 arrays and groups.

    PATH is a local directory, a zip file or an fsspec URL (s3://, gs://,
    https://, ...); --storage-option KEY=VALUE passes options to the URL's
    file system. Every command takes --json for machine-readable output.

    Exit codes: 0 success, 1 problems found (verify, validate, a conversion
    that does not verify, demo), 2 usage error or nothing at the path, 3 any
    other error.
    """
    ctx.obj = {"debug": debug}


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name.

    Returns
    -------
    int
        The exit code (see :mod:`zarrdask.cli`).
    """
    try:
        cli.main(args=argv, prog_name="zarrdask", standalone_mode=True)
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
