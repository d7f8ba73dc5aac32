"""Read decompression bombs one after the other and report each read's peak memory.

Run as a script by ``test_bombs.py`` (in a process of its own, under an
address-space limit): for every case named on the command line it stores a
small chunk that claims, or inflates to, far more than the chunk's decoded size
(1 GiB against 16–32 MiB chunks; 134 million strings against 1000), reads the
array through the public API under an address-space limit of 3x the chunk's
decoded size, and prints one JSON line: what the read raised, the message,
whether an allocation failed on the way (a ``MemoryError`` among the causes:
the read tried to allocate past the limit, even if the error was then turned
into another), and how much the resident set grew at its peak (Linux: the peak
is reset through ``/proc/self/clear_refs`` before each read).

The bombs are valid streams (zstd RLE blocks, DEFLATE blocks of zeros repeated
after full flushes, concatenated bzip2 / xz streams, ...) or headers claiming a
size, built without ever holding the inflated data.
"""

from __future__ import annotations

import gc
import json
import re
import resource
import struct
import sys
import time
import zlib
from functools import lru_cache
from typing import Any, Callable

import numcodecs
import numpy as np

import zarrdask
from zarrdask import config
from zarrdask.storage import MemoryStore

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SHAPE = (2048, 4096)  # float32: 32 MiB per chunk
D = 32 * MiB
BOMB = GiB  # what the bombs inflate to
VLEN_BUDGET = 16 * MiB  # strings have no fixed decoded size: the budget their reads are held to


# -- bombs -----------------------------------------------------------------------------
@lru_cache(maxsize=None)
def zstd_frame(total: int, *, declare: bool = True) -> bytes:
    """A zstd frame of RLE blocks (RFC 8878 3.1.1.2) regenerating ``total`` zero bytes."""
    if declare:  # single segment, 8-byte Frame_Content_Size
        header = struct.pack("<IB", 0xFD2FB528, 0xE0) + struct.pack("<Q", total)
    else:  # no content size; window descriptor 128 KiB
        header = struct.pack("<IBB", 0xFD2FB528, 0x00, (17 - 10) << 3)
    block = 128 * KiB
    blocks = []
    left = total
    while left:
        n = min(block, left)
        left -= n
        blocks.append(struct.pack("<I", (n << 3) | (1 << 1) | (0 if left else 1))[:3] + b"\x00")
    if not blocks:  # an empty frame: one empty raw block, the last
        blocks.append(struct.pack("<I", 1)[:3])
    return header + b"".join(blocks)


