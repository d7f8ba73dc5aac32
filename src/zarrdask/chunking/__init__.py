"""Chunk grids and chunk key encodings."""

from .grid import RegularGrid
from .key_encoding import ChunkKeyEncoding

__all__ = ["RegularGrid", "ChunkKeyEncoding"]
