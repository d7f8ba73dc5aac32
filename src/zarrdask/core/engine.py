"""The chunk engine: selections in, batched store calls, codecs on a thread pool.

Read path: a selection is projected onto the chunk grid
(:mod:`zarrdask.indexing`: any :class:`~zarrdask.indexing.ChunkIndexer` —
basic and orthogonal selections, or points, whose projections carry index
arrays; the engine only applies them); every chunk key it needs is fetched with one
``get_many`` call; chunks are decoded on a thread pool (numcodecs releases the
GIL) straight into the output where the output region is the whole chunk and
contiguous, otherwise into one scratch chunk that is copied into place; missing
chunks are filled with the fill value (Zarr v2 spec "Chunks": an uninitialised
chunk reads as the fill value; zarr-specs v3 core the same).

Write path: chunks the selection covers completely are encoded without being
read; partially covered ones are fetched in one batch, decoded, updated and
re-encoded; a chunk equal to the fill value everywhere is not stored and any
stale copy is deleted, unless ``write_empty_chunks``. Every chunk is encoded
before the first store call of its batch, so a value that cannot be converted or
encoded changes nothing that is stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Callable, Generator, Iterable, Sequence, TypeVar

import numpy as np

from .._memory import aligned_empty, read_buffers
from .._pool import Pipeline, io_map, run_inline, thread_map
from ..chunking import ChunkKeyEncoding
from ..chunking.rectilinear import RectilinearGrid, is_regular
from ..codecs.buffers import scratch_array
from ..codecs.abc import ArrayBytesCodec, ChunkSpec, RangeReader, is_fill, update_chunk
from ..codecs.vlen import coerce_vlen
from ..errors import CorruptChunkError, SelectionError, ValueChangedError
from ..indexing import ChunkIndexer, ChunkProjection
from ..storage.abc import Store
from .options import DEFAULT, EngineOptions

T = TypeVar("T")

#: reads of up to this many decoded bytes fetch every chunk in one store call
ONE_CALL_BYTES = 64 << 20
#: larger reads fetch and decode groups of about this many bytes, one pool task
#: each, so compressed data never piles up and I/O overlaps decoding
GROUP_BYTES = 8 << 20
#: a read-modify-write locks at most this many keys at once (a LocalStore lock
#: holds a file descriptor)
LOCK_BATCH = 256


# -- the array layout the engine works on --------------------------------------
@dataclass(frozen=True)
class ChunkLayout:
    """Everything the engine needs to know about an array, format-independent."""

    prefix: str  # "" or "path/"
    shape: tuple[int, ...]
    #: the chunk (shard) shape; for a rectilinear grid one entry per axis, an
    #: ``int`` or a tuple of chunk edge lengths
    chunk_shape: tuple
    dtype: np.dtype
    fill_value: Any  # never None: v2's null fill reads as the type's zero
    codec: ArrayBytesCodec
    key_encoding: ChunkKeyEncoding
    order: str = "C"
    #: object arrays hold bytes only (Zarr ``bytes``); False for v2 arrays with
    #: another object codec (``json2``, ``pickle``, ...), whose values are anything
    objects_are_bytes: bool = True

    @cached_property
    def chunk_spec(self) -> ChunkSpec:
        """The chunks' spec (rectilinear grids: of the largest chunk, for sizing batches)."""
        if self.regular:
            return ChunkSpec(self.chunk_shape, self.dtype, self.fill_value, self.order)
        return ChunkSpec(self._grid.largest_chunk(), self.dtype, self.fill_value, self.order)

    @cached_property
    def regular(self) -> bool:
        return is_regular(self.chunk_shape)

    @cached_property
    def _grid(self) -> RectilinearGrid:
        return RectilinearGrid(self.shape, self.chunk_shape)

    def spec_at(self, spec: ChunkSpec, coords: tuple[int, ...]) -> ChunkSpec:
        """``spec`` for the chunk at ``coords`` (its own shape on a rectilinear grid)."""
        return spec if self.regular else spec.with_shape(self._grid.chunk_shape_at(coords))

    def chunk_key(self, coords: tuple[int, ...]) -> str:
        return self.prefix + self.key_encoding.encode(coords)



