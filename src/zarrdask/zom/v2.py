"""Zarr v2 specs: :class:`ArraySpecV2` and :class:`GroupSpecV2`.

ZEP 6, "Specification of the base Zarr Object Model", specialised with the Zarr
v2 spec (``zarr-specs/v2-v2.0.rst``): a v2 ZOM array has the ``.zarray`` keys
of "Arrays / Metadata" (``shape``, ``chunks``, ``dtype``, ``compressor``,
``fill_value``, ``order``, ``filters``, optionally ``dimension_separator``)
plus ``attributes`` (the ``.zattrs`` document); a v2 ZOM group has
``attributes`` and ``members`` (``.zgroup`` holds only ``zarr_format``).
The JSON key order is the ZEP's v2 example's; :meth:`metadata_document` uses
zarr-python's ``.zarray`` order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MetadataError
from ..metadata.dtypes import default_fill_value, dtype_to_v2, encode_fill_value_v2
from ._frozen import UNSET, FrozenDict, freeze, thaw
from .fields import field_error, int_tuple, json_object
from .spec import ArraySpec, GroupSpec, operations

__all__ = ["ArraySpecV2", "GroupSpecV2"]

_V2_ARRAY_KEYS = ("zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order",
                  "dimension_separator", "filters", "attributes")
_V2_ARRAY_REQUIRED = ("shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters")
#: zarr-python's key order for ``.zarray``
_V2_ZARRAY_ORDER = ("shape", "chunks", "dtype", "fill_value", "order", "filters", "dimension_separator",
                    "compressor", "zarr_format")


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class ArraySpecV2(ArraySpec):
    """A Zarr v2 array: the ``.zarray`` fields plus ``attributes`` (``.zattrs``).

    Parameters
    ----------
    shape, chunks
        Lists of integers.
    dtype
        The v2 ``dtype`` JSON: a typestr such as ``"<f8"`` or a structured list.
    compressor
        A codec configuration ``{"id": ...}`` or ``None``.
    fill_value
        The JSON fill value (``"NaN"``, a base64 string for bytes, ...) or ``None``.
    order
        ``"C"`` or ``"F"``.
    filters
        A list of codec configurations, or ``None``.
    dimension_separator
        ``"."`` or ``"/"``; :data:`UNSET` leaves the field out (it means ``"."``).
    attributes
        User attributes.
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: Any
    compressor: Any = None
    fill_value: Any = None
    order: str = "C"
    filters: Any = None
    dimension_separator: Any = UNSET
    attributes: FrozenDict = field(default_factory=FrozenDict)
    zarr_format: int = 2

    def __post_init__(self) -> None:
        cls, s = type(self), object.__setattr__
        if self.zarr_format != 2 or isinstance(self.zarr_format, bool):
            raise field_error(cls, "zarr_format", self.zarr_format, "2")
        s(self, "shape", int_tuple(cls, "shape", self.shape, 0))
        s(self, "chunks", int_tuple(cls, "chunks", self.chunks, 1))
        if len(self.chunks) != len(self.shape):
            raise field_error(cls, "chunks", self.chunks, f"{len(self.shape)} integers (the rank of 'shape')")
        dtype = freeze(self.dtype, "dtype")
        if not isinstance(dtype, (str, tuple)):
            raise field_error(cls, "dtype", dtype, 'a typestr such as "<f8" or a list of structured fields')
        s(self, "dtype", dtype)
        compressor = freeze(self.compressor, "compressor")
        if compressor is not None and not isinstance(compressor, FrozenDict):
            raise field_error(cls, "compressor", compressor, 'null or a codec configuration {"id": ...}')
        s(self, "compressor", compressor)
        s(self, "fill_value", freeze(self.fill_value, "fill_value"))
        if self.order not in ("C", "F"):
            raise field_error(cls, "order", self.order, '"C" or "F"')
        filters = freeze(self.filters, "filters")
        if filters is not None and not isinstance(filters, (tuple, FrozenDict)):
            raise field_error(cls, "filters", filters, "null or a list of codec configurations")
        s(self, "filters", filters)
        if self.dimension_separator is not UNSET and self.dimension_separator not in (".", "/"):
            raise field_error(cls, "dimension_separator", self.dimension_separator, '"." or "/"')
        s(self, "attributes", json_object(cls, "attributes", self.attributes))

    @classmethod
    def _from_fields(cls, doc: Mapping[str, Any]) -> ArraySpecV2:
        fields = dict(doc)
        if "zarr_version" in fields:
            fields.setdefault("zarr_format", fields.pop("zarr_version"))
        unknown = sorted(set(fields) - set(_V2_ARRAY_KEYS))
        if unknown:
            raise MetadataError(f"ArraySpecV2: unknown field(s) {unknown}; a v2 array has "
                                f"{list(_V2_ARRAY_KEYS)}")
        missing = [k for k in _V2_ARRAY_REQUIRED if k not in fields]
        if missing:
            raise MetadataError(f"ArraySpecV2: missing field(s) {missing} (required by the v2 spec)")
        return cls(**fields)

    def to_json(self) -> dict[str, Any]:
        out = {}
        for key in _V2_ARRAY_KEYS:
            value = getattr(self, key)
            if value is not UNSET:
                out[key] = thaw(value)
        return out

    def metadata_document(self) -> dict[str, Any]:
        """The ``.zarray`` document (zarr-python's key order; attributes not included)."""
        doc = self.to_json()
        return {k: doc[k] for k in _V2_ZARRAY_ORDER if k in doc}

    def to_v3(self) -> ArraySpec:
        """This array converted to Zarr v3 (an :class:`ArraySpecV3`); see
        :func:`zarrdask.zom.convert_v2_to_v3`."""
        return operations().convert_v2_to_v3(self)  # type: ignore[return-value]

    @classmethod
    def _default_fields(cls, shape: tuple[int, ...], dtype: np.dtype, chunks: tuple,
                        attributes: dict[str, Any]) -> dict[str, Any]:
        """:meth:`ArraySpec.from_array`'s v2 array: no compressor, no filters, the type's zero."""
        return dict(shape=shape, chunks=chunks, dtype=dtype_to_v2(dtype), compressor=None,
                    fill_value=encode_fill_value_v2(default_fill_value(dtype), dtype), order="C",
                    filters=None, dimension_separator=".", attributes=attributes)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class GroupSpecV2(GroupSpec):
    """A Zarr v2 group: ``attributes`` (``.zattrs``) and ``members``."""

    attributes: FrozenDict = field(default_factory=FrozenDict)
    members: FrozenDict = field(default_factory=FrozenDict)
    zarr_format: int = 2

    def __post_init__(self) -> None:
        if self.zarr_format != 2 or isinstance(self.zarr_format, bool):
            raise field_error(type(self), "zarr_format", self.zarr_format, "2")
        object.__setattr__(self, "attributes", json_object(type(self), "attributes", self.attributes))
        self._check_members()

    @classmethod
    def _from_fields(cls, doc: Mapping[str, Any], members: dict) -> GroupSpecV2:
        fields = dict(doc)
        if "zarr_version" in fields:
            fields.setdefault("zarr_format", fields.pop("zarr_version"))
        unknown = sorted(set(fields) - {"zarr_format", "attributes"})
        if unknown:
            raise MetadataError(f"GroupSpecV2: unknown field(s) {unknown}; a v2 group has "
                                "'zarr_format', 'attributes' and 'members'")
        return cls(**fields, members=members)

    def to_json(self) -> dict[str, Any]:
        return {"zarr_format": 2, "attributes": thaw(self.attributes), "members": self._json_members()}

    def metadata_document(self) -> dict[str, Any]:
        """The ``.zgroup`` document."""
        return {"zarr_format": 2}
