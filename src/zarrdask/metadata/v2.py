"""Zarr v2 metadata documents: ``.zarray`` and ``.zgroup``.

Spec: ``zarr-specs/v2-v2.0.rst``, sections "Arrays / Metadata" (the keys
``zarr_format``, ``shape``, ``chunks``, ``dtype``, ``compressor``,
``fill_value``, ``order``, ``filters`` MUST be present, ``dimension_separator``
MAY be present and defaults to ``"."``; "Other keys SHOULD NOT be present ...
and SHOULD be ignored by implementations") and "Hierarchies / Groups"
(``.zgroup`` holds ``zarr_format`` and "Other keys MUST NOT be present").

Choices:

* Unknown keys in ``.zarray`` are ignored on read and not written back.
* Unknown keys in ``.zgroup`` are tolerated and ignored on read (the spec says
  they MUST NOT be present, but refusing to open a group written by a sloppy
  writer helps nobody); :meth:`GroupMetadataV2.to_json` writes only
  ``{"zarr_format": 2}``.
* ``to_json`` always writes ``dimension_separator`` and uses zarr-python's key
  order (``shape, chunks, dtype, fill_value, order, filters,
  dimension_separator, compressor, zarr_format``). ``ArrayMetadataV2.from_json(d)
  .to_json()`` equals ``d`` for documents zarr-python writes; for others it is
  equivalent (unknown keys dropped, ``dimension_separator`` added, legacy fill
  values such as ``0`` for ``|S`` rewritten in spec form).
* Attributes (``.zattrs``) are a separate document and not modelled here.
* Shapes, ranks, chunk sizes and data type sizes are bounded (:mod:`.limits`):
  a document beyond them is a :class:`~zarrdask.errors.MetadataError`.

Example (from the spec)::

    {"chunks": [1000, 1000], "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
     "dtype": "<f8", "fill_value": "NaN", "filters": [{"id": "delta", "dtype": "<f8", "astype": "<f4"}],
     "order": "C", "shape": [10000, 10000], "zarr_format": 2}
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import MetadataError
from .json_checks import MISSING, field_error, is_json_int, require_dict
from ..chunking import ChunkGrid, ChunkKeyEncoding, RegularGrid
from .dtypes import (
    decode_fill_value_v2,
    default_fill_value,
    vlen_dtype_v2,
    vlen_fill_value_v2,
    dtype_to_v2,
    encode_fill_value_v2,
    fill_values_equal,
    normalize_fill_value,
    parse_dtype_v2,
)
from .limits import check_chunk_bytes, parse_shape

__all__ = ["ArrayMetadataV2", "GroupMetadataV2"]

_ARRAY_KEYS = ("zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters")


def _codec_config(value: Any, key: str, name: str) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or not value["id"]:
        raise field_error(key, name, value, 'a codec configuration object with an "id" string')
    return value


@dataclass(frozen=True, eq=False)
class ArrayMetadataV2:
    """A v2 ``.zarray`` document.

    Parameters
    ----------
    shape, chunks
        Array and chunk shape (same rank; chunks > 0).
    dtype
        numpy dtype (byte order as stored).
    compressor
        Codec configuration with an ``"id"``, or ``None``.
    fill_value
        Decoded fill value (numpy scalar), or ``None`` (no fill value).
    order
        ``"C"`` or ``"F"``.
    filters
        Tuple of codec configurations, or ``None``.
    dimension_separator
        ``"."`` (default) or ``"/"``.
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype
    compressor: dict | None
    fill_value: Any
    order: Literal["C", "F"] = "C"
    filters: tuple[dict, ...] | None = None
    dimension_separator: Literal[".", "/"] = "."
    zarr_format: Literal[2] = 2

    def __post_init__(self) -> None:
        self._validate(".zarray")

    def _validate(self, key: str, parsed: bool = False) -> None:
        """Check and normalise the fields; ``parsed``: they come from
        :meth:`from_json`, which has checked the shapes, the codec
        configurations and the format already."""
        s = object.__setattr__
        if not parsed:
            s(self, "shape", parse_shape(self.shape, key, "shape", minimum=0))
            s(self, "chunks", parse_shape(self.chunks, key, "chunks", minimum=1))
        if len(self.shape) != len(self.chunks):
            raise MetadataError(
                f"{key}: field 'chunks': found {list(self.chunks)} (rank {len(self.chunks)}), expected the "
                f"rank of 'shape' {list(self.shape)} ({len(self.shape)})")
        if not isinstance(self.dtype, np.dtypes.StringDType):
            s(self, "dtype", np.dtype(self.dtype))
        check_chunk_bytes(self.chunks, self.dtype, key, "chunks")
        if self.compressor is not None and not parsed:
            _codec_config(self.compressor, key, "compressor")
        if self.filters is not None and not parsed:
            if not isinstance(self.filters, (list, tuple)):
                raise field_error(key, "filters", self.filters, "null or a list of codec configuration objects")
            s(self, "filters", tuple(_codec_config(f, key, f"filters[{i}]") for i, f in enumerate(self.filters)))
        if self.order not in ("C", "F"):
            raise field_error(key, "order", self.order, '"C" or "F"')
        if self.dimension_separator not in (".", "/"):
            raise field_error(key, "dimension_separator", self.dimension_separator, '"." or "/"')
        if not parsed and (self.zarr_format != 2 or not is_json_int(self.zarr_format)):
            raise field_error(key, "zarr_format", self.zarr_format, "2")
        s(self, "fill_value", normalize_fill_value(self.fill_value, self.dtype, key=key))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    # -- the array, format-independent (as ArrayMetadataV3 gives it) ------------------
    @property
    def grid(self) -> ChunkGrid:
        """The chunk grid (v2 grids are regular)."""
        return RegularGrid(self.shape, self.chunks)

    @property
    def key_encoding(self) -> ChunkKeyEncoding:
        """Chunk keys: the coordinates joined by ``dimension_separator``."""
        return ChunkKeyEncoding("v2", self.dimension_separator)

    @property
    def memory_dtype(self) -> Any:
        """The dtype of the data in memory: ``StringDType`` for ``"|O"`` with
        ``vlen-utf8`` (as zarr-python 3 reads it), else :attr:`dtype`."""
        return vlen_dtype_v2(self.dtype, self.filters)

    @property
    def dimension_names(self) -> None:
        """v2 has no dimension names (xarray keeps them in ``_ARRAY_DIMENSIONS``)."""
        return None

    @property
    def objects_are_bytes(self) -> bool:
        """Whether an ``object`` array holds bytes only: not for ``"|O"`` arrays
        whose object codec is not ``vlen-bytes`` (``json2``, ``pickle``, ...)."""
        return not (self.dtype.kind == "O" and (self.filters or ({},))[0].get("id") != "vlen-bytes")

    def read_fill_value(self, key: str = ".zarray") -> Any:
        """The value unwritten elements read as: ``null`` is the type's zero;
        for ``"|O"`` arrays the value the object codec's fill stands for."""
        if self.dtype.kind == "O":
            return vlen_fill_value_v2(self.fill_value, self.memory_dtype, self.filters, key=key)
        return default_fill_value(self.dtype) if self.fill_value is None else self.fill_value

    @classmethod
    def from_json(cls, doc: Any, *, key: str = ".zarray", owned: bool = False) -> ArrayMetadataV2:
        """Parse and validate a ``.zarray`` document (a dict); ``key`` names it in errors.

        The codec configurations are copied unless ``owned=True``: then ``doc``
        is handed over (a document just decoded, which nobody mutates
        afterwards) and they are kept as they are."""
        require_dict(doc, key, "array metadata")
        for name in _ARRAY_KEYS:
            if name not in doc:
                raise field_error(key, name, MISSING, "a value (required by the v2 spec)")
        if doc["zarr_format"] != 2 or not is_json_int(doc["zarr_format"]):
            raise field_error(key, "zarr_format", doc["zarr_format"], "2")
        shape = parse_shape(doc["shape"], key, "shape", minimum=0)
        chunks = parse_shape(doc["chunks"], key, "chunks", minimum=1)
        dtype = parse_dtype_v2(doc["dtype"], key=key)
        compressor = doc["compressor"]
        if compressor is not None:
            compressor = _codec_config(compressor, key, "compressor")
        filters = doc["filters"]
        if filters is not None:
            if not isinstance(filters, list):
                raise field_error(key, "filters", filters, "null or a list of codec configuration objects")
            filters = tuple(_codec_config(f, key, f"filters[{i}]") for i, f in enumerate(filters))
        if not owned:
            compressor, filters = copy.deepcopy((compressor, filters))
        sep = doc.get("dimension_separator", ".")
        if sep is None:  # some writers emitted null for "not set"
            sep = "."
        fill = decode_fill_value_v2(doc["fill_value"], dtype, key=key)
        meta = cls.__new__(cls)
        for name, value in (("shape", shape), ("chunks", chunks), ("dtype", dtype),
                            ("compressor", compressor), ("fill_value", fill), ("order", doc["order"]),
                            ("filters", filters), ("dimension_separator", sep), ("zarr_format", 2)):
            object.__setattr__(meta, name, value)
        meta._validate(key, parsed=True)
        return meta

    def to_json(self) -> dict:
        """The ``.zarray`` document (zarr-python key order, spec-form fill value)."""
        return {
            "shape": list(self.shape),
            "chunks": list(self.chunks),
            "dtype": dtype_to_v2(self.dtype),
            "fill_value": encode_fill_value_v2(self.fill_value, self.dtype),
            "order": self.order,
            "filters": None if self.filters is None else copy.deepcopy(list(self.filters)),
            "dimension_separator": self.dimension_separator,
            "compressor": copy.deepcopy(self.compressor),
            "zarr_format": 2,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayMetadataV2):
            return NotImplemented
        return (
            (self.shape, self.chunks, self.dtype, self.compressor, self.order, self.filters,
             self.dimension_separator)
            == (other.shape, other.chunks, other.dtype, other.compressor, other.order, other.filters,
                other.dimension_separator)
            and fill_values_equal(self.fill_value, other.fill_value)
        )

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True))


@dataclass(frozen=True)
class GroupMetadataV2:
    """A v2 ``.zgroup`` document: ``{"zarr_format": 2}``.

    Other keys MUST NOT be present per the spec; on read they are tolerated and
    ignored (see the module docstring).
    """

    zarr_format: Literal[2] = field(default=2)

    def __post_init__(self) -> None:
        if self.zarr_format != 2 or not is_json_int(self.zarr_format):
            raise field_error(".zgroup", "zarr_format", self.zarr_format, "2")

    @classmethod
    def from_json(cls, doc: Any, *, key: str = ".zgroup") -> GroupMetadataV2:
        """Parse a ``.zgroup`` document; ``key`` names it in errors."""
        require_dict(doc, key, "group metadata")
        if "zarr_format" not in doc:
            raise field_error(key, "zarr_format", MISSING, "2")
        if doc["zarr_format"] != 2 or not is_json_int(doc["zarr_format"]):
            raise field_error(key, "zarr_format", doc["zarr_format"], "2")
        return cls()

    def to_json(self) -> dict:
        return {"zarr_format": 2}
