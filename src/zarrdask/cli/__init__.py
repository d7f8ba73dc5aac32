"""The ``zarrdask`` command line (``zarrdask ...`` or ``python -m zarrdask.cli ...``).

Commands, one module per group of commands:

* :mod:`~zarrdask.cli.nodes`: ``info``, ``tree``, ``ls``;
* :mod:`~zarrdask.cli.data`: ``cat``;
* :mod:`~zarrdask.cli.verify`: ``verify``;
* :mod:`~zarrdask.cli.metadata`: ``consolidate``;
* :mod:`~zarrdask.cli.validate`: ``validate``;
* :mod:`~zarrdask.cli.convert`: ``convert``;
* :mod:`~zarrdask.cli.rechunk`: ``rechunk``;
* :mod:`~zarrdask.cli.demo`: ``demo``.

A new command is a click command in its own module, added to
:data:`~zarrdask.cli._app.LAZY_COMMANDS` (name, module, short help).
Shared options (``PATH``, ``--node``, ``--storage-option``, ``--json``,
``--progress``), output helpers and the error → exit code mapping live in
:mod:`zarrdask.cli._common`; what the workflow commands share (parsing shapes,
sizes and codecs, the stores of SRC and DST) in :mod:`zarrdask.cli._workflow`.
"""

from __future__ import annotations

from ._app import LAZY_COMMANDS, cli, main

__all__ = ["COMMANDS", "cli", "main"]


def __getattr__(name: str) -> object:
    # COMMANDS imports every command module: the command line itself imports only
    # the one it runs (ZarrdaskGroup.get_command)
    if name == "COMMANDS":
        import importlib

        return [getattr(importlib.import_module(f"{__name__}.{m}"), c) for c, (m, _) in LAZY_COMMANDS.items()]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
