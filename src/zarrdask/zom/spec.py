"""Array and group specs: the nodes of the Zarr Object Model.

ZEP 6 ("A Zarr Object Model"), section "Specification of the base Zarr Object
Model": a ZOM array has exactly the properties of the Zarr array metadata
document, except the one holding user metadata, plus ``attributes``; a ZOM
group has the properties of the Zarr group metadata plus ``attributes`` and
``members`` (name → array or group). Section "Zarr Object Models in JSON" gives
the JSON form, implemented by :meth:`NodeSpec.to_json` /
:meth:`NodeSpec.from_json`, including the renaming rule for a group metadata
field that is itself called ``members``.

Four frozen classes, one per format and node kind (defined in :mod:`.v2` and
:mod:`.v3`), with the abstract bases of this module so that
``isinstance(x, ArraySpec)`` and ``GroupSpec.from_json(doc)`` work for both
formats:

=================  ==========================================================
``ArraySpecV2``    ``.zarray`` fields (Zarr v2 spec "Arrays / Metadata")
                   ``shape, chunks, dtype, compressor, fill_value, order,
                   filters, dimension_separator`` + ``attributes`` (``.zattrs``)
``GroupSpecV2``    ``attributes``, ``members``
``ArraySpecV3``    ``zarr.json`` array fields (v3 core "Array metadata")
                   ``shape, data_type, chunk_grid, chunk_key_encoding,
                   fill_value, codecs, storage_transformers, dimension_names``,
                   ``attributes``, and ``must_understand: false`` extension
                   fields (``extra_fields``)
``GroupSpecV3``    ``attributes``, ``members``, ``extra_fields``
=================  ==========================================================

Values are kept in their JSON form (frozen: objects are read-only mappings,
arrays are tuples), so a document round-trips unchanged, key order included;
an optional field absent from the document is :data:`UNSET` (``None`` is JSON
``null``). Construction checks the structure only (types, required fields,
member names); whether the values make valid Zarr metadata is checked by the
JSON Schemas (:mod:`.schema`) and, in full, when a spec is written
(:meth:`NodeSpec.to_zarr`), so that documents such as the ZEP's own examples
(``"data_type": "|u1"``, ``"filters": {}``) can be parsed and compared.

Choices:

* A v3 group's ``consolidated_metadata`` is an index of its members, not part
  of the structure: it is dropped when reading (``members`` holds the same).
* v2 documents may say ``"zarr_version": 2`` (pydantic-zarr, the ZEP's v2
  schema); it is read as ``zarr_format`` and written as ``zarr_format``.
* A member without ``zarr_format`` takes its parent's; formats cannot mix.
* ``members`` renaming (ZEP 6): a Zarr group field called ``members`` appears
  in the ZOM document as ``_members``, or ``__members`` if ``_members`` is also
  a field, and so on. Reading assumes the renamed field is the last of an
  unbroken run ``_members``, ``__members``, ...: the rule cannot tell a field
  really called ``_members`` from a renamed ``members``, and this reading is
  right for the ZEP's own example.

Example (ZEP 6)::

    GroupSpec.from_json({"zarr_format": 2, "attributes": {"foo": 42}, "members": {"foo": {
        "zarr_format": 2, "shape": [1000, 1000], "chunks": [100, 100], "dtype": "|u1",
        "compressor": None, "fill_value": 0, "order": "C", "dimension_separator": "/",
        "filters": None, "attributes": {"baz": True}}}})
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..errors import MetadataError
from ..metadata import validate_node_name
from ._frozen import UNSET, FrozenDict, canonical_dumps, freeze, json_equal, thaw

__all__ = [
    "ArraySpec",
    "ArraySpecV2",
    "ArraySpecV3",
    "GroupSpec",
    "GroupSpecV2",
    "GroupSpecV3",
    "NodeSpec",
    "from_flat",
    "from_json",
]

_V2_RESERVED = {".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"}


# --------------------------------------------------------------------------- helpers
def _fail(cls: type, name: str, found: Any, expected: str) -> MetadataError:
    text = repr(thaw(found))
    if len(text) > 200:
        text = text[:200] + "…"
    return MetadataError(f"{cls.__name__}: field {name!r}: found {text}, expected {expected}")


def _int_tuple(cls: type, name: str, value: Any, minimum: int) -> tuple[int, ...]:
    value = freeze(value, name)
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in value):
        what = "non-negative" if minimum == 0 else "positive"
        raise _fail(cls, name, value, f"a list of {what} integers")
    return value


def _object(cls: type, name: str, value: Any) -> FrozenDict:
    value = freeze(value, name)
    if not isinstance(value, FrozenDict):
        raise _fail(cls, name, value, "a JSON object")
    return value


def check_member_name(name: Any, zarr_format: int) -> str:
    """A member name allowed by the Zarr spec of ``zarr_format``; else :class:`MetadataError`."""
    problem = None
    if not isinstance(name, str) or not name:
        problem = "a non-empty string"
    elif "/" in name:
        problem = 'a name without "/"'
    elif set(name) == {"."}:
        problem = "a name not made only of periods"
    elif name in _V2_RESERVED:
        problem = "a name other than a metadata document's"
    if problem:
        raise MetadataError(f"member name: found {name!r}, expected {problem}")
    if zarr_format == 3:
        validate_node_name(name)  # v3 core "Node names" (e.g. the reserved prefix "__")
    return name


def _join(path: str, name: str) -> str:
    return f"{path.rstrip('/')}/{name}"


def _kind_of(doc: Mapping) -> str:
    """``"array"`` or ``"group"`` for a ZOM JSON node."""
    node_type = doc.get("node_type")
    if node_type in ("array", "group"):
        return node_type
    return "array" if "shape" in doc else "group"


def _format_of(doc: Mapping, inherited: int | None, path: str, default: int | None = None) -> int:
    fmt = doc.get("zarr_format", doc.get("zarr_version", inherited))
    if fmt is None:
        fmt = 3 if "node_type" in doc else default
    if fmt not in (2, 3) or isinstance(fmt, bool):
        raise MetadataError(f"ZOM document at {path!r}: field 'zarr_format': found {fmt!r}, expected 2 or 3")
    if inherited is not None and fmt != inherited:
        raise MetadataError(
            f"ZOM document at {path!r}: field 'zarr_format': found {fmt}, expected {inherited} "
            "(the format of its parent group; a hierarchy has one format)")
    return fmt


# --- include / exclude (pydantic's IncEx) for like()
def _incex(spec: Any) -> dict | None:
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        return dict(spec)
    if isinstance(spec, str):
        return {spec: True}
    return {k: True for k in spec}


def _select(doc: Any, include: Any, exclude: Any) -> Any:
    """``doc`` restricted like pydantic's ``model_dump(include=, exclude=)``;
    ``"__all__"`` applies to every key of an object."""
    if not isinstance(doc, Mapping):
        return doc
    inc, exc = _incex(include), _incex(exclude)
    out = {}
    for key, value in doc.items():
        sub_inc = sub_exc = None
        if inc is not None:
            if key not in inc and "__all__" not in inc:
                continue
            sub_inc = inc.get(key, inc.get("__all__"))
            sub_inc = None if sub_inc is True else sub_inc
        if exc is not None:
            sub_exc = exc.get(key, exc.get("__all__"))
            if sub_exc is True:
                continue
        out[key] = _select(value, sub_inc, sub_exc) if (sub_inc or sub_exc) else value
    return out


# --------------------------------------------------------------------------- base classes
class NodeSpec:
    """What array and group specs share: JSON, equality, comparison, storage."""

    zarr_format: int
    node_type: ClassVar[str] = ""
    attributes: FrozenDict

    # -- JSON ------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The ZOM JSON document (ZEP 6, "Zarr Object Models in JSON")."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NodeSpec:
        """A spec from its ZOM JSON document.

        Called on a base class (``GroupSpec``, ``ArraySpec``, ``NodeSpec``), the
        ``zarr_format`` of the document chooses the class; on a concrete class,
        the document must be of that class.

        Raises
        ------
        MetadataError
            Naming the path in the document, the field, what was found and what
            was expected.
        """
        default = getattr(cls, "__dataclass_fields__", {}).get("zarr_format")
        spec = _node_from_json(doc, "/", None, default.default if default is not None else None)
        if not isinstance(spec, cls):
            raise MetadataError(
                f"ZOM document at '/': a v{spec.zarr_format} {spec.node_type}, expected a {cls.__name__}")
        return spec

    def metadata_document(self) -> dict[str, Any]:
        """The Zarr metadata document this node is stored as: ``zarr.json`` (v3,
        with ``attributes``) or ``.zarray`` / ``.zgroup`` (v2; the attributes go
        to ``.zattrs``), laid out as zarr-python writes it."""
        raise NotImplementedError

    # -- comparison ------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeSpec):
            return NotImplemented
        return type(self) is type(other) and json_equal(self.to_json(), other.to_json())

    def __hash__(self) -> int:
        return hash((type(self).__name__, canonical_dumps(self.to_json())))

    def __repr__(self) -> str:
        parts = []
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == "members":
                value = "{" + ", ".join(f"{k!r}: <{v.node_type}>" for k, v in value.items()) + "}"
            else:
                value = repr(thaw(value)) if value is not UNSET else "UNSET"
            parts.append(f"{f.name}={value}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def replace(self, **changes: Any) -> NodeSpec:
        """A copy with some fields changed (the specs are immutable)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def like(self, other: Any, *, include: Any = None, exclude: Any = None) -> bool:
        """Whether ``other`` equals this spec on the fields considered.

        Parameters
        ----------
        other
            A spec, a ZOM JSON document, or a zarrdask array or group (read
            with :func:`~zarrdask.zom.from_zarr`).
        include, exclude
            Field names (a set) or nested mappings applied to the JSON form,
            as pydantic's ``model_dump`` takes them (pydantic-zarr's ``like``):
            ``exclude={"attributes"}`` ignores this node's attributes,
            ``exclude={"attributes": True, "members": {"__all__": {"attributes"}}}``
            those of its direct members too.

        Returns
        -------
        bool
            Equality of the two JSON forms so restricted (JSON equality:
            ``true`` is not ``1``).
        """
        other_spec = _as_spec(other)
        return json_equal(_select(self.to_json(), include, exclude),
                          _select(other_spec.to_json(), include, exclude))

    def diff(self, other: Any) -> list:
        """Every differing path and field; see :func:`zarrdask.zom.diff`."""
        from .diff import diff

        return diff(self, other)

    # -- flat form ---------------------------------------------------------------
    def to_flat(self, root: str = "/") -> dict[str, NodeSpec]:
        """The flat form: every node by its path.

        Parameters
        ----------
        root
            The path of this node (default ``"/"``).

        Returns
        -------
        dict of str to NodeSpec
            ``{"/": root, "/a": ..., "/a/b": ...}`` depth first, each group
            without its members. :func:`from_flat` is the inverse.
        """
        out: dict[str, NodeSpec] = {}
        _flatten(self, root if root.startswith("/") else "/" + root, out)
        return out

    # -- validation and storage ---------------------------------------------------
    def validate(self) -> None:
        """Check the JSON form against the ZOM JSON Schema of its format
        (:func:`zarrdask.zom.json_schema`); raise
        :class:`~zarrdask.errors.SpecValidationError` listing every problem."""
        from .schema import validate_json

        validate_json(self.to_json(), zarr_format=self.zarr_format)

    def to_zarr(self, store: Any, path: str = "", overwrite: bool = False, *,
                storage_options: dict[str, Any] | None = None) -> Any:
        """Create this hierarchy's metadata documents in ``store`` under ``path``.

        See :func:`zarrdask.zom.to_zarr`.
        """
        from .io import to_zarr

        return to_zarr(self, store, path, overwrite=overwrite, storage_options=storage_options)

    @classmethod
    def from_zarr(cls, node: Any, depth: int | None = None) -> NodeSpec:
        """The spec of a zarrdask array or group (``depth`` limits the levels of
        members read, ``None`` reads all). See :func:`zarrdask.zom.from_zarr`."""
        from .io import from_zarr

        spec = from_zarr(node, depth=depth)
        if not isinstance(spec, cls):
            raise TypeError(f"{cls.__name__}.from_zarr: {node!r} is a {spec.node_type}")
        return spec


