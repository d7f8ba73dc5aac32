"""The ``gzip``, ``zstd`` and ``blosc`` codecs."""

from __future__ import annotations

import gc
import gzip
import pickle
import sys
import threading
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import numcodecs.blosc
import ml_dtypes
import numcodecs.zstd
import numpy as np
import pytest

from zarrdask.codecs.abc import BytesBytesCodec, ChunkSpec
from zarrdask.codecs.blosc_codec import CNAMES, BloscCodec
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.chain import CodecChain
from zarrdask.codecs.gzip_codec import GzipCodec
from zarrdask.codecs import zstd_codec
from zarrdask.codecs.zstd_codec import ZstdCodec, frame_content_size, libzstd, split_frames
from zarrdask.errors import ChecksumError, CodecError, CorruptChunkError

SPEC = ChunkSpec((2500,), np.dtype("int32"), 0)
DATA = (np.arange(2500, dtype="int32") % 97).tobytes()
AVAILABLE = numcodecs.blosc.list_compressors()

CODECS = [
    GzipCodec(),
    GzipCodec(level=0),
    GzipCodec(level=9),
    ZstdCodec(),
    ZstdCodec(level=-3),
    ZstdCodec(level=19, checksum=True),
    BloscCodec(),
    BloscCodec(cname="lz4", shuffle="bitshuffle", typesize=4, blocksize=1024),
]


