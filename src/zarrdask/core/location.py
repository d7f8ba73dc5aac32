"""Where a node is: the store and the path inside it that ``store=`` and ``path=`` name.

Every ``store`` argument of the public API takes what
:func:`~zarrdask.storage.store_from` takes (a store, a path or URL, a
zarr-python store, an fsspec mapper, a mapping), ``None`` (a new in-memory
store), or a zarr-python ``Array``, ``Group`` or ``StorePath``, which stands
for its store with ``path`` taken inside that node.
"""

from __future__ import annotations

from typing import Any

from ..storage import MemoryStore, store_from
from ..storage.abc import Store
from ..storage.keys import join_path, normalize_path
from ..storage.zarr_python import zarr_python_location

__all__ = ["resolve_store"]


def resolve_store(
    store: Any, path: str | None, mode: str, storage_options: dict[str, Any] | None
) -> tuple[Store, str]:
    """The store and node path that a ``store=`` and ``path=`` argument name.

    ``store`` is anything :func:`~zarrdask.storage.store_from` accepts, ``None``
    (a new in-memory store), or a zarr-python ``Array``, ``Group`` or
    ``StorePath``: its store, adapted, with ``path`` taken inside the node.
    """
    location = zarr_python_location(store)
    if location is not None:
        store, path = location.store, join_path(location.path, path or "")
    if store is None:
        return MemoryStore(), normalize_path(path)
    return store_from(store, mode=mode, storage_options=storage_options), normalize_path(path)
