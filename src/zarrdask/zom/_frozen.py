"""Immutable JSON values for the specs, and strict JSON equality.

A spec holds its fields as *frozen JSON*: objects become :class:`FrozenDict`,
arrays become tuples, numbers / strings / booleans / ``null`` stay as they are.
:func:`thaw` gives plain ``dict`` / ``list`` back. numpy scalars and arrays are
accepted on input and turned into their JSON equivalents.

:func:`json_equal` compares two JSON values the way JSON sees them: ``true`` is
not ``1`` (Python says it is), ``1`` equals ``1.0`` (the same JSON number), and
a NaN equals a NaN.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

__all__ = ["UNSET", "FrozenDict", "canonical_dumps", "freeze", "json_equal", "thaw"]


class _Unset:
    """The value of an optional field that is absent from the document."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNSET"


#: an optional field that is not in the document (``None`` is JSON ``null``)
UNSET: Any = _Unset()


class FrozenDict(Mapping):
    """A read-only, hashable ``dict`` (insertion order kept)."""

    __slots__ = ("_data", "_hash")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._data = dict(*args, **kwargs)
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(canonical_dumps(self))
        return self._hash

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self) -> tuple:
        return (FrozenDict, (self._data,))


def freeze(value: Any, where: str = "value") -> Any:
    """``value`` as frozen JSON; ``TypeError`` naming ``where`` for non-JSON values."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, np.generic):
        return freeze(value.item(), where)
    if isinstance(value, np.ndarray):
        return freeze(value.tolist(), where)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: object keys must be strings, found {k!r}")
            out[k] = freeze(v, f"{where}.{k}")
        return FrozenDict(out)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v, f"{where}[{i}]") for i, v in enumerate(value))
    raise TypeError(f"{where}: {type(value).__name__} {value!r:.80} is not a JSON value")


def thaw(value: Any) -> Any:
    """Frozen JSON as plain ``dict`` / ``list`` (a deep copy)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Strict JSON equality (``true != 1``, ``1 == 1.0``, NaN equals NaN)."""
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(k in b and json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (Mapping, list, tuple)) or isinstance(b, (Mapping, list, tuple)):
        return False
    return type(a) is type(b) and a == b


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def canonical_dumps(value: Any) -> str:
    """A string equal for values that :func:`json_equal` calls equal (for hashing)."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"))
