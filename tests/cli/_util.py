"""Helpers for the command-line tests: corrupting stored bytes on purpose."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner, Result

from zarrdask.cli import cli


def run(*args: str) -> Result:
    """Run ``zarrdask ARGS`` in process (stdout and stderr kept apart)."""
    return CliRunner().invoke(cli, [str(a) for a in args])


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
