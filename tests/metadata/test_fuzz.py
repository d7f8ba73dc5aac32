"""Fuzzing the metadata documents: mutations of valid ``zarr.json``, ``.zarray``,
``.zattrs``, ``.zgroup`` and consolidated documents (wrong types, huge and
negative integers, deep nesting, missing and extra fields) are opened through
``zarrdask.open``. Whatever comes in, opening (and reading one element of an
array, and opening every member of a group) either works or raises a
:class:`~zarrdask.errors.MetadataError` (``UnknownCodecError`` and
``UnknownDataTypeError`` are subclasses). A codec configuration the codec
refuses is a ``CodecError`` by design (``zarrdask.errors``); it must name the
document too.

Deterministic (``derandomize=True``) and bounded, so it runs in a few seconds.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask import config
from zarrdask.errors import CodecError, MetadataError
from zarrdask.storage import MemoryStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
V3_ARRAY = {  # v3-core.rst "Array metadata" example
    "zarr_format": 3, "node_type": "array", "shape": [10000, 1000], "dimension_names": ["rows", "columns"],
    "data_type": "float64", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1000, 100]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "codecs": [BYTES], "fill_value": "NaN", "attributes": {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]},
}
V3_SHARDED = {  # v3-codecs-sharding-indexed.rst example configuration
    **V3_ARRAY, "data_type": "uint16", "fill_value": 0, "shape": [100, 64],
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 64]}},
    "codecs": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [32, 32], "codecs": [BYTES, {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [BYTES, {"name": "crc32c"}], "index_location": "end"}}],
}
V3_STRUCT = {  # data-types-struct.md example
    **V3_ARRAY, "shape": [100], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100]}},
    "dimension_names": None,
    "data_type": {"name": "struct", "configuration": {"fields": [
        {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": {"name": "numpy.datetime64",
                                                                        "configuration": {"unit": "s",
                                                                                          "scale_factor": 1}}}]}},
    "fill_value": {"x": 0.0, "y": "NaT"},
}
V3_STRING = {**V3_STRUCT, "data_type": "string", "fill_value": "", "codecs": [{"name": "vlen-utf8"}]}
V3_GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {"spam": "ham", "eggs": 42}}
V2_ARRAY = {  # v2 spec example
    "chunks": [1000, 1000], "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
    "dtype": "<f8", "fill_value": "NaN", "filters": [{"id": "delta", "dtype": "<f8", "astype": "<f4"}],
    "order": "C", "shape": [10000, 10000], "zarr_format": 2,
}
V2_STRUCT = {**V2_ARRAY, "dtype": [["a", "<f4"], ["b", [["c", "<i2", [2, 3]]]]], "fill_value": None,
             "compressor": None, "filters": None, "chunks": [10, 10]}

SEEDS: list[tuple[str, dict[str, Any]]] = [
    ("v3 array", {"a/zarr.json": V3_ARRAY}),
    ("v3 sharded", {"a/zarr.json": V3_SHARDED}),
    ("v3 struct", {"a/zarr.json": V3_STRUCT}),
    ("v3 string", {"a/zarr.json": V3_STRING}),
    ("v3 group", {"a/zarr.json": V3_GROUP}),
    ("v3 consolidated", {"a/zarr.json": {**V3_GROUP, "consolidated_metadata": {
        "kind": "inline", "must_understand": False, "metadata": {"x": V3_SHARDED, "g": V3_GROUP, "g/y": V3_STRUCT}}}}),
    ("v2 array", {"a/.zarray": V2_ARRAY, "a/.zattrs": {"units": "m", "scale": [1, 2]}}),
    ("v2 struct", {"a/.zarray": V2_STRUCT}),
    ("v2 group", {"a/.zgroup": {"zarr_format": 2}, "a/.zattrs": {"title": "t"}}),
    ("v2 consolidated", {"a/.zgroup": {"zarr_format": 2}, "a/.zmetadata": {"zarr_consolidated_format": 1, "metadata": {
        ".zgroup": {"zarr_format": 2}, "x/.zarray": V2_ARRAY, "x/.zattrs": {"u": 1}, "s/.zgroup": {"zarr_format": 2},
        "s/y/.zarray": V2_STRUCT}}}),
]


class _Deep(str):
    """A placeholder for JSON nested ``n`` deep (``json.dumps`` cannot write it)."""


def _deep(n: int) -> _Deep:
    return _Deep(f"@deep{n}@")


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 3, 2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1, 2**63, 2**64 + 5, 10**400]),
    st.floats(),  # NaN and infinities are written as NaN / Infinity, which Python's json reads back
    st.text(max_size=6),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "0x7fc00000", "0x7ff", "NaT", "", "|S99999999999", "<f8",
                     "|V0", "<U0", "float64", "r0", "r8", "struct", "string", "sharding_indexed", "bytes", "regular",
                     "default", "../x", "c/0", "AAAA"]),
    st.lists(st.one_of(st.integers(min_value=-3, max_value=2**64), st.sampled_from([2**31, 2**40, 2**62])),
             max_size=70),
    st.integers(min_value=2, max_value=3000).map(_deep),
    st.dictionaries(st.sampled_from(["name", "configuration", "id", "x", "must_understand"]),
                    st.one_of(st.integers(), st.text(max_size=3), st.none()), max_size=3),
)


def _locations(doc: Any, at: tuple = ()) -> list[tuple]:
    """Every place in ``doc`` (paths of keys and indices), the root ``()`` first."""
    out = [at]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _locations(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _locations(v, (*at, i))
    return out


def _mutate(data: st.DataObject, doc: Any) -> Any:
    """One mutation of ``doc``: replace a value, delete it, add a field or wrap a value in a list."""
    where = data.draw(st.sampled_from(_locations(doc)), label="where")
    op = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "add", "wrap"]), label="op")
    if not where:
        return data.draw(HOSTILE) if op == "replace" else [doc] if op == "wrap" else doc
    parent = doc
    for step in where[:-1]:
        parent = parent[step]
    last = where[-1]
    if op == "replace":
        parent[last] = data.draw(HOSTILE, label="value")
    elif op == "delete":
        del parent[last]
    elif op == "wrap":
        parent[last] = [parent[last]]
    elif isinstance(parent[last], dict):
        parent[last][data.draw(st.sampled_from(["extra", "name", "configuration", "must_understand"]))] = \
            data.draw(HOSTILE, label="added")
    elif isinstance(parent[last], list):
        parent[last].append(data.draw(HOSTILE, label="added"))
    return doc


def _text(doc: Any) -> bytes:
    text = json.dumps(doc)
    for n in range(2, 3001):
        if f"@deep{n}@" in text:
            text = text.replace(f'"@deep{n}@"', "[" * n + "]" * n)
    return text.encode()


def _exercise(store: MemoryStore) -> None:
    """Open the node at ``a``; read an element of an array, open every member of a group."""
    node = zarrdask.open(store, path="a", mode="r")
    dict(node.attrs)
    if isinstance(node, zarrdask.Array):
        if node.size:
            node[(0,) * node.ndim]
    else:
        node.members(max_depth=None)


@settings(max_examples=400, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_documents_open_or_raise_a_metadata_error(data):
    name, docs = data.draw(st.sampled_from(SEEDS), label="seed")
    docs = copy.deepcopy(docs)
    target = data.draw(st.sampled_from(sorted(docs)), label="document")
    for _ in range(data.draw(st.integers(min_value=1, max_value=3), label="mutations")):
        docs[target] = _mutate(data, docs[target])
    store = MemoryStore({k: _text(v) for k, v in docs.items()})
    with config.set(max_chunk_bytes=1 << 24):  # whatever opens, reading one element stays small
        try:
            _exercise(store)
        except MetadataError:
            pass
        except CodecError as e:  # a codec's own configuration check (by design not a MetadataError)
            assert "a/" in str(e), str(e)


def test_the_seeds_are_valid():
    for name, docs in SEEDS:
        _exercise(MemoryStore({k: _text(v) for k, v in docs.items()}))
