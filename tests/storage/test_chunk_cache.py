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


# -- pieces: a range served from the cached ranges that cover parts of it, only the gaps fetched ----
def test_pieces_plan_the_gaps_and_assemble_the_ranges():
    from zarrdask.storage.byte_range import OffsetRequest
    from zarrdask.storage.cache import Cached
    from zarrdask.storage.pieces import plan

    value = bytes(range(200))
    held = [(("range", 10, 30), Cached(value[10:30], "v", "v")), (("range", 50, 60), Cached(value[50:60], "v", "v"))]
    step = plan([RangeRequest(0, 40), RangeRequest(55, 20), RangeRequest(12, 5)], held, max_gap=0)
    assert step.covered
    assert step.fetch == [RangeRequest(0, 10), RangeRequest(30, 10), RangeRequest(60, 15)]
    out, used, kept = step.answer([value[0:10], value[30:40], value[60:75]])
    assert out == [value[0:40], value[55:75], value[12:17]]
    assert sorted(used) == [("range", 10, 30), ("range", 50, 60)] and len(kept) == 3
    # gaps closer than max_gap are fetched as one request
    assert plan([RangeRequest(0, 40)], held, max_gap=100).fetch == [RangeRequest(0, 40)]
    # everything covered: nothing to fetch
    assert plan([RangeRequest(52, 4)], held, max_gap=0).fetch == []
    # a suffix: placed once the size is known (a range clipped at the end reveals it), else fetched as it is
    assert plan([SuffixRequest(8)], held, max_gap=0).fetch == [SuffixRequest(8)]
    ended = held + [(("range", 190, 220), Cached(value[190:], "v", "v"))]
    step = plan([SuffixRequest(8), OffsetRequest(195)], ended, max_gap=0)
    assert step.fetch == []
    assert step.answer([])[0] == [value[-8:], value[195:]]
    # a suffix cached as such serves the same request without the size
    same = [(("suffix", 16), Cached(value[-16:], "v", "v"))]
    assert plan([SuffixRequest(8)], same, max_gap=0).answer([])[0] == [value[-8:]]
    # a range past the end: the fetched gap comes back clipped, the range ends there
    step = plan([RangeRequest(50, 500)], [(("range", 50, 60), Cached(value[50:60], "v", "v"))], max_gap=0)
    assert step.fetch == [RangeRequest(60, 490)]
    assert step.answer([value[60:]])[0] == [value[50:]]


def test_ranges_of_lists_a_key_s_parts_and_touch_marks_them_used():
    cache = ChunkCache(max_bytes=3 * (10 + ENTRY_OVERHEAD))
    cache.put_range("w", "k", RangeRequest(0, 10), bytes(10), "v", "v")
    cache.put_range("w", "k", RangeRequest(20, 10), bytes(10), "v", "v")
    cache.put("w", "j", bytes(10))
    assert sorted(p for p, _ in cache.ranges_of("w", "k")) == [("range", 0, 10), ("range", 20, 30)]
    assert cache.ranges_of("w", "nothing") == []
    hits = cache.hits
    cache.touch("w", "k", [("range", 0, 10)], misses=2)
    assert cache.hits == hits + 1 and cache.misses >= 2
    cache.put("w", "i", bytes(10))  # the least recently used goes: ("range", 20, 30), not the touched one
    assert [p for p, _ in cache.ranges_of("w", "k")] == [("range", 0, 10)]


class _SpanLog(CountingStore):
    """A CountingStore whose readers also log the byte spans they read: ``(key, start, stop)``."""

    def reset(self):
        super().reset()
        self.spans = []

    def reader(self, key):
        from zarrdask.storage.wrappers import ForwardingReader

        def on_read(ranges, found):
            self._add(get_ranges_calls=1, ranges_requested=len(ranges), bytes_read=sum(map(len, found or [])))
            for request, data in zip(ranges, found or []):
                start = request.offset if isinstance(request, RangeRequest) else -len(data)  # a suffix: from the end
                self.spans.append((key, start, start + len(data)))

        return ForwardingReader(self, key, self.store.reader(key), on_read)


def _union(spans):
    """``{key: set of byte offsets}`` of ``(key, start, stop)`` spans (small arrays only)."""
    out = {}
    for key, start, stop in spans:
        out.setdefault(key, set()).update(range(start, stop))
    return out


def _new_bytes(now, before):
    return sum(len(offsets - before.get(key, set())) for key, offsets in now.items())


_WINDOWS = [(slice(10 + 6 * i, 70 + 6 * i), slice(10 + 6 * i, 70 + 6 * i)) for i in range(8)]


def _sharded(tmp_path):
    data = np.random.default_rng(3).random((128, 128))  # does not compress: inner chunks of 512 bytes
    zarrdask.create_array(LocalStore(tmp_path), shape=data.shape, chunks=(8, 8), shards=(64, 64), dtype="f8",
                          compressors=None)[...] = data
    return data


