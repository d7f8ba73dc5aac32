"""Helpers for the command-line tests: corrupting stored bytes on purpose."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import numpy as np
from click.testing import CliRunner, Result

from zarrdask.cli import cli


def run(*args: str) -> Result:
    """Run ``zarrdask ARGS`` in process: ``stdout`` and ``stderr`` apart, ``output`` both.

    click >= 8.2 always captures so; click 8.1 keeps stderr apart only with
    ``mix_stderr=False``, and then leaves it out of ``output``, which is put back here.
    """
    argv = [str(a) for a in args]
    if "mix_stderr" not in inspect.signature(CliRunner).parameters:  # click >= 8.2
        return CliRunner().invoke(cli, argv)
    result = CliRunner(mix_stderr=False).invoke(cli, argv)
    result.__class__ = _Click81Result
    return result


class _Click81Result(Result):
    @property
    def output(self) -> str:
        return self.stdout + self.stderr


#: numcodecs < 0.15 warns at import (from numcodecs or numcodecs.zfpy) that zfpy (installed by the test extra) is
#: incompatible with NumPy 2; that line on stderr is numcodecs's, not the CLI's
_NUMCODECS_ZFPY_WARNING = "ignore:NumPy version >= 2.0.0 detected:UserWarning"


def subprocess_env() -> dict[str, str]:
    """The environment for ``zarrdask`` in a subprocess: no ``ZARRDASK_DEBUG``, and
    numcodecs's import-time zfpy warning (numcodecs < 0.15 only) filtered out."""
    env = {k: v for k, v in os.environ.items() if k != "ZARRDASK_DEBUG"}
    env["PYTHONWARNINGS"] = ",".join(w for w in (env.get("PYTHONWARNINGS"), _NUMCODECS_ZFPY_WARNING) if w)
    return env


def flip(path: Path, pos: int, mask: int = 0xFF) -> None:
    """Flip the bits of ``mask`` in the byte at ``pos`` (negative: from the end) of a file."""
    data = bytearray(path.read_bytes())
    data[pos] ^= mask
    path.write_bytes(bytes(data))


def shard_entries(shard: bytes, n_inner: int, *, crc32c: bool = True, at_end: bool = True) -> np.ndarray:
    """The ``(offset, nbytes)`` index entries of a shard (``bytes`` little-endian index codec)."""
    size = 16 * n_inner
    extra = 4 if crc32c else 0
    raw = shard[len(shard) - size - extra : len(shard) - extra] if at_end else shard[:size]
    return np.frombuffer(raw, dtype="<u8").reshape(n_inner, 2)


def no_traceback(text: str) -> bool:
    return "Traceback" not in text and 'File "' not in text
