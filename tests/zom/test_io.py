"""from_zarr / to_zarr: hierarchies written by zarr-python 3 (v2 and v3) read into
specs that validate, written back as equal metadata documents that zarr-python
opens; conflicts are refused naming every path, nothing half-written."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import zarrdask
from zarrdask.errors import (
    ContainsArrayError,
    MetadataError,
    NodeConflictError,
    NodeExistsError,
    ReadOnlyError,
)
from zarrdask.storage import LocalStore, MemoryStore, ReadOnlyStore
from zarrdask.zom import (
    ArraySpec,
    ArraySpecV3,
    GroupSpec,
    GroupSpecV2,
    GroupSpecV3,
    from_zarr,
    schema_errors,
    to_zarr,
)

from ._zep import ZEP_V3_GROUP

zarr = pytest.importorskip("zarr")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

META = (".zarray", ".zgroup", ".zattrs", "zarr.json")


def write_with_zarr_python(root: Path, fmt: int) -> None:
    """A hierarchy with nested groups, attributes and several kinds of arrays."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(root, mode="w", zarr_format=fmt, attributes={"title": "t", "nested": {"a": [1, 2]}})
        dims = (lambda *n: {"dimension_names": list(n)}) if fmt == 3 else (lambda *n: {})
        g.create_array("temp", shape=(6, 4), dtype="<f4", chunks=(3, 2), fill_value=np.nan,
                       attributes={"units": "K", "_ARRAY_DIMENSIONS": ["y", "x"]}, **dims("y", "x"))
        g.create_array("count", shape=(5,), dtype=">i8", chunks=(2,), fill_value=-1,
                       compressors=numcodecs.Blosc("zstd", 3, 2) if fmt == 2 else zarr.codecs.BloscCodec())
        sub = g.create_group("sub", attributes={"level": 1})
        sub.create_array("flags", shape=(3, 3), dtype="bool", chunks=(3, 3), compressors=None)
        sub.create_array("names", shape=(4,), dtype="<U3", chunks=(2,))
        sub.create_array("when", shape=(2,), dtype="<M8[s]", chunks=(2,))
        deep = sub.create_group("deep")
        deep.create_array("c", shape=(2, 2), dtype="<c8", chunks=(1, 2), fill_value=1 + 2j)
        if fmt == 2:
            g.create_array("fortran", shape=(4, 4), dtype="<i2", chunks=(2, 2), order="F",
                           filters=[numcodecs.Delta("<i2")], chunk_key_encoding={"name": "v2", "separator": "/"})
        else:
            g.create_array("sharded", shape=(8, 8), dtype="<u2", chunks=(2, 2), shards=(4, 4))


def metadata_files(root: Path) -> dict[str, dict]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f in META:
                full = Path(dirpath) / f
                out[full.relative_to(root).as_posix()] = json.loads(full.read_text())
    return out


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def zarr_python_tree(request, tmp_path):
    root = tmp_path / "src.zarr"
    write_with_zarr_python(root, request.param)
    return root, request.param


def test_from_zarr_of_zarr_python_hierarchies_validates(zarr_python_tree):
    root, fmt = zarr_python_tree
    spec = GroupSpec.from_zarr(zarrdask.open_group(root, mode="r"))
    assert spec.zarr_format == fmt and isinstance(spec, GroupSpecV2 if fmt == 2 else GroupSpecV3)
    assert schema_errors(spec.to_json()) == []
    spec.validate()
    assert sorted(spec.to_flat()) == sorted(
        ["/", "/temp", "/count", "/sub", "/sub/flags", "/sub/names", "/sub/when", "/sub/deep", "/sub/deep/c",
         "/fortran" if fmt == 2 else "/sharded"])
    temp = spec.members["temp"]
    assert temp.attributes["units"] == "K" and temp.shape == (6, 4)
    assert dict(spec.attributes) == {"title": "t", "nested": {"a": (1, 2)}}
    # a store path works too, and the same spec comes out
    assert from_zarr(str(root)) == spec
    assert from_zarr(root, path="sub/deep/c") == spec.members["sub"].members["deep"].members["c"]


def test_to_zarr_writes_equal_documents_that_zarr_python_opens(zarr_python_tree, tmp_path):
    root, fmt = zarr_python_tree
    spec = from_zarr(root)
    out = tmp_path / "copy.zarr"
    group = spec.to_zarr(out)
    assert isinstance(group, zarrdask.Group) and group.zarr_format == fmt
    original, written = metadata_files(root), metadata_files(out)
    assert written == original  # same keys, equal JSON
    # nothing but metadata was written
    assert all(p.name in META for p in out.rglob("*") if p.is_file())
    # zarr-python opens the copy and sees the same hierarchy, arrays all fill value
    z = zarr.open_group(out, mode="r", zarr_format=fmt)
    zsrc = zarr.open_group(root, mode="r", zarr_format=fmt)
    assert sorted(n for n, _ in z.members(max_depth=None)) == sorted(n for n, _ in zsrc.members(max_depth=None))
    assert z["temp"].attrs["units"] == "K" and np.isnan(z["temp"][...]).all()
    assert (z["count"][...] == -1).all()
    assert from_zarr(out) == spec


