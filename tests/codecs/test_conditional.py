"""The ``conditional`` codec (zarr-extensions codecs/conditional)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.chain import CodecChain
from zarrdask.codecs.conditional import ConditionalCodec
from zarrdask.codecs.crc32c_codec import Crc32cCodec, crc32c_value
from zarrdask.codecs.registry import codec_from_json
from zarrdask.codecs.zstd_codec import ZstdCodec
from zarrdask.errors import ChecksumError, CodecError, CorruptChunkError, UnknownCodecError

SPEC = ChunkSpec((1000,), np.dtype("float32"), 0)
SMOOTH = np.linspace(0, 1, 1000, dtype="float32").tobytes()  # compresses
NOISE = np.random.default_rng(0).bytes(4000)  # zstd inflates it

# the README's configuration (example 1), with numcodecs' shuffle under its zarr-python name
README_1 = {"name": "conditional", "configuration": {"codecs": [
    {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
    {"name": "zstd", "configuration": {"level": 5, "checksum": False}}]}}


def _shuffle_zstd(**kwargs) -> ConditionalCodec:
    return ConditionalCodec(README_1["configuration"]["codecs"], **kwargs)


# -- configuration ---------------------------------------------------------------
@pytest.mark.parametrize("doc", [
    README_1,
    {"name": "conditional", "configuration": {"codecs": [{"name": "zstd", "configuration": {"level": 5, "checksum": False}}],
                                              "header_bits": 16}},
    {"name": "conditional", "configuration": {"codecs": []}},
    {"name": "conditional", "configuration": {"codecs": [{"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"},
                                                         {"name": "numcodecs.zlib", "configuration": {"level": 1}}]}},
])
def test_json_round_trip(doc):
    codec = codec_from_json(json.loads(json.dumps(doc)))
    assert isinstance(codec, ConditionalCodec)
    assert codec.to_json() == doc
    assert codec_from_json(codec.to_json()) == codec


def test_header_bits_default_and_given():
    assert ConditionalCodec([]).header_bits == 0
    assert ConditionalCodec(["crc32c"]).header_bits == 8
    assert ConditionalCodec(["crc32c"] * 8).header_bits == 8
    assert ConditionalCodec(["crc32c"] * 9).header_bits == 16
    assert ConditionalCodec(["crc32c"], header_bits=24).header_bytes == 3
    assert "header_bits" not in ConditionalCodec(["crc32c"]).get_config()  # omitted stays omitted
    assert ConditionalCodec(["crc32c"], header_bits=8).get_config()["header_bits"] == 8


def test_readme_shuffle_name_is_not_registered():
    doc = {"name": "conditional", "configuration": {"codecs": [{"name": "shuffle", "configuration": {"element_size": 4}}]}}
    with pytest.raises(UnknownCodecError, match="shuffle"):
        codec_from_json(doc)


@pytest.mark.parametrize("configuration, match", [
    ({}, "'codecs' is required"),
    ({"codecs": [], "extra": 1}, "unknown configuration field"),
    ({"codecs": {"name": "zstd"}}, "must be a list"),
    ({"codecs": [{"name": "bytes"}]}, r"codecs\[0\]' is 'bytes'.*array→bytes.*expected bytes→bytes"),
    ({"codecs": ["crc32c", {"name": "transpose", "configuration": {"order": [0]}}]}, r"codecs\[1\].*array→array"),
    ({"codecs": ["crc32c"], "header_bits": 12}, "multiple of 8, found 12"),
    ({"codecs": ["crc32c"], "header_bits": -8}, "non-negative"),
    ({"codecs": ["crc32c"] * 9, "header_bits": 8}, "at least the number of codecs"),
    ({"codecs": ["crc32c"], "header_bits": True}, "must be an integer"),
    ({"codecs": ["crc32c"], "header_bits": 8.0}, "must be an integer"),
])
def test_bad_configuration(configuration, match):
    with pytest.raises(CodecError, match=match) as e:
        codec_from_json({"name": "conditional", "configuration": configuration})
    assert "conditional" in str(e.value)


def test_bad_decision_arguments():
    with pytest.raises(ValueError, match="unknown decision"):
        ConditionalCodec(["crc32c"], decision="sometimes")
    with pytest.raises(ValueError, match="codecs that do not exist"):
        ConditionalCodec(["crc32c"], decision=0b10)
    with pytest.raises(TypeError):
        ConditionalCodec(["crc32c"], decision=1.5)


# -- the stored bytes -----------------------------------------------------------
def test_byte_exact_header_and_payload():
    data = b"123456789"
    crc = bytes.fromhex("839206e3")  # RFC 3720 check value of "123456789", little-endian
    codec = ConditionalCodec(["crc32c"], header_bits=16, decision="always_apply")
    assert codec.encode(data, SPEC) == b"\x01\x00" + data + crc
    assert ConditionalCodec(["crc32c"], header_bits=16, decision="never_apply").encode(data, SPEC) == b"\x00\x00" + data


def test_little_endian_bit_order_across_bytes():
    # nine codecs: bit 8 is bit 0 of the second header byte
    data = b"123456789"
    codec = ConditionalCodec(["crc32c"] * 9, decision=0b1_0000_0001)
    once = data + crc32c_value(data).to_bytes(4, "little")
    twice = once + crc32c_value(once).to_bytes(4, "little")
    encoded = codec.encode(data, SPEC)
    assert encoded == b"\x01\x01" + twice
    assert codec.read_mask(encoded) == 0x101
    assert bytes(codec.decode(encoded, SPEC, "k", size=9)) == data


def test_inflating_chunk_stored_raw_with_bit_clear():
    codec = ConditionalCodec([ZstdCodec(level=5)])
    encoded = codec.encode(NOISE, SPEC)
    assert encoded == b"\x00" + NOISE  # zstd would make it larger: skipped
    assert len(ZstdCodec(level=5).encode(NOISE, SPEC)) > len(NOISE)
    smooth = codec.encode(SMOOTH, SPEC)
    assert smooth[0] == 1 and len(smooth) < len(SMOOTH)
    for enc, raw in ((encoded, NOISE), (smooth, SMOOTH)):
        assert bytes(codec.decode(enc, SPEC, "k", size=4000)) == raw
        assert bytes(codec.decode(enc, SPEC, "k")) == raw  # size unknown: bounded by max_chunk_bytes


def test_default_decision_applies_shuffle_and_compress_if_smaller_does_not():
    assert _shuffle_zstd().encode(SMOOTH, SPEC)[0] == 0b11
    assert _shuffle_zstd(decision="compress_if_smaller").encode(SMOOTH, SPEC)[0] == 0b10  # same-size shuffle skipped
    assert _shuffle_zstd().encode(NOISE, SPEC)[0] == 0b01  # shuffle kept, zstd skipped
    assert _shuffle_zstd(decision="always_apply").encode(NOISE, SPEC)[0] == 0b11
    assert _shuffle_zstd(decision="never_apply").encode(SMOOTH, SPEC) == b"\x00" + SMOOTH


def decide_based_on_size(chunk_index, codec, unencoded_chunk, trial_encoded_chunk):
    """README example 1."""
    if codec.name == "numcodecs.shuffle":
        return True
    return len(trial_encoded_chunk) < len(unencoded_chunk)


def disable_all_codecs(chunk_index, codec, unencoded_chunk):
    """README example 2, phase 1."""
    return False


def test_readme_decision_functions():
    codec = _shuffle_zstd(decision=decide_based_on_size, trial_encode=True)
    smooth = codec.encode(SMOOTH, SPEC)
    assert smooth[0] == 0b11 and bytes(codec.decode(smooth, SPEC, "k", size=4000)) == SMOOTH
    assert codec.encode(NOISE, SPEC)[0] == 0b01
    fast = _shuffle_zstd(decision=disable_all_codecs)
    assert fast.encode(SMOOTH, SPEC) == b"\x00" + SMOOTH
    # example 2, phase 2: the same metadata, a new decision, chunks rewritten
    assert fast.with_decision(decide_based_on_size, trial_encode=True).encode(SMOOTH, SPEC) == smooth
    assert fast == codec  # the decision is not part of the metadata


def test_readme_codec_index_decision_and_arguments():
    calls = []
    plan = 0b10

    def apply_precomputed_mask(chunk_index, codec_index, codec, unencoded_chunk):  # README example 3
        calls.append((chunk_index, codec_index, codec.name, len(unencoded_chunk)))
        return bool(plan >> codec_index & 1)

    codec = _shuffle_zstd(decision=apply_precomputed_mask)
    encoded = codec.encode(SMOOTH, SPEC)
    assert encoded[0] == 0b10 and bytes(codec.decode(encoded, SPEC, "k", size=4000)) == SMOOTH
    assert calls == [(None, 0, "numcodecs.shuffle", 4000), (None, 1, "zstd", 4000)]


def test_trial_is_reused_not_encoded_twice():
    seen = []

    class Counting(Crc32cCodec):
        def encode(self, data, spec):
            seen.append(1)
            return super().encode(data, spec)

    ConditionalCodec([Counting()], decision="not_larger").encode(b"abc", SPEC)  # +4 bytes: skipped
    ConditionalCodec([Counting()], decision="always_apply").encode(b"abc", SPEC)
    ConditionalCodec([Counting()], decision=lambda i, c, d, t: True, trial_encode=True).encode(b"abc", SPEC)
    assert len(seen) == 3


# -- decoding hostile chunks ----------------------------------------------------------
@pytest.mark.parametrize("stored, match", [
    (b"", "holds 0 bytes, shorter than its 2-byte header"),
    (b"\x01", "holds 1 bytes, shorter than its 2-byte header"),
    (b"\x04\x00abc", r"header bit\(s\) \[2\] set.*only 2 codecs"),
    (b"\x00\x80abc", r"header bit\(s\) \[15\] set.*reserved"),
])
def test_hostile_headers(stored, match):
    codec = ConditionalCodec(["crc32c", "zstd"], header_bits=16)
    with pytest.raises(CorruptChunkError, match=match) as e:
        codec.decode(stored, SPEC, "arr/c/3")
    assert "arr/c/3" in str(e.value)


def test_hostile_payloads():
    codec = _shuffle_zstd()
    good = codec.encode(SMOOTH, SPEC)
    with pytest.raises(CorruptChunkError, match="c/1"):
        codec.decode(good[:-20], SPEC, "c/1", size=4000)  # truncated zstd frame
    with pytest.raises(CorruptChunkError, match="c/1"):
        codec.decode(good, SPEC, "c/1", size=8000)  # decodes to the wrong size
    zstd_only = ConditionalCodec(["zstd"])
    raw = zstd_only.encode(NOISE, SPEC)
    assert raw[0] == 0
    with pytest.raises(CorruptChunkError, match="c/1.*3999.*expected 4000"):
        zstd_only.decode(raw[:-1], SPEC, "c/1", size=4000)
    with pytest.raises(CorruptChunkError, match="c/1"):
        codec.decode(codec.encode(NOISE, SPEC)[:-1], SPEC, "c/1", size=4000)  # shuffled, not a whole element
    checked = ConditionalCodec(["crc32c"], decision="always_apply")
    bad = bytearray(checked.encode(b"payload", SPEC))
    bad[2] ^= 1
    with pytest.raises(ChecksumError, match="c/1"):
        checked.decode(bytes(bad), SPEC, "c/1")


def test_decode_into_out():
    codec = _shuffle_zstd()
    for raw in (SMOOTH, NOISE):
        out = memoryview(bytearray(4000))
        assert codec.decode(codec.encode(raw, SPEC), SPEC, "k", out=out) is out
        assert bytes(out) == raw


def test_pickle_keeps_configuration_and_decision():
    codec = _shuffle_zstd(decision=decide_based_on_size, trial_encode=True)
    back = pickle.loads(pickle.dumps(codec))
    assert back == codec and back.decision is decide_based_on_size and back.trial_encode
    assert back.encode(SMOOTH, SPEC) == codec.encode(SMOOTH, SPEC)


def test_complete_keeps_decision_and_fills_blosc_typesize():
    codec = ConditionalCodec([{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}}], decision="never_apply")
    done = codec.complete(SPEC)
    assert done.to_json()["configuration"]["codecs"][0]["configuration"]["typesize"] == 4
    assert done.decision == "never_apply"


def test_in_a_chain_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    data = np.linspace(-2, 2, 256).astype(ml_dtypes.bfloat16)
    spec = ChunkSpec(data.shape, data.dtype, 0)
    chain = CodecChain.from_codecs([codec_from_json({"name": "bytes", "configuration": {"endian": "little"}}),
                                    _shuffle_zstd()], spec=spec)
    back = chain.decode(chain.encode(data, spec), spec, "k")
    assert back.dtype == data.dtype and back.tobytes() == data.tobytes()


# -- arrays -------------------------------------------------------------------------
def _array_data() -> np.ndarray:
    data = np.random.default_rng(1).integers(0, 2**32, (20, 30), dtype="uint32")
    data[:10] = 15  # the first row of chunks compresses, the second does not
    return data


def test_array_round_trip_stores_raw_chunks_raw(tmp_path):
    data = _array_data()
    arr = zarrdask.create_array(tmp_path / "a.zarr", shape=data.shape, dtype=data.dtype, chunks=(10, 30),
                                compressors=[{"name": "conditional", "configuration": {"codecs": [{"name": "zstd"}]}}])
    arr[...] = data
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "a.zarr", mode="r")[...], data)
    doc = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert doc["codecs"][1] == {"name": "conditional", "configuration": {
        "codecs": [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}]}}
    compressed = (tmp_path / "a.zarr" / "c" / "0" / "0").read_bytes()
    raw = (tmp_path / "a.zarr" / "c" / "1" / "0").read_bytes()
    assert compressed[0] == 1 and len(compressed) < 100
    assert raw == b"\x00" + data[10:].tobytes()  # little-endian bytes, stored as they are


def test_shard_inner_chain_round_trip(tmp_path):
    data = _array_data()
    arr = zarrdask.create_array(tmp_path / "s.zarr", shape=data.shape, dtype=data.dtype, chunks=(5, 10), shards=(10, 30),
                                compressors=[_shuffle_zstd()])
    arr[...] = data
    back = zarrdask.open_array(tmp_path / "s.zarr", mode="r")
    np.testing.assert_array_equal(back[...], data)
    np.testing.assert_array_equal(back[3:17, 4:9], data[3:17, 4:9])
    inner = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())["codecs"][0]["configuration"]["codecs"]
    assert inner[1]["name"] == "conditional"


def test_rechunk_round_trip(tmp_path):
    data = _array_data()
    src = zarrdask.create_array(tmp_path / "src.zarr", shape=data.shape, dtype=data.dtype, chunks=(10, 30),
                                compressors=[_shuffle_zstd()])
    src[...] = data
    zarrdask.rechunk(src, (20, 7), str(tmp_path / "dst.zarr"), max_mem="16MB").execute()
    dst = zarrdask.open_array(tmp_path / "dst.zarr", mode="r")
    assert dst.chunks == (20, 7)
    np.testing.assert_array_equal(dst[...], data)
    assert json.loads((tmp_path / "dst.zarr" / "zarr.json").read_text())["codecs"][1]["name"] == "conditional"


# -- a decision at array level: the codec objects an array runs -------------------------
def test_create_array_keeps_the_decision_of_codec_objects(tmp_path):
    data = _array_data()
    arr = zarrdask.create_array(tmp_path / "d.zarr", shape=data.shape, dtype=data.dtype, chunks=(10, 30),
                                compressors=[_shuffle_zstd(decision=disable_all_codecs)])
    arr[...] = data
    assert (tmp_path / "d.zarr" / "c" / "0" / "0").read_bytes() == b"\x00" + data[:10].tobytes()  # fast ingest
    # README example 2, phase 2: the same array, rewritten with the optimising decision
    reopened = zarrdask.open_array(tmp_path / "d.zarr", mode="r+")
    optimising = reopened.with_codecs([reopened.serializer, _shuffle_zstd(decision=decide_based_on_size, trial_encode=True)])
    optimising[...] = optimising[...]
    assert (tmp_path / "d.zarr" / "c" / "0" / "0").read_bytes()[0] == 0b11
    assert (tmp_path / "d.zarr" / "c" / "1" / "0").read_bytes()[0] == 0b01  # noise: shuffled, not compressed
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "d.zarr", mode="r")[...], data)
    back = pickle.loads(pickle.dumps(optimising))  # dask ships the array with its codec objects
    assert back.layout.codec.bytes_bytes[0].decision is decide_based_on_size


def test_create_array_keeps_the_decision_inside_shards(tmp_path):
    data = _array_data()
    arr = zarrdask.create_array(tmp_path / "s.zarr", shape=data.shape, dtype=data.dtype, chunks=(10, 30), shards=(20, 30),
                                compressors=[_shuffle_zstd(decision="never_apply")])
    arr[...] = data
    shard = (tmp_path / "s.zarr" / "c" / "0" / "0").read_bytes()
    assert shard[:1 + 1200] == b"\x00" + data[:10].tobytes()  # the first inner chunk, stored raw
    np.testing.assert_array_equal(zarrdask.open_array(tmp_path / "s.zarr", mode="r")[...], data)


def test_with_codecs_must_match_the_metadata(tmp_path):
    arr = zarrdask.create_array(tmp_path / "m.zarr", shape=(4,), dtype="uint8", chunks=(2,), compressors=[_shuffle_zstd()])
    from zarrdask.errors import MetadataError

    with pytest.raises(MetadataError, match="are not the array's codecs"):
        arr.with_codecs([arr.serializer, ConditionalCodec(["zstd"])])