# -- reads ------------------------------------------------------------------
def _out_view(out: np.ndarray, proj: ChunkProjection, shape: tuple[int, ...]) -> np.ndarray | None:
    """The view of ``out`` a whole chunk can be decoded into, if there is one
    (not for edge chunks, dropped axes or strided selections)."""
    if not proj.is_complete or proj.pre_selection is not None:
        return None
    if any(not isinstance(s, slice) or s.step not in (None, 1) for s in proj.out_selection):
        return None
    view = out[(*proj.out_selection, Ellipsis)]  # a view even for 0-d arrays
    return view if view.shape == shape else None


class KeyReader(RangeReader):
    """Byte ranges of one store key."""

    def __init__(self, store: Store, key: str) -> None:
        self.store, self.key = store, key

    def read(self, ranges: list) -> list[bytes] | None:
        return self.store.get_ranges(self.key, ranges)


def read(
    store: Store,
    layout: ChunkLayout,
    indexer: ChunkIndexer,
    out: np.ndarray | None = None,
    options: EngineOptions | None = None,
) -> np.ndarray:
    """Read ``indexer``'s selection of the array into ``out`` (allocated if None).

    Chunks read whole are fetched with one ``get_many`` call (reads larger than
    :data:`ONE_CALL_BYTES`: one call per group of about :data:`GROUP_BYTES`,
    each group fetched and decoded by one pool thread);
    chunks the selection covers only in part are read in part when the codec
    can (sharding: the index, then only the inner chunks needed).
    """
    options = options or DEFAULT
    if options.serial:
        return run_inline(_read, store, layout, indexer, out, options)
    return _read(store, layout, indexer, out, options)


