"""Planning a rechunk under a memory budget (pure: no I/O, no dask graph).

The memory model
----------------
A task copies one rectangular *block* of an array from the array it reads to
the array it writes. Reading decodes whole chunks (inner chunks, for a sharded
array): a block whose edges fall inside chunks of the array read makes the
task decode those chunks whole. The task's declared memory is therefore the
block *expanded outward to the chunk grid of the array it reads* (clipped to
the array), times the item size::

    memory(block) = itemsize * prod_d (ceil(stop_d / r_d) * r_d  clipped to shape_d
                                       - floor(start_d / r_d) * r_d)

where ``r`` is the read array's chunk shape, plus :func:`task_overhead`: the
chunk's stored bytes and the decoded chunk in flight while reading, the unit's
contiguous copy and its encoded bytes while writing (a task runs the engine one
chunk per store call). A task reading a source whose requests wait on a network
(object stores, HTTP) also declares room for a few source chunks in flight
(``read_ahead``, :func:`read_ahead_bytes`); its reads keep as many requests in
flight as its declared memory leaves room for next to its block
(``EngineOptions.memory_budget``: stored bytes in flight, chunks being decoded,
and the byte ranges and parts of shards read in part). Every block is also a union of
whole *write units* (shards of a sharded array, chunks otherwise, cut only by
the array's edge), so no two tasks ever write the same stored object and no
write has to read what is already there. The bytes *read* by a stage are the
sum of the expanded blocks (a chunk cut by block edges is decoded once per
block that touches it), the bytes *written* are the array's bytes.

The algorithm
-------------
The target's write unit ``w`` (a shard or a chunk) is the smallest block a
task writing the target can own; the source's chunk ``a`` the smallest thing a
task reading it can decode. Both must fit in ``max_mem``.

1. **One pass** when ``w``, expanded to the source chunks it touches, fits: the
   blocks start at ``w`` and grow (see :func:`choose_blocks`) while the
   expanded block fits, first to multiples of ``lcm(w, a)`` along the
   dimensions where blocks cut source chunks (so that no source chunk is read
   twice), then as far as the budget allows (fewer, larger tasks).
2. **Two passes** through an intermediate array otherwise (rechunker's
   "consolidate reads / consolidate writes"): stage 1 copies source →
   intermediate in blocks that are multiples of the intermediate chunks ``c``
   (read side: source chunks), stage 2 intermediate → target in blocks that are
   multiples of ``w`` (read side: ``c``). ``c`` is chosen among a few
   candidates per dimension — the smaller of the consolidated read and write
   blocks (rechunker's choice), their gcd, ``a``, ``w``, ``min(a, w)`` and
   ``gcd(a, w)`` — as the one whose two stages fit and move the fewest bytes,
   then the one with the fewest intermediate chunks. ``c = gcd(a, w)`` always
   fits when ``a`` and ``w`` do, so a plan exists whenever one chunk of each
   fits.
3. With an intermediate store available, two passes are also chosen when they
   move fewer bytes than the best one-pass plan (a one-pass plan squeezed by
   the budget can re-read every source chunk many times).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

import numpy as np
from dask.utils import format_bytes as dask_format_bytes
from dask.utils import parse_bytes

from .plan_dims import block_extent, dim_reads, dim_stats, edge_bounds, edges_stats

__all__ = [
    "parse_max_mem",
    "StagePlan",
    "ArrayPlan",
    "PlannedTask",
    "choose_blocks",
    "plan_array",
    "worker_overhead",
    "RechunkPlanError",
]

#: how many block sizes below the largest one are tried when growing a dimension that cuts read chunks
_SCAN = 64


class RechunkPlanError(ValueError):
    """No plan keeps every task under ``max_mem`` (the message says why and what would)."""


def parse_max_mem(max_mem: Any, what: str = "max_mem") -> int:
    """``max_mem`` in bytes: an int, or a string such as ``"100MB"`` or ``"1GiB"``
    (any positive size; ``what`` names it in error messages).

    Examples
    --------
    >>> parse_max_mem("1 KiB"), parse_max_mem(2_000)
    (1024, 2000)
    """
    if isinstance(max_mem, bool):
        raise TypeError(f"{what} must be a number of bytes or a string like '100MB', found {max_mem!r}")
    if isinstance(max_mem, str):
        try:
            value = parse_bytes(max_mem)
        except ValueError:
            raise ValueError(f"{what}: cannot read {max_mem!r} as a size (examples: '100MB', '1GiB', 2**20)") from None
    elif isinstance(max_mem, (int, np.integer)) or (isinstance(max_mem, float) and max_mem.is_integer()):
        value = int(max_mem)
    else:
        raise TypeError(f"{what} must be a number of bytes or a string like '100MB', found {max_mem!r}")
    if value <= 0:
        raise ValueError(f"{what} must be positive, found {max_mem!r}")
    return int(value)


def format_bytes(n: int) -> str:
    """``n`` bytes as dask writes them (``"1.91 MiB"``)."""
    return dask_format_bytes(int(n))


def task_overhead(itemsize: int, read: Sequence[int], unit: Sequence[int], in_place: bool = False) -> int:
    """Bytes a task holds besides its block expanded to the chunks it reads.

    A task runs the engine serially, one chunk per store call
    (:func:`zarrdask.workflows._run.copy_block`). While it reads it holds, next
    to its block, one chunk's stored bytes and one decoded chunk (a chunk cut by
    the block's edge is decoded into scratch, then copied): ``2 * c``. While it
    writes, one unit's contiguous copy (a shard's encoded inner chunks) and its
    encoded bytes: ``2 * u``; only the encoded bytes, ``u``, when the unit is
    encoded straight from its place in the block (``in_place``: see
    :func:`encodes_in_place`). ``c`` and ``u`` are the bytes of a read chunk
    and a write unit; both bounds hold for data that does not compress.
    """
    c, u = math.prod(read), math.prod(unit)
    return itemsize * (max(2 * c, u) if in_place else 2 * max(c, u))


def encodes_in_place(block: Sequence[Any], unit: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether every write unit of a block is one contiguous run of the block
    (C order): after the unit's first dimension longer than one element, it
    spans the block along every dimension."""
    sizes = [(min(b if isinstance(b, int) else max(b), s), min(u, s)) for b, u, s in zip(block, unit, shape)]
    first = next((d for d, (_, u) in enumerate(sizes) if u > 1), len(sizes))
    return all(u == b for b, u in sizes[first + 1 :])


