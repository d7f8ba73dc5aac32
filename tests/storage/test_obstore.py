"""ObstoreStore: the conformance suite over obstore's memory, local, S3 (moto)
and HTTP stores, and what is particular to it — backend capabilities,
locations, pickling, store_from, errors, retries and request counts against
real servers on 127.0.0.1."""

from __future__ import annotations

import datetime
import os
import pickle
import subprocess
import sys
import uuid

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import ReadOnlyError, StoreError, ValueChangedError
from zarrdask.storage import LocalStore, ObstoreStore, RangeRequest, SuffixRequest, store_from
from zarrdask.storage.obstore_requests import ConnectionFailed, RequestError, translate
from zarrdask.testing.store import StoreConformanceTests

obstore = pytest.importorskip("obstore")
from obstore.store import HTTPStore, MemoryStore, S3Store
from obstore.store import LocalStore as ObLocalStore

NO_RETRIES = {"max_retries": 0, "backoff": {"init_backoff": datetime.timedelta(milliseconds=1)}}


def s3_store(endpoint: str, bucket: str, prefix: str = "root", **kw) -> S3Store:
    """An obstore S3Store for the moto server (path-style, plain HTTP, no obstore retries)."""
    return S3Store(
        bucket,
        prefix=prefix,
        endpoint=endpoint,
        region="us-east-1",
        access_key_id="x",
        secret_access_key="y",
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
        retry_config=kw.pop("retry_config", NO_RETRIES),
        **kw,
    )


def _write_files(root, data):
    for key, value in data.items():
        path = root.joinpath(*key.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value)


@pytest.fixture
def quick_backoff():
    with zarrdask.config.set(retry_backoff=0.001):
        yield


# -- conformance -----------------------------------------------------------------
class TestObstoreMemoryStore(StoreConformanceTests):
    @pytest.fixture
    def store(self):
        return ObstoreStore(MemoryStore())

    @pytest.fixture
    def same_data_store(self, store):
        return ObstoreStore(store.obstore_store)

    @pytest.fixture
    def readonly_store_factory(self):
        def make(data):
            inner = MemoryStore()
            ObstoreStore(inner).set_many(data)
            return ObstoreStore(inner, read_only=True)

        return make


class TestObstoreLocalStore(StoreConformanceTests):
    @pytest.fixture
    def store(self, tmp_path):
        return ObstoreStore(ObLocalStore(tmp_path / "root", mkdir=True))

    @pytest.fixture
    def same_data_store(self, tmp_path):
        return ObstoreStore(ObLocalStore(str(tmp_path / "root") + "/"))

    @pytest.fixture
    def readonly_store_factory(self, tmp_path):
        def make(data):
            _write_files(tmp_path / "ro", data)
            return ObstoreStore(ObLocalStore(tmp_path / "ro"), read_only=True)

        return make


@pytest.mark.network
class TestObstoreS3Store(StoreConformanceTests):
    """obstore's S3Store against a real (moto) S3 server on 127.0.0.1."""

    @pytest.fixture
    def store(self, s3_endpoint, s3_bucket):
        return ObstoreStore(s3_store(s3_endpoint, s3_bucket))

    @pytest.fixture
    def same_data_store(self, s3_endpoint, s3_bucket):
        return ObstoreStore(s3_store(s3_endpoint, s3_bucket, prefix="/root/"))

    @pytest.fixture
    def readonly_store_factory(self, s3_endpoint, s3_bucket):
        def make(data):
            ObstoreStore(s3_store(s3_endpoint, s3_bucket, "ro")).set_many(data)
            return ObstoreStore(s3_store(s3_endpoint, s3_bucket, "ro"), read_only=True)

        return make


@pytest.mark.network
class TestObstoreHTTPStore(StoreConformanceTests):
    """Read-only, over the local HTTP server with ranges and strong ETags."""

    store_is_writable = False

    @pytest.fixture
    def readonly_store_factory(self, http_server):
        def make(data):
            name = uuid.uuid4().hex
            _write_files(http_server.root / name, data)
            return ObstoreStore(HTTPStore.from_url(f"{http_server.url}/{name}", client_options={"allow_http": True}))

        return make


