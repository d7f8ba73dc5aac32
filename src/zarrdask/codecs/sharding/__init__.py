"""The ``sharding_indexed`` codec (zarr-specs ``v3-codecs-sharding-indexed``, ZEP 2)."""

from .codec import ShardingCodec
from .index import MAX_UINT64, ShardIndex

__all__ = ["ShardingCodec", "ShardIndex", "MAX_UINT64"]
