"""Request counts of the I/O scheduling on remote stores, counted by real
servers on 127.0.0.1 (the range-capable HTTP server, moto behind a counting
proxy): partial shard reads in two batches across all shards, one-round-trip
opens, metadata in batches, streamed reads and uploads with retries."""

from __future__ import annotations

import re
import threading
import uuid

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.core import consistent, engine
from zarrdask.storage import CountingStore, FsspecStore, MemoryStore
from zarrdask.storage.abc import VerifyingReader
from zarrdask.storage.capabilities import BACKGROUND_UPLOADS, STREAMING, BackgroundUploads, StreamingReads

pytestmark = pytest.mark.network

_SUFFIX = re.compile(r"^bytes=-\d+$")


def _sharded(root, name, data, **kw):
    return zarrdask.create_array(root / name, shape=data.shape, dtype=data.dtype, chunks=(4, 4), shards=(16, 16),
                                 fill_value=0, **kw)


def _data(n=32):
    return (np.arange(n * n, dtype="f4").reshape(n, n) % 97) + 1


def _data_log(server):
    """(method, path, Range) of the requests for chunk keys, in arrival order."""
    return [(r.method, r.path, r.range) for r in server.log.requests if "/c/" in r.path]


def test_window_across_shards_is_two_round_trips(faulty_http):
    data = _data()
    a = _sharded(faulty_http.root, "w.zarr", data)
    a[...] = data
    b = zarrdask.open_array(f"{faulty_http.url}/w.zarr", mode="r")
    faulty_http.reset()
    faulty_http.delay = 0.05  # latency: requests sent together overlap at the server
    # 16x16 window at the centre: 2x2 inner chunks of each of the 4 shards
    with zarrdask.config.set(coalesce_gap=0):
        np.testing.assert_array_equal(b[8:24, 8:24], data[8:24, 8:24])
    log = _data_log(faulty_http)
    indexes = [r for _, _, r in log if _SUFFIX.match(r or "")]
    assert len(indexes) == 4
    # inner chunks (1,1),(1,2) adjacent -> one range; (2,1),(2,2) another: 2 per shard
    assert len(log) == 4 + 8
    # the shards' reads overlap: two round trips in all, not two per shard
    assert faulty_http.log.round_trips() == 2
    # each shard's inner chunks are asked for after its index, from the version the index came from
    for shard in {p for _, p, _ in log}:
        mine = [r for _, p, r in log if p == shard]
        assert _SUFFIX.match(mine[0] or "") and not any(_SUFFIX.match(r or "") for r in mine[1:])
    assert all(r.if_match for r in faulty_http.log.requests if "/c/" in r.path and not _SUFFIX.match(r.range or ""))


def test_window_bytes_are_what_is_needed(http_server):
    # 4 shards of 256x256, inner chunks of 64x64 float32 (16 KiB, uncompressed)
    data = _data(512)
    name = f"b{uuid.uuid4().hex}.zarr"
    a = zarrdask.create_array(http_server.root / name, shape=data.shape, dtype="f4", chunks=(64, 64),
                              shards=(256, 256), fill_value=0, compressors=None)
    a[...] = data
    store = CountingStore(FsspecStore(f"{http_server.url}/{name}"))
    b = zarrdask.open_array(store, mode="r")
    store.reset()
    np.testing.assert_array_equal(b[128:384, 128:384], data[128:384, 128:384])
    needed = 4 * 4 * 64 * 64 * 4 + 4 * (16 * 16 + 4)  # 2x2 inner chunks per shard + 4 indexes
    assert needed <= store.counts["bytes_read"] <= 1.1 * needed
    assert store.counts["ranges_requested"] == 4 + 8  # rows of 2 adjacent chunks merge, the gap does not


def test_window_without_etags_is_verified(faulty_http):
    faulty_http.etags = "none"  # verifying readers: indexes read again afterwards
    data = _data()
    a = _sharded(faulty_http.root, "v.zarr", data)
    a[...] = data
    b = zarrdask.open_array(f"{faulty_http.url}/v.zarr", mode="r")
    faulty_http.reset()
    with zarrdask.config.set(coalesce_gap=0):
        np.testing.assert_array_equal(b[8:24, 8:24], data[8:24, 8:24])
    log = _data_log(faulty_http)
    assert len(log) == 4 + 8 + 4  # the indexes, the data, the indexes again


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_open_with_format_unknown(faulty_http, zarr_format):
    zarrdask.create_array(faulty_http.root / "o.zarr", shape=(4,), dtype="i1", zarr_format=zarr_format)
    faulty_http.reset()
    a = zarrdask.open_array(f"{faulty_http.url}/o.zarr", mode="r")
    assert a.shape == (4,)
    paths = [r.path.rsplit("/", 1)[-1] for r in faulty_http.log.requests]
    if zarr_format == 3:
        assert paths == ["zarr.json"]  # one request, one round trip
    else:  # v3 first, then the v2 documents
        assert paths[0] == "zarr.json" and sorted(paths[1:]) == [".zarray", ".zattrs", ".zgroup"]


