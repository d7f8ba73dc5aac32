"""Parsing ``--slice`` selections without eval."""

from __future__ import annotations

import pytest

from zarrdask.cli._selection import is_orthogonal, parse_selection


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", (Ellipsis,)),
        ("  ", (Ellipsis,)),
        ("5", (5,)),
        ("-1", (-1,)),
        ("+2", (2,)),
        ("0:10,5", (slice(0, 10), 5)),
        (":", (slice(None),)),
        ("::", (slice(None),)),
        ("::2", (slice(None, None, 2),)),
        ("-5:", (slice(-5, None),)),
        (" 1 : 9 : -2 ", (slice(1, 9, -2),)),
        ("...,3", (Ellipsis, 3)),
        ("[0, 5, -1], ::3", ([0, 5, -1], slice(None, None, 3))),
        ("1,[2],...", (1, [2], Ellipsis)),
    ],
)
def test_parse(text, expected):
    assert parse_selection(text) == expected


@pytest.mark.parametrize(
    "text,message",
    [
        ("a", "'a' is not an integer"),
        ("1.5", "'1.5' is not an integer"),
        ("1,,2", "an empty part"),
        ("1:2:3:4", "more than two ':'"),
        ("::0", "step cannot be zero"),
        ("...,...", "more than one '...'"),
        ("[1,2", "unbalanced '['"),
        ("1]", "unbalanced ']'"),
        ("[[1]]", "nested brackets"),
        ("[]", "an empty list"),
        ("[1]x", "text after ']'"),
        ("__import__('os').system('true')", "is not an integer"),
        ("1e3", "is not an integer"),
    ],
)
def test_invalid(text, message):
    with pytest.raises(ValueError, match="invalid selection") as info:
        parse_selection(text)
    assert message in str(info.value)


def test_is_orthogonal():
    assert is_orthogonal(([1, 2], 3)) and not is_orthogonal((slice(None), 3))
