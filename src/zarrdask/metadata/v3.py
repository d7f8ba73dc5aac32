"""Zarr v3 metadata documents: ``zarr.json`` for arrays and groups.

Spec: ``zarr-specs/v3-core.rst`` sections "Array metadata" (mandatory
``zarr_format``, ``node_type``, ``shape``, ``data_type``, ``chunk_grid``,
``chunk_key_encoding``, ``fill_value``, ``codecs``; optional ``attributes``,
``storage_transformers``, ``dimension_names``), "Group metadata", "Additional
fields" (an implementation MUST fail to open a node with an unknown field not
marked ``"must_understand": false``; groups may carry ``consolidated_metadata``),
"Extension definition" (objects ``{"name", "configuration"?}`` or short-hand
names; ``must_understand=false`` is not supported for data type, chunk grid and
chunk key encoding) and "Node names"; ``v3-chunk-grids-regular-grid.rst``
(``{"name": "regular", "configuration": {"chunk_shape": [...]}}``);
``v3-chunk-key-encodings-default.rst`` (separator defaults to ``"/"``) and
``v3-chunk-key-encodings-v2.rst`` (separator defaults to ``"."``).

Round trip: ``ArrayMetadataV3.from_json(d).to_json() == d`` for every valid
document. The parsed object remembers the JSON it came from (``_source``) and
reuses the original form of each field whose value is unchanged — the data
type (``"structured"`` vs ``"struct"``, ``r32`` vs ``raw_bytes``, ``"μs"``),
the fill value (hex NaN payloads, ``1`` vs ``1.0``), short-hand names, absent
vs empty ``attributes`` / ``storage_transformers``, key order. A document built
in code gets canonical JSON, laid out as zarr-python 3.1.6 writes it.

Codecs are kept as the raw JSON given (``dict`` or short-hand ``str``); codec
objects are built in ``zarrdask.codecs``. No storage transformers are
supported: a non-empty ``storage_transformers`` list is an error.

Shapes, ranks, chunk sizes and data type sizes are bounded (:mod:`.limits`); a
document beyond them is a :class:`~zarrdask.errors.MetadataError`.

Example (v3-core.rst)::

    {"zarr_format": 3, "node_type": "array", "shape": [10000, 1000],
     "dimension_names": ["rows", "columns"], "data_type": "float64",
     "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1000, 100]}},
     "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
     "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
     "fill_value": "NaN", "attributes": {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]}}
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..chunking import ChunkGrid, ChunkKeyEncoding, grid_for
from ..errors import InvalidKeyError, MetadataError
from .json_checks import MISSING, field_error, is_json_int, require_dict
from .dtypes import (
    data_type_to_v3,
    decode_fill_value_v3,
    encode_fill_value_v3,
    fill_values_equal,
    normalize_fill_value,
    resolve_data_type_v3,
)
from .chunk_grids import (
    GRID_NAMES,
    check_coverage,
    check_rank,
    field_of,
    grid_json,
    largest_chunk,
    parse_chunks,
    parse_configuration,
    rectilinear_json,
)
from .limits import check_chunk_bytes, parse_shape

__all__ = [
    "ArrayMetadataV3",
    "GroupMetadataV3",
    "ChunkKeyEncodingSpec",
    "InvalidNodeNameError",
    "validate_node_name",
    "largest_chunk",
    "rectilinear_json",
]

_ARRAY_REQUIRED = ("zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding",
                   "fill_value", "codecs")
_ARRAY_OPTIONAL = ("attributes", "storage_transformers", "dimension_names")
_SHARDING = "sharding_indexed"  # its chunks are shards, whose inner chunks it bounds itself
_GROUP_KNOWN = ("zarr_format", "node_type", "attributes", "consolidated_metadata")
_EXTENSION_KEYS = frozenset({"name", "configuration", "must_understand"})


class InvalidNodeNameError(InvalidKeyError, MetadataError):
    """A node name breaks the v3-core "Node names" rules (both an InvalidKeyError and a MetadataError)."""


#: Names that start with the reserved prefix ``"__"`` and are accepted anyway:
#: xarray's convention names an unnamed DataArray ``__xarray_dataarray_variable__``
#: and a variable named ``None`` ``__values__``; zarr-python writes them in v3 and
#: xarray reads them back, so a Dataset written by zarrdask round-trips as one
#: written by xarray's own engine (a deliberate exception, docs/differences.md).
XARRAY_RESERVED_NAMES = frozenset({"__xarray_dataarray_variable__", "__values__"})


def validate_node_name(name: Any) -> str:
    """Check a (non-root) node name against v3-core "Node names"; return it.

    Enforces the MUSTs only: a non-empty string, no ``"/"``, not made only of
    periods (``"."``, ``".."``), not starting with the reserved ``"__"`` (but
    for :data:`XARRAY_RESERVED_NAMES`), not ``"zarr.json"``. The recommended
    character set is not enforced.
    """
    problem = None
    if not isinstance(name, str):
        problem = "a string"
    elif name == "":
        problem = "a non-empty string"
    elif "/" in name:
        problem = 'a name without "/"'
    elif set(name) == {"."}:
        problem = "a name not made only of periods"
    elif name.startswith("__") and name not in XARRAY_RESERVED_NAMES:
        problem = 'a name not starting with the reserved prefix "__"'
    elif name == "zarr.json":
        problem = 'a name other than "zarr.json"'
    if problem:
        raise InvalidNodeNameError(f"node name: found {name!r}, expected {problem} (v3-core \"Node names\")")
    return name



def _extension_object(value: Any, key: str, name: str, allowed_names: tuple[str, ...] | None,
                      *, allow_optional: bool) -> tuple[str, dict | None]:
    """Validate an extension definition (object or short-hand name); return (name, configuration)."""
    if isinstance(value, str):
        ext_name, conf = value, None
    elif isinstance(value, dict):
        if not value.keys() <= _EXTENSION_KEYS:
            extra = set(value) - _EXTENSION_KEYS
            raise field_error(key, name, value,
                              f'an object with "name" and "configuration" (unknown keys {sorted(extra)})')
        ext_name = value.get("name", MISSING)
        if not isinstance(ext_name, str):
            raise field_error(key, f"{name}.name", ext_name, "a string")
        conf = value.get("configuration")
        if "configuration" in value and not isinstance(conf, dict):
            raise field_error(key, f"{name}.configuration", conf, "an object")
        mu = value.get("must_understand", True)
        if not isinstance(mu, bool) or (mu is False and not allow_optional):
            raise field_error(key, f"{name}.must_understand", mu,
                              "true or absent (must_understand=false is not supported here)" if not allow_optional
                              else "a boolean")
    else:
        raise field_error(key, name, value, 'an extension object {"name": ..., "configuration": ...} or a name string')
    if not ext_name:
        raise field_error(key, f"{name}.name", ext_name, "a non-empty name")
    if allowed_names is not None and ext_name not in allowed_names:
        raise field_error(key, f"{name}.name", ext_name, f"one of {list(allowed_names)} (the supported kinds)")
    return ext_name, conf


@dataclass(frozen=True)
class ChunkKeyEncodingSpec(ChunkKeyEncoding):
    """A ``chunk_key_encoding`` of a ``zarr.json``: ``default`` (separator ``"/"``)
    or ``v2`` (separator ``"."``), with its JSON form; it maps chunk coordinates
    to keys as :class:`~zarrdask.chunking.ChunkKeyEncoding` does."""

    def __post_init__(self) -> None:
        if self.name not in ("default", "v2"):
            raise field_error("<chunk_key_encoding>", "chunk_key_encoding.name", self.name, '"default" or "v2"')
        if self.separator is None:
            object.__setattr__(self, "separator", "/" if self.name == "default" else ".")
        if self.separator not in ("/", "."):
            raise field_error("<chunk_key_encoding>", "chunk_key_encoding.configuration.separator",
                              self.separator, '"/" or "."')

    @classmethod
    def from_json(cls, doc: Any, *, key: str = "zarr.json") -> ChunkKeyEncodingSpec:
        fname = "chunk_key_encoding"
        name, conf = _extension_object(doc, key, fname, ("default", "v2"), allow_optional=False)
        sep = None
        if conf:
            extra = set(conf) - {"separator"}
            if extra:
                raise field_error(key, f"{fname}.configuration", conf,
                                  f'only "separator" (unknown keys {sorted(extra)})')
            sep = conf.get("separator")
            if sep not in ("/", "."):
                raise field_error(key, f"{fname}.configuration.separator", sep, '"/" or "."')
        return cls(name, sep)

    def to_json(self) -> dict:
        return {"name": self.name, "configuration": {"separator": self.separator}}



def _parse_chunk_grid(value: Any, key: str) -> tuple[str, tuple]:
    """``(grid name, per-axis chunks)`` of a ``chunk_grid`` object (:mod:`.chunk_grids`)."""
    name, conf = _extension_object(value, key, "chunk_grid", GRID_NAMES, allow_optional=False)
    return name, parse_configuration(name, conf, key)


def _codec_name(value: dict | str) -> str:
    return value if isinstance(value, str) else value["name"]


def _check_codec(value: Any, key: str, name: str) -> Any:
    _extension_object(value, key, name, None, allow_optional=True)
    return value


def _split_extra(doc: dict, known: tuple[str, ...], key: str, owned: bool = False) -> dict:
    """Unknown top-level fields: kept if ``{"must_understand": false, ...}``, else an error
    (copied unless ``owned``: see :meth:`ArrayMetadataV3.from_json`)."""
    extra = {}
    for k, v in doc.items():
        if k in known:
            continue
        if isinstance(v, dict) and v.get("must_understand") is False:
            extra[k] = v if owned else copy.deepcopy(v)
        else:
            raise field_error(key, k, v, 'no such field, or an object with "must_understand": false '
                                  '(v3-core "Additional fields")')
    return extra


def _reorder(doc: dict, source: dict | None) -> dict:
    if source is None:
        return doc
    out = {k: doc[k] for k in source if k in doc}
    out.update((k, v) for k, v in doc.items() if k not in out)
    return out


@dataclass(frozen=True, eq=False)
class ArrayMetadataV3:
    """A v3 array ``zarr.json`` document.

    ``data_type`` is a native-byte-order numpy dtype, ``fill_value`` the decoded
    scalar, ``codecs`` the raw codec JSON (objects or short-hand strings),
    ``extra_fields`` the ``must_understand: false`` top-level extensions.

    ``chunk_grid_name`` is ``"regular"`` (``chunk_shape`` is the chunk shape) or
    ``"rectilinear"`` (zarr-extensions ``chunk-grids/rectilinear``): then each entry
    of ``chunk_shape`` is an ``int`` (a regular step along that axis) or a tuple of
    the axis's chunk edge lengths, run-length pairs expanded; the edges may run past
    the shape (overflow chunks), never short of it.
    """

    shape: tuple[int, ...]
    data_type: np.dtype
    chunk_shape: tuple[int, ...]
    chunk_key_encoding: ChunkKeyEncodingSpec
    fill_value: Any
    codecs: tuple[dict | str, ...]
    attributes: dict = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    storage_transformers: tuple = ()
    extra_fields: dict = field(default_factory=dict)
    zarr_format: Literal[3] = 3
    node_type: Literal["array"] = "array"
    chunk_grid_name: Literal["regular", "rectilinear"] = "regular"
    _source: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._validate("zarr.json")

    def _validate(self, key: str, parsed: bool = False) -> None:
        """Check and normalise the fields; ``parsed``: they come from
        :meth:`from_json`, which has checked every field on its own already,
        so only what involves several fields is checked here."""
        s = object.__setattr__
        if not parsed:
            s(self, "shape", parse_shape(self.shape, key, "shape", minimum=0))
        if not parsed or self.chunk_grid_name != "regular":
            s(self, "chunk_shape", parse_chunks(self.chunk_grid_name, self.chunk_shape, key))
        grid_field = field_of(self.chunk_grid_name)
        check_rank(self.chunk_grid_name, self.chunk_shape, self.shape, key)
        check_coverage(self.chunk_shape, self.shape, key)
        if not parsed:
            self._validate_given(key)
        if not any(_codec_name(c) == _SHARDING for c in self.codecs):  # a sharding codec checks its inner chunks
            check_chunk_bytes(largest_chunk(self.chunk_shape), self.data_type, key, grid_field)
        if not parsed and not isinstance(self.attributes, dict):
            raise field_error(key, "attributes", self.attributes, "an object")
        if self.dimension_names is not None:
            dn = self.dimension_names
            if not isinstance(dn, (list, tuple)) or not all(d is None or isinstance(d, str) for d in dn):
                raise field_error(key, "dimension_names", dn, "a list of strings or nulls")
            if len(dn) != len(self.shape):
                raise field_error(key, "dimension_names", dn, f"{len(self.shape)} names (the rank of 'shape')")
            s(self, "dimension_names", tuple(dn))
        if not parsed:
            self._validate_rest(key)
        if self.fill_value is None:
            raise field_error(key, "fill_value", None, "a fill value (required in v3)")
        s(self, "fill_value", normalize_fill_value(self.fill_value, self.data_type, key=key))

    def _validate_given(self, key: str) -> None:
        """The data type, chunk key encoding and codecs of an object built in code."""
        s = object.__setattr__
        if not isinstance(self.data_type, np.dtypes.StringDType):
            s(self, "data_type", np.dtype(self.data_type))
        if not isinstance(self.chunk_key_encoding, ChunkKeyEncodingSpec):
            s(self, "chunk_key_encoding", ChunkKeyEncodingSpec.from_json(self.chunk_key_encoding, key=key))
        if not isinstance(self.codecs, (list, tuple)) or not self.codecs:
            raise field_error(key, "codecs", self.codecs,
                              "a non-empty list of codecs (one array -> bytes codec is required)")
        s(self, "codecs", tuple(_check_codec(c, key, f"codecs[{i}]") for i, c in enumerate(self.codecs)))

    def _validate_rest(self, key: str) -> None:
        """The storage transformers, extensions, format and node type of an object built in code."""
        if not isinstance(self.storage_transformers, (list, tuple)) or self.storage_transformers:
            raise field_error(key, "storage_transformers", self.storage_transformers,
                              "an empty list or no field: no storage transformers are supported")
        object.__setattr__(self, "storage_transformers", ())
        if not isinstance(self.extra_fields, dict) or not all(
                isinstance(v, dict) and v.get("must_understand") is False for v in self.extra_fields.values()):
            raise field_error(key, "extra_fields", self.extra_fields, 'objects with "must_understand": false')
        if self.zarr_format != 3 or not is_json_int(self.zarr_format):
            raise field_error(key, "zarr_format", self.zarr_format, "3")
        if self.node_type != "array":
            raise field_error(key, "node_type", self.node_type, '"array"')

    # -- convenience ------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """Alias of :attr:`data_type`."""
        return self.data_type

    # -- the array, format-independent (as ArrayMetadataV2 gives it) ------------------
    @property
    def grid(self) -> ChunkGrid:
        """The chunk grid (regular or rectilinear)."""
        return grid_for(self.shape, self.chunk_shape)

    @property
    def key_encoding(self) -> ChunkKeyEncoding:
        return self.chunk_key_encoding

    @property
    def memory_dtype(self) -> Any:
        """The dtype of the data in memory (:attr:`data_type`)."""
        return self.data_type

    @property
    def order(self) -> str:
        """v3 chunks are C-ordered (a ``transpose`` codec reorders them)."""
        return "C"

    @property
    def objects_are_bytes(self) -> bool:
        return True

    def read_fill_value(self, key: str = "zarr.json") -> Any:
        """The value unwritten elements read as (v3 fill values are never ``null``)."""
        return self.fill_value

    # -- JSON ---------------------------------------------------------------------------
    @classmethod
    def from_json(cls, doc: Any, *, key: str = "zarr.json", owned: bool = False) -> ArrayMetadataV3:
        """Parse and validate an array ``zarr.json`` document (a dict).

        The object keeps no reference into ``doc`` unless ``owned=True``: then
        ``doc`` is handed over (a document just decoded, which nobody mutates
        afterwards) and its parts are kept as they are, not copied. The object
        never mutates them; :meth:`to_json` returns a copy."""
        require_dict(doc, key, "array metadata")
        for name in _ARRAY_REQUIRED:
            if name not in doc:
                raise field_error(key, name, MISSING, "a value (required by v3-core 'Array metadata')")
        if doc["zarr_format"] != 3 or not is_json_int(doc["zarr_format"]):
            raise field_error(key, "zarr_format", doc["zarr_format"], "3")
        if doc["node_type"] != "array":
            raise field_error(key, "node_type", doc["node_type"], '"array"')
        shape = parse_shape(doc["shape"], key, "shape", minimum=0)
        dt = resolve_data_type_v3(doc["data_type"], key=key)
        grid_name, chunk_shape = _parse_chunk_grid(doc["chunk_grid"], key)
        check_rank(grid_name, chunk_shape, shape, key)
        cke = ChunkKeyEncodingSpec.from_json(doc["chunk_key_encoding"], key=key)
        fill = dt.decode_fill_v3(doc["fill_value"], key, "fill_value")
        codecs = doc["codecs"]
        if not isinstance(codecs, list) or not codecs:
            raise field_error(key, "codecs", codecs,
                              "a non-empty list of codecs (one array -> bytes codec is required)")
        codecs = tuple(_check_codec(c, key, f"codecs[{i}]") for i, c in enumerate(codecs))
        attributes = doc.get("attributes", {})
        if not isinstance(attributes, dict):
            raise field_error(key, "attributes", attributes, "an object")
        st = doc.get("storage_transformers", [])
        if not isinstance(st, list) or st:
            raise field_error(key, "storage_transformers", st,
                              "an empty list or no field: no storage transformers are supported")
        dn = doc.get("dimension_names")
        if dn is not None and not isinstance(dn, list):
            raise field_error(key, "dimension_names", dn, "a list of strings or nulls")
        extra = _split_extra(doc, _ARRAY_REQUIRED + _ARRAY_OPTIONAL, key, owned)
        if not owned:
            codecs, attributes, doc = copy.deepcopy((codecs, attributes, doc))
        meta = cls.__new__(cls)
        meta.__dict__.update(  # (a frozen dataclass: its fields are set once, here)
            shape=shape, data_type=dt.dtype, chunk_shape=chunk_shape, chunk_key_encoding=cke, fill_value=fill,
            codecs=codecs, attributes=attributes, dimension_names=dn, storage_transformers=(), extra_fields=extra,
            zarr_format=3, node_type="array", chunk_grid_name=grid_name, _source=doc)
        meta._validate(key, parsed=True)
        return meta

    def _data_type_json(self) -> tuple[Any, bool]:
        """(JSON of the data type, whether it is the original form)."""
        src = self._source
        if src is not None and "data_type" in src:
            try:
                if resolve_data_type_v3(src["data_type"]).dtype == self.data_type:
                    return src["data_type"], True
            except MetadataError:  # pragma: no cover - the source was validated
                pass
        return data_type_to_v3(self.data_type), False

    def to_json(self) -> dict:
        """The ``zarr.json`` document: the original JSON for unchanged fields, else canonical."""
        src = self._source
        dt_json, dt_orig = self._data_type_json()
        fill_json = None
        if dt_orig and "fill_value" in src:
            try:
                same = fill_values_equal(
                    decode_fill_value_v3(src["fill_value"], self.data_type, data_type=dt_json), self.fill_value)
            except MetadataError:  # pragma: no cover
                same = False
            if same:
                fill_json = src["fill_value"]
        if fill_json is None:
            fill_json = encode_fill_value_v3(self.fill_value, self.data_type, data_type=dt_json)

        grid = grid_json(self.chunk_grid_name, self.chunk_shape)
        if src is not None and "chunk_grid" in src and _parse_chunk_grid(src["chunk_grid"], "zarr.json") == \
                (self.chunk_grid_name, self.chunk_shape):
            grid = src["chunk_grid"]
        cke = self.chunk_key_encoding.to_json()
        if src is not None and "chunk_key_encoding" in src and \
                ChunkKeyEncodingSpec.from_json(src["chunk_key_encoding"]) == self.chunk_key_encoding:
            cke = src["chunk_key_encoding"]

        doc: dict[str, Any] = {
            "shape": list(self.shape),
            "data_type": dt_json,
            "chunk_grid": grid,
            "chunk_key_encoding": cke,
            "fill_value": fill_json,
            "codecs": list(self.codecs),
        }
        if self.attributes or src is None or "attributes" in src:
            doc["attributes"] = self.attributes
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        elif src is not None and "dimension_names" in src and src["dimension_names"] is None:
            doc["dimension_names"] = None
        doc["zarr_format"] = 3
        doc["node_type"] = "array"
        if src is None or "storage_transformers" in src:
            doc["storage_transformers"] = []
        doc.update(self.extra_fields)
        return copy.deepcopy(_reorder(doc, src))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayMetadataV3):
            return NotImplemented
        names = ("shape", "data_type", "chunk_grid_name", "chunk_shape", "chunk_key_encoding", "codecs", "attributes",
                 "dimension_names", "extra_fields")
        return all(getattr(self, n) == getattr(other, n) for n in names) and fill_values_equal(
            self.fill_value, other.fill_value)

    def __hash__(self) -> int:
        canonical = ArrayMetadataV3(
            self.shape, self.data_type, self.chunk_shape, self.chunk_key_encoding, self.fill_value,
            self.codecs, self.attributes, self.dimension_names, (), self.extra_fields,
            chunk_grid_name=self.chunk_grid_name)
        return hash(json.dumps(canonical.to_json(), sort_keys=True))


@dataclass(frozen=True)
class GroupMetadataV3:
    """A v3 group ``zarr.json`` document.

    ``consolidated_metadata`` is the raw object (``{"kind": "inline",
    "must_understand": false, "metadata": {...}}``, ``metadata`` required, as
    zarr-python requires it) or ``None``; its entries are parsed by
    ``zarrdask.core.nodes``. ``extra_fields`` holds
    ``must_understand: false`` extensions.
    """

    attributes: dict = field(default_factory=dict)
    extra_fields: dict = field(default_factory=dict)
    consolidated_metadata: dict | None = None
    zarr_format: Literal[3] = 3
    node_type: Literal["group"] = "group"
    _source: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._validate("zarr.json")

    def _validate(self, key: str) -> None:
        if not isinstance(self.attributes, dict):
            raise field_error(key, "attributes", self.attributes, "an object")
        cm = self.consolidated_metadata
        if cm is not None:
            if not isinstance(cm, dict):
                raise field_error(key, "consolidated_metadata", cm, 'null or an object {"kind": "inline", ...}')
            if cm.get("kind", "inline") != "inline":
                raise field_error(key, "consolidated_metadata.kind", cm.get("kind"), '"inline"')
            if not isinstance(cm.get("metadata", MISSING), dict):
                raise field_error(key, "consolidated_metadata.metadata", cm.get("metadata", MISSING),
                                  "an object mapping relative paths to zarr.json documents")
            if not isinstance(cm.get("must_understand", False), bool):
                raise field_error(key, "consolidated_metadata.must_understand", cm.get("must_understand"), "a boolean")
        if not isinstance(self.extra_fields, dict) or not all(
                isinstance(v, dict) and v.get("must_understand") is False for v in self.extra_fields.values()):
            raise field_error(key, "extra_fields", self.extra_fields, 'objects with "must_understand": false')
        if self.zarr_format != 3 or not is_json_int(self.zarr_format):
            raise field_error(key, "zarr_format", self.zarr_format, "3")
        if self.node_type != "group":
            raise field_error(key, "node_type", self.node_type, '"group"')

    @classmethod
    def from_json(cls, doc: Any, *, key: str = "zarr.json", owned: bool = False) -> GroupMetadataV3:
        """Parse and validate a group ``zarr.json`` document (a dict); ``owned``
        as for :meth:`ArrayMetadataV3.from_json` (a consolidated document is
        then not copied)."""
        require_dict(doc, key, "group metadata")
        for name in ("zarr_format", "node_type"):
            if name not in doc:
                raise field_error(key, name, MISSING, "a value (required by v3-core 'Group metadata')")
        if doc["zarr_format"] != 3 or not is_json_int(doc["zarr_format"]):
            raise field_error(key, "zarr_format", doc["zarr_format"], "3")
        if doc["node_type"] != "group":
            raise field_error(key, "node_type", doc["node_type"], '"group"')
        extra = _split_extra(doc, _GROUP_KNOWN, key, owned)
        if not owned:
            doc = copy.deepcopy(doc)
        meta = cls.__new__(cls)
        for name, value in (("attributes", doc.get("attributes", {})), ("extra_fields", extra),
                            ("consolidated_metadata", doc.get("consolidated_metadata")),
                            ("zarr_format", 3), ("node_type", "group"), ("_source", doc)):
            object.__setattr__(meta, name, value)
        meta._validate(key)
        return meta

    def to_json(self) -> dict:
        """The group ``zarr.json`` (zarr-python's layout for groups built in code)."""
        src = self._source
        doc: dict[str, Any] = {}
        if self.attributes or src is None or "attributes" in src:
            doc["attributes"] = self.attributes
        doc["zarr_format"] = 3
        if self.consolidated_metadata is not None or (src is not None and "consolidated_metadata" in src):
            doc["consolidated_metadata"] = self.consolidated_metadata
        doc["node_type"] = "group"
        doc.update(self.extra_fields)
        return copy.deepcopy(_reorder(doc, src))

    def __hash__(self) -> int:
        return hash(json.dumps(GroupMetadataV3(self.attributes, self.extra_fields,
                                               self.consolidated_metadata).to_json(), sort_keys=True))
