"""Byte-range requests: a range by offset and length, from an offset to the end,
or a suffix of the last ``n`` bytes.

The sharding codec (zarr-specs ``v3-codecs-sharding-indexed``) reads its index
with a prefix or suffix request and inner chunks with offset + length requests;
these three request kinds are what every store's ``get_ranges`` understands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """``length`` bytes starting at ``offset``."""

    offset: int
    length: int

    def __post_init__(self) -> None:
        if self.offset < 0 or self.length < 0:
            raise ValueError(f"RangeRequest needs offset >= 0 and length >= 0, got {self}")


@dataclass(frozen=True, slots=True)
class OffsetRequest:
    """Every byte from ``offset`` to the end."""

    offset: int

    def __post_init__(self) -> None:
        if self.offset < 0:
            raise ValueError(f"OffsetRequest needs offset >= 0, got {self.offset}")


@dataclass(frozen=True, slots=True)
class SuffixRequest:
    """The last ``length`` bytes (all of them if the value is shorter)."""

    length: int

    def __post_init__(self) -> None:
        if self.length < 0:
            raise ValueError(f"SuffixRequest needs length >= 0, got {self.length}")


ByteRequest = Union[RangeRequest, OffsetRequest, SuffixRequest]


class ArrivingRanges(list):
    """The byte ranges a step of a read yields (a list of requests), when the
    read can also take each range's bytes as soon as they are in:
    ``take((j, data))`` with ``data`` the bytes of range ``j``, called at
    most once per range, from any thread, before the step is sent the list
    of all the bytes as usual. A reader that waits on a network hands each
    range over as it arrives, so a shard's inner chunks are decoded while its
    other ranges are on their way; any other caller just sends the list."""

    def __init__(self, requests: Sequence[ByteRequest], take: Callable[[tuple[int, Any]], None]) -> None:
        super().__init__(requests)
        self.take = take


def resolve(request: ByteRequest, size: int) -> tuple[int, int]:
    """``(start, stop)`` of ``request`` in a value of ``size`` bytes, clipped to it."""
    if isinstance(request, RangeRequest):
        start = min(request.offset, size)
        return start, min(request.offset + request.length, size)
    if isinstance(request, OffsetRequest):
        return min(request.offset, size), size
    if isinstance(request, SuffixRequest):
        return max(size - request.length, 0), size
    raise TypeError(f"not a byte request: {request!r}")


def slice_ranges(value: object, ranges: Sequence[ByteRequest]) -> list[bytes]:
    """The bytes of ``ranges`` of a value held in memory (any buffer), each
    clipped to it as :func:`resolve` clips."""
    view = memoryview(value)  # type: ignore[arg-type]
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    size = len(view)
    out = []
    for request in ranges:
        start, stop = resolve(request, size)
        out.append(bytes(view[start:stop]))
    return out


def coalesce(
    ranges: Sequence[tuple[int, int]], max_gap: int
) -> list[tuple[int, int, list[int]]]:
    """Merge ``(start, stop)`` ranges whose gap is at most ``max_gap`` bytes.

    Returns ``(start, stop, members)`` groups, where ``members`` are indices into
    ``ranges``; the groups are sorted by start.
    """
    order = sorted(range(len(ranges)), key=ranges.__getitem__)
    groups: list[tuple[int, int, list[int]]] = []
    for i in order:
        start, stop = ranges[i]
        if groups and start - groups[-1][1] <= max_gap:
            g_start, g_stop, members = groups[-1]
            members.append(i)
            groups[-1] = (g_start, max(g_stop, stop), members)
        else:
            groups.append((start, stop, [i]))
    return groups
