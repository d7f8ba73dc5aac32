"""Finding, reading and writing node metadata documents.

Zarr v2 (spec "Hierarchies"): an array is a ``.zarray`` key, a group a ``.zgroup``
key, user attributes live in ``.zattrs``; creating a node creates every missing
ancestor group. Zarr v3 (zarr-specs v3 core, "Storage" and "Hierarchy"): every
node is one ``zarr.json`` document holding its attributes; there are no implicit
groups, so a path without ``zarr.json`` is not a node.

Lookups are batched: the documents of many nodes are read with one store call
(per format, when the format is not known: ``zarr.json`` first).
"""

from __future__ import annotations

import copy
import errno
import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterator

from .. import _json, config
from .._memory import paused_gc
from ..errors import (
    ContainsArrayError,
    ContainsGroupError,
    InvalidKeyError,
    MetadataError,
    NodeNotFoundError,
    ReadOnlyError,
)
from ..metadata import ArrayMetadataV2, ArrayMetadataV3, GroupMetadataV2, GroupMetadataV3, validate_node_name
from ..storage.abc import Store
from ..storage.cache import invalidate_prefix
from ..storage.capabilities import STREAMING
from ..storage.keys import join_path, normalize_path

ZARRAY, ZGROUP, ZATTRS, ZARR_JSON = ".zarray", ".zgroup", ".zattrs", "zarr.json"
ZMETADATA = ".zmetadata"


