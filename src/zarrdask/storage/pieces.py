"""Byte ranges of one stored value served from cached pieces of it, the gaps fetched.

A :class:`~zarrdask.storage.caching.CachingReader` asks for byte ranges of a
value whose parts the :class:`~zarrdask.storage.cache.ChunkCache` may hold
in pieces: ranges other reads asked for (a shard's index, the coalesced
ranges of its inner chunks, zarr-specs ``v3-codecs-sharding-indexed``),
each covering part of what is asked now. :func:`plan` places the pieces at
their absolute spans in the value, works out what no piece covers, and
returns a :class:`Plan`: the byte requests to fetch (only the uncovered
spans, merged where their gap is at most ``coalesce_gap``, in one batch),
and :meth:`Plan.answer`, which assembles each requested range from the
cached and the fetched pieces (one copy per range).

Every piece must come from one version of the value; the caller checks that
(the entries of a key in the cache share one token, and fetched pieces are
used only when the reader that fetched them saw that version).

Suffix and offset requests (a shard index at the end) are placed only where
their absolute span is known: from the value's size, which the pieces reveal
when one of them is the whole value, reaches the end (an offset request, a
range clipped at the end) or is a suffix shorter than asked for. Otherwise
such a request is served by one piece holding it (the same request, a longer
suffix) or fetched as it is.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, NamedTuple, Sequence

from .byte_range import ByteRequest, RangeRequest, coalesce, resolve
from .cache import Cached, Part, serves

__all__ = ["Plan", "plan", "value_size"]

#: the tag of a fetched piece (cached pieces are tagged with their cache part)
FETCHED = ("fetched",)


class _Segment(NamedTuple):
    """Bytes ``start..stop`` of the value: ``data[offset : offset + stop - start]``."""

    start: int
    stop: int
    data: bytes
    offset: int
    tag: Any


def value_size(held: Sequence[tuple[Part, Cached]]) -> int | None:
    """The value's size in bytes, if one of the cached parts reveals it."""
    for part, entry in held:
        n = len(entry.data)
        if part is None:
            return n
        kind = part[0]
        if kind == "range" and 0 < n < part[2] - part[1]:  # clipped at the end of the value
            return part[1] + n
        if kind == "offset" and n > 0:
            return part[1] + n
        if kind == "suffix" and n < part[1]:
            return n
    return None


def _pieces(held: Sequence[tuple[Part, Cached]], size: int | None) -> list[tuple[int, int, bytes, Any]]:
    """``(start, stop, data, part)`` of every cached part whose absolute span is known."""
    out = []
    for part, entry in held:
        data = entry.data
        if not data:
            continue
        if part is None:
            start = 0
        elif part[0] in ("range", "offset"):
            start = part[1]
        elif size is not None:  # a suffix of a value of known size: its last bytes
            start = size - len(data)
        else:
            continue
        out.append((start, start + len(data), data, part))
    return out


def _layout(pieces: Sequence[tuple[int, int, bytes, Any]]) -> list[_Segment]:
    """Disjoint segments, sorted, covering what the pieces cover (overlaps served by the first)."""
    segments: list[_Segment] = []
    end = 0
    for start, stop, data, tag in sorted(pieces, key=lambda p: (p[0], -p[1])):
        if segments and stop <= end:
            continue
        first = max(start, end) if segments else start
        segments.append(_Segment(first, stop, data, first - start, tag))
        end = stop
    return segments


def _first_at(segments: list[_Segment], starts: list[int], pos: int) -> int:
    return max(bisect_right(starts, pos) - 1, 0) if segments else 0


def _uncovered(start: int, stop: int, segments: list[_Segment], starts: list[int]) -> list[tuple[int, int]]:
    """The spans of ``start..stop`` no segment covers."""
    out = []
    pos = start
    i = _first_at(segments, starts, pos)
    while pos < stop and i < len(segments):
        seg = segments[i]
        if seg.start >= stop:
            break
        if seg.stop > pos:
            if seg.start > pos:
                out.append((pos, seg.start))
            pos = seg.stop
        i += 1
    if pos < stop:
        out.append((pos, stop))
    return out


