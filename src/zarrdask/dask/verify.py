"""Verifying stored data in parallel: the checks of :mod:`zarrdask.core.verify`
as a dask graph, one task per batch of stored chunks or shards.

A batch holds about ``batch_bytes`` of decoded data: many small chunks, or one
shard (a shard larger than ``batch_bytes`` is a task of its own). Each task
fetches its keys with one store call and decodes them with the chunk engine's
thread pool switched off, since dask already runs tasks in parallel. Progress
shows with :class:`dask.diagnostics.ProgressBar` (or ``distributed.progress``).

Examples
--------
>>> import numpy as np, zarrdask
>>> from zarrdask.dask.verify import verify
>>> a = zarrdask.create_array({}, shape=(8, 8), dtype="u1", chunks=(2, 2), shards=(4, 4))
>>> a[:] = 1
>>> report = verify(a)
>>> report.ok, report.keys_checked
(True, 4)
"""

from __future__ import annotations

from typing import Any

import dask
from dask.base import tokenize

from .._pool import run_inline
from ..core.array import Array
from ..core.group import Group
from ..core.verify import (
    Problem,
    VerifyReport,
    collect_arrays,
    key_batches,
    stored_chunk_keys,
    verify_keys,
    with_strictness,
)

__all__ = ["verify", "verify_tasks"]


def _check_batch(array: Array, keys: list[str]) -> tuple[list[Problem], int]:
    # in this thread, the pool's work included: dask runs the tasks in parallel
    return run_inline(verify_keys, array, keys)


def verify_tasks(
    node: Array | Group, *, batch_bytes: int = 8 << 20, read_missing_chunks: bool | None = None
) -> tuple[list[Any], list[str], list[Problem]]:
    """The dask tasks that verify ``node``, one per batch of stored keys.

    Listing the keys happens here, eagerly; fetching and decoding is left to the
    tasks.

    Parameters
    ----------
    node : Array or Group
        An array, or a group: every array in and below it.
    batch_bytes : int, default 8 MiB
        About how many decoded bytes one task checks.
    read_missing_chunks : bool, optional
        ``False``: strict — chunks of the grid that are not stored and empty
        inner chunks within the array are problems (the tasks then cover the
        whole grid); ``None``: each array's own option.

    Returns
    -------
    tasks : list of dask.delayed.Delayed
        Each computes to ``(problems, keys_checked)``.
    arrays : list of str
        The paths of the arrays the tasks check.
    problems : list of Problem
        Members whose metadata could not be read (found while walking the group).
    """
    arrays, problems = collect_arrays(node)
    arrays = with_strictness(arrays, read_missing_chunks)
    tasks = []
    check = dask.delayed(_check_batch, pure=True)
    for array in arrays:
        token = tokenize(array, array.read_missing_chunks)
        for i, batch in enumerate(key_batches(array, stored_chunk_keys(array), batch_bytes)):
            tasks.append(check(array, batch, dask_key_name=(f"zarrdask-verify-{token}", i)))
    return tasks, [a.name for a in arrays], problems


def verify(node: Array | Group, *, batch_bytes: int = 8 << 20, read_missing_chunks: bool | None = None,
           **compute_kwargs: Any) -> VerifyReport:
    """Decode every stored chunk and check every checksum of ``node``, with dask.

    Parameters
    ----------
    node : Array or Group
        An array, or a group: every array in and below it.
    batch_bytes : int, default 8 MiB
        About how many decoded bytes one task checks.
    read_missing_chunks : bool, optional
        As for :func:`verify_tasks`.
    **compute_kwargs
        Passed to :func:`dask.compute` (``scheduler=``, ``num_workers=``, ...).

    Returns
    -------
    zarrdask.core.verify.VerifyReport
        Every corrupt chunk, shard, inner chunk and unreadable metadata document.

    See Also
    --------
    zarrdask.core.verify.verify_hierarchy : the same checks without dask.
    """
    tasks, arrays, problems = verify_tasks(node, batch_bytes=batch_bytes, read_missing_chunks=read_missing_chunks)
    report = VerifyReport(arrays=arrays, problems=list(problems))
    for found, checked in dask.compute(*tasks, **compute_kwargs) if tasks else ():
        report.problems.extend(found)
        report.keys_checked += checked
    report.problems.sort(key=lambda p: (p.path, p.key))
    return report
