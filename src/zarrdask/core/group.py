"""The Group: a node holding arrays and groups (Zarr v2 spec "Groups";
zarr-specs v3 core "Group metadata").

Children are found by listing the store under the group's path and reading
every candidate's metadata in one batched call — or, for a group opened with
consolidated metadata (v2 ``.zmetadata``; v3 inline ``consolidated_metadata``,
as zarr-python writes them), from that one document without touching the store.
Creating a member through such a group drops the consolidated view, so the new
member is seen; other changes made elsewhere are not (call
:func:`zarrdask.consolidate_metadata` again, or open with ``consolidated=False``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..errors import ContainsArrayError, NodeNotFoundError, StoreError
from ..metadata import GroupMetadataV2, GroupMetadataV3
from ..metadata.dtypes import display_name
from ..storage.abc import Store
from ..storage.capabilities import STREAMING
from ..storage.keys import METADATA_NAMES, join_path, normalize_path
from .array import Array
from .array_creation import create_array
from .._memory import paused_gc
from .._pool import io_map, serial_map
from .nodes import (Consolidated, Node, NodeDocs, key_of, node_name, read_node, read_nodes,
                    write_node)

def create_group(
    store: Store, path: str, zarr_format: int, *, overwrite: bool, attributes: dict[str, Any] | None
) -> "Group":
    """Create a v``zarr_format`` group at ``path`` (and its missing ancestors);
    ``overwrite`` replaces what is there, otherwise an existing node is an error."""
    attributes = dict(attributes or {})
    if zarr_format == 3:
        meta: Any = GroupMetadataV3.from_json(
            {"zarr_format": 3, "node_type": "group", "attributes": attributes}, key=key_of(path, "zarr.json")
        )
    elif zarr_format == 2:
        meta = GroupMetadataV2.from_json({"zarr_format": 2}, key=key_of(path, ".zgroup"))
    else:
        raise ValueError(f"zarr_format must be 2 or 3, found {zarr_format!r}")
    write_node(store, path, zarr_format, meta, attributes, overwrite=overwrite, kind="a group")
    return Group(store, path, meta, attributes)


def node_from_docs(
    store: Store, node: NodeDocs, *, read_only: bool, consolidated: Consolidated | None = None
) -> "Array | Group":
    if node.node_type == "array":
        return Array._from_node(store, node, read_only=read_only)
    return Group(store, node.path, node.metadata, node.attributes, read_only=read_only,
                 consolidated=consolidated if consolidated is not None else node.consolidated)


def _names_below(store: Store, path: str) -> list[str]:
    """The names ``store.list_dir`` gives under ``path``, metadata documents left out."""
    return [n for n in store.list_dir(path) if n not in METADATA_NAMES]


def names_or_none(store: Store, path: str) -> list[str] | None:
    """:func:`_names_below`, or ``None`` if the listing fails: a listing read
    ahead (a member's, before its document says it is a group; a group's,
    before it is known whether consolidated metadata makes it unneeded) may be
    refused, and the walk lists again on the group's level and names the failure."""
    try:
        return _names_below(store, path)
    except (StoreError, OSError):
        return None


def _read_level(
    store: Store, paths: list[str], formats: list[int], *, list_too: bool
) -> tuple[list[NodeDocs | None], list[list[str] | None]]:
    """The nodes at ``paths`` (one batched read per format) and, with
    ``list_too``, every path's listing, all requested concurrently."""
    jobs: list[Callable[[], Any]] = []
    for fmt in sorted(set(formats)):
        idx = [i for i, f in enumerate(formats) if f == fmt]
        jobs.append(lambda idx=idx, fmt=fmt: (idx, read_nodes(store, [paths[i] for i in idx], fmt)))
    if list_too:
        jobs += [lambda p=p: names_or_none(store, p) for p in paths]
    results = io_map(lambda job: job(), jobs) if len(jobs) > 1 else [job() for job in jobs]
    nodes: list[NodeDocs | None] = [None] * len(paths)
    n_reads = len(set(formats))
    for idx, found in results[:n_reads]:
        for i, node in zip(idx, found):
            nodes[i] = node
    listings: list[list[str] | None] = list(results[n_reads:]) if list_too else [None] * len(paths)
    return nodes, listings


