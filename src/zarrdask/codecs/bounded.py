"""Bounded decoding: a chunk never decodes (nor allocates) past what it may hold.

Spec context: zarr-specs v3 core, "Codecs" — a bytes → bytes codec's decoded
side is the encoded side of the codec before it, so its size is known whenever
the array → bytes codec's encoded size is fixed (``bytes``: the chunk's element
count × item size; ``crc32c`` adds 4); the Zarr v2 spec, "Chunks" — the
compressor decodes to what the filters (or the layout step) handed it. A
compressed chunk is attacker-controlled data: its headers may claim, and its
stream may expand to, far more than that (a 16 KB zstd frame declaring 256 MB,
0.5 MB of deflate inflating to 512 MB).

:class:`DecodeBound` carries the limit one decode call must keep: **exactly**
``size`` bytes when the codec chain knows the decoded size, otherwise **at
most** the ``max_chunk_bytes`` setting (:mod:`zarrdask.config`; variable-length
strings and bytes, whose size no metadata fixes). Codecs check what a header
declares against it before they allocate, and streams are inflated in pieces
of at most :data:`STEP` bytes, written straight into the output, so a stream
is refused at the first piece past the limit: memory stays within the chunk's
decoded size plus one piece.

This module holds the parts shared by several codecs: the bound, and the
piecewise decompression of zlib / gzip (``zlib.decompressobj`` with
``max_length``), bzip2 and lzma (their decompressor objects' ``max_length``).
Which bound each codec applies is documented in ``docs/formats.md``
("Bounded decoding").
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Iterator

import numpy as np

from .. import config
from ..errors import CorruptChunkError
from .buffers import byte_view
from .abc import BytesBytesCodec, ChunkSpec

__all__ = ["BoundedBytesBytesCodec", "DecodeBound", "STEP", "inflate_pieces", "stream_pieces"]

#: the most bytes one call of a streaming decompressor may produce; also the
#: size of the input slices fed to it (so that its unconsumed tail stays small)
STEP = 1 << 18


class DecodeBound:
    """The size one chunk may decode to, and where it goes.

    Parameters
    ----------
    key, codec
        The chunk's store key and the codec's name, for error messages.
    size
        The exact decoded size when the codec chain knows it, else ``None``:
        then at most ``config.get("max_chunk_bytes")`` bytes are accepted.
    out
        A writable buffer of the decoded size to decode into (its size is then
        the exact size).
    """

    __slots__ = ("key", "codec", "size", "out", "limit")

    def __init__(self, key: str, codec: str, size: int | None = None, out: Any = None) -> None:
        self.key = key
        self.codec = codec
        self.out = None if out is None else byte_view(out)
        self.size = self.out.nbytes if self.out is not None else size
        self.limit: int = self.size if self.size is not None else int(config.get("max_chunk_bytes"))

    def expected(self) -> str:
        if self.size is not None:
            return f"expected {self.size} bytes"
        return f"expected at most {self.limit} bytes (the zarrdask setting 'max_chunk_bytes')"

    def error(self, found: str, expected: str | None = None) -> CorruptChunkError:
        """The error for a chunk that ``found`` (e.g. "declares 268435456 decoded
        bytes"); ``expected`` replaces the expected size in the message."""
        return CorruptChunkError(f"chunk {self.key!r}: codec {self.codec!r} {found}, {expected or self.expected()}")

    def check(self, declared: int, what: str = "declares") -> None:
        """Refuse a decoded size a header declares, before anything is decoded."""
        exact = self.size is not None
        if (declared != self.size) if exact else not 0 <= declared <= self.limit:
            raise self.error(f"{what} {declared} decoded bytes")

    def buffer(self, nbytes: int) -> memoryview:
        """Where to decode ``nbytes`` (already checked) bytes: ``out``, or a new buffer."""
        if self.out is not None:
            return self.out
        return memoryview(np.empty(nbytes, dtype=np.uint8))

    def collect(self, pieces: Iterator[Any]) -> memoryview | bytes:
        """Write decompressed ``pieces`` one after the other into the output,
        refusing the chunk at the first piece past the limit.

        A negative integer among the pieces drops that many bytes from the end
        (a trailing stream that turned out not to be one, see :func:`stream_pieces`).
        """
        if self.size is not None:
            target, pos = self.buffer(self.size), 0
            for piece in pieces:
                if isinstance(piece, int):
                    pos += piece
                    continue
                end = pos + len(piece)
                if end > self.size:
                    raise self.error(f"decodes to at least {end} bytes (refused there)")
                target[pos:end] = piece
                pos = end
            if pos != self.size:
                raise self.error(f"decodes to {pos} bytes")
            return target
        parts: list[Any] = []
        total = 0
        for piece in pieces:
            if isinstance(piece, int):
                joined = b"".join(parts)
                parts, total = [joined[: len(joined) + piece]], total + piece
                continue
            total += len(piece)
            if total > self.limit:
                raise self.error(f"decodes to at least {total} bytes (refused there)")
            parts.append(piece)
        return b"".join(parts)


class BoundedBytesBytesCodec(BytesBytesCodec):
    """A bytes → bytes codec that decodes within a :class:`DecodeBound`: it
    implements :meth:`decode_within`, and ``decode`` builds the bound."""

    bounded_decode = True

    def decode(
        self,
        data: bytes | memoryview,
        spec: ChunkSpec,
        key: str = "",
        out: memoryview | None = None,
        *,
        size: int | None = None,
    ) -> bytes | memoryview:
        result = self.decode_within(data, spec, DecodeBound(key, self.name, size, out))
        return out if out is not None else result

    def decode_within(self, data: bytes | memoryview, spec: ChunkSpec, bound: DecodeBound) -> Any:
        """Decode ``data`` into ``bound.out`` (when set) or a new buffer, keeping
        to ``bound``; returns what was decoded."""
        raise NotImplementedError


def _slices(mv: memoryview, pos: int) -> tuple[memoryview, int]:
    """The next input slice of at most :data:`STEP` bytes from ``pos``, and the new position."""
    piece = mv[pos : pos + STEP]
    return piece, pos + piece.nbytes


def inflate_pieces(data: Any, wbits: int, *, members: bool) -> Iterator[bytes]:
    """Decompressed pieces (at most :data:`STEP` bytes each) of a DEFLATE stream
    in the container ``wbits`` selects (zlib: 15, gzip: 31).

    ``members``: gzip (RFC 1952 section 2.2, "a series of members"): every
    member is decoded, zero bytes padding the end are skipped, and no data is
    no member (as the standard library's ``gzip.decompress``); otherwise the
    bytes after the first stream are ignored (as ``zlib.decompress``). CRCs and
    lengths in the trailers are checked by zlib. Raises ``zlib.error`` for
    corrupt or truncated data.
    """
    mv = byte_view(data)
    n, pos = mv.nbytes, 0
    feed: Any = b""
    if members and n == 0:
        return
    d = zlib.decompressobj(wbits)
    while True:
        if not feed and pos < n:
            feed, pos = _slices(mv, pos)
        piece = d.decompress(feed, STEP)
        if piece:
            yield piece
        feed = d.unconsumed_tail
        if d.eof:
            if not members:
                return
            feed = d.unused_data.lstrip(b"\x00")
            while not feed and pos < n:  # zero padding after the last member
                feed, pos = _slices(mv, pos)
                feed = bytes(feed).lstrip(b"\x00")
            if not feed:
                return
            d = zlib.decompressobj(wbits)
            continue
        if not feed and pos >= n and len(piece) < STEP:
            raise zlib.error("incomplete or truncated stream")


def stream_pieces(
    make: Callable[[], Any], data: Any, error: type[Exception], *, empty_ok: bool = False
) -> Iterator[bytes | int]:
    """Decompressed pieces (at most :data:`STEP` bytes each) of a sequence of
    bzip2 or lzma streams, read with decompressor objects from ``make()``.

    As the standard library's ``bz2.decompress`` / ``lzma.decompress``: streams
    follow one another; bytes after a stream on which a new decompressor fails
    are ignored (what it produced is taken back with a negative count);
    ``empty_ok``: no data is no stream (bz2). Raises ``error`` (``OSError`` for
    bz2, ``lzma.LZMAError``) for corrupt or truncated data.
    """
    mv = byte_view(data)
    n, pos = mv.nbytes, 0
    if empty_ok and n == 0:
        return
    d = make()
    first, produced = True, 0
    feed: Any = b""
    while True:
        if d.eof:
            feed = d.unused_data
            if not feed and pos >= n:
                return
            d, first, produced = make(), False, 0
            if not feed:
                feed, pos = _slices(mv, pos)
        elif not feed and d.needs_input:
            if pos >= n:
                raise error("Compressed data ended before the end-of-stream marker was reached")
            feed, pos = _slices(mv, pos)
        try:
            piece = d.decompress(feed, STEP)
        except error:
            if first:
                raise
            yield -produced  # leftover that is not a stream: ignored
            return
        feed = b""
        if piece:
            produced += len(piece)
            yield piece
