"""Zarr metadata documents (v2 ``.zarray``/``.zgroup``, v3 ``zarr.json``) and data types.

Pure data with no I/O: ``from_json(dict)`` validates and decodes a document,
``to_json()`` gives it back. See :mod:`.dtypes`, :mod:`.v2`, :mod:`.v3` and
:mod:`.limits` (what a document may declare).
"""

from .dtypes.api import *  # noqa: F403 - the data-type functions, listed in dtypes.api.__all__
from .dtypes.api import __all__ as _data_type_functions
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
    "validate_node_name",
    *(name for name in _data_type_functions if name != "resolve_data_type_v3"),
]