class Group(Node):
    """A Zarr group. Open or create one with :func:`zarrdask.open_group` or
    :func:`zarrdask.group`."""

    _kind = "group"

    def __init__(
        self, store: Store, path: str, metadata: Any, attributes: dict[str, Any], *,
        read_only: bool = False, consolidated: Consolidated | None = None,
    ) -> None:
        super().__init__(store, path, metadata, attributes, read_only=read_only)
        self._consolidated = consolidated

    @property
    def consolidated(self) -> bool:
        """Whether members are read from consolidated metadata."""
        return self._consolidated is not None

    def _node(self, name: str) -> tuple[NodeDocs | None, Consolidated | None]:
        """The member ``name`` (a relative path) and, for a group, its consolidated view."""
        path = self._child_path(name)
        if self._consolidated is None:
            return read_node(self._store, path, self.zarr_format), None
        rel = path[len(self._path) + 1:] if self._path else path
        node = self._consolidated.get(rel)
        return node, None if node is None else self._consolidated.below(rel)

    # -- navigation ---------------------------------------------------------------
    def _child_path(self, name: str) -> str:
        rel = normalize_path(name)
        if not rel:
            raise KeyError(f"group {self.name!r}: an empty name names no member")
        return join_path(self._path, rel)

    def __getitem__(self, name: str) -> "Array | Group":
        node, below = self._node(name)
        if node is None:
            raise NodeNotFoundError(
                f"group {self.name!r} in {self._store!r} has no member {name!r} (path {node_name(self._child_path(name))!r})"
                + (" in its consolidated metadata" if self._consolidated is not None else "")
            )
        return node_from_docs(self._store, node, read_only=self._read_only, consolidated=below)

    def open_members(self, names: Iterable[str]) -> dict[str, "Array | Group"]:
        """The members ``names`` (relative paths, as for ``group[name]``), read
        with one batched store call: on a remote store, opening a hundred
        arrays costs one round trip instead of a hundred in a row.

        Returns
        -------
        dict
            ``{name: Array or Group}`` in the order of ``names``.

        Raises
        ------
        NodeNotFoundError
            Naming every one of ``names`` that is not a member.

        Examples
        --------
        >>> import zarrdask
        >>> g = zarrdask.group(zarrdask.MemoryStore())
        >>> for name in "abc":
        ...     _ = g.create_array(name, shape=(2,), dtype="i1")
        >>> sorted(g.open_members(["a", "c"]))
        ['a', 'c']
        """
        names = list(dict.fromkeys(names))
        if self._consolidated is not None:
            return {name: self[name] for name in names}
        paths = [self._child_path(name) for name in names]
        nodes = read_nodes(self._store, paths, self.zarr_format)
        missing = [name for name, node in zip(names, nodes) if node is None]
        if missing:
            shown = ", ".join(repr(n) for n in missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise NodeNotFoundError(
                f"group {self.name!r} in {self._store!r} has no member(s) {shown} ({len(missing)} missing)"
            )
        return {
            name: node_from_docs(self._store, node, read_only=self._read_only)  # type: ignore[arg-type]
            for name, node in zip(names, nodes)
        }

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            return self._node(name)[0] is not None
        except (KeyError, ValueError):
            return False

    def _children(self) -> list[tuple[str, NodeDocs]]:
        if self._consolidated is not None:
            return self._consolidated.children()
        if not self._store.listable:
            raise StoreError(
                f"group {self.name!r}: {self._store!r} cannot list its keys, so members are unknown; "
                "open the group from a listable store or with consolidated metadata"
            )
        names = [n for n in self._store.list_dir(self._path) if n not in METADATA_NAMES]
        nodes = read_nodes(self._store, [join_path(self._path, n) for n in names], self.zarr_format)
        return [(n, node) for n, node in zip(names, nodes) if node is not None]

    def members(
        self, max_depth: int | None = 0, *, listing: Sequence[str] | None = None
    ) -> tuple[tuple[str, "Array | Group"], ...]:
        """``(name, node)`` pairs of the members, sorted by name.

        ``max_depth=0`` gives the direct children; ``None`` every descendant,
        named by its path relative to this group. ``listing``: the names the
        store's ``list_dir`` gives for this group, if the caller read them
        already (concurrently with the group's own metadata, say); they are
        not listed again.
        """
        if self._consolidated is None:
            return self._walk(max_depth, listing)
        return self._consolidated_members(self._consolidated, max_depth)

    @paused_gc()  # thousands of nodes may be built here (zarrdask._memory)
    def _consolidated_members(
        self, consolidated: Consolidated, max_depth: int | None
    ) -> tuple[tuple[str, "Array | Group"], ...]:
        out: list[tuple[str, Array | Group]] = []
        for name, node in consolidated.children():
            below = consolidated.below(name)
            child = node_from_docs(self._store, node, read_only=self._read_only, consolidated=below)
            out.append((name, child))
            if isinstance(child, Group) and (max_depth is None or max_depth > 0):
                sub = child.members(None if max_depth is None else max_depth - 1)
                out.extend((f"{name}/{n}", c) for n, c in sub)
        return tuple(sorted(out, key=lambda x: x[0]))

    def _walk(
        self, max_depth: int | None, listing: Sequence[str] | None = None
    ) -> tuple[tuple[str, "Array | Group"], ...]:
        """:meth:`members` read level by level, one batch of requests per level.

        On a remote store (capability ``streaming``) the prefix of every
        member of a level is listed in the same batch that reads the members'
        documents, whenever a deeper level is wanted: members that turn out to
        be groups are then known with their children, and a hierarchy costs
        one round trip per level (plus the root's listing), at the price of
        one listing request per member (arrays included). Elsewhere the groups
        of a level are listed first, then their children's documents read in
        one batched call."""
        self._children_listable()
        store = self._store
        remote = STREAMING in store.capabilities
        out: list[tuple[str, Array | Group]] = []
        # (relative prefix, group, its listing if already read)
        level: list[tuple[str, Group, list[str] | None]] = [
            ("", self, None if listing is None else [n for n in listing if n not in METADATA_NAMES])]
        depth = 0
        while level:
            missing = [g for _, g, names in level if names is None]
            listed = iter((io_map if remote else serial_map)(lambda g: _names_below(store, g._path), missing))
            level = [(p, g, names if names is not None else next(listed)) for p, g, names in level]
            deeper = max_depth is None or depth < max_depth
            rels = [f"{prefix}{n}" for prefix, _, names in level for n in names]
            paths = [join_path(group._path, n) for _, group, names in level for n in names]
            # each group's format: children of a v2 group are v2 documents (and v3 ones of v3)
            formats = [group.zarr_format for _, group, names in level for _ in names]
            nodes, listings = _read_level(store, paths, formats, list_too=remote and deeper)
            level = []
            for rel, node, names in zip(rels, nodes, listings):
                if node is None:
                    continue
                child = node_from_docs(store, node, read_only=self._read_only)
                out.append((rel, child))
                if isinstance(child, Group) and deeper:
                    level.append((rel + "/", child, names))
            depth += 1
        return tuple(sorted(out, key=lambda x: x[0]))

    def _children_listable(self) -> None:
        if not self._store.listable:
            raise StoreError(
                f"group {self.name!r}: {self._store!r} cannot list its keys, so members are unknown; "
                "open the group from a listable store or with consolidated metadata"
            )

    def keys(self) -> Iterator[str]:
        return iter(sorted(n for n, _ in self._children()))

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def __len__(self) -> int:
        return len(self._children())

    def arrays(self) -> Iterator[tuple[str, Array]]:
        return ((n, c) for n, c in self.members() if isinstance(c, Array))

    def groups(self) -> Iterator[tuple[str, "Group"]]:
        return ((n, c) for n, c in self.members() if isinstance(c, Group))

    def array_keys(self) -> Iterator[str]:
        return (n for n, _ in self.arrays())

    def group_keys(self) -> Iterator[str]:
        return (n for n, _ in self.groups())

    # -- creation ---------------------------------------------------------------
    def create_group(self, name: str, *, overwrite: bool = False, attributes: dict[str, Any] | None = None) -> "Group":
        """Create a child group (and any missing intermediate groups)."""
        self._check_writable()
        self._consolidated = None
        return create_group(
            self._store, self._child_path(name), self.zarr_format, overwrite=overwrite, attributes=attributes
        )

    def require_group(self, name: str, *, attributes: dict[str, Any] | None = None) -> "Group":
        """The child group ``name``, created if missing; an array there is an error."""
        node, below = self._node(name)
        if node is None:
            return self.create_group(name, attributes=attributes)
        if node.node_type == "array":
            raise ContainsArrayError(f"group {self.name!r} in {self._store!r}: {name!r} is an array, not a group")
        return Group(self._store, node.path, node.metadata, node.attributes, read_only=self._read_only,
                     consolidated=below)

    def create_array(self, name: str, **kwargs: Any) -> Array:
        """Create a child array; keywords as for :func:`zarrdask.create_array`."""
        self._check_writable()
        self._consolidated = None
        kwargs.setdefault("zarr_format", self.zarr_format)
        return create_array(self._store, path=self._child_path(name), **kwargs)

    def require_array(self, name: str, *, shape: Any, dtype: Any, **kwargs: Any) -> Array:
        """The child array ``name``, created if missing; an existing one must have
        the given shape and dtype."""
        node, _ = self._node(name)
        if node is None:
            return self.create_array(name, shape=shape, dtype=dtype, **kwargs)
        if node.node_type != "array":
            raise TypeError(f"group {self.name!r}: {name!r} is a group, not an array")
        arr = Array._from_node(self._store, node, read_only=self._read_only)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if arr.shape != shape or arr.dtype != np.dtype(dtype):
            raise TypeError(
                f"group {self.name!r}: array {name!r} has shape {arr.shape} and dtype {arr.dtype}, "
                f"expected {shape} and {np.dtype(dtype)}"
            )
        return arr

    # -- display ----------------------------------------------------------------
    def tree(self, level: int | None = None) -> "Tree":
        """A text tree of the hierarchy below this group (``level`` limits the depth)."""
        lines = [self.name if self._path else "/"]
        # every member down to the depth shown, read in batches (one per level)
        below: dict[str, list[tuple[str, Array | Group]]] = {}
        for rel, node in self.members(None if level is None else max(level - 1, 0)):
            parent, _, name = rel.rpartition("/")
            below.setdefault(parent, []).append((name, node))

        def walk(rel: str, prefix: str, depth: int) -> None:
            children = sorted(below.get(rel, []), key=lambda x: x[0])
            for i, (name, child) in enumerate(children):
                last = i == len(children) - 1
                branch = "└── " if last else "├── "
                if isinstance(child, Array):
                    lines.append(f"{prefix}{branch}{name} {child.shape} {display_name(child.dtype, child.zarr_format)}")
                else:
                    lines.append(f"{prefix}{branch}{name}")
                    if level is None or depth + 1 < level:
                        walk(f"{rel}/{name}" if rel else name, prefix + ("    " if last else "│   "), depth + 1)

        walk("", "", 0)
        return Tree("\n".join(lines))

    @property
    def info(self) -> str:
        return (
            f"Name        : {self.name}\nType        : Group\nZarr format : {self.zarr_format}\n"
            f"Read-only   : {self.read_only}\nStore type  : {type(self._store).__name__}"
        )

    def __repr__(self) -> str:
        return f"<zarrdask.Group {self.name!r} v{self.zarr_format}>"


class Tree(str):
    """The text of :meth:`Group.tree`; prints as the tree."""

    def __repr__(self) -> str:
        return str(self)
