"""Variable-length strings and bytes: vlen-utf8, vlen-bytes, the ZEP 7 layout
(``zarrdask.vlen-offsets``) and Arrow views, through codecs and arrays, v2 and v3."""

from __future__ import annotations

import json
import struct
from functools import reduce
from operator import mul

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrdask
from zarrdask.codecs import vlen_offsets
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.codecs.vlen import VlenBytesCodec, VlenUtf8Codec, coerce_vlen
from zarrdask.codecs.vlen_offsets import (
    VlenOffsetsCodec,
    chunk_to_arrow,
    decode_offsets_chunk,
    encode_offsets_chunk,
)
from zarrdask.errors import CodecError, CorruptChunkError, SelectionError, UnknownDataTypeError
from zarrdask.storage import MemoryStore

pa = pytest.importorskip("pyarrow")

T = np.dtypes.StringDType()
OBJ = np.dtype(object)
STRINGS = ["", "a", "bé", "中文", "😀 emoji", "x" * 5000, "tab\tnew\nline", "\x00nul"]
BYTES = [b"", b"a", b"\x00\xff\x00", "bé".encode(), b"x" * 5000, b"\x00"]


def spec(shape, dtype=T, fill=""):
    return ChunkSpec(tuple(shape), dtype, fill)


def numcodecs_format(items: list[bytes]) -> bytes:
    """codecs-vlen-utf8.md / codecs-vlen-bytes.md "Format and algorithm", by hand."""
    return struct.pack("<I", len(items)) + b"".join(struct.pack("<I", len(b)) + b for b in items)


# -- vlen-utf8 / vlen-bytes -------------------------------------------------------------
def test_vlen_utf8_bytes_follow_the_spec():
    values = np.array(STRINGS, dtype=T)
    raw = bytes(VlenUtf8Codec().encode(values, spec(values.shape)))
    assert raw == numcodecs_format([s.encode() for s in STRINGS])
    out = VlenUtf8Codec().decode(raw, spec(values.shape))
    assert out.dtype == T and out.tolist() == STRINGS


def test_vlen_bytes_follow_the_spec():
    values = np.empty(len(BYTES), dtype=object)
    values[:] = BYTES
    raw = bytes(VlenBytesCodec().encode(values, spec(values.shape, OBJ, b"")))
    assert raw == numcodecs_format(BYTES)
    out = VlenBytesCodec().decode(raw, spec(values.shape, OBJ, b""))
    assert out.dtype == OBJ and out.tolist() == BYTES


def test_vlen_codecs_json_as_zarr_python_writes_it():
    assert VlenUtf8Codec().to_json() == {"name": "vlen-utf8", "configuration": {}}
    assert VlenBytesCodec().to_json() == {"name": "vlen-bytes", "configuration": {}}
    assert isinstance(codec_from_json("vlen-utf8"), VlenUtf8Codec)
    assert isinstance(codec_from_json({"name": "vlen-bytes", "configuration": {}}), VlenBytesCodec)
    with pytest.raises(CodecError, match="no configuration"):
        codec_from_json({"name": "vlen-utf8", "configuration": {"x": 1}})
    c = codec_from_json({"name": "zarrdask.vlen-offsets", "configuration": {"offset_type": "int64"}})
    assert c == VlenOffsetsCodec("int64")
    assert c.to_json() == {"name": "zarrdask.vlen-offsets", "configuration": {"offset_type": "int64"}}
    with pytest.raises(CodecError, match="offset_type"):
        codec_from_json({"name": "zarrdask.vlen-offsets", "configuration": {"offset_type": "uint8"}})


@pytest.mark.parametrize("codec, dtype", [(VlenUtf8Codec(), OBJ), (VlenUtf8Codec(), np.dtype("i4")),
                                          (VlenBytesCodec(), T), (VlenOffsetsCodec(), np.dtype("U3"))])
def test_codecs_refuse_other_data_types(codec, dtype):
    with pytest.raises(CodecError, match="only for the data type"):
        codec.validate(spec((2,), dtype, None))


def test_codec_for_wrong_data_type_fails_at_open_naming_the_document():
    store = MemoryStore()
    doc = {"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int32",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "vlen-utf8"}]}
    store.set("zarr.json", json.dumps(doc).encode())
    with pytest.raises(CodecError, match=r"zarr\.json.*vlen-utf8.*'string'"):
        zarrdask.open_array(store, mode="r")


