"""Hostile metadata documents, opened through the public API.

Every document here is a :class:`~zarrdask.errors.MetadataError` (or a subclass)
when its node is opened, and the message names the document key and the field —
never a ``RecursionError``, ``MemoryError``, ``OverflowError``, numpy's
``ValueError``, ``KeyError`` or ``TypeError`` (``zarrdask.metadata.limits``,
``zarrdask._json``). The limits themselves are tested at the end: their
settings, numpy's bounds, and that legitimate deep attributes still round-trip.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

import zarrdask
from zarrdask import _json, config
from zarrdask.errors import MetadataError
from zarrdask.metadata.limits import MAX_ITEMSIZE, MAX_RANK, MAX_STRUCT_DEPTH
from zarrdask.storage import MemoryStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _grid(chunks: list[int]) -> dict:
    return {"name": "regular", "configuration": {"chunk_shape": chunks}}


def _v3(shape: list[int] = [10], chunks: list[int] | None = None, **changes: object) -> dict:  # noqa: B006
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "float64",
        "chunk_grid": _grid(chunks if chunks is not None else [5] * len(shape)),
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [BYTES], "attributes": {},
    }
    doc.update(changes)
    return doc


def _v2(shape: list[int] = [10], chunks: list[int] | None = None, **changes: object) -> dict:  # noqa: B006
    doc = {"zarr_format": 2, "shape": shape, "chunks": chunks if chunks is not None else [5] * len(shape),
           "dtype": "<f8", "compressor": None, "fill_value": 0, "order": "C", "filters": None}
    doc.update(changes)
    return doc


def _sharded(shape: list[int], shard: list[int], inner: list[int]) -> dict:
    codec = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner, "codecs": [BYTES], "index_codecs": [BYTES, {"name": "crc32c"}]}}
    return _v3(shape, shard, codecs=[codec])


DEEP = 100_000  # far beyond Python's recursion limit


def _deep(n: int = DEEP) -> str:
    """JSON text of ``n`` nested lists (too deep for ``json.dumps`` to write)."""
    return "[" * n + "]" * n


def _text(doc: dict, **deep: str) -> str:
    """``doc`` as JSON text, each string value ``"@name"`` replaced by the raw text ``deep[name]``."""
    text = json.dumps(doc)
    for name, raw in deep.items():
        text = text.replace(f'"@{name}"', raw)
    return text


def _struct_v2(depth: int) -> list:
    dtype: object = "<f8"
    for _ in range(depth):
        dtype = [["a", dtype]]
    return dtype  # type: ignore[return-value]


def _struct_v3(depth: int) -> dict:
    dtype: object = "float64"
    for _ in range(depth):
        dtype = {"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": dtype}]}}
    return dtype  # type: ignore[return-value]


def _struct_fill(depth: int) -> object:
    fill: object = 0.0
    for _ in range(depth):
        fill = {"a": fill}
    return fill


def _consolidated(entries: object, **extra: object) -> dict:
    return {"zarr_format": 3, "node_type": "group", "attributes": {},
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": entries, **extra}}


@dataclass(frozen=True)
class Case:
    """One hostile hierarchy: ``docs`` (key → JSON object or text), how it is opened, and
    the parts of the message (document key first, then the field, then what is expected)."""

    docs: dict
    expect: tuple[str, ...]
    opener: str = "array"  # "array", "group" (with every member opened) or "open"
    path: str = "g/a"


A3, A2, ATTRS = "g/a/zarr.json", "g/a/.zarray", "g/a/.zattrs"
GROUP_ROOT = {"zarr.json": {"zarr_format": 3, "node_type": "group", "attributes": {}}}

CASES: dict[str, Case] = {
    # -- point 4: absurd chunk shapes (opened before; MemoryError / ValueError / OverflowError on read)
    "v3-chunk-2**40": Case({A3: _v3([2**40], [2**40])},
                           (A3, "'chunk_grid.configuration.chunk_shape'", "max_chunk_bytes")),
    "v3-chunk-2**62-squared": Case({A3: _v3([2**62, 2**62], [2**62, 2**62])},
                                   (A3, "'chunk_grid.configuration.chunk_shape'", "max_chunk_bytes")),
    "v3-shape-2**64+5": Case({A3: _v3([2**64 + 5], [10])}, (A3, "'shape[0]'", "2**63 - 1")),
    "v3-chunk-2**64+5": Case({A3: _v3([10], [2**64 + 5])},
                             (A3, "'chunk_grid.configuration.chunk_shape[0]'", "2**63 - 1")),
    "v3-chunk-negative": Case({A3: _v3([10], [-5])}, (A3, "'chunk_grid.configuration.chunk_shape[0]'")),
    "v3-shape-float": Case({A3: _v3([1e300], [10])}, (A3, "'shape[0]'")),
    "v3-string-chunk-2**40": Case({A3: _v3([2**40], [2**40], data_type="string", fill_value="",
                                           codecs=[{"name": "vlen-utf8"}])},
                                  (A3, "'chunk_grid.configuration.chunk_shape'", "max_chunk_bytes")),
    "v2-chunk-2**40": Case({A2: _v2([2**40], [2**40])}, (A2, "'chunks'", "max_chunk_bytes")),
    "v2-chunk-2**62-squared": Case({A2: _v2([2**62, 2**62], [2**62, 2**62])}, (A2, "'chunks'", "max_chunk_bytes")),
    "v2-shape-2**64+5": Case({A2: _v2([2**64 + 5], [10])}, (A2, "'shape[0]'", "2**63 - 1")),
    "v2-chunk-2**64+5": Case({A2: _v2([10], [2**64 + 5])}, (A2, "'chunks[0]'", "2**63 - 1")),
    "v2-object-chunk-2**40": Case({A2: _v2([2**40], [2**40], dtype="|O", fill_value=None,
                                           filters=[{"id": "vlen-utf8"}])}, (A2, "'chunks'", "max_chunk_bytes")),
    "v2-chunk-zero": Case({A2: _v2([10], [0])}, (A2, "'chunks[0]'")),
    # ... and inside shards: the inner chunk and the shard index are bounded, the shard is not
    "sharded-inner-chunk-2**40": Case({A3: _sharded([2**41], [2**41], [2**40])},
                                      (A3, "sharding_indexed", "'configuration.chunk_shape'", "inner chunk",
                                       "max_chunk_bytes")),
    "sharded-index-2**40-entries": Case({A3: _sharded([2**40], [2**40], [1])},
                                        (A3, "sharding_indexed", "'configuration.chunk_shape'", "shard index",
                                         "max_chunk_bytes")),
    # -- point 6: ranks beyond numpy's (opened before; numpy's ValueError on read)
    "v3-rank-65": Case({A3: _v3([1] * 65)}, (A3, "'shape'", "65 dimensions", "at most 64")),
    "v2-rank-65": Case({A2: _v2([1] * 65)}, (A2, "'shape'", "65 dimensions", "at most 64")),
    # -- point 6: deep nesting (RecursionError before)
    "v3-array-attributes-deep": Case({A3: _text(_v3(attributes={"x": "@d"}), d=_deep())},
                                     (A3, "'attributes.x[0][0]", "max_json_depth")),
    "v3-group-attributes-deep": Case({A3: _text({"zarr_format": 3, "node_type": "group",
                                                 "attributes": {"x": "@d"}}, d=_deep())},
                                     (A3, "'attributes.x", "max_json_depth"), opener="group"),
    "v3-codec-configuration-deep": Case({A3: _text(_v3(codecs=[BYTES, {"name": "gzip", "configuration": "@d"}]),
                                                   d=_deep())}, (A3, "'codecs[1].configuration", "max_json_depth")),
    "v2-zattrs-deep": Case({A2: _v2(), ATTRS: _text({"x": "@d"}, d=_deep())}, (ATTRS, "'x[0]", "max_json_depth")),
    "v2-zgroup-deep": Case({"g/a/.zgroup": _text({"zarr_format": 2, "x": "@d"}, d=_deep())},
                           ("g/a/.zgroup", "'x[0]", "max_json_depth"), opener="group"),
    "v2-filters-deep": Case({A2: _text(_v2(filters="@d"), d=_deep())}, (A2, "'filters[0]", "max_json_depth")),
    "v2-zmetadata-deep": Case({".zgroup": {"zarr_format": 2}, ".zmetadata": _text({
        "zarr_consolidated_format": 1, "metadata": {"a/.zarray": _v2(), "a/.zattrs": {"x": "@d"}}}, d=_deep())},
        (".zmetadata", "'metadata.a/.zattrs.x[0]", "max_json_depth"), opener="group", path=""),
    "v3-consolidated-entry-deep": Case({"zarr.json": _text(_consolidated({"a": _v3(attributes={"x": "@d"})}),
                                                           d=_deep())},
                                       ("zarr.json", "'consolidated_metadata.metadata.a", "max_json_depth"),
                                       opener="group", path=""),
    "v2-struct-dtype-deep-json": Case({A2: _text(_v2(fill_value=None, dtype="@d"),
                                                 d='[["a", ' * 600 + '"<f8"' + "]]" * 600)},
                                      (A2, "'dtype[0][1][0][1]", "max_json_depth")),
    # -- point 6: struct data types: nesting and sub-arrays (numpy's ValueError before, or opened)
    "v2-struct-nested-40": Case({A2: _v2(fill_value=None, dtype=_struct_v2(40))},
                                (A2, "'dtype[0][1]", f"at most {MAX_STRUCT_DEPTH} levels")),
    "v3-struct-nested-40": Case({A3: _v3(fill_value=_struct_fill(40), data_type=_struct_v3(40))},
                                (A3, "'data_type.configuration.fields[0].data_type", f"at most {MAX_STRUCT_DEPTH}")),
    "v2-struct-subarray-2**31": Case({A2: _v2(fill_value=None, dtype=[["a", "<f8", [2**31]]])},
                                     (A2, "'dtype[0][2]'", str(MAX_ITEMSIZE))),
    "v2-struct-subarray-2**40-squared": Case({A2: _v2(fill_value=None, dtype=[["a", "|u1", [2**40, 2**40]]])},
                                             (A2, "'dtype[0][2]'", str(MAX_ITEMSIZE))),
    "v2-struct-subarray-rank-65": Case({A2: _v2(fill_value=None, dtype=[["a", "<f8", [1] * 65]])},
                                       (A2, "'dtype[0][2]'", "at most 64")),
    "v2-struct-itemsize-sum": Case({A2: _v2(fill_value=None, dtype=[["a", "|V2000000000"], ["b", "|V2000000000"]])},
                                   (A2, "'dtype'", str(MAX_ITEMSIZE))),
    "v2-bytes-itemsize": Case({A2: _v2(fill_value=None, dtype="|S99999999999")}, (A2, "'dtype'", str(MAX_ITEMSIZE))),
    "v2-unicode-itemsize": Case({A2: _v2(fill_value=None, dtype="<U1000000000")}, (A2, "'dtype'", str(MAX_ITEMSIZE))),
    "v3-raw-bytes-itemsize": Case({A3: _v3(data_type={"name": "raw_bytes", "configuration": {"length_bytes": 2**40}},
                                           fill_value="")},
                                  (A3, "'data_type.configuration.length_bytes'", str(MAX_ITEMSIZE))),
    "v3-raw-bits-itemsize": Case({A3: _v3(data_type=f"r{2**40 * 8}", fill_value=[])},
                                 (A3, "'data_type'", str(MAX_ITEMSIZE))),
    "v3-utf32-itemsize": Case({A3: _v3(data_type={"name": "fixed_length_utf32",
                                                  "configuration": {"length_bytes": 2**40}}, fill_value="")},
                              (A3, "'data_type.configuration.length_bytes'", str(MAX_ITEMSIZE))),
    # -- point 6: the sharding codec's checks name the document (they did not)
    "sharded-inner-does-not-divide": Case({A3: _sharded([10], [5], [3])},
                                          (A3, "sharding_indexed", "'configuration.chunk_shape'", "[3]", "[5]")),
    "sharded-inner-rank": Case({A3: _sharded([10], [5], [5, 1])},
                               (A3, "sharding_indexed", "'configuration.chunk_shape'", "[5, 1]", "[5]")),
    # -- fill values
    "v2-complex-fill-10**400": Case({A2: _v2(dtype="<c8", fill_value=10**400)}, (A2, "'fill_value'")),
    "v2-int8-fill-2**70": Case({A2: _v2(dtype="|i1", fill_value=2**70)}, (A2, "'fill_value'", "[-128, 127]")),
    "v3-int8-fill-2**70": Case({A3: _v3(data_type="int8", fill_value=2**70)}, (A3, "'fill_value'", "[-128, 127]")),
    "v2-int-fill-NaN": Case({A2: _v2(dtype="<i4", fill_value="NaN")}, (A2, "'fill_value'")),
    "v3-int-fill-NaN": Case({A3: _v3(data_type="int32", fill_value="NaN")}, (A3, "'fill_value'")),
    "v3-uint-fill-negative": Case({A3: _v3(data_type="uint64", fill_value=-1)}, (A3, "'fill_value'")),
    "v3-float-fill-list": Case({A3: _v3(fill_value=[1, 2])}, (A3, "'fill_value'")),
    "v3-float-fill-bad-hex": Case({A3: _v3(fill_value="0x7ff")}, (A3, "'fill_value'")),
    "v3-complex-fill-huge-part": Case({A3: _v3(data_type="complex64", fill_value=[0, 10**400])},
                                      (A3, "'fill_value[1]'")),
    "v3-bool-fill-object": Case({A3: _v3(data_type="bool", fill_value={"a": 1})}, (A3, "'fill_value'")),
    "v3-datetime-fill-2**64": Case({A3: _v3(data_type={"name": "numpy.datetime64", "configuration": {
        "unit": "ns", "scale_factor": 1}}, fill_value=2**64)}, (A3, "'fill_value'")),
    "v3-raw-bits-fill-256": Case({A3: _v3(data_type="r16", fill_value=[256, 0])}, (A3, "'fill_value'")),
    "v3-struct-fill-missing-field": Case({A3: _v3(data_type=_struct_v3(1), fill_value={})}, (A3, "'fill_value'")),
    "v2-time-fill-text": Case({A2: _v2(dtype="<M8[ns]", fill_value="tomorrow")}, (A2, "'fill_value'")),
    "v2-bytes-fill-not-base64": Case({A2: _v2(dtype="|S4", fill_value="@@@")}, (A2, "'fill_value'")),
    # -- consolidated metadata (KeyError / InvalidKeyError before)
    "v3-consolidated-without-metadata": Case({"zarr.json": {**_consolidated({}), "consolidated_metadata": {
        "kind": "inline", "must_understand": False}}}, ("zarr.json", "'consolidated_metadata.metadata'"),
        opener="group", path=""),
    "v3-consolidated-entry-escapes": Case({"zarr.json": _consolidated({"../x": _v3()})},
                                          ("zarr.json", "consolidated_metadata.metadata['../x']"),
                                          opener="group", path=""),
    "v3-consolidated-entry-not-object": Case({"zarr.json": _consolidated({"a": 5})},
                                             ("zarr.json", "consolidated_metadata.metadata['a']"),
                                             opener="group", path=""),
    "v3-consolidated-entry-chunk-2**40": Case({"zarr.json": _consolidated({"a": _v3([2**40], [2**40])})},
                                              ("zarr.json", "consolidated_metadata.metadata['a']",
                                               "chunk_grid.configuration.chunk_shape", "max_chunk_bytes"),
                                              opener="group", path=""),
    "v3-consolidated-entry-inner-does-not-divide": Case(
        {"zarr.json": _consolidated({"a": _sharded([10], [5], [3])})},
        ("a/zarr.json", "sharding_indexed", "'configuration.chunk_shape'", "[3]", "[5]"), opener="group", path=""),
    "v2-zmetadata-entry-escapes": Case({".zgroup": {"zarr_format": 2}, ".zmetadata": {
        "zarr_consolidated_format": 1, "metadata": {"../x/.zarray": _v2()}}},
        (".zmetadata", "metadata['../x/.zarray']"), opener="group", path=""),
    "v2-zmetadata-entry-not-object": Case({".zgroup": {"zarr_format": 2}, ".zmetadata": {
        "zarr_consolidated_format": 1, "metadata": {"a/.zarray": 5}}},
        (".zmetadata", "metadata['a/…']", "a/.zarray"), opener="group", path=""),
    "v2-zmetadata-entry-rank-65": Case({".zgroup": {"zarr_format": 2}, ".zmetadata": {
        "zarr_consolidated_format": 1, "metadata": {"a/.zarray": _v2([1] * 65)}}},
        (".zmetadata", "a/.zarray", "'shape'", "at most 64"), opener="group", path=""),
}


def _store(docs: dict) -> MemoryStore:
    return MemoryStore({k: (v if isinstance(v, str) else json.dumps(v)).encode() for k, v in docs.items()})


def _open(store: MemoryStore, case: Case) -> object:
    if case.opener == "array":
        return zarrdask.open_array(store, path=case.path, mode="r")
    if case.opener == "open":
        return zarrdask.open(store, path=case.path, mode="r")
    group = zarrdask.open_group(store, path=case.path, mode="r")
    return group.members(max_depth=None)


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_hostile_document_is_a_metadata_error(case):
    with pytest.raises(MetadataError) as ei:
        _open(_store(case.docs), case)
    msg = str(ei.value)
    for part in case.expect:
        assert part in msg, (part, msg)


@pytest.mark.parametrize("name", ["v3-chunk-2**40", "v2-zattrs-deep", "v2-struct-subarray-2**31"])
def test_zarrdask_open_says_the_same(name):
    """``zarrdask.open`` (which does not know whether it opens an array) raises the same error."""
    case = CASES[name]
    with pytest.raises(MetadataError, match="field"):
        zarrdask.open(_store(case.docs), path=case.path, mode="r")


# -- the limits -------------------------------------------------------------------------------


def test_fixed_limits_are_numpys():
    np.empty((1,) * MAX_RANK)
    with pytest.raises(ValueError):
        np.empty((1,) * (MAX_RANK + 1))
    assert np.dtype(f"V{MAX_ITEMSIZE}").itemsize == MAX_ITEMSIZE
    with pytest.raises(TypeError):
        np.dtype(f"V{MAX_ITEMSIZE + 1}")


def test_the_largest_allowed_shapes_open():
    """Rank 64, extents up to 2**63 - 1, struct nesting 32: at the limits, still valid."""
    store = _store({"a/zarr.json": _v3([2**63 - 1] + [1] * 63, [1] * 64),
                    "b/.zarray": _v2([2**63 - 1], [1000], fill_value=None, dtype=_struct_v2(MAX_STRUCT_DEPTH)),
                    "c/zarr.json": _v3(data_type=_struct_v3(MAX_STRUCT_DEPTH), fill_value=_struct_fill(32))})
    a = zarrdask.open_array(store, path="a", mode="r")
    assert a.ndim == 64 and a.shape[0] == 2**63 - 1
    assert a[(0,) * 64] == 0
    b = zarrdask.open_array(store, path="b", mode="r")
    assert b.shape == (2**63 - 1,) and b[-1].tobytes() == bytes(8)
    c = zarrdask.open_array(store, path="c", mode="r")
    assert c[0].tobytes() == bytes(8)


def test_max_chunk_bytes_is_a_setting():
    store = _store({"a/zarr.json": _v3([2**29], [2**29]), "b/.zarray": _v2([1000], [1000])})
    with pytest.raises(MetadataError, match=r"4294967296 bytes decoded.*max_chunk_bytes"):
        zarrdask.open_array(store, path="a", mode="r")
    with config.set(max_chunk_bytes=4 << 30):
        assert zarrdask.open_array(store, path="a", mode="r").chunks == (2**29,)
    with config.set(max_chunk_bytes=7999):
        with pytest.raises(MetadataError, match=r"b/\.zarray: field 'chunks'.*8000 bytes.*at most 7999"):
            zarrdask.open_array(store, path="b", mode="r")
    assert zarrdask.open_array(store, path="b", mode="r").chunks == (1000,)


def test_max_chunk_bytes_is_checked_when_creating():
    with config.set(max_chunk_bytes=1000), pytest.raises(MetadataError, match="max_chunk_bytes"):
        zarrdask.create_array(MemoryStore(), shape=(1000,), chunks=(1000,), dtype="f8")


def test_a_shard_may_exceed_max_chunk_bytes():
    """A shard of 8 GiB with 8 KiB inner chunks (a 16 MiB index) opens, reads and writes in part."""
    store = _store({"zarr.json": _sharded([2**30], [2**30], [1024])})
    a = zarrdask.open_array(store, mode="r+")
    assert a.shards == (2**30,) and a.chunks == (1024,)
    a[5:10] = np.arange(1, 6)
    np.testing.assert_array_equal(a[:12], [0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 0, 0])
    with config.set(max_chunk_bytes=1 << 20), pytest.raises(MetadataError, match="shard index"):
        zarrdask.open_array(store, mode="r")


def test_settings_must_be_positive_integers():
    for name in ("max_chunk_bytes", "max_json_depth"):
        for bad in (0, -1, 1.5, True, "2"):
            with pytest.raises(ValueError, match=name):
                config.set(**{name: bad})
    assert config.get("max_chunk_bytes") == 2 << 30 and config.get("max_json_depth") == 200


def _nested(depth: int) -> object:
    value: object = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _depth(value: object) -> int:
    d = 0
    while isinstance(value, (list, dict)):
        value, d = (value[0] if isinstance(value, list) else value["k"]), d + 1
    return d


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_attributes_nested_max_json_depth_round_trip(zarr_format):
    """Attributes exactly ``max_json_depth`` deep: written, read back, consolidated and read again."""
    depth = config.get("max_json_depth")
    store = MemoryStore()
    root = zarrdask.open_group(store, mode="w", zarr_format=zarr_format)
    a = root.create_array("a", shape=(4,), dtype="i4", chunks=(2,))
    a.attrs["deep"] = _nested(depth)
    root.attrs["deep"] = _nested(depth)
    assert _depth(zarrdask.open_array(store, path="a", mode="r").attrs["deep"]) == depth
    zarrdask.consolidate_metadata(store)
    again = zarrdask.open_group(store, mode="r", consolidated=True)
    assert _depth(again["a"].attrs["deep"]) == depth and _depth(again.attrs["deep"]) == depth
    assert again["a"].attrs["deep"] == _nested(depth)


def test_attributes_too_deep_to_read_back_are_not_written():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(4,), dtype="i4", chunks=(2,))
    before = dict(store.data)
    with pytest.raises(MetadataError, match=r"zarr\.json: field 'attributes.deep.*max_json_depth"):
        a.attrs["deep"] = _nested(config.get("max_json_depth") + 20)
    assert "deep" not in zarrdask.open_array(store, mode="r").attrs
    assert dict(store.data) == before
    with pytest.raises(MetadataError, match="max_json_depth"):  # too deep even for json.dumps
        a.attrs["deeper"] = _nested(5000)


def test_max_json_depth_is_a_setting():
    doc = _text(_v3(attributes={"x": "@d"}), d=_deep(30))  # 32 deep in all
    store = MemoryStore({"zarr.json": doc.encode()})
    assert zarrdask.open_array(store, mode="r").attrs["x"] == json.loads(_deep(30))
    with config.set(max_json_depth=23):  # 23 + 8 = 31 < 32
        with pytest.raises(MetadataError, match=r"zarr\.json: field 'attributes\.x\[0\].*32 levels deep, "
                                                r"expected at most 31"):
            zarrdask.open_array(store, mode="r")
    with config.set(max_json_depth=24):
        zarrdask.open_array(store, mode="r")


def test_depth_ignores_brackets_in_strings():
    text = json.dumps({"a": "[" * 1000 + "\\\"{" * 500, "b": ["]]]"] * 300})
    assert _json.loads(text, key="k")["a"].startswith("[[[")
    with config.set(max_json_depth=1), pytest.raises(MetadataError, match=r"field 'b\[0\]\[0\]"):
        _json.loads(json.dumps({"a": "[[[", "b": [[[[[[[[[[1]]]]]]]]]]}), key="k")


def test_hostile_codec_configuration_is_a_codec_error():
    """A codec configuration the codec refuses is a CodecError (by design), naming the document."""
    from zarrdask.errors import CodecError

    store = _store({A2: _v2(compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": [1]})})
    with pytest.raises(CodecError, match=r"g/a/\.zarray"):
        zarrdask.open_array(store, path="g/a", mode="r")
