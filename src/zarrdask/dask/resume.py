"""Running a write so that ``resume=True`` can finish it after a kill
(what it promises per store: docs/guarantees.md, "Resumable writes").

A :class:`ResumableWrite` holds one write's record
(:mod:`zarrdask.dask.write_record`) and runs its three steps:

1. **check** — the record is read (one request). A resume whose identity
   differs from the recorded one is refused before anything is written.
2. **setup** — unless the record says it was done: the record is stored
   (state ``"setup"``), what the write creates is cleared (a node being
   replaced, or a node an earlier attempt began to create), the target's
   metadata is made (arrays created, resized for an append, small variables
   written), and the record is stored again (state ``"ready"``). A kill at
   any point of it leaves a record in state ``"setup"``, and the next resume
   does the whole step again: the record never lies about the metadata.
3. **blocks** — :meth:`ResumableWrite.tasks` makes one task per block not
   recorded as finished (the graph is culled to them: the source's tasks for
   the other blocks are never computed); each stores its block through the
   chunk engine, then its marker. :meth:`ResumableWrite.finish` is the last
   task: it removes the record, so the finished store holds exactly the keys
   of a write without ``resume=True``.

Blocks are aligned with the shards (chunks, when unsharded) as for any
zarrdask write (:mod:`zarrdask.dask.alignment`), so a block that is written
again after a kill rewrites only its own shards.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator, Mapping

import dask.array as da
import numpy as np
from dask.array.core import ArraySliceDep
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from ..core.api import open_array
from ..core.array import Array
from ..core.nodes import clear_node, node_name, prepare_node
from ..errors import NodeExistsError, WriteRecordMismatchError
from ..storage.abc import Store
from .graph import IN_TASK
from .write_record import RECORD_DIR, WriteRecord, check_identity, check_resumable, plain_json, whole_keys

__all__ = ["ResumableWrite", "block_indices", "block_region", "check_free", "mark_after", "write_block",
           "read_stored", "stored_array"]


def block_indices(chunks: tuple[tuple[int, ...], ...]) -> Iterator[tuple[int, ...]]:
    """Every block index of a dask chunking, in C order."""
    return itertools.product(*(range(len(c)) for c in chunks))


def block_region(chunks: tuple[tuple[int, ...], ...], start: tuple[int, ...], index: tuple[int, ...]
                 ) -> tuple[slice, ...]:
    """Where block ``index`` of a dask chunking goes in an array region starting at ``start``."""
    out = []
    for dim, s, i in zip(chunks, start, index):
        lo = s + sum(dim[:i])
        out.append(slice(lo, lo + dim[i]))
    return tuple(out)


def write_block(block: Any, slices: tuple[slice, ...], *, target: Array, start: tuple[int, ...],
                record: WriteRecord | None, n: int, block_id: tuple[int, ...] = ()) -> np.ndarray:
    """One task (of ``map_blocks``, so that dask fuses it with the tasks making
    the block): store ``block`` — at ``slices`` of the source, offset by
    ``start`` — in ``target``, then the marker saying so (unless the block's
    stored keys say it: ``record`` is ``None``)."""
    region = tuple(slice(s.start + o, s.stop + o) for s, o in zip(slices, start))
    target.set_basic_selection(region, block, options=IN_TASK)
    if record is not None:
        target.store.set(record.marker(n, block_id), b"")
    return np.ones((1,) * len(region), dtype=bool)


def mark_after(store: Store, marker: str, func: Callable[..., Any], *args: Any) -> Any:
    """One task: ``func(*args)``, then the marker saying it is done."""
    result = func(*args)
    store.set(marker, b"")
    return result


def read_stored(target: Array, region: tuple[slice, ...], *_after: Any) -> Any:
    """One task: the values stored in ``region`` of ``target`` (``_after``: results to wait for)."""
    return target.get_basic_selection(region, options=IN_TASK)


def _finish(record: WriteRecord, blocks: Mapping[int, list[tuple[int, ...]]] | None, *_written: Any) -> np.ndarray:
    record.remove(blocks)
    return np.ones(1, dtype=bool)


def clear_created(store: Store, path: str) -> None:
    """Delete the node at ``path`` and everything under it, records aside
    (they live at the store's root)."""
    if path:
        clear_node(store, path)
        return
    store.delete_many([k for k in store.list() if not k.startswith(RECORD_DIR + "/")])


def check_free(store: Store, path: str, zarr_format: int, kind: str = "an array") -> None:
    """Nothing exists at ``path`` for a new node of a fresh resumable write (mode
    ``"w-"``, or ``"a"`` creating it); the error says why a resume may see one."""
    try:
        prepare_node(store, path, zarr_format, overwrite=False, kind=kind)
    except NodeExistsError as e:
        raise type(e)(
            f"{e}. resume=True found no record of an unfinished write there: the write finished earlier (a "
            "finished write keeps no record), or the node was written by something else; nothing was written"
        ) from None


class ResumableWrite:
    """One write with ``resume=True`` into ``store``; ``write_id`` names its
    target (:func:`~zarrdask.dask.write_record.record_id`), ``where`` names it
    in errors. :attr:`found` is the recorded document (``None``: no record, a
    fresh write) and :attr:`plan` what it recorded of the store before the
    write (the nodes it creates, the shapes before an append)."""

    def __init__(self, store: Store, write_id: str, where: str) -> None:
        check_resumable(store)
        self.store, self.where = store, where
        self.record = WriteRecord(store, write_id)
        self.found = self.record.read()
        self.plan: dict[str, Any] = dict(self.found["plan"]) if self.found is not None else {}
        self.identity: dict[str, Any] | None = None
        self._blocks: dict[int, list[tuple[int, ...]]] = {}
        self._done: set[tuple[int, tuple[int, ...]]] | None = None
        self._markers = False  # whether some block records itself with a marker

    @property
    def ready(self) -> bool:
        """Whether the recorded write made its metadata (only blocks are left)."""
        return self.found is not None and self.found.get("state") == "ready"

    def check(self, identity: Mapping[str, Any], plan: Mapping[str, Any]) -> None:
        """Refuse a resume of other data or settings; keep this write's identity and plan."""
        if self.found is not None:
            check_identity(self.found["identity"], identity, self.where)
        self.identity = dict(identity)
        self.plan = dict(plan)

    def setup(self, make: Callable[[], Any], created: Iterable[str], replace: bool) -> Any:
        """Make the target's metadata (``make``) and return what ``make`` returns,
        unless the record says it is made (then ``None``). The nodes in
        ``created`` are cleared first when ``replace`` (the write replaces them)
        or when an earlier attempt may have begun them."""
        if self.ready:
            return None
        assert self.identity is not None, "check() first"
        self.record.save(self.identity, "setup", self.plan)
        if replace or self.found is not None:
            for path in created:
                clear_created(self.store, path)
        made = make()
        self.record.save(self.identity, "ready", self.plan)
        return made

    def target(self, path: str, metadata: Mapping[str, Any], write_empty_chunks: bool | None) -> Array:
        """The array at ``path`` that the setup made, checked against ``metadata``
        (what the write creates): another document means it changed since."""
        array = open_array(self.store, path=path, mode="r+", write_empty_chunks=write_empty_chunks)
        found, wanted = plain_json(array.metadata.to_json()), plain_json(metadata)
        if found != wanted:
            fields = sorted(k for k in set(found) | set(wanted) if found.get(k) != wanted.get(k))
            raise WriteRecordMismatchError(
                f"{self.where}: the array {node_name(path)!r} this write created was changed since it began "
                f"(its {', '.join(fields)} differ from what the write creates); nothing was written. Write it "
                "again without resume=True"
            )
        return array

    def tasks(self, x: da.Array, target: Array, start: tuple[int, ...], n: int, *, created: bool = False
              ) -> tuple[da.Array, list[Any]]:
        """The write of ``x``'s blocks (array number ``n`` of the write) into
        ``target`` at ``start``: the array of its tasks, one per block, and the
        keys of those not finished — the graph is culled to them when it runs,
        and so are ``x``'s tasks for the other blocks. ``created``: the write
        created ``target``, so on a store of whole keys the blocks' stored keys
        say which are finished, and no marker is written."""
        indices = list(block_indices(x.chunks))
        by_keys = created and self.store.listable and whole_keys(self.store)
        self._markers = self._markers or not by_keys
        todo = self._unstored(target, x.chunks, start, indices) if by_keys else self.unfinished(n, indices)
        name = f"zarrdask-resume-write-{n}-{tokenize(x.name, target, start, self.record.id)}"
        written = x.map_blocks(
            write_block, ArraySliceDep(x.chunks), target=target, start=start,
            record=None if by_keys else self.record, n=n,
            name=name, dtype=bool, chunks=tuple((1,) * len(c) for c in x.chunks),
            meta=np.empty((0,) * x.ndim, dtype=bool),
        )
        return written, [(name, *index) for index in todo]

    def _unstored(self, target: Array, chunks: tuple[tuple[int, ...], ...], start: tuple[int, ...],
                  indices: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """The blocks some of whose shards (chunks) are not stored: one listing."""
        if not self.ready:
            return indices
        stored = set(target.stored_keys())
        bounds = [np.cumsum((0, *sizes)) for sizes in target.layout.grid.dask_chunks()]
        todo = []
        for index in indices:
            region = block_region(chunks, start, index)
            ranges = [range(int(np.searchsorted(b, r.start, "right")) - 1, int(np.searchsorted(b, r.stop, "left")))
                      for b, r in zip(bounds, region)]
            if not all(target.layout.chunk_key(c) in stored for c in itertools.product(*ranges)):
                todo.append(index)
        return todo

    def unfinished(self, n: int, indices: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """The block indices among ``indices`` (every block of the write's array
        number ``n``) not recorded as written; all of them in a fresh write, or
        when the setup was redone. The first call lists the record."""
        self._blocks[n] = indices
        self._markers = True
        if not self.ready:
            return indices
        if self._done is None or not self.store.listable:  # one listing, or the markers of this array read
            self._done = (self._done or set()) | self.record.finished({n: indices})
        return [i for i in indices if (n, i) not in self._done]

    def marker(self, n: int, index: tuple[int, ...]) -> str:
        """The key recording block ``index`` of array number ``n`` as written."""
        return self.record.marker(n, index)

    def finish(self, dsk: dict[Any, Any], keys: list[Any], dependencies: Iterable[Any]) -> Delayed:
        """The write as one ``Delayed``: ``dsk`` (tasks of its own, marked with
        :func:`mark_after`) and a last task, after ``keys``, that removes the record."""
        final, graph = self._last(keys, dsk)
        return Delayed(final, HighLevelGraph.from_collections(final, graph, dependencies=list(dependencies)))

    def finish_array(self, written: list[da.Array], keys: list[Any]) -> da.Array:
        """The write as a one-element dask array (``dask.array.store``'s kind of
        result), whose one task, after the ``keys`` of the ``written`` arrays
        (:meth:`tasks`), removes the record."""
        final, graph = self._last(keys, {})
        hlg = HighLevelGraph.from_collections(final, {(final, 0): graph[final]}, dependencies=written)
        return da.Array(hlg, final, ((1,),), dtype=bool, meta=np.empty((0,), dtype=bool))

    def _last(self, keys: list[Any], dsk: dict[Any, Any]) -> tuple[str, dict[Any, Any]]:
        final = f"zarrdask-resume-finish-{tokenize(self.record.id, keys)}"
        # the markers to delete: listed, or named where the store cannot list (none: only the document)
        markers = self._markers or self.found is not None
        blocks = dict(self._blocks) if not self.store.listable or not markers else None
        return final, {**dsk, final: (_finish, self.record, blocks, *keys)}


def stored_array(target: Array, chunks: tuple[tuple[int, ...], ...], start: tuple[int, ...],
                 after: da.Array | None) -> da.Array:
    """The values of ``target`` as stored, chunked as ``chunks`` from ``start``
    (read once ``after``, the one-element array of :meth:`ResumableWrite.finish_array`, has run)."""
    name = f"zarrdask-resume-stored-{tokenize(target, chunks, start, after)}"
    extra = ((after.name, 0),) if after is not None else ()
    dsk = {(name, *i): (read_stored, target, block_region(chunks, start, i), *extra) for i in block_indices(chunks)}
    deps = [after] if after is not None else []
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=deps)
    return da.Array(graph, name, chunks, dtype=target.dtype)