@pytest.mark.parametrize("raw, match", [
    (numcodecs_format([b"ok", b"\xff\xfe"]), "not valid UTF-8"),
    (numcodecs_format([b"ab", b"cd"])[:-1], "truncated"),
    (numcodecs_format([b"ab"]), "holds 1 elements, expected 2"),
    (numcodecs_format([b"a", b"b", b"c"]), "holds 3 elements, expected 2"),
    (b"\x02\x00", "header"),
], ids=["invalid-utf8", "truncated", "too-few", "too-many", "no-header"])
def test_vlen_utf8_corrupt_chunks(raw, match):
    with pytest.raises(CorruptChunkError, match=rf"'c/0'.*{match}"):
        VlenUtf8Codec().decode(raw, spec((2,)), key="c/0")


def test_vlen_bytes_count_mismatch():
    with pytest.raises(CorruptChunkError, match=r"'k'.*holds 3 elements, expected 4 \(chunk shape \(2, 2\)\)"):
        VlenBytesCodec().decode(numcodecs_format([b"a"] * 3), spec((2, 2), OBJ, b""), key="k")


# -- ZEP 7 layout -------------------------------------------------------------------------
def round_up_to_multiple(x, base=64):
    n, rem = divmod(x, base)
    if rem > 0:
        n += 1
    return n * base


def zep7_encode(array: list, string: bool) -> bytes:
    """ZEP 7 "Encoding" as written in the ZEP (int32 offsets)."""
    offsets = np.zeros(len(array) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(x.encode() if string else x) for x in array])
    data_buffer = memoryview("".join(array).encode() if string else b"".join(array))
    offset_buffer = offsets.view(np.uint8)
    data_start_idx = round_up_to_multiple(len(offset_buffer))
    chunk_buffer = np.zeros(data_start_idx + len(data_buffer), dtype=np.uint8)
    chunk_buffer[: len(offset_buffer)] = offset_buffer
    chunk_buffer[data_start_idx:] = np.frombuffer(data_buffer, np.uint8)
    return chunk_buffer.tobytes()


def zep7_decode(chunk_buffer: memoryview, chunk_shape: tuple, string: bool, width: int = 4) -> list:
    """ZEP 7 "Decoding" as written in the ZEP (numpy case)."""
    chunk_size = reduce(mul, chunk_shape)
    offset_end_idx = (chunk_size + 1) * width
    data_start_idx = round_up_to_multiple(offset_end_idx)
    offsets = np.frombuffer(chunk_buffer[:offset_end_idx], dtype=f"<i{width}")
    data_buffer = chunk_buffer[data_start_idx:]
    result = []
    for i in range(len(offsets) - 1):
        item = bytes(data_buffer[offsets[i] : offsets[i + 1]])
        result.append(str(item, "utf8") if string else item)
    return result


@pytest.mark.parametrize("values, dtype", [(STRINGS, T), (BYTES, OBJ)])
def test_zep7_chunks_match_the_zeps_algorithm(values, dtype):
    string = dtype == T
    arr = np.array(values, dtype=T) if string else coerce_vlen(values, OBJ)
    raw = bytes(VlenOffsetsCodec().encode(arr, spec(arr.shape, dtype)))
    assert raw == zep7_encode(values, string)
    assert zep7_decode(memoryview(raw), arr.shape, string) == values
    out = VlenOffsetsCodec().decode(raw, spec(arr.shape, dtype))
    assert out.dtype == dtype and out.tolist() == values


def test_zep7_layout_details():
    raw = bytes(VlenOffsetsCodec("int64").encode(np.array([["ab", "c"], ["", "dé"]], dtype=T), spec((2, 2))))
    # 5 int64 offsets = 40 bytes, padded to 64, then the data buffer
    assert np.frombuffer(raw[:40], "<i8").tolist() == [0, 2, 3, 3, 6]
    assert raw[40:64] == bytes(24)
    assert raw[64:] == "abcdé".encode()
    assert zep7_decode(memoryview(raw), (2, 2), True, width=8) == ["ab", "c", "", "dé"]
    # exactly 64 bytes of offsets: no padding
    raw = encode_offsets_chunk(np.array(["x"] * 15, dtype=T))
    assert len(raw) == 64 + 15 and raw[64:] == b"x" * 15


