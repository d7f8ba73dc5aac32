"""Decompression bombs and string count bombs are refused before they are inflated.

A stored chunk is untrusted data: a 16 KB zstd frame may declare 256 MB, half a
megabyte of DEFLATE may inflate to 512 MB, a 20-byte ``vlen-utf8`` chunk may
claim 134 million strings. Every codec decodes within the chunk's expected size
(:mod:`zarrdask.codecs.bounded`) and refuses the rest with
:class:`~zarrdask.errors.CorruptChunkError`.

The memory test reads each bomb in a child process (``_bomb_child.py``) under
an address-space limit of 3x the chunk's decoded size and measures the peak
resident set of each read.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import struct
import subprocess
import sys
from pathlib import Path

import numcodecs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numcodecs.registry import codec_registry

from zarrdask import config
from zarrdask.codecs.abc import BytesBytesCodec, ChunkSpec
from zarrdask.codecs.chain import CodecChain
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.gzip_codec import GzipCodec
from zarrdask.codecs.numcodecs_v2 import v2_chain
from zarrdask.codecs.numcodecs_v3 import numcodecs_codec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.codecs.vlen import VlenBytesCodec, VlenUtf8Codec
from zarrdask.codecs.zstd_codec import ZstdCodec
from zarrdask.errors import ChecksumError, CorruptChunkError

from ._bomb_child import BOMB, cases, gzip_zeros, zstd_frame

CHILD = Path(__file__).with_name("_bomb_child.py")
MiB = 1 << 20
F4 = ChunkSpec((256, 256), np.dtype("f4"), 0)  # 256 KiB chunks for the unit tests

try:
    import zfpy  # noqa: F401

    # numcodecs < 0.15 does not register zfpy under NumPy 2 (its extra pins numpy < 2)
    HAS_ZFPY = "zfpy" in codec_registry
except ImportError:  # pragma: no cover - optional
    HAS_ZFPY = False
try:
    import pcodec  # noqa: F401

    HAS_PCODEC = True
except ImportError:  # pragma: no cover - optional
    HAS_PCODEC = False


def _marks(case: str) -> list[pytest.MarkDecorator]:
    if "zfpy" in case and not HAS_ZFPY or "pcodec" in case and not HAS_PCODEC:
        return [pytest.mark.skip(reason="optional codec package not installed")]
    if "numcodecs.crc32c" in case and "crc32c" not in codec_registry:
        return [pytest.mark.skip(reason="numcodecs < 0.14 has no crc32c codec")]
    return []


CASES = [pytest.param(name, marks=_marks(name)) for name in cases()]


# -- peak memory of every bomb, in a child process --------------------------------------------
def _run_child() -> dict[str, dict]:
    """Every case's report; a case that kills the child (an allocation failure
    that aborts, as Rust code does) is reported as such and the child restarted
    for the cases after it."""
    left = [p.values[0] for p in CASES if not p.marks]
    env = dict(os.environ, MALLOC_ARENA_MAX="1")  # one malloc arena: no per-thread reservations
    results: dict[str, dict] = {}
    while left:
        proc = subprocess.run([sys.executable, str(CHILD), *left], capture_output=True, text=True, env=env, timeout=600)
        for line in proc.stdout.splitlines():
            r = json.loads(line)
            results[r["case"]] = r
        done = [name for name in left if name in results]
        left = left[len(done):]
        if left:  # the child died in the next case
            results[left[0]] = {"case": left[0], "died": proc.returncode, "stderr": proc.stderr[-2000:]}
            left = left[1:]
    return results


@pytest.fixture(scope="session")
def bomb_reads(tmp_path_factory) -> dict[str, dict]:
    """The child's report, made once per test run (shared by pytest-xdist workers)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("measures memory through /proc (Linux)")
    import fcntl

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    root = tmp_path_factory.getbasetemp()
    root = root.parent if run else root  # under xdist: the directory all workers share
    report = root / f"bomb-reads-{run or 'serial'}.json"
    with open(root / "bomb-reads.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not report.exists():
            report.write_text(json.dumps(_run_child()))
        return json.loads(report.read_text())


@pytest.mark.parametrize("case", CASES)
def test_bomb_refused_within_twice_the_chunk(bomb_reads, case):
    r = bomb_reads[case]
    assert "died" not in r, f"{case}: the process reading the bomb died (exit code {r.get('died')}): {r.get('stderr')}"
    assert r["raised"] in ("CorruptChunkError", "ChecksumError"), r
    assert not r["out_of_memory"], f"{case}: refused only after an allocation past 3x the chunk failed: {r}"
    assert r["growth"] <= 2 * r["budget"], (
        f"{case}: the read grew the resident set by {r['growth'] / MiB:.1f} MiB, "
        f"more than 2x the chunk's {r['budget'] / MiB:.0f} MiB"
    )


# -- messages name the key, the codec, the claim and the expected size ------------------------
def test_zstd_declared_size_message():
    chain = CodecChain([], BytesCodec(), [ZstdCodec()])
    out = np.empty(F4.shape, F4.dtype)
    with pytest.raises(CorruptChunkError, match=rf"'c/7'.*'zstd'.*declares.*{BOMB}.*expected {F4.nbytes} bytes"):
        chain.decode_into(zstd_frame(BOMB), F4, out, "c/7")


def test_gzip_stops_at_the_first_piece_past_the_size():
    chain = CodecChain([], BytesCodec(), [GzipCodec()])
    with pytest.raises(CorruptChunkError, match=rf"'c/1'.*'gzip' decodes to at least \d+ bytes.*expected {F4.nbytes}"):
        chain.decode(gzip_zeros(64 * MiB), F4, "c/1")


def test_max_chunk_bytes_setting():
    from zarrdask.codecs.bounded import DecodeBound

    assert config.get("max_chunk_bytes") == 2 << 30
    with config.set(max_chunk_bytes=1000):
        bound = DecodeBound("k", "zstd")
        assert bound.limit == 1000
        with pytest.raises(CorruptChunkError, match="'k'.*1001.*at most 1000 bytes.*max_chunk_bytes"):
            bound.check(1001)
    assert DecodeBound("k", "zstd", 5).limit == 5


def test_strings_compressed_are_held_to_max_chunk_bytes():
    spec = ChunkSpec((3,), np.dtypes.StringDType(), "")
    chain = CodecChain([], VlenUtf8Codec(), [ZstdCodec()])
    data = np.array(["a", "bc", "x" * 5000], dtype=spec.dtype)
    encoded = bytes(chain.encode(data, spec))
    assert list(chain.decode(encoded, spec)) == list(data)
    with config.set(max_chunk_bytes=1000):
        with pytest.raises(CorruptChunkError, match="'zstd'.*at most 1000 bytes"):
            chain.decode(encoded, spec, "c/0")


# -- string counts ----------------------------------------------------------------------------
@pytest.mark.parametrize("codec", [VlenUtf8Codec(), VlenBytesCodec()], ids=["vlen-utf8", "vlen-bytes"])
def test_vlen_count_checked_before_allocating(codec):
    dtype = np.dtypes.StringDType() if codec.name == "vlen-utf8" else np.dtype(object)
    spec = ChunkSpec((10,), dtype, "")
    claim = struct.pack("<I", 134_217_728) + bytes(16)
    with pytest.raises(CorruptChunkError, match=r"'c/0'.*134217728 elements, expected 10"):
        codec.decode(claim, spec, "c/0")
    short = struct.pack("<I", 10) + bytes(16)  # 10 elements need 40 bytes of lengths
    with pytest.raises(CorruptChunkError, match="length prefixes of its 10 elements"):
        codec.decode(short, spec, "c/0")


def test_v2_vlen_array_count():
    chain = v2_chain([{"id": "vlen-array", "dtype": "<i4"}], None)
    spec = ChunkSpec((4,), np.dtype(object), None)
    with pytest.raises(CorruptChunkError, match=r"'0'.*'vlen-array'.*134217728 elements, expected 4"):
        chain.decode(struct.pack("<I", 134_217_728) + bytes(16), spec, "0")


# -- legitimate data still decodes --------------------------------------------------------------
def _data(spec: ChunkSpec = F4) -> np.ndarray:
    return np.arange(np.prod(spec.shape), dtype=spec.dtype).reshape(spec.shape) % 251


def test_gzip_members_and_padding():
    data = _data()
    raw = data.tobytes()
    half = len(raw) // 2
    stored = gzip.compress(raw[:half]) + gzip.compress(raw[half:]) + b"\x00" * 5
    chain = CodecChain([], BytesCodec(), [GzipCodec()])
    np.testing.assert_array_equal(chain.decode(stored, F4), data)
    assert bytes(GzipCodec().decode(b"", F4, size=0)) == b""  # no member: nothing
    with pytest.raises(CorruptChunkError, match="'gzip' could not decode"):
        chain.decode(gzip.compress(raw)[:-3], F4, "c/0")  # truncated


@pytest.mark.parametrize("codec_id", ["zlib", "bz2", "lzma"])
def test_streams_decode_in_pieces(codec_id):
    from zarrdask.codecs.bounded import STEP

    data = (np.arange(1 << 20) * 7 % 251).astype("u1").reshape(1024, 1024)  # 4 pieces
    spec = ChunkSpec(data.shape, data.dtype, 0)
    codec = numcodecs.get_codec({"id": codec_id})
    stored = bytes(codec.encode(data))
    assert data.nbytes > 2 * STEP
    chain = CodecChain([], BytesCodec(), [numcodecs_codec(codec_id, kind="bytes_bytes")])
    np.testing.assert_array_equal(chain.decode(stored, spec), data)
    out = np.empty_like(data)
    chain.decode_into(stored, spec, out)
    np.testing.assert_array_equal(out, data)


@pytest.mark.parametrize("codec_id, compress", [("bz2", bz2.compress), ("lzma", lzma.compress)])
def test_trailing_bytes_as_numcodecs(codec_id, compress):
    """After the first stream: more streams are decoded; other bytes are ignored
    or refused exactly as numcodecs (the standard library) does."""
    raw = _data().tobytes()
    chain = CodecChain([], BytesCodec(), [numcodecs_codec(codec_id, kind="bytes_bytes")])
    np.testing.assert_array_equal(chain.decode(compress(raw[:100]) + compress(raw[100:]), F4), _data())
    for tail in (b"garbage", b"\x00" * 7, compress(b"") + b"x"):
        stored = compress(raw) + tail
        try:
            expected = numcodecs.get_codec({"id": codec_id}).decode(stored)
        except Exception:
            with pytest.raises(CorruptChunkError, match=f"'c/0'.*numcodecs.{codec_id}"):
                chain.decode(stored, F4, "c/0")
        else:
            assert expected == raw
            np.testing.assert_array_equal(chain.decode(stored, F4), _data())


def test_zstd_frames_of_every_kind():
    raw = _data().tobytes()
    half = len(raw) // 2
    z = numcodecs.Zstd()
    chain = CodecChain([], BytesCodec(), [ZstdCodec()])
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    for stored in (
        z.encode(raw[:half]) + z.encode(raw[half:]),  # two frames
        skippable + z.encode(raw),  # a skippable frame first
        zstd_frame(0) + z.encode(raw),  # an empty frame first
    ):
        np.testing.assert_array_equal(chain.decode(stored, F4), _data())
        out = np.empty(F4.shape, F4.dtype)
        chain.decode_into(stored, F4, out)
        np.testing.assert_array_equal(out, _data())
    streaming = zstd_frame(F4.nbytes, declare=False)  # no content size: zeros
    if tuple(int(v) for v in numcodecs.__version__.split(".")[:2]) >= (0, 16):
        np.testing.assert_array_equal(chain.decode(streaming, F4), np.zeros(F4.shape, F4.dtype))
        with config.set(max_chunk_bytes=F4.nbytes):  # no expected size: the block headers bound it
            assert len(ZstdCodec().decode(streaming, F4)) == F4.nbytes
        with config.set(max_chunk_bytes=F4.nbytes - 1):
            with pytest.raises(CorruptChunkError, match="may decode to 262144 bytes"):
                ZstdCodec().decode(streaming, F4, "c/0")


def test_zstd_then_checksum_sizes_come_from_the_chain():
    """The inner bytes→bytes codec learns its size from the chain: zstd's output
    is crc32c's input, the chunk's bytes + 4."""
    chain = CodecChain([], BytesCodec(), [codec_from_json({"name": "crc32c"}), ZstdCodec()])
    data = _data()
    encoded = bytes(chain.encode(data, F4))
    np.testing.assert_array_equal(chain.decode(encoded, F4), data)
    bomb = bytes(ZstdCodec().encode(bytes(F4.nbytes + 8), F4))
    with pytest.raises(CorruptChunkError, match=rf"declares.*{F4.nbytes + 8}.*expected {F4.nbytes + 4} bytes"):
        chain.decode(bomb, F4, "c/0")


class _Unbounded(BytesBytesCodec):
    """A codec written without ``size`` (a third-party codec)."""

    name = "test.unbounded"

    def encode(self, data, spec):
        return bytes(data)

    def decode(self, data, spec, key="", out=None):
        return bytes(data) * 2


def test_a_codec_without_bounds_is_checked_after():
    chain = CodecChain([], BytesCodec(), [_Unbounded(), ZstdCodec()])
    encoded = bytes(ZstdCodec().encode(bytes(F4.nbytes), F4))
    with pytest.raises(CorruptChunkError, match=r"test.unbounded decoded \d+ bytes, expected"):
        chain.decode(encoded, F4, "c/0")


@pytest.mark.skipif(not HAS_PCODEC, reason="pcodec not installed")
def test_v2_pcodec_with_a_filter_decodes_into_the_filtered_type():
    data = _data(ChunkSpec((64, 64), np.dtype("f8"), 0))
    spec = ChunkSpec(data.shape, data.dtype, 0)
    chain = v2_chain([{"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}], {"id": "pcodec"})
    encoded = bytes(chain.encode(data, spec))
    np.testing.assert_array_equal(chain.decode(encoded, spec), data)


# -- random bytes never raise anything but a corrupt-chunk error ---------------------------------
def _random_chains() -> list:
    f4 = ChunkSpec((4, 4), np.dtype("f4"), 0)
    strings = ChunkSpec((4,), np.dtypes.StringDType(), "")
    objects = ChunkSpec((4,), np.dtype(object), None)
    chains = [
        ("zstd", CodecChain([], BytesCodec(), [ZstdCodec()]), f4),
        ("gzip", CodecChain([], BytesCodec(), [GzipCodec()]), f4),
        ("blosc", CodecChain([], BytesCodec(), [codec_from_json({"name": "blosc"})]), f4),
        ("crc32c", CodecChain([], BytesCodec(), [codec_from_json({"name": "crc32c"})]), f4),
        ("vlen-utf8", CodecChain([], VlenUtf8Codec(), []), strings),
        ("vlen-bytes", CodecChain([], VlenBytesCodec(), []), objects),
        ("vlen-offsets", CodecChain.from_codecs([codec_from_json({"name": "zarrdask.vlen-offsets"})]), strings),
        ("v2-vlen-array", v2_chain([{"id": "vlen-array", "dtype": "<i4"}], None), objects),
    ]
    for cid in ("zstd", "gzip", "zlib", "bz2", "lzma", "lz4", "blosc", "crc32", "adler32", "fletcher32",
                "jenkins_lookup3", "crc32c", "shuffle", "base64"):
        if cid not in codec_registry:  # crc32c: numcodecs >= 0.14
            continue
        chains.append((f"numcodecs.{cid}", CodecChain([], BytesCodec(), [numcodecs_codec(cid, kind="bytes_bytes")]), f4))
        chains.append((f"v2-{cid}", v2_chain(None, {"id": cid}), f4))
    if HAS_PCODEC:
        chains.append(("numcodecs.pcodec", CodecChain([], numcodecs_codec("pcodec", kind="array_bytes"), []), f4))
        chains.append(("v2-pcodec", v2_chain(None, {"id": "pcodec"}), f4))
    if HAS_ZFPY:
        chains.append(("numcodecs.zfpy", CodecChain([], numcodecs_codec("zfpy", {"mode": 4, "tolerance": 0.1},
                                                                        kind="array_bytes"), []), f4))
    return chains


@pytest.mark.parametrize("name, chain, spec", [pytest.param(*c, id=c[0]) for c in _random_chains()])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200))
def test_random_bytes_are_corrupt_chunks(name, chain, spec, data):
    try:
        chain.decode(data, spec, "c/0")
    except (CorruptChunkError, ChecksumError):
        pass