@pytest.mark.parametrize("codec", CODECS, ids=repr)
class TestCommon:
    def test_round_trip(self, codec):
        encoded = codec.encode(DATA, SPEC)
        assert bytes(codec.decode(encoded, SPEC, "k")) == DATA
        assert codec.encoded_size(len(DATA)) is None

    def test_accepts_memoryview_and_array_input(self, codec):
        a = np.frombuffer(DATA, dtype="int32")
        assert bytes(codec.decode(memoryview(bytes(codec.encode(a, SPEC))), SPEC)) == DATA
        assert bytes(codec.decode(codec.encode(memoryview(DATA), SPEC), SPEC)) == DATA

    def test_decode_into_out(self, codec):
        out = np.zeros(2500, dtype="int32")
        result = codec.decode(codec.encode(DATA, SPEC), SPEC, "k", out=memoryview(out).cast("B"))
        assert out.tobytes() == DATA
        assert memoryview(result).nbytes == len(DATA)

    @pytest.mark.parametrize("delta", [-1, 1, 4])
    def test_out_of_the_wrong_size(self, codec, delta):
        out = bytearray(len(DATA) + delta)
        with pytest.raises(CorruptChunkError, match=r"'c/0'.*" + str(len(DATA))):
            codec.decode(codec.encode(DATA, SPEC), SPEC, "c/0", out=memoryview(out))

    def test_garbage_is_a_corrupt_chunk_naming_the_key(self, codec):
        with pytest.raises(CorruptChunkError, match="a/c/3"):
            codec.decode(b"this is not compressed data at all", SPEC, "a/c/3")

    def test_truncated(self, codec):
        encoded = bytes(codec.encode(DATA, SPEC))
        with pytest.raises(CorruptChunkError, match="a/c/3"):
            codec.decode(encoded[: len(encoded) // 2], SPEC, "a/c/3")

    def test_empty_input(self, codec):
        spec = ChunkSpec((0,), np.dtype("int32"), 0)
        assert bytes(codec.decode(codec.encode(b"", spec), spec)) == b""

    def test_pickle_and_json(self, codec):
        clone = pickle.loads(pickle.dumps(codec))
        assert clone == codec
        assert bytes(clone.decode(codec.encode(DATA, SPEC), SPEC)) == DATA
        assert type(codec).from_config(codec.to_json()["configuration"]) == codec

    def test_threads(self, codec):
        chunks = [(np.arange(5000, dtype="int32") * i % 1013).tobytes() for i in range(32)]

        def work(raw):
            return bytes(codec.decode(codec.encode(raw, SPEC), SPEC))

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(work, chunks)) == chunks


# -- gzip -------------------------------------------------------------------------
@pytest.mark.parametrize("level", range(10))
def test_gzip_output_is_rfc1952(level):
    encoded = GzipCodec(level).encode(DATA, SPEC)
    assert encoded[:4] == b"\x1f\x8b\x08\x00"  # magic, deflate, no flags
    assert encoded[4:8] == b"\0\0\0\0"  # MTIME 0: deterministic
    assert encoded[9] == 255
    assert gzip.decompress(encoded) == DATA
    crc, size = struct.unpack("<LL", encoded[-8:])
    assert crc == zlib.crc32(DATA) and size == len(DATA)
    assert GzipCodec(level).encode(DATA, SPEC) == encoded


def test_gzip_same_deflate_stream_as_numcodecs():
    from numcodecs import GZip

    for level in (1, 5, 9):
        ours, theirs = GzipCodec(level).encode(DATA, SPEC), GZip(level).encode(DATA)
        assert ours[:4] + ours[8:] == theirs[:4] + theirs[8:]


def test_gzip_reads_multi_member_and_foreign_streams():
    two = gzip.compress(DATA[:100], mtime=123) + gzip.compress(DATA[100:], compresslevel=1)
    assert GzipCodec().decode(two, SPEC) == DATA


def test_gzip_crc_error():
    bad = bytearray(GzipCodec().encode(DATA, SPEC))
    bad[-6] ^= 0xFF
    with pytest.raises(CorruptChunkError, match="k"):
        GzipCodec().decode(bytes(bad), SPEC, "k")


def test_gzip_json_and_spec_example():
    assert GzipCodec().to_json() == {"name": "gzip", "configuration": {"level": 5}}
    assert GzipCodec.from_config({"level": 1}).level == 1  # the spec's example
    for bad in (-1, 10, 1.5, True, "5"):
        with pytest.raises(CodecError, match="level"):
            GzipCodec(bad)
    with pytest.raises(CodecError, match="unknown"):
        GzipCodec.from_config({"level": 1, "mtime": 0})


# -- zstd ---------------------------------------------------------------------------
def test_zstd_spec_example():
    codec = ZstdCodec.from_config({"level": 1, "checksum": True})
    assert (codec.level, codec.checksum) == (1, True)
    assert codec.to_json() == {"name": "zstd", "configuration": {"level": 1, "checksum": True}}
    assert ZstdCodec.from_config({}).to_json() == {"name": "zstd", "configuration": {"level": 0, "checksum": False}}


def test_zstd_configuration_errors():
    for bad in ({"level": 23}, {"level": -131073}, {"level": 2.0}, {"checksum": 1}, {"dict": "x"}):
        with pytest.raises(CodecError):
            ZstdCodec.from_config(bad)


def test_zstd_checksum_mismatch():
    encoded = bytearray(ZstdCodec(checksum=True).encode(DATA, SPEC))
    encoded[-1] ^= 0xFF
    with pytest.raises(ChecksumError, match="k/0"):
        ZstdCodec(checksum=True).decode(bytes(encoded), SPEC, "k/0")


@pytest.mark.parametrize("n", [0, 1, 255, 256, 300, 65791, 70000])
def test_zstd_frame_content_size(n):
    assert frame_content_size(memoryview(ZstdCodec().encode(bytes(n), SPEC))) == n


def test_zstd_frame_content_size_of_non_frames():
    assert frame_content_size(memoryview(b"")) is None
    assert frame_content_size(memoryview(b"\x00" * 16)) is None


def test_zstd_decodes_straight_into_out():
    out = np.zeros(len(DATA), dtype=np.uint8)
    ZstdCodec().decode(ZstdCodec().encode(DATA, SPEC), SPEC, out=memoryview(out))
    assert out.tobytes() == DATA


def test_zstd_multiple_frames():
    codec = ZstdCodec()
    two = codec.encode(DATA[:1000], SPEC) + codec.encode(DATA[1000:], SPEC)
    assert bytes(codec.decode(two, SPEC)) == DATA
    out = bytearray(len(DATA))
    codec.decode(two, SPEC, out=memoryview(out))
    assert bytes(out) == DATA


@pytest.mark.parametrize("checksum", [False, True])
def test_zstd_frames_split(checksum):
    codec = ZstdCodec(level=3, checksum=checksum)
    a, b = codec.encode(DATA[:1000], SPEC), codec.encode(bytes(1000), SPEC)  # b: an RLE block
    skippable = struct.pack("<II", 0x184D2A5E, 3) + b"xyz"
    frames = split_frames(memoryview(a + skippable + b))
    assert [bytes(f) for f in frames] == [a, b]
    assert split_frames(memoryview(a[:-1])) is None  # a truncated frame
    assert split_frames(memoryview(b"junk" * 3)) is None
    # decoded frame by frame where numcodecs decodes only the first (numcodecs < 0.16)
    assert bytes(codec.decode(a + skippable + b, SPEC)) == DATA[:1000] + bytes(1000)


def _without_size(raw: bytes) -> bytes:
    """``raw`` as one zstd frame whose header declares no content size (streamed)."""
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor(write_content_size=False).compress(raw)


@pytest.fixture(params=["libzstd", "numcodecs"])
def zstd_way(request, monkeypatch):
    """Decompression through numcodecs' libzstd called directly, and through
    numcodecs' own ``decode`` (where that library exports nothing)."""
    if request.param == "libzstd":
        if libzstd() is None:
            pytest.skip("numcodecs' zstd module exports no ZSTD_* functions here")
    else:  # no library, so no thread has a context of it either
        monkeypatch.setattr(zstd_codec, "_library", [None])
        monkeypatch.setattr(zstd_codec, "_contexts", threading.local())
    return request.param


def test_zstd_decodes_the_same_either_way(zstd_way):
    codec = ZstdCodec(level=3)
    one = codec.encode(DATA, SPEC)
    two = codec.encode(DATA[:1000], SPEC) + codec.encode(DATA[1000:], SPEC)
    skippable = struct.pack("<II", 0x184D2A50, 2) + b"zz"
    for stored in (one, two, skippable + one, _without_size(DATA), ZstdCodec(checksum=True).encode(DATA, SPEC)):
        # read-only and writable stored bytes (a file read into a reused buffer), a slice of a larger one
        padded = bytearray(b"x" * 3 + stored + b"y" * 5)
        for data in (stored, bytearray(stored), memoryview(padded)[3 : 3 + len(stored)]):
            assert bytes(codec.decode(data, SPEC, size=len(DATA))) == DATA
            out = np.zeros(len(DATA), dtype=np.uint8)
            codec.decode(data, SPEC, out=memoryview(out))
            assert out.tobytes() == DATA
            assert bytes(padded[:3]) == b"xxx" and bytes(padded[-5:]) == b"yyyyy"


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda good: good[:20] + bytes([good[20] ^ 0xFF]) + good[21:], CorruptChunkError, "could not decode it"),
        (lambda good: good[:-5], CorruptChunkError, "could not decode it"),
        (lambda good: _without_size(DATA + bytes(100)), CorruptChunkError, "decodes to more than 10000 bytes"),
        (lambda good: _without_size(DATA[:-100]), CorruptChunkError, "9900"),
        (lambda good: b"\x28\xb5\x2f\xfd" + bytes(30), CorruptChunkError, "no sequence of whole zstd frames"),
    ],
    ids=["corrupt", "truncated", "longer-than-expected", "shorter-than-expected", "not-frames"],
)
def test_zstd_refuses_bad_data_the_same_either_way(zstd_way, make, error, message):
    stored = make(ZstdCodec().encode(DATA, SPEC))
    with pytest.raises(error, match=rf"'c/3'.*'zstd'.*{message}"):
        ZstdCodec().decode(stored, SPEC, "c/3", size=len(DATA))
    out = np.full(len(DATA), 7, dtype=np.uint8)
    with pytest.raises(error, match="'c/3'"):
        ZstdCodec().decode(stored, SPEC, "c/3", out=memoryview(out))


