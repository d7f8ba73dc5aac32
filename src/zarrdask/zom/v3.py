"""Zarr v3 specs: :class:`ArraySpecV3` and :class:`GroupSpecV3`.

ZEP 6, "Specification of the base Zarr Object Model", specialised with Zarr v3
core (``zarr-specs/v3-core.rst``): a v3 ZOM array has the fields of "Array
metadata" (``shape``, ``data_type``, ``chunk_grid``, ``chunk_key_encoding``,
``fill_value``, ``codecs``, optionally ``storage_transformers`` and
``dimension_names``), ``attributes``, and the ``must_understand: false``
extension fields of "Additional fields" (``extra_fields``); a v3 ZOM group has
``attributes``, ``members`` and extension fields. The JSON key order is the
ZEP's v3 example's; :meth:`metadata_document` uses zarr-python's ``zarr.json``
order.

The ZEP's renaming rule for a group metadata field called ``members`` (only an
extension field can be called so in v3) lives here: :func:`_rename_out` /
:func:`_rename_in`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..codecs.bytes_codec import has_endianness
from ..errors import MetadataError
from ..metadata.dtypes import data_type_to_v3, default_fill_value, encode_fill_value_v3
from ..metadata.v3 import rectilinear_json
from ._frozen import UNSET, FrozenDict, freeze, thaw
from .fields import field_error, int_tuple, json_object
from .spec import ArraySpec, GroupSpec

__all__ = ["ArraySpecV3", "GroupSpecV3"]

#: the ``chunk_key_encoding`` of a v3 array that names none
_DEFAULT_CHUNK_KEY_ENCODING = FrozenDict(name="default", configuration=FrozenDict(separator="/"))


# --- members renaming (ZEP 6, "Specification of the base Zarr Object Model")
def _rename_out(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Zarr group fields → ZOM keys: ``members`` becomes the first free ``_…_members``."""
    if "members" not in fields:
        return dict(fields)
    k = 1
    while "_" * k + "members" in fields:
        k += 1
    new = "_" * k + "members"
    return {(new if key == "members" else key): value for key, value in fields.items()}


def _rename_in(fields: Mapping[str, Any]) -> dict[str, Any]:
    """ZOM keys (other than ``members``) → Zarr group fields; the inverse of :func:`_rename_out`."""
    k = 0
    while "_" * (k + 1) + "members" in fields:
        k += 1
    if k == 0:
        return dict(fields)
    renamed = "_" * k + "members"
    return {("members" if key == renamed else key): value for key, value in fields.items()}


_V3_ARRAY_KEYS = ("zarr_format", "node_type", "attributes", "shape", "data_type", "chunk_grid",
                  "chunk_key_encoding", "fill_value", "codecs", "storage_transformers", "dimension_names")
_V3_ARRAY_REQUIRED = ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs")
#: zarr-python's key order for an array's ``zarr.json``
_V3_ZARR_JSON_ORDER = ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs",
                       "attributes", "dimension_names", "zarr_format", "node_type", "storage_transformers")


def _extra_fields(cls: type, value: Any) -> FrozenDict:
    extra = json_object(cls, "extra_fields", value)
    for key, v in extra.items():
        if not isinstance(v, FrozenDict):
            raise field_error(cls, key, v, 'no such field, or an extension object with "must_understand": false '
                                     '(v3 core "Additional fields")')
    return extra