def test_zep7_overflowing_int32_offsets(monkeypatch):
    monkeypatch.setattr(vlen_offsets, "_INT32_MAX", 5)
    with pytest.raises(CodecError, match="int64"):
        VlenOffsetsCodec().encode(np.array(["abc", "def"], dtype=T), spec((2,)))
    assert len(VlenOffsetsCodec("int64").encode(np.array(["abc", "def"], dtype=T), spec((2,)))) == 64 + 6


def _bad_offsets(offsets, data=b"abcdef", width=4):
    head = np.array(offsets, dtype=f"<i{width}").tobytes()
    return head + bytes(round_up_to_multiple(len(head)) - len(head)) + data


@pytest.mark.parametrize("raw, match", [
    (_bad_offsets([0, 4, 2, 6]), r"offsets decrease at element 1 \(4 then 2\)"),
    (_bad_offsets([0, 2, 4, 9]), "element 2 ends at offset 9, past the end of the 6-byte data buffer"),
    (_bad_offsets([-1, 2, 4, 6]), "first offset is -1"),
    (_bad_offsets([0, 2])[:10], "cannot hold the 4 int32 offsets"),
    (_bad_offsets([0, 1, 2, 4], b"ab\xff\xfe"), "element 2 is not valid UTF-8"),
    (_bad_offsets([0, 1, 2, 4], "aéb".encode()), "element 2 starts inside a multi-byte UTF-8 character"),
], ids=["decreasing", "past-end", "negative", "too-short", "invalid-utf8", "split-character"])
def test_zep7_corrupt_chunks(raw, match):
    with pytest.raises(CorruptChunkError, match=rf"chunk 'a/c/0'.*{match}"):
        decode_offsets_chunk(raw, (3,), key="a/c/0")
    with pytest.raises(CorruptChunkError, match="chunk 'a/c/0'"):
        chunk_to_arrow(raw, 3, key="a/c/0")


def test_zep7_element_count_disagreeing_with_the_chunk_shape():
    raw = encode_offsets_chunk(np.array(["a"] * 20, dtype=T))  # 21 offsets: 84 → 128 bytes of header
    with pytest.raises(CorruptChunkError, match=r"'c/1'.*element count disagrees with the chunk shape"):
        VlenOffsetsCodec().decode(raw, spec((40,)), key="c/1")


def test_zep7_bytes_are_not_checked_for_utf8():
    raw = _bad_offsets([0, 1, 2, 4], b"ab\xff\xfe")
    assert decode_offsets_chunk(raw, (3,), data_type="bytes").tolist() == [b"a", b"b", b"\xff\xfe"]
    assert chunk_to_arrow(raw, 3, data_type="bytes").to_pylist() == [b"a", b"b", b"\xff\xfe"]


# -- Arrow, zero copy ------------------------------------------------------------------------
def _inside(buf: "pa.Buffer", owner: bytes) -> bool:
    base = pa.py_buffer(owner)
    return base.address <= buf.address and buf.address + buf.size <= base.address + base.size


@pytest.mark.parametrize("offset_type, data_type, values, typ", [
    ("int32", "string", STRINGS, "string"),
    ("int64", "string", STRINGS, "large_string"),
    ("int32", "bytes", BYTES, "binary"),
    ("int64", "bytes", BYTES, "large_binary"),
])
def test_chunk_to_arrow_is_zero_copy(offset_type, data_type, values, typ):
    arr = np.array(values, dtype=T) if data_type == "string" else coerce_vlen(values, OBJ)
    raw = bytes(encode_offsets_chunk(arr, offset_type))
    out = chunk_to_arrow(raw, len(values), data_type=data_type, offset_type=offset_type)
    assert str(out.type) == typ and out.to_pylist() == values
    _, offsets, data = out.buffers()
    assert _inside(data, raw) and _inside(offsets, raw)
    width = 4 if offset_type == "int32" else 8
    assert offsets.address == pa.py_buffer(raw).address
    assert data.address == pa.py_buffer(raw).address + round_up_to_multiple((len(values) + 1) * width)


