"""Building and taking apart ``sharding_indexed`` shards by hand (test helper).

Everything here follows zarr-specs ``v3-codecs-sharding-indexed`` ("Binary shard
format") directly with numpy and the ``crc32c`` package, without zarrdask, so
the tests can compare what zarrdask stores against bytes built independently:

- the index is a ``uint64`` array of shape ``chunks_per_shard + (2,)`` of
  ``(offset, nbytes)`` pairs in C order, an empty inner chunk being ``2^64 - 1``
  twice;
- it is encoded with the ``bytes`` codec (little-endian unless told) and,
  optionally, ``crc32c`` (the CRC-32C of the index bytes appended as a
  little-endian ``uint32``);
- it sits at the end (``index_location: "end"``, the default) or the start of
  the shard; offsets are absolute positions in the shard either way.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Iterable, Sequence

import google_crc32c as _crc32c
import numpy as np

MAX = 2**64 - 1

BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
CRC32C = {"name": "crc32c"}


def sharding_config(
    chunk_shape: Sequence[int],
    codecs: Sequence[Any] = (BYTES_LE,),
    *,
    crc: bool = True,
    index_location: str = "end",
    index_endian: str = "little",
) -> dict[str, Any]:
    """The ``sharding_indexed`` codec JSON."""
    index_codecs: list[Any] = [{"name": "bytes", "configuration": {"endian": index_endian}}]
    if crc:
        index_codecs.append(CRC32C)
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": list(chunk_shape),
            "codecs": list(codecs),
            "index_codecs": index_codecs,
            "index_location": index_location,
        },
    }


def index_nbytes(n_inner: int, crc: bool = True) -> int:
    """``16 * n + 4`` with ``crc32c``, ``16 * n`` without."""
    return 16 * n_inner + (4 if crc else 0)


def encode_index(entries: Any, *, crc: bool = True, endian: str = "little") -> bytes:
    """The encoded index: ``uint64`` pairs in C order (+ little-endian CRC-32C)."""
    arr = np.asarray(entries, dtype=np.uint64)
    assert arr.shape[-1] == 2, arr.shape
    raw = arr.astype("<u8" if endian == "little" else ">u8").tobytes(order="C")
    if crc:
        raw += struct.pack("<I", _crc32c.value(bytes(raw)))
    return raw


def build_shard(
    pieces: Sequence[bytes | None],
    *,
    cps: Sequence[int] | None = None,
    index_location: str = "end",
    crc: bool = True,
    endian: str = "little",
    order: Iterable[int] | None = None,
    gaps: Sequence[bytes] | None = None,
    lead: bytes = b"",
    tail: bytes = b"",
) -> bytes:
    """A shard holding ``pieces`` (the encoded inner chunks in C order of their
    grid position; ``None`` = empty).

    ``order`` is the order the pieces are laid out in (default: C order),
    ``gaps[k]`` junk bytes written after the ``k``-th piece laid out, ``lead``
    junk before the first piece (after a start index) and ``tail`` junk after
    the last piece (before an end index).
    """
    n = len(pieces)
    if cps is None:
        cps = (n,)
    assert math.prod(cps) == n
    isz = index_nbytes(n, crc)
    entries = np.full((n, 2), MAX, dtype=np.uint64)
    body = bytearray()
    base = isz if index_location == "start" else 0
    body += lead
    layout = list(range(n)) if order is None else list(order)
    for k, i in enumerate(layout):
        piece = pieces[i]
        if piece is None:
            continue
        entries[i] = (base + len(body), len(piece))
        body += piece
        if gaps is not None and k < len(gaps):
            body += gaps[k]
    body += tail
    index = encode_index(entries.reshape(*cps, 2), crc=crc, endian=endian)
    return index + bytes(body) if index_location == "start" else bytes(body) + index


def parse_shard(
    raw: bytes,
    cps: Sequence[int],
    *,
    index_location: str = "end",
    crc: bool = True,
    endian: str = "little",
) -> tuple[np.ndarray, list[bytes | None]]:
    """``(entries, pieces)`` of a shard: the ``(n, 2)`` index (C order) and each
    inner chunk's bytes (``None`` for an empty one). Checks the CRC-32C and that
    every entry lies inside the shard."""
    n = math.prod(cps)
    isz = index_nbytes(n, crc)
    assert len(raw) >= isz, f"shard of {len(raw)} bytes is shorter than its {isz}-byte index"
    index = raw[:isz] if index_location == "start" else raw[len(raw) - isz :]
    if crc:
        payload, stored = index[:-4], struct.unpack("<I", index[-4:])[0]
        assert _crc32c.value(bytes(payload)) == stored, "index checksum mismatch"
    else:
        payload = index
    entries = np.frombuffer(payload, dtype="<u8" if endian == "little" else ">u8").astype(np.uint64).reshape(n, 2)
    pieces: list[bytes | None] = []
    for off, nb in entries.tolist():
        if off == MAX and nb == MAX:
            pieces.append(None)
            continue
        assert off + nb <= len(raw), f"entry ({off}, {nb}) outside a shard of {len(raw)} bytes"
        pieces.append(raw[off : off + nb])
    return entries, pieces


def layout_order(entries: np.ndarray) -> list[int]:
    """Flat ids of the non-empty inner chunks in the order their bytes appear."""
    flat = np.asarray(entries, dtype=np.uint64).reshape(-1, 2)
    ids = [i for i, (off, nb) in enumerate(flat.tolist()) if not (off == MAX and nb == MAX)]
    return sorted(ids, key=lambda i: int(flat[i, 0]))


def is_compact_c_order(entries: np.ndarray, start: int) -> bool:
    """Non-empty inner chunks laid out back to back from ``start``, in C order."""
    flat = np.asarray(entries, dtype=np.uint64).reshape(-1, 2)
    pos = start
    for off, nb in flat.tolist():
        if off == MAX and nb == MAX:
            continue
        if off != pos:
            return False
        pos += nb
    return True


def inner_blocks(shard: np.ndarray, chunk_shape: Sequence[int]) -> list[np.ndarray]:
    """The inner chunks of a (full-size) shard array, in C order."""
    cps = tuple(s // c for s, c in zip(shard.shape, chunk_shape))
    out = []
    for coords in np.ndindex(*cps):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunk_shape))
        out.append(shard[region])
    return out


def shard_array(data: np.ndarray, coords: Sequence[int], shard_shape: Sequence[int], fill: Any) -> np.ndarray:
    """Shard ``coords`` of ``data`` as a full ``shard_shape`` array, the part
    outside the array padded with ``fill`` (what an edge shard encodes)."""
    out = np.full(tuple(shard_shape), fill, dtype=data.dtype)
    src = tuple(slice(i * s, min((i + 1) * s, n)) for i, s, n in zip(coords, shard_shape, data.shape))
    out[tuple(slice(0, sl.stop - sl.start) for sl in src)] = data[src]
    return out


def is_fill_block(block: np.ndarray, fill: Any) -> bool:
    fill_arr = np.broadcast_to(np.asarray(fill, dtype=block.dtype), block.shape)
    return bool(np.array_equal(block, fill_arr, equal_nan=block.dtype.kind in "fc"))


def count_nonfill_inner(data: np.ndarray, chunk_shape: Sequence[int], fill: Any) -> int:
    """Inner chunks of the array's inner-chunk grid holding a non-fill element."""
    grid = tuple(-(-s // c) for s, c in zip(data.shape, chunk_shape))
    n = 0
    for coords in np.ndindex(*grid):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunk_shape))
        if not is_fill_block(data[region], fill):
            n += 1
    return n
