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

Each concrete class registers itself as the class of its format and node
kind when it is defined (:func:`spec_class`), so this module, which
:mod:`.v2` and :mod:`.v3` build on, never imports them. The methods that
reach further up — :meth:`NodeSpec.to_zarr`, :meth:`NodeSpec.from_zarr`,
:meth:`NodeSpec.diff`, ``to_v3`` and :meth:`NodeSpec.like` given a stored
node — call the functions of :mod:`.io`, :mod:`.diff` and :mod:`.convert`
that the package hands over (:class:`Operations`): imports point one way.

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
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from ..chunking.rectilinear import normalize_chunks
from ..errors import MetadataError
from ._frozen import UNSET, FrozenDict, canonical_dumps, json_equal, thaw
from .fields import check_member_name, child_path, field_error
from .schema import validate_json

__all__ = [
    "ArraySpec",
    "GroupSpec",
    "NodeSpec",
    "as_spec",
    "from_flat",
    "from_json",
]


# --------------------------------------------------------------------------- the modules above
@dataclasses.dataclass(frozen=True)
class Operations:
    """The functions behind the spec methods that reach the modules above this one.

    Reading and writing stores (:mod:`.io`), :func:`~zarrdask.zom.diff` and
    :func:`~zarrdask.zom.convert_v2_to_v3` import this module, so it cannot
    import them: ``zarrdask.zom``'s ``__init__`` hands them over with
    :func:`install_operations` once they are all imported, before any spec
    method can run (importing any module of the package runs it first).
    """

    from_zarr: Callable[..., NodeSpec]
    to_zarr: Callable[..., Any]
    diff: Callable[..., list]
    convert_v2_to_v3: Callable[[NodeSpec], NodeSpec]


_installed: list[Operations] = []


def install_operations(functions: Operations) -> None:
    """Give the spec methods the functions of the modules above (see :class:`Operations`)."""
    _installed[:] = [functions]


def operations() -> Operations:
    """The functions :func:`install_operations` installed."""
    if not _installed:
        raise RuntimeError("zarrdask.zom.spec: the package's __init__ has not installed its operations")
    return _installed[0]


# --------------------------------------------------------------------------- the concrete classes
#: ``(zarr_format, node_type)`` → the class of such nodes (:mod:`.v2`, :mod:`.v3` define them)
_CLASSES: dict[tuple[int, str], type[NodeSpec]] = {}


def spec_class(zarr_format: Any, node_type: str) -> type[NodeSpec]:
    """The spec class of a v``zarr_format`` ``node_type`` (``"array"`` or ``"group"``)."""
    try:
        return _CLASSES[zarr_format, node_type]
    except (KeyError, TypeError):
        raise ValueError(f"zarr_format must be 2 or 3, found {zarr_format!r}") from None


# --------------------------------------------------------------------------- JSON documents
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
def _field_selection(spec: Any) -> dict | None:
    """``include=`` / ``exclude=`` as a dict of field names (a name, a set of names, or a nested mapping)."""
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
    inc, exc = _field_selection(include), _field_selection(exclude)
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
    """What array and group specs share: JSON, equality, comparison, storage.

    A subclass that gives ``zarr_format`` a value (:class:`ArraySpecV2`, ...)
    is *the* class of its format and node type: documents of that kind become
    instances of it (:func:`spec_class`).
    """

    zarr_format: int
    node_type: ClassVar[str] = ""
    attributes: FrozenDict

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        zarr_format = cls.__dict__.get("zarr_format")
        if isinstance(zarr_format, int):
            _CLASSES[zarr_format, cls.node_type] = cls

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
        spec = node_from_json(doc, "/", None, default.default if default is not None else None)
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
        other_spec = as_spec(other)
        return json_equal(_select(self.to_json(), include, exclude),
                          _select(other_spec.to_json(), include, exclude))

    def diff(self, other: Any) -> list:
        """Every differing path and field; see :func:`zarrdask.zom.diff`."""
        return operations().diff(self, other)

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
        validate_json(self.to_json(), zarr_format=self.zarr_format)

    def to_zarr(self, store: Any, path: str = "", overwrite: bool = False, *,
                storage_options: dict[str, Any] | None = None) -> Any:
        """Create this hierarchy's metadata documents in ``store`` under ``path``.

        See :func:`zarrdask.zom.to_zarr`.
        """
        return operations().to_zarr(self, store, path, overwrite=overwrite, storage_options=storage_options)

    @classmethod
    def from_zarr(cls, node: Any, depth: int | None = None) -> NodeSpec:
        """The spec of a zarrdask array or group (``depth`` limits the levels of
        members read, ``None`` reads all). See :func:`zarrdask.zom.from_zarr`."""
        spec = operations().from_zarr(node, depth=depth)
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
        shape = tuple(int(s) for s in array.shape)
        chunks = _chunks_like(shape if chunks is None else tuple(chunks), zarr_format)
        target = spec_class(zarr_format, "array")
        defaults = target._default_fields(shape, np.dtype(array.dtype), chunks, dict(attributes or {}))
        return target(**{**defaults, **fields})

    @classmethod
    def _default_fields(cls, shape: tuple[int, ...], dtype: np.dtype, chunks: tuple,
                        attributes: dict[str, Any]) -> dict[str, Any]:
        """The fields :meth:`from_array` gives an array of this class (``chunks``:
        one length per axis, or edge lengths where an axis is irregular)."""
        raise NotImplementedError