def _recording_store():
    class Recording(MemoryStore):
        def get_many(self, keys):
            got = super().get_many(keys)
            self.seen.extend(g for g in got if g is not None)
            return got

    store = Recording()
    store.seen = []
    return store


@pytest.mark.parametrize("kw", [dict(chunks=(4,)), dict(chunks=(2,), shards=(6,)),
                                dict(chunks=(3,), serializer=VlenOffsetsCodec("int64"))])
def test_array_to_arrow_is_zero_copy(kw):
    store = _recording_store()
    kw = {"serializer": VlenOffsetsCodec(), **kw}
    a = zarrdask.create_array(store, shape=(11,), dtype=str, compressors=None, **kw)
    values = [f"v{i}é" * i for i in range(11)]
    a[:] = values
    a[5] = ""  # stays; fill-valued inner chunks / chunks elsewhere are left out
    values[5] = ""
    store.seen.clear()
    out = a.to_arrow()
    assert out.to_pylist() == values
    assert out.type == (pa.large_string() if kw["serializer"].offset_type == "int64" else pa.string())
    stored = [p for p in out.chunks if len(p)]
    for piece in stored:
        assert any(_inside(piece.buffers()[2], owner) for owner in store.seen)
    assert a.to_arrow(slice(3, 9)).to_pylist() == values[3:9]
    assert a.to_arrow(slice(4, 4)).to_pylist() == []


def test_to_arrow_fills_missing_chunks_and_copies_other_layouts():
    a = zarrdask.create_array(MemoryStore(), shape=(7,), chunks=(3,), dtype=str, fill_value="-",
                              serializer=VlenOffsetsCodec())
    a[4] = "x"
    assert a.to_arrow().to_pylist() == ["-", "-", "-", "-", "x", "-", "-"]
    b = zarrdask.create_array(MemoryStore(), shape=(3, 2), chunks=(2, 2), dtype=bytes)  # vlen-bytes: a copy
    b[...] = [[b"a", b"b"], [b"", b"d"], [b"e", b"\x00"]]
    out = b.to_arrow()
    assert out.type == pa.binary() and out.to_pylist() == [b"a", b"b", b"", b"d", b"e", b"\x00"]
    c = zarrdask.create_array(MemoryStore(), shape=(3, 2), chunks=(2, 1), dtype=str, serializer=VlenOffsetsCodec())
    c[...] = [["a", "b"], ["c", "d"], ["e", "f"]]
    assert c.to_arrow().to_pylist() == list("abcdef")  # chunks across rows: decoded and converted
    assert c.to_arrow((slice(1, 3), slice(1, 2))).to_pylist() == ["d", "f"]
    with pytest.raises(TypeError, match="strings or bytes"):
        zarrdask.create_array(MemoryStore(), shape=(2,), dtype="i4").to_arrow()
    with pytest.raises(SelectionError, match="step 1"):
        a.to_arrow(slice(0, 6, 2))


def test_to_arrow_names_a_corrupt_chunk():
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(3,), chunks=(3,), dtype=str, compressors=None,
                              serializer=VlenOffsetsCodec())
    store.set("c/0", _bad_offsets([0, 4, 2, 6]))
    with pytest.raises(CorruptChunkError, match="'c/0'.*offsets decrease"):
        a.to_arrow()
    with pytest.raises(CorruptChunkError, match="'c/0'.*offsets decrease"):
        a[...]


