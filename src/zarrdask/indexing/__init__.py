"""Selections and their projection onto chunks."""

from .orthogonal import ChunkIndexer, ChunkProjection, Indexer, normalize_selection

__all__ = ["ChunkIndexer", "ChunkProjection", "Indexer", "normalize_selection"]