# -- backends ----------------------------------------------------------------------
def test_capabilities_follow_the_backend(tmp_path, http_server):
    local = ObstoreStore(ObLocalStore(tmp_path))
    memory = ObstoreStore(MemoryStore())
    s3 = ObstoreStore(s3_store("http://127.0.0.1:9", "bucket"))
    http = ObstoreStore(HTTPStore.from_url(http_server.url, client_options={"allow_http": True}))
    assert local.capabilities == {"exact_readers", "process_locks"}
    assert memory.capabilities == {"exact_readers", "conditional_writes"}
    assert s3.capabilities == {"streaming", "background_uploads", "exact_readers", "conditional_writes"}
    assert http.capabilities == {"streaming"}
    assert (local.kind, memory.kind, s3.kind, http.kind) == ("local", "memory", "s3", "http")
    assert not http.writable and not http.listable and http.supports_partial_reads
    assert local.writable and local.listable


def test_obstore_is_imported_only_when_an_obstore_store_is_at_hand():
    code = ("import sys, zarrdask; zarrdask.store_from({}); zarrdask.store_from('memory://x', mode='w'); "
            "assert 'obstore' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


def test_only_obstore_stores_are_accepted():
    with pytest.raises(TypeError, match="needs one of obstore's stores"):
        ObstoreStore({"a": b"1"})


def test_location_names_the_data_not_the_object(tmp_path):
    (tmp_path / "root").mkdir()
    os.symlink(tmp_path / "root", tmp_path / "link")
    a = ObstoreStore(ObLocalStore(tmp_path / "root"))
    b = ObstoreStore(ObLocalStore(tmp_path / "link"), read_only=True)
    assert a.location == b.location == LocalStore(tmp_path / "root").location  # shares zarrdask's locks
    s3 = [
        ObstoreStore(s3_store("http://h:1", "bucket", "x/y")),
        ObstoreStore(S3Store.from_url("s3://bucket/x/y/", endpoint="http://h:1", region="eu-west-1")),
    ]
    assert s3[0].location == s3[1].location
    assert s3[0].location != ObstoreStore(s3_store("http://h:1", "bucket", "x")).location
    assert s3[0].location != ObstoreStore(s3_store("http://h:2", "bucket", "x/y")).location
    m = MemoryStore()
    assert ObstoreStore(m).location == ObstoreStore(m).location != ObstoreStore(MemoryStore()).location
    assert ObstoreStore(m) == ObstoreStore(m) and ObstoreStore(m) != ObstoreStore(m, read_only=True)


def test_store_from_accepts_obstore_stores(tmp_path):
    inner = ObLocalStore(tmp_path)
    store = store_from(inner, mode="a")
    assert isinstance(store, ObstoreStore) and store.obstore_store is inner and store.writable
    assert store_from(inner, mode="r").writable is False
    with pytest.raises(ValueError, match="storage_options cannot be applied to the obstore store"):
        store_from(inner, storage_options={"anon": True})


def test_read_only_refuses_every_write_naming_the_key():
    inner = MemoryStore()
    ObstoreStore(inner).set("k", b"1")
    store = ObstoreStore(inner, read_only=True)
    for write in (lambda: store.set("k", b"2"), lambda: store.delete("k"),
                  lambda: store.set_if({"k": (b"2", None)}), lambda: store.delete_prefix("k")):
        with pytest.raises(ReadOnlyError, match="'k'"):
            write()
    assert store.get("k") == b"1"
    assert "read_only=True" in repr(store)


def test_memory_store_pickles_as_a_snapshot():
    store = ObstoreStore(MemoryStore())
    store.set_many({"a/b": b"1", "c": b"2"})
    clone = pickle.loads(pickle.dumps(store))
    assert clone.get_many(["a/b", "c"]) == [b"1", b"2"]
    clone.set("c", b"changed")
    assert store.get("c") == b"2"  # an independent copy, as in another process
    assert clone.location != store.location


def test_local_store_pickles_its_configuration(tmp_path):
    store = ObstoreStore(ObLocalStore(tmp_path), read_only=True)
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store and not clone.writable


def test_empty_directories_are_not_children(tmp_path):
    store = ObstoreStore(ObLocalStore(tmp_path))
    store.set_many({"g/a/c/0": b"1", "g/b": b"2"})
    store.delete("g/a/c/0")  # obstore leaves g/a/c behind
    assert (tmp_path / "g" / "a" / "c").is_dir()
    assert store.list_dir("g") == ["b"]


def test_local_lock_files_are_no_keys(tmp_path):
    ours = LocalStore(tmp_path)
    store = ObstoreStore(ObLocalStore(tmp_path))
    store.set("a/k", b"1")
    with ours.locked(["a/k"]):  # zarrdask's LocalStore takes its lock file next to the key
        assert list(store.list()) == ["a/k"]
        assert store.list_dir("a") == ["k"]


def test_a_path_below_a_file_is_missing(tmp_path):
    store = ObstoreStore(ObLocalStore(tmp_path))
    store.set("f", b"file")
    assert store.get("f/below") is None
    assert store.get_ranges("f/below", [RangeRequest(0, 1)]) is None
    assert store.getsize("f/below") is None


def test_streamed_values_are_views_of_what_obstore_received(tmp_path):
    """Values handed over as they arrive (what the chunk engine decodes) are
    read-only views, not copies; ``get_many`` still returns ``bytes``; a
    subclass overriding ``get_many`` is what streamed reads go through."""
    store = ObstoreStore(ObLocalStore(str(tmp_path)))
    store.set_many({"a": b"12", "b": b"345"})
    got = dict(store.iter_many(["a", "b", "missing"]))
    assert {i: None if v is None else (type(v), v.readonly, bytes(v)) for i, v in got.items()} == {
        0: (memoryview, True, b"12"), 1: (memoryview, True, b"345"), 2: None}
    assert [(i, bytes(v)) for i, v in store.iter_many(["b"])] == [(0, b"345")]
    assert [type(v) for v in store.get_many(["a", "b"])] == [bytes, bytes]

    class Recording(ObstoreStore):
        def get_many(self, keys):
            self.asked = [*getattr(self, "asked", []), *keys]
            return super().get_many(keys)

    recording = Recording(ObLocalStore(str(tmp_path)))
    assert dict(recording.iter_many(["a", "b"])) == {0: b"12", 1: b"345"}
    assert sorted(recording.asked) == ["a", "b"]

    a = zarrdask.create_array(store, shape=(8, 8), dtype="i4", chunks=(2, 2), shards=(4, 4), fill_value=0)
    a[...] = np.arange(64, dtype="i4").reshape(8, 8)
    assert (a[...] == np.arange(64).reshape(8, 8)).all()


# -- obstore's failures as zarrdask sees them ---------------------------------------------
@pytest.mark.network
def test_failures_are_classified(s3_endpoint, s3_bucket):
    store = s3_store("http://127.0.0.1:9", s3_bucket)
    with pytest.raises(Exception) as info:
        obstore.get(store, "k")
    assert isinstance(translate(info.value), ConnectionFailed)
    store = s3_store(s3_endpoint, s3_bucket)
    obstore.put(store, "k", b"0123")
    with pytest.raises(Exception) as info:
        obstore.get(store, "k", options={"range": (10, 12)})
    failure = translate(info.value)
    assert isinstance(failure, RequestError) and failure.status == 416
    assert "Debug source" not in str(failure)


# -- requests against real servers ------------------------------------------------
@pytest.fixture
def s3_proxied(s3_endpoint, s3_bucket):
    """``(proxy, ObstoreStore)``: an S3Store reaching moto through the fault-injecting proxy."""
    from zarrdask.testing.servers import serve_proxy

    with serve_proxy(s3_endpoint) as proxy:
        yield proxy, ObstoreStore(s3_store(proxy.url, s3_bucket))


@pytest.mark.network
@pytest.mark.parametrize("kind", ["503", "500", "429", "drop"])
def test_transient_failures_are_retried(s3_proxied, kind, quick_backoff):
    proxy, store = s3_proxied
    proxy.faults.fail_next(2, kind, methods=("PUT",))
    store.set_many({"a": b"1", "b": b"2"})
    proxy.faults.fail_next(2, kind, methods=("GET",))
    assert store.get_many(["a", "b", "missing"]) == [b"1", b"2", None]
    proxy.faults.fail_next(1, kind, methods=("GET",))
    assert store.get_ranges("a", [RangeRequest(0, 1)]) == [b"1"]
    proxy.faults.fail_next(1, kind, methods=("GET",))
    assert sorted(store.list()) == ["a", "b"]
    proxy.faults.fail_next(2, kind, methods=("GET",))
    assert dict(store.iter_many(["a", "b", "missing"])) == {0: b"1", 1: b"2", 2: None}  # streamed
    assert proxy.faults.pending == 0


@pytest.mark.network
def test_other_failures_are_not_retried_and_name_the_key(s3_proxied, quick_backoff):
    proxy, store = s3_proxied
    store.set("secret", b"1")
    proxy.log.clear()
    proxy.faults.fail_next(1, "403", methods=("GET",))
    with pytest.raises(StoreError, match=r"cannot read key 'secret'.*403") as info:
        store.get_many(["secret"])
    assert "Debug source" not in str(info.value)
    assert proxy.log.count("GET") == 1
    proxy.faults.fail_next(1, "403", methods=("PUT",))
    with pytest.raises(StoreError, match=r"cannot write key '(fine|other)'.*403"):
        store.set_many({"fine": b"1", "other": b"2"})


@pytest.mark.network
def test_persistent_failures_give_up_naming_the_key(s3_proxied, quick_backoff):
    proxy, store = s3_proxied
    store.set("k", b"1")
    proxy.faults.fail_next(100, "503", methods=("GET",))
    with zarrdask.config.set(retries=2):
        with pytest.raises(StoreError, match=r"'k'.*gave up after 3 attempts"):
            store.get("k")
    proxy.faults.clear()


@pytest.mark.network
def test_a_batch_is_concurrent_and_ranges_are_range_requests(s3_proxied):
    proxy, store = s3_proxied
    store.set_many({f"c/{i}": bytes(range(100)) for i in range(8)})
    proxy.log.clear()
    proxy.delay = 0.05
    store.get_many([f"c/{i}" for i in range(8)])
    requests = proxy.log.requests
    assert len(requests) == 8
    # concurrent: every request had started before the first one was answered
    assert max(r.start for r in requests) < min(r.end for r in requests)
    proxy.log.clear()
    proxy.delay = 0
    assert store.get_ranges("c/0", [RangeRequest(10, 5), SuffixRequest(3)]) == [bytes(range(10, 15)), bytes([97, 98, 99])]
    assert sorted(r.range for r in proxy.log.requests) == ["bytes=-3", "bytes=10-14"]


@pytest.mark.network
def test_exact_reader_pins_the_etag(s3_proxied):
    proxy, store = s3_proxied
    store.set("shard", bytes(100))
    with store.reader("shard") as reader:
        assert reader.read([SuffixRequest(4)]) == [bytes(4)]
        proxy.log.clear()
        assert reader.read([RangeRequest(0, 2)]) == [bytes(2)]
        (request,) = proxy.log.requests
        assert request.if_match is not None and request.range == "bytes=0-1"
        store.set("shard", b"\x01" * 100)
        with pytest.raises(ValueChangedError, match="'shard'"):
            reader.read([RangeRequest(0, 2)])


@pytest.mark.network
def test_exact_reader_serves_the_first_version_of_a_versioned_bucket(s3_endpoint, s3_bucket, s3_client):
    s3_client.put_bucket_versioning(Bucket=s3_bucket, VersioningConfiguration={"Status": "Enabled"})
    store = ObstoreStore(s3_store(s3_endpoint, s3_bucket))
    store.set("shard", b"old-" * 10)
    with store.reader("shard") as reader:
        assert reader.read([RangeRequest(0, 4)]) == [b"old-"]
        store.set("shard", b"new-" * 10)
        assert reader.read([SuffixRequest(4)]) == [b"old-"]  # the version, not a 412
        assert reader.unchanged() is False