# -- hypothesis round trips -----------------------------------------------------------------
text_lists = st.lists(st.text(max_size=40), min_size=1, max_size=30)
bytes_lists = st.lists(st.binary(max_size=40), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=text_lists, offset_type=st.sampled_from(["int32", "int64"]))
def test_hypothesis_strings_round_trip(values, offset_type):
    arr = np.array(values, dtype=T)
    raw = bytes(VlenOffsetsCodec(offset_type).encode(arr, spec(arr.shape)))
    assert VlenOffsetsCodec(offset_type).decode(raw, spec(arr.shape)).tolist() == values
    assert zep7_decode(memoryview(raw), arr.shape, True, 4 if offset_type == "int32" else 8) == values
    out = chunk_to_arrow(raw, len(values), offset_type=offset_type)
    assert out.to_pylist() == values and _inside(out.buffers()[2], raw)
    raw = VlenUtf8Codec().encode(arr, spec(arr.shape))
    assert VlenUtf8Codec().decode(raw, spec(arr.shape)).tolist() == values


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=bytes_lists, offset_type=st.sampled_from(["int32", "int64"]))
def test_hypothesis_bytes_round_trip(values, offset_type):
    arr = coerce_vlen(values, OBJ)
    s = spec(arr.shape, OBJ, b"")
    raw = bytes(VlenOffsetsCodec(offset_type).encode(arr, s))
    assert VlenOffsetsCodec(offset_type).decode(raw, s).tolist() == values
    assert chunk_to_arrow(raw, len(values), data_type="bytes", offset_type=offset_type).to_pylist() == values
    assert VlenBytesCodec().decode(VlenBytesCodec().encode(arr, s), s).tolist() == values


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.text(max_size=12), min_size=0, max_size=25),
       chunk=st.integers(1, 6), shard_factor=st.sampled_from([None, 1, 2]),
       serializer=st.sampled_from(["auto", "offsets"]), fmt=st.sampled_from([2, 3]),
       data=st.data())
def test_hypothesis_arrays_round_trip_with_partial_writes(values, chunk, shard_factor, serializer, fmt, data):
    if fmt == 2 and (shard_factor or serializer != "auto"):
        return
    kw = {}
    if shard_factor:
        kw["shards"] = (chunk * shard_factor,)
    if serializer == "offsets":
        kw["serializer"] = VlenOffsetsCodec()
    a = zarrdask.create_array(MemoryStore(), shape=(len(values),), chunks=(chunk,), dtype=str,
                              zarr_format=fmt, **kw)
    expected = np.array([""] * len(values), dtype=T)
    a[...] = values
    expected[...] = values
    if values:
        lo = data.draw(st.integers(0, len(values) - 1))
        hi = data.draw(st.integers(lo, len(values)))
        new = data.draw(st.lists(st.text(max_size=8), min_size=hi - lo, max_size=hi - lo))
        a[lo:hi] = new
        expected[lo:hi] = new
    assert a[...].tolist() == expected.tolist()
    reopened = zarrdask.open_array(a.store, mode="r")
    assert reopened.dtype == T and reopened[...].tolist() == expected.tolist()


# -- arrays -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [str, "str", "string", "T", T, np.dtype("U"), "U"])
def test_create_array_string_dtypes(dtype):
    a = zarrdask.create_array(MemoryStore(), shape=(2,), dtype=dtype)
    assert a.dtype == T and a.fill_value == "" and a.serializer == VlenUtf8Codec()


@pytest.mark.parametrize("dtype", [bytes, "bytes", "S"])
def test_create_array_bytes_dtypes(dtype):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(2,), dtype=dtype)
    assert a.dtype == OBJ and a.fill_value == b"" and a.serializer == VlenBytesCodec()
    assert json.loads(store.get("zarr.json"))["data_type"] == "bytes"


def test_create_array_object_dtype_needs_the_data_to_say():
    a = zarrdask.create_array(MemoryStore(), shape=None, dtype=object, data=np.array(["a", "b"], dtype=object))
    assert a.dtype == T and a[...].tolist() == ["a", "b"]
    b = zarrdask.create_array(MemoryStore(), shape=None, dtype=None, data=np.array([b"a", b""], dtype=object))
    assert b.dtype == OBJ and b[...].tolist() == [b"a", b""]
    with pytest.raises(UnknownDataTypeError, match="dtype=str"):
        zarrdask.create_array(MemoryStore(), shape=(2,), dtype=object)
    with pytest.raises(UnknownDataTypeError, match="neither"):
        zarrdask.create_array(MemoryStore(), shape=None, dtype=object, data=np.array(["a", 1], dtype=object))
    fixed = zarrdask.create_array(MemoryStore(), shape=(2,), dtype="U5")
    assert fixed.dtype == np.dtype("<U5")


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype, fill, values", [
    (str, "", ["", "é", "x" * 5000]), (str, "N/A", ["a", "", "中"]),
    (bytes, b"", [b"", b"\xff", b"x" * 5000]), (bytes, b"\x00-", [b"a", b"", b"b"]),
])
def test_missing_chunks_read_the_fill_value(fmt, dtype, fill, values):
    a = zarrdask.create_array(MemoryStore(), shape=(3, 4), chunks=(2, 2), dtype=dtype, fill_value=fill,
                              zarr_format=fmt)
    assert a[...].tolist() == [[fill] * 4] * 3
    a[2, 1:] = values
    expected = [[fill] * 4, [fill] * 4, [fill] + values]
    assert a[...].tolist() == expected
    assert a.oindex[[2, 0], [3, 0]].tolist() == [[values[2], fill], [fill, fill]]
    assert a.nchunks_initialized == 1 + (values[0] != fill)  # a chunk all fill value is not stored
    a[2, 1:] = fill  # back to the fill value: chunks deleted
    assert a.nchunks_initialized == 0


