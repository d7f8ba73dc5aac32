"""The stores a rechunk writes: the target and the intermediate store, checked
before anything is planned (distinct, nothing at the target path), and the
intermediate arrays removed once their target is written.
"""

from __future__ import annotations

from typing import Any

from ..core.array import Array
from ..core.nodes import ZARR_JSON, ZARRAY, ZATTRS, node_name, read_node
from ..dask.sessions import needs_forks
from ..errors import ContainsArrayError, ContainsGroupError, IcechunkSessionError
from ..storage import store_from
from ..storage.keys import join_path

__all__ = ["check_free", "check_temp_reachable", "remove_array", "target_and_temp"]


def target_and_temp(target_store: Any, temp_store: Any, target_path: str,
                    storage_options: dict[str, Any] | None, free: bool = True) -> tuple[Any, Any]:
    """The target and intermediate stores, checked: distinct, nothing at the
    target path (unless ``free=False``: a resumable copy checks that itself)."""
    store = store_from(target_store, mode="a", storage_options=storage_options)
    temp = None if temp_store is None else store_from(temp_store, mode="a")
    if temp is not None and _same_store(store, temp):
        raise ValueError(
            f"temp_store must be another store than target_store (both are {store!r}): the "
            "intermediate arrays would take the target's place"
        )
    if free:
        check_free(store, target_path, "target_store")
    return store, temp


def _same_store(a: Any, b: Any) -> bool:
    return a is b or a.location == b.location


def check_free(store: Any, path: str, what: str) -> None:
    """Nothing exists at ``path`` in ``store`` (``what`` names the store in the error)."""
    node = read_node(store, path)
    if node is not None:
        err = ContainsArrayError if node.node_type == "array" else ContainsGroupError
        raise err(
            f"{what}: a v{node.zarr_format} {node.node_type} exists at path {node_name(path)!r} in "
            f"{store!r}; rechunk writes into an empty place"
        )


def check_temp_reachable(temp: Any, scheduler: Any = None) -> None:
    """The intermediate store can be written by the copy's tasks where they run:
    not a writable icechunk session (or fork) when they run in other processes.

    An intermediate is scratch data, written by one stage, read by the next and
    removed: it stays outside the session (whose forks would have to be merged
    before the next stage reads them, and whose history would keep its chunks)."""
    if needs_forks(temp, compute=True, scheduler=scheduler):
        raise IcechunkSessionError(
            f"temp_store {temp!r} is a writable icechunk session, and the copy's tasks run in other processes "
            "(a distributed cluster or the processes scheduler), which cannot write into it. The intermediate "
            "arrays are scratch data that one stage writes and the next reads: give as temp_store a store the "
            "workers reach (a directory or an object store); the target may be an icechunk session"
        )


def remove_array(a: Array, _after: Any = None) -> None:
    """Delete the array ``a``: its stored chunks and its metadata (an
    intermediate array, once the stage reading it is done)."""
    keys = a.stored_keys() + [join_path(a.path, name) for name in (ZARR_JSON, ZARRAY, ZATTRS)]
    a.store.delete_many(keys)