def test_to_zarr_in_a_memory_store_and_at_a_path(zarr_python_tree):
    root, fmt = zarr_python_tree
    spec = from_zarr(root)
    store = MemoryStore()
    spec.to_zarr(store, path="inner/copy")
    assert from_zarr(store, path="inner/copy") == spec
    # the missing ancestors are groups of the same format
    assert from_zarr(store, depth=0) == (GroupSpecV2() if fmt == 2 else GroupSpecV3())
    assert from_zarr(store, path="inner", depth=1).members["copy"] == spec.replace(members={})


def test_depth_limits_the_levels_read():
    store = MemoryStore()
    g = zarrdask.group(store, attributes={"a": 1})
    g.create_group("b/c/d")
    g.create_array("b/x", shape=(2,), dtype="i1", chunks=(2,))
    full = GroupSpec.from_zarr(g)
    assert list(full.to_flat()) == ["/", "/b", "/b/c", "/b/c/d", "/b/x"]
    assert GroupSpec.from_zarr(g, depth=-1) == full
    assert GroupSpec.from_zarr(g, depth=0) == GroupSpecV3(attributes={"a": 1})
    assert list(GroupSpec.from_zarr(g, depth=1).to_flat()) == ["/", "/b"]
    assert list(GroupSpec.from_zarr(g, depth=2).to_flat()) == ["/", "/b", "/b/c", "/b/x"]
    arr = ArraySpec.from_zarr(g["b/x"])
    assert isinstance(arr, ArraySpecV3) and arr.shape == (2,)
    with pytest.raises(TypeError):
        GroupSpec.from_zarr(g["b/x"])


def test_attributes_come_from_the_node_not_stale_metadata():
    store = MemoryStore()
    a = zarrdask.create_array(store, path="a", shape=(2,), dtype="i1", chunks=(2,), attributes={"v": 1})
    a.attrs["v"] = 2
    assert from_zarr(a).attributes == {"v": 2}


# -- writing over existing nodes ----------------------------------------------------------------
def tree(fmt=3, **changes):
    spec = ArraySpec.from_array(np.zeros((4, 4), "f8"), zarr_format=fmt, chunks=(2, 2), attributes={"u": "m"})
    group = GroupSpecV3 if fmt == 3 else GroupSpecV2
    members = {"a": spec, "b": spec.replace(shape=[8, 4]), "g": group(members={"c": spec})}
    members.update(changes)
    return group(attributes={"root": 1}, members=members)


def snapshot(store):
    return {k: store.get(k) for k in sorted(store.list())}


@pytest.mark.parametrize("fmt", [2, 3])
def test_equal_existing_nodes_are_fine(fmt):
    store = MemoryStore()
    tree(fmt).to_zarr(store)
    arr = zarrdask.open_array(store, path="a")
    arr[...] = 1
    before = snapshot(store)
    tree(fmt).to_zarr(store)  # equal: nothing changes, the chunks stay
    assert snapshot(store) == before


def test_equal_means_the_same_metadata_not_the_same_text():
    store = MemoryStore()
    spec = tree()
    spec.to_zarr(store)
    a = spec.members["a"]
    same = a.replace(fill_value=0.0, storage_transformers=[])  # 0 vs 0.0, absent vs []
    spec.replace(members={**spec.members, "a": same}).to_zarr(store)


@pytest.mark.parametrize("fmt", [2, 3])
def test_conflicts_are_refused_naming_every_path(fmt):
    store = MemoryStore()
    tree(fmt).to_zarr(store)
    zarrdask.open_array(store, path="a")[...] = 1
    before = snapshot(store)
    group = GroupSpecV3 if fmt == 3 else GroupSpecV2
    a = tree(fmt).members["a"]
    changed = tree(fmt, a=a.replace(shape=[4, 6]), b=group(), g=group(members={"c": a.replace(attributes={})}),
                   new=a).replace(attributes={"root": 2})
    with pytest.raises(NodeConflictError) as info:
        changed.to_zarr(store)
    err = info.value
    assert isinstance(err, NodeExistsError) and isinstance(err, FileExistsError)
    assert err.paths == ("/", "/a", "/b", "/g/c")
    text = str(err)
    assert "4 stored node(s) differ" in text and "overwrite=True" in text
    assert "/: field 'attributes.root': stored 1, spec 2" in text
    assert "/a: field 'shape': stored [4, 4], spec [4, 6]" in text
    assert f"/b: a v{fmt} array is stored, the spec has a v{fmt} group" in text
    assert "/g/c: field 'attributes.u': stored 'm', spec <absent>" in text
    assert snapshot(store) == before  # nothing written, not even the new node