def test_zstd_checksum_mismatch_either_way(zstd_way):
    encoded = bytearray(ZstdCodec(checksum=True).encode(DATA, SPEC))
    encoded[-1] ^= 0xFF
    with pytest.raises(ChecksumError, match="k/0"):
        ZstdCodec(checksum=True).decode(bytes(encoded), SPEC, "k/0")


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_zstd_chunks_in_a_chain_decode_and_fail_the_same_through_the_shortcut(zstd_way, layout, monkeypatch):
    # the chain decodes the usual chunk (frames decoding to the chunk's size)
    # with ZstdCodec.decode_exact, straight into the output or through a
    # scratch buffer; anything else goes the long way, which says what is wrong
    shortcut = ZstdCodec.decode_exact
    answers: list = []

    def spy(self, data, target):
        answers.append(shortcut(self, data, target))
        return answers[-1]

    monkeypatch.setattr(ZstdCodec, "decode_exact", spy)
    took_it = zstd_way == "libzstd"
    chain = CodecChain([], BytesCodec(endian="little"), [ZstdCodec()])
    spec = ChunkSpec((50, 50), np.dtype("<f4"), 0.0, "C")
    values = np.arange(2500, dtype="<f4").reshape(50, 50)
    good = chain.encode(values, spec)
    target = memoryview(np.empty(values.nbytes, np.uint8))
    assert ZstdCodec().decode_exact(good, target) == took_it
    if took_it:
        assert np.array_equal(np.frombuffer(target, "<f4").reshape(50, 50), values)
    # two frames, and a frame that does not declare its size: the shortcut too
    raw = values.tobytes()
    for frames in (ZstdCodec().encode(raw[:4000], spec) + ZstdCodec().encode(raw[4000:], spec), _without_size(raw)):
        target[:] = bytes(len(target))
        assert ZstdCodec().decode_exact(frames, target) == took_it
        if took_it:
            assert bytes(target) == raw

    whole = np.full((60, 60), -1, "<f4")
    out = whole[5:55, 5:55] if layout == "strided" else np.full((50, 50), -1, "<f4")
    answers.clear()
    chain.decode_into(good, spec, out, "c/3")
    assert answers == [took_it]
    assert np.array_equal(out, values)
    if layout == "strided":
        assert (whole[:5] == -1).all() and (whole[:, 55:] == -1).all()
    checksummed = bytearray(CodecChain([], BytesCodec(endian="little"), [ZstdCodec(checksum=True)]).encode(values, spec))
    checksummed[-1] ^= 0xFF
    wrong_size = chain.encode(values[:49], ChunkSpec((49, 50), np.dtype("<f4"), 0.0, "C"))
    for bad, error in [(bytes(checksummed), ChecksumError), (wrong_size, CorruptChunkError),
                       (good[:-5], CorruptChunkError), (b"\x28\xb5\x2f\xfd" + bytes(30), CorruptChunkError)]:
        assert not ZstdCodec().decode_exact(bad, target)
        with pytest.raises(error, match="'c/3'"):
            chain.decode_into(bad, spec, out, "c/3")
    # elements not stored as they lie in memory: the long way, right all the same
    big_endian = ChunkSpec((50, 50), np.dtype(">f4"), 0.0, "C")
    swapped = np.empty((50, 50), ">f4")
    stored = chain.encode(values.astype(">f4"), big_endian)
    answers.clear()
    chain.decode_into(stored, big_endian, swapped, "c/3")
    assert answers == []
    assert np.array_equal(swapped, values)
    # ml_dtypes numbers (float8_e5m2, which exports no buffer of its own) through the shortcut too
    e5m2 = ChunkSpec((50, 50), np.dtype(ml_dtypes.float8_e5m2), 0.0, "C")
    small = np.full((60, 60), 1, e5m2.dtype)
    stored = chain.encode(values.astype(e5m2.dtype), e5m2)
    answers.clear()
    chain.decode_into(stored, e5m2, small[5:55, 5:55], "c/3")
    assert answers == [took_it]
    assert np.array_equal(small[5:55, 5:55], values.astype(e5m2.dtype))


