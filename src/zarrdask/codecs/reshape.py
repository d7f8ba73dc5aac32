"""The ``reshape`` codec: array → array, gives a chunk another shape in C order.

Spec: zarr-extensions ``codecs/reshape`` ("Configuration parameters",
"Format and algorithm").

Name: ``reshape``. Tested example configuration (the README's, for chunks of
shape ``[100, 50, 64, 3]``, encoded shape ``[5000, 64, 3]``)::

    [{"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}},
     {"name": "bytes", "configuration": {"endian": "little"}},
     {"name": "zstd", "configuration": {"level": 1, "checksum": true}}]

(The README lists ``zstd`` before ``bytes``, which the v3 codec order does not
allow — bytes → bytes codecs come after the array → bytes codec.)

Each entry of ``shape`` is the size of one dimension of the encoded chunk
``B``: a positive integer; a list of input dimensions (``B_shape[i]`` is the
product of the chunk's sizes along them; ``[]`` gives 1); or ``-1`` (at most
once: whatever makes ``prod(B_shape) == prod(A_shape)``). Checked when the
codec is read: entry types, a single ``-1``, the flattened input dimensions
strictly increasing. Checked against each chunk shape (``validate`` /
``encoded_spec``): input dimensions within the chunk's rank, the product
invariant (and ``-1`` dividing exactly), and for an entry ``i`` of ``k > 0``
input dimensions ``prod(B_shape[:i]) == prod(A_shape[:input_dims[0]])`` and
``prod(B_shape[i+1:]) == prod(A_shape[input_dims[k-1]+1:])`` (the README
writes the first as ``prod(A_shape[input_dims[0]])``; the prefix is meant, so
that the dimension really is the raveled index of those input dimensions).
Every violation is a :class:`~zarrdask.errors.CodecError` naming ``shape``.

``ravel(B) == ravel(A)``: encoding and decoding are ``numpy.reshape`` in C
order — views of a C-contiguous chunk, a copy otherwise. The data type and
fill value are unchanged.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import CodecError, CorruptChunkError
from .abc import ArrayArrayCodec, ChunkSpec

__all__ = ["ReshapeCodec"]

Entry = int | tuple[int, ...]


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _error(message: str) -> CodecError:
    return CodecError(f"codec 'reshape': configuration field 'shape' {message}")


def _parse_shape(shape: Any) -> tuple[Entry, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) and not isinstance(shape, np.ndarray):
        raise _error(f"must be a list, found {shape!r}")
    entries: list[Entry] = []
    for i, item in enumerate(shape):
        if _is_int(item):
            if item < 1 and item != -1:
                raise _error(f"entry {i} is {item}: a size must be a positive integer (or -1)")
            entries.append(int(item))
        elif isinstance(item, (list, tuple)):
            if not all(_is_int(d) and d >= 0 for d in item):
                raise _error(f"entry {i} must list input dimensions (non-negative integers), found {list(item)!r}")
            entries.append(tuple(int(d) for d in item))
        else:
            raise _error(f"entry {i} must be a positive integer, -1 or a list of input dimensions, found {item!r}")
    if sum(1 for e in entries if e == -1) > 1:
        raise _error(f"has -1 more than once: {_json(entries)}")
    flat = [d for e in entries if isinstance(e, tuple) for d in e]
    if any(b <= a for a, b in zip(flat, flat[1:])):
        raise _error(
            f"{_json(entries)}: the input dimensions, flattened over all entries, must be strictly "
            f"increasing, found {flat} (reshape never transposes; use the transpose codec for that)"
        )
    return tuple(entries)


def _json(entries: Sequence[Entry]) -> list[Any]:
    return [list(e) if isinstance(e, tuple) else e for e in entries]


class ReshapeCodec(ArrayArrayCodec):
    """Reshape a chunk (C order), the encoded shape given per dimension.

    Parameters
    ----------
    shape : sequence of (int or sequence of int)
        One entry per dimension of the encoded chunk (see the module docstring).
    """

    name = "reshape"

    def __init__(self, shape: Sequence[Any]) -> None:
        self.shape = _parse_shape(shape)

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "ReshapeCodec":
        config = dict(configuration or {})
        if "shape" not in config:
            raise CodecError("codec 'reshape': configuration field 'shape' is required")
        shape = config.pop("shape")
        if config:
            raise CodecError(f"codec 'reshape': unknown configuration field(s) {sorted(config)}; expected 'shape'")
        return cls(shape)

    def get_config(self) -> dict[str, Any]:
        return {"shape": _json(self.shape)}

    def output_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """``B_shape`` for a chunk of shape ``shape`` (``A_shape``); :class:`CodecError`
        if the configuration cannot hold for it."""
        a = tuple(int(s) for s in shape)
        out: list[int | None] = []
        for i, entry in enumerate(self.shape):
            if isinstance(entry, tuple):
                if any(d >= len(a) for d in entry):
                    raise _error(f"entry {i} {list(entry)} names input dimensions beyond the chunk's {len(a)}")
                out.append(math.prod(a[d] for d in entry))
            else:
                out.append(None if entry == -1 else entry)
        total, known = math.prod(a), math.prod(s for s in out if s is not None)
        if None in out:
            if known == 0 or total % known:
                raise _error(
                    f"{_json(self.shape)}: no size for -1 makes the {total} elements of a chunk of shape "
                    f"{list(a)} (the other sizes multiply to {known})"
                )
            out[out.index(None)] = total // known
        b = tuple(int(s) for s in out)  # type: ignore[arg-type]
        if math.prod(b) != total:
            raise _error(
                f"{_json(self.shape)} gives shape {list(b)} ({math.prod(b)} elements) for a chunk of shape "
                f"{list(a)} ({total} elements): prod(B_shape) must equal prod(A_shape)"
            )
        for i, entry in enumerate(self.shape):
            if isinstance(entry, tuple) and entry:
                if math.prod(b[:i]) != math.prod(a[:entry[0]]) or math.prod(b[i + 1:]) != math.prod(a[entry[-1] + 1:]):
                    raise _error(
                        f"entry {i} {list(entry)}: for a chunk of shape {list(a)} the encoded shape {list(b)} "
                        f"must have prod(B_shape[:{i}]) == prod(A_shape[:{entry[0]}]) and prod(B_shape[{i + 1}:]) "
                        f"== prod(A_shape[{entry[-1] + 1}:])"
                    )
        return b

    def validate(self, spec: ChunkSpec) -> None:
        self.output_shape(spec.shape)

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return spec.with_shape(self.output_shape(spec.shape))

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        arr = np.asarray(chunk)
        if arr.shape != tuple(spec.shape):
            raise CodecError(f"codec 'reshape': chunk has shape {arr.shape}, expected {tuple(spec.shape)}")
        return arr.reshape(self.output_shape(spec.shape), order="C")

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        arr = np.asarray(chunk)
        if arr.size != math.prod(spec.shape):
            raise CorruptChunkError(
                f"codec 'reshape': chunk has {arr.size} elements, expected shape {tuple(spec.shape)}"
            )
        return arr.reshape(spec.shape, order="C")
