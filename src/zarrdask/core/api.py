"""Creating and opening arrays and groups, with zarr-python's names and modes.

Modes: ``"r"`` read-only, must exist; ``"r+"`` read/write, must exist; ``"a"``
read/write, created if missing; ``"w"`` created, replacing anything there;
``"w-"`` created, failing if something is there.

Every ``store`` argument takes what :func:`~zarrdask.storage.store_from` takes
(a store, a path or URL, a zarr-python store, an fsspec mapper, a mapping) or a
zarr-python ``Array``, ``Group`` or ``StorePath``, which stands for its store
with ``path`` taken inside that node: ``open_array(zarr_array)`` opens the same
array, ``open_group(zarr_group, path="sub")`` its subgroup ``sub``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArrayNotFoundError, ContainsArrayError, GroupNotFoundError, MetadataError
from .array import Array
from .array_creation import check_create_array, create_array, guess_chunks, new_node_format
from .group import Group, create_group, node_from_docs
from .location import resolve_store
from .nodes import key_of, node_name, not_found, read_node

# create_array, check_create_array, guess_chunks and resolve_store live in their own modules
# (array_creation, location) and are offered here too, with the open functions
__all__ = [
    "check_create_array",
    "create_array",
    "group",
    "guess_chunks",
    "open",
    "open_array",
    "open_group",
    "resolve_store",
]

_MODES = ("r", "r+", "a", "w", "w-")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, found {mode!r}")


def open_array(
    store: Any,
    *,
    path: str = "",
    name: str | None = None,
    mode: str = "a",
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
    write_empty_chunks: bool | None = None,
    read_missing_chunks: bool | None = None,
    cache: bool | str | None = None,
    **kwargs: Any,
) -> Array:
    """Open an array (creating it with ``**kwargs`` for modes ``"a"``, ``"w"``, ``"w-"``).

    ``write_empty_chunks`` and ``read_missing_chunks`` (``False``: strict
    reads, :class:`~zarrdask.errors.ChunkNotFoundError` for a missing chunk)
    are the array's own run-time options; ``None``: the ``zarrdask.config``
    setting of the same name. ``cache``: read through the process's chunk
    cache — ``True``, ``"revalidate"`` or ``False``; ``None`` (default): the
    setting ``cache`` (:attr:`Array.cache`, docs/performance.md "Chunk cache")."""
    _check_mode(mode)
    store, path = resolve_store(store, name if name is not None else path, mode, storage_options)
    if mode in ("w", "w-"):
        return create_array(
            store, path=path, overwrite=mode == "w", zarr_format=new_node_format(zarr_format),
            write_empty_chunks=write_empty_chunks, **kwargs,
        ).with_config({"read_missing_chunks": read_missing_chunks, "cache": cache})
    node = read_node(store, path, zarr_format)
    if node is None:
        if mode == "a" and "shape" in kwargs:
            return create_array(
                store, path=path, zarr_format=new_node_format(zarr_format), write_empty_chunks=write_empty_chunks, **kwargs
            ).with_config({"read_missing_chunks": read_missing_chunks, "cache": cache})
        raise not_found(ArrayNotFoundError, store, path, "array")
    if node.node_type != "array":
        raise ArrayNotFoundError(f"path {node_name(path)!r} in {store!r} holds a group, not an array")
    return Array._from_node(store, node, read_only=mode == "r", write_empty_chunks=write_empty_chunks,
                            read_missing_chunks=read_missing_chunks, cache=cache)




# -- groups ----------------------------------------------------------------------------
def open_group(
    store: Any = None,
    *,
    path: str = "",
    mode: str = "a",
    zarr_format: int | None = None,
    attributes: dict[str, Any] | None = None,
    storage_options: dict[str, Any] | None = None,
    consolidated: bool | None = None,
) -> Group:
    """Open a group; modes ``"a"``, ``"w"`` and ``"w-"`` create it (v3 unless
    ``zarr_format=2``), ``"r"`` and ``"r+"`` require it to exist.

    ``consolidated``: ``None`` (default) uses consolidated metadata when the group
    has some (v2 ``.zmetadata``, v3 inline ``consolidated_metadata``), so listing
    every member costs no further reads; ``True`` requires it; ``False`` ignores
    it and lists the store.
    """
    _check_mode(mode)
    store, path = resolve_store(store, path, mode, storage_options)
    if mode in ("w", "w-"):
        return create_group(store, path, new_node_format(zarr_format), overwrite=mode == "w", attributes=attributes)
    node = read_node(store, path, zarr_format, consolidated=consolidated is not False)
    if node is None:
        if mode == "a":
            return create_group(store, path, new_node_format(zarr_format), overwrite=False, attributes=attributes)
        raise not_found(GroupNotFoundError, store, path, "group")
    if node.node_type != "group":
        raise ContainsArrayError(f"path {node_name(path)!r} in {store!r} holds an array, not a group")
    if consolidated and node.consolidated is None:
        where = key_of(path, ".zmetadata") if node.zarr_format == 2 else key_of(path, "zarr.json")
        raise MetadataError(
            f"consolidated=True, but the v{node.zarr_format} group at path {node_name(path)!r} in "
            f"{store!r} has no consolidated metadata ({where}); write it with "
            "zarrdask.consolidate_metadata, or open with consolidated=None"
        )
    group = node_from_docs(store, node, read_only=mode == "r")
    assert isinstance(group, Group)
    if attributes:
        group.attrs.update(attributes)
    return group


def group(
    store: Any = None,
    *,
    path: str = "",
    overwrite: bool = False,
    zarr_format: int | None = None,
    attributes: dict[str, Any] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Group:
    """Open the group at ``path``, creating it if missing (replacing what is there
    with ``overwrite=True``). With no store, a new in-memory group."""
    return open_group(
        store, path=path, mode="w" if overwrite else "a", zarr_format=zarr_format,
        attributes=attributes, storage_options=storage_options,
    )


def open(  # noqa: A001 - zarr-python's name
    store: Any = None,
    *,
    path: str = "",
    mode: str = "a",
    zarr_format: int | None = None,
    storage_options: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Array | Group:
    """Open whatever node is at ``path``: an array or a group. When nothing is
    there, modes ``"a"``/``"w"``/``"w-"`` create an array if ``shape`` is given,
    otherwise a group. ``read_missing_chunks`` (and ``write_empty_chunks``)
    apply when the node is an array, as in :func:`open_array`."""
    _check_mode(mode)
    store, path = resolve_store(store, path, mode, storage_options)
    if mode in ("r", "r+", "a"):
        consolidated = kwargs.get("consolidated")
        node = read_node(store, path, zarr_format, consolidated=consolidated is not False)
        if node is not None and not (consolidated and node.node_type == "group" and node.consolidated is None):
            if node.node_type == "array":
                return Array._from_node(store, node, read_only=mode == "r",
                                        write_empty_chunks=kwargs.get("write_empty_chunks"),
                                        read_missing_chunks=kwargs.get("read_missing_chunks"))
            return node_from_docs(store, node, read_only=mode == "r")
        if node is not None:  # consolidated=True, but there is none: open_group says so
            return open_group(store, path=path, mode=mode, zarr_format=zarr_format, **kwargs)
        if mode != "a":
            raise not_found(GroupNotFoundError, store, path, "array or group")
    if "shape" in kwargs:
        kwargs.pop("consolidated", None)
        return open_array(store, path=path, mode=mode, zarr_format=zarr_format, **kwargs)
    kwargs.pop("read_missing_chunks", None)  # an array's option: a group has none
    return open_group(store, path=path, mode=mode, zarr_format=zarr_format, **kwargs)
