"""``rechunk(..., resume=True)``: a copy that finishes where a killed one stopped
(docs/guarantees.md, "Resumable writes"; docs/rechunking.md).

The record (:mod:`zarrdask.dask.write_record`) lives in the target store; the
copy's identity is, per array, the source (its location and metadata: a
stored array is identified by where it is, not by reading its values), the
target's metadata and the plan's stages; the plan also keeps the number of
tasks and the threads per worker it was made for (:func:`zarrdask.workflows._run.min_tasks`
and :func:`~zarrdask.workflows._run.threads_per_worker` depend on the cluster),
so a resume on another cluster plans the same blocks. Each copy
task of each stage stores a marker in the record when its block is written
(block ``i`` of stage ``s`` of array ``n`` is block ``i`` of the record's
array ``2n + s``); a resume runs only the tasks without one, and a stage whose
blocks are all written is not run again.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from dask.base import tokenize

from ..core.api import create_array
from ..core.nodes import node_name
from ..dask.resume import ResumableWrite
from ..dask.write_record import array_identity, record_id
from ..storage import MemoryStore
from ._run import min_tasks, threads_per_worker
from .rechunk_stores import check_free

__all__ = ["PlannedFor", "open_record", "planned_for", "rechunk_identity", "stage_number"]


class PlannedFor(NamedTuple):
    """The cluster a plan is made for: at least ``min_tasks`` tasks per stage,
    ``threads`` tasks at once in a worker process."""

    min_tasks: int
    threads: int

    def recorded(self, **more: Any) -> dict[str, Any]:
        """What a resumable copy records of it (with ``more``)."""
        return {"min tasks": self.min_tasks, "threads per worker": self.threads, **more}


def open_record(store: Any, target_path: str, kind: str = "rechunk") -> ResumableWrite:
    """The record of the copy into ``target_path`` of ``store``; without one, the
    target must be free (as for a copy without ``resume``)."""
    job = ResumableWrite(store, record_id(kind, target_path), f"rechunk into {node_name(target_path)!r}")
    if job.found is None:
        check_free(store, target_path, "target_store")
    return job


def planned_for(job: ResumableWrite | None) -> PlannedFor:
    """The cluster to plan for: the recorded one on a resume, else this one."""
    if job is not None and job.found is not None and "min tasks" in job.plan:
        return PlannedFor(int(job.plan["min tasks"]), int(job.plan.get("threads per worker", 1)))
    return PlannedFor(min_tasks(), threads_per_worker())


def stage_number(array: int, stage: int) -> int:
    """The record's array number of ``stage`` (0 or 1) of the copy's ``array``-th array."""
    return 2 * array + stage


def rechunk_identity(jobs: Sequence[Any], groups: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The identity of a copy: per array its source, target metadata and stages."""
    arrays = []
    for job in jobs:
        preview = create_array(MemoryStore(), path=job.path, **job.target_kwargs)
        region = tuple(slice(0, n) for n in preview.shape)
        stages = [[s.reads, s.writes, list(s.block)] for s in job.plan.stages]
        identity = array_identity(job.path, tokenize(job.source), preview.metadata.to_json(), preview.attrs.asdict(),
                                  region, append=None)
        identity["stages"] = stages
        identity["intermediate chunks"] = list(job.plan.intermediate_chunks or ()) or None
        arrays.append(identity)
    return {"groups": [{"path": p, "attributes": a} for p, a in groups], "arrays": arrays}
