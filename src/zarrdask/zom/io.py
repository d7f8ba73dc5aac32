"""Reading specs from stored hierarchies and writing hierarchies from specs.

The only module of :mod:`zarrdask.zom` that uses :mod:`zarrdask.core`, and only
its public API (``open``, ``Array``, ``Group``, ``Group.members``). ZEP 6,
"Definition of hierarchy structure": the structure is the tree of nodes and
their metadata, so :func:`from_zarr` reads metadata documents only (no chunk
data) and :func:`to_zarr` writes metadata documents only.

Reading uses ``Group.members(max_depth=...)``; when the group is opened with
consolidated metadata, that is a single metadata read.

Writing (:func:`to_zarr`) first validates every node's document with
:mod:`zarrdask.metadata` and reads what already exists at every path of the
spec. A node that exists and is equal (compared after parsing, so ``1`` and
``1.0`` or a missing and an empty ``storage_transformers`` are equal) is left
alone. A node that differs — other metadata or attributes, another node type,
another format, or unreadable metadata — is a conflict: without
``overwrite=True``, :class:`~zarrdask.errors.NodeConflictError` names every
such path and field and nothing is written. With ``overwrite=True`` exactly the
conflicting nodes are replaced: an array whose metadata (not only its
attributes) changes, or a node whose type changes, is deleted with everything
under it (its chunks are meaningless under new metadata); otherwise only the
node's metadata documents are rewritten. Nodes in the store but not in the
spec are left alone. All documents are then written in one batched store call.
Missing ancestors of ``path`` are created as empty groups (as
``zarrdask.create_array`` does); an array among them is an error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..core.api import open as open_node
from ..core.array import Array
from ..core.group import Group
from ..errors import (
    ContainsArrayError,
    NodeConflictError,
    NodeNotFoundError,
    ReadOnlyError,
    ZarrdaskError,
)
from ..metadata import (
    ArrayMetadataV2,
    ArrayMetadataV3,
    GroupMetadataV2,
    GroupMetadataV3,
    validate_node_name,
)
from ..storage import store_from
from ..storage.cache import invalidate_prefix
from ..storage.keys import normalize_path
from ._frozen import thaw
from .diff import diff
from .spec import ArraySpec, NodeSpec, from_flat
from .v2 import ArraySpecV2, GroupSpecV2
from .v3 import ArraySpecV3, GroupSpecV3

__all__ = ["from_zarr", "to_zarr"]

_META_NAMES = (".zarray", ".zgroup", ".zattrs", "zarr.json")


# --------------------------------------------------------------------------- reading
def _node_spec(node: Array | Group) -> NodeSpec:
    """The spec of one node, without members."""
    attributes = node.attrs.asdict()
    meta = node.metadata
    if node.zarr_format == 3:
        doc = meta.to_json()
        doc.pop("attributes", None)
        doc.pop("consolidated_metadata", None)
        doc["attributes"] = attributes
        if isinstance(node, Array):
            return ArraySpecV3._from_fields(doc)
        return GroupSpecV3._from_fields(doc, {})
    if isinstance(node, Array):
        return ArraySpecV2._from_fields({**meta.to_json(), "attributes": attributes})
    return GroupSpecV2(attributes=attributes)


def _open(target: Any, path: str = "", *, storage_options: dict[str, Any] | None = None) -> Array | Group:
    if isinstance(target, (Array, Group)):
        if path:
            if not isinstance(target, Group):
                raise TypeError(f"path={path!r} given with the array {target!r}")
            return target[path]
        return target
    return open_node(target, path=path, mode="r", storage_options=storage_options)


def from_zarr(node: Any, *, path: str = "", depth: int | None = None,
              storage_options: dict[str, Any] | None = None) -> NodeSpec:
    """The spec of a stored array or group (metadata only, no array data).

    Parameters
    ----------
    node
        A :class:`zarrdask.Array` or :class:`zarrdask.Group`, or anything
        :func:`zarrdask.open` takes as a store (a path, URL, Store), opened
        read-only.
    path
        The node's path in ``node`` (a store, or a group).
    depth
        How many levels of members to read: ``None`` (or a negative number) all,
        ``0`` the group alone, ``1`` its direct members, ...
    storage_options
        For fsspec URLs.

    Returns
    -------
    ArraySpecV2, ArraySpecV3, GroupSpecV2 or GroupSpecV3
    """
    node = _open(node, path, storage_options=storage_options)
    own = _node_spec(node)
    if isinstance(node, Array) or depth == 0:
        return own
    max_depth = None if depth is None or depth < 0 else depth - 1
    flat: dict[str, NodeSpec] = {"/": own}
    for name, child in node.members(max_depth=max_depth):
        flat["/" + name] = _node_spec(child)
    return from_flat(flat)


# --------------------------------------------------------------------------- writing
def _key(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _store_path(root: str, rel: str) -> str:
    """The store path of the node at the ZOM path ``rel`` of a hierarchy written at ``root``."""
    rel = rel.strip("/")
    return f"{root}/{rel}".strip("/") if rel else root


def _parse(spec: NodeSpec, path: str) -> Any:
    """The zarrdask metadata object of one node's document (full validation)."""
    doc = spec.metadata_document()
    if isinstance(spec, ArraySpecV3):
        return ArrayMetadataV3.from_json(doc, key=_key(path, "zarr.json"))
    if isinstance(spec, GroupSpecV3):
        return GroupMetadataV3.from_json(doc, key=_key(path, "zarr.json"))
    if isinstance(spec, ArraySpecV2):
        return ArrayMetadataV2.from_json(doc, key=_key(path, ".zarray"))
    return GroupMetadataV2.from_json(doc, key=_key(path, ".zgroup"))


