"""What :func:`zarrdask.to_zarr`'s arguments mean: its mode (and dask's
``overwrite=`` spelling of it), and the keywords it passes on to
:func:`zarrdask.create_array` — which it checks in every mode, so that none is
ever silently ignored.

- A keyword ``create_array`` does not take is a ``TypeError``, whatever the mode.
- Creating an array: every keyword goes to ``create_array``.
- Writing into an existing array: ``write_empty_chunks`` applies (how this
  write treats chunks equal to the fill value). The keywords that describe the
  array (:data:`COMPARED`) are accepted when they match it, so that one call can
  create an array and, run again, write into it; one that differs is an
  :class:`~zarrdask.errors.ArrayMismatchError` naming it, what was given and
  what the array has. The other creation keywords (:data:`CREATE_ONLY`: codecs,
  attributes, key encoding) are an error too: they cannot change an existing
  array, and a codec has too many spellings to check that it is the same.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from ..chunking import dask_chunks, is_regular
from ..chunking.rectilinear import normalize_chunks
from ..core.api import create_array
from ..core.array import Array
from ..errors import ArrayMismatchError
from ..metadata.dtypes import default_fill_value, normalize_dtype

#: to_zarr's modes: create (failing if an array exists), replace, write into an
#: existing array (creating it if missing), write into an existing array
MODES = ("w-", "w", "a", "r+")

#: create_array's keywords that to_zarr sets itself or takes under its own name
_SET_BY_TO_ZARR = frozenset({"store", "name", "path", "shape", "overwrite", "storage_options", "data"})

#: the keywords to_zarr passes on to create_array
CREATE_KEYWORDS = tuple(
    name for name, p in inspect.signature(create_array).parameters.items()
    if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in _SET_BY_TO_ZARR
)

#: keywords that apply in every mode (an option of the write, not of the array)
ALWAYS = frozenset({"write_empty_chunks"})


def resolve_mode(mode: str | None, overwrite: bool | None, into_array: bool) -> str:
    """The mode of a write: ``mode`` as given, or what ``overwrite`` asks for
    (``True``: ``"w"``, ``False``: ``"w-"``), or the default (``"r+"`` when
    ``into_array``, an open array being the target, else ``"w-"``)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"Cannot use mode {mode!r} to write: to_zarr takes mode 'w-', 'w', 'a' or 'r+'")
    if overwrite is not None:
        if not isinstance(overwrite, (bool, np.bool_)):
            raise TypeError(f"overwrite must be True or False, found {overwrite!r}")
        implied = "w" if overwrite else "w-"
        if into_array:
            raise ValueError(
                f"overwrite={overwrite} is for creating an array; the target is an existing array "
                "(leave overwrite out to write into it)"
            )
        if mode is not None and mode != implied:
            raise ValueError(f"overwrite={overwrite} means mode {implied!r}, found mode={mode!r}: give one of them")
        return implied
    if mode is None:
        return "r+" if into_array else "w-"
    return mode


def check_names(kwargs: dict[str, Any]) -> None:
    """``TypeError`` for every keyword that neither ``to_zarr`` nor ``create_array`` takes."""
    unknown = sorted(set(kwargs) - set(CREATE_KEYWORDS))
    if unknown:
        raise TypeError(
            f"to_zarr() got unexpected keyword arguments {', '.join(map(repr, unknown))}; "
            f"besides its own it takes create_array's {', '.join(CREATE_KEYWORDS)}"
        )


def _same_grid(given: Any, have: tuple | None, shape: tuple[int, ...]) -> bool:
    if given is None or have is None:
        return given is None and have is None
    if isinstance(given, str):  # "auto" chooses chunks for a new array
        return False
    if isinstance(given, (int, np.integer)):
        given = (given,) * len(shape)
    try:
        grid = normalize_chunks(given)
    except (TypeError, ValueError):
        return False
    if len(grid) != len(shape):
        return False
    if is_regular(grid) and is_regular(have):
        return grid == tuple(have)
    return dask_chunks(shape, grid) == dask_chunks(shape, have)


def _same_value(given: Any, have: Any, dtype: np.dtype) -> bool:
    if given is None:
        return have is None or _same_value(default_fill_value(dtype), have, dtype)
    try:
        a, b = np.asarray(given, dtype=dtype), np.asarray(have, dtype=dtype)
    except (TypeError, ValueError):
        return False
    return bool(np.array_equal(a, b, equal_nan=dtype.kind in "fc"))


def _same_dtype(given: Any, array: Array) -> bool:
    try:
        return normalize_dtype(given) == array.dtype
    except (TypeError, ValueError):
        return False


#: the keywords describing an array: whether a given value matches the array, and what it has
COMPARED: dict[str, tuple[Callable[[Any, Array], bool], Callable[[Array], Any]]] = {
    "chunks": (lambda v, a: _same_grid(v, a.chunks, a.shape), lambda a: a.chunks),
    "shards": (lambda v, a: _same_grid(v, a.shards, a.shape), lambda a: a.shards),
    "dtype": (_same_dtype, lambda a: a.dtype),
    "fill_value": (lambda v, a: _same_value(v, a.fill_value, a.dtype), lambda a: a.fill_value),
    "order": (lambda v, a: v == a.order, lambda a: a.order),
    "zarr_format": (lambda v, a: v == a.zarr_format, lambda a: a.zarr_format),
    "dimension_names": (
        lambda v, a: (None if v is None else tuple(v)) == a.dimension_names, lambda a: a.dimension_names
    ),
    "chunk_grid": (lambda v, a: v is None or v == a.chunk_grid, lambda a: a.chunk_grid),
}

#: the creation keywords that cannot apply to an existing array
CREATE_ONLY = tuple(k for k in CREATE_KEYWORDS if k not in COMPARED and k not in ALWAYS)


def _shown(value: Any) -> str:
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, np.dtype):
        return repr(str(value))
    return repr(value)


def check_existing(array: Array, kwargs: dict[str, Any], mode: str) -> None:
    """Raise :class:`~zarrdask.errors.ArrayMismatchError` unless every keyword in
    ``kwargs`` (already resolved: ``chunks="dask"`` replaced by the blocks) can
    apply to the existing ``array``."""
    differ = []
    for name, value in kwargs.items():
        if name in COMPARED:
            same, have = COMPARED[name]
            if not same(value, array):
                differ.append(f"{name}={value!r} (the array's {name}: {_shown(have(array))})")
    refused = [name for name in kwargs if name in CREATE_ONLY]
    if not differ and not refused:
        return
    parts = []
    if differ:
        parts.append("the keywords describe a different array: " + ", ".join(differ))
    if refused:
        parts.append(f"{', '.join(n + '=' for n in refused)} only apply when creating an array")
    raise ArrayMismatchError(
        f"array {array.name!r} exists (mode {mode!r} writes into it), and {'; '.join(parts)}. "
        "Leave them out to write into it, or pass mode='w' to replace it"
    )