class ArraySpec(NodeSpec):
    """A ZOM array of either format (the base of :class:`ArraySpecV2` and :class:`ArraySpecV3`)."""

    node_type: ClassVar[str] = "array"
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @classmethod
    def from_array(cls, array: Any, *, zarr_format: int = 3, chunks: Any = None,
                   attributes: Mapping[str, Any] | None = None, **fields: Any) -> ArraySpec:
        """A spec for an array like ``array``.

        Parameters
        ----------
        array
            Anything with ``shape`` and ``dtype`` (numpy, dask, a zarrdask array).
        zarr_format
            2 or 3.
        chunks
            The chunk shape; default the array's shape (one chunk). v3: per-axis
            chunk sizes (a dask ``chunks`` tuple, e.g. a dask array's
            ``.chunks``) where some axis is irregular make a ``rectilinear``
            chunk grid (zarr-extensions ``chunk-grids/rectilinear``).
        attributes
            User attributes.
        **fields
            Fields of the spec class that replace the defaults
            (``dimension_names=``, ``codecs=``, ``compressor=``, ...).

        Returns
        -------
        ArraySpecV2 or ArraySpecV3
            v3: the ``bytes`` codec with the byte order the data type needs,
            the ``default`` chunk key encoding; v2: no compressor, no filters.
            The fill value is the type's zero.
        """
        import numpy as np

        from ..metadata.dtypes import (
            data_type_to_v3,
            default_fill_value,
            dtype_to_v2,
            encode_fill_value_v2,
            encode_fill_value_v3,
        )

        shape = tuple(int(s) for s in array.shape)
        dtype = np.dtype(array.dtype)
        chunks = shape if chunks is None else tuple(chunks)
        irregular = any(not isinstance(c, (int, np.integer)) for c in chunks)
        if irregular:
            from ..chunking.rectilinear import normalize_chunks
            from ..metadata.v3 import rectilinear_json

            if zarr_format != 3:
                raise ValueError(f"irregular chunks {chunks} need zarr_format=3 (the rectilinear chunk grid)")
            per_axis = [c if isinstance(c, int) else (c[0] if len(set(c[:-1])) <= 1 and c[-1] <= c[0] else c)
                        for c in normalize_chunks(chunks)]
            per_axis = [max(1, c) if isinstance(c, int) else c for c in per_axis]
            if all(isinstance(c, int) for c in per_axis):  # regular after all (dask's last block is smaller)
                irregular, chunks = False, tuple(per_axis)
            else:
                grid = rectilinear_json(tuple(per_axis))
        if not irregular:
            chunks = tuple(max(1, int(c)) for c in chunks)
            grid = {"name": "regular", "configuration": {"chunk_shape": list(chunks)}}
        attributes = dict(attributes or {})
        if zarr_format == 2:
            base = dict(shape=shape, chunks=chunks, dtype=dtype_to_v2(dtype), compressor=None,
                        fill_value=encode_fill_value_v2(default_fill_value(dtype), dtype), order="C",
                        filters=None, dimension_separator=".", attributes=attributes)
            return ArraySpecV2(**{**base, **fields})
        if zarr_format != 3:
            raise ValueError(f"zarr_format must be 2 or 3, found {zarr_format!r}")
        native = dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype
        from ..codecs.bytes_codec import has_endianness

        endian = {"<": "little", ">": "big"}.get(dtype.byteorder, "little" if np.little_endian else "big")
        serializer = {"name": "bytes", "configuration": {"endian": endian}} if has_endianness(dtype) \
            else {"name": "bytes"}
        base = dict(shape=shape, data_type=data_type_to_v3(native),
                    chunk_grid=grid,
                    chunk_key_encoding=_DEFAULT_CKE,
                    fill_value=encode_fill_value_v3(default_fill_value(native), native),
                    codecs=[serializer], attributes=attributes)
        return ArraySpecV3(**{**base, **fields})