# -- stages ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedTask:
    """One task of a plan: where it reads, where it writes, which region, and its declared memory."""

    array: str
    stage: int
    reads: str
    writes: str
    region: tuple[slice, ...]
    memory: int


@dataclass(frozen=True)
class StagePlan:
    """One copy pass over an array in regular blocks.

    Attributes
    ----------
    shape
        The array's shape.
    itemsize
        Bytes per element used for the memory model.
    block
        The block shape: one task per block (the last block along each
        dimension is cut by the array's edge); a dimension may instead list
        its block lengths (a tuple), as a rectilinear target's chunks do.
    read_chunks
        The chunk shape of the array read (inner chunks for sharded arrays):
        what a task decodes whole.
    write_unit
        The storage unit of the array written (shards or chunks); every block
        is a union of whole units.
    reads, writes
        ``"source"``, ``"intermediate"`` or ``"target"``.
    overhead
        Bytes every task of the stage holds besides its expanded block (see
        :func:`task_overhead`).
    """

    shape: tuple[int, ...]
    itemsize: int
    block: tuple[int, ...]
    read_chunks: tuple[int, ...]
    write_unit: tuple[int, ...]
    reads: str = "source"
    writes: str = "target"
    overhead: int = 0

    def _stats(self) -> list[tuple[int, int, int]]:
        return [dim_stats(s, b, r) if isinstance(b, int) else edges_stats(s, b, r)
                for s, b, r in zip(self.shape, self.block, self.read_chunks)]

    @property
    def ntasks(self) -> int:
        return math.prod(n for n, _, _ in self._stats())

    @property
    def peak_memory(self) -> int:
        """The largest declared memory of any task, in bytes (0 without tasks)."""
        if self.ntasks == 0:
            return 0
        return self.itemsize * math.prod(e for _, e, _ in self._stats()) + self.overhead

    @property
    def bytes_read(self) -> int:
        """Bytes decoded by all tasks together (chunks cut by block edges count once per block)."""
        return self.itemsize * math.prod(t for _, _, t in self._stats())

    @property
    def bytes_written(self) -> int:
        return self.itemsize * math.prod(self.shape)

    @property
    def chunk_reads(self) -> int:
        """Chunks the tasks read, all together (inner chunks of a sharded array,
        which a task reads by byte ranges: an upper bound on its read requests)."""
        if self.ntasks == 0:
            return 0
        return math.prod(dim_reads(s, b, r) for s, b, r in zip(self.shape, self.block, self.read_chunks))

    @property
    def unit_writes(self) -> int:
        """Objects the tasks write (shards, or chunks): one request each."""
        return math.prod(
            len(edge_bounds(s, u)[0]) if not isinstance(u, int) else -(-s // max(1, min(u, s))) if s else 0
            for s, u in zip(self.shape, self.write_unit)
        )

    @property
    def grid(self) -> tuple[int, ...]:
        """The number of blocks along each dimension."""
        return tuple(n for n, _, _ in self._stats())

    @property
    def dask_chunks(self) -> tuple[tuple[int, ...], ...]:
        """The blocks as dask chunks (for :mod:`zarrdask.dask.alignment`)."""
        out = []
        for s, b in zip(self.shape, self.block):
            if not isinstance(b, int):
                starts, stops = edge_bounds(s, b)
                out.append(tuple((stops - starts).tolist()) or (0,))
                continue
            b = min(b, s) or 1
            full, rest = divmod(s, b)
            out.append((b,) * full + ((rest,) if rest else ()) or (0,))
        return tuple(out)

    def region(self, index: Sequence[int]) -> tuple[slice, ...]:
        """The region of block ``index``."""
        out = []
        for i, b, s in zip(index, self.block, self.shape):
            if isinstance(b, int):
                out.append(slice(i * b, min((i + 1) * b, s)))
            else:
                start = sum(b[:i])
                out.append(slice(start, min(start + b[i], s)))
        return tuple(out)

    def memory(self, index: Sequence[int]) -> int:
        """The declared memory of the task of block ``index``, in bytes."""
        return self.expanded(index) + self.overhead

    def expanded(self, index: Sequence[int]) -> int:
        """The bytes of block ``index`` expanded to the chunks it reads (what it decodes)."""
        out = self.itemsize
        for i, s, b, r, sl in zip(index, self.shape, self.block, self.read_chunks, self.region(index)):
            if isinstance(b, int):
                lo, hi = block_extent(i, s, min(b, s), min(r, s))
            else:
                r = min(r, s)
                lo, hi = sl.start // r * r, min(-(-sl.stop // r) * r, s)
            out *= hi - lo
        return out

    def indices(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(n) for n in self.grid))


