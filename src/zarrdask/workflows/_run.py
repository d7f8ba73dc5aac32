"""Running a workflow's dask graph, with a progress bar, on whatever scheduler
dask would use: a distributed ``Client`` (``distributed.progress``) or a local
scheduler (``dask.diagnostics.ProgressBar``)."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Any


def distributed_client(scheduler: Any = None) -> Any:
    """The distributed Client dask would run on, or ``None`` for a local scheduler."""
    if "distributed" not in sys.modules and scheduler is None:
        return None
    try:
        from dask.base import get_scheduler
        from distributed import Client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    owner = getattr(get_scheduler(scheduler=scheduler), "__self__", None)
    return owner if isinstance(owner, Client) else None


def run_graph(collection: Any, progress: bool = True, **compute_kwargs: Any) -> Any:
    """Compute ``collection`` (a dask collection, or a list/nesting of them) and
    return its result, showing progress when asked."""
    import dask

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
    from dask.diagnostics import ProgressBar

    with ProgressBar() if progress else nullcontext():
        return dask.compute(collection, **compute_kwargs)[0]


def copy_block(source: Any, target: Any, region: tuple[slice, ...], *after: Any) -> None:
    """One task: read ``region`` of the array ``source`` and write it into the
    array ``target`` (``after``: results this task must wait for, unused).

    Serial (dask runs tasks in parallel already) and one chunk at a time: the
    task holds the block, one chunk's stored bytes and one decoded or encoded
    chunk (:func:`zarrdask.workflows.plan.task_overhead`); freed memory goes back
    to the system (:func:`zarrdask._memory.return_freed_memory`)."""
    from .._memory import return_freed_memory
    from ..core.options import EngineOptions

    return_freed_memory()
    options = EngineOptions(threads=1, one_chunk=True)
    target.set_basic_selection(region, source.get_basic_selection(region, options=options), options=options)