@pytest.mark.parametrize("fmt", [2, 3])
def test_overwrite_replaces_exactly_the_differing_nodes(fmt):
    store = MemoryStore()
    tree(fmt).to_zarr(store)
    for name in ("a", "b", "g/c"):
        zarrdask.open_array(store, path=name)[...] = 1
    zarrdask.open_group(store, path="extra", mode="w", zarr_format=fmt)  # not in the spec
    group = GroupSpecV3 if fmt == 3 else GroupSpecV2
    a = tree(fmt).members["a"]
    changed = tree(fmt, a=a.replace(attributes={"u": "cm"}),  # attributes only: chunks kept
                   b=a.replace(shape=[8, 8]),  # metadata: chunks deleted
                   g=group(attributes={"new": True}, members={"c": a}))  # group attrs only
    result = changed.to_zarr(store, overwrite=True)
    assert isinstance(result, zarrdask.Group) and not result.read_only
    assert from_zarr(store, depth=None).members["a"] == changed.members["a"]
    assert (zarrdask.open_array(store, path="a")[...] == 1).all()
    b = zarrdask.open_array(store, path="b")
    assert b.shape == (8, 8) and (b[...] == 0).all() and b.nchunks_initialized == 0
    assert (zarrdask.open_array(store, path="g/c")[...] == 1).all()  # under a rewritten group, untouched
    assert "extra" in zarrdask.open_group(store)
    stored = from_zarr(store)
    assert stored.replace(members={k: v for k, v in stored.members.items() if k != "extra"}) == changed


def test_overwrite_changes_node_type_and_format():
    store = MemoryStore()
    tree(2).to_zarr(store)
    zarrdask.open_array(store, path="g/c")[...] = 1
    new = GroupSpecV3(members={"g": ArraySpec.from_array(np.zeros(3, "i2")), "a": GroupSpecV3()})
    with pytest.raises(NodeConflictError) as info:
        new.to_zarr(store)
    assert info.value.paths == ("/", "/g", "/a")
    assert "/g: a v2 group is stored, the spec has a v3 array" in str(info.value)
    new.to_zarr(store, overwrite=True)
    keys = set(store.list())
    assert "g/c/.zarray" not in keys and not any(k.startswith("g/c/") for k in keys)  # the group's tree went
    assert {".zgroup", ".zattrs", "a/.zarray", "a/.zattrs"}.isdisjoint(keys)  # old v2 documents removed
    assert zarrdask.open_group(store, mode="r", zarr_format=3)["g"].shape == (3,)
    assert "b/.zarray" in keys  # not in the spec: left alone


def test_unreadable_existing_metadata_is_a_conflict():
    store = MemoryStore()
    store.set("a/zarr.json", b"{not json")
    spec = GroupSpecV3(members={"a": ArraySpec.from_array(np.zeros(2))})
    with pytest.raises(NodeConflictError, match=r"/a: the stored metadata cannot be read"):
        spec.to_zarr(store)
    spec.to_zarr(store, overwrite=True)
    assert from_zarr(store) == spec


def test_invalid_metadata_is_refused_before_writing():
    store = MemoryStore()
    zep = GroupSpec.from_json(json.loads(ZEP_V3_GROUP))  # "data_type": "|u1" is not a v3 data type
    with pytest.raises(MetadataError, match=r"array/zarr.json: field 'data_type'"):
        zep.to_zarr(store)
    assert list(store.list()) == []


def test_an_array_ancestor_is_refused():
    store = MemoryStore()
    zarrdask.create_array(store, path="x", shape=(1,), dtype="i1", chunks=(1,))
    with pytest.raises(ContainsArrayError, match="ancestor '/x' is an array"):
        tree().to_zarr(store, path="x/y", overwrite=True)


def test_read_only_store():
    store = MemoryStore()
    with pytest.raises(ReadOnlyError):
        tree().to_zarr(ReadOnlyStore(store))
    assert list(store.list()) == []
    tree().to_zarr(store)
    assert tree().to_zarr(ReadOnlyStore(store)).read_only  # equal: nothing to write


def test_a_local_store_object(tmp_path):
    store = LocalStore(tmp_path / "x.zarr")
    arr = ArraySpec.from_array(np.zeros((3,), "u1"), zarr_format=2)
    result = to_zarr(arr, store)
    assert isinstance(result, zarrdask.Array) and result.zarr_format == 2
    assert json.loads((tmp_path / "x.zarr" / ".zarray").read_text())["dtype"] == "|u1"
    assert json.loads((tmp_path / "x.zarr" / ".zattrs").read_text()) == {}


@pytest.mark.parametrize("fmt", [2, 3])
def test_consolidated_metadata_is_not_part_of_the_structure(tmp_path, fmt):
    root = tmp_path / "c.zarr"
    write_with_zarr_python(root, fmt)
    plain = from_zarr(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(root), zarr_format=fmt)
    assert from_zarr(root) == plain
    before = metadata_files(root)
    plain.to_zarr(root)  # every node is equal: nothing is written
    assert metadata_files(root) == before


@pytest.mark.parametrize("fmt", [2, 3])
def test_from_zarr_of_a_consolidated_hierarchy_is_one_read(fmt):
    from zarrdask.storage import CountingStore

    store = MemoryStore()
    tree(fmt).to_zarr(store)
    plain = from_zarr(store)
    zarrdask.consolidate_metadata(store)
    counting = CountingStore(store)
    assert from_zarr(counting) == plain == tree(fmt)
    assert counting.counts["get_many_calls"] == 1 and counting.counts["list_calls"] == 0