def _chunks_like(chunks: tuple, zarr_format: int) -> tuple:
    """``from_array``'s ``chunks``: one positive length per axis, or (v3 only)
    edge lengths along an axis whose chunks are irregular (a dask ``chunks``
    entry whose chunks, the last aside, are not all equal)."""
    if all(isinstance(c, (int, np.integer)) for c in chunks):
        return tuple(max(1, int(c)) for c in chunks)
    if zarr_format != 3:
        raise ValueError(f"irregular chunks {chunks} need zarr_format=3 (the rectilinear chunk grid)")
    per_axis = [c if isinstance(c, int) else (c[0] if len(set(c[:-1])) <= 1 and c[-1] <= c[0] else c)
                for c in normalize_chunks(chunks)]
    return tuple(max(1, c) if isinstance(c, int) else c for c in per_axis)


class GroupSpec(NodeSpec):
    """A ZOM group of either format (the base of :class:`GroupSpecV2` and :class:`GroupSpecV3`)."""

    node_type: ClassVar[str] = "group"
    members: FrozenDict

    def _check_members(self) -> None:
        members = self.members
        if isinstance(members, NodeSpec) or not isinstance(members, Mapping):
            raise field_error(type(self), "members", type(members).__name__,
                              "a mapping of names to array or group specs")
        out = {}
        for name, node in members.items():
            check_member_name(name, self.zarr_format)
            if isinstance(node, Mapping):
                node = node_from_json(node, "/" + name, self.zarr_format)
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

    def to_v3(self) -> GroupSpec:
        """This hierarchy converted to Zarr v3 (a :class:`GroupSpecV3`); see
        :func:`zarrdask.zom.convert_v2_to_v3`."""
        return operations().convert_v2_to_v3(self)  # type: ignore[return-value]

    def _json_members(self) -> dict[str, Any]:
        return {name: node.to_json() for name, node in self.members.items()}


# --------------------------------------------------------------------------- JSON and flat form
def node_from_json(doc: Any, path: str, inherited: int | None, default: int | None = None) -> NodeSpec:
    """The spec of the ZOM JSON node ``doc`` at ``path`` (a spec is returned as it is).

    ``inherited`` is the parent's format (the node must have it; ``None`` at
    the root), ``default`` the format of a root that names none.
    """
    if isinstance(doc, NodeSpec):
        return doc
    if not isinstance(doc, Mapping):
        raise MetadataError(f"ZOM document at {path!r}: found {type(doc).__name__} {doc!r:.80}, "
                            "expected a JSON object (an array or a group)")
    fmt = _format_of(doc, inherited, path, default)
    kind = _kind_of(doc)
    cls = spec_class(fmt, kind)
    fields = {k: v for k, v in doc.items() if k != "members"}
    try:
        if kind == "array":
            if "members" in doc:
                raise MetadataError(f"{cls.__name__}: an array has no 'members'")
            return cls._from_fields(fields)  # type: ignore[attr-defined]
        return cls._from_fields(fields, _members_from_json(cls, doc, path, fmt))  # type: ignore[attr-defined]
    except MetadataError as e:
        if str(e).startswith("ZOM document at "):
            raise
        raise MetadataError(f"ZOM document at {path!r}: {e}") from None
    except TypeError as e:
        raise MetadataError(f"ZOM document at {path!r}: {e}") from None


def _members_from_json(cls: type, doc: Mapping, path: str, fmt: int) -> dict[str, NodeSpec]:
    raw = doc.get("members", {})
    if not isinstance(raw, Mapping):
        raise MetadataError(f"{cls.__name__}: field 'members': found {raw!r:.80}, expected a JSON object")
    members = {}
    for name, sub in raw.items():
        check_member_name(name, fmt)
        members[name] = node_from_json(sub, child_path(path, name), fmt)
    return members


def from_json(doc: Mapping[str, Any]) -> NodeSpec:
    """The array or group spec of a ZOM JSON document (either format)."""
    return NodeSpec.from_json(doc)


def as_spec(other: Any) -> NodeSpec:
    """``other`` as a spec: a spec as it is, a ZOM JSON document (one naming
    its ``zarr_format``) parsed, anything else read with
    :func:`~zarrdask.zom.from_zarr` (a zarrdask array or group, a store)."""
    if isinstance(other, NodeSpec):
        return other
    if isinstance(other, Mapping) and ("zarr_format" in other or "zarr_version" in other):
        return from_json(other)
    return operations().from_zarr(other)


def _flatten(node: NodeSpec, path: str, out: dict[str, NodeSpec]) -> None:
    if isinstance(node, GroupSpec):
        out[path] = node.replace(members={})
        for name, child in node.members.items():
            _flatten(child, child_path(path, name), out)
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
    nodes = _flat_nodes(flat)
    children = _add_parents(nodes)

    def build(path: str) -> NodeSpec:
        node = nodes[path]
        kids = children.get(path)
        if not kids:
            return node
        return node.replace(members={p.rsplit("/", 1)[1]: build(p) for p in kids})

    return build("/")


def _flat_nodes(flat: Mapping[str, NodeSpec]) -> dict[str, NodeSpec]:
    """The nodes of a flat form by normalised path, checked: specs without members, of one format."""
    nodes: dict[str, NodeSpec] = {}
    for raw, node in flat.items():
        path = _norm_flat_path(raw)
        if path in nodes:
            raise MetadataError(f"from_flat: the path {path!r} is given twice")
        if isinstance(node, Mapping):
            node = node_from_json(node, path, None)
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
    return nodes


def _add_parents(nodes: dict[str, NodeSpec]) -> dict[str, list[str]]:
    """Add the missing ancestors of ``nodes`` as empty groups; return every
    parent's children (paths, in the order given)."""
    group_cls = spec_class(next(iter(nodes.values())).zarr_format, "group")
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
    return children
