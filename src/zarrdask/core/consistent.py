"""Reads of one value in several steps, each from one version of the value.

A partial read of a chunk can take more than one step — a shard's index,
then the inner chunks it points at (zarr-specs ``v3-codecs-sharding-indexed``)
— and must not apply offsets read from one version of a value to the bytes of
another. Each value is read through its own reader
(:meth:`Store.reader <zarrdask.storage.abc.Store.reader>`): with an exact
reader the store guarantees one version; with a verifying one the first bytes
read (the index) are read again afterwards, and the read is started again
when they changed (:class:`RereadPolicy`).

:func:`read_consistently_many` reads many values at once: every value's
first step goes out at once, and each value's next step as soon as its last
one is in (where requests wait on a network; in lockstep otherwise), so a
partial read of many shards costs two round trips, not two per shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Generator, Sequence, TypeVar

from .._pool import io_map, run_steps, thread_map
from ..errors import CorruptChunkError, ValueChangedError
from ..storage.abc import Store
from ..storage.byte_range import ByteRequest
from ..storage.capabilities import STREAMING
from ..storage.readers import ValueReader
from .options import DEFAULT, EngineOptions

__all__ = ["CHANGED_RETRIES", "RereadPolicy", "REREAD", "read_consistently", "read_consistently_many"]

T = TypeVar("T")

#: how often a multi-step read of one value is started again because the value
#: was replaced while it was being read
CHANGED_RETRIES = 8


@dataclass(frozen=True)
class RereadPolicy:
    """The retry policy of a read of one value in several steps (a shard's
    index, then the inner chunks it points at), shared by
    :func:`read_consistently` and :func:`read_consistently_many`.

    A read *stands* when its reader is exact (the store serves one version),
    when it took one step only (one request batch reads one version), or when
    the value is unchanged after it (a verifying reader reads its first bytes
    again). A read that does not stand, that was refused with
    :class:`~zarrdask.errors.ValueChangedError`, or that found the data
    corrupt without standing (bytes from two versions), is started again: at
    most ``attempts`` times in all, then :meth:`gave_up`.
    """

    attempts: int = CHANGED_RETRIES

    def stands(self, reader: ValueReader, unchanged: bool | None = None) -> bool:
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


def read_consistently(store: Store, key: str, read_with: Callable[[ValueReader], T]) -> T:
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


Steps = Generator["list[ByteRequest]", Any, T]


def read_consistently_many(
    store: Store,
    keys: Sequence[str],
    steps_of: Callable[[int], Steps],
    options: EngineOptions | None = None,
) -> list[T]:
    """:func:`read_consistently` for many keys at once, with a read that takes
    several steps (``steps_of(i)``: a generator yielding the byte ranges it
    needs next and returning its result; a codec's ``partial_steps``, called
    again for every attempt).

    Where the store's requests wait on a network (capability ``streaming``),
    every key's first step goes out at once on the I/O threads and each key
    goes on at its own pace, on its I/O thread: its answer is sent to its
    steps (the last step decodes; at most ``threads`` at once) and its next
    requests go out at once (:func:`~zarrdask._pool.run_steps`). Otherwise the keys' steps run in
    lockstep, one pool task per key and step reading and decoding. Each key
    is read through its own reader, so its steps
    come from one version of its value, checked as :func:`read_consistently`
    does; only the keys whose value changed are read again."""
    if len(keys) == 1:  # the common small read: one chunk, its steps one after another
        return [_read_one(store, keys[0], steps_of)]
    options = options or DEFAULT
    results: dict[int, T] = {}
    todo = list(range(len(keys)))
    for _ in range(REREAD.attempts):
        if not todo:
            break
        attempt = _Attempt(store, keys, todo, options)
        try:
            attempt.run(steps_of, results)
            again = attempt.check(results)
        finally:
            attempt.close()
        todo = sorted(again)
    if todo:
        raise REREAD.gave_up(store, keys[todo[0]])
    return [results[i] for i in range(len(keys))]


def _read_one(store: Store, key: str, steps_of: Callable[[int], Steps]) -> T:
    """:func:`read_consistently_many` of one key: its steps through one reader,
    started again (:data:`REREAD`) when a read of two steps or more does not stand."""
    for _ in range(REREAD.attempts):
        with store.reader(key) as reader:
            steps, reads = steps_of(0), 0
            try:
                requests = next(steps)
                while True:
                    answer = reader.read(requests)
                    reads += 1
                    requests = steps.send(answer)
            except StopIteration as done:
                if reads <= 1 or REREAD.stands(reader):
                    return done.value
            except ValueChangedError:
                pass
            except CorruptChunkError:
                if reads <= 1 or REREAD.stands(reader):
                    raise
    raise REREAD.gave_up(store, key)


class _Attempt:
    """One attempt of :func:`read_consistently_many` at the keys ``todo``."""

    def __init__(self, store: Store, keys: Sequence[str], todo: list[int], options: EngineOptions) -> None:
        self.store, self.options = store, options
        self.streaming = STREAMING in store.capabilities
        self.readers = {i: store.reader(keys[i]) for i in todo}
        self.steps: dict[int, int] = dict.fromkeys(todo, 0)
        self.suspect: dict[int, CorruptChunkError] = {}
        self.again: list[int] = []

    def run(self, steps_of: Callable[[int], Steps], results: dict[int, T]) -> None:
        """Every key's steps, results (or the keys to read again) noted: where
        requests wait on a network, each key at its own pace (its next
        requests go out, or its bytes are decoded, as soon as its answer is
        in: :func:`~zarrdask._pool.run_steps`); otherwise in lockstep, one
        pool task per key and step reading and decoding."""
        gens = {i: steps_of(i) for i in self.readers}
        pending = {i: next(gens[i]) for i in self.readers}
        if self.streaming:
            def advance(i: int, answer: Any) -> Any:
                self.steps[i] += 1
                return self._note(i, *_advance((gens[i], answer)), results)

            run_steps(pending, lambda i, ranges, cpu: _read_arriving(self.readers[i], ranges, cpu), advance,
                      self.options.threads, self.options.io_concurrency)
            return
        while pending:
            order = list(pending)
            advanced = self._step([(self.readers[i], pending[i], gens[i]) for i in order])
            pending = {}
            for i, (what, value) in zip(order, advanced):
                self.steps[i] += 1
                requests = self._note(i, what, value, results)
                if requests is not None:
                    pending[i] = requests

    def _note(self, i: int, what: str, value: Any, results: dict[int, T]) -> Any:
        """Note what a step of key ``i`` gave (:func:`_advance`); its next requests, or ``None``."""
        if what == "next":
            return value
        if what == "done":
            results[i] = value
        elif what == "corrupt":
            self.suspect[i] = value
        else:
            self.again.append(i)
        return None

    def _step(self, items: list[tuple[ValueReader, Sequence[ByteRequest], Steps]]) -> list[tuple[str, Any]]:
        """One step of every read, one pool task per read: its requests read,
        then its steps sent the answer (the last step decodes)."""
        return thread_map(_read_and_advance, items, self.options.threads)

    def check(self, results: dict[int, T]) -> list[int]:
        """The keys to read again: replaced while they were read (verifying
        readers of reads in more than one step are asked), or corrupt from
        two versions; raises a corrupt value's error when its read stands."""
        check = [i for i in (*results.keys(), *self.suspect) if i in self.readers and not self._stands_alone(i)]
        if self.streaming:
            same = dict(zip(check, io_map(lambda i: self.readers[i].unchanged(), check, self.options.io_concurrency)))
        else:
            same = {i: self.readers[i].unchanged() for i in check}
        again = list(self.again)
        for i, error in self.suspect.items():
            if self._stands_alone(i) or REREAD.stands(self.readers[i], same.get(i)):
                raise error
            again.append(i)  # read from two versions of the value
        for i, ok in same.items():
            if i in results and not REREAD.stands(self.readers[i], ok):
                del results[i]
                again.append(i)
        return again

    def _stands_alone(self, i: int) -> bool:
        """A read that stands without asking: an exact reader, or one step."""
        return self.readers[i].exact or self.steps[i] <= 1

    def close(self) -> None:
        for reader in self.readers.values():
            reader.close()


