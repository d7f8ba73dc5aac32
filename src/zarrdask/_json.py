"""JSON helpers shared by the metadata layer and the stores.

Every metadata document (``zarr.json``, ``.zarray``, ``.zgroup``, ``.zattrs``,
``.zmetadata``) is read with :func:`loads` and written with :func:`dumps`, and
both bound how deeply arrays and objects nest: Python's parser and the code
walking a parsed document recurse once per level, so a document nested a few
thousand levels deep would otherwise end in a ``RecursionError``. The bound is
the ``zarrdask.config`` setting ``max_json_depth`` (default 200) for the values
a document holds, plus :data:`DOCUMENT_LEVELS` (8) for the document's own
structure: a user attribute sits 2 levels down in ``zarr.json`` and 5 in a v3
group's consolidated metadata, so attributes nested ``max_json_depth`` deep
round-trip through every document. Depth counts arrays and objects: ``1`` is
0 deep, ``[1]`` 1, ``{"a": [1]}`` 2.

The depth is measured on the text before it is parsed (string literals
removed, brackets counted), so a hostile document never reaches the parser.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import numpy as np

from . import config
from .errors import MetadataError

__all__ = ["DOCUMENT_LEVELS", "copy_json", "dumps", "loads", "max_document_depth"]

DOCUMENT_LEVELS = 8

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKENS = re.compile(rf"({_STRING})\s*:|{_STRING}|([\[\]{{}},])")
_QUOTE, _OPEN, _CLOSE = ord('"'), (ord("["), ord("{")), (ord("]"), ord("}"))


def max_document_depth() -> int:
    """The deepest nesting a metadata document may have: ``max_json_depth`` + :data:`DOCUMENT_LEVELS`."""
    return config.get("max_json_depth") + DOCUMENT_LEVELS


def _depth(text: str, limit: int) -> int:
    """How deeply arrays and objects nest in the JSON ``text`` (0 if it cannot exceed ``limit``).

    Vectorised: escaped backslashes and quotes are dropped, then a bracket counts
    where an even number of quotes precedes it (outside every string literal).
    """
    if text.count("[") + text.count("{") <= limit:
        return 0
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    b = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    outside = np.bitwise_xor.accumulate(b == _QUOTE) == 0
    opens = ((b == _OPEN[0]) | (b == _OPEN[1])) & outside
    closes = ((b == _CLOSE[0]) | (b == _CLOSE[1])) & outside
    where = np.flatnonzero(opens | closes)
    if where.size == 0:
        return 0
    return int(np.cumsum(np.where(opens[where], 1, -1)).max())


def _path_to(text: str, depth: int) -> str:
    """The field path (``attributes.a[0][3]``) of the first value in ``text`` nested ``depth`` deep."""
    stack: list[list[Any]] = []  # per open container: [is_array, current key or index]
    for m in _TOKENS.finditer(text):
        name, punct = m.group(1), m.group(2)
        if name is None and punct is None:  # a string value
            continue
        if name is not None:
            if stack and not stack[-1][0]:
                try:
                    stack[-1][1] = json.loads(name)
                except ValueError:  # a bad escape: the parser will say so, if it gets there
                    stack[-1][1] = name[1:-1]
        elif punct in ("[", "{"):
            if len(stack) + 1 >= depth:
                break
            stack.append([punct == "[", 0 if punct == "[" else ""])
        elif punct in ("]", "}"):
            if stack:
                stack.pop()
        elif stack and stack[-1][0]:  # a comma in an array
            stack[-1][1] += 1
    parts = [f"[{label}]" if is_array else f".{label}" for is_array, label in stack]
    path = "".join(parts[:6]).lstrip(".") + ("…" if len(parts) > 6 else "")
    return path or "(the document)"


def _check_depth(text: str, key: str) -> None:
    limit = max_document_depth()
    depth = _depth(text, limit)
    if depth > limit:
        raise MetadataError(
            f"{key}: field {_path_to(text, limit + 1)!r}: found JSON nested {depth} levels deep, expected at most "
            f"{limit} (the zarrdask.config setting max_json_depth={config.get('max_json_depth')}, plus "
            f"{DOCUMENT_LEVELS} levels for the document's own structure; raise it with "
            "zarrdask.config.set(max_json_depth=...))")


def dumps(doc: Any, *, key: str = "<metadata document>") -> bytes:
    """Encode a metadata document the way zarr-python does (indented, UTF-8).

    Raises
    ------
    MetadataError
        The document nests deeper than :func:`loads` would accept; nothing
        that could not be read back is produced. ``key`` names the document.
    """
    try:
        text = json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=True, allow_nan=False)
    except RecursionError:
        raise MetadataError(f"{key}: found a value nested too deeply to write as JSON, expected at most "
                            f"{max_document_depth()} levels (setting max_json_depth)") from None
    _check_depth(text, key)
    return text.encode()


def loads(data: bytes | str, *, key: str) -> Any:
    """Decode a metadata document, raising :class:`MetadataError` naming ``key``.

    The nesting depth is checked first (see the module docstring).
    """
    try:
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = bytes(data)
            data = data.decode(json.detect_encoding(data), "surrogatepass")
    except UnicodeDecodeError as e:
        raise MetadataError(f"{key}: not valid JSON ({e})") from None
    if not isinstance(data, str):
        raise MetadataError(f"{key}: found {type(data).__name__}, expected JSON text (str or bytes)")
    _check_depth(data, key)
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise MetadataError(f"{key}: not valid JSON ({e})") from None
    except RecursionError:  # only if max_json_depth was raised past what Python can parse
        raise MetadataError(f"{key}: found JSON nested deeper than Python can parse, expected at most "
                            f"{max_document_depth()} levels (setting max_json_depth)") from None


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (objects and arrays copied, strings, numbers,
    booleans and ``null`` shared, as they cannot change); a value of any other
    type is deep-copied by :func:`copy.deepcopy`. Several times faster than
    ``copy.deepcopy`` on decoded documents."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    return copy.deepcopy(value)
