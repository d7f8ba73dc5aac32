"""``Array.to_arrow``: strings and bytes as a ``pyarrow.ChunkedArray``, zero-copy
from the ``zarrdask.vlen-offsets`` layout (draft ZEP 7), converted otherwise."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..codecs.abc import ChunkSpec
from ..codecs.vlen import is_vlen_dtype
from ..codecs.vlen_offsets import arrow_offset_type, arrow_type, supports_zero_copy, unit_to_arrow
from ..errors import SelectionError
from ..indexing import normalize_selection
from .missing import missing_error

__all__ = ["array_to_arrow"]


def array_to_arrow(array: Any, selection: Any, validate: bool) -> Any:
    """:meth:`zarrdask.Array.to_arrow` (see there)."""
    if not is_vlen_dtype(array.dtype):
        raise TypeError(f"array {array.name!r}: to_arrow() reads strings or bytes, the dtype is {array.dtype}")
    data_type = "string" if array.dtype.kind == "T" else "bytes"
    codec, grid = array.layout.codec, array.layout.grid.largest_chunk()
    zero_copy_ok = array.layout.regular  # (a rectilinear first axis is not the shape's)
    typ = arrow_type(data_type, arrow_offset_type(codec))  # ImportError saying so without pyarrow
    import pyarrow as pa

    dims = normalize_selection(selection, array.shape, allow_arrays=False)
    if any(not isinstance(d, slice) or d.step != 1 for d in dims):
        raise SelectionError(f"array {array.name!r}: to_arrow() takes slices with step 1, found {selection!r}")
    spec = ChunkSpec(grid, array.dtype, array._fill_for_read, array.order)
    whole_rows = all(d.start == 0 and d.stop == n for d, n in zip(dims[1:], array.shape[1:]))
    if not (zero_copy_ok and array.ndim and whole_rows and tuple(grid[1:]) == array.shape[1:]
            and supports_zero_copy(codec, spec)):
        values = np.asarray(array.get_basic_selection(tuple(dims))).reshape(-1)
        return pa.chunked_array([pa.array(values.tolist(), type=typ)], type=typ)
    start, stop = dims[0].start, dims[0].stop
    row = math.prod(array.shape[1:])
    units = range(start // grid[0], -(-stop // grid[0])) if stop > start else range(0)
    keys = [array.layout.chunk_key((u,) + (0,) * (array.ndim - 1)) for u in units]
    stored = array._reads.get_many(keys) if keys else []
    missing = [key for key, data in zip(keys, stored) if data is None]
    if missing and not array.read_missing_chunks:
        raise missing_error(array.store, array.layout.prefix.rstrip("/"), [(key, None) for key in missing])
    pieces: list[Any] = []
    for u, key, data in zip(units, keys, stored):
        lo = (max(start, u * grid[0]) - u * grid[0]) * row  # element range within the unit
        hi = (min(stop, (u + 1) * grid[0]) - u * grid[0]) * row
        pos = 0
        for piece in unit_to_arrow(codec, data, spec, key, validate=validate):
            a, b = max(lo, pos), min(hi, pos + len(piece))
            if a < b:
                pieces.append(piece.slice(a - pos, b - a))
            pos += len(piece)
    return pa.chunked_array(pieces, type=typ)
