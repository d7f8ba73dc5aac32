"""``zarrdask info``, ``tree`` and ``ls``: what is stored where."""

from __future__ import annotations

import json
from typing import Any

import click

from ..core.array import Array
from ..core.group import Group
from ..metadata.dtypes import display_name
from ._common import (
    emit_json,
    emit_table,
    human_bytes,
    json_option,
    open_node,
    path_argument,
)

__all__ = ["array_details", "array_summary", "group_details", "info", "ls", "tree"]


def _codec_json(codec: Any) -> Any:
    if hasattr(codec, "to_json"):
        return codec.to_json()
    if hasattr(codec, "get_config"):
        return codec.get_config()
    return repr(codec)


def _compact(x: Any) -> str:
    return json.dumps(x, separators=(", ", ": "))


def array_summary(array: Array) -> dict[str, Any]:
    """Type, shape, dtype and chunks of an array (what ``ls --long`` shows)."""
    return {
        "path": array.name,
        "node_type": "array",
        "zarr_format": array.zarr_format,
        "shape": list(array.shape),
        "dtype": display_name(array.dtype, array.zarr_format),
        "chunk_grid": array.chunk_grid,
        "chunks": [c if isinstance(c, int) else list(c) for c in array.chunks],
        "shards": None if array.shards is None else [c if isinstance(c, int) else list(c) for c in array.shards],
    }


def array_details(array: Array) -> dict[str, Any]:
    """Everything ``zarrdask info`` reports about an array.

    Stored bytes, the compression ratio and the number of stored chunks need a
    store that can list its keys; from others (HTTP) they are ``None``.
    """
    doc = array.metadata.to_json()
    out = array_summary(array)
    out.update(
        {
            "order": array.order,
            "dimension_names": None if array.dimension_names is None else list(array.dimension_names),
            "fill_value": doc.get("fill_value"),
            "filters": [_codec_json(c) for c in array.filters],
            "serializer": None if array.serializer is None else _codec_json(array.serializer),
            "compressors": [_codec_json(c) for c in array.compressors],
            # the whole v3 pipeline as stored (for sharded arrays the filters,
            # serializer and compressors above are those inside the shards)
            "codecs": doc.get("codecs"),
            "attributes": dict(array.attrs),
            "nbytes": array.nbytes,
            "nbytes_stored": None,
            "compression_ratio": None,
            "nchunks": array.nchunks,
            "nchunks_initialized": None,
            "nshards": array.nshards,
            "nshards_initialized": None,
            "read_only": array.read_only,
            "store": repr(array.store),
        }
    )
    if array.store.listable:
        stored = array.nbytes_stored
        out["nbytes_stored"] = stored
        out["compression_ratio"] = round(array.nbytes / stored, 3) if stored else None
        out["nchunks_initialized"] = array.nchunks_initialized
        out["nshards_initialized"] = array.nshards_initialized
    return out


def _member(name: str, node: Array | Group) -> dict[str, Any]:
    if isinstance(node, Array):
        return {"name": name, **array_summary(node)}
    return {"name": name, "path": node.name, "node_type": "group", "zarr_format": node.zarr_format}


def group_details(group: Group) -> dict[str, Any]:
    """Everything ``zarrdask info`` reports about a group: its direct members."""
    members = [_member(n, m) for n, m in group.members()]
    return {
        "path": group.name,
        "node_type": "group",
        "zarr_format": group.zarr_format,
        "attributes": dict(group.attrs),
        "n_arrays": sum(m["node_type"] == "array" for m in members),
        "n_groups": sum(m["node_type"] == "group" for m in members),
        "members": members,
        "read_only": group.read_only,
        "store": repr(group.store),
    }


def _tuple(x: list[int] | None) -> str:
    return "None" if x is None else str(tuple(x))


def _chunks_text(x: list | None, most: int = 8) -> str:
    """A chunk shape, or a rectilinear grid's sizes per dimension (long lists shortened)."""
    if x is None or all(isinstance(c, int) for c in x):
        return _tuple(x)
    parts = []
    for c in x:
        if isinstance(c, int) or len(c) <= most:
            parts.append(str(c if isinstance(c, int) else tuple(c)))
        else:
            parts.append("(" + ", ".join(map(str, c[:4])) + f", ... {c[-1]}; {len(c)} chunks)")
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _attrs_text(attrs: dict[str, Any]) -> str:
    if not attrs:
        return "0"
    names = ", ".join(sorted(attrs))
    return f"{len(attrs)} ({names if len(names) <= 60 else names[:57] + '...'})"


