"""What every rechunk plan offers: its numbers, its summary, running it.

:func:`zarrdask.rechunk` returns a :class:`RechunkPlan`: one over the arrays
of an array or a group (:class:`zarrdask.workflows.rechunk.NodeRechunkPlan`,
copied by tasks that read and write through the chunk engine) or over the
variables of a Dataset (:class:`zarrdask.workflows.rechunk_xarray.DatasetRechunkPlan`,
written by xarray). Both hold one job per array: its plan
(:func:`zarrdask.workflows.plan.plan_array`) and its path in the target.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ..core.array import Array
from ..core.group import Group
from ..core.nodes import node_name
from ..dask.sessions import check_merged
from ._run import run_graph
from .plan import ArrayPlan, PlannedTask, format_bytes, shape_text

__all__ = ["RechunkPlan"]

#: zarrdask.rechunk()'s keywords: given to execute(), they would go to dask unused
_PLAN_KEYWORDS = frozenset({"resume", "max_mem", "target_chunks", "target_shards", "target_store", "temp_store",
                            "target_path", "target_options"})


class RechunkPlan:
    """What :func:`~zarrdask.rechunk` returns: the plan, its summary, its dask graph.

    ``str(plan)`` (and ``repr``) summarise the stages of every array, the
    number of tasks, the bytes read and written and the largest declared memory
    of a task. :meth:`tasks` lists every task with its declared memory.

    Its jobs (one per array or variable) each have the array's ``plan``
    (:class:`~zarrdask.workflows.plan.ArrayPlan`) and its target ``path``;
    a subclass makes the graph (:meth:`to_dask`).
    """

    _what = "array"

    def __init__(
        self,
        jobs: Sequence[Any],
        groups: list[tuple[str, dict[str, Any]]],
        max_mem: int,
        target_store: Any,
        temp_store: Any,
        target_path: str,
        group_format: int | None,
    ) -> None:
        self._jobs = jobs
        self._groups = groups
        self.max_mem = max_mem
        self.target_store = target_store
        self.temp_store = temp_store
        self.target_path = target_path
        self._group_format = group_format
        self._graph: Any = None
        self._target: Any = None
        #: the record of a resumable copy (``rechunk(..., resume=True)``), and the
        #: number of tasks the plan was made for
        self.resume: Any = None
        #: the cluster the plan was made for (:class:`~.rechunk_resume.PlannedFor`)
        self.planned_for_cluster: Any = None
        #: the forks the tasks write through into an icechunk session target
        #: (:class:`zarrdask.dask.sessions.SessionForks`), once the graph is made
        self._forks: Any = None

    # -- numbers ------------------------------------------------------------------------
    @property
    def arrays(self) -> tuple[ArrayPlan, ...]:
        """The plan of every array."""
        return tuple(j.plan for j in self._jobs)

    @property
    def nstages(self) -> int:
        """The largest number of passes any array takes (1, or 2 through an intermediate)."""
        return max((len(p.stages) for p in self.arrays), default=0)

    @property
    def ntasks(self) -> int:
        """Copy tasks in all (not counting the trivial tasks that join stages)."""
        return sum(p.ntasks for p in self.arrays)

    @property
    def bytes_read(self) -> int:
        return sum(p.bytes_read for p in self.arrays)

    @property
    def bytes_written(self) -> int:
        return sum(p.bytes_written for p in self.arrays)

    @property
    def peak_memory(self) -> int:
        """The largest declared memory of any task, in bytes (never above ``max_mem``)."""
        return max((p.peak_memory for p in self.arrays), default=0)

    @property
    def worker_peak_memory(self) -> int:
        """The most a worker process holds, in bytes: as many of the largest
        tasks as it has threads, and what it holds besides its tasks
        (:func:`zarrdask.workflows.plan.worker_overhead`). Within ``max_mem``
        unless the budget is too small to set that overhead aside
        (:func:`zarrdask.workflows.plan.plan_array`)."""
        return max((p.worker_peak_memory for p in self.arrays), default=0)

    def tasks(self) -> Iterator[PlannedTask]:
        """Every copy task: array, stage, what it reads and writes, its region and declared memory."""
        for p in self.arrays:
            yield from p.tasks()

    # -- text ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        n = len(self._jobs)
        head = (
            f"<zarrdask.RechunkPlan: {_count(n, self._what)}, {_count(self.nstages, 'stage')}, "
            f"{_count(self.ntasks, 'task')}, max_mem {format_bytes(self.max_mem)}>"
        )
        lines = [head]
        for job in self._jobs[:20]:
            lines.extend(_describe_job(job))
        if n > 20:
            lines.append(f"... and {n - 20} more {self._what}s")
        lines.append(
            f"total: {_count(self.ntasks, 'task')}; read {format_bytes(self.bytes_read)}, written "
            f"{format_bytes(self.bytes_written)} (moved {format_bytes(self.bytes_read + self.bytes_written)}); "
            f"peak memory per task {format_bytes(self.peak_memory)}; peak memory per worker "
            f"{format_bytes(self.worker_peak_memory)} ({_worker_text(self.arrays)}max_mem {format_bytes(self.max_mem)})"
        )
        return "\n".join(lines)

    __str__ = __repr__

    # -- running ------------------------------------------------------------------------
    @property
    def target(self) -> Array | Group:
        """The target array or group (created by :meth:`to_dask` or :meth:`execute`)."""
        if self._target is None:
            raise RuntimeError("the target is created by to_dask() or execute(); call one of them first")
        return self._target

    def to_dask(self) -> Any:
        """The copy as a ``dask.delayed.Delayed``: computing it runs every task.

        The first call creates the target's metadata (and the intermediate
        arrays); later calls return the same graph.
        """
        raise NotImplementedError

    def _prepare(self, compute: bool, scheduler: Any = None) -> Any:
        """The graph for a computation now (``compute``, on ``scheduler``) or later."""
        return self.to_dask()

    def execute(self, *, progress: bool = True, **compute_kwargs: Any) -> Array | Group:
        """Run the plan and return the target.

        Parameters
        ----------
        progress
            Show a progress bar: ``distributed.progress`` when the graph runs on a
            distributed ``Client`` (the default client, or ``scheduler=client``),
            ``dask.diagnostics.ProgressBar`` otherwise.
        **compute_kwargs
            Passed to ``dask.compute`` (``scheduler=``, ``num_workers=``, …), or
            to ``Client.compute`` on a distributed cluster.
        """
        misplaced = sorted(set(compute_kwargs) & _PLAN_KEYWORDS)
        if misplaced:
            raise TypeError(
                f"execute() got unexpected keyword arguments {', '.join(map(repr, misplaced))}: they are "
                "zarrdask.rechunk()'s, which makes the plan (zarrdask.rechunk(..., resume=True).execute())"
            )
        result = run_graph(self._prepare(True, compute_kwargs.get("scheduler")), progress, **compute_kwargs)
        if self._forks is not None:  # the tasks wrote through forks of an icechunk session
            self._forks.check_merged(result)
        else:  # a Dataset's writes through forks: their merges come back in the result
            check_merged(result, self.target_store)
        return self.target


def _describe_job(job: Any) -> list[str]:
    p = job.plan
    shards = f", shards {shape_text(p.target_shards)}" if p.target_shards else ""
    head = (
        f"{node_name(job.path)}  {shape_text(p.shape)} {p.dtype}: chunks {shape_text(p.source_chunks)} -> "
        f"{shape_text(p.target_chunks)}{shards}"
    )
    out = [head]
    for i, s in enumerate(p.stages, 1):
        where = f" (chunks {shape_text(p.intermediate_chunks)}, in temp_store)" if s.writes == "intermediate" else ""
        out.append(
            f"  stage {i}: {s.reads} -> {s.writes}{where}: {_count(s.ntasks, 'task')} of {shape_text(s.block)}, "
            f"<= {format_bytes(s.peak_memory)} each; read {format_bytes(s.bytes_read)} "
            f"({_many(s.chunk_reads, 'chunk')}), write {format_bytes(s.bytes_written)} "
            f"({_many(s.unit_writes, 'shard' if s.writes == 'target' and p.target_shards else 'chunk')})"
        )
    return out


def _worker_text(arrays: Sequence[ArrayPlan]) -> str:
    """How a worker's peak is made up: ``"2 tasks + 10.00 MiB; "``."""
    if not arrays:
        return ""
    top = max(arrays, key=lambda p: p.worker_peak_memory)
    return f"{_count(top.threads_per_worker, 'task')} + {format_bytes(top.worker_overhead)}; "


def _many(n: int, what: str) -> str:
    """``n`` things, with thousands separated: ``"1,296 shards"``."""
    return f"{n:,} {what}{'s' * (n != 1)}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"
