"""The JSON of Zarr v3 chunk grids: ``regular`` (zarr-specs v3-core "Chunk grid",
``v3-chunk-grids-regular-grid.rst``) and ``rectilinear`` (zarr-extensions
``chunk-grids/rectilinear``).

A grid is described per axis by ``chunks``: an ``int`` (a regular step), or a
tuple of edge lengths (the ``rectilinear`` grid's ``chunk_shapes``, with
run-length pairs ``[edge, count]`` expanded). What the grid means — chunk
regions, shapes, counts — is :mod:`zarrdask.chunking`'s; this module reads
and writes the documents and checks what a document may declare.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..chunking import largest_chunk
from ..errors import MetadataError
from .json_checks import MISSING, Text, field_error, is_json_int
from .limits import MAX_EXTENT, MAX_RANK, parse_shape

__all__ = ["GRID_NAMES", "MAX_EDGES", "field_of", "parse_configuration", "parse_chunks", "check_rank",
           "check_coverage", "grid_json", "rectilinear_json", "encode_edges", "largest_chunk"]

#: the chunk grids a v3 array may name
GRID_NAMES = ("regular", "rectilinear")
#: at most this many chunk edges per axis once run-length pairs are expanded
MAX_EDGES = 1 << 24
_REGULAR_FIELD = "chunk_grid.configuration.chunk_shape"
_RECT_FIELD = "chunk_grid.configuration.chunk_shapes"


def field_of(name: str) -> str:
    """The document field that holds grid ``name``'s chunks (for error messages)."""
    return _RECT_FIELD if name == "rectilinear" else _REGULAR_FIELD


def parse_configuration(name: str, conf: dict | None, key: str) -> tuple:
    """The per-axis chunks of a ``chunk_grid`` object's ``configuration``."""
    if name == "rectilinear":
        return _parse_rectilinear(conf, key)
    if conf is None or "chunk_shape" not in conf:
        raise field_error(key, _REGULAR_FIELD, MISSING, "a list of positive integers (regular chunk grid)")
    extra = set(conf) - {"chunk_shape"}
    if extra:
        raise field_error(key, "chunk_grid.configuration", conf, f'only "chunk_shape" (unknown keys {sorted(extra)})')
    if not isinstance(conf["chunk_shape"], list):
        raise field_error(key, _REGULAR_FIELD, conf["chunk_shape"], "a list of positive integers")
    return parse_shape(conf["chunk_shape"], key, _REGULAR_FIELD, minimum=1)


def parse_chunks(name: str, value: Any, key: str) -> tuple:
    """Per-axis chunks given in code (not JSON), checked as a document's would be."""
    if name == "regular":
        return parse_shape(value, key, _REGULAR_FIELD, minimum=1)
    if name != "rectilinear":
        raise field_error(key, "chunk_grid.name", name, '"regular" or "rectilinear"')
    if not isinstance(value, (list, tuple)):
        raise field_error(key, _RECT_FIELD, value, "a list with one entry per dimension (an edge length or a list of them)")
    if len(value) > MAX_RANK:
        raise field_error(key, _RECT_FIELD, value, f"at most {MAX_RANK} dimensions")
    out: list[Any] = []
    for d, axis in enumerate(value):
        if isinstance(axis, (list, tuple, np.ndarray)):
            if len(axis) > MAX_EDGES:
                raise field_error(key, f"{_RECT_FIELD}[{d}]", Text(f"{len(axis)} edges"), f"at most {MAX_EDGES} edges")
            out.append(tuple(_edge(v, key, f"{_RECT_FIELD}[{d}][{i}]") for i, v in enumerate(axis)))
        else:
            out.append(_edge(axis, key, f"{_RECT_FIELD}[{d}]"))
    return tuple(out)


def check_rank(name: str, chunks: tuple, shape: tuple[int, ...], key: str) -> None:
    """The grid must have one entry per dimension of ``shape``."""
    if len(chunks) != len(shape):
        raise MetadataError(
            f"{key}: field {field_of(name)!r}: found {_text(chunks)} (rank {len(chunks)}), expected the rank of "
            f"'shape' {list(shape)} ({len(shape)})")


