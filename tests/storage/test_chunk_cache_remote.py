"""The chunk cache on S3 (the moto server behind the logging proxy), with
FsspecStore (s3fs) and ObstoreStore: requests counted from the server's log;
and on a cluster of processes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import zarrdask
from zarrdask.storage import FsspecStore, MemoryStore, ObstoreStore
from zarrdask.storage.cache import chunk_cache

from ..cli._util import subprocess_env

pytestmark = pytest.mark.network


@pytest.fixture(autouse=True)
def _empty_cache():
    chunk_cache().clear()
    yield
    chunk_cache().clear()


@pytest.fixture(params=["fsspec", "obstore"])
def remote(request, s3_proxy, s3_bucket):
    """``(proxy, make)``: ``make()`` a new store object over one S3 prefix, through the proxy."""
    proxy, options = s3_proxy
    if request.param == "fsspec":
        url = f"s3://{s3_bucket}/data.zarr"
        return proxy, url, options, lambda: FsspecStore(url, storage_options=options)
    pytest.importorskip("obstore")
    from .test_obstore import s3_store

    return proxy, None, None, lambda: ObstoreStore(s3_store(proxy.url, s3_bucket, prefix="data.zarr"))


def _data():
    return np.arange(96 * 96, dtype="f8").reshape(96, 96)


@pytest.mark.parametrize("shards", [None, (48, 48)])
def test_a_second_read_of_a_window_costs_no_request(remote, shards):
    proxy, _, _, make = remote
    zarrdask.create_array(make(), shape=(96, 96), chunks=(16, 16), shards=shards, dtype="f8")[...] = _data()
    a = zarrdask.open_array(make(), mode="r", cache=True)
    first = a[10:70, 5:60]
    np.testing.assert_array_equal(first, _data()[10:70, 5:60])
    proxy.log.clear()
    np.testing.assert_array_equal(a[10:70, 5:60], first)
    assert proxy.log.requests == []
    np.testing.assert_array_equal(a[20:40, 20:40], _data()[20:40, 20:40])  # inside the first window
    assert proxy.log.requests == []


@pytest.mark.parametrize("shards", [None, (48, 48)])
def test_revalidation_costs_only_conditional_requests_answered_not_modified(remote, shards):
    proxy, _, _, make = remote
    zarrdask.create_array(make(), shape=(96, 96), chunks=(16, 16), shards=shards, dtype="f8")[...] = _data()
    a = zarrdask.open_array(make(), mode="r", cache="revalidate")
    a[10:70, 5:60]
    proxy.log.clear()
    np.testing.assert_array_equal(a[10:70, 5:60], _data()[10:70, 5:60])
    requests = proxy.log.requests
    assert requests and all(r.if_none_match is not None and r.status == 304 for r in requests), \
        [(r.method, r.path, r.if_none_match, r.status) for r in requests]
    stored = 5 * 4 if shards is None else 2 * 2  # one per chunk, or per shard (its ranges: one version)
    assert len(requests) == stored


_WRITER = """
import sys, zarrdask
from zarrdask.storage import FsspecStore
import json
a = zarrdask.open_array(FsspecStore(sys.argv[1], storage_options=json.loads(sys.argv[2])), mode="r+")
a[0:16, 0:16] = -7.0
"""


def test_a_write_by_another_process_is_seen_when_revalidating(remote):
    proxy, url, options, make = remote
    if url is None:
        pytest.skip("the writing process uses s3fs")
    import json

    zarrdask.create_array(make(), shape=(96, 96), chunks=(16, 16), shards=(48, 48), dtype="f8")[...] = _data()
    plain = zarrdask.open_array(make(), mode="r", cache=True)
    checked = zarrdask.open_array(make(), mode="r", cache="revalidate")
    assert plain[1, 1] == checked[1, 1] == _data()[1, 1]
    subprocess.run([sys.executable, "-c", _WRITER, url, json.dumps(options)], check=True, env=subprocess_env())
    assert plain[1, 1] == _data()[1, 1]  # the cached value, as documented
    assert checked[1, 1] == -7.0


@pytest.mark.slow
def test_written_on_a_cluster_of_processes_then_read_in_the_client_and_workers(s3_endpoint, s3_bucket,
                                                                                s3_storage_options):
    distributed = pytest.importorskip("distributed")
    import dask.array as da

    url = f"s3://{s3_bucket}/cluster.zarr"
    store = FsspecStore(url, storage_options=s3_storage_options)
    data = _data()
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    with cluster, distributed.Client(cluster) as client:
        zarrdask.to_zarr(da.from_array(np.zeros_like(data), chunks=(48, 48)), store, chunks=(16, 16))
        a = zarrdask.open_array(store, mode="r", cache=True)
        assert (a[...] == 0).all()  # the client's cache holds zeros
        assert float(zarrdask.from_zarr(store, cache=True).sum().compute()) == 0  # and the workers' caches
        zarrdask.to_zarr(da.from_array(data, chunks=(48, 48)), store, mode="r+")  # written by the workers
        np.testing.assert_array_equal(a[...], data)  # the client's to_zarr dropped its cached chunks
        back = zarrdask.from_zarr(store, cache=True).compute()
        np.testing.assert_array_equal(back, data)  # the workers wrote: their caches dropped what they wrote
        held = client.run(lambda: len(__import__("zarrdask.storage.cache").storage.cache.chunk_cache()))
        assert all(n > 0 for n in held.values())  # each worker process has a cache of its own


# -- overlapping windows of a sharded array: only the byte spans not fetched before ----------------
_WINDOWS = [(slice(10 + 6 * i, 70 + 6 * i), slice(10 + 6 * i, 70 + 6 * i)) for i in range(6)]


def _ranged(requests):
    """``(path, start, stop)`` of the ranged GETs with an explicit start (the inner chunks), and
    the body bytes of all of them."""
    spans = []
    for r in requests:
        if r.method == "GET" and r.range and r.range.startswith("bytes=") and not r.range.startswith("bytes=-"):
            start, _, stop = r.range[len("bytes="):].partition("-")
            spans.append((r.path.split("?")[0], int(start), int(stop) + 1 if stop else None))
    return spans, sum(r.bytes_sent for r in requests)


def _random_sharded(make):
    data = np.random.default_rng(5).random((128, 128))  # inner chunks of 512 bytes, stored as they are
    zarrdask.create_array(make(), shape=data.shape, chunks=(8, 8), shards=(64, 64), dtype="f8",
                          compressors=None)[...] = data
    return data


def test_overlapping_windows_of_a_sharded_array_fetch_only_the_new_spans(remote):
    from zarrdask import config

    proxy, _, _, make = remote
    data = _random_sharded(make)
    runs = {}
    with config.set(coalesce_gap=0):  # nothing merged across bytes fetched before
        for cache in (False, True):
            chunk_cache().clear()
            a = zarrdask.open_array(make(), mode="r", cache=cache)
            runs[cache] = []
            for w in _WINDOWS:
                proxy.log.clear()
                np.testing.assert_array_equal(a[w], data[w])
                runs[cache].append(proxy.log.requests)
    seen: dict = {}
    for i, (off, on) in enumerate(zip(runs[False], runs[True])):
        off_spans, _ = _ranged(off)
        on_spans, _ = _ranged(on)
        new = 0
        for path, start, stop in off_spans:
            offsets = set(range(start, stop)) - seen.get(path, set())
            new += len(offsets)
            seen.setdefault(path, set()).update(offsets)
        if i:  # the index and every span read before come from the cache
            assert sum(stop - start for _, start, stop in on_spans) <= new, (on_spans, new)
            assert all(r.range and not r.range.startswith("bytes=-") for r in on), "an index read again"
    assert sum(map(len, runs[True])) < sum(map(len, runs[False])) / 2


def test_a_sharded_window_after_a_write_bypassing_the_cache_is_all_new_when_revalidating(remote):
    proxy, _, _, make = remote
    data = _random_sharded(make)
    a = zarrdask.open_array(make(), mode="r", cache="revalidate")
    np.testing.assert_array_equal(a[_WINDOWS[0]], data[_WINDOWS[0]])
    new = -data
    writer = zarrdask.create_array(MemoryStore(), shape=data.shape, chunks=(8, 8), shards=(64, 64), dtype="f8",
                                   compressors=None)
    writer[...] = new
    raw = make()  # a plain store object: its set() does not tell the cache
    for key in ("c/0/0", "c/0/1", "c/1/0", "c/1/1"):
        raw.set(key, writer.store.get(key))
    for w in _WINDOWS[1:]:
        np.testing.assert_array_equal(a[w], new[w])