@pytest.mark.parametrize("fmt, kw", [(2, {}), (2, {"order": "F"}), (3, {}), (3, {"shards": (4, 4)}),
                                     (3, {"shards": (4, 4), "serializer": VlenOffsetsCodec()})])
def test_partial_reads_and_writes(fmt, kw):
    rng = np.random.default_rng(1)
    words = np.array(["", "a", "bé", "中文字", "😀", "x" * 300], dtype=object)
    data = words[rng.integers(0, len(words), (7, 9))]
    a = zarrdask.create_array(MemoryStore(), shape=data.shape, chunks=(2, 2), dtype=str, zarr_format=fmt, **kw)
    a[...] = data
    expected = data.astype(T)
    np.testing.assert_array_equal(a[...], expected)
    np.testing.assert_array_equal(a[1:6:2, 3:], expected[1:6:2, 3:])
    np.testing.assert_array_equal(a.oindex[[6, 0, 3], [8, 1]], expected[np.ix_([6, 0, 3], [8, 1])])
    assert a[5, 7] == expected[5, 7]
    a[2:5, 1:4] = np.array([["p", "q", "r"]] * 3, dtype=T)
    expected[2:5, 1:4] = "p", "q", "r"
    a.oindex[[0, 6], [0, 8]] = "corner"
    expected[np.ix_([0, 6], [0, 8])] = "corner"
    np.testing.assert_array_equal(a[...], expected)
    np.testing.assert_array_equal(zarrdask.open_array(a.store, mode="r")[...], expected)


def test_empty_arrays():
    for fmt in (2, 3):
        a = zarrdask.create_array(MemoryStore(), shape=(0,), chunks=(3,), dtype=str, zarr_format=fmt)
        assert a[...].shape == (0,) and a.dtype == T
        a[...] = np.array([], dtype=T)
        assert a.to_arrow().to_pylist() == []


def test_zero_d_string_array():
    a = zarrdask.create_array(MemoryStore(), shape=(), dtype=str)
    a[...] = "só"
    assert a[...] == "só" and a.to_arrow().to_pylist() == ["só"]


def test_writes_refuse_values_of_the_wrong_type():
    s = zarrdask.create_array(MemoryStore(), shape=(3,), chunks=(2,), dtype=str)
    for bad in ([1, 2, 3], np.array(["a", None, "c"], dtype=object), np.arange(3)):
        with pytest.raises(SelectionError, match="str"):
            s[...] = bad
    b = zarrdask.create_array(MemoryStore(), shape=(3,), chunks=(2,), dtype=bytes)
    for bad in (["a", "b", "c"], [b"a", 1, b"c"]):
        with pytest.raises(SelectionError, match="bytes"):
            b[...] = bad
    assert s.nchunks_initialized == 0 and b.nchunks_initialized == 0
    b[...] = [bytearray(b"a"), b"b", np.bytes_(b"c")]
    assert b[...].tolist() == [b"a", b"b", b"c"]


