"""store_from: stores, paths, URLs, mappers and mappings, with zarr-python modes
(zarr-python stores: tests/storage/test_zarr_python_store.py)."""

from __future__ import annotations

import pathlib
from collections import UserDict

import fsspec
import pytest

import zarrdask

from zarrdask.errors import StoreError
from zarrdask.storage import (
    FsspecStore,
    LocalStore,
    MemoryStore,
    ReadOnlyStore,
    ZipStore,
    store_from,
)


@pytest.mark.parametrize("mode", ["r", "r+", "a", "w", "w-"])
def test_store_is_returned_as_is(mode):
    store = MemoryStore()
    assert store_from(store, mode=mode) is store
    ro = ReadOnlyStore(store)
    assert store_from(ro, mode=mode) is ro


@pytest.mark.parametrize("kind", [str, pathlib.Path])
@pytest.mark.parametrize("mode, writable", [("r", False), ("r+", True), ("a", True), ("w", True), ("w-", True)])
def test_local_paths(tmp_path, kind, mode, writable):
    store = store_from(kind(tmp_path / "data.zarr"), mode=mode)
    assert isinstance(store, LocalStore)
    assert store.root == str(tmp_path / "data.zarr")
    assert store.writable is writable


def test_default_mode_is_read_only(tmp_path):
    assert not store_from(str(tmp_path)).writable


def test_file_url(tmp_path):
    store = store_from(f"file://{tmp_path}/x.zarr", mode="a")
    assert isinstance(store, LocalStore)
    assert store.root == str(tmp_path / "x.zarr")
    assert store.writable


@pytest.mark.parametrize("kind", [str, pathlib.Path])
def test_zip_paths_and_modes(tmp_path, kind):
    path = tmp_path / "data.zip"
    with pytest.raises(StoreError):
        store_from(kind(path), mode="r")
    with pytest.raises(StoreError):
        store_from(kind(path), mode="r+")
    with store_from(kind(path), mode="w-") as store:  # creates
        assert isinstance(store, ZipStore) and store.mode == "x"
        store.set("a", b"1")
    with pytest.raises(StoreError):
        store_from(kind(path), mode="w-")  # exists
    with store_from(kind(path), mode="r+") as store:
        assert store.mode == "a" and store.get("a") == b"1"
        store.set("b", b"2")
    with store_from(kind(path), mode="a") as store:
        assert store.mode == "a" and store.get("b") == b"2"
    with store_from(kind(path), mode="r") as store:
        assert store.mode == "r" and not store.writable
        assert store.get_many(["a", "b"]) == [b"1", b"2"]
    with store_from(kind(path), mode="w") as store:  # truncates
        assert store.mode == "w" and store.get("a") is None
    with store_from(f"file://{path}", mode="r") as store:
        assert isinstance(store, ZipStore)
    assert isinstance(store_from(str(tmp_path / "UPPER.ZIP"), mode="w"), ZipStore)


@pytest.mark.parametrize("mode, writable", [("r", False), ("a", True), ("w", True)])
def test_memory_url(mode, writable):
    store = store_from("memory://factory/test", mode=mode)
    assert isinstance(store, FsspecStore)
    assert store.writable is writable
    assert store.url == "memory://factory/test"


def test_remote_url_with_storage_options():
    pytest.importorskip("s3fs")
    opts = {"anon": True, "endpoint_url": "http://127.0.0.1:9", "skip_instance_cache": True}
    with zarrdask.config.set(url_store="fsspec"):  # the obstore path: tests/storage/test_url_obstore.py
        store = store_from("s3://bucket/data.zarr", mode="a", storage_options=opts)
    assert isinstance(store, FsspecStore)
    assert store.storage_options == opts
    assert "s3" in store.fs.protocol
    assert store.fs.anon is True
    assert store.root == "bucket/data.zarr"
    assert store.writable


@pytest.mark.parametrize("url_store", ["fsspec", "obstore"])
@pytest.mark.parametrize("url", ["https://example.com/data.zarr", "http://example.com/a.zip"])
def test_http_url_is_read_only(url, url_store):
    if url_store == "obstore":
        pytest.importorskip("obstore")
    with zarrdask.config.set(url_store=url_store):
        store = store_from(url, mode="a")
    assert type(store).__name__ == {"fsspec": "FsspecStore", "obstore": "ObstoreStore"}[url_store]
    assert not store.writable
    assert not store.listable


def test_fsspec_mapper():
    mapper = fsspec.get_mapper("memory://factory/mapper")
    mapper["k"] = b"v"
    store = store_from(mapper, mode="r")
    assert isinstance(store, FsspecStore)
    assert store.get("k") == b"v"
    assert not store.writable
    writable = store_from(mapper, mode="a")
    writable.set("k2", b"w")
    assert mapper["k2"] == b"w"


def test_dict_becomes_memory_store():
    data = {"a": b"1"}
    store = store_from(data, mode="a")
    assert isinstance(store, MemoryStore)
    store.set("b", b"2")
    assert data == {"a": b"1", "b": b"2"}
    assert not store_from(data).writable


@pytest.mark.parametrize("make", [str, pathlib.Path, lambda p: f"file://{p}", lambda p: str(p / "a.zip")])
def test_storage_options_with_local_path_rejected(tmp_path, make):
    target = make(tmp_path)
    with pytest.raises(ValueError, match="storage_options") as info:
        store_from(target, mode="w", storage_options={"anon": True})
    assert str(target).split("://")[-1] in str(info.value)


def test_mutable_mapping_becomes_memory_store():
    mapping = UserDict({"a": b"1"})  # a MutableMapping that is not a dict, as zarr-python 2 stores are
    store = store_from(mapping, mode="a")
    assert isinstance(store, MemoryStore) and store.data is mapping
    store.set_many({"b/c": b"2"})
    assert mapping == {"a": b"1", "b/c": b"2"}
    assert store.list_dir("") == ["a", "b"]
    assert not store_from(mapping, mode="r").writable
    with pytest.raises(ValueError, match="storage_options"):
        store_from(mapping, storage_options={"anon": True})


def test_unknown_type_message_lists_what_is_accepted():
    with pytest.raises(TypeError) as info:
        store_from(object())
    for accepted in ("zarrdask Store", "path or URL", "zarr-python store", "FSMap", "MutableMapping"):
        assert accepted in str(info.value)


def test_storage_options_with_store_or_dict_rejected():
    with pytest.raises(ValueError, match="storage_options"):
        store_from(MemoryStore(), storage_options={"anon": True})
    with pytest.raises(ValueError, match="storage_options"):
        store_from({}, storage_options={"anon": True})


@pytest.mark.parametrize("bad", [42, 3.5, None, b"bytes/path", ["a"]])
def test_unknown_type_rejected(bad):
    with pytest.raises(TypeError, match=type(bad).__name__):
        store_from(bad)


def test_unknown_mode_rejected(tmp_path):
    with pytest.raises(ValueError, match="'rw'"):
        store_from(str(tmp_path), mode="rw")
