"""Opening a hierarchy costs work linear in its nodes: the structural properties
behind it (never timings).

- each metadata document is parsed once per open, whatever the operation
  (``members()``, ``tree()``, ``open_dataset``, ``open_datatree``);
- the entries of a consolidated document are visited a bounded number of times
  per node, never once per node for every member (no scan of the whole
  hierarchy per member);
- documents parsed without copies are never changed through what users get:
  changing attributes in place changes neither the consolidated metadata
  held by the group nor the store;
- arrays with the same codecs share one codec chain, built once;
- without consolidated metadata, each group is listed once.

Hierarchies are written by zarrdask and by zarr-python 3 (and read by both).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs import registry
from zarrdask.core import nodes
from zarrdask.metadata import ArrayMetadataV2, ArrayMetadataV3, GroupMetadataV3
from zarrdask.storage import LocalStore, MemoryStore
from zarrdask.storage.wrappers import CountingStore

zarr = pytest.importorskip("zarr")
xr = pytest.importorskip("xarray")

GROUPS, PER_GROUP = 6, 5
N_NODES = GROUPS * (PER_GROUP + 1)


def _dims(fmt: int) -> dict:
    return {"dimension_names": ["x"]} if fmt == 3 else {"attributes": {"_ARRAY_DIMENSIONS": ["x"]}}


def _tree(store, fmt: int, consolidated: bool = True):
    """GROUPS groups of PER_GROUP one-dimensional arrays each, below a root."""
    root = zarrdask.open_group(store, mode="w", zarr_format=fmt, attributes={"title": "t"})
    for g in range(GROUPS):
        grp = root.create_group(f"g{g}", attributes={"level": [1, {"deep": [g]}]})
        for i in range(PER_GROUP):
            a = grp.create_array(f"v{i}", shape=(4,), dtype="f8", chunks=(4,), **_dims(fmt))
            a.attrs.update({"units": "m", "flags": [1, 2]})
            a[:] = np.arange(4) + i
    if consolidated:
        zarrdask.consolidate_metadata(store)
    return root


class _Counted:
    """Counts the calls of one classmethod (patched on its class)."""

    def __init__(self, monkeypatch, cls, name="from_json"):
        self.calls = 0
        original = getattr(cls, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, counted)


def _parsers(monkeypatch) -> dict[str, _Counted]:
    return {c.__name__: _Counted(monkeypatch, c) for c in (ArrayMetadataV3, ArrayMetadataV2, GroupMetadataV3)}


def _open_ops(path):
    """Every way of opening the whole hierarchy, each a function of no arguments."""
    return {
        "members": lambda: zarrdask.open_group(path, mode="r").members(max_depth=None),
        "tree": lambda: zarrdask.open_group(path, mode="r").tree(),
        "open_dataset": lambda: xr.open_dataset(path, engine="zarrdask", group="g1", chunks=None),
        "open_dataset_chunks": lambda: xr.open_dataset(path, engine="zarrdask", group="g1", chunks={}),
        "open_datatree": lambda: xr.open_datatree(path, engine="zarrdask", chunks=None),
    }


# -- each document parsed once ----------------------------------------------------------
@pytest.mark.parametrize("fmt", [3, 2])
@pytest.mark.parametrize("op", ["members", "tree", "open_dataset", "open_dataset_chunks", "open_datatree"])
def test_each_document_is_parsed_once_per_open(tmp_path, monkeypatch, fmt, op):
    path = tmp_path / "h.zarr"
    _tree(LocalStore(path), fmt)
    run = _open_ops(str(path))[op]
    run()  # anything cached across opens (codec chains) is warm: parsing is not cached
    counts = _parsers(monkeypatch)
    run()
    arrays = counts["ArrayMetadataV3" if fmt == 3 else "ArrayMetadataV2"].calls
    assert arrays == GROUPS * PER_GROUP  # every array's entry in the consolidated document, once
    # the root's document (holding the consolidated metadata) and one per group entry;
    # open_dataset(group=...) reads the group's own document with the root's, in one batch
    own = 1 if op.startswith("open_dataset") else 0
    assert counts["GroupMetadataV3"].calls == (1 + GROUPS + own if fmt == 3 else 0)


def test_a_zarr_python_hierarchy_is_parsed_once(tmp_path, monkeypatch):
    path = str(tmp_path / "zp.zarr")
    root = zarr.open_group(path, mode="w", zarr_format=3)
    for g in range(GROUPS):
        grp = root.create_group(f"g{g}")
        for i in range(PER_GROUP):
            grp.create_array(f"v{i}", shape=(4,), dtype="f8", chunks=(4,), dimension_names=["x"])
    zarr.consolidate_metadata(path)
    expected = sorted(n for n, _ in zarr.open_group(path, mode="r").members(max_depth=None))
    counts = _parsers(monkeypatch)
    found = [n for n, _ in zarrdask.open_group(path, mode="r").members(max_depth=None)]
    assert found == expected
    assert counts["ArrayMetadataV3"].calls == GROUPS * PER_GROUP


# -- consolidated entries visited a bounded number of times per node ----------------------
class _VisitCounting(dict):
    """The consolidated entries, counting every entry looked at."""

    visits = 0

    def __iter__(self):
        for k in dict.__iter__(self):
            type(self).visits += 1
            yield k

    def items(self):
        return ((k, dict.__getitem__(self, k)) for k in self)

    def keys(self):
        return iter(self)

    def values(self):
        return (dict.__getitem__(self, k) for k in self)

    def __getitem__(self, key):
        type(self).visits += 1
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        type(self).visits += 1
        return dict.get(self, key, default)


@pytest.mark.parametrize("fmt", [3, 2])
@pytest.mark.parametrize("groups", [4, 16])
def test_consolidated_entries_are_visited_a_bounded_number_of_times_per_node(monkeypatch, fmt, groups):
    store = MemoryStore()
    root = zarrdask.open_group(store, mode="w", zarr_format=fmt)
    for g in range(groups):
        grp = root.create_group(f"g{g}")
        for i in range(PER_GROUP):
            grp.create_array(f"v{i}", shape=(2,), dtype="i1", chunks=(2,))
    zarrdask.consolidate_metadata(store)
    n_nodes = groups * (PER_GROUP + 1)
    for name in ("_consolidated_v3", "_consolidated_v2"):
        parse = getattr(nodes, name)
        monkeypatch.setattr(nodes, name, lambda path, raw, parse=parse: _VisitCounting(parse(path, raw)))
    _VisitCounting.visits = 0
    root = zarrdask.open_group(store, mode="r")
    listed = root.members(max_depth=None)
    text = root.tree()
    for g in range(groups):  # and each member by name, from the root and from its group
        assert root[f"g{g}/v0"].shape == (2,)
        assert f"v{PER_GROUP - 1}" in root[f"g{g}"]
    assert len(listed) == n_nodes and text.count("\n") == n_nodes
    # indexing once, listing (twice: members, tree) and 3 look-ups per group: a
    # few visits per node; a scan of every entry per member would be n_nodes per node
    assert _VisitCounting.visits <= 4 * n_nodes


# -- what users change is theirs ---------------------------------------------------------
@pytest.mark.parametrize("fmt", [3, 2])
def test_changing_attributes_in_place_changes_neither_the_cache_nor_the_store(tmp_path, fmt):
    path = tmp_path / "h.zarr"
    _tree(LocalStore(path), fmt)
    root = zarrdask.open_group(path, mode="r+")
    assert root.consolidated
    a, g = root["g1/v2"], root["g1"]
    a.attrs["flags"].append(99)
    g.attrs["level"][1]["deep"].append(99)
    a.attrs.asdict()["units"] = "changed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(str(path), engine="zarrdask", group="g1", mode="r")
    ds["v2"].attrs["flags"].append(7)
    # the same nodes again, from the consolidated metadata the group holds
    assert root["g1/v2"].attrs["flags"] == [1, 2]
    assert root["g1"]["v2"].attrs["units"] == "m"
    assert dict(root.members(max_depth=None))["g1"].attrs["level"] == [1, {"deep": [1]}]
    # rewriting the root's document (for v3 it holds the consolidated metadata)
    root.attrs["title"] = "t2"
    again = zarrdask.open_group(path, mode="r")
    assert again.consolidated and again.attrs["title"] == "t2"
    assert again["g1/v2"].attrs["flags"] == [1, 2]
    assert again["g1"].attrs["level"] == [1, {"deep": [1]}]
    # zarr-python reads the same
    zp = zarr.open_group(str(path), mode="r")
    assert zp["g1/v2"].attrs["flags"] == [1, 2]
    assert zp["g1"].attrs["level"] == [1, {"deep": [1]}]


def test_metadata_parsed_from_a_callers_document_keeps_no_reference_into_it():
    doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float64",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
           "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
           "attributes": {"a": [1]}}
    meta = ArrayMetadataV3.from_json(doc)
    before = meta.to_json()
    doc["attributes"]["a"].append(2)
    doc["codecs"][0]["configuration"]["endian"] = "big"
    assert meta.to_json() == before
    assert meta.attributes == {"a": [1]} and meta.codecs[0]["configuration"]["endian"] == "little"
    group_doc = {"zarr_format": 3, "node_type": "group", "attributes": {"b": [1]},
                 "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {}}}
    gmeta = GroupMetadataV3.from_json(group_doc)
    group_doc["attributes"]["b"].append(2)
    group_doc["consolidated_metadata"]["metadata"]["x"] = {}
    assert gmeta.attributes == {"b": [1]} and gmeta.consolidated_metadata["metadata"] == {}
    v2 = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "compressor": {"id": "zlib", "level": 1},
          "fill_value": 0.0, "order": "C", "filters": [{"id": "delta", "dtype": "<f8"}]}
    m2 = ArrayMetadataV2.from_json(v2)
    v2["compressor"]["level"] = 9
    v2["filters"][0]["dtype"] = "<f4"
    assert m2.compressor == {"id": "zlib", "level": 1} and m2.filters[0]["dtype"] == "<f8"


# -- codec chains built once per configuration ------------------------------------------
@pytest.mark.parametrize("fmt", [3, 2])
def test_arrays_with_the_same_codecs_share_one_chain(monkeypatch, fmt):
    store = MemoryStore()
    root = zarrdask.open_group(store, mode="w", zarr_format=fmt)
    # a zstd level no other test uses: the chain is not in the cache yet
    level = 17 if fmt == 3 else 16
    comp = {"name": "zstd", "configuration": {"level": level, "checksum": False}} if fmt == 3 else \
        {"id": "zstd", "level": level}
    for i in range(8):
        a = root.create_array(f"same{i}", shape=(6,), dtype="i4", chunks=(3,), compressors=[comp])
        a[:] = np.arange(6) * i
    other = root.create_array("other", shape=(6,), dtype="i4", chunks=(2,), compressors=[comp])
    other[:] = -np.arange(6)
    zarrdask.consolidate_metadata(store)
    built = _Counted(monkeypatch, registry, "codec_from_json") if fmt == 3 else None
    root = zarrdask.open_group(store, mode="r")
    arrays = dict(root.members())
    chains = {id(arrays[f"same{i}"].layout.codec) for i in range(8)}
    assert len(chains) == 1
    assert arrays["other"].layout.codec is not arrays["same0"].layout.codec  # other chunks: another chain
    if built is not None:  # zstd and bytes, for the two chunk shapes: nothing more for the other 7 arrays
        assert built.calls <= 2 * 2
    for i in range(8):
        np.testing.assert_array_equal(arrays[f"same{i}"][:], np.arange(6) * i)
    np.testing.assert_array_equal(arrays["other"][:], -np.arange(6))


# -- without consolidated metadata: each group listed once --------------------------------
@pytest.mark.parametrize("fmt", [3, 2])
def test_unconsolidated_members_list_each_group_once(fmt):
    inner = MemoryStore()
    _tree(inner, fmt, consolidated=False)
    store = CountingStore(inner)
    root = zarrdask.open_group(store, mode="r", consolidated=False)
    before = store.list_calls
    listed = root.members(max_depth=None)
    assert len(listed) == N_NODES
    assert store.list_calls - before == 1 + GROUPS  # the root and each group, once