class GroupSpec(NodeSpec):
    """A ZOM group of either format (the base of :class:`GroupSpecV2` and :class:`GroupSpecV3`)."""

    node_type: ClassVar[str] = "group"
    members: FrozenDict

    def _check_members(self) -> None:
        members = self.members
        if isinstance(members, NodeSpec) or not isinstance(members, Mapping):
            raise _fail(type(self), "members", type(members).__name__, "a mapping of names to array or group specs")
        out = {}
        for name, node in members.items():
            check_member_name(name, self.zarr_format)
            if isinstance(node, Mapping):
                node = _node_from_json(node, "/" + name, self.zarr_format)
            if not isinstance(node, NodeSpec):
                raise MetadataError(
                    f"{type(self).__name__}: member {name!r}: found {type(node).__name__}, expected an "
                    "ArraySpec, a GroupSpec or its JSON document")
            if node.zarr_format != self.zarr_format:
                raise MetadataError(
                    f"{type(self).__name__}: member {name!r} is a v{node.zarr_format} "
                    f"{node.node_type}, expected v{self.zarr_format} (a hierarchy has one format)")
            out[name] = node
        object.__setattr__(self, "members", FrozenDict(out))

    @classmethod
    def from_flat(cls, flat: Mapping[str, NodeSpec]) -> GroupSpec:
        """The group whose :meth:`to_flat` is ``flat``; see :func:`zarrdask.zom.from_flat`."""
        spec = from_flat(flat)
        if not isinstance(spec, cls):
            raise MetadataError(f"from_flat: the root is a v{spec.zarr_format} {spec.node_type}, "
                                f"expected a {cls.__name__}")
        return spec

    def to_v3(self) -> GroupSpecV3:
        """This hierarchy converted to Zarr v3; see :func:`zarrdask.zom.convert_v2_to_v3`."""
        from .convert import convert_v2_to_v3

        return convert_v2_to_v3(self)

    def _json_members(self) -> dict[str, Any]:
        return {name: node.to_json() for name, node in self.members.items()}


