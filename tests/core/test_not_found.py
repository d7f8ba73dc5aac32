"""A missing store is told apart from a store with no Zarr node there; node
errors name the store as well as the path in it; the classes are also what
zarr-python 3 raises (``FileNotFoundError``), and ``KeyError`` as before."""

from __future__ import annotations

import re

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    ContainsGroupError,
    GroupNotFoundError,
    NodeNotFoundError,
)

OPENERS = {
    "open_group": (zarrdask.open_group, GroupNotFoundError, "group"),
    "open_array": (zarrdask.open_array, ArrayNotFoundError, "array"),
    "open": (zarrdask.open, GroupNotFoundError, "array or group"),
}


@pytest.mark.parametrize("cls", [NodeNotFoundError, ArrayNotFoundError, GroupNotFoundError])
def test_classes_catchable_as_zarr_python_and_as_before(cls):
    assert issubclass(cls, FileNotFoundError) and issubclass(cls, KeyError)
    e = cls("no Zarr group at path '/' in LocalStore('x')")
    assert str(e) == "no Zarr group at path '/' in LocalStore('x')"   # no KeyError quoting


@pytest.mark.parametrize("name", OPENERS)
def test_missing_store(tmp_path, monkeypatch, name):
    opener, cls, what = OPENERS[name]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        opener("does_not_exist.zarr", mode="r")
    e = info.value
    assert type(e) is cls
    root = str(tmp_path / "does_not_exist.zarr")
    assert str(e) == f"{root!r} does not exist (no such file or directory): no Zarr {what} to open there"
    assert e.filename == root and e.errno is not None
    assert not (tmp_path / "does_not_exist.zarr").exists()  # reading made nothing


@pytest.mark.parametrize("name", OPENERS)
@pytest.mark.parametrize("mode", ["r", "r+"])
def test_empty_directory(tmp_path, name, mode):
    opener, cls, what = OPENERS[name]
    (tmp_path / "empty.zarr").mkdir()
    with pytest.raises(FileNotFoundError) as info:
        opener(str(tmp_path / "empty.zarr"), mode=mode)
    assert type(info.value) is cls
    assert re.fullmatch(rf"no Zarr {what} at path '/' in LocalStore\('.*empty\.zarr'(, read_only=True)?\)",
                        str(info.value))
    assert "does not exist" not in str(info.value)


def test_missing_path_in_existing_store(tmp_path):
    zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    with pytest.raises(GroupNotFoundError, match=r"no Zarr group at path '/a/b' in LocalStore\(.*g\.zarr"):
        zarrdask.open_group(str(tmp_path / "g.zarr"), path="a/b", mode="r")
    with pytest.raises(GroupNotFoundError, match=r"'/a/b' to open there"):
        zarrdask.open_group(str(tmp_path / "nothing.zarr"), path="a/b", mode="r")


def test_kind_mismatch_names_store(tmp_path):
    zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(2,), dtype="i1")
    zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    with pytest.raises(ContainsArrayError, match=r"path '/' in LocalStore\(.*a\.zarr.*holds an array"):
        zarrdask.open_group(str(tmp_path / "a.zarr"), mode="r")
    with pytest.raises(ArrayNotFoundError, match=r"path '/' in LocalStore\(.*g\.zarr.*holds a group"):
        zarrdask.open_array(str(tmp_path / "g.zarr"), mode="r")


def test_exists_errors_name_store(tmp_path):
    path = str(tmp_path / "v2.zarr")
    zarrdask.create_array(path, shape=(4,), dtype="i4", zarr_format=2)
    with pytest.raises(ContainsArrayError) as info:
        zarrdask.create_array(path, shape=(4,), dtype="i4", zarr_format=2)
    assert isinstance(info.value, FileExistsError)
    assert re.fullmatch(
        r"cannot create an array at path '/' in LocalStore\('.*v2\.zarr'\): a v2 array exists there "
        r"\(pass overwrite=True to replace it\)", str(info.value))
    a = zarrdask.create_array(path, shape=(4,), dtype="i4", zarr_format=2, overwrite=True)
    assert a.shape == (4,)
    g = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    g.create_group("sub")
    with pytest.raises(ContainsGroupError, match=r"path '/sub' in LocalStore\(.*g\.zarr"):
        g.create_group("sub")
    g.create_array("arr", shape=(1,), dtype="u1")
    with pytest.raises(ContainsArrayError, match=r"path '/arr/x' in LocalStore\(.*its parent '/arr' is an array"):
        g.create_array("arr/x", shape=(1,), dtype="u1")
    with pytest.raises(ContainsArrayError, match=r"group '/' in LocalStore\(.*g\.zarr.*'arr' is an array"):
        g.require_group("arr")


def test_member_errors_name_store(tmp_path):
    g = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    with pytest.raises(KeyError) as info:
        g["nope"]
    assert isinstance(info.value, FileNotFoundError)
    assert re.fullmatch(r"group '/' in LocalStore\('.*g\.zarr'\) has no member 'nope' \(path '/nope'\)",
                        str(info.value))
    with pytest.raises(NodeNotFoundError, match=r"in LocalStore\(.*has no member\(s\) 'x', 'y'"):
        g.open_members(["x", "y"])


def test_xarray_missing_vs_empty(tmp_path):
    xr = pytest.importorskip("xarray")
    with pytest.raises(FileNotFoundError, match="does_not_exist.zarr' does not exist") as info:
        xr.open_dataset(tmp_path / "does_not_exist.zarr", engine="zarrdask")
    assert isinstance(info.value, GroupNotFoundError)
    (tmp_path / "empty.zarr").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no Zarr group at path '/' in LocalStore\(.*empty\.zarr") as info:
        xr.open_dataset(tmp_path / "empty.zarr", engine="zarrdask")
    assert isinstance(info.value, GroupNotFoundError)
    # engine="zarr" tells them apart the same way
    zarr = pytest.importorskip("zarr")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        xr.open_dataset(tmp_path / "does_not_exist.zarr", engine="zarr")
    with pytest.raises(zarr.errors.GroupNotFoundError):
        xr.open_dataset(tmp_path / "empty.zarr", engine="zarr")


def test_in_memory_store_names_itself():
    store = zarrdask.MemoryStore()
    with pytest.raises(GroupNotFoundError, match=r"no Zarr group at path '/' in MemoryStore"):
        zarrdask.open_group(store, mode="r")
    zarrdask.create_array(store, shape=(1,), dtype="u1", data=np.zeros(1, "u1"))
    with pytest.raises(ContainsArrayError, match=r"in MemoryStore"):
        zarrdask.create_array(store, shape=(1,), dtype="u1")
