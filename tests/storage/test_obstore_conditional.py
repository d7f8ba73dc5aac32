"""Read-modify-writes through conditional writes (capability
``conditional_writes``): a chunk written in part is stored only if it is
still the version read, so writers the in-process locks cannot see (other
processes, other machines; here zarr-python, or another process) lose no
update. Against obstore's MemoryStore and the moto S3 server."""

from __future__ import annotations

import multiprocessing
import uuid

import numpy as np
import pytest

import zarrdask
from zarrdask.core import engine
from zarrdask.errors import ValueChangedError
from zarrdask.storage import CountingStore, ObstoreStore, PrefixStore

from .test_obstore import s3_store

obstore = pytest.importorskip("obstore")
from obstore.store import MemoryStore


class Interfered(ObstoreStore):
    """Runs the next of ``interfere`` right after each versioned read: another
    writer changing the chunk between our read and our write."""

    def __init__(self, inner, interfere):
        super().__init__(inner)
        self.interfere = list(interfere)
        self.reads = 0

    def get_versioned(self, keys):
        found = super().get_versioned(keys)
        self.reads += 1
        if self.interfere:
            self.interfere.pop(0)()
        return found


def _sharded(store, fill=0):
    return zarrdask.create_array(store, shape=(16, 16), dtype="i4", chunks=(4, 4), shards=(8, 8), fill_value=fill)


@pytest.fixture(params=["memory", pytest.param("s3", marks=pytest.mark.network)])
def inner(request):
    if request.param == "memory":
        return MemoryStore()
    return s3_store(request.getfixturevalue("s3_endpoint"), request.getfixturevalue("s3_bucket"))


def test_an_update_made_meanwhile_is_kept(inner):
    zarr = pytest.importorskip("zarr")
    _sharded(inner)[...] = 1
    theirs = zarr.open_array(zarr.storage.ObjectStore(inner), mode="r+")

    def other_writer():
        theirs[0:2, 0:2] = 7  # the same shard as ours, another part of it, without our locks

    store = Interfered(inner, [other_writer])
    zarrdask.open_array(store, mode="r+")[5:7, 5:7] = 3
    expected = np.ones((16, 16), dtype="i4")
    expected[0:2, 0:2] = 7
    expected[5:7, 5:7] = 3
    np.testing.assert_array_equal(zarrdask.open_array(inner, mode="r")[...], expected)
    assert store.reads == 2  # the shard was read again after the other write


def test_a_chunk_that_keeps_changing_gives_up_and_stores_nothing(monkeypatch):
    inner = MemoryStore()
    _sharded(inner)[...] = 1
    before = bytes(obstore.get(inner, "c/0/0").bytes())

    def rewrite():  # the same bytes, but a new version each time
        obstore.put(inner, "c/0/0", before)

    monkeypatch.setattr(engine, "CONFLICT_ROUNDS", 3)
    store = Interfered(inner, [rewrite] * 10)
    with pytest.raises(ValueChangedError, match=r"'c/0/0'.*3 read-modify-writes") as info:
        zarrdask.open_array(store, mode="r+")[1, 1] = 5
    assert info.value.key == "c/0/0"
    assert store.reads == 4
    assert bytes(obstore.get(inner, "c/0/0").bytes()) == before


def test_a_shard_emptied_in_part_is_stored_not_deleted():
    inner = MemoryStore()
    a = _sharded(inner, fill=0)
    a[0:2, 0:2] = 1
    store = ObstoreStore(inner)
    zarrdask.open_array(store, mode="r+")[0:2, 0:2] = 0  # all fill value again, by a partial write
    assert store.get("c/0/0") is not None  # a delete cannot be made conditional
    np.testing.assert_array_equal(zarrdask.open_array(store, mode="r")[...], np.zeros((16, 16), "i4"))
    zarrdask.open_array(store, mode="r+")[0:8, 0:8] = 0  # the whole shard: deleted as usual
    assert store.get("c/0/0") is None


def test_missing_chunks_written_in_part_are_created_conditionally():
    inner = MemoryStore()
    _sharded(inner)
    store = CountingStore(PrefixStore(ObstoreStore(inner), ""))  # wrappers pass the capability on
    assert "conditional_writes" in store.capabilities
    zarrdask.open_array(store, mode="r+")[1:3, 1:3] = 4
    assert store.counts["keys_written"] == 1
    got = zarrdask.open_array(inner, mode="r")[...]
    assert got[1:3, 1:3].tolist() == [[4, 4], [4, 4]] and got.sum() == 16


@pytest.mark.network
def test_partial_writes_put_with_if_match(s3_endpoint, s3_bucket):
    from zarrdask.testing.servers import serve_proxy

    with serve_proxy(s3_endpoint) as proxy:
        inner = s3_store(proxy.url, s3_bucket)
        _sharded(inner)[...] = 1
        proxy.log.clear()
        zarrdask.open_array(inner, mode="r+")[1, 1] = 2
        puts = [r for r in proxy.log.requests if r.method == "PUT"]
        gets = [r for r in proxy.log.requests if r.method == "GET" and r.path.endswith("/c/0/0")]
        assert len(puts) == 1 and puts[0].path.endswith("/c/0/0")
        assert puts[0].if_match is not None
        assert len(gets) == 1 and gets[0].range is None


def _write_rows(endpoint, bucket, rows):
    store = ObstoreStore(s3_store(endpoint, bucket))
    a = zarrdask.open_array(store, mode="r+")
    for row in rows:
        a[row, :] = row + 1  # every write touches both shards of the row band


@pytest.mark.slow
@pytest.mark.network
def test_processes_writing_one_shard_lose_no_update(s3_endpoint, s3_bucket):
    _sharded(ObstoreStore(s3_store(s3_endpoint, s3_bucket)))
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_rows, args=(s3_endpoint, s3_bucket, rows)) for rows in ([0, 2, 4, 6], [1, 3, 5, 7])]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    got = zarrdask.open_array(ObstoreStore(s3_store(s3_endpoint, s3_bucket)), mode="r")[0:8, :]
    np.testing.assert_array_equal(got, np.repeat(np.arange(1, 9, dtype="i4")[:, None], 16, axis=1))


@pytest.mark.network
def test_the_test_s3_servers_conditional_puts_are_atomic(s3_endpoint, s3_bucket, monkeypatch):
    # moto looks the key up, then stores: with a lookup slow enough for all of them to pass it,
    # eight racing creates of one key must still leave exactly one winner (what the writers'
    # tests above take for granted, as S3 guarantees it)
    import time
    from concurrent.futures import ThreadPoolExecutor

    from moto.s3.models import S3Backend

    get_object = S3Backend.get_object

    def slow_get_object(self, *args, **kwargs):
        found = get_object(self, *args, **kwargs)
        time.sleep(0.05)
        return found

    monkeypatch.setattr(S3Backend, "get_object", slow_get_object)
    store = s3_store(s3_endpoint, s3_bucket)
    key = f"race-{uuid.uuid4().hex}"

    def create(i):
        try:
            obstore.put(store, key, str(i).encode(), mode="create")
            return i
        except Exception:
            return None

    with ThreadPoolExecutor(8) as pool:
        winners = [i for i in pool.map(create, range(8)) if i is not None]
    assert len(winners) == 1
    assert bytes(obstore.get(store, key).bytes()) == str(winners[0]).encode()