@pytest.mark.parametrize("fmt", [2, 3])
def test_corrupt_chunks_through_an_array_name_the_key(fmt):
    store = MemoryStore()
    a = zarrdask.create_array(store, shape=(4,), chunks=(2,), dtype=str, compressors=None, zarr_format=fmt)
    a[...] = ["a", "b", "c", "d"]
    key = "1" if fmt == 2 else "c/1"
    store.set(key, numcodecs_format([b"ok", b"\xc3"]))
    with pytest.raises(CorruptChunkError, match=rf"'{key}'.*UTF-8"):
        a[...]
    store.set(key, numcodecs_format([b"x"] * 3))
    with pytest.raises(CorruptChunkError, match=rf"'{key}'.*3 elements, expected 2"):
        a[...]
    with pytest.raises(CorruptChunkError, match=rf"'{key}'"):
        a[3] = "z"  # read-modify-write of a corrupt chunk: nothing written
    assert a[:2].tolist() == ["a", "b"]


# -- Zarr v2 metadata ---------------------------------------------------------------------------
def _v2_doc(fill, filters=({"id": "vlen-utf8"},)):
    return {"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "|O", "fill_value": fill, "order": "C",
            "filters": list(filters) if filters is not None else None, "compressor": None}


@pytest.mark.parametrize("fill, filters, expected", [
    ("", [{"id": "vlen-utf8"}], ""), (0, [{"id": "vlen-utf8"}], ""), (None, [{"id": "vlen-utf8"}], ""),
    ("N/A", [{"id": "vlen-utf8"}], "N/A"),
    ("", [{"id": "vlen-bytes"}], b""), (0, [{"id": "vlen-bytes"}], b""), ("AQID", [{"id": "vlen-bytes"}], b"\1\2\3"),
])
def test_v2_fill_values_including_zarr_python_2_legacy_zero(fill, filters, expected):
    store = MemoryStore()
    store.set(".zarray", json.dumps(_v2_doc(fill, filters)).encode())
    a = zarrdask.open_array(store, mode="r")
    assert a[...].tolist() == [expected] * 3
    assert a.dtype == (T if filters[0]["id"] == "vlen-utf8" else OBJ)


@pytest.mark.parametrize("filters", [None, [{"id": "zlib"}]])
def test_v2_object_dtype_needs_an_object_codec(filters):
    store = MemoryStore()
    store.set(".zarray", json.dumps(_v2_doc("", filters)).encode())
    with pytest.raises(CodecError, match=r"\.zarray.*object codec"):
        zarrdask.open_array(store, mode="r")


def test_v2_other_object_codecs_still_work():
    store = MemoryStore()
    store.set(".zarray", json.dumps(_v2_doc(None, [{"id": "json2"}])).encode())
    a = zarrdask.open_array(store)
    assert a[...].tolist() == [None] * 3  # null fill value: None
    a[...] = np.array([1, "two", [3]], dtype=object)
    assert a[...].tolist() == [1, "two", [3]]


def test_v2_fixed_width_strings_round_trip():
    for dtype, values in (("<U4", ["", "é", "abcd"]), ("|S4", [b"", b"\xff", b"abcd"])):
        a = zarrdask.create_array(MemoryStore(), shape=(3,), chunks=(2,), dtype=dtype, zarr_format=2)
        a[...] = values
        assert a.dtype == np.dtype(dtype) and a[...].tolist() == values


@pytest.mark.parametrize("fmt", [2, 3])
def test_resize_and_append(fmt):
    a = zarrdask.create_array(MemoryStore(), shape=(5,), chunks=(2,), dtype=str, zarr_format=fmt, fill_value="·")
    a[...] = ["a", "b", "c", "d", "e"]
    a.resize(3)
    a.resize(6)
    assert a[...].tolist() == ["a", "b", "c", "·", "·", "·"]
    assert a.append(np.array(["x", "\x00"], dtype=T)) == (8,)
    assert a[...].tolist() == ["a", "b", "c", "·", "·", "·", "x", "\x00"]


def test_to_arrow_sharded_compressed_rows_of_bytes():
    a = zarrdask.create_array(MemoryStore(), shape=(10, 3), chunks=(2, 3), shards=(4, 3), dtype=bytes,
                              serializer=VlenOffsetsCodec("int64"))  # zstd inside the shard
    a[3:7] = np.array([[b"a", b"", b"\xff"]] * 4, dtype=object)
    out = a.to_arrow(slice(2, 9))
    assert out.type == pa.large_binary()
    assert out.to_pylist() == [b""] * 3 + [b"a", b"", b"\xff"] * 4 + [b""] * 6