def _deflate_zeros(total: int) -> bytes:
    """Raw DEFLATE of ``total`` zero bytes: one compressed 1 MiB block, repeated
    (a full flush resets the history, so every repetition is the same bytes)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(MiB)) + c.flush(zlib.Z_FULL_FLUSH)
    assert total % MiB == 0
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty final block
    return block * (total // MiB) + end


def _zeros_checksum(fn: Callable[[bytes, int], int], start: int, total: int) -> int:
    zero, value = bytes(MiB), start
    for _ in range(total // MiB):
        value = fn(zero, value)
    return value


@lru_cache(maxsize=None)
def gzip_zeros(total: int) -> bytes:
    header = struct.pack("<BBBBLBB", 0x1F, 0x8B, 8, 0, 0, 0, 255)
    trailer = struct.pack("<LL", _zeros_checksum(zlib.crc32, 0, total), total & 0xFFFFFFFF)
    return header + _deflate_zeros(total) + trailer


@lru_cache(maxsize=None)
def zlib_zeros(total: int) -> bytes:
    return b"\x78\xda" + _deflate_zeros(total) + struct.pack(">L", _zeros_checksum(zlib.adler32, 1, total))


@lru_cache(maxsize=None)
def bz2_zeros(total: int) -> bytes:
    import bz2

    return bz2.compress(bytes(8 * MiB)) * (total // (8 * MiB))  # concatenated streams


@lru_cache(maxsize=None)
def xz_zeros(total: int) -> bytes:
    import lzma

    return lzma.compress(bytes(8 * MiB), preset=1) * (total // (8 * MiB))


def lz4_claim(total: int) -> bytes:
    return struct.pack("<i", total) + b"\x10\x00" * 8  # numcodecs' size prefix, then a token


def blosc_claim(total: int) -> bytes:
    body = b"\x00" * 32
    # version 2, lz4 version 1, flags (byte-shuffle, lz4), typesize 4, nbytes, blocksize, cbytes
    return struct.pack("<BBBBIII", 2, 1, 0x21, 4, total, 256 * KiB, 16 + len(body)) + body


@lru_cache(maxsize=None)
def zfpy_zeros(shape: tuple[int, ...]) -> bytes:
    import zfpy

    return zfpy.compress_numpy(np.zeros(shape, dtype="f4"), tolerance=0.5)  # calloc'd: never resident


@lru_cache(maxsize=None)
def pcodec_zeros(n: int) -> bytes:
    import pcodec
    from pcodec import standalone

    return standalone.simple_compress(np.zeros(n, dtype="f4"), pcodec.ChunkConfig())


def vlen_claim(count: int) -> bytes:
    return struct.pack("<I", count) + b"\x00" * 16  # 20 bytes claiming `count` elements


def crafted_shard(inner: bytes, n_inner: int) -> bytes:
    """A shard (index at the end: bytes + crc32c) whose first inner chunk is ``inner``."""
    import google_crc32c

    entries = np.full((n_inner, 2), 2**64 - 1, dtype="<u8")
    entries[0] = (0, len(inner))
    index = entries.tobytes()
    return inner + index + struct.pack("<I", google_crc32c.value(bytes(index)))


# -- arrays ----------------------------------------------------------------------------------
def array(key: str, data: bytes, **kw: Any) -> Callable[[], Any]:
    store = MemoryStore()
    kw.setdefault("shape", SHAPE)
    kw.setdefault("chunks", kw["shape"])
    kw.setdefault("dtype", "f4")
    a = zarrdask.create_array(store, **kw)
    store.set(key, data)
    return lambda: a[...]


def v3(data: bytes, **kw: Any) -> Callable[[], Any]:
    key = "c/" + "/".join("0" * len(kw.get("shape", SHAPE)))
    return array(key, data, zarr_format=3, **kw)


def v2(data: bytes, **kw: Any) -> Callable[[], Any]:
    key = ".".join("0" * len(kw.get("shape", SHAPE)))
    return array(key, data, zarr_format=2, **kw)


def nc(codec_id: str, **config_: Any) -> Any:
    return numcodecs.get_codec({"id": codec_id, **config_})


def v3nc(codec_id: str, **config_: Any) -> dict[str, Any]:
    return {"name": f"numcodecs.{codec_id}", "configuration": config_}


ZFP_SHAPE = (32, 512, 512)  # float32: 32 MiB


def cases() -> dict[str, tuple[int, Callable[[], Callable[[], Any]]]]:
    """name → (budget in bytes: the chunk's decoded size, a function making the read)."""
    vlen = VLEN_BUDGET
    return {
        # v3 core codecs
        "v3-zstd-declared": (D, lambda: v3(zstd_frame(BOMB), compressors=[{"name": "zstd"}])),
        "v3-zstd-streaming": (D, lambda: v3(zstd_frame(BOMB, declare=False), compressors=[{"name": "zstd"}])),
        "v3-zstd-frames": (D, lambda: v3(zstd_frame(D) * (BOMB // D), compressors=[{"name": "zstd"}])),
        "v3-gzip": (D, lambda: v3(gzip_zeros(BOMB), compressors=[{"name": "gzip"}])),
        "v3-blosc": (D, lambda: v3(blosc_claim(BOMB), compressors=[{"name": "blosc"}])),
        "v3-zstd-then-crc32c": (D, lambda: v3(_crc(zstd_frame(BOMB)), compressors=[{"name": "zstd"}, {"name": "crc32c"}])),
        "v3-crc32c-then-gzip": (D, lambda: v3(gzip_zeros(BOMB), compressors=[{"name": "crc32c"}, {"name": "gzip"}])),
        # v3 numcodecs.<id> compressors and checksums
        "v3-numcodecs.zstd": (D, lambda: v3(zstd_frame(BOMB), compressors=[v3nc("zstd")])),
        "v3-numcodecs.zstd-streaming": (D, lambda: v3(zstd_frame(BOMB, declare=False), compressors=[v3nc("zstd")])),
        "v3-numcodecs.gzip": (D, lambda: v3(gzip_zeros(BOMB), compressors=[v3nc("gzip")])),
        "v3-numcodecs.zlib": (D, lambda: v3(zlib_zeros(BOMB), compressors=[v3nc("zlib")])),
        "v3-numcodecs.bz2": (D, lambda: v3(bz2_zeros(BOMB), compressors=[v3nc("bz2")])),
        "v3-numcodecs.lzma": (D, lambda: v3(xz_zeros(BOMB), compressors=[v3nc("lzma")])),
        "v3-numcodecs.lz4": (D, lambda: v3(lz4_claim(BOMB), compressors=[v3nc("lz4")])),
        "v3-numcodecs.blosc": (D, lambda: v3(blosc_claim(BOMB), compressors=[v3nc("blosc")])),
        **{
            f"v3-numcodecs.{cid}": (D, (lambda cid=cid: v3(bytes(2 * D), compressors=[v3nc(cid)])))
            for cid in ("crc32", "adler32", "fletcher32", "jenkins_lookup3", "crc32c")
        },
        "v3-numcodecs.zfpy": (D, lambda: v3(zfpy_zeros((1024, 512, 512)), shape=ZFP_SHAPE,
                                           serializer=v3nc("zfpy", mode=4, tolerance=0.5), compressors=None)),
        "v3-numcodecs.pcodec": (D, lambda: v3(pcodec_zeros(BOMB // 16), serializer=v3nc("pcodec"), compressors=None)),
        # v2 compressors (alone: decoded into the output; after a filter: into a buffer)
        "v2-zstd": (D, lambda: v2(zstd_frame(BOMB), compressors=nc("zstd"))),
        "v2-zstd-streaming": (D, lambda: v2(zstd_frame(BOMB, declare=False), compressors=nc("zstd"))),
        "v2-gzip": (D, lambda: v2(gzip_zeros(BOMB), compressors=nc("gzip"))),
        "v2-zlib": (D, lambda: v2(zlib_zeros(BOMB), compressors=nc("zlib"))),
        "v2-bz2": (D, lambda: v2(bz2_zeros(BOMB), compressors=nc("bz2"))),
        "v2-lzma": (D, lambda: v2(xz_zeros(BOMB), compressors=nc("lzma"))),
        "v2-lz4": (D, lambda: v2(lz4_claim(BOMB), compressors=nc("lz4"))),
        "v2-blosc": (D, lambda: v2(blosc_claim(BOMB), compressors=nc("blosc"))),
        "v2-delta-blosc": (D, lambda: v2(blosc_claim(BOMB), compressors=nc("blosc"), filters=[nc("delta", dtype="<f4")])),
        "v2-delta-zstd": (D, lambda: v2(zstd_frame(BOMB), compressors=nc("zstd"), filters=[nc("delta", dtype="<f4")])),
        "v2-delta-lz4": (D, lambda: v2(lz4_claim(BOMB), compressors=nc("lz4"), filters=[nc("delta", dtype="<f4")])),
        "v2-zfpy": (D, lambda: v2(zfpy_zeros((1024, 512, 512)), shape=ZFP_SHAPE, compressors=nc("zfpy", mode=4, tolerance=0.5))),
        "v2-pcodec": (D, lambda: v2(pcodec_zeros(BOMB // 16), compressors=nc("pcodec"))),
        # inner chunks of a shard (16 MiB each)
        "shard-zstd": (D // 2, lambda: v3(crafted_shard(zstd_frame(BOMB), 2), chunks=(1024, 4096), shards=SHAPE,
                                          compressors=[{"name": "zstd"}])),
        "shard-gzip": (D // 2, lambda: v3(crafted_shard(gzip_zeros(BOMB), 2), chunks=(1024, 4096), shards=SHAPE,
                                          compressors=[{"name": "gzip"}])),
        # variable-length strings and bytes: the element count in the header
        "v3-vlen-utf8": (vlen, lambda: v3(vlen_claim(134_217_728), shape=(1000,), dtype=str, compressors=None)),
        "v3-vlen-bytes": (vlen, lambda: v3(vlen_claim(134_217_728), shape=(1000,), dtype=bytes, compressors=None)),
        "v3-vlen-utf8-length": (vlen, lambda: v3(struct.pack("<II", 1, 2**31) + b"x" * 16, shape=(1,), dtype=str,
                                                 compressors=None)),
        "v3-vlen-offsets": (vlen, lambda: v3(_offsets_claim(1000), shape=(1000,), dtype=str, compressors=None,
                                             serializer={"name": "zarrdask.vlen-offsets"})),
        "v2-vlen-utf8": (vlen, lambda: v2(vlen_claim(134_217_728), shape=(1000,), dtype=str, compressors=None)),
        "v2-vlen-bytes": (vlen, lambda: v2(vlen_claim(134_217_728), shape=(1000,), dtype=bytes, compressors=None)),
        "v2-vlen-array": (vlen, lambda: v2(vlen_claim(134_217_728), shape=(1000,), dtype=object, compressors=None,
                                           filters=[nc("vlen-array", dtype="<i4")])),
        # strings compressed: no fixed decoded size, so the max_chunk_bytes setting bounds the compressor
        "v3-vlen-utf8-zstd-capped": (vlen, lambda: v3(zstd_frame(BOMB), shape=(1000,), dtype=str,
                                                      compressors=[{"name": "zstd"}])),
        "v3-vlen-utf8-zstd-streaming-capped": (vlen, lambda: v3(zstd_frame(BOMB, declare=False), shape=(1000,),
                                                                dtype=str, compressors=[{"name": "zstd"}])),
        "v2-vlen-utf8-gzip-capped": (vlen, lambda: v2(gzip_zeros(BOMB), shape=(1000,), dtype=str,
                                                      compressors=nc("gzip"))),
    }


def _crc(data: bytes) -> bytes:
    import google_crc32c

    return data + struct.pack("<I", google_crc32c.value(bytes(data)))


def _offsets_claim(n: int) -> bytes:
    """ZEP 7 offsets whose last one points 2 GiB past a 4-byte data buffer."""
    offsets = np.zeros(n + 1, dtype="<i4")
    offsets[-1] = 2**31 - 1
    head = offsets.tobytes()
    return head + b"\x00" * (-len(head) % 64) + b"abcd"


# -- measuring --------------------------------------------------------------------------
def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * KiB
    raise KeyError(field)


def _memory_error(e: BaseException | None) -> bool:
    """Whether a failed allocation (the address-space limit hit) is among the
    causes of ``e``, also where it was re-raised ``from None``: a MemoryError,
    or a library's own words for it (numcodecs' "error on realloc")."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, MemoryError) or re.search(r"alloc|out of memory", str(e), re.IGNORECASE):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def measure(name: str, budget: int, make: Callable[[], Callable[[], Any]]) -> dict[str, Any]:
    start = time.perf_counter()
    read = make()
    built = time.perf_counter()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak resident set (VmHWM) to the current one
    before = _status("VmRSS")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_status("VmSize") + 3 * budget, hard))
    out_of_memory = False
    try:
        read()
        raised, message = "nothing", ""
    except Exception as e:  # reported, judged by the test
        raised, message = type(e).__name__, str(e)[:300]
        out_of_memory = _memory_error(e)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    peak = _status("VmHWM")
    return {"case": name, "budget": budget, "raised": raised, "message": message, "growth": peak - before,
            "out_of_memory": out_of_memory,
            "seconds": [round(built - start, 3), round(time.perf_counter() - built, 3)]}


def main(names: list[str]) -> None:
    config.set(threads=1)  # the engine's work on this thread: no pool threads to reserve address space
    gc.collect()
    gc.freeze()  # what is alive now is never collected: each case's collection stays cheap
    table = cases()
    for name in names or list(table):
        budget, make = table[name]
        try:
            with config.set(max_chunk_bytes=VLEN_BUDGET) if "capped" in name else config.set():
                result = measure(name, budget, make)
        except Exception as e:  # building the case failed
            result = {"case": name, "budget": budget, "raised": "setup:" + type(e).__name__,
                      "message": str(e)[:300], "growth": -1}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