def _documents(spec: NodeSpec, path: str) -> dict[str, bytes]:
    attrs = _json.dumps(thaw(spec.attributes)) if spec.zarr_format == 2 else None
    doc = _json.dumps(spec.metadata_document())
    if spec.zarr_format == 3:
        return {_key(path, "zarr.json"): doc}
    name = ".zarray" if isinstance(spec, ArraySpec) else ".zgroup"
    return {_key(path, name): doc, _key(path, ".zattrs"): attrs}  # type: ignore[dict-item]


def _canonical(meta: Any, attributes: dict[str, Any]) -> NodeSpec:
    """A node spec in canonical form: equal for documents with the same meaning."""
    if isinstance(meta, ArrayMetadataV3):
        doc = dataclasses.replace(meta, _source=None, attributes=attributes).to_json()
        return ArraySpecV3._from_fields(doc)
    if isinstance(meta, GroupMetadataV3):
        doc = dataclasses.replace(meta, _source=None, consolidated_metadata=None, attributes=attributes).to_json()
        return GroupSpecV3._from_fields(doc, {})
    if isinstance(meta, ArrayMetadataV2):
        return ArraySpecV2._from_fields({**meta.to_json(), "attributes": attributes})
    return GroupSpecV2(attributes=attributes)


def _read_existing(store: Any, path: str) -> Array | Group | Exception | None:
    try:
        return open_node(store, path=path, mode="r")
    except NodeNotFoundError:
        return None
    except (ZarrdaskError, ValueError) as e:  # unreadable metadata
        return e


def _describe(node: Array | Group) -> str:
    return f"a v{node.zarr_format} {'array' if isinstance(node, Array) else 'group'}"


def to_zarr(spec: NodeSpec, store: Any, path: str = "", overwrite: bool = False, *,
            storage_options: dict[str, Any] | None = None) -> Array | Group:
    """Create the hierarchy of ``spec`` (metadata documents only) in ``store`` at ``path``.

    Parameters
    ----------
    spec
        An array or group spec.
    store
        A Store, or anything :func:`zarrdask.open_group` takes (a path, URL, ...).
    path
        Where in the store the spec's root goes.
    overwrite
        Replace existing nodes that differ from the spec (see the module
        docstring for exactly what is deleted); otherwise they are an error.
    storage_options
        For fsspec URLs.

    Returns
    -------
    zarrdask.Array or zarrdask.Group
        The root node, opened read/write.

    Raises
    ------
    MetadataError
        A node's document is not valid Zarr metadata (names the node's key).
    NodeConflictError
        Existing nodes differ and ``overwrite`` is false; names every path.
    ContainsArrayError
        An ancestor of ``path`` is an array.
    """
    if not isinstance(spec, NodeSpec):
        raise TypeError(f"to_zarr: expected an ArraySpec or GroupSpec, found {type(spec).__name__}")
    store = store_from(store, mode="a", storage_options=storage_options)
    root = normalize_path(path)
    fmt = spec.zarr_format
    if fmt == 3:
        for segment in root.split("/") if root else ():
            validate_node_name(segment)
    planned = _planned(spec, root)
    docs = _missing_ancestors(store, root, fmt)
    changes = _changes(store, planned, fmt)
    if changes.conflicts and not overwrite:
        lines = "\n  ".join(changes.conflicts)
        raise NodeConflictError(
            f"cannot write the hierarchy at '/{root}' in {store!r}: {len(changes.conflict_paths)} stored node(s) "
            f"differ from the spec (pass overwrite=True to replace them):\n  {lines}", changes.conflict_paths)
    # nodes below a deleted tree are written again even if they were equal
    for p in planned:
        if p not in changes.write and any(p.startswith(t + "/") or not t for t in changes.delete_trees):
            changes.write.append(p)
    for p in changes.write:
        docs.update(_documents(planned[p][0], p))
    _apply(store, root, docs, changes)
    return open_node(store, path=root, mode="r+")


