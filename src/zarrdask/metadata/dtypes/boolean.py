"""The ``bool`` data type.

v2: typestr ``"|b1"``; fill value ``true`` / ``false`` (zarr-python 2 also
wrote ``0`` / ``1``, read here) — ``zarr-specs/v2-v2.0.rst`` "Data type
encoding", "Fill value encoding". v3: core type ``bool``; fill value a JSON
boolean — ``zarr-specs/v3-data-types.rst`` "Core data types", "Permitted fill
values".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..json_checks import field_error, is_json_int
from .base import CoreType

__all__ = ["Bool"]


class Bool(CoreType):
    """``bool`` ↔ numpy ``bool``."""

    V3_CORE_NAMES = ("bool",)
    V2_KINDS = ("b",)
    NUMPY_KINDS = ("b",)
    V2_SIZES = (1,)
    __slots__ = ()

    def to_v3(self, struct_name: str | None = None) -> str:
        return "bool"

    def coerce_fill(self, value: Any, key: str, field: str) -> np.bool_:
        if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
            return np.bool_(bool(value))
        raise field_error(key, field, value, "a boolean for bool")

    def fill_from_v2(self, doc: Any, key: str, field: str) -> np.bool_:
        if isinstance(doc, bool) or (is_json_int(doc) and doc in (0, 1)):
            return np.bool_(bool(doc))
        raise field_error(key, field, doc, "true or false for bool")

    def fill_from_v3(self, doc: Any, key: str, field: str) -> np.bool_:
        if not isinstance(doc, bool):
            raise field_error(key, field, doc, "true or false for bool")
        return np.bool_(doc)

    def fill_to_v2(self, value: Any) -> bool:
        return bool(value)

    fill_to_v3 = fill_to_v2
