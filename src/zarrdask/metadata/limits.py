"""Limits on what a metadata document may declare, checked when it is opened.

The Zarr specs put no bound on shapes, ranks, chunk sizes or data type sizes
(``zarr-specs/v2-v2.0.rst`` "Arrays / Metadata": ``shape`` and ``chunks`` are
"a list of integers"; ``zarr-specs/v3-core.rst`` "shape" and
``v3-chunk-grids-regular-grid.rst``: "Chunk sizes must be greater than zero").
An implementation has to: without bounds, a document of a few bytes can ask for
a chunk of ``2**40`` elements (a ``MemoryError`` on the first read), a byte count
that overflows int64, or a rank numpy cannot represent. Every limit below is
checked when a document is parsed, and a document that breaks one is a
:class:`~zarrdask.errors.MetadataError` naming the document key, the field,
what was found and what was expected.

Fixed limits (what numpy can represent):

* :data:`MAX_RANK` — at most 64 dimensions (numpy 2's ``NPY_MAXDIMS``); also
  for the sub-array shapes of structured data types.
* :data:`MAX_EXTENT` — every shape and chunk entry an integer in
  ``[0, 2**63 - 1]`` (shape) or ``[1, 2**63 - 1]`` (chunks; the regular grid
  spec requires chunk sizes greater than zero, the v2 spec says nothing else).
* :data:`MAX_ITEMSIZE` — one element at most ``2**31 - 1`` bytes (numpy's
  limit for flexible and sub-array types).
* :data:`MAX_STRUCT_DEPTH` — structured data types nested at most 32 deep.

Settings (``zarrdask.config``):

* ``max_chunk_bytes`` (default ``2 << 30``, 2 GiB) — the bytes one chunk takes
  decoded: elements × item size, computed with Python integers so that it cannot
  overflow. For variable-length types the item size is the in-memory size of one
  element (8 for ``object``, 16 for ``StringDType``), a lower bound. It applies to
  the unit a codec chain decodes in one piece: a chunk, or, for a sharded array,
  each inner chunk and the shard index (checked by the ``sharding_indexed``
  codec when the array's codecs are built, which is also at open). A shard itself
  may be larger: it is never decoded into one buffer unless the caller asked for
  all of it.
* ``max_json_depth`` (default 200) — how deeply arrays and objects may nest in a
  metadata document; checked by :func:`zarrdask._json.loads` before parsing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import config
from .json_checks import Text, field_error, is_json_int

__all__ = ["MAX_RANK", "MAX_EXTENT", "MAX_ITEMSIZE", "MAX_STRUCT_DEPTH", "parse_shape", "check_chunk_bytes",
           "check_itemsize"]

MAX_RANK = 64
MAX_EXTENT = 2**63 - 1
MAX_ITEMSIZE = 2**31 - 1
MAX_STRUCT_DEPTH = 32


def parse_shape(value: Any, key: str, field: str, *, minimum: int) -> tuple[int, ...]:
    """Validate a shape-like list (array shape, chunk shape, sub-array shape).

    Parameters
    ----------
    value
        The JSON value (a list; a tuple or numpy integers are accepted for
        documents built in code).
    key, field
        The document key and the field, for error messages.
    minimum
        The smallest entry allowed: 0 for array shapes, 1 for chunk shapes.

    Returns
    -------
    tuple of int

    Raises
    ------
    MetadataError
        Not a list, more than :data:`MAX_RANK` entries, or an entry that is not
        an integer in ``[minimum, MAX_EXTENT]`` (the error names ``field[i]``).
    """
    if not isinstance(value, (list, tuple)):
        kind = "non-negative" if minimum == 0 else "positive"
        raise field_error(key, field, value, f"a list of {kind} integers")
    if len(value) > MAX_RANK:
        raise field_error(key, field, Text(f"{len(value)} dimensions"),
                          f"at most {MAX_RANK} (numpy's maximum number of dimensions)")
    out = []
    for i, v in enumerate(value):
        if not (is_json_int(v) or isinstance(v, np.integer)) or not minimum <= v <= MAX_EXTENT:
            raise field_error(key, f"{field}[{i}]", v, f"an integer in [{minimum}, 2**63 - 1]")
        out.append(int(v))
    return tuple(out)


def check_itemsize(nbytes: int, key: str, field: str, found: Any) -> int:
    """``nbytes`` (the size of one element of a data type) if numpy can represent it.

    Raises
    ------
    MetadataError
        ``nbytes`` exceeds :data:`MAX_ITEMSIZE`; ``found`` is the JSON value named.
    """
    if nbytes > MAX_ITEMSIZE:
        raise field_error(key, field, found, f"a data type of at most {MAX_ITEMSIZE} bytes per element "
                                             f"(numpy's limit; this one has {nbytes})")
    return nbytes


def check_chunk_bytes(shape: tuple[int, ...], dtype: Any, key: str, field: str, *, what: str = "chunk") -> None:
    """Check that one ``shape`` block of ``dtype`` fits the ``max_chunk_bytes`` setting.

    Parameters
    ----------
    shape
        The block's shape (a chunk, an inner chunk, a shard index).
    dtype
        Its numpy data type; its ``itemsize`` counts (the in-memory size for
        variable-length types).
    key, field
        The document key and the field holding ``shape``, for the error.
    what
        What the block is, for the error ("chunk", "inner chunk", "shard index").

    Raises
    ------
    MetadataError
        The block's decoded size exceeds ``zarrdask.config.get("max_chunk_bytes")``;
        the message names the setting.
    """
    limit = config.get("max_chunk_bytes")
    nbytes = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    if nbytes > limit:
        raise field_error(key, field, Text(f"{what} {list(shape)} of {dtype}: {nbytes} bytes decoded"),
                          f"at most {limit} bytes (the zarrdask.config setting max_chunk_bytes; raise it with "
                          "zarrdask.config.set(max_chunk_bytes=...) to open this array)")