def key_of(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def node_name(path: str) -> str:
    return "/" + path


def missing_root(store: Store) -> str | None:
    """The local directory ``store`` is rooted at when that directory does not
    exist (a mistyped path, a store never written); ``None`` for any other store."""
    from ..storage.local import LocalStore

    if isinstance(store, LocalStore) and not os.path.exists(store.root):
        return store.root
    return None


def not_found(
    cls: type[NodeNotFoundError], store: Store, path: str, what: str, suffix: str = ""
) -> NodeNotFoundError:
    """The error for "no ``what`` (``"group"``, ``"array"``, ``"array or group"``)
    at ``path`` in ``store``", telling a store that does not exist from one that
    holds no such node; its message names the store and the path in it."""
    root = missing_root(store)
    if root is not None:
        at = f" at path {node_name(path)!r}" if path else ""
        err = cls(f"{root!r} does not exist (no such file or directory): no Zarr {what}{at} to open there{suffix}")
        err.errno, err.filename = errno.ENOENT, root
        return err
    return cls(f"no Zarr {what} at path {node_name(path)!r} in {store!r}{suffix}")


@dataclass(frozen=True)
class NodeDocs:
    """The parsed metadata of one node."""

    path: str
    zarr_format: int
    node_type: str  # "array" | "group"
    metadata: Any  # ArrayMetadataV2 | ArrayMetadataV3 | GroupMetadataV2 | GroupMetadataV3
    attributes: dict[str, Any]
    # For a group read with consolidated metadata: every descendant, by its path
    # relative to this group. ``None`` when there is no consolidated metadata.
    consolidated: "Consolidated | None" = None


class Consolidated:
    """The nodes of a consolidated metadata document, seen from one group of
    its hierarchy.

    The entries, keyed by their path relative to the group whose document
    lists them, are indexed by parent once, when the document is read; the
    view of a group below (:meth:`below`) shares the entries and the index, so
    finding a member or listing a group's children never scans the hierarchy:
    opening every node of it costs time linear in the nodes.
    """

    __slots__ = ("_nodes", "_children", "_prefix")

    def __init__(self, nodes: dict[str, NodeDocs], *, prefix: str = "",
                 children: dict[str, list[str]] | None = None) -> None:
        self._nodes = nodes
        if children is None:
            children = {}
            for rel in nodes:
                children.setdefault(rel.rpartition("/")[0], []).append(rel)
        self._children = children
        self._prefix = prefix

    def _full(self, rel: str) -> str:
        return f"{self._prefix}/{rel}" if self._prefix else rel

    def get(self, rel: str) -> NodeDocs | None:
        """The node at ``rel`` (a normalised path relative to this view's group), or None."""
        return self._nodes.get(self._full(rel))

    def below(self, rel: str) -> "Consolidated":
        """The view from the group at ``rel`` (relative to this view's group)."""
        return Consolidated(self._nodes, prefix=self._full(rel), children=self._children)

    def children(self) -> list[tuple[str, NodeDocs]]:
        """``(name, node)`` of the direct children of this view's group, in the document's order."""
        cut = len(self._prefix) + 1 if self._prefix else 0
        return [(full[cut:], self._nodes[full]) for full in self._children.get(self._prefix, ())]


def _candidate_keys(path: str, zarr_format: int | None, consolidated: bool = False) -> list[str]:
    keys = []
    if zarr_format in (None, 3):
        keys.append(key_of(path, ZARR_JSON))
    if zarr_format in (None, 2):
        keys += [key_of(path, ZARRAY), key_of(path, ZGROUP), key_of(path, ZATTRS)]
        if consolidated:
            keys.append(key_of(path, ZMETADATA))
    return keys


def _object(found: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The JSON object stored at ``key`` (bytes, or already parsed), or None."""
    raw = found.get(key)
    if raw is None:
        return None
    # bytes from the store, or a value of an already parsed consolidated document
    doc = _json.loads(raw, key=key) if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    if not isinstance(doc, dict):
        raise MetadataError(f"{key}: expected a JSON object, found {type(doc).__name__}")
    return doc


#: v3 array documents already parsed, by their bytes and the settings their
#: checks depend on: a notebook's repeated ``open_array(...)`` of an unchanged
#: array parses its ``zarr.json`` once (the metadata objects are immutable)
_PARSED: dict[tuple[bytes, Any, Any], ArrayMetadataV3] = {}
_PARSED_MAX = 256
_PARSED_MAX_BYTES = 1 << 16


def _parsed_array(path: str, raw: Any) -> NodeDocs | None:
    """The v3 array node whose ``zarr.json`` bytes ``raw`` were parsed before, else ``None``."""
    if not isinstance(raw, bytes) or len(raw) > _PARSED_MAX_BYTES:
        return None
    meta = _PARSED.get((raw, config.get("max_chunk_bytes"), config.get("max_json_depth")))
    return None if meta is None else NodeDocs(path, 3, "array", meta, _own_attributes(meta.attributes))


def _remember_array(raw: Any, meta: ArrayMetadataV3) -> None:
    if isinstance(raw, bytes) and len(raw) <= _PARSED_MAX_BYTES:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()  # (as the codec chains: no eviction order to keep between threads)
        _PARSED[(raw, config.get("max_chunk_bytes"), config.get("max_json_depth"))] = meta


def _own_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``attributes`` nothing else holds a part of (they are edited in place)."""
    if all(v is None or isinstance(v, (str, int, float)) for v in attributes.values()):
        return dict(attributes)
    return copy.deepcopy(attributes)


def _parse(path: str, found: dict[str, Any], consolidated: bool = False) -> NodeDocs | None:
    key = key_of(path, ZARR_JSON)
    raw = found.get(key)
    known = _parsed_array(path, raw)
    if known is not None:
        return known
    doc = _object(found, key)
    if doc is not None:
        node_type = doc.get("node_type")
        if node_type == "array":
            meta = ArrayMetadataV3.from_json(doc, key=key, owned=True)
            _remember_array(raw, meta)
            return NodeDocs(path, 3, node_type, meta, _own_attributes(meta.attributes))
        if node_type == "group":
            meta = GroupMetadataV3.from_json(doc, key=key, owned=True)
        else:
            raise MetadataError(
                f"{key}: field 'node_type' must be 'array' or 'group', found {node_type!r}"
            )
        members = None
        if consolidated and node_type == "group" and meta.consolidated_metadata is not None:
            members = Consolidated(_consolidated_v3(path, meta.consolidated_metadata["metadata"]))
        return NodeDocs(path, 3, node_type, meta, dict(meta.attributes), members)
    zarray = _object(found, key_of(path, ZARRAY))
    zgroup = _object(found, key_of(path, ZGROUP))
    if zarray is None and zgroup is None:
        return None
    attrs = _object(found, key_of(path, ZATTRS)) or {}
    if zarray is not None:
        meta = ArrayMetadataV2.from_json(zarray, key=key_of(path, ZARRAY), owned=True)
        return NodeDocs(path, 2, "array", meta, attrs)
    meta = GroupMetadataV2.from_json(zgroup, key=key_of(path, ZGROUP))
    members = None
    if consolidated and found.get(key_of(path, ZMETADATA)) is not None:
        members = Consolidated(_consolidated_v2(path, found[key_of(path, ZMETADATA)]))
    return NodeDocs(path, 2, "group", meta, attrs, members)


def _consolidated_v3(path: str, entries: dict[str, Any]) -> dict[str, NodeDocs]:
    """The nodes listed in a v3 group's inline ``consolidated_metadata``: keys are
    paths relative to the group, values whole ``zarr.json`` documents."""
    out: dict[str, NodeDocs] = {}
    for name, doc in entries.items():
        try:
            rel = normalize_path(name)
            child = key_of(path, rel) if rel else path  # both normalised: join_path's result
            node = _parse(child, {key_of(child, ZARR_JSON): doc})
        except (MetadataError, InvalidKeyError) as e:
            raise _entry_error(key_of(path, ZARR_JSON), f"consolidated_metadata.metadata[{name!r}]", e) from None
        if node is not None:
            out[rel] = node
    return out


def _entry_error(key: str, field: str, e: MetadataError | InvalidKeyError) -> MetadataError:
    """An error in an entry of a consolidated document, naming that document and the entry."""
    cls = type(e) if isinstance(e, MetadataError) else MetadataError
    return cls(f"{key}: field {field!r}: {e}")


def _consolidated_v2(path: str, raw: bytes) -> dict[str, NodeDocs]:
    """The nodes listed in a v2 ``.zmetadata`` document (``{"zarr_consolidated_format":
    1, "metadata": {"<relative key>": <document>, ...}}``, as zarr-python writes it)."""
    key = key_of(path, ZMETADATA)
    doc = _object({key: raw}, key)
    assert doc is not None
    if doc.get("zarr_consolidated_format") != 1:
        raise MetadataError(
            f"{key}: field 'zarr_consolidated_format' must be 1, found {doc.get('zarr_consolidated_format')!r}"
        )
    entries = doc.get("metadata")
    if not isinstance(entries, dict):
        raise MetadataError(f"{key}: field 'metadata' must be an object, found {type(entries).__name__}")
    found: dict[str, Any] = {}
    paths: dict[str, str] = {}  # each node's relative path as listed -> its path in the store (normalised once)
    for k, v in entries.items():
        rel, _, name = k.rpartition("/")
        if name in (ZARRAY, ZGROUP, ZATTRS) and rel:
            child = paths.get(rel)
            if child is None:
                try:
                    child = paths[rel] = join_path(path, rel)
                except InvalidKeyError as e:
                    raise _entry_error(key, f"metadata[{k!r}]", e) from None
            found[key_of(child, name)] = v
    out: dict[str, NodeDocs] = {}
    for rel in sorted(paths):
        try:
            node = _parse(paths[rel], found)
        except (MetadataError, InvalidKeyError) as e:
            raise _entry_error(key, f"metadata[{rel + '/…'!r}]", e) from None
        if node is not None:
            out[rel] = node
    return out


def read_nodes(
    store: Store, paths: list[str], zarr_format: int | None = None, *, consolidated: bool = False,
    at_once: bool | None = None,
) -> list[NodeDocs | None]:
    """The nodes at ``paths`` (``None`` where there is none), in one batched
    store call per format: with ``zarr_format=None`` every ``zarr.json`` first
    (one request per path: a v3 hierarchy costs one round trip), then the v2
    documents of the paths that have none. ``at_once=True`` asks for the
    documents of both formats in one call (one round trip whatever the format,
    four requests per path); the default (``None``) does so on stores whose
    requests cost nothing but a function call (no capability ``streaming``:
    memory, local files, zip) when there are several paths or consolidated
    metadata to read, and asks for v3 first on remote ones, where every
    request is a billed round trip (docs/performance.md, "Remote stores"),
    and for one path (opening an array: one file read instead of four for a
    v3 node).

    With ``consolidated=True`` a group's consolidated metadata (v2 ``.zmetadata``,
    v3 inline ``consolidated_metadata``) is read in the same call and parsed
    into :attr:`NodeDocs.consolidated`.
    """
    if zarr_format is not None or not paths:
        at_once = True
    elif at_once is None:
        at_once = (len(paths) > 1 or consolidated) and STREAMING not in store.capabilities
    if at_once:
        keys = [k for p in paths for k in _candidate_keys(p, zarr_format, consolidated)]
        found = dict(zip(keys, store.get_many(keys)))
        with paused_gc():  # a consolidated document may hold thousands of nodes (zarrdask._memory)
            return [_parse(p, found, consolidated) for p in paths]
    # the format is unknown: v3 first (one request per node), the v2 documents
    # only of the paths without zarr.json
    keys = [key_of(p, ZARR_JSON) for p in paths]
    found = dict(zip(keys, store.get_many(keys)))
    rest = [p for p in paths if found[key_of(p, ZARR_JSON)] is None]
    if rest:
        keys = [k for p in rest for k in _candidate_keys(p, 2, consolidated)]
        found.update(zip(keys, store.get_many(keys)))
    with paused_gc():
        return [_parse(p, found, consolidated) for p in paths]


def read_node(
    store: Store, path: str, zarr_format: int | None = None, *, consolidated: bool = False
) -> NodeDocs | None:
    return read_nodes(store, [path], zarr_format, consolidated=consolidated)[0]


def require_node(store: Store, path: str, zarr_format: int | None = None) -> NodeDocs:
    node = read_node(store, path, zarr_format)
    if node is None:
        fmt = f" (zarr_format={zarr_format})" if zarr_format else ""
        raise not_found(NodeNotFoundError, store, path, "array or group", fmt)
    return node


def node_documents(metadata: Any, attributes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The JSON objects that store a node, by key name: ``zarr.json`` for v3;
    ``.zarray`` or ``.zgroup``, and ``.zattrs``, for v2."""
    if metadata.zarr_format == 3:
        doc = metadata.to_json()
        doc["attributes"] = attributes
        return {ZARR_JSON: doc}
    name = ZARRAY if isinstance(metadata, ArrayMetadataV2) else ZGROUP
    return {name: metadata.to_json(), ZATTRS: attributes}


def metadata_documents(
    path: str, zarr_format: int, metadata: Any, attributes: dict[str, Any]
) -> dict[str, bytes]:
    """The keys and bytes that store a node."""
    assert metadata.zarr_format == zarr_format
    return {key_of(path, name): _json.dumps(doc, key=key_of(path, name))
            for name, doc in node_documents(metadata, attributes).items()}


def node_keys(path: str) -> list[str]:
    """Every metadata key a node at ``path`` may have, in any format."""
    return [key_of(path, k) for k in (ZARR_JSON, ZARRAY, ZGROUP, ZATTRS)]


def ancestors(path: str) -> list[str]:
    """``"a/b/c"`` → ``["", "a", "a/b"]``."""
    if not path:
        return []
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts))]


def prepare_node(store: Store, path: str, zarr_format: int, *, overwrite: bool, kind: str) -> dict[str, bytes]:
    """Check that a node can be created at ``path``; return the documents of the
    ancestor groups that must be created with it (v2 spec "Groups": ancestors are
    created as groups; zarr-python does the same for v3).

    An existing node at ``path`` is an error unless ``overwrite``, in which case it
    is deleted with everything under it. An array among the ancestors is an error.
    """
    if zarr_format == 3:
        for segment in path.split("/") if path else ():
            validate_node_name(segment)
    paths = [*ancestors(path), path]
    # which nodes exist and of what kind, in one batch; their attributes
    # (v2 .zattrs) are not needed, so they are not asked for
    keys = [k for p in paths for k in _candidate_keys(p, None) if not k.endswith(ZATTRS)]
    found = dict(zip(keys, store.get_many(keys)))
    nodes = [_parse(p, found) for p in paths]
    existing = nodes[-1]
    if existing is not None and not overwrite:
        err = ContainsArrayError if existing.node_type == "array" else ContainsGroupError
        raise err(
            f"cannot create {kind} at path {node_name(path)!r} in {store!r}: a v{existing.zarr_format} "
            f"{existing.node_type} exists there (pass overwrite=True to replace it)"
        )
    docs: dict[str, bytes] = {}
    for p, node in zip(paths[:-1], nodes[:-1]):
        if node is None:
            meta = GroupMetadataV3.from_json(
                {"zarr_format": 3, "node_type": "group", "attributes": {}}, key=key_of(p, ZARR_JSON)
            ) if zarr_format == 3 else GroupMetadataV2.from_json({"zarr_format": 2}, key=key_of(p, ZGROUP))
            docs.update(metadata_documents(p, zarr_format, meta, {}))
        elif node.node_type == "array":
            raise ContainsArrayError(
                f"cannot create {kind} at path {node_name(path)!r} in {store!r}: its parent "
                f"{node_name(p)!r} is an array, and only groups may have children"
            )
    return docs


def clear_node(store: Store, path: str) -> None:
    """Delete a node and everything under it."""
    if path:
        store.delete_prefix(path + "/")
    else:
        store.delete_prefix("")
    store.delete_many(node_keys(path))
    invalidate_prefix(store, path + "/" if path else "")


def write_node(store: Store, path: str, zarr_format: int, metadata: Any, attributes: dict[str, Any], *,
               overwrite: bool, kind: str) -> None:
    """Create the node ``metadata`` describes at ``path``, with its missing
    ancestor groups (:func:`prepare_node`); ``overwrite`` first deletes what is
    there. ``kind`` (``"an array"``) names the node in errors."""
    docs = prepare_node(store, path, zarr_format, overwrite=overwrite, kind=kind)
    if overwrite:
        clear_node(store, path)
    docs.update(metadata_documents(path, zarr_format, metadata, attributes))
    store.set_many(docs)


class Attributes(MutableMapping):
    """User attributes of a node, persisted on every change.

    ``update`` and ``put`` write once for many keys.
    """

    def __init__(self, data: dict[str, Any], persist: Callable[[dict[str, Any]], None]) -> None:
        self._data = data
        self._persist = persist

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def _commit(self, new: dict[str, Any]) -> None:
        self._persist(new)
        self._data.clear()
        self._data.update(new)

    def __setitem__(self, key: str, value: Any) -> None:
        self._commit({**self._data, key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self._data:
            raise KeyError(key)
        new = dict(self._data)
        del new[key]
        self._commit(new)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self._commit({**self._data, **dict(*args, **kwargs)})

    def put(self, d: dict[str, Any]) -> None:
        """Replace every attribute with ``d``."""
        self._commit(dict(d))

    def asdict(self) -> dict[str, Any]:
        return dict(self._data)

    def __repr__(self) -> str:
        return f"Attributes({self._data!r})"


class Node:
    """What arrays and groups share: where they live, their metadata and attributes."""

    _kind = "node"

    def __init__(
        self, store: Store, path: str, metadata: Any, attributes: dict[str, Any], *, read_only: bool = False
    ) -> None:
        self._store = store
        self._path = path
        self._metadata = metadata
        self._read_only = read_only or not store.writable
        self._attributes_read = attributes

    @cached_property
    def _attrs(self) -> Attributes:
        # the attributes as read may be shared with cached documents (consolidated
        # metadata, parsed without copies): the node's own are a deep copy, made
        # when first asked for, so changing them in place changes nothing else
        return Attributes(_json.copy_json(self._attributes_read), self._persist_attributes)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def path(self) -> str:
        return self._path

    @property
    def name(self) -> str:
        return node_name(self._path)

    @property
    def basename(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    @property
    def metadata(self) -> Any:
        return self._metadata

    @property
    def zarr_format(self) -> int:
        return self._metadata.zarr_format

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def attrs(self) -> Attributes:
        return self._attrs

    def _check_writable(self) -> None:
        if self._read_only:
            raise ReadOnlyError(f"{self._kind} {self.name!r} in {self._store!r} is read-only")

    def _write_metadata(self, metadata: Any, attributes: dict[str, Any], only: str | None = None) -> None:
        """Store the node's documents; for v2, ``only`` limits it to the key ending so."""
        docs = metadata_documents(self._path, self.zarr_format, metadata, attributes)
        if self.zarr_format == 2 and only is not None:
            docs = {k: v for k, v in docs.items() if k.endswith(only)}
        self._store.set_many(docs)

    def _persist_attributes(self, attributes: dict[str, Any]) -> None:
        self._check_writable()
        self._write_metadata(self._metadata, attributes, only=ZATTRS)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other._store is self._store  # type: ignore[attr-defined]
            and other._path == self._path  # type: ignore[attr-defined]
            and other._metadata == self._metadata  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((id(self._store), self._path))
