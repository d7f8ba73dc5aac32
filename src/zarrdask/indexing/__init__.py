"""Selections and their projection onto chunks."""

from .coordinate import CoordinateIndexer, PointProjection, selection_kind
from .orthogonal import ChunkIndexer, ChunkProjection, Indexer, normalize_selection

__all__ = [
    "ChunkIndexer",
    "ChunkProjection",
    "CoordinateIndexer",
    "Indexer",
    "PointProjection",
    "normalize_selection",
    "selection_kind",
]
