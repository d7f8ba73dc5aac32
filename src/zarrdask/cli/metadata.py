"""``zarrdask consolidate``: write consolidated metadata for a hierarchy."""

from __future__ import annotations

from typing import Any

import click

from ..core.consolidated import consolidate_metadata
from ..core.group import Group
from ._common import emit_json, json_option, open_store, path_argument

__all__ = ["consolidate"]


@click.command(short_help="Write consolidated metadata for a hierarchy.")
@path_argument
@json_option
def consolidate(path: str, node: str, storage_options: tuple[str, ...], as_json: bool) -> None:
    """Consolidate the metadata of the group at PATH and everything below it.

    Calls zarrdask.consolidate_metadata, so readers can open the whole hierarchy
    with one read (useful on object stores and HTTP).
    """
    store = open_store(path, storage_options, mode="r+")
    result: Any = consolidate_metadata(store, path=node)
    members = _count_members(result)
    if as_json:
        emit_json({"path": "/" + node.strip("/"), "consolidated": True, "members": members})
    else:
        counted = "" if members is None else f" ({members} nodes)"
        click.echo(f"consolidated the metadata of {'/' + node.strip('/')!r} in {path}{counted}")


def _count_members(result: Any) -> int | None:
    """How many nodes below the group the consolidated metadata describes."""
    if not isinstance(result, Group):
        return None
    return len(result.members(max_depth=None))