# --------------------------------------------------------------------------- the concrete classes
# (imported here, below the bases they derive from)
from .v2 import ArraySpecV2, GroupSpecV2
from .v3 import _DEFAULT_CKE, ArraySpecV3, GroupSpecV3

_CLASSES = {(2, "array"): ArraySpecV2, (2, "group"): GroupSpecV2,
            (3, "array"): ArraySpecV3, (3, "group"): GroupSpecV3}


# --------------------------------------------------------------------------- JSON and flat form
def _node_from_json(doc: Any, path: str, inherited: int | None, default: int | None = None) -> NodeSpec:
    if isinstance(doc, NodeSpec):
        return doc
    if not isinstance(doc, Mapping):
        raise MetadataError(f"ZOM document at {path!r}: found {type(doc).__name__} {doc!r:.80}, "
                            "expected a JSON object (an array or a group)")
    fmt = _format_of(doc, inherited, path, default)
    kind = _kind_of(doc)
    cls = _CLASSES[fmt, kind]
    fields = {k: v for k, v in doc.items() if k != "members"}
    try:
        if kind == "array":
            if "members" in doc:
                raise MetadataError(f"{cls.__name__}: an array has no 'members'")
            return cls._from_fields(fields)
        raw = doc.get("members", {})
        if not isinstance(raw, Mapping):
            raise MetadataError(f"{cls.__name__}: field 'members': found {raw!r:.80}, expected a JSON object")
        members = {}
        for name, sub in raw.items():
            check_member_name(name, fmt)
            members[name] = _node_from_json(sub, _join(path, name), fmt)
        return cls._from_fields(fields, members)
    except MetadataError as e:
        if str(e).startswith("ZOM document at "):
            raise
        raise MetadataError(f"ZOM document at {path!r}: {e}") from None
    except TypeError as e:
        raise MetadataError(f"ZOM document at {path!r}: {e}") from None