def check_coverage(chunks: tuple, shape: tuple[int, ...], key: str) -> None:
    """Every explicit edge list must reach the end of its axis (overflow is allowed)."""
    for d, (axis, n) in enumerate(zip(chunks, shape)):
        if not isinstance(axis, int) and sum(axis) < n:
            raise field_error(key, f"{_RECT_FIELD}[{d}]", list(axis),
                              f"edge lengths summing to at least the dimension's length {n} (they sum to {sum(axis)}; "
                              "zarr-extensions chunk-grids/rectilinear)")


def grid_json(name: str, chunks: tuple) -> dict:
    """The ``chunk_grid`` object of grid ``name`` with per-axis ``chunks``."""
    if name == "rectilinear":
        return rectilinear_json(chunks)
    return {"name": "regular", "configuration": {"chunk_shape": list(chunks)}}


def rectilinear_json(chunks: tuple) -> dict:
    """The canonical ``rectilinear`` chunk grid object for per-axis ``chunks``."""
    return {"name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": [encode_edges(a) for a in chunks]}}


def encode_edges(axis: int | tuple[int, ...]) -> int | list:
    """One axis of ``chunk_shapes`` as zarr-python 3.4 writes it: an integer stays an
    integer; in a list, runs of two or more equal edges become ``[edge, count]``."""
    if isinstance(axis, int):
        return axis
    out: list = []
    i = 0
    while i < len(axis):
        j = i
        while j < len(axis) and axis[j] == axis[i]:
            j += 1
        out.append([axis[i], j - i] if j - i > 1 else axis[i])
        i = j
    return out


def _text(chunks: tuple) -> Any:
    return Text(str([c if isinstance(c, int) else list(c) for c in chunks]))


def _edge(v: Any, key: str, field: str) -> int:
    if not (is_json_int(v) or isinstance(v, np.integer)) or not 1 <= v <= MAX_EXTENT:
        raise field_error(key, field, v, "a positive integer (an edge length, zarr-extensions chunk-grids/rectilinear)")
    return int(v)


def _parse_rectilinear(conf: dict | None, key: str) -> tuple:
    """The ``rectilinear`` grid's configuration (zarr-extensions ``chunk-grids/rectilinear``)."""
    if conf is None:
        raise field_error(key, "chunk_grid.configuration", MISSING,
                          'an object {"kind": "inline", "chunk_shapes": [...]}')
    extra = set(conf) - {"kind", "chunk_shapes"}
    if extra:
        raise field_error(key, "chunk_grid.configuration", conf,
                          f'only "kind" and "chunk_shapes" (unknown keys {sorted(extra)})')
    if conf.get("kind", MISSING) != "inline":
        raise field_error(key, "chunk_grid.configuration.kind", conf.get("kind", MISSING),
                          '"inline" (the only kind of the rectilinear chunk grid)')
    shapes = conf.get("chunk_shapes", MISSING)
    if not isinstance(shapes, list):
        raise field_error(key, _RECT_FIELD, shapes, "a list with one entry per dimension (an edge length or a list of them)")
    if len(shapes) > MAX_RANK:
        raise field_error(key, _RECT_FIELD, shapes, f"at most {MAX_RANK} dimensions")
    return tuple(_axis(axis, key, f"{_RECT_FIELD}[{d}]") for d, axis in enumerate(shapes))


def _axis(axis: Any, key: str, field: str) -> int | tuple[int, ...]:
    """One entry of ``chunk_shapes``: an edge length, or a list of edge lengths and run-length pairs."""
    if not isinstance(axis, list):
        return _edge(axis, key, field)
    edges: list[int] = []
    for i, item in enumerate(axis):
        if not isinstance(item, list):
            edges.append(_edge(item, key, f"{field}[{i}]"))
            continue
        if len(item) != 2:
            raise field_error(key, f"{field}[{i}]", item, "an edge length or a run-length pair [edge length, count]")
        v = _edge(item[0], key, f"{field}[{i}][0]")
        n = item[1]
        if not is_json_int(n) or n < 1:
            raise field_error(key, f"{field}[{i}][1]", n, "a positive integer (a repeat count)")
        if len(edges) + n > MAX_EDGES:
            raise field_error(key, field, Text(f"more than {MAX_EDGES} edges"), f"at most {MAX_EDGES} chunk edges per dimension")
        edges.extend([v] * n)
    return tuple(edges)
