"""Dask writes into an icechunk session from other processes, through forks.

A writable icechunk session does not leave its process; its forks do
(icechunk 1.1 documentation, "Parallel Writes", section "Cooperative
distributed writes", https://icechunk.io/en/stable/icechunk-python/parallel/:
``Session.fork()``, ``Session.merge(*forks)``). When the tasks of a write run
elsewhere — on a ``distributed`` cluster, on the processes scheduler, or on
a scheduler not yet known (``compute=False``) — zarrdask writes as follows
(:class:`SessionForks`):

1. Before anything is written, the session is forked once: the *template*
   (icechunk 1.x's ``Session.fork`` refuses a session with uncommitted
   changes, 2.x forks it; a fork given as the store is its own template).
2. The driver writes the metadata (new arrays, groups, resizes for appends)
   and any in-memory data through the template, then merges the template into
   the session, so the session shows the new arrays at once.
3. Each task makes its own copy of the template (icechunk's pickling of a
   ``ForkSession``), writes its block through it and returns the copy: a
   block of a dask array (:meth:`SessionForks.add`, the writers) or a task of
   a graph of the caller's (:meth:`SessionForks.task`: the copy tasks of
   ``zarrdask.rechunk`` and ``zarrdask.convert``). A task
   that fails and is retried starts again from the template: what a failed
   attempt wrote is in a copy nobody returns, so only the attempt whose
   result dask keeps is ever merged.
4. The returned copies are merged in a tree (``SPLIT_EVERY`` at a time) on
   the workers; the last task makes a :class:`~zarrdask.storage.icechunk.PendingMerge`,
   which merges the result into the session in the process holding it — at
   once on the threaded scheduler, when the value arrives on a cluster. With
   ``compute=True`` the write returns only after that merge; the user commits.

Every copy carries the template's changes, and icechunk's merge lets the
fork merged last win for a chunk two forks both hold: a chunk the template
changed must therefore not be written by a task, or another task's copy would
bring the old value back. The driver's own writes never touch the chunks the
tasks write; for a fork given as the store, :meth:`SessionForks.add` checks
that none of its uncommitted chunks is among them
(:class:`~zarrdask.errors.IcechunkSessionError` otherwise).

The threaded and synchronous schedulers, which run the tasks in the caller's
process, write straight through the session when the write is computed at
once (or, computed later, when icechunk cannot fork the session).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

import dask
import dask.array as da
import dask.local
import dask.threaded
import numpy as np
from dask.base import get_scheduler
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from ..core.array import Array
from ..errors import IcechunkSessionError
from ..storage.abc import Store
from ..storage.icechunk import IcechunkSessionStore, PendingMerge
from .graph import IN_TASK

__all__ = ["SPLIT_EVERY", "SessionForks", "check_merged", "needs_forks", "session_forks"]

#: how many forks one merge task merges
SPLIT_EVERY = 16


def _runs_here(scheduler: Any, collections: list[Any]) -> bool:
    """Whether the scheduler a computation would use runs its tasks in this process."""
    get = get_scheduler(scheduler=scheduler, collections=collections or None)
    return get is None or get in (dask.threaded.get, dask.local.get_sync)


def needs_forks(store: Store, *, compute: bool, scheduler: Any = None, collections: Iterable[Any] = ()) -> bool:
    """Whether tasks writing into ``store`` cannot write through it: it is a
    writable icechunk session (or fork) and the tasks run in other processes
    (the scheduler, or the one dask would pick for ``collections`` now), or
    may (``compute=False``)."""
    if not isinstance(store, IcechunkSessionStore) or not store.writable:
        return False
    return not (compute and _runs_here(scheduler, list(collections)))


def session_forks(store: Store, *, compute: bool, scheduler: Any = None,
                  collections: Iterable[Any] = ()) -> SessionForks | None:
    """The forks a write into ``store`` goes through, or ``None`` when it writes
    straight into ``store``: ``store`` is no writable icechunk session, or the
    scheduler (``scheduler``, or the one dask would pick for ``collections``
    now) runs the tasks in this process and either the write is computed at
    once or icechunk cannot fork the session. A lazy write (``compute=False``)
    goes through forks whenever icechunk forks the session, so that it can be
    computed on any scheduler later.

    Raises
    ------
    IcechunkSessionError
        The tasks run in other processes and icechunk cannot fork the session
        (icechunk 1.x: it has uncommitted changes); nothing is written.
    """
    if not needs_forks(store, compute=compute, scheduler=scheduler, collections=collections):
        return None
    assert isinstance(store, IcechunkSessionStore)
    try:
        return SessionForks(store)
    except IcechunkSessionError:
        if _runs_here(scheduler, list(collections)):
            return None  # computed later in this process: straight through the session
        raise


class SessionForks:
    """The forks of one write into the session of ``home`` (see the module documentation).

    Write the metadata through :attr:`store` (the template), :meth:`add` each
    dask array with the array and region it goes to (or put tasks made by :meth:`task`
    in a graph of one's own), then :meth:`finish`, compute, and :meth:`check_merged`.
    """

    def __init__(self, home: IcechunkSessionStore) -> None:
        self.home = home
        self.store = home.fork_for_tasks()
        self._parts: list[da.Array] = []
        self._name = f"zarrdask-icechunk-{uuid.uuid4().hex}"

    def bind(self, array: Array) -> Array:
        """``array`` (over the session) as an array over the template."""
        return _rebind(array, self.store)

    def in_session(self, array: Array) -> Array:
        """``array`` (over the template) as an array over the session."""
        return _rebind(array, self.home)

    def add(self, x: da.Array, target: Array, region: tuple[slice, ...]) -> da.Array:
        """Add the write of ``x`` (blocks aligned to ``target``'s storage units)
        into ``region`` of ``target`` (an array over :attr:`store`): one task
        per block, each returning its fork (a dask array of forks, one per block)."""
        self._check_disjoint(target, region)
        part = da.map_blocks(
            _write_block, x, self.store, target, tuple(r.start for r in region),
            name=f"{self._name}-write-{len(self._parts)}", dtype=object,
            chunks=tuple((1,) * len(c) for c in x.chunks), meta=np.empty((0,) * x.ndim, dtype=object),
        )
        self._parts.append(part)
        return part

    def task(self, fn: Callable[..., Any], target: Array, *args: Any) -> tuple:
        """A task for a graph of the caller's: it runs ``fn(target, *args)`` with
        ``target`` (an array over :attr:`store`) over the task's own copy of the
        template, and computes to that copy's fork; give its key to
        :meth:`finish`. ``target`` must be new or not otherwise written: the
        check of :meth:`add` is not made."""
        return (_in_own_copy, self.store, fn, target, *args)

    def _check_disjoint(self, target: Array, region: tuple[slice, ...]) -> None:
        """Refuse a write whose tasks would rewrite chunks the template already
        changed (every copy carries the template's version of them)."""
        grid = target.layout.grid
        clash = [c for c in self.store.changed_chunks(target.path)
                 if all(max(a.start, b.start) < min(a.stop, b.stop) for a, b in zip(grid.chunk_region(c), region))]
        if clash:
            raise IcechunkSessionError(
                f"array {target.name!r}: {self.home!r} already holds uncommitted changes to stored objects "
                f"{clash[:5]}{' and more' if len(clash) > 5 else ''} that this write rewrites in tasks on other "
                "processes; each task writes through a copy of the fork carrying the old values, and merging the "
                "copies could bring them back. Merge the fork into its session and commit first, or write on "
                "the threaded scheduler (scheduler='threads')"
            )

    def finish(self, after: Delayed | None = None, keys: Iterable[Any] = ()) -> Delayed:
        """Merge the template into the session (the metadata is visible there
        from now on) and return the lazy write: it computes to a
        :class:`~zarrdask.storage.icechunk.PendingMerge` that merges the tasks'
        forks into the session when it reaches the session's process.

        ``after``: a graph of the caller's holding tasks made by :meth:`task`, and ``keys``:
        the keys in it whose values are forks (or ``None``: a key to wait for)."""
        if self.store is not self.home:
            self.home.merge(self.store.session)
        token = self.home.expect_merge()
        keys = [key for part in self._parts for key in _flat(part.__dask_keys__())] + list(keys)
        layer: dict[Any, Any] = {}
        depth = 0
        while True:
            groups = [keys[i:i + SPLIT_EVERY] for i in range(0, len(keys), SPLIT_EVERY)] or [[]]
            if len(groups) == 1:
                root = (self._name, depth, 0)
                layer[root] = (_deliver, token, groups[0])
                break
            keys = [(self._name, depth, i) for i in range(len(groups))]
            layer.update((key, (_merged, group)) for key, group in zip(keys, groups))
            depth += 1
        dependencies = [*self._parts, *([after] if after is not None else [])]
        graph = HighLevelGraph.from_collections(self._name, layer, dependencies=dependencies)
        return Delayed(root, graph, layer=self._name)

    def compute(self, lazy: Delayed, kwargs: dict[str, Any]) -> None:
        """Compute the lazy write (``kwargs``: dask's compute keywords) and make
        sure its forks were merged into the session before returning."""
        (result,) = dask.compute(lazy, **kwargs)
        self.check_merged(result)

    def check_merged(self, result: Any) -> PendingMerge:
        """Make sure ``result`` (the computed value of :meth:`finish`'s write)
        was merged into the session; return it."""
        if not isinstance(result, PendingMerge):
            raise IcechunkSessionError(
                f"the forks written for {self.home!r} did not come back to this process to be merged "
                f"(found {result!r})"
            )
        check_merged(result, self.home)
        return result

    def merged_view(self, merge: PendingMerge) -> IcechunkSessionStore:
        """A read-only store over what ``merge`` (the checked value of the write)
        brought into the session: the tasks' merged fork (the template when no
        task ran). Unlike a writable session it pickles, so graphs on other
        processes read the written data back before the commit."""
        fork = merge.fork if merge.fork is not None else self.store.session
        return IcechunkSessionStore(fork, read_only=True, concurrency=self.home.concurrency)


def check_merged(result: Any, home: Any) -> None:
    """Make sure every :class:`~zarrdask.storage.icechunk.PendingMerge` in
    ``result`` (a computed value, or lists of them) was merged into its session
    in this process (``home`` names the session in the error)."""
    for value in _values(result):
        if isinstance(value, PendingMerge) and not (value.merged or value.deliver()):
            raise IcechunkSessionError(
                f"the forks written for {home!r} did not come back to this process to be merged "
                f"(found {value!r})"
            )


def _values(result: Any) -> list[Any]:
    """The values in a computed result (lists and tuples of values, nested)."""
    if isinstance(result, (list, tuple)):
        return [v for sub in result for v in _values(sub)]
    return [result]


def _flat(keys: Any) -> list[Any]:
    if isinstance(keys, list):
        return [k for sub in keys for k in _flat(sub)]
    return [keys]


def _rebind(array: Array, store: Store) -> Array:
    return Array(store, array.path, array.metadata, dict(array.attrs), write_empty_chunks=array.write_empty_chunks)


def _in_own_copy(template: IcechunkSessionStore, fn: Callable[..., Any], target: Array, *args: Any) -> Any:
    """One task: ``fn(target, *args)`` with ``target`` over a copy of the template
    of its own (an attempt that fails leaves its writes in a copy nobody
    returns); return the copy's session (a ``ForkSession``)."""
    own = template.copy()
    fn(_rebind(target, own), *args)
    return own.session


def _set_region(target: Array, where: tuple[slice, ...], block: np.ndarray) -> None:
    target.set_basic_selection(where, block, options=IN_TASK)


def _write_block(block: np.ndarray, template: IcechunkSessionStore, target: Array, start: tuple[int, ...],
                 block_info: dict | None = None) -> np.ndarray:
    """One task: write ``block`` through a copy of the template of its own;
    return the copy's session (a one-element object array)."""
    assert block_info is not None
    where = tuple(slice(s + a, s + b) for s, (a, b) in zip(start, block_info[0]["array-location"]))
    out = np.empty((1,) * block.ndim, dtype=object)
    out[(0,) * block.ndim] = _in_own_copy(template, _set_region, target, where, block)
    return out


def _forks(values: list[Any]) -> list[Any]:
    return [f for v in values for f in (v.flat if isinstance(v, np.ndarray) else [v]) if f is not None]


def _merged(values: list[Any]) -> Any:
    """One merge task: the forks of ``values`` (task results) merged into the first."""
    forks = _forks(values)
    if not forks:
        return None
    forks[0].merge(*forks[1:])
    return forks[0]


def _deliver(token: str, values: list[Any]) -> PendingMerge:
    """The last task: the forks merged, on their way to the session."""
    return PendingMerge(token, _merged(values))