def test_zstd_chunks_lying_in_one_buffer_decode_through_one_exact_decoder(zstd_way, monkeypatch):
    # a shard's inner chunks: the decoder takes both buffers' addresses once,
    # then each chunk is its offset and size in the shared bytes
    chain = CodecChain([], BytesCodec(endian="little"), [ZstdCodec()])
    spec = ChunkSpec((20, 30), np.dtype("<f4"), 0.0, "C")
    values = [np.arange(600, dtype="<f4").reshape(20, 30) * k for k in (1, 2, 3)]
    stored = [chain.encode(v, spec) for v in values]
    bad = stored[0][:-5]
    source = b"pad" + stored[0] + stored[1] + bad + stored[2]
    offsets = [3, 3 + len(stored[0]), 3 + len(stored[0]) + len(stored[1]) + len(bad)]
    bad_at = offsets[1] + len(stored[1])
    scratch = np.empty(spec.shape, spec.dtype)
    exact = ZstdCodec().exact_decoder(memoryview(source), memoryview(scratch).cast("B"))
    if zstd_way == "libzstd":
        for offset, chunk, v in zip(offsets, stored, values):
            scratch[...] = -1
            assert exact(offset, len(chunk)) and np.array_equal(scratch, v)
        assert not exact(bad_at, len(bad))
        # not wholly inside the source: refused before libzstd reads a byte
        assert not exact(offsets[2], len(stored[2]) + 1) and not exact(-1, 10) and not exact(len(source), 0)
    else:
        assert exact is None
    assert ZstdCodec().exact_decoder(memoryview(source), memoryview(bytearray(0))) is None

    # through the chain: strided places through the scratch chunk, a
    # contiguous one decoded straight into (the long way's shortcut), in this thread
    shortcut, answers = ZstdCodec.decode_exact, []
    monkeypatch.setattr(ZstdCodec, "decode_exact", lambda self, d, t: answers.append(1) or shortcut(self, d, t))
    whole = np.full((3, 22, 32), -1, "<f4")
    alone = np.full((20, 30), -1, "<f4")
    chain.decode_pieces_into(source, [(offsets[0], len(stored[0]), whole[0, 1:21, 1:31]),
                                      (offsets[1], len(stored[1]), alone),
                                      (offsets[2], len(stored[2]), whole[2, 1:21, 1:31])], spec, "c/3")
    assert np.array_equal(whole[0, 1:21, 1:31], values[0]) and np.array_equal(alone, values[1])
    assert np.array_equal(whole[2, 1:21, 1:31], values[2])
    assert (whole[:, 0] == -1).all() and (whole[:, :, 31] == -1).all() and (whole[1] == -1).all()
    # with libzstd, only the contiguous one went through decode_into (and its shortcut); without, all three did
    assert len(answers) == (1 if zstd_way == "libzstd" else 3)
    # a damaged chunk, or one past the end of the bytes: the long way, which says what is wrong
    for offset, nbytes in [(bad_at, len(bad)), (offsets[2], len(stored[2]) + 7)]:
        with pytest.raises(CorruptChunkError, match="'c/3'"):
            chain.decode_pieces_into(source, [(offsets[0], len(stored[0]), whole[0, 1:21, 1:31]),
                                              (offset, nbytes, whole[1, 1:21, 1:31])], spec, "c/3")
    # a chain without the shortcut: each chunk the long way
    gz = CodecChain([], BytesCodec(endian="little"), [GzipCodec()])
    packed = gz.encode(values[2], spec)
    gz.decode_pieces_into(b"xx" + packed, [(2, len(packed), whole[1, 1:21, 1:31])], spec, "c/4")
    assert np.array_equal(whole[1, 1:21, 1:31], values[2])