def _planned(spec: NodeSpec, root: str) -> dict[str, tuple[NodeSpec, Any]]:
    """Every node of ``spec`` by its store path, with its metadata parsed: every
    document is validated before anything is read or written."""
    planned: dict[str, tuple[NodeSpec, Any]] = {}
    for rel, node in spec.to_flat().items():
        p = _store_path(root, rel)
        planned[p] = (node, _parse(node, p))
    return planned


def _missing_ancestors(store: Any, root: str, fmt: int) -> dict[str, bytes]:
    """The documents of empty groups for the missing ancestors of ``root``; an array among them is an error."""
    docs: dict[str, bytes] = {}
    parts = root.split("/") if root else []
    for i in range(len(parts)):
        anc = "/".join(parts[:i])
        existing = _read_existing(store, anc)
        if isinstance(existing, Array):
            raise ContainsArrayError(
                f"cannot write the hierarchy at '/{root}' in {store!r}: its ancestor '/{anc}' is an array, "
                "and only groups have members")
        if existing is None:
            empty = GroupSpecV3() if fmt == 3 else GroupSpecV2()
            docs.update(_documents(empty, anc))
    return docs


@dataclass
class _Changes:
    """What writing a spec changes in a store (store paths), and the conflicts it meets."""

    write: list[str] = field(default_factory=list)
    delete_trees: list[str] = field(default_factory=list)
    delete_docs: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    conflict_paths: list[str] = field(default_factory=list)


def _changes(store: Any, planned: dict[str, tuple[NodeSpec, Any]], fmt: int) -> _Changes:
    """Compare what exists at each path of the spec with the spec."""
    changes = _Changes()
    for p, (node, meta) in planned.items():
        existing = _read_existing(store, p)
        if existing is None:
            changes.write.append(p)
            continue
        name = "/" + p
        conflict = _conflict(existing, node, meta, name, fmt)
        if conflict is None:
            continue
        messages, replace_tree = conflict
        changes.conflicts.extend(messages)
        changes.conflict_paths.append(name)
        changes.write.append(p)
        (changes.delete_trees if replace_tree else changes.delete_docs).append(p)
    return changes


def _conflict(existing: Array | Group | Exception, node: NodeSpec, meta: Any, name: str,
              fmt: int) -> tuple[list[str], bool] | None:
    """How the stored node at ``name`` differs from the spec's ``node`` (``None``:
    equal), and whether replacing it deletes everything under it (an array whose
    metadata, not only attributes, changes; a node whose type changes)."""
    is_array = isinstance(node, ArraySpec)
    if isinstance(existing, Exception):
        return [f"{name}: the stored metadata cannot be read ({existing})"], is_array
    if existing.zarr_format != fmt or (isinstance(existing, Array) != is_array):
        message = f"{name}: {_describe(existing)} is stored, the spec has a v{fmt} {node.node_type}"
        return [message], isinstance(existing, Array) != is_array or is_array
    stored = _canonical(existing.metadata, existing.attrs.asdict())
    wanted = _canonical(meta, thaw(node.attributes))
    differences = diff(stored, wanted, path=name)
    if not differences:
        return None
    messages = [f"{d.path}: field {d.field!r}: stored {d.left!r:.100}, spec {d.right!r:.100}" for d in differences]
    return messages, is_array and any(not d.field.startswith("attributes.") for d in differences)


def _apply(store: Any, root: str, docs: dict[str, bytes], changes: _Changes) -> None:
    """Delete the replaced trees and the stale documents, then write ``docs`` in one batched call."""
    if (docs or changes.delete_trees or changes.delete_docs) and not store.writable:
        raise ReadOnlyError(f"cannot write the hierarchy at '/{root}': {store!r} is read-only")
    for p in changes.delete_trees:
        store.delete_prefix(p + "/" if p else "")
        invalidate_prefix(store, p + "/" if p else "")
    stale = [_key(p, n) for p in changes.delete_trees + changes.delete_docs for n in _META_NAMES]
    stale = [k for k in stale if k not in docs]
    if stale:
        store.delete_many(stale)
    if docs:
        store.set_many(docs)
