"""Running a workflow's dask graph, with a progress bar, on whatever scheduler
dask would use: a distributed ``Client`` (``distributed.progress``) or a local
scheduler (``dask.diagnostics.ProgressBar``)."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from typing import Any

import dask
from dask.base import get_scheduler
from dask.diagnostics import ProgressBar


def distributed_client(scheduler: Any = None) -> Any:
    """The distributed Client dask would run on, or ``None`` for a local scheduler."""
    if "distributed" not in sys.modules and scheduler is None:
        return None
    try:  # distributed: imported only when it is in use already, or a scheduler is named
        from distributed import Client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    owner = getattr(get_scheduler(scheduler=scheduler), "__self__", None)
    return owner if isinstance(owner, Client) else None


#: a stage's blocks stop growing at this many tasks per worker thread
TASKS_PER_WORKER = 4


def min_tasks() -> int:
    """Tasks a stage should have at least: :data:`TASKS_PER_WORKER` per thread
    of the scheduler dask would use now (the distributed client's workers, or
    the local scheduler's ``num_workers``, default the CPU count)."""
    client = distributed_client()
    if client is not None:
        try:
            threads = sum(client.nthreads().values())
        except Exception:  # a client that cannot answer: plan as for this machine
            threads = 0
    else:
        threads = dask.config.get("num_workers", None) or 0
    return TASKS_PER_WORKER * max(1, threads or os.cpu_count() or 1)


def over_network(*stores: Any) -> bool:
    """Whether any of ``stores`` (``None`` ignored) waits on a network for its
    requests (capability ``"streaming"``: object stores, HTTP)."""
    from ..storage.capabilities import STREAMING

    return any(s is not None and STREAMING in s.capabilities for s in stores)


def threads_per_worker() -> int:
    """The threads of one worker process dask would run tasks on now: the
    largest worker of the distributed client; 1 on a local scheduler (each
    of its threads counts as a worker)."""
    client = distributed_client()
    if client is None:
        return 1
    try:
        return max(1, max(client.nthreads().values(), default=1))
    except Exception:  # a client that cannot answer: as a single-threaded worker
        return 1


def run_graph(collection: Any, progress: bool = True, **compute_kwargs: Any) -> Any:
    """Compute ``collection`` (a dask collection, or a list/nesting of them) and
    return its result, showing progress when asked."""
    client = distributed_client(compute_kwargs.get("scheduler"))
    if client is not None:
        kwargs = {k: v for k, v in compute_kwargs.items() if k != "scheduler"}
        futures = client.compute(collection, **kwargs)
        if progress:
            from distributed import progress as show

            try:  # a widget in Jupyter needs ipywidgets; text otherwise
                import ipywidgets  # noqa: F401

                notebook = None
            except ImportError:
                notebook = False
            show(futures, notebook=notebook)
        return client.gather(futures)
    with ProgressBar() if progress else nullcontext():
        return dask.compute(collection, **compute_kwargs)[0]


def copy_block(source: Any, target: Any, region: tuple[slice, ...], memory: int | None = None, *after: Any) -> None:
    """One task: read ``region`` of the array ``source`` and write it into the
    array ``target`` (``after``: results this task must wait for, unused).

    Serial (dask runs tasks in parallel already) and one chunk per store call:
    the task holds the block, one chunk's stored bytes and one decoded or
    encoded chunk (:func:`zarrdask.workflows.plan.task_overhead`). ``memory``:
    the task's declared memory; reads from stores whose requests wait on a
    network keep as many chunks in flight as it leaves room for next to the
    block (``EngineOptions.memory_budget``), partial reads of shards included.
    Freed memory goes back to the system
    (:func:`zarrdask._memory.return_freed_memory`)."""
    from .._memory import return_freed_memory
    from ..core.options import EngineOptions
    return_freed_memory(over_network(source.store, target.store))
    options = EngineOptions(threads=1, one_chunk=True, memory_budget=memory)
    target.set_basic_selection(region, source.get_basic_selection(region, options=options), options=options)


def copy_into(target: Any, source: Any, region: tuple[slice, ...], memory: int | None = None, *after: Any) -> None:
    """:func:`copy_block` with the array written first (a task writing through
    a fork of an icechunk session: :meth:`zarrdask.dask.sessions.SessionForks.task`)."""
    copy_block(source, target, region, memory, *after)
