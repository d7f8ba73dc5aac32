"""Consolidated metadata: v2 ``.zmetadata`` and v3 inline ``consolidated_metadata``,
written and read as zarr-python does, and the one-read property."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
zarr = pytest.importorskip("zarr")  # zarr-python, which needs numcodecs >= 0.14

import zarrdask
from zarrdask.errors import MetadataError, NodeNotFoundError
from zarrdask.storage import LocalStore, MemoryStore
from zarrdask.storage.wrappers import CountingStore

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _hierarchy(store, fmt):
    root = zarrdask.open_group(store, mode="w", zarr_format=fmt, attributes={"title": "t"})
    a = root.create_array("a", shape=(6,), dtype="i4", chunks=(4,), attributes={"units": "m"})
    a[:] = np.arange(6)
    sub = root.create_group("sub", attributes={"level": 1})
    b = sub.create_array("b", shape=(3, 2), dtype="f8", chunks=(2, 2))
    b[:] = 1.5
    sub.create_group("deeper").create_array("c", shape=(2,), dtype="u1", chunks=(2,))
    return root


def _names(group):
    return [n for n, _ in group.members(max_depth=None)]


@pytest.mark.parametrize("fmt", [2, 3])
def test_one_read_opens_and_lists_everything(fmt):
    inner = MemoryStore()
    _hierarchy(inner, fmt)
    zarrdask.consolidate_metadata(inner)
    store = CountingStore(inner)
    root = zarrdask.open_group(store, mode="r")
    assert root.consolidated
    assert _names(root) == ["a", "sub", "sub/b", "sub/deeper", "sub/deeper/c"]
    assert root["sub"].attrs["level"] == 1
    assert root["sub/b"].shape == (3, 2)
    assert root["sub"]["deeper"]["c"].dtype == np.uint8
    assert "sub/deeper" in root and "nope" not in root
    assert dict(root["a"].attrs) == {"units": "m"}
    assert store.get_many_calls == 1
    assert store.list_calls == 0
    # data still comes from the store
    np.testing.assert_array_equal(root["a"][:], np.arange(6))


@pytest.mark.parametrize("fmt", [2, 3])
def test_documents_are_zarr_pythons_layout(tmp_path, fmt):
    _hierarchy(LocalStore(tmp_path / "h.zarr"), fmt)
    zarrdask.consolidate_metadata(tmp_path / "h.zarr")
    if fmt == 2:
        doc = json.loads((tmp_path / "h.zarr" / ".zmetadata").read_text())
        assert doc["zarr_consolidated_format"] == 1
        md = doc["metadata"]
        assert md[".zgroup"] == {"zarr_format": 2}
        assert md[".zattrs"] == {"title": "t"}
        assert md["a/.zattrs"] == {"units": "m"}
        assert md["sub/deeper/c/.zarray"] == json.loads((tmp_path / "h.zarr/sub/deeper/c/.zarray").read_text())
    else:
        doc = json.loads((tmp_path / "h.zarr" / "zarr.json").read_text())
        cm = doc["consolidated_metadata"]
        assert cm["kind"] == "inline" and cm["must_understand"] is False
        assert sorted(cm["metadata"]) == ["a", "sub", "sub/b", "sub/deeper", "sub/deeper/c"]
        assert cm["metadata"]["sub/b"] == json.loads((tmp_path / "h.zarr/sub/b/zarr.json").read_text())
        assert doc["attributes"] == {"title": "t"}


@pytest.mark.parametrize("fmt", [2, 3])
def test_zarr_python_reads_ours(tmp_path, fmt):
    path = tmp_path / "ours.zarr"
    _hierarchy(LocalStore(path), fmt)
    zarrdask.consolidate_metadata(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_consolidated(str(path), zarr_format=fmt)
    assert g.metadata.consolidated_metadata is not None
    assert sorted(k for k, _ in g.members(max_depth=None)) == ["a", "sub", "sub/b", "sub/deeper", "sub/deeper/c"]
    np.testing.assert_array_equal(g["a"][:], np.arange(6))
    assert g["sub"].attrs["level"] == 1


@pytest.mark.parametrize("fmt", [2, 3])
def test_we_read_zarr_pythons(tmp_path, fmt):
    path = str(tmp_path / "theirs.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(path, mode="w", zarr_format=fmt, attributes={"k": 1})
        g.create_array("x", shape=(4,), dtype="i8", chunks=(2,))[:] = np.arange(4)
        s = g.create_group("s")
        s.create_array("y", shape=(2,), dtype="f4", chunks=(2,), attributes={"u": "m"})
        zarr.consolidate_metadata(path)
    store = CountingStore(LocalStore(path))
    root = zarrdask.open_group(store, mode="r", consolidated=True)
    assert _names(root) == ["s", "s/y", "x"]
    assert root["s/y"].attrs["u"] == "m"
    assert store.get_many_calls == 1
    np.testing.assert_array_equal(root["x"][:], np.arange(4))


def test_consolidated_true_without_metadata_is_an_error():
    store = MemoryStore()
    _hierarchy(store, 3)
    with pytest.raises(MetadataError, match="no consolidated metadata"):
        zarrdask.open_group(store, mode="r", consolidated=True)
    with pytest.raises(MetadataError, match=r"\.zmetadata"):
        store2 = MemoryStore()
        _hierarchy(store2, 2)
        zarrdask.open(store2, mode="r", consolidated=True)


@pytest.mark.parametrize("fmt", [2, 3])
def test_consolidated_false_lists_the_store(fmt):
    store = MemoryStore()
    root = _hierarchy(store, fmt)
    zarrdask.consolidate_metadata(store)
    root.create_array("late", shape=(1,), dtype="i1")  # not in the consolidated document
    assert "late" not in _names(zarrdask.open_group(store, mode="r"))
    assert "late" in _names(zarrdask.open_group(store, mode="r", consolidated=False))
    with pytest.raises(NodeNotFoundError, match="consolidated"):
        zarrdask.open_group(store, mode="r")["late"]
    # re-consolidating picks it up
    assert "late" in _names(zarrdask.consolidate_metadata(store))


def test_creating_through_a_consolidated_group_sees_the_new_member():
    store = MemoryStore()
    _hierarchy(store, 3)
    zarrdask.consolidate_metadata(store)
    root = zarrdask.open_group(store, mode="r+")
    assert root.consolidated
    root.create_array("new", shape=(2,), dtype="i2")
    assert not root.consolidated
    assert "new" in root


def test_subgroup_consolidation(tmp_path):
    store = MemoryStore()
    _hierarchy(store, 3)
    zarrdask.consolidate_metadata(store, path="sub")
    sub = zarrdask.open_group(store, path="sub", mode="r")
    assert sub.consolidated
    assert _names(sub) == ["b", "deeper", "deeper/c"]
    assert not zarrdask.open_group(store, mode="r").consolidated


@pytest.mark.parametrize(
    "doc, match",
    [
        (b"{not json", r"\.zmetadata"),
        (json.dumps({"zarr_consolidated_format": 2, "metadata": {}}).encode(), "zarr_consolidated_format"),
        (json.dumps({"zarr_consolidated_format": 1, "metadata": []}).encode(), "'metadata'"),
    ],
)
def test_bad_zmetadata_names_the_key(doc, match):
    store = MemoryStore()
    _hierarchy(store, 2)
    store.set(".zmetadata", doc)
    with pytest.raises(MetadataError, match=match):
        zarrdask.open_group(store, mode="r")
    # ignoring it still works
    assert "a" in _names(zarrdask.open_group(store, mode="r", consolidated=False))
