"""FsspecStore specifics: batched calls, literal keys, pickling, HTTP and S3 details."""

from __future__ import annotations

import pickle
import uuid

import fsspec
import pytest

from zarrdask.errors import ReadOnlyError, StoreError
from zarrdask.storage import FsspecStore, OffsetRequest, RangeRequest, SuffixRequest


@pytest.fixture
def mem_store():
    url = f"memory://fsspec-tests/{uuid.uuid4().hex}"
    store = FsspecStore(url)
    yield store
    fs = fsspec.filesystem("memory")
    if fs.exists(url):
        fs.rm(url, recursive=True)


class _Spy:
    """Wraps one file system method and records its calls."""

    def __init__(self, monkeypatch, fs, name):
        self.calls = []
        real = getattr(fs, name)

        def spy(*args, **kwargs):
            self.calls.append((args, kwargs))
            return real(*args, **kwargs)

        monkeypatch.setattr(fs, name, spy)


def test_get_many_is_one_cat_call(mem_store, monkeypatch):
    mem_store.set_many({f"c/{i}": bytes([i]) for i in range(20)})
    spy = _Spy(monkeypatch, mem_store.fs, "cat")
    keys = [f"c/{i}" for i in range(25)]
    assert mem_store.get_many(keys) == [bytes([i]) for i in range(20)] + [None] * 5
    assert len(spy.calls) == 1
    assert spy.calls[0][1]["on_error"] == "return"


def test_get_ranges_is_one_cat_ranges_call(mem_store, monkeypatch):
    mem_store.set("v", bytes(range(100)))
    spy = _Spy(monkeypatch, mem_store.fs, "cat_ranges")
    info = _Spy(monkeypatch, mem_store.fs, "info")
    got = mem_store.get_ranges("v", [RangeRequest(0, 3), OffsetRequest(97), SuffixRequest(2), RangeRequest(5, 0)])
    assert got == [b"\x00\x01\x02", b"abc", b"bc", b""]
    assert len(spy.calls) == 1
    args = spy.calls[0][0]
    assert args[1] == [0, 97, -2] and args[2] == [3, None, None]  # suffix as a negative start
    assert info.calls == []  # no size lookup needed


def test_set_many_is_one_pipe_call(mem_store, monkeypatch):
    spy = _Spy(monkeypatch, mem_store.fs, "pipe")
    mem_store.set_many({"a": b"1", "b/c": b"2", "d": b"3"})
    assert len(spy.calls) == 1
    assert mem_store.get_many(["a", "b/c", "d"]) == [b"1", b"2", b"3"]


def test_glob_characters_in_keys_are_literal(mem_store):
    mem_store.set_many({"a0": b"zero", "a[0]": b"bracket", "ab": b"ab", "a*": b"star", "a?": b"q"})
    assert mem_store.get_many(["a[0]", "a*", "a?", "a0"]) == [b"bracket", b"star", b"q", b"zero"]
    mem_store.delete_many(["a[0]", "a*"])
    assert sorted(mem_store.list()) == ["a0", "a?", "ab"]


def test_errors_other_than_missing_name_the_key(mem_store, monkeypatch):
    path = mem_store._path("secret")

    def cat(paths, **kwargs):
        return {p: PermissionError("access denied") if p == path else b"ok" for p in paths}

    monkeypatch.setattr(mem_store.fs, "cat", cat)
    with pytest.raises(StoreError) as info:
        mem_store.get_many(["fine", "secret"])
    assert "'secret'" in str(info.value) and "access denied" in str(info.value)
    assert isinstance(info.value.__cause__, PermissionError)


def test_pickle_by_url_recreates_the_file_system(mem_store):
    mem_store.set("k", b"v")
    state = mem_store.__getstate__()
    assert state["_fs"] is None
    clone = pickle.loads(pickle.dumps(mem_store))
    assert clone._fs is None
    assert clone.get("k") == b"v"  # memory fs is a process-wide singleton
    assert clone == mem_store


def test_from_filesystem_and_mapper(mem_store):
    mem_store.set("x/y", b"1")
    fs = fsspec.filesystem("memory")
    store = FsspecStore.from_filesystem(fs, mem_store.url, read_only=True)
    assert store.get("x/y") == b"1"
    assert not store.writable
    assert store.list_dir("") == ["x"]
    clone = pickle.loads(pickle.dumps(store))
    assert clone.get("x/y") == b"1"
    mapper = fsspec.get_mapper(mem_store.url)
    from_mapper = FsspecStore.from_mapper(mapper)
    from_mapper.set("z", b"2")
    assert mapper["z"] == b"2"
    assert "FsspecStore(MemoryFileSystem" in repr(from_mapper)


def test_local_file_system_without_auto_mkdir(tmp_path):
    store = FsspecStore(f"file://{tmp_path}/root")
    store.set("a/b/c", b"1")
    store.set_many({"d/e": b"2", "f/g/h": b"3"})
    assert (tmp_path / "root" / "f" / "g" / "h").read_bytes() == b"3"
    assert store.getsize("a/b") is None  # a directory is not a key


# -- HTTP --------------------------------------------------------------------
@pytest.mark.network
def test_http_store_reads_and_refuses(http_server):
    name = uuid.uuid4().hex
    root = http_server.root / name
    (root / "a").mkdir(parents=True)
    (root / "a" / "v").write_bytes(bytes(range(50)))
    store = FsspecStore(f"{http_server.url}/{name}", read_only=False)
    assert not store.writable and not store.listable
    assert store.get_many(["a/v", "a/missing"]) == [bytes(range(50)), None]
    assert store.get_ranges("a/v", [SuffixRequest(3), RangeRequest(48, 10), OffsetRequest(60)]) == [
        bytes([47, 48, 49]),
        bytes([48, 49]),
        b"",
    ]
    assert store.getsize("a/v") == 50
    with pytest.raises(ReadOnlyError, match="'a/v'"):
        store.set("a/v", b"x")
    with pytest.raises(StoreError, match="HTTP has no directory listing"):
        list(store.list())


# -- S3 ----------------------------------------------------------------------
@pytest.mark.network
def test_s3_ranges_need_no_size_lookup(s3_bucket, s3_storage_options, monkeypatch):
    store = FsspecStore(f"s3://{s3_bucket}/data", storage_options=s3_storage_options)
    value = bytes(range(200))
    store.set("shard", value)
    calls = []
    monkeypatch.setattr(FsspecStore, "_size", lambda self, *a: calls.append(a) or 200)
    got = store.get_ranges("shard", [SuffixRequest(16), RangeRequest(0, 8), OffsetRequest(190)])
    assert got == [value[-16:], value[:8], value[190:]]
    assert calls == []


@pytest.mark.network
def test_s3_missing_bucket_reads_as_missing_or_errors_clearly(s3_storage_options):
    store = FsspecStore(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/x", storage_options=s3_storage_options)
    try:
        assert store.get("k") is None
    except StoreError as e:
        assert "'k'" in str(e)
