"""Deterministic sources for resumable writes, shared by the tests and by the
child processes of ``test_killed.py``.

:func:`source` is the same dask array (same token) in every process. Its
blocks pass through :func:`gate`, which records every block it computes in
:data:`CALLS`, raises :class:`Interrupted` for the blocks in :data:`FAILING`
and for the :data:`FAIL_AT_CALL`-th block computed (a write interrupted
in-process), and sleeps
:data:`DELAY` seconds (a write slow enough to be killed midway).
"""

from __future__ import annotations

import os
import time
from typing import Any

import dask.array as da
import numpy as np

#: block indices (of the source's own chunking) whose computation raises
FAILING: set[tuple[int, ...]] = set()
#: every block computed in this process, in order
CALLS: list[tuple[int, ...]] = []
#: when set (n > 0), the n-th block computed raises (whichever it is)
FAIL_AT_CALL = [0]
#: seconds each block takes (the child processes set it)
DELAY = float(os.environ.get("ZARRDASK_TEST_BLOCK_DELAY", "0"))


class Interrupted(RuntimeError):
    """A block failed on purpose: the write stops midway."""


def gate(block: np.ndarray, block_info: Any = None) -> np.ndarray:
    index = tuple(block_info[0]["chunk-location"])
    CALLS.append(index)
    if index in FAILING or len(CALLS) == FAIL_AT_CALL[0]:
        raise Interrupted(f"block {index}")
    if DELAY:
        time.sleep(DELAY)
    return block


def fail_once(block: np.ndarray, flag: str, block_info: Any = None) -> np.ndarray:
    """``block``, except that block (0, 0) raises the first time it is computed
    (in any process: the file ``flag`` remembers it)."""
    if tuple(block_info[0]["chunk-location"]) == (0, 0) and not os.path.exists(flag):
        open(flag, "w").close()
        raise Interrupted("block (0, 0), once")
    return block


def interrupt(call: Any, fail: Any = ((3, 0),)) -> None:
    """Run ``call`` with the blocks ``fail`` raising, expecting it to stop
    midway; then clear the gate for the next call."""
    import pytest

    FAILING.update(fail)
    with pytest.raises(Interrupted):
        call()
    FAILING.clear()
    CALLS.clear()


def reset() -> None:
    """No block fails, none is counted."""
    FAILING.clear()
    CALLS.clear()
    FAIL_AT_CALL[0] = 0


def source(shape: tuple[int, ...] = (64, 64), chunks: tuple[int, ...] = (8, 64), dtype: str = "f4",
           offset: int = 0) -> da.Array:
    """``arange`` values (plus ``offset``: other data), in blocks that go through :func:`gate`."""
    n = int(np.prod(shape))
    x = (da.arange(n, chunks=n, dtype="i8") + offset).reshape(shape).astype(dtype).rechunk(chunks)
    return x.map_blocks(gate, dtype=dtype)


def shards(keys: Any, variables: tuple[str, ...] = ("",)) -> set[tuple[int, ...]]:
    """``(array number, *shard index)`` of the shard keys among ``keys`` of the
    arrays at ``variables`` (paths, ``""``: the root)."""
    out = set()
    for key in keys:
        for n, name in enumerate(variables):
            rest = key[len(name) + 1:] if name else key
            if (not name or key.startswith(name + "/")) and rest.startswith("c/"):
                parts = rest[2:].split("/")
                if all(p.isdigit() for p in parts):
                    out.add((n, *map(int, parts)))
    return out


def files(root: Any) -> dict[str, bytes]:
    """Every file under ``root`` (a store's keys) with its bytes."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, root).replace(os.sep, "/")] = f.read()
    return out