def _read(
    store: Store, layout: ChunkLayout, indexer: ChunkIndexer, out: np.ndarray | None, options: EngineOptions
) -> np.ndarray:
    threads = options.threads
    if out is None:
        # aligned: chunks read straight into it are copied by the kernel
        out = aligned_empty(indexer.out_shape, layout.dtype)
    projections = list(indexer)
    if not projections:
        return out
    keys = [layout.chunk_key(p.coords) for p in projections]
    spec = spec0 = layout.chunk_spec
    codec = layout.codec
    in_part = codec.supports_partial_decode
    decode_into = getattr(codec, "decode_into", None)

    decode_span = getattr(codec, "decode_span", None)

    def decode(i: int, data: Any) -> None:
        proj, key = projections[i], keys[i]
        spec = layout.spec_at(spec0, proj.coords)
        if data is None:
            out[proj.out_selection] = layout.fill_value
            return
        if decode_span is not None and not proj.is_complete:
            # a small selection: decode only the span of elements it needs (blosc)
            span = _Span.of(proj, spec.shape)
            elements = None if span is None else decode_span(data, spec, span.first, span.count, key)
            if elements is not None:
                span.place(elements, out, proj)  # type: ignore[union-attr]
                return
        if decode_into is None:
            out[proj.out_selection] = proj.select(codec.decode(data, spec, key))
            return
        view = _out_view(out, proj, spec.shape)
        if view is not None:
            decode_into(data, spec, view, key)
            return
        with scratch_array(spec.shape, spec.dtype, spec.order) as chunk:
            decode_into(data, spec, chunk, key)
            out[proj.out_selection] = proj.select(chunk)

    def read_part(i: int) -> None:
        proj, key = projections[i], keys[i]
        spec = layout.spec_at(spec0, proj.coords)
        part = read_consistently(store, key, lambda reader: codec.decode_partial(reader, spec, proj, key))
        out[proj.out_selection] = layout.fill_value if part is None else part

    # uncompressed chunks: read straight from the file into `out` (whole chunks,
    # stores with read_into) or only the span of elements a small selection
    # needs (stores with partial reads), where the store can
    direct = type(store).read_into is not Store.read_into
    spans = store.supports_partial_reads
    raw_dtype = getattr(codec, "raw_dtype", None) if direct or spans else None

    def read_raw(i: int) -> bool:
        """Read chunk ``i`` without decoding it when its stored bytes are its
        elements (uncompressed, C order); whether done."""
        proj = projections[i]
        if not (spans if not proj.is_complete else direct):
            return False
        spec = layout.spec_at(spec0, proj.coords)
        stored = raw_dtype(spec)
        if stored is None:
            return False
        if not proj.is_complete:
            return _read_raw_part(store, keys[i], proj, spec, stored, out, layout.fill_value)
        view = _out_view(out, proj, spec.shape)
        if view is None or view.dtype != stored:
            return False
        done = store.read_into(keys[i], view)
        if done is False:  # missing
            out[proj.out_selection] = layout.fill_value
        return done is not None

    def read_group(group: Sequence[int]) -> None:
        if raw_dtype is not None:
            group = [i for i, done in zip(group, thread_map(read_raw, group, threads)) if not done]
            if not group:
                return
        values = store.get_buffers([keys[i] for i in group])
        thread_map(lambda j: decode(group[j], values[j]), range(len(group)), threads)
        # decoded and copied into `out`: nothing refers to the read buffers any more.
        # A rechunk task (one chunk at a time) frees them instead: its declared
        # memory has room for the chunk in flight, not for buffers kept for later
        if not options.one_chunk:
            read_buffers.give(values)

    parts = [i for i, p in enumerate(projections) if in_part and not p.is_complete]
    whole = [i for i, p in enumerate(projections) if not (in_part and not p.is_complete)]
    if store.latency_bound:
        # requests wait on a network: stream them (decode each value as it
        # arrives), and read parts of chunks in lockstep batches
        _read_streamed(store, [keys[i] for i in whole], lambda j, value: decode(whole[j], value), threads)
        steps = getattr(codec, "partial_steps", None)
        if parts and steps is not None:
            found = read_consistently_many(
                store, [keys[i] for i in parts],
                lambda j: steps(layout.spec_at(spec, projections[parts[j]].coords), projections[parts[j]], keys[parts[j]]),
                options,
            )
            for j, part in enumerate(found):
                proj = projections[parts[j]]
                out[proj.out_selection] = layout.fill_value if part is None else part
        else:
            thread_map(read_part, parts, threads)
        return out
    # a rechunk task (options.one_chunk) holds one chunk's stored bytes at most
    per_group = 1 if options.one_chunk else max(1, GROUP_BYTES // max(spec.nbytes, 1))
    one_call = len(whole) * spec.nbytes <= ONE_CALL_BYTES and not options.one_chunk
    groups = [whole] if one_call else list(_batches(whole, per_group))
    thread_map(read_group, [g for g in groups if g], threads)
    thread_map(read_part, parts, threads)
    return out


class _Span:
    """The elements of a chunk (C order) from the first to the last one a
    projection selects by slices and integers, and how to pick the selection
    out of them."""

    __slots__ = ("first", "count", "shape", "strides", "index")

    def __init__(self, first: int, count: int, shape: list[int], strides: list[int], index: tuple) -> None:
        self.first, self.count, self.shape, self.strides, self.index = first, count, shape, strides, index

    @staticmethod
    def of(proj: ChunkProjection, shape: tuple[int, ...]) -> "_Span | None":
        """``proj``'s span in a chunk of ``shape``; ``None`` for selections by
        index arrays, empty ones, and spans of more than half the chunk (a
        whole read is as cheap)."""
        if proj.pre_selection is not None:
            return None
        lens, steps, index, first, last = [], [], [], 0, 0
        stride = math.prod(shape)
        total = stride
        for d, sel in enumerate(proj.chunk_selection):
            stride //= shape[d]
            if isinstance(sel, (int, np.integer)):
                start, n, step = int(sel), 1, 1
                index.append(0)  # an integer drops its dimension
            elif isinstance(sel, slice) and (sel.step or 1) > 0:
                step = sel.step or 1
                start, n = sel.start, len(range(sel.start, sel.stop, step))
                index.append(slice(None))
            else:
                return None
            if n == 0:
                return None
            lens.append(n)
            steps.append(step * stride)
            first += start * stride
            last += (start + (n - 1) * step) * stride
        count = last - first + 1
        if 2 * count > total:
            return None
        return _Span(first, count, lens, steps, tuple(index))

    def place(self, elements: np.ndarray, out: np.ndarray, proj: ChunkProjection) -> None:
        """Copy the selection out of the span's ``elements`` into ``out``."""
        size = elements.itemsize
        part = np.lib.stride_tricks.as_strided(
            elements, shape=self.shape, strides=[s * size for s in self.strides], writeable=False
        )
        out[proj.out_selection] = part[self.index]


def _read_raw_part(
    store: Store, key: str, proj: ChunkProjection, spec: ChunkSpec, stored: np.dtype, out: np.ndarray, fill: Any
) -> bool:
    """Read only the bytes of ``proj``'s span of an uncompressed C-order chunk
    (elements of ``stored``) and copy the selection into ``out``; whether done."""
    span = _Span.of(proj, spec.shape)
    if span is None:
        return False
    size = stored.itemsize
    got = store.read_span(key, span.first * size, span.count * size, spec.nbytes)
    if got is None:
        return False
    if got is False:
        out[proj.out_selection] = fill
    else:
        span.place(np.frombuffer(got, dtype=stored, count=span.count), out, proj)
    return True


#: how often a multi-step read of one value is started again because the value
#: was replaced while it was being read
CHANGED_RETRIES = 8


@dataclass(frozen=True)
class RereadPolicy:
    """The retry policy of a read of one value in several steps (a shard's
    index, then the inner chunks it points at), shared by
    :func:`read_consistently` and :func:`read_consistently_many`.

    A read *stands* when its reader is exact (the store serves one version)
    or the value is unchanged after it (a verifying reader reads its first
    bytes again). A read that does not stand, that was refused with
    :class:`~zarrdask.errors.ValueChangedError`, or that found the data
    corrupt without standing (bytes from two versions), is started again: at
    most ``attempts`` times in all, then :meth:`gave_up`.
    """

    attempts: int = CHANGED_RETRIES

    def stands(self, reader: RangeReader, unchanged: bool | None = None) -> bool:
        """Whether a finished read of ``reader`` holds; ``unchanged`` is the
        answer of ``reader.unchanged()`` when the caller asked it already."""
        return reader.exact or (reader.unchanged() if unchanged is None else unchanged)

    def gave_up(self, store: Store, key: str) -> ValueChangedError:
        """The error once ``attempts`` reads of ``key`` did not stand."""
        return ValueChangedError(
            f"{store!r}: key {key!r} was replaced {self.attempts} times while it was being read; "
            "its index and data could not be read from one version", key=key,
        )


#: the policy of every consistent read
REREAD = RereadPolicy()


def _read_streamed(store: Store, keys: Sequence[str], decode: Callable[[int, Any], None], threads: int | None) -> None:
    """``decode(i, value of keys[i])`` for every key, each started on the pool
    as soon as its value arrives (:meth:`Store.iter_many`), so transfers and
    decoding overlap."""
    if not keys:
        return
    pipeline = Pipeline(threads=threads)
    try:
        for i, value in store.iter_many(keys):
            pipeline.submit(decode, i, value)
    finally:
        pipeline.wait()


def read_consistently_many(
    store: Store,
    keys: Sequence[str],
    steps_of: Callable[[int], Generator[list, Any, T]],
    options: EngineOptions | None = None,
) -> list[T]:
    """:func:`read_consistently` for many keys at once, with a read that takes
    several steps (``steps_of(i)``: a generator yielding the byte ranges it
    needs next and returning its result; a codec's ``partial_steps``).

    Every key's first step goes to the store as one batch
    (:meth:`Store.read_many`), then every key's second step, and so on: a
    partial read of many shards costs two round trips, not two per shard.
    Each key is read through its own :meth:`Store.reader`, so its steps come
    from one version of its value, checked as :func:`read_consistently` does;
    only the keys whose value changed are read again."""
    options = options or DEFAULT
    results: dict[int, T] = {}
    todo = list(range(len(keys)))
    for _ in range(REREAD.attempts):
        if not todo:
            break
        readers = {i: store.reader(keys[i]) for i in todo}
        again: list[int] = []
        try:
            gens = {i: steps_of(i) for i in todo}
            pending = {i: next(gens[i]) for i in todo}
            suspect: dict[int, CorruptChunkError] = {}
            while pending:
                order = list(pending)
                answers = store.read_many([(readers[i], pending[i]) for i in order])

                def advance(j: int) -> tuple[str, Any]:
                    i, answer = order[j], answers[j]
                    if isinstance(answer, ValueChangedError):
                        return "again", None
                    try:
                        return "next", gens[i].send(answer)
                    except StopIteration as done:
                        return "done", done.value
                    except ValueChangedError:
                        return "again", None
                    except CorruptChunkError as e:
                        return "corrupt", e

                pending = {}
                # the last step decodes: one pool task per key
                for i, (what, value) in zip(order, thread_map(advance, range(len(order)), options.threads)):
                    if what == "next":
                        pending[i] = value
                    elif what == "done":
                        results[i] = value
                    elif what == "corrupt":
                        suspect[i] = value
                    else:
                        again.append(i)
            # verifying readers: was the value replaced while it was read?
            check = [i for i in (*results.keys(), *suspect) if i in readers and not readers[i].exact]
            same = dict(zip(check, io_map(lambda i: readers[i].unchanged(), check, options.io_concurrency))) if store.latency_bound else {
                i: readers[i].unchanged() for i in check
            }
            for i, error in suspect.items():
                if REREAD.stands(readers[i], same.get(i)):
                    raise error
                again.append(i)  # read from two versions of the value
            for i, ok in same.items():
                if i in results and not REREAD.stands(readers[i], ok):
                    del results[i]
                    again.append(i)
        finally:
            for reader in readers.values():
                reader.close()
        todo = sorted(again)
    if todo:
        raise REREAD.gave_up(store, keys[todo[0]])
    return [results[i] for i in range(len(keys))]


def read_consistently(store: Store, key: str, read_with: Callable[[RangeReader], T]) -> T:
    """``read_with(reader)`` for a reader of ``key`` whose reads all come from
    one version of the value (a shard's index, then the inner chunks it points
    at): with an exact reader the store guarantees it; with a verifying one the
    first bytes read (the index) are read again afterwards, and the whole read
    is started again when they changed — also when the mix of versions made
    the data look corrupt (:data:`REREAD`). After :data:`CHANGED_RETRIES`
    replacements in a row, :class:`~zarrdask.errors.ValueChangedError`."""
    for _ in range(REREAD.attempts):
        with store.reader(key) as reader:
            try:
                result = read_with(reader)
            except ValueChangedError:
                continue
            except CorruptChunkError:
                if REREAD.stands(reader):
                    raise
                continue  # read from two versions of the value
            if REREAD.stands(reader):
                return result
    raise REREAD.gave_up(store, key)


# -- writes -----------------------------------------------------------------
def _batches(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def write(
    store: Store,
    layout: ChunkLayout,
    indexer: ChunkIndexer,
    value: Any,
    *,
    write_empty_chunks: bool = False,
    options: EngineOptions | None = None,
) -> None:
    """Write ``value`` (broadcast to the selection's shape) into the array."""
    options = options or DEFAULT
    if options.serial:
        return run_inline(_write, store, layout, indexer, value, write_empty_chunks, options)
    return _write(store, layout, indexer, value, write_empty_chunks, options)


def _write(
    store: Store, layout: ChunkLayout, indexer: ChunkIndexer, value: Any, write_empty_chunks: bool,
    options: EngineOptions,
) -> None:
    threads = options.threads
    try:
        if layout.dtype.hasobject:  # strings / bytes: str / bytes values only, never str(x)
            value = coerce_vlen(value, layout.dtype, strict=layout.objects_are_bytes)
        else:
            value = np.asarray(value, dtype=layout.dtype)
    except (ValueError, TypeError) as e:
        raise SelectionError(f"cannot convert the value to the array's dtype {layout.dtype}: {e}") from None
    try:
        value = np.broadcast_to(value, indexer.out_shape)
    except ValueError:
        raise SelectionError(
            f"cannot broadcast a value of shape {value.shape} to the selection's shape "
            f"{indexer.out_shape}"
        ) from None
    projections = list(indexer)
    spec = replace(layout.chunk_spec, write_empty=write_empty_chunks)
    codec = layout.codec

    def store_group(group: Sequence[ChunkProjection]) -> None:
        keys = [layout.chunk_key(p.coords) for p in group]
        # `..., Ellipsis`: a 0-d selection stays an array (a str scalar has no shape)
        encoded = [update_chunk(codec, None, layout.spec_at(spec, p.coords), p, value[(*p.out_selection, Ellipsis)], k)
                   for p, k in zip(group, keys)]
        # whole chunks replace what is stored without reading it: ordered only
        # against this process's read-modify-writes of the same keys
        with store.locked(keys, across_processes=False):
            _store_encoded(store, keys, encoded)

    per_group = 1 if options.one_chunk else max(1, GROUP_BYTES // max(spec.nbytes, 1))
    if store.latency_bound and len(projections) > per_group and not options.one_chunk and all(p.is_complete for p in projections):
        # more than one group: stream (a write of one group keeps "encode
        # everything, then store": a chunk that fails to encode stores nothing)
        _write_streamed(store, layout, projections, spec, value, threads)
        return
    if all(p.is_complete for p in projections):
        # nothing to read: each pool task encodes and stores its own group, so
        # encoding overlaps writing and encoded chunks never pile up
        thread_map(store_group, list(_batches(projections, per_group)), threads)
        return
    # read-modify-write: per batch, every chunk is fetched, decoded and encoded
    # before the first store call, so a corrupt chunk fails the batch and
    # changes nothing. The batch's keys are locked from the fetch to the store
    # call (the chunks read in part across processes too, where the store can:
    # LocalStore), so concurrent writes to other parts of a chunk are not lost.
    batch = max(1, min((256 << 20) // max(spec.nbytes, 1), LOCK_BATCH))
    for group in _batches(projections, batch):
        keys = [layout.chunk_key(p.coords) for p in group]
        partial = [i for i, p in enumerate(group) if not p.is_complete]
        with store.locked(keys, across_processes=False), store.locked([keys[i] for i in partial]):
            fetched = dict(zip(partial, store.get_many([keys[i] for i in partial])))

            def work(i: int) -> bytes | memoryview | None:
                proj = group[i]
                return update_chunk(codec, fetched.get(i), layout.spec_at(spec, proj.coords), proj,
                                    value[(*proj.out_selection, Ellipsis)], keys[i])

            _store_encoded(store, keys, thread_map(work, range(len(group)), threads))


def _write_streamed(
    store: Store, layout: ChunkLayout, projections: Sequence[ChunkProjection], spec: ChunkSpec, value: Any,
    threads: int | None,
) -> None:
    """Whole chunks to a store whose requests wait on a network: each chunk is
    handed to the store's uploads as soon as the pool has encoded it, so
    encoding and uploading overlap and up to ``io_concurrency`` uploads are in
    flight. Returns once every chunk is stored (or deleted, when all fill)."""
    keys = [layout.chunk_key(p.coords) for p in projections]
    codec = layout.codec
    empty: list[str] = []
    with store.locked(keys, across_processes=False), store.uploads() as uploads:

        def encode(i: int) -> None:
            p = projections[i]
            encoded = update_chunk(codec, None, layout.spec_at(spec, p.coords), p, value[(*p.out_selection, Ellipsis)],
                                   keys[i])
            if encoded is None:
                empty.append(keys[i])
            else:
                uploads.set(keys[i], encoded)

        pipeline = Pipeline(threads=threads)
        try:
            for i in range(len(projections)):
                pipeline.submit(encode, i)
        finally:
            pipeline.wait()
        if empty:
            store.delete_many(sorted(empty))


def rewrite(
    store: Store,
    layout: ChunkLayout,
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
    if to_set:
        store.set_many(to_set)
    if to_delete:
        store.delete_many(to_delete)