def test_a_codecs_exact_decode_serves_chunks_lying_in_one_buffer():
    # a codec with decode_exact alone gets exact_decoder from it, bounds checked
    class Copy(BytesBytesCodec):
        name = "test.copy"
        exact_decode = True

        def decode_exact(self, data, target):
            if len(data) != len(target):
                return False
            target[:] = data
            return True

    target = memoryview(bytearray(4))
    exact = Copy().exact_decoder(memoryview(b"abcdefgh"), target)
    assert exact(2, 4) and bytes(target) == b"cdef"
    assert not exact(6, 4) and not exact(-2, 4) and not exact(0, 3)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="numcodecs' Linux wheels export libzstd's functions")
def test_zstd_decompresses_with_numcodecs_libzstd_and_a_context_per_thread():
    lib = libzstd()
    assert lib is not None
    assert lib.ZSTD_versionNumber() == numcodecs.zstd.VERSION_NUMBER  # the very library numcodecs uses
    encoded = ZstdCodec().encode(DATA, SPEC)

    all_in = threading.Barrier(4)

    def decode_twice() -> list[int]:
        seen = []
        for _ in range(2):
            assert bytes(ZstdCodec().decode(encoded, SPEC, size=len(DATA))) == DATA
            seen.append(zstd_codec._contexts.context.ptr)
        all_in.wait()  # every thread's context alive at once
        return seen

    def live() -> int:
        gc.collect()
        return sum(isinstance(o, zstd_codec._Context) for o in gc.get_objects())

    before = live()
    seen: list[list[int]] = []
    threads = [threading.Thread(target=lambda: seen.append(decode_twice())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(first == second for first, second in seen)  # a thread's context is kept across its decodes
    assert len({first for first, _ in seen}) == 4  # and is its own
    assert live() == before  # and freed with the thread


def test_zstd_decodes_on_many_threads_at_once(zstd_way):
    chunks = [(np.arange(5000, dtype="int64") * i).tobytes() for i in range(64)]
    spec = ChunkSpec((5000,), np.dtype("int64"), 0)
    encoded = [ZstdCodec(level=1).encode(c, spec) for c in chunks]
    with ThreadPoolExecutor(8) as pool:
        decoded = list(pool.map(lambda e: bytes(ZstdCodec().decode(e, spec, size=40000)), encoded * 4))
    assert decoded == chunks * 4


# -- blosc --------------------------------------------------------------------------
@pytest.mark.parametrize("cname", [c for c in CNAMES if c in AVAILABLE])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "float64"])
def test_blosc_each_cname_and_shuffle(cname, shuffle, dtype):
    data = (np.arange(4000) % 251).astype(dtype)
    spec = ChunkSpec(data.shape, data.dtype, 0)
    codec = BloscCodec(cname=cname, clevel=5, shuffle=shuffle)
    encoded = codec.encode(data.tobytes(), spec)
    flags, typesize = encoded[2], encoded[3]
    assert typesize == data.dtype.itemsize  # typesize taken from the data type
    assert bool(flags & 0x1) == (shuffle == "shuffle")
    assert bool(flags & 0x4) == (shuffle == "bitshuffle")
    assert bytes(codec.decode(encoded, spec)) == data.tobytes()


