"""Key validation and logical path normalisation (v2 spec "Logical storage paths")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarrdask.errors import InvalidKeyError
from zarrdask.storage import join_path, normalize_path, validate_key
from zarrdask.storage.keys import validate_prefix


@pytest.mark.parametrize(
    "path, expected",
    [
        ("", ""),
        ("/", ""),
        ("//", ""),
        ("\\", ""),
        ("foo", "foo"),
        ("/foo", "foo"),
        ("foo/", "foo"),
        ("/foo/", "foo"),
        ("foo/bar", "foo/bar"),
        ("foo//bar", "foo/bar"),
        ("foo///bar////baz", "foo/bar/baz"),
        ("\\foo\\bar\\", "foo/bar"),
        ("foo\\\\bar", "foo/bar"),
        ("/foo\\/bar/", "foo/bar"),
        ("foo/.zarray", "foo/.zarray"),
        ("foo/..bar/...", "foo/..bar/..."),
        ("a b/c", "a b/c"),
        (None, ""),
    ],
)
def test_normalize_path(path, expected):
    assert normalize_path(path) == expected


@pytest.mark.parametrize(
    "path",
    [".", "..", "/./", "foo/.", "foo/..", "./foo", "../foo", "foo/../bar", "foo/./bar", "foo\\..\\bar", "foo//..//"],
)
def test_normalize_path_rejects_dot_segments(path):
    with pytest.raises(InvalidKeyError) as info:
        normalize_path(path)
    assert repr(path) in str(info.value)
    assert isinstance(info.value, ValueError)  # zarr-python compatible catch


def test_normalize_path_rejects_nul_and_non_strings():
    with pytest.raises(InvalidKeyError, match="NUL"):
        normalize_path("a\x00b")
    with pytest.raises(InvalidKeyError, match="expected a str"):
        normalize_path(3)  # type: ignore[arg-type]


@given(st.text(alphabet="ab/\\.", max_size=12))
def test_normalize_path_properties(path):
    try:
        out = normalize_path(path)
    except InvalidKeyError:
        return
    assert not out.startswith("/") and not out.endswith("/")
    assert "//" not in out and "\\" not in out
    assert normalize_path(out) == out  # idempotent
    if out:
        assert validate_key(out) == out  # a normalised non-empty path is a valid key


@pytest.mark.parametrize(
    "key", ["a", "a/b", ".zarray", "a/.zattrs", "c/0.0", "zarr.json", "a/c/0/1", "..a", "a..", "a b", "ü", "ab:c", "x/c:d"]
)
def test_validate_key_accepts(key):
    assert validate_key(key) == key


@pytest.mark.parametrize(
    "key, problem",
    [
        ("", "empty"),
        ("/a", "absolute"),
        ("/", "absolute"),
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        ("a//b", "empty path segment"),
        ("a/", "empty path segment"),
        (".", "'.'"),
        ("..", "'..'"),
        ("../a", "'..'"),
        ("a/../b", "'..'"),
        ("a/./b", "'.'"),
        ("C:", "drive"),
        ("c:/x", "drive"),
        ("C:x", "drive"),
    ],
)
def test_validate_key_rejects(key, problem):
    with pytest.raises(InvalidKeyError) as info:
        validate_key(key)
    message = str(info.value)
    assert repr(key) in message
    assert problem in message


def test_validate_key_rejects_non_strings():
    with pytest.raises(InvalidKeyError, match="expected a str, got bytes"):
        validate_key(b"a")  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", ["", "a", "a/", "a/b", "a/b/", ".z"])
def test_validate_prefix_accepts(prefix):
    assert validate_prefix(prefix) == prefix


@pytest.mark.parametrize("prefix", ["/", "/a", "a//", "../", "a/../", "a\\b/"])
def test_validate_prefix_rejects(prefix):
    with pytest.raises(InvalidKeyError) as info:
        validate_prefix(prefix)
    assert repr(prefix) in str(info.value)


@pytest.mark.parametrize(
    "parts, expected",
    [
        ((), ""),
        (("",), ""),
        (("a",), "a"),
        (("a", "b"), "a/b"),
        (("/a/", "", "/b//c/"), "a/b/c"),
        (("", "a"), "a"),
        (("a\\b", "c"), "a/b/c"),
    ],
)
def test_join_path(parts, expected):
    assert join_path(*parts) == expected


def test_join_path_rejects_dot_segments():
    with pytest.raises(InvalidKeyError):
        join_path("a", "..", "b")