def _assemble(start: int, stop: int, segments: list[_Segment], starts: list[int]) -> tuple[bytes, list[Any]]:
    """The bytes ``start..stop`` from the segments (up to the first hole: the
    value ends there) and the tags of the segments used."""
    views: list[memoryview] = []
    used: list[Any] = []
    pos = start
    i = _first_at(segments, starts, pos)
    while pos < stop and i < len(segments):
        seg = segments[i]
        i += 1
        if seg.stop <= pos:
            continue
        if seg.start > pos:
            break
        take = min(seg.stop, stop)
        first = seg.offset + pos - seg.start
        views.append(memoryview(seg.data)[first : first + take - pos])
        used.append(seg.tag)
        pos = take
    if len(views) == 1:
        return bytes(views[0]), used
    return b"".join(views), used


class Plan:
    """What a read needs fetched, and how to answer it once fetched (see :func:`plan`).

    Attributes
    ----------
    fetch : list of ByteRequest
        The requests to fetch, in one batch: the uncovered spans (merged),
        then the requests whose span is unknown and no piece holds.
    covered : bool
        Something of the read is served from cached pieces.
    """

    def __init__(self, ranges: list[ByteRequest], pieces: list[tuple[int, int, bytes, Any]], spans: list[Any],
                 whole: dict[int, tuple[bytes, Part]], gaps: list[tuple[int, int]], asis: list[int],
                 covered: bool) -> None:
        self._pieces = pieces
        self._spans = spans
        self._whole = whole
        self._gaps = gaps
        self._asis = asis
        self.fetch: list[ByteRequest] = [RangeRequest(a, b - a) for a, b in gaps] + [ranges[i] for i in asis]
        self.covered = covered

    def answer(self, fetched: Sequence[Any]) -> tuple[list[bytes], list[Part], list[tuple[ByteRequest, Any]]]:
        """``(bytes of each range, the cached parts used, (request, bytes) fetched to keep)``
        from the bytes ``fetched`` for :attr:`fetch`."""
        n = len(self._gaps)
        added = [(a, a + len(blob), blob, FETCHED) for (a, _), blob in zip(self._gaps, fetched[:n]) if len(blob)]
        segments = _layout(self._pieces + added)
        starts = [s.start for s in segments]
        asis = dict(zip(self._asis, fetched[n:]))
        out: list[bytes] = []
        used: set[Any] = set()
        for i, span in enumerate(self._spans):
            if i in self._whole:
                data, part = self._whole[i]
                used.add(part)
            elif i in asis:
                data = asis[i]
            else:
                data, tags = _assemble(span[0], span[1], segments, starts)
                used.update(tags)
            out.append(data)
        used.discard(FETCHED)
        return out, list(used), list(zip(self.fetch, fetched))


def plan(ranges: Sequence[ByteRequest], held: Sequence[tuple[Part, Cached]], max_gap: int) -> Plan:
    """What of ``ranges`` the cached parts ``held`` (of one version of the
    value) cover, and what is left to fetch (spans merged across gaps up to ``max_gap``)."""
    ranges = list(ranges)
    size = value_size(held)
    pieces = _pieces(held, size)
    segments = _layout(pieces)
    starts = [s.start for s in segments]
    spans: list[Any] = []
    whole: dict[int, tuple[bytes, Part]] = {}
    asis: list[int] = []
    missing: list[tuple[int, int]] = []
    covered = False
    for i, request in enumerate(ranges):
        if isinstance(request, RangeRequest) and size is None:
            span: Any = (request.offset, request.offset + request.length)
        elif size is not None:
            span = resolve(request, size)
        else:
            span = None
            for part, entry in held:
                data = serves(part, request, entry.data)
                if data is not None:
                    whole[i] = (data, part)
                    covered = True
                    break
            else:
                asis.append(i)
        spans.append(span)
        if span is not None and span[1] > span[0]:
            left = _uncovered(span[0], span[1], segments, starts)
            covered = covered or left != [span]
            missing.extend(left)
    gaps = [(a, b) for a, b, _ in coalesce(missing, max_gap)] if missing else []
    return Plan(ranges, pieces, spans, whole, gaps, asis, covered)
