"""Chunk grids and chunk key encodings."""

from .grid import RegularGrid
from .key_encoding import ChunkKeyEncoding
from .rectilinear import RectilinearGrid, dask_chunks, grid_for, is_regular

__all__ = ["RegularGrid", "RectilinearGrid", "ChunkKeyEncoding", "dask_chunks", "grid_for", "is_regular"]
