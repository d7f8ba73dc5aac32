"""The ``zarrdask`` command line (``zarrdask ...`` or ``python -m zarrdask.cli ...``).

Commands, one module per group of commands:

* :mod:`~zarrdask.cli.nodes`: ``info``, ``tree``, ``ls``;
* :mod:`~zarrdask.cli.data`: ``cat``;
* :mod:`~zarrdask.cli.verify`: ``verify``;
* :mod:`~zarrdask.cli.metadata`: ``consolidate``.

A new command is a click command in its own module, added to :data:`COMMANDS`.
Shared options (``PATH``, ``--node``, ``--storage-option``, ``--json``,
``--progress``), output helpers and the error → exit code mapping live in
:mod:`zarrdask.cli._common`.
"""

from __future__ import annotations

from . import data, metadata, nodes, verify
from ._app import cli, main

__all__ = ["COMMANDS", "cli", "main"]

#: every command of the ``zarrdask`` group (``--help`` lists them by name)
COMMANDS = [nodes.info, nodes.tree, nodes.ls, data.cat, verify.verify, metadata.consolidate]

for _command in COMMANDS:
    cli.add_command(_command)