def test_blosc_spec_example():
    doc = {"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}
    codec = BloscCodec.from_config(doc)
    assert codec.to_json() == {"name": "blosc", "configuration": doc}
    assert list(codec.get_config()) == ["typesize", "cname", "clevel", "shuffle", "blocksize"]
    encoded = codec.encode(DATA, ChunkSpec((len(DATA),), np.dtype("uint8"), 0))
    assert encoded[3] == 4  # the configured typesize wins over the data type's


def test_blosc_evolve_records_chosen_values():
    codec = BloscCodec()
    assert codec.get_config() == {"cname": "zstd", "clevel": 5, "blocksize": 0}
    evolved = codec.complete(ChunkSpec((4,), np.dtype("float64"), 0))
    assert evolved.get_config() == {"typesize": 8, "cname": "zstd", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}
    assert codec.complete(ChunkSpec((4,), np.dtype("uint8"), 0)).shuffle == "bitshuffle"
    noshuffle = BloscCodec(shuffle="noshuffle").complete(ChunkSpec((4,), np.dtype("int16"), 0))
    assert noshuffle.typesize == 2
    assert evolved.complete(ChunkSpec((4,), np.dtype("uint8"), 0)) is evolved
    spec = ChunkSpec((len(DATA) // 8,), np.dtype("float64"), 0)
    assert codec.encode(DATA, spec) == evolved.encode(DATA, spec)


@pytest.mark.parametrize(
    "config",
    [
        {"cname": "lzma"},
        {"clevel": 10},
        {"shuffle": 1},
        {"shuffle": "byteshuffle"},
        {"typesize": 0},
        {"blocksize": -1},
        {"typesize": 4, "foo": 1},
    ],
)
def test_blosc_configuration_errors(config):
    with pytest.raises(CodecError):
        BloscCodec.from_config(config)


@pytest.mark.skipif("snappy" in AVAILABLE, reason="this numcodecs build has snappy")
def test_blosc_unavailable_cname_is_a_clear_error():
    codec = BloscCodec(cname="snappy")  # valid per the spec
    with pytest.raises(CodecError, match="snappy"):
        codec.validate(SPEC)
    with pytest.raises(CodecError, match="snappy"):
        codec.encode(DATA, SPEC)


def test_blosc_header_checks():
    encoded = bytes(BloscCodec().encode(DATA, SPEC))
    with pytest.raises(CorruptChunkError, match="header"):
        BloscCodec().decode(encoded[:10], SPEC, "k")
    with pytest.raises(CorruptChunkError, match=str(len(encoded) + 3)):
        BloscCodec().decode(encoded + b"xyz", SPEC, "k")
    with pytest.raises(CorruptChunkError, match=str(len(DATA))):
        BloscCodec().decode(encoded, SPEC, "k", out=memoryview(bytearray(len(DATA) - 8)))


def test_blosc_decodes_foreign_settings():
    # decoding needs no configuration: everything is in the header
    other = numcodecs.blosc.Blosc(cname="lz4", clevel=9, shuffle=2).encode(DATA)
    assert bytes(BloscCodec().decode(other, SPEC)) == DATA


def test_blosc_does_not_touch_use_threads():
    before = numcodecs.blosc.use_threads
    BloscCodec().encode(DATA, SPEC)
    assert numcodecs.blosc.use_threads is before


@pytest.mark.parametrize("use_threads", [None, True, False])
def test_blosc_threads_in_every_numcodecs_mode(monkeypatch, use_threads):
    monkeypatch.setattr(numcodecs.blosc, "use_threads", use_threads)
    codec = BloscCodec(cname="lz4", shuffle="shuffle")
    chunks = [(np.arange(20000, dtype="int32") * i % 1013).tobytes() for i in range(24)]

    def work(raw):
        out = bytearray(len(raw))
        codec.decode(codec.encode(raw, SPEC), SPEC, out=memoryview(out))
        return bytes(out)

    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(work, chunks)) == chunks
    assert [work(c) for c in chunks[:3]] == chunks[:3]  # main thread
