"""Small selections of zstd chunks decode only the blocks up to the last byte
they need (a zstd frame decodes from its start; RFC 8878 section 3.1.1.2), in
plain chunks, in shards' inner chunks and in v2 arrays; a frame with a
checksum, or a corrupt one, is decoded whole, which verifies and reports it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs import zstd_codec
from zarrdask.errors import ChecksumError, CorruptChunkError


@pytest.fixture
def prefixes(monkeypatch):
    """(stop, size, done) of every prefix decode asked for (the streaming
    decoder looked for already: it is not, the first time it is asked for)."""
    zstd_codec._streaming_decoder()
    zstd_codec._streaming_decoder()
    seen = []
    real = zstd_codec.decode_zstd_prefix

    def spy(data, stop, size):
        got = real(data, stop, size)
        seen.append((stop, size, got is not None))
        return got

    monkeypatch.setattr(zstd_codec, "decode_zstd_prefix", spy)
    return seen


def _data(shape, dtype="<f4", seed=3):
    rng = np.random.default_rng(seed)
    return (np.round(rng.normal(280, 5, shape) * 64) / 64).astype(dtype)


def _zstd(checksum=False):
    return [{"name": "zstd", "configuration": {"level": 1, "checksum": checksum}}]


SELECTIONS = [(slice(3, 13), slice(200, 210)), (0, slice(0, 5)), (slice(40, 50), slice(500, 512)),
              (slice(200, 210), slice(7, 17)), (slice(3, 100, 7), slice(10, 20, 3))]


@pytest.mark.parametrize("dtype", ["<f4", ">f8", "u1", "<i2"])
def test_windows_of_plain_chunks(tmp_path, prefixes, dtype):
    data = _data((512, 1024), dtype)
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=data.shape, dtype=data.dtype, chunks=(256, 512),
                              compressors=_zstd(), fill_value=0)
    a[...] = data
    for sel in SELECTIONS:
        np.testing.assert_array_equal(a[sel], data[sel])
    # the windows near a chunk's start stop before its last block: decoded in part
    if np.dtype(dtype).itemsize * 256 * 512 >= 2 * zstd_codec._BLOCK_MAX:
        assert any(done and stop < size for stop, size, done in prefixes)
    assert all(stop <= size for stop, size, _ in prefixes)


def test_windows_of_inner_chunks_of_shards(tmp_path, prefixes):
    data = _data((1024, 1024))
    a = zarrdask.create_array(tmp_path / "s.zarr", shape=data.shape, dtype=data.dtype, chunks=(256, 256),
                              shards=(512, 512), compressors=_zstd(), fill_value=0)
    a[...] = data
    for sel in [*SELECTIONS, (slice(500, 520), slice(250, 262))]:
        np.testing.assert_array_equal(a[sel], data[sel])
    assert any(done for _, _, done in prefixes)


def test_windows_of_a_v2_array(tmp_path, prefixes):
    data = _data((512, 512))
    a = zarrdask.create_array(tmp_path / "v2.zarr", shape=data.shape, dtype=data.dtype, chunks=(256, 256),
                              compressors={"id": "zstd", "level": 1}, zarr_format=2, fill_value=0)
    a[...] = data
    np.testing.assert_array_equal(a[10:20, 30:40], data[10:20, 30:40])
    assert any(done for _, _, done in prefixes)


def test_a_frame_with_a_checksum_is_decoded_whole_and_verified(tmp_path, prefixes):
    data = _data((256, 512))
    a = zarrdask.create_array(tmp_path / "c.zarr", shape=data.shape, dtype=data.dtype, chunks=(256, 512),
                              compressors=_zstd(checksum=True), fill_value=0)
    a[...] = data
    np.testing.assert_array_equal(a[3:13, 3:13], data[3:13, 3:13])
    assert not any(done for _, _, done in prefixes)
    path = tmp_path / "c.zarr" / "c" / "0" / "0"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # the checksum: the data decode fine, the checksum does not match
    path.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match="c/0/0"):
        a[3:13, 3:13]


def test_a_corrupt_frame_is_reported_by_the_whole_decode(tmp_path, prefixes):
    data = _data((256, 512))
    a = zarrdask.create_array(tmp_path / "k.zarr", shape=data.shape, dtype=data.dtype, chunks=(256, 512),
                              compressors=_zstd(), fill_value=0)
    a[...] = data
    path = tmp_path / "k.zarr" / "c" / "0" / "0"
    raw = bytearray(path.read_bytes())
    raw[20:400] = bytes(380)  # the first block's data zeroed
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptChunkError, match="c/0/0"):
        a[3:13, 3:13]
    path.write_bytes(bytes(raw[: len(raw) // 3]))  # truncated
    with pytest.raises(CorruptChunkError, match="c/0/0"):
        a[3:13, 3:13]


def test_without_a_streaming_decoder_chunks_are_decoded_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(zstd_codec, "_streaming_decoder", lambda: None)
    data = _data((256, 512))
    a = zarrdask.create_array(tmp_path / "w.zarr", shape=data.shape, dtype=data.dtype, chunks=(256, 512),
                              compressors=_zstd(), fill_value=0)
    a[...] = data
    for sel in SELECTIONS[:3]:
        np.testing.assert_array_equal(a[sel], data[sel])


def test_random_ranges_match_the_whole_decode(prefixes):
    from numcodecs import Zstd

    data = _data((300, 700)).tobytes()
    frame = Zstd(level=3).encode(data)
    rng = np.random.default_rng(0)
    most = int(len(data) * zstd_codec._PREFIX_MAX)
    for _ in range(200):
        start = int(rng.integers(0, most - 1))
        length = int(rng.integers(1, most - start + 1))
        got = zstd_codec.ZstdCodec().decode_range(frame, start, length, len(data), "k")
        assert got is not None and bytes(got) == data[start : start + length]
    # a longer prefix, or less than a block left undecoded: decoded whole instead (it costs less)
    assert zstd_codec.ZstdCodec().decode_range(frame, 0, most + 1, len(data), "k") is None
    assert zstd_codec.ZstdCodec().decode_range(frame, 0, len(data) - 10, len(data), "k") is None
    assert zstd_codec.ZstdCodec().decode_range(frame, 0, 10, len(data) + 1, "k") is None  # not the declared size


def test_one_window_in_a_fresh_process_does_not_import_the_streaming_decoder(tmp_path):
    """Importing it costs more than decoding a chunk whole: the first window
    decodes whole, the second imports it and decodes a prefix."""
    data = _data((256, 512))
    a = zarrdask.create_array(tmp_path / "f.zarr", shape=data.shape, dtype=data.dtype, chunks=(256, 512),
                              compressors=_zstd(), fill_value=0)
    a[...] = data
    script = (
        "import sys, numpy as np, zarrdask\n"
        f"a = zarrdask.open_array({str(tmp_path / 'f.zarr')!r}, mode='r')\n"
        "first = a[3:13, 3:13]\n"
        "print('backports.zstd' in sys.modules or 'compression.zstd' in sys.modules)\n"
        "second = a[3:13, 3:13]\n"
        "print('backports.zstd' in sys.modules or 'compression.zstd' in sys.modules)\n"
        "print(np.array_equal(first, second))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True"]
