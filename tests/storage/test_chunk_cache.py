"""The chunk cache (zarrdask.storage.cache, zarrdask.storage.caching): LRU within a
byte budget, thread safety, read-after-write, revalidation, request counts on S3."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import zarrdask
from zarrdask import config
from zarrdask.storage import CountingStore, LocalStore, MemoryStore
from zarrdask.storage.byte_range import RangeRequest, SuffixRequest
from zarrdask.storage.cache import ENTRY_OVERHEAD, ChunkCache, chunk_cache
from zarrdask.storage.caching import CachingStore

from ..cli._util import subprocess_env


@pytest.fixture(autouse=True)
def _empty_cache():
    chunk_cache().clear()
    yield
    chunk_cache().clear()


# -- ChunkCache -----------------------------------------------------------------------
def test_least_recently_used_goes_first_and_the_budget_holds():
    cache = ChunkCache(max_bytes=3 * (100 + ENTRY_OVERHEAD))
    for k in "abc":
        cache.put("w", k, bytes(100))
    assert cache.get("w", "a") is not None  # a is now the most recent
    cache.put("w", "d", bytes(100))
    assert cache.get("w", "b") is None and cache.get("w", "a") is not None
    assert cache.nbytes <= cache.max_bytes and len(cache) == 3
    cache.put("w", "big", bytes(10_000))  # larger than the budget: not kept
    assert cache.get("w", "big") is None and cache.nbytes <= cache.max_bytes


def test_values_are_kept_as_their_own_bytes():
    cache = ChunkCache(max_bytes=1 << 20)
    big = bytearray(100_000)
    cache.put("w", "k", memoryview(big)[:10])
    entry = cache.get("w", "k")
    assert type(entry.data) is bytes and len(entry.data) == 10
    assert cache.nbytes == 10 + ENTRY_OVERHEAD


def test_ranges_are_served_from_containing_ranges_of_one_read():
    cache = ChunkCache(max_bytes=1 << 20)
    cache.put_range("w", "k", RangeRequest(10, 20), bytes(range(10, 30)), "v1", "v1")
    cache.put_range("w", "k", SuffixRequest(8), b"S" * 8, "v1", "v1")
    assert cache.get_range("w", "k", RangeRequest(12, 5)).data == bytes(range(12, 17))
    assert cache.get_range("w", "k", SuffixRequest(4)).data == b"SSSS"
    assert cache.get_range("w", "k", RangeRequest(25, 10)) is None
    cache.put_range("w", "k", RangeRequest(0, 4), b"new!", "v2", "v2")  # another version: the old parts go
    assert cache.get_range("w", "k", SuffixRequest(4)) is None
    cache.put("w", "k", b"0123456789")  # a whole value serves every range
    assert cache.get_range("w", "k", RangeRequest(2, 3)).data == b"234"


def test_invalidation_drops_every_part_of_a_key_and_prefixes():
    cache = ChunkCache(max_bytes=1 << 20)
    cache.put_range("w", "a/k", RangeRequest(0, 4), b"abcd", None, 1)
    cache.put("w", "a/j", b"x")
    cache.put("w", "b/j", b"y")
    cache.invalidate("w", ["a/k"])
    assert cache.get_range("w", "a/k", RangeRequest(0, 2)) is None
    cache.invalidate_prefix("w", "a/")
    assert cache.get("w", "a/j") is None and cache.get("w", "b/j") is not None


def test_a_value_read_before_an_invalidation_is_not_kept_after_it():
    cache = ChunkCache(max_bytes=1 << 20)
    since = cache.epoch
    cache.invalidate("w", ["k"])  # a write happened while the value was being read
    cache.put("w", "k", b"old", since=since)
    assert cache.get("w", "k") is None


def test_thread_safety_under_concurrent_get_put_invalidate():
    cache = ChunkCache(max_bytes=50 * (64 + ENTRY_OVERHEAD))
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(3000):
                k = f"k{rng.integers(200)}"
                op = rng.integers(4)
                if op == 0:
                    cache.put("w", k, bytes(64))
                elif op == 1:
                    cache.put_range("w", k, RangeRequest(0, 8), bytes(8), None, 1)
                elif op == 2:
                    e = cache.get("w", k)
                    assert e is None or len(e.data) == 64
                else:
                    cache.invalidate("w", [k])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert 0 <= cache.nbytes <= cache.max_bytes
    assert cache.nbytes == sum(len(e.data) + ENTRY_OVERHEAD for e in cache._entries.values())


def test_settings():
    with config.set(cache_bytes="2MiB", cache="revalidate"):
        assert config.get("cache_bytes") == 2 << 20 and config.get("cache") == "revalidate"
    with pytest.raises(ValueError, match="cache_bytes"):
        config.set(cache_bytes=-1)
    with pytest.raises(ValueError, match="'cache'"):
        config.set(cache="sometimes")


# -- arrays through the cache ------------------------------------------------------------
def _array(store, **kw):
    a = zarrdask.create_array(store, shape=(64, 64), chunks=(8, 8), dtype="f8", **kw)
    a[...] = np.arange(64 * 64, dtype="f8").reshape(64, 64)
    return a


@pytest.mark.parametrize("shards", [None, (32, 32)])
def test_a_second_read_costs_no_request_and_a_write_is_seen(tmp_path, shards):
    counting = CountingStore(LocalStore(tmp_path))
    _array(counting, shards=shards)
    a = zarrdask.open_array(counting, mode="r+", cache=True)
    first = a[5:30, 3:40]
    counting.reset()
    assert np.array_equal(a[5:30, 3:40], first)
    assert counting.counts["keys_requested"] == 0 and counting.counts["get_ranges_calls"] == 0
    a[10:12, 10:12] = -1  # read-modify-write through the engine: the cache drops what it changed
    b = zarrdask.open_array(LocalStore(tmp_path), mode="r+")  # another store object over the same data
    b[20, 20] = -2
    got = a[5:30, 3:40]
    assert (got[5:7, 7:9] == -1).all() and got[15, 17] == -2


def test_the_setting_turns_it_on_and_off(tmp_path):
    counting = CountingStore(LocalStore(tmp_path))
    _array(counting)
    a = zarrdask.open_array(counting, mode="r")
    with config.set(cache=True):
        a[:16, :16]
        counting.reset()
        a[:16, :16]
        assert counting.counts["keys_requested"] == 0
        with config.set(cache_bytes=0):
            a[:16, :16]
            assert counting.counts["keys_requested"] == 4
    counting.reset()
    a[:16, :16]
    assert counting.counts["keys_requested"] == 4


def test_threads_writing_disjoint_regions_then_reading_all(tmp_path):
    a = zarrdask.create_array(LocalStore(tmp_path), shape=(80, 80), chunks=(10, 10), dtype="i4", cache=True)
    a[...]  # everything cached (all fill value: nothing stored, nothing kept)
    a[...] = 0
    a[...]  # now every chunk is cached

    def work(i):
        for _ in range(5):
            a[i * 10 + 3 : i * 10 + 8, :] = i + 1  # partial chunks: read-modify-write
            assert (a[i * 10 + 3 : i * 10 + 8, :] == i + 1).all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = a[...]
    for i in range(8):
        assert (got[i * 10 + 3 : i * 10 + 8] == i + 1).all() and (got[i * 10 : i * 10 + 3] == 0).all()


_WRITER = """
import sys, numpy as np, zarrdask
a = zarrdask.open_array(sys.argv[1], mode="r+")
a[0:8, 0:8] = 123.0
"""


def test_another_process_s_write_is_seen_only_when_revalidating(tmp_path):
    _array(LocalStore(tmp_path))
    plain = zarrdask.open_array(LocalStore(tmp_path), mode="r", cache=True)
    checked = zarrdask.open_array(LocalStore(tmp_path), mode="r", cache="revalidate")
    assert plain[0, 0] == 0 and checked[0, 0] == 0
    subprocess.run([sys.executable, "-c", _WRITER, str(tmp_path)], check=True, env=subprocess_env())
    assert plain[0, 0] == 0  # served from the cache, as documented
    assert checked[0, 0] == 123.0  # the file changed: its version too
    assert plain[0, 0] == 123.0  # one cache for the process: the revalidated entry replaced the old one


def test_revalidation_asks_without_reading_unchanged_local_files(tmp_path):
    _array(LocalStore(tmp_path))
    counting = CountingStore(LocalStore(tmp_path))
    a = zarrdask.open_array(counting, mode="r", cache="revalidate")
    a[:16, :16]
    counting.reset()
    a[:16, :16]
    assert counting.counts["bytes_read"] == 0 and counting.counts["get_many_calls"] == 1


def test_caching_store_writes_drop_entries_and_pickle_without_the_cache():
    import pickle

    store = CachingStore(MemoryStore({"k": b"1"}))
    assert store.get("k") == b"1"
    store.set("k", b"2")
    assert store.get("k") == b"2"
    store.delete_many(["k"])
    assert store.get("k") is None
    again = pickle.loads(pickle.dumps(store))
    assert again.mode is True and again.cache is chunk_cache()


# -- memory: the process's peak RSS under a random access pattern ----------------------------
_MEMORY = """
import sys, numpy as np, zarrdask
from zarrdask import config
import importlib.util
spec = importlib.util.spec_from_file_location("_rss", sys.argv[2])  # benchmarks/_rss.py, the RSS helper
rss = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rss)
budget = 16 << 20
config.set(cache_bytes=budget, threads=1)
a = zarrdask.open_array(sys.argv[1], mode="r", cache=True)
rng = np.random.default_rng(0)
def window():
    y, x = rng.integers(0, a.shape[0] - 64), rng.integers(0, a.shape[1] - 64)
    a[y:y + 64, x:x + 64]