@dataclass(frozen=True)
class ArrayPlan:
    """How one array is rechunked: one stage, or two through an intermediate.

    Attributes
    ----------
    name
        The array's path relative to the source (``""`` for a lone array).
    shape, dtype
        The array's shape and (source) data type.
    source_chunks
        The source's chunk shape (inner chunks when sharded).
    target_chunks, target_shards
        The target's chunk and shard shapes (``target_shards`` ``None`` when unsharded).
    intermediate_chunks
        The intermediate array's chunks, ``None`` for a one-pass plan.
    stages
        The copy passes, run one after the other.
    threads_per_worker, worker_overhead
        The threads of a worker process (tasks it runs at once) and the bytes
        it holds besides its tasks: a task may declare
        ``(max_mem - worker_overhead) // threads_per_worker``.
    """

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    source_chunks: tuple[int, ...]
    target_chunks: tuple[int, ...]
    target_shards: tuple[int, ...] | None
    intermediate_chunks: tuple[int, ...] | None
    stages: tuple[StagePlan, ...] = field(default=())
    threads_per_worker: int = 1
    worker_overhead: int = 0

    @property
    def ntasks(self) -> int:
        return sum(s.ntasks for s in self.stages)

    @property
    def peak_memory(self) -> int:
        """The largest declared memory of a task."""
        return max((s.peak_memory for s in self.stages), default=0)

    @property
    def worker_peak_memory(self) -> int:
        """The most a worker holds: as many of the largest tasks as it has
        threads, and what the worker keeps besides its tasks (see
        :func:`worker_overhead`)."""
        return self.threads_per_worker * self.peak_memory + self.worker_overhead

    @property
    def bytes_read(self) -> int:
        return sum(s.bytes_read for s in self.stages)

    @property
    def bytes_written(self) -> int:
        return sum(s.bytes_written for s in self.stages)

    def tasks(self) -> Iterator[PlannedTask]:
        for number, stage in enumerate(self.stages, 1):
            for index in stage.indices():
                yield PlannedTask(
                    self.name, number, stage.reads, stage.writes, stage.region(index), stage.memory(index)
                )


