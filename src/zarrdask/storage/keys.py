"""Store keys and logical paths: validation and normalisation.

Two related notions live here.

*Store keys* (zarr-specs v3 core, "Abstract store interface"; v2 spec
"Storage") are the strings a :class:`~zarrdask.storage.abc.Store` maps to
values: relative, ``/``-separated paths such as ``"foo/bar/.zarray"`` or
``"a/c/0/1"``. :func:`validate_key` accepts only keys that cannot escape the
store root when a store maps them onto a file system or URL space (zarr-specs
v3 "File system store", "Key translation"): no leading ``/``, no ``\\``, no NUL,
no empty, ``.`` or ``..`` segment and no Windows drive prefix.

*Logical paths* of nodes (v2 spec "Logical storage paths") are normalised
leniently by :func:`normalize_path`, which follows that section exactly:

* replace every ``\\`` with ``/``;
* strip leading and trailing ``/``;
* collapse every run of ``/`` into one;
* then raise if a segment is ``.`` or ``..``.

Examples
--------
>>> normalize_path("/foo//bar\\\\baz/")
'foo/bar/baz'
>>> join_path("foo/", "", "/bar")
'foo/bar'
>>> validate_key("foo/.zarray")
'foo/.zarray'
"""

from __future__ import annotations

import re

from ..errors import InvalidKeyError

__all__ = ["validate_key", "validate_prefix", "key_problem", "normalize_path", "join_path", "METADATA_NAMES",
           "is_metadata_key"]

#: the names of Zarr's metadata documents (v3 ``zarr.json``; v2 ``.zarray``,
#: ``.zgroup``, ``.zattrs`` and consolidated ``.zmetadata``)
METADATA_NAMES = frozenset({".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json"})


def is_metadata_key(key: str) -> bool:
    """Whether ``key`` names a metadata document (its last segment is one of :data:`METADATA_NAMES`)."""
    return key.rpartition("/")[2] in METADATA_NAMES

# "C:" / "c:anything" as the first segment: a drive (or drive-relative) path on Windows.
_DRIVE = re.compile(r"^[A-Za-z]:")
_SLASHES = re.compile(r"/{2,}")


def key_problem(key: str) -> str | None:
    """What is wrong with ``key`` as a store key, or ``None`` if nothing.

    Examples
    --------
    >>> key_problem("a/../b")
    "it has a '..' path segment"
    >>> key_problem("a/b") is None
    True
    """
    if key == "":
        return "it is empty"
    if "\x00" in key:
        return "it contains a NUL character"
    if "\\" in key:
        return "it contains a backslash; keys are '/'-separated"
    if key.startswith("/"):
        return "it is absolute (starts with '/'); keys are relative to the store root"
    if _DRIVE.match(key):
        return "it starts with a Windows drive letter"
    for segment in key.split("/"):
        if segment == "":
            return "it has an empty path segment ('//' or a trailing '/')"
        if segment in (".", ".."):
            return f"it has a {segment!r} path segment"
    return None


def validate_key(key: str) -> str:
    """Check that ``key`` is a valid store key and return it unchanged.

    Parameters
    ----------
    key : str
        A relative, ``/``-separated path such as ``"group/array/c/0/0"``.

    Returns
    -------
    str
        ``key`` itself.

    Raises
    ------
    InvalidKeyError
        If ``key`` is not a ``str``, is empty, is absolute, contains a
        backslash or NUL, has an empty, ``.`` or ``..`` segment, or starts with
        a Windows drive letter. The message names the key and the problem.
    """
    if not isinstance(key, str):
        raise InvalidKeyError(f"invalid store key {key!r}: expected a str, got {type(key).__name__}")
    problem = key_problem(key)
    if problem is not None:
        raise InvalidKeyError(f"invalid store key {key!r}: {problem}")
    return key


def validate_prefix(prefix: str) -> str:
    """Check a listing or deletion prefix and return it unchanged.

    A prefix is ``""`` (the whole store) or a valid key optionally followed by
    a single ``/``. Prefixes are matched as plain strings (``"a/b"`` also
    matches ``"a/bc"``), but a store that maps keys onto directories must still
    be kept from walking outside its root, hence the validation.

    Raises
    ------
    InvalidKeyError
        If the prefix (without its trailing ``/``) is not a valid key.
    """
    if not isinstance(prefix, str):
        raise InvalidKeyError(
            f"invalid key prefix {prefix!r}: expected a str, got {type(prefix).__name__}"
        )
    if prefix == "":
        return prefix
    body = prefix[:-1] if prefix.endswith("/") else prefix
    problem = key_problem(body)
    if problem is not None:
        raise InvalidKeyError(f"invalid key prefix {prefix!r}: {problem}")
    return prefix


def normalize_path(path: str | None) -> str:
    """Normalise a logical node path (v2 spec "Logical storage paths").

    Parameters
    ----------
    path : str or None
        A logical path such as ``"/foo//bar/"``; ``None`` is treated as ``""``
        (the root), as zarr-python does.

    Returns
    -------
    str
        The normalised path: ``\\`` replaced by ``/``, leading and trailing
        ``/`` stripped, runs of ``/`` collapsed. ``""`` and ``"/"`` give ``""``.

    Raises
    ------
    InvalidKeyError
        If the path contains NUL, or a ``.`` or ``..`` segment after
        normalisation, or is not a string.

    Examples
    --------
    >>> normalize_path("\\\\foo\\\\bar")
    'foo/bar'
    >>> normalize_path("/")
    ''
    """
    if path is None:
        return ""
    if not isinstance(path, str):
        raise InvalidKeyError(f"invalid path {path!r}: expected a str, got {type(path).__name__}")
    if "\x00" in path:
        raise InvalidKeyError(f"invalid path {path!r}: it contains a NUL character")
    normal = _SLASHES.sub("/", path.replace("\\", "/")).strip("/")
    if normal:
        for segment in normal.split("/"):
            if segment in (".", ".."):
                raise InvalidKeyError(
                    f"invalid path {path!r}: it has a {segment!r} path segment "
                    "(v2 spec 'Logical storage paths' forbids '.' and '..')"
                )
    return normal


def join_path(*parts: str) -> str:
    """Join logical path parts with ``/``, normalising each and skipping empty ones.

    Examples
    --------
    >>> join_path("", "a/", "/b//c")
    'a/b/c'
    >>> join_path()
    ''
    """
    return "/".join(p for p in (normalize_path(part) for part in parts) if p)