def from_json(doc: Mapping[str, Any]) -> NodeSpec:
    """The array or group spec of a ZOM JSON document (either format)."""
    return NodeSpec.from_json(doc)


def _flatten(node: NodeSpec, path: str, out: dict[str, NodeSpec]) -> None:
    if isinstance(node, GroupSpec):
        out[path] = node.replace(members={})
        for name, child in node.members.items():
            _flatten(child, _join(path, name), out)
    else:
        out[path] = node


def _norm_flat_path(path: str) -> str:
    if not isinstance(path, str):
        raise MetadataError(f"from_flat: a path must be a string, found {path!r}")
    parts = [p for p in path.split("/") if p]
    return "/" + "/".join(parts)


def from_flat(flat: Mapping[str, NodeSpec]) -> NodeSpec:
    """The hierarchy whose flat form (:meth:`NodeSpec.to_flat`) is ``flat``.

    Parameters
    ----------
    flat
        Paths (``"/"``, ``"/a"``, ``"/a/b"``; the leading ``"/"`` is optional)
        to array or group specs (or their JSON) without members.

    Returns
    -------
    NodeSpec
        The root. Missing intermediate groups, the root included, are created
        empty (as Zarr creates missing parents).

    Raises
    ------
    MetadataError
        A node below an array, mixed formats, a group given with members.
    """
    nodes: dict[str, NodeSpec] = {}
    for raw, node in flat.items():
        path = _norm_flat_path(raw)
        if path in nodes:
            raise MetadataError(f"from_flat: the path {path!r} is given twice")
        if isinstance(node, Mapping):
            node = _node_from_json(node, path, None)
        if not isinstance(node, NodeSpec):
            raise MetadataError(f"from_flat: {path!r}: found {type(node).__name__}, expected a node spec")
        if isinstance(node, GroupSpec) and node.members:
            raise MetadataError(f"from_flat: the group at {path!r} has members; give each node at its own path")
        nodes[path] = node
    if not nodes:
        raise MetadataError("from_flat: no nodes given")
    formats = {n.zarr_format for n in nodes.values()}
    if len(formats) != 1:
        raise MetadataError(f"from_flat: nodes of formats {sorted(formats)}; a hierarchy has one format")
    fmt = formats.pop()
    group_cls = _CLASSES[fmt, "group"]
    children: dict[str, list[str]] = {}
    for path in list(nodes):
        while path != "/":
            parent = path.rsplit("/", 1)[0] or "/"
            siblings = children.setdefault(parent, [])
            if path not in siblings:
                siblings.append(path)
            if parent not in nodes:
                nodes[parent] = group_cls()
            path = parent
    for parent in children:
        if isinstance(nodes[parent], ArraySpec):
            raise MetadataError(f"from_flat: {children[parent][0]!r} is below the array {parent!r}; "
                                "only groups have members")

    def build(path: str) -> NodeSpec:
        node = nodes[path]
        kids = children.get(path)
        if not kids:
            return node
        return node.replace(members={p.rsplit("/", 1)[1]: build(p) for p in kids})

    return build("/")


def _as_spec(other: Any) -> NodeSpec:
    if isinstance(other, NodeSpec):
        return other
    if isinstance(other, Mapping) and ("zarr_format" in other or "zarr_version" in other):
        return from_json(other)
    from .io import from_zarr

    return from_zarr(other)
