"""JSON Schemas of ZOM documents (ZEP 6, "Zarr Object Models in JSON schema").

:func:`json_schema` returns the ZEP's schemas for Zarr v2 and v3, with the
corrections that real documents need (each one a place where the ZEP's schema
disagrees with the Zarr specs or with the ZEP's own examples). Documents are
checked with ``jsonschema``: :func:`schema_errors` lists the problems,
:func:`validate_json` raises :class:`~zarrdask.errors.SpecValidationError`.

v3 (draft 2020-12, which the ZEP's ``prefixItems`` needs):

1. ``NamedConfig.configuration`` is optional and ``must_understand`` allowed;
   codecs, chunk grids, chunk key encodings and storage transformers may also
   be short-hand name strings (v3 core "Extension definition": "the
   configuration key MAY be omitted", a name-only object "MAY be written as
   the name string"); zarr-python writes ``{"name": "bytes"}``.
2. ``data_type`` may be an extension object (``numpy.datetime64``,
   ``fixed_length_utf32``, ``null_terminated_bytes`` ... from zarr-extensions),
   not only a string.
3. ``fill_value`` also takes an object (``struct`` data type) and a complex
   pair whose parts are strings (``["NaN", 0.0]``, v3 data types "Permitted
   fill values").
4. ``dimension_names`` items may be ``null`` (v3 core "dimension_names").
5. ``codecs`` has at least one item (one array → bytes codec is required).
6. ``chunk_grid`` named ``"rectilinear"`` (zarr-extensions
   ``chunk-grids/rectilinear``) is checked against that extension's schema
   (:data:`RECTILINEAR_CHUNK_GRID_SCHEMA`): ``kind: "inline"`` and per-axis
   edge lengths, integers or ``[edge, count]`` pairs, all positive.
7. Further top-level fields are allowed when they are extension objects with
   ``"must_understand": false`` (v3 core "Additional fields"; this also covers
   a group field renamed to ``_members``).
8. ``members`` values are told apart by ``shape`` (``if``/``then``/``else``
   rather than ``anyOf``: the same documents pass, and errors point inside the
   member instead of "not valid under any of the given schemas").

v2 (draft-07):

1. ``required`` says ``"attributess"`` (a typo; no document could pass); it is
   ``"attributes"``, and ``fill_value`` is required too (v2 spec: the keys
   "MUST be present").
2. The version field is ``zarr_format`` (the v2 metadata key and the ZEP's own
   v2 example), not ``zarr_version``.
3. ``compressor`` and ``filters`` may be ``null`` (v2 spec: "null" when there
   is no compressor / are no filters); codec objects need an ``"id"`` string.
4. A structured ``dtype`` is a list of ``[name, type]`` / ``[name, type,
   shape]`` entries, not a list of strings.
5. ``members`` values are told apart by ``shape``, as for v3.

The ZEP's v2 example itself has ``"filters": {}``, which the v2 spec does not
allow (``null`` or a list); it does not pass the v2 schema.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from ..errors import SpecValidationError

__all__ = ["RECTILINEAR_CHUNK_GRID_SCHEMA", "json_schema", "schema_errors", "validate_json"]

_EXTENSION_FIELD = {
    "description": 'An extension field (v3 core "Additional fields")',
    "type": "object",
    "properties": {"must_understand": {"const": False}},
    "required": ["must_understand"],
}

# zarr-extensions chunk-grids/rectilinear: per-axis edge lengths (positive
# integers), an axis being one integer or a list of integers and [edge, count] pairs
_POSITIVE = {"type": "integer", "minimum": 1}
_RECTILINEAR_DEFS: dict[str, Any] = {
    "RectilinearChunkGrid": {
        "description": "zarr-extensions chunk-grids/rectilinear",
        "type": "object",
        "properties": {
            "name": {"const": "rectilinear"},
            "configuration": {
                "type": "object",
                "properties": {
                    "kind": {"const": "inline"},
                    "chunk_shapes": {"type": "array", "items": {"$ref": "#/$defs/RectilinearAxis"}},
                },
                "required": ["kind", "chunk_shapes"],
                "additionalProperties": False,
            },
        },
        "required": ["name", "configuration"],
    },
    "RectilinearAxis": {
        "anyOf": [
            _POSITIVE,
            {"type": "array", "items": {"anyOf": [
                _POSITIVE,
                {"type": "array", "prefixItems": [_POSITIVE, _POSITIVE], "minItems": 2, "maxItems": 2},
            ]}},
        ],
    },
}

#: the rectilinear chunk grid object on its own (draft 2020-12)
RECTILINEAR_CHUNK_GRID_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$ref": "#/$defs/RectilinearChunkGrid",
    "$defs": copy.deepcopy(_RECTILINEAR_DEFS),
}

_V3: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        "ArraySpec": {
            "additionalProperties": {"$ref": "#/$defs/ExtensionField"},
            "description": "A model of a Zarr version 3 Array",
            "properties": {
                "zarr_format": {"const": 3, "default": 3, "title": "Zarr Format"},
                "node_type": {"const": "array", "default": "array", "title": "Node Type"},
                "attributes": {"default": {}, "title": "Attributes", "type": "object"},
                "shape": {"items": {"type": "integer", "minimum": 0}, "title": "Shape", "type": "array"},
                "data_type": {
                    "anyOf": [{"type": "string"}, {"$ref": "#/$defs/NamedConfig"}],
                    "title": "Data Type",
                },
                "chunk_grid": {
                    "$ref": "#/$defs/Extension",
                    "if": {"type": "object", "properties": {"name": {"const": "rectilinear"}}, "required": ["name"]},
                    "then": {"$ref": "#/$defs/RectilinearChunkGrid"},
                },
                "chunk_key_encoding": {"$ref": "#/$defs/Extension"},
                "fill_value": {
                    "anyOf": [
                        {"type": "boolean"},
                        {"type": "integer"},
                        {"type": "number"},
                        {"const": "Infinity"},
                        {"const": "-Infinity"},
                        {"const": "NaN"},
                        {"type": "string"},
                        {
                            "maxItems": 2,
                            "minItems": 2,
                            "prefixItems": [
                                {"type": ["number", "string"]},
                                {"type": ["number", "string"]},
                            ],
                            "type": "array",
                        },
                        {"items": {"type": "integer"}, "type": "array"},
                        {"type": "object"},
                    ],
                    "title": "Fill Value",
                },
                "codecs": {
                    "items": {"$ref": "#/$defs/Extension"},
                    "minItems": 1,
                    "title": "Codecs",
                    "type": "array",
                },
                "storage_transformers": {
                    "anyOf": [{"items": {"$ref": "#/$defs/Extension"}, "type": "array"}, {"type": "null"}],
                    "default": None,
                    "title": "Storage Transformers",
                },
                "dimension_names": {
                    "anyOf": [
                        {"items": {"type": ["string", "null"]}, "type": "array"},
                        {"type": "null"},
                    ],
                    "title": "Dimension Names",
                },
            },
            "required": ["shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs"],
            "title": "ArraySpec",
            "type": "object",
        },
        "GroupSpec": {
            "additionalProperties": {"$ref": "#/$defs/ExtensionField"},
            "properties": {
                "zarr_format": {"const": 3, "default": 3, "title": "Zarr Format"},
                "node_type": {"const": "group", "default": "group", "title": "Node Type"},
                "attributes": {"title": "Attributes", "type": "object"},
                "members": {
                    "additionalProperties": {
                        "if": {"type": "object", "required": ["shape"]},
                        "then": {"$ref": "#/$defs/ArraySpec"},
                        "else": {"$ref": "#/$defs/GroupSpec"},
                    },
                    "default": {},
                    "title": "Members",
                    "type": "object",
                },
            },
            "required": ["attributes", "members"],
            "title": "GroupSpec",
            "type": "object",
        },
        "NamedConfig": {
            "additionalProperties": False,
            "properties": {
                "name": {"title": "Name", "type": "string"},
                "configuration": {"anyOf": [{"type": "object"}, {"type": "null"}], "title": "Configuration"},
                "must_understand": {"type": "boolean"},
            },
            "required": ["name"],
            "title": "NamedConfig",
            "type": "object",
        },
        "Extension": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/NamedConfig"}]},
        **copy.deepcopy(_RECTILINEAR_DEFS),
        "ExtensionField": _EXTENSION_FIELD,
    },
    "allOf": [{"$ref": "#/$defs/GroupSpec"}],
}

_V2: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$ref": "#/definitions/Group",
    "definitions": {
        "Array": {
            "title": "Array",
            "description": "Model of a Zarr Version 2 Array",
            "type": "object",
            "properties": {
                "attributes": {"title": "Attributes", "type": "object"},
                "shape": {"title": "Shape", "type": "array", "items": {"type": "integer", "minimum": 0}},
                "chunks": {"title": "Chunks", "type": "array", "items": {"type": "integer", "minimum": 1}},
                "dtype": {
                    "title": "Dtype",
                    "anyOf": [{"type": "string"}, {"$ref": "#/definitions/StructuredDtype"}],
                },
                "compressor": {"title": "Compressor", "anyOf": [{"$ref": "#/definitions/Codec"}, {"type": "null"}]},
                "fill_value": {"title": "Fill Value"},
                "order": {"title": "Order", "enum": ["C", "F"], "type": "string"},
                "filters": {
                    "title": "Filters",
                    "anyOf": [{"type": "array", "items": {"$ref": "#/definitions/Codec"}}, {"type": "null"}],
                },
                "dimension_separator": {"title": "Dimension Separator", "enum": [".", "/"], "type": "string"},
                "zarr_format": {"title": "Zarr Format", "default": 2, "const": 2},
            },
            "required": ["attributes", "shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters"],
            "additionalProperties": False,
        },
        "Group": {
            "title": "Group",
            "description": "Model of a Zarr Version 2 Group",
            "type": "object",
            "properties": {
                "attributes": {"title": "Attributes", "type": "object"},
                "members": {
                    "title": "Members",
                    "type": "object",
                    "additionalProperties": {
                        "if": {"type": "object", "required": ["shape"]},
                        "then": {"$ref": "#/definitions/Array"},
                        "else": {"$ref": "#/definitions/Group"},
                    },
                },
                "zarr_format": {"title": "Zarr Format", "default": 2, "const": 2},
            },
            "required": ["attributes", "members"],
            "additionalProperties": False,
        },
        "Codec": {
            "type": "object",
            "properties": {"id": {"type": "string", "minLength": 1}},
            "required": ["id"],
        },
        "StructuredDtype": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "array",
                "minItems": 2,
                "maxItems": 3,
                "items": [
                    {"type": "string"},
                    {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/StructuredDtype"}]},
                    {"type": "array", "items": {"type": "integer", "minimum": 1}},
                ],
            },
        },
    },
}


def json_schema(zarr_format: int = 3, node_type: str = "group") -> dict[str, Any]:
    """The JSON Schema of ZOM documents of ``zarr_format`` (a fresh copy).

    Parameters
    ----------
    zarr_format
        2 or 3.
    node_type
        ``"group"`` (the ZEP's schema: a document is a group) or ``"array"``
        (the same definitions, with an array at the root).

    Returns
    -------
    dict
        The schema; see the module docstring for where it differs from the ZEP.
    """
    if zarr_format not in (2, 3):
        raise ValueError(f"zarr_format must be 2 or 3, found {zarr_format!r}")
    if node_type not in ("group", "array"):
        raise ValueError(f"node_type must be 'group' or 'array', found {node_type!r}")
    schema = copy.deepcopy(_V3 if zarr_format == 3 else _V2)
    if node_type == "array":
        if zarr_format == 3:
            schema["allOf"] = [{"$ref": "#/$defs/ArraySpec"}]
        else:
            schema["$ref"] = "#/definitions/Array"
    return schema


@lru_cache(maxsize=4)
def _validator(zarr_format: int, node_type: str) -> Any:
    import jsonschema  # slow to import (0.15 s): loaded by the first validation, not with zarrdask.zom

    schema = json_schema(zarr_format, node_type)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(p) for p in path)


def _leaf(error: Any) -> Any:
    """The most specific error below an ``anyOf`` failure: from the branch that
    got furthest into the document (the deepest path; a branch of the right
    type rather than a type mismatch), then jsonschema's pick."""
    import jsonschema  # (see _validator)

    while error.context:
        deepest = max(len(e.absolute_path) for e in error.context)
        candidates = [e for e in error.context if len(e.absolute_path) == deepest]
        candidates = [e for e in candidates if e.validator != "type"] or candidates
        error = jsonschema.exceptions.best_match(candidates)
    return error


def _kind(doc: Any) -> str:
    return "array" if isinstance(doc, dict) and ("shape" in doc or doc.get("node_type") == "array") else "group"


def schema_errors(doc: Any, zarr_format: int | None = None) -> list[str]:
    """Every way ``doc`` breaks the ZOM JSON Schema.

    Parameters
    ----------
    doc
        A ZOM JSON document (a group, or an array).
    zarr_format
        The schema to use; default the document's own ``zarr_format``.

    Returns
    -------
    list of str
        ``"<JSON pointer>: message"`` per problem (empty when valid). Below an
        ``anyOf``, the message of the branch that got furthest is given.
    """
    if zarr_format is None:
        zarr_format = doc.get("zarr_format", doc.get("zarr_version", 3)) if isinstance(doc, dict) else 3
        if zarr_format not in (2, 3):
            return [f"/zarr_format: {zarr_format!r} is not 2 or 3"]
    validator = _validator(zarr_format, _kind(doc))
    out = []
    for error in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        leaf = _leaf(error)
        out.append(f"{_pointer(leaf.absolute_path)}: {leaf.message}")
    return out


def validate_json(doc: Any, zarr_format: int | None = None) -> None:
    """Check ``doc`` against the ZOM JSON Schema.

    Raises
    ------
    SpecValidationError
        Listing every problem with its JSON pointer (``errors`` holds them).
    """
    errors = schema_errors(doc, zarr_format)
    if errors:
        fmt = zarr_format or (doc.get("zarr_format", "?") if isinstance(doc, dict) else "?")
        lines = "\n  ".join(errors)
        raise SpecValidationError(
            f"the document does not match the ZOM JSON Schema (Zarr v{fmt}), {len(errors)} problem(s):\n  {lines}",
            errors)
