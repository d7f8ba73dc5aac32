"""Zarr metadata documents (v2 ``.zarray``/``.zgroup``, v3 ``zarr.json``) and data types.

Pure data with no I/O: ``from_json(dict)`` validates and decodes a document,
``to_json()`` gives it back. See :mod:`.dtypes`, :mod:`.v2`, :mod:`.v3` and
:mod:`.limits` (what a document may declare).
"""

from .dtypes import (
    data_type_to_v3,
    decode_fill_value_v2,
    decode_fill_value_v3,
    default_fill_value,
    dtype_to_v2,
    encode_fill_value_v2,
    encode_fill_value_v3,
    fill_values_equal,
    normalize_fill_value,
    parse_data_type_v3,
    parse_dtype_v2,
)
from .v2 import ArrayMetadataV2, GroupMetadataV2
from .v3 import (
    ArrayMetadataV3,
    ChunkKeyEncodingSpec,
    GroupMetadataV3,
    InvalidNodeNameError,
    validate_node_name,
)

__all__ = [
    "ArrayMetadataV2",
    "ArrayMetadataV3",
    "ChunkKeyEncodingSpec",
    "GroupMetadataV2",
    "GroupMetadataV3",
    "InvalidNodeNameError",
    "data_type_to_v3",
    "decode_fill_value_v2",
    "decode_fill_value_v3",
    "default_fill_value",
    "dtype_to_v2",
    "encode_fill_value_v2",
    "encode_fill_value_v3",
    "fill_values_equal",
    "normalize_fill_value",
    "parse_data_type_v3",
    "parse_dtype_v2",
    "validate_node_name",
]
