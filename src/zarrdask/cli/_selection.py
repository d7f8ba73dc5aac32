"""Parsing numpy-style selections from the command line, without ``eval``.

The text is split at the commas outside brackets; each part is one of:

* an integer: ``5``, ``-1``;
* a slice ``start:stop:step`` with each part optional: ``0:10``, ``::2``, ``:``, ``-5:``;
* ``...`` (Ellipsis);
* a list of integers in brackets: ``[0, 5, 9]`` (an orthogonal selection along
  that dimension, as with ``Array.oindex``).

An empty text selects everything.

Examples
--------
>>> parse_selection("0:10,5")
(slice(0, 10, None), 5)
>>> parse_selection("..., ::2")
(Ellipsis, slice(None, None, 2))
>>> parse_selection("[0, 5], -1")
([0, 5], -1)
>>> parse_selection("")
(Ellipsis,)
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["is_orthogonal", "parse_selection"]

_INT = re.compile(r"^[+-]?\d+$")


def _int(text: str, whole: str) -> int:
    text = text.strip()
    if not _INT.match(text):
        raise ValueError(f"invalid selection {whole!r}: {text!r} is not an integer")
    return int(text)


def _split(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"invalid selection {text!r}: nested brackets")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"invalid selection {text!r}: unbalanced ']'")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"invalid selection {text!r}: unbalanced '['")
    parts.append(text[start:])
    return parts


def _part(text: str, whole: str) -> Any:
    text = text.strip()
    if text == "...":
        return Ellipsis
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValueError(f"invalid selection {whole!r}: {text!r} has text after ']'")
        inner = text[1:-1].strip()
        if not inner:
            raise ValueError(f"invalid selection {whole!r}: an empty list selects nothing")
        return [_int(x, whole) for x in inner.split(",")]
    if ":" in text:
        fields = text.split(":")
        if len(fields) > 3:
            raise ValueError(f"invalid selection {whole!r}: {text!r} has more than two ':'")
        start, stop, step = (
            None if not f.strip() else _int(f, whole) for f in (*fields, "")[:3]
        )
        if step == 0:
            raise ValueError(f"invalid selection {whole!r}: slice step cannot be zero")
        return slice(start, stop, step)
    if not text:
        raise ValueError(f"invalid selection {whole!r}: an empty part (use ':' for a whole dimension)")
    return _int(text, whole)


def parse_selection(text: str) -> tuple[Any, ...]:
    """Parse a selection such as ``"0:10, 5"`` into a tuple for ``Array[...]``.

    Parameters
    ----------
    text : str
        The selection (see the module documentation).

    Returns
    -------
    tuple
        Integers, slices, ``Ellipsis`` and lists of integers.

    Raises
    ------
    ValueError
        When ``text`` is not a valid selection; the message says which part.
    """
    if not text.strip():
        return (Ellipsis,)
    parts = tuple(_part(p, text) for p in _split(text))
    if sum(p is Ellipsis for p in parts) > 1:
        raise ValueError(f"invalid selection {text!r}: more than one '...'")
    return parts


def is_orthogonal(selection: tuple[Any, ...]) -> bool:
    """Whether ``selection`` holds a list, so needs ``Array.oindex``."""
    return any(isinstance(s, list) for s in selection)