def _array_rows(d: dict[str, Any]) -> list[tuple[str, Any]]:
    na = "n/a (the store cannot list its keys)"
    rows: list[tuple[str, Any]] = [
        ("Path", d["path"]),
        ("Type", "array"),
        ("Zarr format", d["zarr_format"]),
        ("Shape", _tuple(d["shape"])),
        ("Data type", d["dtype"]),
        *([("Chunk grid", "rectilinear (chunk sizes per dimension)")] if d.get("chunk_grid") == "rectilinear"
          else []),
        ("Chunk shape", _chunks_text(d["chunks"])),
        ("Shard shape", _chunks_text(d["shards"])),
        ("Order", d["order"]),
        ("Dimension names", "None" if d["dimension_names"] is None else tuple(d["dimension_names"])),
        ("Fill value", _compact(d["fill_value"])),
        ("Filters", _compact(d["filters"])),
        ("Serializer", _compact(d["serializer"])),
        ("Compressors", _compact(d["compressors"])),
        *([("Codecs (stored)", _compact(d["codecs"]))] if d["shards"] else []),
        ("Attributes", _attrs_text(d["attributes"])),
        ("No. bytes", human_bytes(d["nbytes"])),
        ("No. bytes stored", human_bytes(d["nbytes_stored"]) if d["nbytes_stored"] is not None else na),
        ("Storage ratio", d["compression_ratio"] if d["compression_ratio"] is not None else "n/a"),
    ]
    if d["nchunks_initialized"] is None:
        rows.append(("Chunks initialized", f"n/a of {d['nchunks']:,}"))
    else:
        rows.append(("Chunks initialized", f"{d['nchunks_initialized']:,} of {d['nchunks']:,}"))
    if d["nshards"] is not None:
        done = "n/a" if d["nshards_initialized"] is None else f"{d['nshards_initialized']:,}"
        rows.append(("Shards initialized", f"{done} of {d['nshards']:,}"))
    rows += [("Read-only", d["read_only"]), ("Store", d["store"])]
    return rows


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _long_line(m: dict[str, Any]) -> tuple[str, str, str, str]:
    if m["node_type"] == "array":
        return ("array", _tuple(m["shape"]), m["dtype"], m["name"])
    return ("group", "-", "-", m["name"])


@click.command(short_help="Describe an array or a group.")
@path_argument
@json_option
def info(path: str, node: str, storage_options: tuple[str, ...], as_json: bool) -> None:
    """Describe the array or group at PATH.

    For an array: format, shape, data type, chunk and shard shapes, codecs, fill
    value, stored bytes, storage ratio and initialized chunks (the labels of
    ``Array.info``). For a group:
    its attributes and direct members.
    """
    obj = open_node(path, node, storage_options)
    if isinstance(obj, Array):
        details = array_details(obj)
        if as_json:
            emit_json(details)
        else:
            emit_table(_array_rows(details))
        return
    details = group_details(obj)
    if as_json:
        emit_json(details)
        return
    emit_table(
        [
            ("Path", details["path"]),
            ("Type", "group"),
            ("Zarr format", details["zarr_format"]),
            ("Attributes", _attrs_text(details["attributes"])),
            ("Members", f"{_plural(details['n_arrays'], 'array')}, {_plural(details['n_groups'], 'group')}"),
            ("Read-only", details["read_only"]),
            ("Store", details["store"]),
        ]
    )
    rows = [_long_line(m) for m in details["members"]]
    _print_columns(rows, indent="  ")


def _print_columns(rows: list[tuple[str, ...]], indent: str = "") -> None:
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths)]
        click.echo(indent + "  ".join([*cells, r[-1]]))


def _tree_json(node: Array | Group, name: str, level: int | None) -> dict[str, Any]:
    if isinstance(node, Array):
        return {"name": name, **array_summary(node)}
    out: dict[str, Any] = {"name": name, "path": node.name, "node_type": "group", "zarr_format": node.zarr_format}
    if level is None or level > 0:
        out["members"] = [_tree_json(m, n, None if level is None else level - 1) for n, m in node.members()]
    return out


@click.command(short_help="Print the hierarchy below a group.")
@path_argument
@click.option("-L", "--level", type=click.IntRange(min=1), default=None, help="Descend at most this many levels.")
@json_option
def tree(path: str, node: str, storage_options: tuple[str, ...], level: int | None, as_json: bool) -> None:
    """Print the hierarchy below the group at PATH, with each array's shape and dtype."""
    obj = open_node(path, node, storage_options)
    name = obj.basename or "/"
    if as_json:
        emit_json(_tree_json(obj, name, level))
    elif isinstance(obj, Array):
        click.echo(f"{name} {obj.shape} {display_name(obj.dtype, obj.zarr_format)}")
    else:
        click.echo(str(obj.tree(level)))


@click.command(short_help="List the members of a group.")
@path_argument
@click.option("-l", "--long", "long_", is_flag=True, help="Show each member's type, shape and dtype.")
@click.option("-r", "--recursive", is_flag=True, help="List every descendant, by its path relative to PATH.")
@json_option
def ls(
    path: str, node: str, storage_options: tuple[str, ...], long_: bool, recursive: bool, as_json: bool
) -> None:
    """List the members of the group at PATH, one per line."""
    obj = open_node(path, node, storage_options)
    if isinstance(obj, Array):
        members = [_member(obj.basename or "/", obj)]
    else:
        members = [_member(n, m) for n, m in obj.members(max_depth=None if recursive else 0)]
    if as_json:
        emit_json(members)
    elif long_:
        _print_columns([_long_line(m) for m in members])
    else:
        for m in members:
            click.echo(m["name"])