def test_open_members_is_one_batch(http_server):
    name = f"g{uuid.uuid4().hex}.zarr"
    g = zarrdask.open_group(http_server.root / name, mode="w")
    names = [f"a{i:02d}" for i in range(30)]
    for n in names:
        g.create_array(n, shape=(3,), dtype="i2")
    g.create_group("sub")
    store = CountingStore(FsspecStore(f"{http_server.url}/{name}"))
    remote = zarrdask.open_group(store, mode="r")
    store.reset()
    found = remote.open_members([*names, "sub"])
    assert list(found) == [*names, "sub"] and found["a07"].shape == (3,)
    assert isinstance(found["sub"], zarrdask.Group)
    assert store.counts["get_many_calls"] == 1 and store.counts["keys_requested"] == 31
    with pytest.raises(zarrdask.errors.NodeNotFoundError, match="'nope'"):
        remote.open_members(["a00", "nope"])


def test_members_read_level_by_level(s3_bucket, s3_storage_options):
    url = f"s3://{s3_bucket}/tree.zarr"
    g = zarrdask.open_group(url, mode="w", storage_options=s3_storage_options)
    for i in range(3):
        sub = g.create_group(f"g{i}")
        for j in range(3):
            sub.create_group(f"h{j}").create_array("x", shape=(2,), dtype="u1")
    store = CountingStore(FsspecStore(url, storage_options=s3_storage_options))
    remote = zarrdask.open_group(store, mode="r")
    store.reset()
    members = remote.members(max_depth=None)
    assert len(members) == 3 + 9 + 9
    assert store.counts["get_many_calls"] == 3  # one batch of documents per level
    tree = remote.tree()
    assert tree.count("x (2,) uint8") == 9


def test_streamed_reads_and_writes_on_s3_count_and_retry(s3_proxy, s3_bucket):
    proxy, options = s3_proxy
    url = f"s3://{s3_bucket}/streamed.zarr"
    data = _data(64)
    with zarrdask.config.set(retry_backoff=0.01):
        a = zarrdask.create_array(url, shape=data.shape, dtype="f4", chunks=(8, 8), storage_options=options)
        proxy.reset()
        proxy.faults.fail_next(3, "503", methods=("PUT",))
        # 64 chunks of 256 bytes, more than one group: streamed uploads
        with zarrdask.config.set(io_concurrency=8):
            old = engine.GROUP_BYTES
            engine.GROUP_BYTES = 1024
            try:
                a[...] = data
            finally:
                engine.GROUP_BYTES = old
        assert proxy.log.count("PUT") == 64 + 3 and proxy.faults.pending == 0
        proxy.reset()
        proxy.faults.fail_next(2, "503", methods=("GET",))
        b = zarrdask.open_array(url, mode="r", storage_options=options)
        np.testing.assert_array_equal(b[...], data)
        assert proxy.log.count("GET") == 1 + 64 + 2


def test_sharded_write_and_window_on_s3(s3_proxy, s3_bucket):
    proxy, options = s3_proxy
    url = f"s3://{s3_bucket}/sharded.zarr"
    data = _data()
    a = zarrdask.create_array(url, shape=data.shape, dtype="f4", chunks=(4, 4), shards=(16, 16),
                              storage_options=options)
    proxy.reset()
    a[...] = data
    assert proxy.log.count("PUT") == 4
    b = zarrdask.open_array(url, mode="r", storage_options=options)
    proxy.reset()
    with zarrdask.config.set(coalesce_gap=0):
        np.testing.assert_array_equal(b[8:24, 8:24], data[8:24, 8:24])
    assert proxy.log.count("GET") == 4 + 8


def test_creating_an_array_on_s3_costs_three_probes_and_one_put(s3_proxy, s3_bucket):
    """Creating asks whether a node is there (zarr.json, .zarray, .zgroup: one
    concurrent batch; a v2 node's .zattrs says nothing about its existence) and
    writes zarr.json: the 256-chunk S3 write of benchmarks/remote.py costs
    256 + 3 + 1 requests, tensorstore's count."""
    proxy, options = s3_proxy
    proxy.reset()
    zarrdask.create_array(f"s3://{s3_bucket}/created.zarr", shape=(8,), dtype="f4", chunks=(4,),
                          storage_options=options)
    gets = [r.path for r in proxy.log.requests if r.method in ("GET", "HEAD")]
    assert sorted(p.rsplit("/", 1)[-1].split("?")[0] for p in gets) == [".zarray", ".zgroup", "zarr.json"]
    assert proxy.log.count("PUT") == 1


