"""The ``crc32c`` codec (zarr-specs v3 codecs/crc32c)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.crc32c_codec import Crc32cCodec, crc32c_value
from zarrdask.errors import ChecksumError, CodecError, CorruptChunkError

SPEC = ChunkSpec((9,), np.dtype("uint8"), 0)


def test_known_value_appended_little_endian():
    # RFC 3720 / iSCSI check value of "123456789" is 0xE3069283
    assert crc32c_value(b"123456789") == 0xE3069283
    assert Crc32cCodec().encode(b"123456789", SPEC) == b"123456789" + bytes.fromhex("839206e3")


def test_round_trip_and_zero_copy():
    codec = Crc32cCodec()
    data = bytes(range(200))
    encoded = codec.encode(memoryview(data), SPEC)
    assert len(encoded) == codec.encoded_size(len(data)) == len(data) + 4
    decoded = codec.decode(encoded, SPEC, "k")
    assert bytes(decoded) == data
    assert isinstance(decoded, memoryview) and decoded.obj is encoded  # a view, not a copy


def test_empty_payload():
    codec = Crc32cCodec()
    assert codec.encode(b"", SPEC) == b"\0\0\0\0"
    assert bytes(codec.decode(b"\0\0\0\0", SPEC)) == b""


def test_mismatch_names_key_and_both_values():
    encoded = bytearray(Crc32cCodec().encode(b"123456789", SPEC))
    encoded[0] ^= 1
    with pytest.raises(ChecksumError) as e:
        Crc32cCodec().decode(bytes(encoded), SPEC, "group/arr/c/0/1")
    msg = str(e.value)
    assert "group/arr/c/0/1" in msg and "0xe3069283" in msg and "stored" in msg and "computed" in msg
    assert isinstance(e.value, CorruptChunkError)


def test_too_short():
    with pytest.raises(CorruptChunkError, match="k.*3"):
        Crc32cCodec().decode(b"abc", SPEC, "k")


def test_decode_into_out():
    out = bytearray(9)
    result = Crc32cCodec().decode(Crc32cCodec().encode(b"123456789", SPEC), SPEC, "k", out=memoryview(out))
    assert bytes(out) == b"123456789" and bytes(result) == b"123456789"
    with pytest.raises(CorruptChunkError, match="expected 10"):
        Crc32cCodec().decode(Crc32cCodec().encode(b"123456789", SPEC), SPEC, "k", out=memoryview(bytearray(10)))


def test_json():
    codec = Crc32cCodec.from_config({})
    assert codec.to_json() == {"name": "crc32c"}
    assert Crc32cCodec.from_config(None) == codec
    assert pickle.loads(pickle.dumps(codec)) == codec
    with pytest.raises(CodecError):
        Crc32cCodec.from_config({"location": "end"})
