"""Checking the fields of a spec, and naming nodes by their ZOM path.

What the spec classes of both formats (:mod:`.v2`, :mod:`.v3`) and their
bases (:mod:`.spec`) check when they are built: a field's value of the right
JSON shape (:func:`int_tuple`, :func:`json_object`), a member name the Zarr
spec allows (:func:`check_member_name`), and the error naming the class, the
field, what was found and what was expected (:func:`field_error`).

ZOM paths name the nodes of a hierarchy from its root ``"/"``
(:func:`child_path`): the diff records, the flat form and the error messages
use them.
"""

from __future__ import annotations

from typing import Any

from ..errors import MetadataError
from ..metadata import validate_node_name
from ._frozen import FrozenDict, freeze, thaw

__all__ = ["check_member_name", "child_path", "field_error", "int_tuple", "json_object"]

#: names of metadata documents, which no member may take
_RESERVED_NAMES = {".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"}


def field_error(cls: type, name: str, found: Any, expected: str) -> MetadataError:
    """The error for field ``name`` of a ``cls`` spec: what was found (shortened), what was expected."""
    text = repr(thaw(found))
    if len(text) > 200:
        text = text[:200] + "…"
    return MetadataError(f"{cls.__name__}: field {name!r}: found {text}, expected {expected}")


def int_tuple(cls: type, name: str, value: Any, minimum: int) -> tuple[int, ...]:
    """Field ``name`` as a tuple of integers of at least ``minimum`` (an integer alone is a 1-tuple)."""
    value = freeze(value, name)
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in value):
        what = "non-negative" if minimum == 0 else "positive"
        raise field_error(cls, name, value, f"a list of {what} integers")
    return value


def json_object(cls: type, name: str, value: Any) -> FrozenDict:
    """Field ``name`` as a frozen JSON object."""
    value = freeze(value, name)
    if not isinstance(value, FrozenDict):
        raise field_error(cls, name, value, "a JSON object")
    return value


def check_member_name(name: Any, zarr_format: int) -> str:
    """A member name allowed by the Zarr spec of ``zarr_format``; else :class:`MetadataError`."""
    problem = None
    if not isinstance(name, str) or not name:
        problem = "a non-empty string"
    elif "/" in name:
        problem = 'a name without "/"'
    elif set(name) == {"."}:
        problem = "a name not made only of periods"
    elif name in _RESERVED_NAMES:
        problem = "a name other than a metadata document's"
    if problem:
        raise MetadataError(f"member name: found {name!r}, expected {problem}")
    if zarr_format == 3:
        validate_node_name(name)  # v3 core "Node names" (e.g. the reserved prefix "__")
    return name


def child_path(path: str, name: str) -> str:
    """The ZOM path of the member ``name`` of the node at ``path`` (``"/"`` + ``"a"`` → ``"/a"``)."""
    return f"{path.rstrip('/')}/{name}"
