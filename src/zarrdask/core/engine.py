"""The chunk engine: selections in, batched store calls, codecs on a thread pool.

Read path: a selection is projected onto the chunk grid
(:mod:`zarrdask.indexing`: any :class:`~zarrdask.indexing.ChunkIndexer` —
basic and orthogonal selections, or points, whose projections carry index
arrays; the engine only applies them). Each chunk then takes one of two
paths, chosen from what the codec and the store declare (looked at once per
read):

* **whole chunks** — every chunk key is fetched with one ``get_many`` call
  (larger reads: one call per group of :data:`GROUP_BYTES`; stores declaring
  ``streaming``: values decoded as they arrive) and decoded on the thread
  pool (numcodecs releases the GIL) straight into the output where the
  output region is the whole chunk and contiguous, otherwise into one scratch
  chunk copied into place; a small part of a chunk is decoded alone where the
  codec can (``decode_span``: blosc); an uncompressed chunk is read straight
  into its place where the store declares ``in_place_reads``;
* **partial reads** — a chunk the selection covers only in part, when the
  codec declares :class:`~zarrdask.codecs.abc.PartialDecode` and gives steps
  for it (a shard's index, then the inner chunks needed; the span of
  elements of an uncompressed chunk), is read through byte ranges, every
  chunk's step in one batch (:mod:`zarrdask.core.consistent`).

Missing chunks are filled with the fill value (Zarr v2 spec "Chunks": an
uninitialised chunk reads as the fill value; zarr-specs v3 core the same) —
unless the read is strict (``read_missing_chunks=False``,
:mod:`zarrdask.core.missing`): then every chunk the read needed and found
missing (a fetch returning nothing, a shard index entry that is empty) is
noted while the read goes on, and one
:class:`~zarrdask.errors.ChunkNotFoundError` names them all. Strictness only
changes what happens after a fetch: no request is added.

Write path: chunks the selection covers completely are encoded without being
read (stores declaring ``background_uploads``: each handed over as it is
encoded); partially covered ones are fetched in one batch, decoded, updated
and re-encoded (stores declaring ``conditional_writes``: fetched with their
versions and stored only if still those, else fetched and updated again); a
chunk equal to the fill value everywhere is not stored and any stale copy is
deleted, unless ``write_empty_chunks``. Every chunk is
encoded before the first store call of its batch, so a value that cannot be
converted or encoded changes nothing that is stored.

How an operation runs (threads, one chunk per store call, requests in
flight, a memory budget) is an argument,
:class:`~zarrdask.core.options.EngineOptions`. A read with a
``memory_budget`` keeps its output, the chunks in flight and the parts of
chunks being read within it (:class:`_Room`): fewer streamed requests in
flight, smaller groups, partial reads in batches and in smaller steps.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any, Callable, Iterable, NamedTuple, Sequence, TypeVar

import numpy as np

from .._memory import aligned_empty, large_buffers, read_buffers
from .._pool import Pipeline, io_limit, pool_threads, run_inline, thread_map
from ..codecs.abc import ChunkSpec, PartialDecode, is_fill, update_chunk
from ..codecs.buffers import scratch_array
from ..codecs.vlen import coerce_vlen
from ..errors import ChunkNotFoundError, SelectionError, ValueChangedError
from ..indexing import ChunkIndexer, ChunkProjection
from ..storage.abc import Store
from ..storage.cache import invalidate
from ..storage.capabilities import BACKGROUND_UPLOADS, CONDITIONAL_WRITES, IN_PLACE_READS, STREAMING
from .consistent import read_consistently_many
from .layout import ArrayLayout
from .missing import Missing
from .options import DEFAULT, EngineOptions

T = TypeVar("T")

#: reads of up to this many decoded bytes fetch every chunk in one store call
ONE_CALL_BYTES = 64 << 20
#: larger reads fetch and decode groups of about this many bytes, one pool task
#: each, so compressed data never piles up and I/O overlaps decoding
GROUP_BYTES = 8 << 20
#: decoded chunks' worth of bytes a chunk being decoded may take (a codec's output,
#: and the scratch chunk it is copied from into a part of the output)
DECODING = 2
#: a read-modify-write locks at most this many keys at once (a LocalStore lock
#: holds a file descriptor)
LOCK_BATCH = 256
#: a read-modify-write through conditional writes gives up on a chunk other
#: writers changed this many times in a row between its read and its write
CONFLICT_ROUNDS = 16




# -- reads ------------------------------------------------------------------
def read(
    store: Store,
    layout: ArrayLayout,
    indexer: ChunkIndexer,
    out: np.ndarray | None = None,
    options: EngineOptions | None = None,
    *,
    read_missing_chunks: bool = True,
) -> np.ndarray:
    """Read ``indexer``'s selection of the array into ``out`` (allocated if None).

    Chunks read whole are fetched with one ``get_many`` call (reads larger than
    :data:`ONE_CALL_BYTES`: one call per group of about :data:`GROUP_BYTES`,
    each group fetched and decoded by one pool thread); chunks the selection
    covers only in part are read in part when the codec can (sharding: the
    index, then only the inner chunks needed; uncompressed chunks: the span of
    elements needed). ``options`` (:class:`EngineOptions`) says how the read
    runs: threads, one chunk per store call, requests in flight.
    ``read_missing_chunks=False``: a chunk the read needs that is not stored
    (for sharded arrays also an inner chunk with an empty index entry) raises
    :class:`~zarrdask.errors.ChunkNotFoundError` naming every one, instead of
    reading as the fill value.
    """
    options = options or DEFAULT
    if options.serial:  # in this thread, with everything the codecs and the store fan out
        return run_inline(_read, store, layout, indexer, out, options, read_missing_chunks)
    return _read(store, layout, indexer, out, options, read_missing_chunks)


def _read(
    store: Store, layout: ArrayLayout, indexer: ChunkIndexer, out: np.ndarray | None, options: EngineOptions,
    read_missing_chunks: bool = True,
) -> np.ndarray:
    if out is None:
        # aligned: chunks read straight into it are copied by the kernel. From the
        # large buffers, except in a read with a memory budget (a rechunk task):
        # its declared memory has no room for buffers kept
        if options.memory_budget is None:
            out = large_buffers.empty(indexer.out_shape, layout.dtype)
        else:
            out = aligned_empty(indexer.out_shape, layout.dtype)
    reads = _Reads(store, layout, out, options, read_missing_chunks)
    whole, parts = reads.route(indexer)
    try:
        reads.whole_chunks(whole)
        reads.partial_chunks(parts)
    except ChunkNotFoundError as e:  # from below the engine (a nested shard): name the store and the array
        raise Missing.named(store, layout, e) from None
    if reads.missing is not None:
        reads.missing.raise_if_any(store)
    return out


class _Chunk(NamedTuple):
    """One chunk a read or write touches."""

    proj: ChunkProjection
    key: str
    spec: ChunkSpec  # the chunk's own (rectilinear grids: its own shape)


def _chunk(layout: ArrayLayout, spec: ChunkSpec, proj: ChunkProjection) -> _Chunk:
    return _Chunk(proj, layout.chunk_key(proj.coords), layout.spec_at(spec, proj.coords))


class _Reads:
    """One read into ``out``: the capabilities it uses, looked at once, and
    its steps — :meth:`route`, then :meth:`whole_chunks` and
    :meth:`partial_chunks`."""

    def __init__(
        self, store: Store, layout: ArrayLayout, out: np.ndarray, options: EngineOptions, read_missing: bool = True
    ) -> None:
        self.store, self.layout, self.out, self.options = store, layout, out, options
        #: a strict read: the missing chunks found (``None``: they read as the fill value)
        self.missing = None if read_missing else Missing(layout)
        self.codec = layout.codec
        self.fill = layout.fill_value
        self.threads = options.threads
        capabilities = store.capabilities
        #: the codec reads or decodes parts of chunks
        self.partial: PartialDecode | None = self.codec if isinstance(self.codec, PartialDecode) else None
        #: the store reads into memory it is given or chooses (``InPlaceReads``)
        self.in_place: Any = store if IN_PLACE_READS in capabilities else None
        #: the store's requests wait on a network: values are decoded as they arrive
        self.streaming: Any = store if STREAMING in capabilities else None
        #: what the read may hold besides ``out`` (``None``: no budget)
        self.room = _Room.of(options, out.nbytes)

    def route(self, indexer: ChunkIndexer) -> tuple[list[_Chunk], list[tuple[_Chunk, Any]]]:
        """The chunks read whole, and those read in part with the steps the
        codec gives for them."""
        whole, parts = [], []
        spec = self.layout.chunk_spec
        if self.missing is not None:  # codecs holding inner chunks (shards) report empty ones
            spec = replace(spec, read_missing=False)
        for proj in indexer:
            chunk = _chunk(self.layout, spec, proj)
            steps = None if proj.is_complete else self._steps(chunk)
            if steps is None:
                whole.append(chunk)
            else:
                parts.append((chunk, steps))
        return whole, parts

    def _steps(self, chunk: _Chunk, max_bytes: int | None = None) -> Any:
        """The codec's steps reading ``chunk``'s part (``None``: read it whole)."""
        if self.partial is None:
            return None
        # the part is decoded straight into its place where it can be
        return self.partial.partial_steps(chunk.spec, chunk.proj, chunk.key, max_bytes,
                                          _part_view(self.out, chunk.proj, chunk.spec))

    # -- whole chunks ----------------------------------------------------------
    def whole_chunks(self, chunks: list[_Chunk]) -> None:
        """Fetch and decode ``chunks``: streamed from stores whose requests
        wait on a network, else in groups, one pool task per group."""
        if not chunks:
            return
        if self.streaming is not None:
            self._stream(chunks)
            return
        thread_map(self._read_group, self._groups(chunks), self.threads)

    def _groups(self, chunks: list[_Chunk]) -> list[Sequence[_Chunk]]:
        """One group when the read is small; else groups of about
        :data:`GROUP_BYTES`, so compressed data never piles up and I/O
        overlaps decoding; one chunk each in a rechunk task (whose declared
        memory has room for one chunk's stored bytes)."""
        if self.options.one_chunk:
            return [[c] for c in chunks]
        nbytes = max(self.layout.chunk_spec.nbytes, 1)
        if self.room is not None:  # each pool thread holds a group's stored bytes and a chunk being decoded
            per_group = self.room.chunks(nbytes, pool_threads(self.threads), DECODING)
            if per_group < len(chunks):
                return list(_batches(chunks, min(per_group, max(1, GROUP_BYTES // nbytes))))
        if len(chunks) * nbytes <= ONE_CALL_BYTES:
            return [chunks]
        return list(_batches(chunks, max(1, GROUP_BYTES // nbytes)))

    def _read_group(self, group: Sequence[_Chunk]) -> None:
        if self.in_place is not None:
            done = thread_map(self._read_in_place, group, self.threads)
            group = [c for c, d in zip(group, done) if not d]
            if not group:
                return
            values = self.in_place.get_buffers([c.key for c in group])
        else:
            values = self.store.get_many([c.key for c in group])
        thread_map(self._decode, list(zip(group, values)), self.threads)
        # decoded and copied into `out`: nothing refers to the read buffers any
        # more. A rechunk task (one chunk at a time) frees them instead: its
        # declared memory has room for the chunk in flight, not for buffers kept
        if not self.options.one_chunk:
            read_buffers.give(values)

    def _stream(self, chunks: list[_Chunk]) -> None:
        """Decode each chunk on the pool as soon as its value arrives, so
        transfers and decoding overlap."""
        limit, backlog = self.options.io_concurrency, None
        if self.room is not None:  # values in flight, waiting and being decoded
            decoders = pool_threads(self.threads)
            backlog = decoders
            nbytes = max(self.layout.chunk_spec.nbytes, 1)
            # held besides the requests in flight: a chunk being decoded (in this thread), or one
            # waiting and one being decoded per pool thread; a chunk decoded straight into its
            # contiguous place in the output takes at most one chunk's worth (the codec's output)
            decoding = 1 if all(self._straight(c) for c in chunks) else DECODING
            held = decoding if self.options.serial else (1 + decoding) * decoders
            limit = min(io_limit(limit), max(1, self.room.bytes // nbytes - held))
        pipeline = Pipeline(backlog, threads=self.threads)
        try:
            for i, value in self.streaming.iter_many([c.key for c in chunks], limit):
                pipeline.submit(self._decode, (chunks[i], value))
                del value  # decoded (or handed to the pool): not held while the next one arrives
        finally:
            pipeline.wait()

    def _straight(self, chunk: _Chunk) -> bool:
        """Whether ``chunk`` is decoded straight into a contiguous part of the output."""
        view = _out_view(self.out, chunk.proj, chunk.spec.shape)
        return view is not None and view.flags.c_contiguous

    def _read_in_place(self, chunk: _Chunk) -> bool:
        """Read an uncompressed chunk covered whole straight from the store
        into its place in the output, where the store and the layout allow;
        whether done."""
        proj, key, spec = chunk
        if not proj.is_complete:
            return False
        stored = self.codec.raw_dtype(spec)
        view = None if stored is None else _out_view(self.out, proj, spec.shape)
        if view is None or view.dtype != stored:
            return False
        done = self.in_place.read_into(key, view)
        if done is False:  # missing
            self._fill(chunk)
        return done is not None

    def _fill(self, chunk: _Chunk) -> None:
        """A chunk the store does not hold: the fill value, or noted as missing (strict reads)."""
        if self.missing is not None:
            self.missing.add(chunk.key)
        else:
            self.out[chunk.proj.out_selection] = self.fill

    def _decode(self, item: tuple[_Chunk, Any]) -> None:
        """Decode one fetched chunk into its place in the output (strict
        reads: a shard's empty inner chunks the read needs noted as missing)."""
        chunk, data = item
        if data is None:
            self._fill(chunk)
            return
        if self.missing is None:
            self._decode_chunk(chunk, data)
            return
        try:
            self._decode_chunk(chunk, data)
        except ChunkNotFoundError as e:
            if not self.missing.add_inner(chunk.proj, chunk.spec.shape, e):  # only ones the read does not need
                self._decode_chunk(chunk._replace(spec=replace(chunk.spec, read_missing=True)), data)

    def _decode_chunk(self, chunk: _Chunk, data: Any) -> None:
        proj, key, spec = chunk
        out = self.out
        if not proj.is_complete and self._decode_span(chunk, data):
            return
        view = _out_view(out, proj, spec.shape)
        if view is not None:
            self.codec.decode_into(data, spec, view, key)
            return
        with scratch_array(spec.shape, spec.dtype, spec.order) as whole:
            self.codec.decode_into(data, spec, whole, key)
            out[proj.out_selection] = proj.select(whole)

    def _decode_span(self, chunk: _Chunk, data: Any) -> bool:
        """A small selection: decode only the span of elements it needs, where
        the codec can (blosc); whether done."""
        if self.partial is None:
            return False
        proj, key, spec = chunk
        values = self.partial.decode_selection(data, spec, proj, key)
        if values is None:
            return False
        self.out[proj.out_selection] = values
        return True

    # -- partial reads ---------------------------------------------------------
    def partial_chunks(self, parts: list[tuple[_Chunk, Any]]) -> None:
        """Read the parts of chunks the selection needs, in steps, every
        chunk's step in one batch
        (:func:`~zarrdask.core.consistent.read_consistently_many`: the steps
        :meth:`route` got first, new ones for a read started again)."""
        if not parts:
            return
        if self.room is None:
            self._read_parts(parts, [None] * len(parts))
            return
        for batch, caps in self.room.batches(parts, self._part_cost):
            self._read_parts(batch, caps)

    def _part_cost(self, chunk: _Chunk, max_bytes: int | None) -> int:
        """What reading ``chunk``'s part holds: what its steps hold, and its
        result unless it is decoded straight into ``out``."""
        spec, proj = chunk.spec, chunk.proj
        held = self.partial.partial_bytes(spec, proj, max_bytes)  # type: ignore[union-attr]
        if _part_view(self.out, proj, spec) is None:
            held += math.prod(proj.inner_indexer(spec.shape, spec.shape).out_shape) * spec.dtype.itemsize
        return held

    def _read_parts(self, parts: list[tuple[_Chunk, Any]], caps: list[int | None]) -> None:
        """One batch of :meth:`partial_chunks`: ``caps`` are the ``max_bytes``
        of each chunk's steps (``None``: the steps :meth:`route` got)."""
        chunks = [chunk for chunk, _ in parts]
        first: list[Any] = [steps if cap is None else None for (_, steps), cap in zip(parts, caps)]

        def steps_of(i: int) -> Any:
            steps, first[i] = first[i], None
            return steps if steps is not None else self._steps(chunks[i], caps[i])

        found = read_consistently_many(self.store, [c.key for c in chunks], steps_of, self.options)
        for chunk, part in zip(chunks, found):
            if part is None:
                self._fill(chunk)
            elif isinstance(part, ChunkNotFoundError):  # a strict read's part needing empty inner chunks
                self.missing.add_inner(chunk.proj, chunk.spec.shape, part)  # type: ignore[union-attr]
            elif not (isinstance(part, np.ndarray) and np.may_share_memory(part, self.out)):  # not decoded in place
                self.out[chunk.proj.out_selection] = part


class _Room(NamedTuple):
    """The bytes a read with a ``memory_budget`` may hold besides its output."""

    bytes: int

    @staticmethod
    def of(options: EngineOptions, out_bytes: int) -> "_Room | None":
        budget = options.memory_budget
        return None if budget is None else _Room(max(0, budget - out_bytes))

    def chunks(self, nbytes: int, holders: int, scratch: int) -> int:
        """How many chunks of ``nbytes`` stored bytes each of ``holders`` may
        hold at once, each holder also holding ``scratch`` decoded chunks (at least one)."""
        return max(1, self.bytes // (nbytes * holders) - scratch)

    def batches(
        self, parts: list[tuple[_Chunk, Any]], cost: Callable[[_Chunk, int | None], int]
    ) -> Iterable[tuple[list[tuple[_Chunk, Any]], list[int | None]]]:
        """``parts`` in batches read one after another, each holding at most
        this many bytes (``cost(chunk, max_bytes)``: what a part's steps and
        result hold); a part that does not fit alone is read alone, in steps of
        at most the room its other costs leave (``max_bytes``, the second list)."""
        batch: list[tuple[_Chunk, Any]] = []
        held = 0
        for chunk, steps in parts:
            need = cost(chunk, None)
            if batch and held + need > self.bytes:
                yield batch, [None] * len(batch)
                batch, held = [], 0
            if need > self.bytes:  # steps of what is left once the fixed costs (one step of 1 byte) are counted
                yield [(chunk, steps)], [max(1, self.bytes - cost(chunk, 1))]
                continue
            batch.append((chunk, steps))
            held += need
        if batch:
            yield batch, [None] * len(batch)


def _part_view(out: np.ndarray, proj: ChunkProjection, spec: ChunkSpec) -> np.ndarray | None:
    """The view of ``out`` a part of a chunk can be decoded straight into
    (basic output selections of the chunk's data type), if there is one."""
    if out.dtype != spec.dtype or not all(map(isinstance, proj.out_selection, itertools.repeat((slice, int, np.integer)))):
        return None
    return out[(*proj.out_selection, Ellipsis)]


def _out_view(out: np.ndarray, proj: ChunkProjection, shape: tuple[int, ...]) -> np.ndarray | None:
    """The view of ``out`` a whole chunk can be decoded into, if there is one
    (not for edge chunks, dropped axes or strided selections)."""
    if not proj.is_complete or proj.pre_selection is not None:
        return None
    if any(not isinstance(s, slice) or s.step not in (None, 1) for s in proj.out_selection):
        return None
    view = out[(*proj.out_selection, Ellipsis)]  # a view even for 0-d arrays
    return view if view.shape == shape else None


# -- writes -----------------------------------------------------------------
def _batches(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def write(
    store: Store,
    layout: ArrayLayout,
    indexer: ChunkIndexer,
    value: Any,
    *,
    write_empty_chunks: bool = False,
    options: EngineOptions | None = None,
) -> None:
    """Write ``value`` (broadcast to the selection's shape) into the array;
    ``options`` (:class:`EngineOptions`) says how the write runs."""
    options = options or DEFAULT
    if options.serial:  # in this thread, with everything the codecs and the store fan out
        return run_inline(_write, store, layout, indexer, value, write_empty_chunks, options)
    return _write(store, layout, indexer, value, write_empty_chunks, options)


def _write(
    store: Store, layout: ArrayLayout, indexer: ChunkIndexer, value: Any, write_empty_chunks: bool,
    options: EngineOptions,
) -> None:
    writes = _Writes(store, layout, _value_for(layout, value, indexer.out_shape), write_empty_chunks, options)
    chunks = [_chunk(layout, writes.spec, proj) for proj in indexer]
    if not all(c.proj.is_complete for c in chunks):
        writes.read_modify_write(chunks)
    elif writes.uploads and len(chunks) > writes.per_group and not options.one_chunk:
        # more than one group: stream (a write of one group keeps "encode
        # everything, then store": a chunk that fails to encode stores nothing)
        writes.stream(chunks)
    elif writes.uploads and len(chunks) > 1 and (room := writes.uploads_in_room()) > 1:
        # one chunk at a time within a memory budget (a rechunk task): as many
        # encoded chunks in flight as the budget leaves room for
        writes.stream(chunks, room)
    else:
        # nothing to read: each pool task encodes and stores its own group, so
        # encoding overlaps writing and encoded chunks never pile up
        thread_map(writes.store_group, list(_batches(chunks, writes.per_group)), options.threads)


def _value_for(layout: ArrayLayout, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as an array of the layout's data type, broadcast to ``shape``."""
    try:
        if layout.dtype.hasobject:  # strings / bytes: str / bytes values only, never str(x)
            value = coerce_vlen(value, layout.dtype, strict=layout.objects_are_bytes)
        else:
            value = np.asarray(value, dtype=layout.dtype)
    except (ValueError, TypeError) as e:
        raise SelectionError(f"cannot convert the value to the array's dtype {layout.dtype}: {e}") from None
    try:
        return np.broadcast_to(value, shape)
    except ValueError:
        raise SelectionError(
            f"cannot broadcast a value of shape {value.shape} to the selection's shape {shape}"
        ) from None


class _Writes:
    """One write of ``value``: what it uses of the store (looked at once) and
    its steps — whole chunks in groups or streamed, or read-modify-write."""

    def __init__(
        self, store: Store, layout: ArrayLayout, value: np.ndarray, write_empty_chunks: bool, options: EngineOptions
    ) -> None:
        self.store, self.layout, self.value, self.options = store, layout, value, options
        self.spec = replace(layout.chunk_spec, write_empty=write_empty_chunks)
        #: chunks encoded and stored per pool task (and per store call)
        self.per_group = 1 if options.one_chunk else max(1, GROUP_BYTES // max(self.spec.nbytes, 1))
        #: the store uploads values in the background as they are handed over
        self.uploads = BACKGROUND_UPLOADS in store.capabilities
        #: the store stores a value only if it is still the version read (``ConditionalWrites``)
        self.conditional: Any = store if CONDITIONAL_WRITES in store.capabilities else None

    def _encode(self, chunk: _Chunk, old: Any = None) -> bytes | memoryview | None:
        # `..., Ellipsis`: a 0-d selection stays an array (a str scalar has no shape)
        proj = chunk.proj
        return update_chunk(self.layout.codec, old, chunk.spec, proj, self.value[(*proj.out_selection, Ellipsis)],
                            chunk.key)

    def store_group(self, group: Sequence[_Chunk]) -> None:
        """Encode whole chunks, then store them in one call."""
        keys = [c.key for c in group]
        encoded = [self._encode(c) for c in group]
        # whole chunks replace what is stored without reading it: ordered only
        # against this process's read-modify-writes of the same keys
        with self.store.locked(keys, across_processes=False):
            _store_encoded(self.store, keys, encoded)

    def uploads_in_room(self) -> int:
        """Encoded chunks a one-chunk write with a ``memory_budget`` may keep
        in flight: what the budget leaves next to the value written, a
        contiguous copy of the chunk being encoded and its encoded bytes
        (each counted as large as the chunk, for data that does not
        compress); 0 without a budget."""
        budget = self.options.memory_budget
        if budget is None or not self.options.one_chunk:
            return 0
        nbytes = max(self.spec.nbytes, 1)
        return min(io_limit(self.options.io_concurrency), max(0, (budget - self.value.nbytes) // nbytes - 2))

    def stream(self, chunks: list[_Chunk], limit: int | None = None) -> None:
        """Whole chunks to a store that uploads in the background: each chunk
        is handed over as soon as the pool has encoded it, so encoding and
        uploading overlap (up to ``limit``, default ``io_concurrency``,
        uploads in flight). Returns once every chunk is stored (or deleted,
        when all fill)."""
        keys = [c.key for c in chunks]
        empty: list[str] = []
        store: Any = self.store
        limit = self.options.io_concurrency if limit is None else limit
        try:
            with store.locked(keys, across_processes=False), store.uploads(limit) as uploads:
                pipeline = Pipeline(threads=self.options.threads)
                try:
                    for chunk in chunks:
                        pipeline.submit(self._hand_over, chunk, uploads, empty)
                finally:
                    pipeline.wait()
                if empty:
                    store.delete_many(sorted(empty))
        finally:  # what was stored, even if not all of it: the chunk cache drops the keys
            invalidate(store, keys)

    def _hand_over(self, chunk: _Chunk, uploads: Any, empty: list[str]) -> None:
        encoded = self._encode(chunk)
        if encoded is None:
            empty.append(chunk.key)
        else:
            uploads.set(chunk.key, encoded)

    def read_modify_write(self, chunks: list[_Chunk]) -> None:
        """Per batch, every chunk is fetched, decoded and encoded before the
        first store call, so a corrupt chunk fails the batch and changes
        nothing. The batch's keys are locked from the fetch to the store call
        (the chunks read in part across processes too, where the store can:
        ``process_locks``), so concurrent writes to other parts of a chunk are
        not lost; on a store with ``conditional_writes`` they are not lost to
        other processes and machines either (:meth:`_update_conditionally`)."""
        batch = max(1, min((256 << 20) // max(self.spec.nbytes, 1), LOCK_BATCH))
        store = self.store
        for group in _batches(chunks, batch):
            keys = [c.key for c in group]
            partial = [c.key for c in group if not c.proj.is_complete]
            with store.locked(keys, across_processes=False), store.locked(partial):
                if self.conditional is not None and partial:
                    self._update_conditionally(group)
                    continue
                fetched = dict(zip(partial, store.get_many(partial)))
                items = [(c, fetched.get(c.key)) for c in group]
                _store_encoded(store, keys, thread_map(self._update, items, self.options.threads))

    def _update(self, item: tuple[_Chunk, Any]) -> bytes | memoryview | None:
        return self._encode(*item)

    def _update_conditionally(self, group: Sequence[_Chunk]) -> None:
        """Read-modify-write with conditional writes: the chunks read in part
        are read with their versions and stored only if they still hold them;
        those another writer changed meanwhile are read and updated again (at
        most :data:`CONFLICT_ROUNDS` times, then ``ValueChangedError``).
        Every chunk of the group is encoded before the first store call."""
        whole = [c for c in group if c.proj.is_complete]
        todo = [c for c in group if not c.proj.is_complete]
        found = self.conditional.get_versioned([c.key for c in todo])
        items = [(c, None) for c in whole] + [(c, old) for c, (old, _) in zip(todo, found)]
        encoded = thread_map(self._update, items, self.options.threads)
        _store_encoded(self.store, [c.key for c in whole], encoded[: len(whole)])
        encoded = encoded[len(whole):]
        for _ in range(CONFLICT_ROUNDS):
            changed = set(self._store_if(todo, found, encoded))
            todo = [c for c in todo if c.key in changed]
            if not todo:
                return
            found = self.conditional.get_versioned([c.key for c in todo])
            encoded = thread_map(self._update, [(c, old) for c, (old, _) in zip(todo, found)], self.options.threads)
        raise ValueChangedError(
            f"{self.store!r}: key {todo[0].key!r} was changed by another writer between the read and the "
            f"write of each of {CONFLICT_ROUNDS} read-modify-writes; nothing of it was stored",
            key=todo[0].key,
        )

    def _store_if(self, chunks: list[_Chunk], found: list[tuple[Any, Any]], encoded: list[Any]) -> list[str]:
        """Store each chunk if its key still holds the version read; the keys
        that changed. A chunk now all fill value cannot be deleted
        conditionally: it is stored as it is (valid Zarr, one value more);
        one that was missing and still has nothing to store is left missing."""
        items = {}
        for chunk, (old, version), new in zip(chunks, found, encoded):
            if new is None:
                if old is None:
                    continue
                kept = chunk._replace(spec=replace(chunk.spec, write_empty=True))
                new = self._encode(kept, old)
            items[chunk.key] = (new, version)
        if not items:
            return []
        try:
            return self.conditional.set_if(items)
        finally:
            invalidate(self.store, list(items))


def rewrite(
    store: Store,
    layout: ArrayLayout,
    coords: Sequence[tuple[int, ...]],
    edit: Callable[[tuple[int, ...], np.ndarray], None],
    *,
    write_empty_chunks: bool = False,
) -> dict[str, bytes | memoryview | None]:
    """Fetch the chunks at ``coords`` (one batch), decode each, let ``edit``
    change it in place and encode it again; ``{key: encoded}``, ``None`` for a
    chunk now all fill value. Missing chunks are left out. Nothing is stored:
    a chunk that cannot be decoded or encoded raises before any write."""
    keys = [layout.chunk_key(c) for c in coords]
    spec = replace(layout.chunk_spec, write_empty=write_empty_chunks)
    found = [(c, k, v) for c, k, v in zip(coords, keys, store.get_many(keys)) if v is not None]

    def work(item: tuple[tuple[int, ...], str, Any]) -> bytes | memoryview | None:
        c, key, data = item
        spec_c = layout.spec_at(spec, c)
        chunk = layout.codec.decode(data, spec_c, key)
        if not chunk.flags.writeable:
            chunk = chunk.copy(order="K")
        edit(c, chunk)
        if not spec.write_empty and is_fill(chunk, spec.fill_value):
            return None
        return layout.codec.encode(chunk, spec_c)

    return dict(zip((k for _, k, _ in found), thread_map(work, found)))


def store_encoded(store: Store, encoded: dict[str, Any]) -> None:
    """Store encoded chunks; ``None`` means all fill value: delete the key."""
    _store_encoded(store, list(encoded), list(encoded.values()))


def _store_encoded(store: Store, keys: Sequence[str], encoded: Sequence[Any]) -> None:
    """Store encoded chunks; ``None`` means all fill value: delete the key."""
    to_set = {k: v for k, v in zip(keys, encoded) if v is not None}
    to_delete = [k for k, v in zip(keys, encoded) if v is None]
    try:
        if to_set:
            store.set_many(to_set)
        if to_delete:
            store.delete_many(to_delete)
    finally:  # also after a failure: some of them may have been stored
        invalidate(store, keys)
