"""The house-style metadata error and the JSON type checks every metadata module shares.

:func:`field_error` builds the error the house rules ask for (the document key,
the field, what was found and what was expected); :data:`MISSING` stands for an
absent field, :class:`Text` for a description shown as is in place of a value.
"""

from __future__ import annotations

from typing import Any

from ..errors import MetadataError

__all__ = ["MISSING", "Text", "field_error", "is_json_int", "require_dict"]

MISSING = object()


class Text(str):
    """A description shown as is where an error names what was found (``repr`` is the text)."""

    def __repr__(self) -> str:
        return str(self)


def field_error(key: str, field: str, found: Any, expected: str, cls: type = MetadataError) -> MetadataError:
    """Build the house-style error: key, field, what was found, what was expected."""
    if found is MISSING:
        return cls(f"{key}: field {field!r}: missing; expected {expected}")
    text = repr(found)
    if len(text) > 200:
        text = text[:200] + "…"
    return cls(f"{key}: field {field!r}: found {text}, expected {expected}")


def is_json_int(x: Any) -> bool:
    """A JSON integer (Python ``int`` but not ``bool``)."""
    return isinstance(x, int) and not isinstance(x, bool)


def require_dict(doc: Any, key: str, what: str) -> dict:
    """``doc`` if it is a JSON object, else the error naming ``key``."""
    if not isinstance(doc, dict):
        raise MetadataError(f"{key}: found {type(doc).__name__} {doc!r:.100}, expected a JSON object ({what})")
    return doc
