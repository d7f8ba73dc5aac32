"""dask integration: ``from_zarr`` (one task per shard or chunk) and a
shard-aligned ``to_zarr`` (every stored object written by exactly one task)."""

from .alignment import aligned_chunks, is_aligned, misaligned_blocks
from .graph import from_zarr
from .writer import AlignmentError, to_zarr

__all__ = ["from_zarr", "to_zarr", "AlignmentError", "aligned_chunks", "is_aligned", "misaligned_blocks"]