def _read(item: tuple[ValueReader, Sequence[ByteRequest]]) -> Any:
    reader, ranges = item
    try:
        return reader.read(ranges)
    except ValueChangedError as e:
        return e


def _read_arriving(reader: ValueReader, ranges: Sequence[ByteRequest], cpu: Callable[..., Any]) -> Any:
    """:func:`_read` on the I/O threads: where the steps take the bytes of each
    range as it arrives (:class:`~zarrdask.storage.byte_range.ArrivingRanges`),
    the reader hands each range's bytes over (``cpu(take, (j, data))``) in
    the thread that received them, while the others are on their way
    (:meth:`~zarrdask.storage.readers.ValueReader.read_each`)."""
    take = getattr(ranges, "take", None)
    if take is None or len(ranges) <= 1:
        return _read((reader, ranges))
    try:
        return reader.read_each(ranges, partial(cpu, take))
    except ValueChangedError as e:
        return e


def _read_and_advance(item: tuple[ValueReader, Sequence[ByteRequest], Steps]) -> tuple[str, Any]:
    reader, ranges, gen = item
    return _advance((gen, _read((reader, ranges))))


def _advance(item: tuple[Steps, Any]) -> tuple[str, Any]:
    """Send one answer to a read's steps: ``("next", requests)``,
    ``("done", result)``, ``("corrupt", error)`` or ``("again", None)``."""
    gen, answer = item
    if isinstance(answer, ValueChangedError):
        return "again", None
    try:
        return "next", gen.send(answer)
    except StopIteration as done:
        return "done", done.value
    except ValueChangedError:
        return "again", None
    except CorruptChunkError as e:
        return "corrupt", e
