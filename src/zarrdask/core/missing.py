"""Strict reads: which missing chunks a read needed, and the error naming them.

Zarr reads a chunk that is not stored as the fill value (Zarr v2 spec
"Chunks"; zarr-specs v3 core, "Chunk storage"), and a shard's inner chunk whose
index entry is empty (offset and nbytes both ``2^64 - 1``, zarr-specs
``v3-codecs-sharding-indexed``) the same way. A read with the array option
``read_missing_chunks=False`` (zarr-python 3's name) refuses them instead: the
chunk engine notes every chunk it found missing while the read went on
(:class:`Missing`), then raises one
:class:`~zarrdask.errors.ChunkNotFoundError` naming the store, the array and
every key (at most :data:`SHOWN` of them; the count of the others).

Nothing here asks the store anything: a read finds a chunk missing from what
its fetch returned (no value, or a shard index with empty entries), so strict
reads cost no request more than reads that fill.
"""

from __future__ import annotations

import threading
from typing import Iterable

from ..errors import ChunkNotFoundError
from ..indexing import ChunkProjection
from ..storage.abc import Store
from .layout import ArrayLayout

__all__ = ["SHOWN", "Missing", "missing_error"]

#: missing chunks a ChunkNotFoundError's message names (it counts the others)
SHOWN = 10


def _name(key: str, inner: tuple[int, ...] | None) -> str:
    return repr(key) if inner is None else f"shard {key!r} inner chunk {list(inner)}"


def missing_error(store: Store, path: str, missing: Iterable[tuple[str, tuple[int, ...] | None]]) -> ChunkNotFoundError:
    """The error of a strict read that found the chunks ``missing`` (``(key,
    inner)``: ``inner`` the grid position of a shard's empty inner chunk, else
    ``None``) not stored in array ``path`` of ``store``."""
    missing = sorted(dict.fromkeys(missing), key=lambda m: (m[0], m[1] or ()))
    shown = ", ".join(_name(k, i) for k, i in missing[:SHOWN])
    more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
    what = "chunk is" if len(missing) == 1 else "chunks are"
    return ChunkNotFoundError(
        f"{store!r}: array {'/' + path!r}: {len(missing)} {what} not stored: {shown}{more}. "
        "Reading with read_missing_chunks=False refuses missing chunks (Zarr reads them as the fill "
        "value); open the array with read_missing_chunks=True, or set "
        "zarrdask.config.set(read_missing_chunks=True), to read them as the fill value",
        missing,
    )


class Missing:
    """The missing chunks one strict read has found so far (thread-safe)."""

    def __init__(self, layout: ArrayLayout) -> None:
        self.layout = layout
        self.found: list[tuple[str, tuple[int, ...] | None]] = []
        self._lock = threading.Lock()

    def add(self, key: str, inner: tuple[int, ...] | None = None) -> None:
        with self._lock:
            self.found.append((key, inner))

    def add_inner(self, proj: ChunkProjection, shape: tuple[int, ...], error: ChunkNotFoundError) -> bool:
        """Note the empty inner chunks ``error`` lists that the projection
        ``proj`` of a shard of ``shape`` needs; whether there were any (else
        the read may decode the shard filling them: an edge shard's inner
        chunks past the array's end are not stored). When array→array codecs
        come before the sharding codec, the inner grid is theirs: every one counts."""
        listed = [(k, i) for k, i in error.missing if i is not None]
        sharding = self.layout.sharding
        if sharding is not None and not self.layout.codec.array_array:
            needed = {tuple(p.coords) for p in proj.inner_indexer(shape, sharding.chunk_shape)}
            listed = [(k, i) for k, i in listed if i in needed]
        with self._lock:
            self.found.extend(listed)
        return bool(listed)

    def raise_if_any(self, store: Store) -> None:
        if self.found:
            raise missing_error(store, self.layout.prefix.rstrip("/"), self.found)

    @staticmethod
    def named(store: Store, layout: ArrayLayout, error: ChunkNotFoundError) -> ChunkNotFoundError:
        """``error`` (raised below the engine, which did not name the store) naming the store and the array."""
        return missing_error(store, layout.prefix.rstrip("/"), error.missing)