def _extension(cls: type, name: str, value: Any) -> Any:
    value = freeze(value, name)
    if not isinstance(value, (str, FrozenDict)):
        raise field_error(cls, name, value, 'a name or an object {"name": ..., "configuration": ...}')
    return value


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class ArraySpecV3(ArraySpec):
    """A Zarr v3 array: the array ``zarr.json`` fields; ``attributes`` included.

    Parameters
    ----------
    shape
        List of integers.
    data_type
        The v3 ``data_type`` JSON (``"float64"``, ``{"name": "numpy.datetime64", ...}``).
    chunk_grid
        ``{"name": "regular", "configuration": {"chunk_shape": [...]}}``, or
        ``{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [...]}}``
        (zarr-extensions ``chunk-grids/rectilinear``: per-axis edge lengths).
    chunk_key_encoding
        Default ``{"name": "default", "configuration": {"separator": "/"}}``.
    fill_value
        The JSON fill value.
    codecs
        List of codec objects (``{"name": ..., "configuration": ...}``).
    storage_transformers, dimension_names
        Optional; :data:`UNSET` leaves the field out.
    attributes
        User attributes.
    extra_fields
        Extension fields (``{"must_understand": false, ...}`` objects) by name.
    """

    shape: tuple[int, ...]
    data_type: Any
    chunk_grid: Any
    chunk_key_encoding: Any = _DEFAULT_CHUNK_KEY_ENCODING
    fill_value: Any
    codecs: tuple
    storage_transformers: Any = UNSET
    dimension_names: Any = UNSET
    attributes: FrozenDict = field(default_factory=FrozenDict)
    extra_fields: FrozenDict = field(default_factory=FrozenDict)
    zarr_format: int = 3

    def __post_init__(self) -> None:
        cls, s = type(self), object.__setattr__
        if self.zarr_format != 3 or isinstance(self.zarr_format, bool):
            raise field_error(cls, "zarr_format", self.zarr_format, "3")
        s(self, "shape", int_tuple(cls, "shape", self.shape, 0))
        s(self, "data_type", _extension(cls, "data_type", self.data_type))
        s(self, "chunk_grid", _extension(cls, "chunk_grid", self.chunk_grid))
        s(self, "chunk_key_encoding", _extension(cls, "chunk_key_encoding", self.chunk_key_encoding))
        s(self, "fill_value", freeze(self.fill_value, "fill_value"))
        codecs = freeze(self.codecs, "codecs")
        if not isinstance(codecs, tuple) or not all(isinstance(c, (str, FrozenDict)) for c in codecs):
            raise field_error(cls, "codecs", codecs, "a list of codec objects")
        s(self, "codecs", codecs)
        if self.storage_transformers is not UNSET:
            st = freeze(self.storage_transformers, "storage_transformers")
            if st is not None and not isinstance(st, tuple):
                raise field_error(cls, "storage_transformers", st, "null or a list of extension objects")
            s(self, "storage_transformers", st)
        if self.dimension_names is not UNSET:
            dn = freeze(self.dimension_names, "dimension_names")
            if dn is not None and (not isinstance(dn, tuple) or not all(d is None or isinstance(d, str)
                                                                        for d in dn)):
                raise field_error(cls, "dimension_names", dn, "null or a list of strings or nulls")
            s(self, "dimension_names", dn)
        s(self, "attributes", json_object(cls, "attributes", self.attributes))
        s(self, "extra_fields", _extra_fields(cls, self.extra_fields))

    @classmethod
    def _from_fields(cls, doc: Mapping[str, Any]) -> ArraySpecV3:
        fields = dict(doc)
        if fields.pop("node_type", "array") != "array":
            raise MetadataError(f"ArraySpecV3: field 'node_type': found {doc['node_type']!r}, expected 'array'")
        missing = [k for k in _V3_ARRAY_REQUIRED if k not in fields]
        if missing:
            raise MetadataError(f"ArraySpecV3: missing field(s) {missing} (required by v3 core "
                                "'Array metadata')")
        extra = {k: fields.pop(k) for k in list(fields) if k not in _V3_ARRAY_KEYS}
        return cls(**fields, extra_fields=extra)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in _V3_ARRAY_KEYS:
            value = self.node_type if key == "node_type" else getattr(self, key)
            if value is not UNSET:
                out[key] = thaw(value)
        out.update(thaw(self.extra_fields))
        return out

    def metadata_document(self) -> dict[str, Any]:
        """The array's ``zarr.json`` (zarr-python's key order)."""
        doc = self.to_json()
        out = {k: doc.pop(k) for k in _V3_ZARR_JSON_ORDER if k in doc}
        out.update(doc)
        return out

    @classmethod
    def _default_fields(cls, shape: tuple[int, ...], dtype: np.dtype, chunks: tuple,
                        attributes: dict[str, Any]) -> dict[str, Any]:
        """:meth:`ArraySpec.from_array`'s v3 array: a regular chunk grid (or a
        rectilinear one where an axis lists edge lengths), the default chunk key
        encoding, the ``bytes`` codec in the byte order of ``dtype``, the type's zero."""
        native = dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype
        endian = {"<": "little", ">": "big"}.get(dtype.byteorder, "little" if np.little_endian else "big")
        serializer = {"name": "bytes", "configuration": {"endian": endian}} if has_endianness(dtype) \
            else {"name": "bytes"}
        if all(isinstance(c, int) for c in chunks):
            grid = {"name": "regular", "configuration": {"chunk_shape": list(chunks)}}
        else:
            grid = rectilinear_json(chunks)
        return dict(shape=shape, data_type=data_type_to_v3(native), chunk_grid=grid,
                    chunk_key_encoding=_DEFAULT_CHUNK_KEY_ENCODING,
                    fill_value=encode_fill_value_v3(default_fill_value(native), native),
                    codecs=[serializer], attributes=attributes)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class GroupSpecV3(GroupSpec):
    """A Zarr v3 group: ``attributes``, ``members`` and extension fields."""

    attributes: FrozenDict = field(default_factory=FrozenDict)
    members: FrozenDict = field(default_factory=FrozenDict)
    extra_fields: FrozenDict = field(default_factory=FrozenDict)
    zarr_format: int = 3

    def __post_init__(self) -> None:
        cls = type(self)
        if self.zarr_format != 3 or isinstance(self.zarr_format, bool):
            raise field_error(cls, "zarr_format", self.zarr_format, "3")
        object.__setattr__(self, "attributes", json_object(cls, "attributes", self.attributes))
        object.__setattr__(self, "extra_fields", _extra_fields(cls, self.extra_fields))
        self._check_members()

    @classmethod
    def _from_fields(cls, doc: Mapping[str, Any], members: dict) -> GroupSpecV3:
        fields = dict(doc)
        if fields.pop("node_type", "group") != "group":
            raise MetadataError(f"GroupSpecV3: field 'node_type': found {doc['node_type']!r}, expected 'group'")
        fields.pop("consolidated_metadata", None)  # an index of the members, not structure
        extra = _rename_in({k: fields.pop(k) for k in list(fields) if k not in ("zarr_format", "attributes")})
        return cls(**fields, members=members, extra_fields=extra)

    def to_json(self) -> dict[str, Any]:
        out = {"zarr_format": 3, "node_type": "group", "attributes": thaw(self.attributes),
               "members": self._json_members()}
        out.update(_rename_out(thaw(self.extra_fields)))
        return out

    def metadata_document(self) -> dict[str, Any]:
        """The group's ``zarr.json`` (zarr-python's key order)."""
        return {"attributes": thaw(self.attributes), "zarr_format": 3, "node_type": "group",
                **thaw(self.extra_fields)}
