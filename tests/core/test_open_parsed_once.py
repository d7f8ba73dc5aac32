"""A repeated open of an unchanged array: its ``zarr.json`` is read with one
call and parsed once; every open still gets attributes of its own, a changed
document or setting is parsed (and checked) again."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask
from zarrdask import config
from zarrdask.core import nodes
from zarrdask.errors import MetadataError
from zarrdask.storage import CountingStore, LocalStore, MemoryStore


@pytest.fixture
def parses(monkeypatch):
    """How many v3 array documents were parsed."""
    count = [0]
    real = nodes.ArrayMetadataV3.from_json

    def counting(doc, **kw):
        count[0] += 1
        return real(doc, **kw)

    monkeypatch.setattr(nodes.ArrayMetadataV3, "from_json", staticmethod(counting))
    return count


def test_an_unchanged_document_is_parsed_once(parses):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(6,), dtype="i4", chunks=(3,), attributes={"units": "m"})
    a[...] = np.arange(6)
    before = parses[0]
    opened = [zarrdask.open_array(store, mode="r") for _ in range(5)]
    assert parses[0] - before == 1
    assert all(o.metadata is opened[0].metadata for o in opened)
    np.testing.assert_array_equal(opened[-1][...], np.arange(6))


def test_each_open_has_attributes_of_its_own(parses):
    store = MemoryStore()
    zarrdask.create_array(store, shape=(2,), dtype="i4", attributes={"nested": {"list": [1, 2]}, "n": 1})
    first = zarrdask.open_array(store, mode="r")
    first.attrs.asdict()["nested"]["list"].append(3)  # an edit in place that is never written
    second = zarrdask.open_array(store, mode="r")
    assert second.attrs["nested"] == {"list": [1, 2]}
    assert second.metadata.attributes == {"nested": {"list": [1, 2]}, "n": 1}


def test_a_changed_document_is_parsed_again(parses):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(4,), dtype="i4", chunks=(2,))
    zarrdask.open_array(store, mode="r")
    a.attrs["title"] = "t"
    assert zarrdask.open_array(store, mode="r").attrs["title"] == "t"
    a.resize((8,))
    assert zarrdask.open_array(store, mode="r").shape == (8,)


def test_the_checks_follow_the_settings():
    store = MemoryStore()
    zarrdask.create_array(store, shape=(64,), dtype="f8", chunks=(64,))
    zarrdask.open_array(store, mode="r")
    with config.set(max_chunk_bytes=256), pytest.raises(MetadataError, match="max_chunk_bytes"):
        zarrdask.open_array(store, mode="r")
    doc = json.loads(store.get("zarr.json"))
    doc["attributes"] = {"x": json.loads("[" * 20 + "1" + "]" * 20)}
    store.set("zarr.json", json.dumps(doc).encode())
    zarrdask.open_array(store, mode="r")
    with config.set(max_json_depth=4), pytest.raises(MetadataError, match="max_json_depth"):
        zarrdask.open_array(store, mode="r")


def test_opening_a_local_v3_array_reads_one_document(tmp_path):
    zarrdask.create_array(tmp_path / "a.zarr", shape=(4,), dtype="i4")
    zarrdask.create_array(tmp_path / "b.zarr", shape=(4,), dtype="i4", zarr_format=2)
    for name, keys in (("a.zarr", 1), ("b.zarr", 1 + 3)):
        store = CountingStore(LocalStore(tmp_path / name))
        zarrdask.open_array(store, mode="r")
        assert store.keys_requested == keys  # zarr.json; v2: zarr.json, then .zarray, .zgroup, .zattrs
