"""Chunk grids and chunk key encodings: the chunk arithmetic of an array (no I/O,
no metadata): :class:`ChunkGrid` (:class:`RegularGrid`, :class:`RectilinearGrid`)
and :class:`ChunkKeyEncoding`."""

from .grid import ChunkGrid, RegularGrid, largest_chunk
from .key_encoding import ChunkKeyEncoding
from .rectilinear import RectilinearGrid, dask_chunks, grid_for, is_regular

__all__ = ["ChunkGrid", "RegularGrid", "RectilinearGrid", "ChunkKeyEncoding", "dask_chunks", "grid_for",
           "is_regular", "largest_chunk"]