# -- choosing blocks -------------------------------------------------------------------
def choose_blocks(
    shape: Sequence[int],
    unit: Sequence[int],
    read: Sequence[int],
    budget: int,
    limit: Sequence[int] | None = None,
    grow_to: int | None = None,
) -> tuple[int, ...] | None:
    """The block shape for copying an array written in ``unit``s and read in
    ``read`` chunks, with every expanded block at most ``budget`` elements;
    ``None`` when even one unit does not fit.

    Blocks are multiples of ``unit`` (or a whole dimension). Starting from
    ``unit``, each dimension where blocks cut read chunks is first grown to
    ``lcm(unit, read)`` (the most wasteful dimension first) so that no read
    chunk is decoded twice; then every dimension grows as far as the budget
    allows — those still cutting read chunks first (fewer cuts, fewer
    re-reads), then the others from the last to the first (fewer tasks), but
    to at most ``grow_to`` elements (so that every worker has tasks to run; the
    first step is never held back). ``limit`` caps the growth per dimension
    (never below ``unit``).
    """
    nd = len(shape)
    shape = tuple(int(s) for s in shape)
    if any(s == 0 for s in shape):
        return tuple(max(1, int(u)) for u in unit)
    unit = tuple(min(int(u), s) for u, s in zip(unit, shape))
    read = tuple(min(int(r), s) for r, s in zip(read, shape))
    cap = tuple(
        s if limit is None else min(s, max(int(lim), u)) for s, lim, u in zip(shape, limit or shape, unit)
    )
    sizes = list(unit)
    ext = [dim_stats(s, k, r)[1] for s, k, r in zip(shape, sizes, read)]
    if math.prod(ext) > budget:
        return None

    def room(d: int) -> int:
        return total // math.prod(ext[j] for j in range(nd) if j != d)

    def waste(d: int) -> float:
        return dim_stats(shape[d], sizes[d], read[d])[2] / shape[d]

    def try_size(d: int, k: int) -> bool:
        e = dim_stats(shape[d], k, read[d])[1]
        if e <= room(d):
            sizes[d], ext[d] = k, e
            return True
        return False

    lcms = [math.lcm(u, r) for u, r in zip(unit, read)]
    total = budget
    # A: stop re-reading along each dimension where it fits, most wasteful first
    for d in sorted((d for d in range(nd) if waste(d) > 1), key=waste, reverse=True):
        k = min(shape[d], lcms[d])
        if k <= cap[d]:
            try_size(d, k)
    # B: grow, dimensions still cutting read chunks first, then the others last to
    # first, up to grow_to elements
    total = budget if grow_to is None else min(budget, max(math.prod(ext), grow_to))
    cutting = sorted((d for d in range(nd) if waste(d) > 1), key=waste, reverse=True)
    order = cutting + [d for d in reversed(range(nd)) if d not in cutting]
    for d in order:
        top = min(room(d), cap[d])
        if top <= sizes[d]:
            continue
        if d not in cutting:
            step = lcms[d] if sizes[d] % lcms[d] == 0 else sizes[d]
            k = shape[d] if top >= shape[d] else top // step * step
            if k > sizes[d]:
                try_size(d, k)
            continue
        if top >= shape[d] and try_size(d, shape[d]):
            continue
        m_top, m_now = top // unit[d], sizes[d] // unit[d]
        for m in range(m_top, max(m_now, m_top - _SCAN), -1):
            if try_size(d, min(m * unit[d], shape[d])):
                break
    return tuple(sizes)


