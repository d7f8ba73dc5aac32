"""The sub-byte integer data types ``int2``, ``int4``, ``uint2``, ``uint4`` (zarr-extensions).

``zarr-extensions/data-types/<name>/README.md``: ranges ``[-2, 1]``, ``[-8, 7]``,
``[0, 3]``, ``[0, 15]``; no configuration; fill value as the core integers (a JSON
integer in range). numpy dtypes: ``ml_dtypes``, one value per byte. The
``bytes`` encoding is that byte, the value in its low 2 or 4 bits (two's
complement for the signed types); the upper bits are ignored on read and written
as zeros, as ``ml_dtypes`` and tensorstore write them (-3 as ``int4`` is
``0x0d``). Zarr v2 has no names for them: writing one is a typed error
(:func:`.small_floats.v3_only`); the names tensorstore's v2 driver writes as
``dtype`` (``"int4"``) are read.
"""

from __future__ import annotations

import numpy as np

from .float_formats import ML_INTS
from .integers import Integer
from .small_floats import MlDtypesFamily

__all__ = ["SmallInteger"]


class SmallInteger(MlDtypesFamily, Integer):
    """``int2`` / ``int4`` / ``uint2`` / ``uint4`` ↔ ``ml_dtypes``."""

    TABLE = ML_INTS
    __slots__ = ()

    def default_fill(self) -> np.generic:
        return self.dtype.type(0)