class _RacingStore(StreamingReads, BackgroundUploads, MemoryStore):
    """An in-memory store that behaves as a remote one with verifying readers,
    and replaces every shard right after the first read of a reader (an index)."""

    # not exact_readers: its readers are verifying
    capabilities = frozenset({STREAMING, BACKGROUND_UPLOADS})

    def __init__(self, replacement):
        super().__init__()
        self.replacement = replacement
        self.reads = 0

    def reader(self, key):
        store, reader = self, VerifyingReader(self, key)
        read = reader.read

        def read_then_replace(ranges):
            found = read(ranges)
            store.reads += 1
            if store.replacement is not None:
                values, store.replacement = store.replacement, None
                for k, v in values.items():
                    store.set(k, v)
            return found

        reader.read = read_then_replace
        return reader


def test_shard_reads_retry_a_replaced_shard():
    old, new = _data(), _data() * 0 + 5
    src = MemoryStore()
    _ = zarrdask.create_array(src, shape=old.shape, dtype="f4", chunks=(4, 4), shards=(16, 16), fill_value=0,
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a = zarrdask.open_array(src, mode="r+")
    a[...] = new
    replacement = {k: src.get(k) for k in src.list() if "/c/" in "/" + k}
    a[...] = old
    store = _RacingStore({k: v for k, v in replacement.items()})
    for k in src.list():
        store.set(k, src.get(k))
    b = zarrdask.open_array(store, mode="r")
    got = b[8:24, 8:24]
    # a shard changed between its index and its data: read again, all from the new version
    np.testing.assert_array_equal(got, new[8:24, 8:24])
    # 4 shards, two reads each (the index, then its inner chunks): more is a read started again
    assert store.reads > 4 * 2


def test_read_consistently_many_matches_per_key_reads():
    store = MemoryStore()
    data = _data()
    a = zarrdask.create_array(store, shape=data.shape, dtype="f4", chunks=(4, 4), shards=(16, 16), fill_value=0)
    a[...] = data
    codec = a.layout.codec
    spec = ChunkSpec((16, 16), np.dtype("f4"), 0.0)
    keys = ["c/0/0", "c/1/1", "c/9/9"]  # the last is missing
    from zarrdask.indexing import Indexer

    proj = next(iter(Indexer((slice(2, 6), slice(3, 9)), (16, 16), (16, 16))))
    found = consistent.read_consistently_many(store, keys, lambda i: codec.partial_steps(spec, proj, keys[i]))
    np.testing.assert_array_equal(found[0], data[2:6, 3:9])
    np.testing.assert_array_equal(found[1], data[18:22, 19:25])
    assert found[2] is None


class _HeldRangeStore(StreamingReads, MemoryStore):
    """An in-memory store that behaves as a remote one and holds back the
    answer of one byte range of one key until ``release`` is set (10 s at most)."""

    capabilities = frozenset({STREAMING})

    def __init__(self):
        super().__init__()
        self.held = None  # (key, offset)
        self.release = threading.Event()
        self.released_in_time = None

    def reader(self, key):
        store, reader = self, VerifyingReader(self, key)
        read = reader.read

        def read_held(ranges):
            found = read(ranges)
            if any((key, getattr(r, "offset", None)) == store.held for r in ranges):
                store.released_in_time = store.release.wait(10)
            return found

        reader.read = read_held
        return reader


def test_a_shards_inner_chunks_are_decoded_as_their_ranges_arrive(monkeypatch):
    from zarrdask.codecs.chain import CodecChain

    store = _HeldRangeStore()
    data = _data()
    a = zarrdask.create_array(store, shape=data.shape, dtype="f4", chunks=(4, 4), shards=(16, 16), fill_value=0,
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a[...] = data
    # rows 0:20 of column 0:4: shard c/0/0's inner chunks 0, 4, 8 and 12 (four ranges: not adjacent), and
    # shard c/1/0's inner chunk 0. The range of inner chunk 12 is held back until another is decoded.
    raw = store.get("c/0/0")
    index = np.frombuffer(raw[-(16 * 16 + 4) : -4], dtype="<u8").reshape(16, 2)
    store.held = ("c/0/0", int(index[12, 0]))
    decoded = []
    decode_into = CodecChain.decode_into

    def spy(self, data, spec, out, key=""):
        decode_into(self, data, spec, out, key)
        decoded.append(key)
        if key == "c/0/0":
            store.release.set()

    monkeypatch.setattr(CodecChain, "decode_into", spy)
    b = zarrdask.open_array(store, mode="r")
    with zarrdask.config.set(coalesce_gap=0):
        np.testing.assert_array_equal(b[0:20, 0:4], data[0:20, 0:4])
    # the held range came once an inner chunk of its shard had been decoded from the others
    assert store.released_in_time is True
    assert decoded.count("c/0/0") == 4 and decoded.count("c/1/0") == 1