def _stage(shape, itemsize, block, read, unit, reads, writes, in_place=False) -> StagePlan:
    """A stage; ``in_place``: the array written encodes a unit straight from
    its place in the block where the unit is a contiguous run of it (an
    unsharded array in C order without filters)."""
    in_place = in_place and encodes_in_place(block, unit, shape)
    return StagePlan(tuple(shape), itemsize, tuple(block), tuple(read), tuple(unit), reads, writes,
                     task_overhead(itemsize, _clip(read, shape), _clip(unit, shape), in_place))


def _clip(x: Sequence[Any], shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(max(1, min(int(v) if isinstance(v, (int, np.integer)) else max(v), s)) for v, s in zip(x, shape))


#: what a worker process holds besides its tasks while it copies, above what it
#: held before (the store clients, the I/O threads and their buffers, memory the
#: allocator keeps between tasks), when it reads or writes a store whose
#: requests wait on a network, and otherwise (measured: see :func:`worker_overhead`)
WORKER_OVERHEAD = {True: 10 << 20, False: 6 << 20}


def worker_overhead(network: bool) -> int:
    """Bytes a worker process holds besides its tasks while it copies
    (``network``: it reads or writes a store whose requests wait on a network)."""
    return WORKER_OVERHEAD[bool(network)]


#: blocks are not cut smaller than this for the sake of more tasks (a task's fixed
#: cost, a few ms in dask, stays small against copying it)
MIN_TASK_BYTES = 4 << 20


def _grow_to(shape: Sequence[int], itemsize: int, min_tasks: int) -> int:
    """Elements a block grows to at most: a ``min_tasks``-th of the array, not below :data:`MIN_TASK_BYTES`."""
    return max(-(-math.prod(shape) // max(1, min_tasks)), MIN_TASK_BYTES // itemsize)


def read_ahead_bytes(chunks: int, chunk_bytes: int, max_mem: int) -> int:
    """The room a task declares for ``chunks`` source chunks of ``chunk_bytes``
    in flight (their stored bytes, for data that does not compress): whole
    chunks, at most a quarter of ``max_mem``."""
    return max(0, min(chunks, max_mem // 4 // max(1, chunk_bytes))) * chunk_bytes


def _budget(max_mem: int, itemsize: int, read: Sequence[int], unit: Sequence[int]) -> int:
    """Elements an expanded block may hold when its task reads ``read`` chunks and writes ``unit``s."""
    return max(0, max_mem - task_overhead(itemsize, read, unit)) // itemsize


def shape_text(shape: Sequence[Any] | None) -> str:
    """A shape as Python writes a tuple: ``(4,)``, ``(4, 2)``; ``None`` as ``()``."""
    shape = tuple(shape or ())
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def plan_array(
    name: str,
    shape: Sequence[int],
    dtype: Any,
    source_chunks: Sequence[int],
    target_chunks: Sequence[int],
    target_shards: Sequence[int] | None,
    max_mem: int,
    *,
    itemsize: int | None = None,
    intermediate: bool = False,
    min_tasks: int = 1,
    read_ahead: int = 0,
    threads_per_worker: int = 1,
    worker_overhead: int = 0,
    in_place: bool = False,
) -> ArrayPlan:
    """Plan the rechunk of one array (see the module documentation).

    Parameters
    ----------
    name
        The array's name, for messages.
    shape, dtype
        The array's shape and data type.
    source_chunks
        The source chunk shape (inner chunks when the source is sharded).
    target_chunks, target_shards
        The target's chunks and shards (``None``: unsharded).
    max_mem
        Bytes a task may declare.
    itemsize
        Bytes per element for the memory model (default: ``dtype``'s).
    intermediate
        Whether an intermediate array may be used (a temporary store was given).
    min_tasks
        Blocks stop growing (beyond what avoids decoding a chunk twice) at a
        ``min_tasks``-th of the array (but not below :data:`MIN_TASK_BYTES`), so
        that a stage has at least about that many tasks: a few per worker keep
        every worker busy.
    read_ahead
        Source chunks a task may keep in flight besides the one it decodes
        (a source whose requests wait on a network): each task declares room
        for them (:func:`read_ahead_bytes`), which its reads use
        (``EngineOptions.memory_budget``). Fewer when the room would cost
        the plan more than a quarter of ``max_mem``, none when a plan fits
        only without.
    threads_per_worker, worker_overhead
        ``max_mem`` is a worker's: it holds ``worker_overhead`` bytes besides
        its tasks (:func:`worker_overhead`) and runs ``threads_per_worker``
        tasks at once, so each task may declare
        ``(max_mem - worker_overhead) // threads_per_worker``. A ``max_mem``
        under four times ``worker_overhead``, or one that only fits a plan
        whole, is shared by the tasks whole (the plan's peak per worker then
        states more than ``max_mem``).
    in_place
        The target encodes a chunk straight from its place in a block (an
        unsharded array in C order without filters): where a block's chunks
        are contiguous runs of it, a task writing it declares no room for a
        contiguous copy (:func:`task_overhead`).

    Raises
    ------
    RechunkPlanError
        When one source chunk or one target unit alone exceeds ``max_mem``, or a
        one-pass copy does not fit and ``intermediate`` is false.
    """
    threads_per_worker = max(1, int(threads_per_worker))
    # a budget under four times the overhead (examples, tests) is left to the tasks whole, and so
    # is one that the tasks need whole (one target unit, or one source chunk, takes it all)
    held = worker_overhead if max_mem >= 4 * worker_overhead else 0
    args = (name, shape, dtype, source_chunks, target_chunks, target_shards)
    rest = (itemsize, intermediate, min_tasks, read_ahead, in_place)
    share, whole = (max_mem - held) // threads_per_worker, max_mem // threads_per_worker
    try:
        try:
            plan = _plan_task_share(*args, share, *rest)
        except RechunkPlanError:
            if share == whole:
                raise
            plan = _plan_task_share(*args, whole, *rest)
    except RechunkPlanError as e:
        if threads_per_worker == 1:
            raise
        raise RechunkPlanError(
            f"{e} (max_mem={format_bytes(max_mem)} is a worker's: each of its {threads_per_worker} threads "
            f"runs a task of at most {format_bytes(whole)})"
        ) from None
    return replace(plan, threads_per_worker=threads_per_worker, worker_overhead=worker_overhead)


def _plan_task_share(name: str, shape: Sequence[int], dtype: Any, source_chunks: Sequence[int],
                     target_chunks: Sequence[int], target_shards: Sequence[int] | None, max_mem: int,
                     itemsize: int | None, intermediate: bool, min_tasks: int, read_ahead: int,
                     in_place: bool) -> ArrayPlan:
    """:func:`plan_array` with ``max_mem`` the bytes one task may declare."""
    if max_mem <= 0:
        raise RechunkPlanError(f"array {'/' + name!r}: no memory is left for a task")
    dtype = np.dtype(dtype)
    itemsize = max(1, itemsize or dtype.itemsize)
    shape = tuple(int(s) for s in shape)
    # a rectilinear source: its largest chunk along each axis is the read chunk of the memory model
    a = tuple(max(1, min(int(c if isinstance(c, (int, np.integer)) else max(c, default=1)), s))
              for c, s in zip(source_chunks, shape))
    unit_shape = tuple(target_shards) if target_shards is not None else tuple(target_chunks)
    if not all(isinstance(u, (int, np.integer)) for u in unit_shape):
        return _rectilinear_plan(name, shape, dtype, itemsize, a, source_chunks, target_chunks, target_shards,
                                 max_mem)
    w = tuple(max(1, min(int(c), s)) for c, s in zip(unit_shape, shape))
    where = f"array {'/' + name!r}"
    kind = "shard" if target_shards is not None else "chunk"
    reserve = read_ahead_bytes(read_ahead, itemsize * math.prod(a), max_mem)
    while True:
        try:
            stages, inter = _choose_stages(where, kind, shape, dtype, itemsize, a, w, max_mem - reserve,
                                           intermediate, min_tasks, in_place)
            break
        except RechunkPlanError:
            if not reserve:
                raise
            reserve = read_ahead_bytes(reserve // (2 * itemsize * math.prod(a)), itemsize * math.prod(a), max_mem)
    if reserve:
        stages = tuple(replace(s, overhead=s.overhead + reserve) for s in stages)
    return ArrayPlan(
        name, shape, dtype, tuple(source_chunks), tuple(target_chunks),
        None if target_shards is None else tuple(target_shards), inter, stages,
    )


def _choose_stages(
    where: str, kind: str, shape: tuple[int, ...], dtype: np.dtype, itemsize: int, a: tuple[int, ...],
    w: tuple[int, ...], max_mem: int, intermediate: bool, min_tasks: int, in_place: bool = False,
) -> tuple[tuple[StagePlan, ...], tuple[int, ...] | None]:
    """The stages copying an array read in chunks ``a`` to write units ``w``, and
    the intermediate chunks (``None`` for one pass): see "The algorithm" above.
    ``where`` names the array and ``kind`` its write unit in errors."""
    if math.prod(shape) == 0:
        return (_stage(shape, itemsize, w, a, w, "source", "target"),), None
    _check_one_unit_fits(where, kind, dtype, itemsize, a, w, max_mem)
    direct = choose_blocks(shape, w, a, _budget(max_mem, itemsize, a, w), grow_to=_grow_to(shape, itemsize, min_tasks))
    direct_stage = None if direct is None else _stage(shape, itemsize, direct, a, w, "source", "target", in_place)
    if not intermediate:
        if direct_stage is None:
            raise _one_pass_error(where, kind, shape, itemsize, a, w, max_mem)
        return (direct_stage,), None
    two = _two_stages(shape, itemsize, a, w, max_mem, min_tasks, in_place, not dtype.hasobject)
    if direct_stage is not None and (
        two is None or direct_stage.bytes_read + direct_stage.bytes_written <= _moved(two[1])
    ):
        return (direct_stage,), None
    assert two is not None  # gcd(a, w) always fits when a and w do
    return two[1], two[0]


def _check_one_unit_fits(where: str, kind: str, dtype: np.dtype, itemsize: int, a: tuple[int, ...],
                         w: tuple[int, ...], max_mem: int) -> None:
    """A task holding one target unit ``w``, or one source chunk ``a``, stays under ``max_mem``."""
    if 3 * math.prod(w) * itemsize > max_mem:
        raise RechunkPlanError(
            f"{where}: one target {kind} {shape_text(w)} of {dtype} is {format_bytes(math.prod(w) * itemsize)}; "
            f"a task writing it holds the {kind}, a contiguous copy and its encoded bytes, up to "
            f"{format_bytes(3 * math.prod(w) * itemsize)}, more than max_mem={format_bytes(max_mem)}. Raise "
            f"max_mem or choose a smaller target {kind} shape"
        )
    if 3 * math.prod(a) * itemsize > max_mem:
        raise RechunkPlanError(
            f"{where}: one source chunk {shape_text(a)} of {dtype} is {format_bytes(math.prod(a) * itemsize)}; "
            f"a task reading it holds the chunk's stored bytes, the decoded chunk and the block it fills, up "
            f"to {format_bytes(3 * math.prod(a) * itemsize)}, more than max_mem={format_bytes(max_mem)}. "
            "Raise max_mem"
        )


def _one_pass_error(where: str, kind: str, shape: tuple[int, ...], itemsize: int, a: tuple[int, ...],
                    w: tuple[int, ...], max_mem: int) -> RechunkPlanError:
    """No one-pass block fits and there is no intermediate store: what one would need."""
    need = itemsize * math.prod(dim_stats(s, k, r)[1] for s, k, r in zip(shape, w, a))
    need += task_overhead(itemsize, a, w)
    return RechunkPlanError(
        f"{where}: a one-pass copy needs {format_bytes(need)} per task (one target {kind} "
        f"{shape_text(w)} expanded to the source chunks {shape_text(a)} it touches, plus a chunk being "
        "decoded or encoded), more than "
        f"max_mem={format_bytes(max_mem)}. Pass temp_store= for an intermediate array, or raise "
        f"max_mem to {format_bytes(need)}"
    )


def _rectilinear_plan(name, shape, dtype, itemsize, a, source_chunks, target_chunks, target_shards,
                      max_mem) -> ArrayPlan:
    """A rectilinear target (zarr-extensions ``chunk-grids/rectilinear``): one pass,
    one task per target unit (shard, or chunk when unsharded), each reading its
    region from the source. No intermediate array: its regular chunks could not
    follow the irregular target."""
    unit = tuple(target_shards) if target_shards is not None else tuple(target_chunks)
    block = tuple(max(1, min(int(u), s)) if isinstance(u, (int, np.integer)) else tuple(int(e) for e in u)
                  for u, s in zip(unit, shape))
    stage = _stage(shape, itemsize, block, a, block, "source", "target")
    kind = "shard" if target_shards is not None else "chunk"
    if stage.peak_memory > max_mem:
        raise RechunkPlanError(
            f"array {'/' + name!r}: a task writing one target {kind} of the rectilinear grid holds "
            f"{format_bytes(stage.peak_memory)} (the {kind} expanded to the source chunks it reads), more than "
            f"max_mem={format_bytes(max_mem)}. Raise max_mem or choose smaller target {kind}s"
        )
    return ArrayPlan(name, shape, dtype, tuple(source_chunks), tuple(target_chunks),
                     None if target_shards is None else tuple(target_shards), None, (stage,))


def _moved(stages: Sequence[StagePlan]) -> int:
    return sum(s.bytes_read + s.bytes_written for s in stages)


def _two_stages(
    shape: tuple[int, ...], itemsize: int, a: tuple[int, ...], w: tuple[int, ...], max_mem: int, min_tasks: int,
    in_place: bool = False, in_place_intermediate: bool = False,
) -> tuple[tuple[int, ...], tuple[StagePlan, StagePlan]] | None:
    """The best intermediate chunks and the two stages through them."""
    # the consolidated reads and writes (rechunker's), without a task count: candidates only
    kw = choose_blocks(shape, w, w, _budget(max_mem, itemsize, w, w)) or w
    ka = choose_blocks(shape, a, a, _budget(max_mem, itemsize, a, a), limit=kw) or a
    per_dim = []
    for s, ad, wd, ra, rw in zip(shape, a, w, ka, kw):
        cands = {min(ra, rw), math.gcd(ra, rw), ad, wd, min(ad, wd), math.gcd(ad, wd)}
        per_dim.append(sorted({max(1, min(c, s)) for c in cands}, reverse=True))
    if len(shape) > 4:  # keep the search small: the same rule along every dimension
        combos: Any = {
            tuple(max(1, min(f(x, y), s)) for x, y, s in zip(p, q, shape))
            for p, q in ((ka, kw), (a, w))
            for f in (min, math.gcd)
        } | {a, w}
    else:
        combos = itertools.product(*per_dim)
    best = None
    grow_to = _grow_to(shape, itemsize, min_tasks)
    min_tasks = min(min_tasks, -(-math.prod(shape) // grow_to))  # what the floor on a task's size allows
    for c in combos:
        k1 = choose_blocks(shape, c, a, _budget(max_mem, itemsize, a, c), grow_to=grow_to)
        if k1 is None:
            continue
        k2 = choose_blocks(shape, w, c, _budget(max_mem, itemsize, c, w), grow_to=grow_to)
        if k2 is None:
            continue
        s1 = _stage(shape, itemsize, k1, a, c, "source", "intermediate", in_place_intermediate)
        s2 = _stage(shape, itemsize, k2, c, w, "intermediate", "target", in_place)
        nchunks = math.prod(-(-s // ci) for s, ci in zip(shape, c))
        short = max(0, min_tasks - s1.ntasks) + max(0, min_tasks - s2.ntasks)  # idle workers
        key = (_moved((s1, s2)), short, nchunks, s1.ntasks + s2.ntasks)
        if best is None or key < best[0]:
            best = (key, tuple(c), (s1, s2))
    return None if best is None else (best[1], best[2])
