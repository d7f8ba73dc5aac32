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

A new command is a click command in its own module, added to :data:`COMMANDS`.
Shared options (``PATH``, ``--node``, ``--storage-option``, ``--json``,
``--progress``), output helpers and the error → exit code mapping live in
:mod:`zarrdask.cli._common`; what the workflow commands share (parsing shapes,
sizes and codecs, the stores of SRC and DST) in :mod:`zarrdask.cli._workflow`.
"""

from __future__ import annotations

from . import convert, data, demo, metadata, nodes, rechunk, validate, verify
from ._app import cli, main

__all__ = ["COMMANDS", "cli", "main"]

#: every command of the ``zarrdask`` group (``--help`` lists them by name)
COMMANDS = [
    nodes.info,
    nodes.tree,
    nodes.ls,
    data.cat,
    verify.verify,
    validate.validate,
    metadata.consolidate,
    convert.convert,
    rechunk.rechunk,
    demo.demo,
]

for _command in COMMANDS:
    cli.add_command(_command)
