"""Groups: creation, ancestors, navigation, members, tree, modes."""

from __future__ import annotations

import json

import pytest

import zarrdask
from zarrdask.errors import ContainsArrayError, GroupNotFoundError, NodeNotFoundError
from zarrdask.storage import MemoryStore


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_hierarchy(zarr_format):
    store = MemoryStore()
    root = zarrdask.group(store, zarr_format=zarr_format, attributes={"title": "t"})
    sub = root.create_group("a/b")  # intermediate group created too
    sub.create_array("x", shape=(3,), dtype="i1", chunks=(3,))
    root.create_array("y", shape=(2, 2), dtype="f8", chunks=(1, 1))
    assert sorted(root.keys()) == ["a", "y"]
    assert "a/b/x" in root and "nope" not in root
    assert root["a"]["b"]["x"].shape == (3,)
    assert root["a/b/x"].name == "/a/b/x"
    assert [n for n, _ in root.members(max_depth=None)] == ["a", "a/b", "a/b/x", "y"]
    assert list(root.array_keys()) == ["y"] and list(root.group_keys()) == ["a"]
    tree = str(root.tree())
    assert "x (3,) int8" in tree and "b" in tree
    again = zarrdask.open_group(store, mode="r")
    assert again.attrs["title"] == "t"
    assert again.zarr_format == zarr_format
    with pytest.raises(NodeNotFoundError):
        again["missing"]
    with pytest.raises(KeyError):
        again["missing"]


def test_v2_ancestors_are_groups():
    store = MemoryStore()
    zarrdask.create_array(store, path="p/q/r", shape=(1,), dtype="i1", chunks=(1,), zarr_format=2)
    for key in [".zgroup", "p/.zgroup", "p/q/.zgroup", "p/q/r/.zarray"]:
        assert json.loads(store.get(key))["zarr_format"] == 2


def test_v3_no_implicit_groups():
    store = MemoryStore()
    zarrdask.create_array(store, path="p/q", shape=(1,), dtype="i1", chunks=(1,))
    store.delete("p/zarr.json")
    with pytest.raises(GroupNotFoundError):
        zarrdask.open_group(store, path="p", mode="r")
    assert "p" not in zarrdask.open_group(store, mode="r")


def test_modes():
    store = MemoryStore()
    with pytest.raises(GroupNotFoundError):
        zarrdask.open_group(store, mode="r")
    g = zarrdask.open_group(store, mode="a")
    g.create_group("x")
    assert "x" in zarrdask.open_group(store, mode="r+")
    zarrdask.open_group(store, mode="w")
    assert list(zarrdask.open_group(store).keys()) == []
    with pytest.raises(Exception):
        zarrdask.open_group(store, mode="w-")
    assert isinstance(zarrdask.open(store), zarrdask.Group)
    arr = zarrdask.open(store, path="arr", shape=(2,), dtype="i2", chunks=(2,))
    assert isinstance(arr, zarrdask.Array)
    assert isinstance(zarrdask.open(store, path="arr", mode="r"), zarrdask.Array)


def test_require():
    g = zarrdask.group(MemoryStore())
    a = g.require_group("a")
    assert g.require_group("a") == a
    g.create_array("arr", shape=(1,), dtype="i1", chunks=(1,))
    with pytest.raises(ContainsArrayError):
        g.require_group("arr")
    assert g.require_array("arr", shape=(1,), dtype="i1").shape == (1,)
    with pytest.raises(TypeError):
        g.require_array("arr", shape=(2,), dtype="i1")


def test_bad_paths():
    g = zarrdask.group(MemoryStore())
    with pytest.raises(ValueError, match=r"\.\."):
        g.create_group("a/../b")
    with pytest.raises(ValueError):
        zarrdask.open_group(MemoryStore(), path="./x")