@pytest.mark.parametrize("gap", [0, None])
def test_overlapping_windows_of_a_sharded_array_fetch_only_what_is_new(tmp_path, gap):
    data = _sharded(tmp_path)
    runs = {}
    with config.set(**({} if gap is None else {"coalesce_gap": gap})):
        for cache in (False, True):
            chunk_cache().clear()
            store = _SpanLog(LocalStore(tmp_path))
            a = zarrdask.open_array(store, mode="r", cache=cache)
            runs[cache] = []
            for w in _WINDOWS:
                store.reset()
                np.testing.assert_array_equal(a[w], data[w])
                runs[cache].append((store.counts, store.spans))
    seen = {}
    for (off, off_spans), (on, on_spans) in zip(runs[False], runs[True]):
        now = _union(off_spans)
        assert on["bytes_read"] <= off["bytes_read"] and on["ranges_requested"] <= off["ranges_requested"]
        if gap == 0 and seen:  # only the bytes no earlier window read (nothing merged across cached bytes)
            assert on["bytes_read"] <= _new_bytes(now, seen)
        for key, offsets in now.items():
            seen.setdefault(key, set()).update(offsets)
    requests = {cache: sum(c["ranges_requested"] for c, _ in run) for cache, run in runs.items()}
    fetched = {cache: sum(c["bytes_read"] for c, _ in run) for cache, run in runs.items()}
    assert requests[True] < requests[False] / 2 and fetched[True] < fetched[False] / 2, (requests, fetched)


def test_a_caching_reader_joins_cached_pieces_only_to_the_same_version(tmp_path):
    value = bytes(range(256)) * 4
    LocalStore(tmp_path).set("k", value)
    counting = CountingStore(LocalStore(tmp_path))
    store = CachingStore(counting)
    with store.reader("k") as r:
        assert r.read([RangeRequest(0, 100)]) == [value[:100]]
    counting.reset()
    with store.reader("k") as r:  # the same version: only bytes 100..150 are fetched
        assert r.read([RangeRequest(50, 100)]) == [value[50:150]]
        assert r.read([RangeRequest(120, 60)]) == [value[120:180]]
    assert counting.counts["bytes_read"] == 80 and counting.counts["ranges_requested"] == 2
    new = bytes(255 - b for b in value)
    LocalStore(tmp_path).set("k", new)  # bypassing the cache: only the version tells
    counting.reset()
    with store.reader("k") as r:  # the gap's version differs: the cached pieces go, the whole range is read anew
        assert r.read([RangeRequest(150, 100)]) == [new[150:250]]
        assert r.read([RangeRequest(0, 50)]) == [new[:50]]
    assert all(entry.data == new[p[1]:p[2]] for p, entry in store.cache.ranges_of(*store._where("k")))


@pytest.mark.parametrize("mode", [True, "revalidate"])
def test_a_shard_rewritten_between_windows_is_never_mixed_with_its_old_pieces(tmp_path, mode):
    data = _sharded(tmp_path)
    a = zarrdask.open_array(LocalStore(tmp_path), mode="r", cache=mode)
    np.testing.assert_array_equal(a[_WINDOWS[0]], data[_WINDOWS[0]])
    other = tmp_path.parent / (tmp_path.name + "-new")
    new = _sharded(other) * 0 - 1.0
    zarrdask.open_array(LocalStore(other), mode="r+")[...] = new
    for key in ("c/0/0", "c/0/1", "c/1/0", "c/1/1"):  # the shards replaced behind the cache's back
        LocalStore(tmp_path).set(key, LocalStore(other).get(key))
    news = 0
    for w in _WINDOWS[1:]:
        got = a[w]
        news += int((got == -1).sum())
        if mode == "revalidate":
            np.testing.assert_array_equal(got, new[w])
        for sy in (slice(0, 64), slice(64, 128)):  # each shard's part: all old or all new, never both
            for sx in (slice(0, 64), slice(64, 128)):
                part = np.zeros((128, 128), bool)
                part[sy, sx] = True
                inside = got[part[w]]
                assert (inside == data[w][part[w]]).all() or (inside == new[w][part[w]]).all()
    assert news  # cache=True: the reads that needed new pieces found the new version and started again


def test_threads_reading_overlapping_windows_of_a_sharded_array(tmp_path):
    data = _sharded(tmp_path)
    a = zarrdask.open_array(LocalStore(tmp_path), mode="r", cache=True)
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(40):
                y, x = rng.integers(0, 80, 2)
                h, w = rng.integers(1, 48, 2)
                np.testing.assert_array_equal(a[y:y + h, x:x + w], data[y:y + h, x:x + w])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    for budget in (1 << 20, 24 * (512 + ENTRY_OVERHEAD)):  # everything kept; pieces evicted while being read
        chunk_cache().clear()
        with config.set(cache_bytes=budget):
            threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert not errors, errors[0]
        assert chunk_cache().nbytes <= budget