for _ in range(50):  # warm up: pools, code paths
    window()
from zarrdask.storage.cache import chunk_cache
chunk_cache().clear()
base = rss.reset_peak()
for _ in range(4000):
    window()
print((rss.read_peak() - base) * 1024, budget, chunk_cache().nbytes)
"""


def test_memory_stays_within_the_budget_under_random_access(tmp_path):
    # 160 MiB stored (random: does not compress), ten times the 16 MiB budget
    a = zarrdask.create_array(LocalStore(tmp_path), shape=(4096, 5120), chunks=(64, 64), dtype="f8",
                              compressors=None)
    rng = np.random.default_rng(1)
    for i in range(0, 4096, 512):
        a[i : i + 512] = rng.random((512, 5120))
    from pathlib import Path

    helper = str(Path(__file__).resolve().parents[2] / "benchmarks" / "_rss.py")
    out = subprocess.run([sys.executable, "-c", _MEMORY, str(tmp_path), helper], check=True,
                         capture_output=True, text=True, env=subprocess_env()).stdout.split()
    grown, budget, held = map(int, out)
    print("rss growth", grown, "budget", budget, "held", held)
    assert held <= budget
    assert grown <= budget + (8 << 20), f"peak RSS grew by {grown:,} bytes for a budget of {budget:,}"


def test_a_shard_read_mixing_cached_and_new_ranges_is_one_read(tmp_path):
    counting = CountingStore(LocalStore(tmp_path))  # its readers forward the version: cached ranges combine
    _array(counting, shards=(32, 32))
    a = zarrdask.open_array(counting, mode="r", cache=True)
    a[0:4, 0:4]  # the shard's index and one inner chunk
    counting.reset()
    np.testing.assert_array_equal(a[0:4, 8:12], np.arange(64 * 64, dtype="f8").reshape(64, 64)[0:4, 8:12])
    assert counting.counts["readers_opened"] == 1 and counting.counts["get_ranges_calls"] == 1
    assert counting.counts["ranges_requested"] == 1  # the index came from the cache
