"""Writing consolidated metadata: every node's metadata below a group, in one document.

Neither spec defines it; zarrdask writes what zarr-python and xarray read:

- **v2** — a ``.zmetadata`` key next to the group's ``.zgroup``:
  ``{"zarr_consolidated_format": 1, "metadata": {".zgroup": {...}, ".zattrs":
  {...}, "a/.zarray": {...}, "a/.zattrs": {...}, ...}}`` (keys relative to the
  group).
- **v3** — an inline ``consolidated_metadata`` object in the group's own
  ``zarr.json``: ``{"kind": "inline", "must_understand": false, "metadata":
  {"a": <a/zarr.json>, "g/b": <g/b/zarr.json>, ...}}``, every descendant flat,
  keyed by its path relative to the group. This is zarr-python 3's layout (the
  v3 core spec names ``consolidated_metadata`` nowhere but lets groups carry
  extra fields with ``"must_understand": false``).

Reading lives in :mod:`zarrdask.core.nodes` (``read_node(..., consolidated=True)``)
and :class:`zarrdask.core.group.Group`.
"""

from __future__ import annotations

from typing import Any

from .. import _json
from .api import open_group, resolve_store
from .array import Array
from .group import Group
from .nodes import ZARR_JSON, ZMETADATA, key_of, node_documents


def consolidate_metadata(
    store: Any,
    path: str = "",
    *,
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Gather the metadata of every node below the group at ``path`` into one
    document, so that opening the group and listing its hierarchy costs one read.

    Parameters
    ----------
    store : Store, str or mapping
        Where the hierarchy lives (anything :func:`zarrdask.open_group` accepts).
    path : str
        The group to consolidate (default: the root).
    zarr_format : {2, 3}, optional
        Consolidate only the nodes of this format (default: the group's).
    storage_options : dict, optional
        Passed to fsspec for URLs.

    Returns
    -------
    Group
        The group, opened with its new consolidated metadata.

    Notes
    -----
    The document describes the hierarchy when it is written; nodes created or
    changed later are not in it until it is written again.
    """
    store, path = resolve_store(store, path, "r+", storage_options)
    group = open_group(store, path=path, mode="r+", zarr_format=zarr_format, consolidated=False)
    members = group.members(max_depth=None)
    if group.zarr_format == 2:
        entries: dict[str, Any] = node_documents(group.metadata, group.attrs.asdict())
        for rel, node in members:
            for name, doc in node_documents(node.metadata, node.attrs.asdict()).items():
                entries[f"{rel}/{name}"] = doc
        store.set(key_of(path, ZMETADATA),
                  _json.dumps({"metadata": entries, "zarr_consolidated_format": 1}))
    else:
        flat = {}
        for rel, node in members:
            doc = node_documents(node.metadata, node.attrs.asdict())[ZARR_JSON]
            if not isinstance(node, Array):
                doc.pop("consolidated_metadata", None)  # the root's document holds them all
            flat[rel] = doc
        root = node_documents(group.metadata, group.attrs.asdict())[ZARR_JSON]
        root["consolidated_metadata"] = {"kind": "inline", "must_understand": False, "metadata": flat}
        store.set(key_of(path, ZARR_JSON), _json.dumps(root))
    return open_group(store, path=path, mode="r+" if store.writable else "r", consolidated=True)
