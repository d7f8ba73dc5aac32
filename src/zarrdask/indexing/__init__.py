"""Selections and their projection onto chunks."""

from .orthogonal import ChunkProjection, Indexer, normalize_selection

__all__ = ["ChunkProjection", "Indexer", "normalize_selection"]
