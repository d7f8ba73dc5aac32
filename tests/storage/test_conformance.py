"""The store conformance suite (zarrdask.testing.store) run against every store."""

from __future__ import annotations

import uuid

import fsspec
import pytest

from zarrdask.storage import (
    CountingStore,
    FsspecStore,
    LocalStore,
    MemoryStore,
    PrefixStore,
    ReadOnlyStore,
    ZipStore,
)
from zarrdask.testing.store import StoreConformanceTests


def _write_files(root, data):
    for key, value in data.items():
        path = root.joinpath(*key.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value)


class TestMemoryStore(StoreConformanceTests):
    @pytest.fixture
    def store(self):
        return MemoryStore()

    @pytest.fixture
    def same_data_store(self, store):
        return MemoryStore(store.data)

    @pytest.fixture
    def readonly_store_factory(self):
        return lambda data: MemoryStore(dict(data), read_only=True)


class TestLocalStore(StoreConformanceTests):
    @pytest.fixture
    def store(self, tmp_path):
        return LocalStore(tmp_path / "root")

    @pytest.fixture
    def same_data_store(self, tmp_path):
        return LocalStore(str(tmp_path / "root") + "/")

    @pytest.fixture
    def readonly_store_factory(self, tmp_path):
        def make(data):
            _write_files(tmp_path / "ro", data)
            return LocalStore(tmp_path / "ro", read_only=True)

        return make


class TestZipStore(StoreConformanceTests):
    @pytest.fixture
    def store(self, tmp_path):
        store = ZipStore(tmp_path / "store.zip", mode="w")
        yield store
        store.close()

    @pytest.fixture
    def readonly_store_factory(self, tmp_path):
        opened = []

        def make(data):
            path = tmp_path / "ro.zip"
            with ZipStore(path, mode="w") as writer:
                writer.set_many(data)
            store = ZipStore(path, mode="r")
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()


class TestFsspecMemoryStore(StoreConformanceTests):
    @pytest.fixture
    def store(self):
        url = f"memory://conformance/{uuid.uuid4().hex}"
        yield FsspecStore(url)
        fs = fsspec.filesystem("memory")
        if fs.exists(url):
            fs.rm(url, recursive=True)

    @pytest.fixture
    def same_data_store(self, store):
        return FsspecStore(store.url)

    @pytest.fixture
    def readonly_store_factory(self, store):
        def make(data):
            store.set_many(data)
            return FsspecStore(store.url, read_only=True)

        return make


class TestFsspecLocalStore(StoreConformanceTests):
    """FsspecStore over fsspec's LocalFileSystem (no auto_mkdir)."""

    @pytest.fixture
    def store(self, tmp_path):
        return FsspecStore(f"file://{tmp_path}/root")

    @pytest.fixture
    def readonly_store_factory(self, tmp_path):
        def make(data):
            _write_files(tmp_path / "ro", data)
            return FsspecStore(f"file://{tmp_path}/ro", read_only=True)

        return make


@pytest.mark.network
class TestFsspecS3Store(StoreConformanceTests):
    """FsspecStore over s3fs against a real (moto) S3 server on 127.0.0.1."""

    @pytest.fixture
    def store(self, s3_bucket, s3_storage_options):
        return FsspecStore(f"s3://{s3_bucket}/root", storage_options=s3_storage_options)

    @pytest.fixture
    def same_data_store(self, s3_bucket, s3_storage_options):
        return FsspecStore(f"s3://{s3_bucket}/root/", storage_options=s3_storage_options)

    @pytest.fixture
    def readonly_store_factory(self, s3_bucket, s3_storage_options):
        def make(data):
            url = f"s3://{s3_bucket}/ro"
            FsspecStore(url, storage_options=s3_storage_options).set_many(data)
            return FsspecStore(url, storage_options=s3_storage_options, read_only=True)

        return make


@pytest.mark.network
class TestFsspecHTTPStore(StoreConformanceTests):
    """Read-only FsspecStore over a local HTTP server with range support."""

    store_is_writable = False

    @pytest.fixture
    def readonly_store_factory(self, http_server):
        def make(data):
            name = uuid.uuid4().hex
            _write_files(http_server.root / name, data)
            return FsspecStore(f"{http_server.url}/{name}")

        return make


class TestPrefixStore(StoreConformanceTests):
    @pytest.fixture
    def store(self):
        # siblings that must stay invisible: same string prefix, other paths
        inner = MemoryStore({"p/qx": b"no", "other/key": b"no", "p/q2/a": b"no"})
        return PrefixStore(inner, "/p//q/")

    @pytest.fixture
    def same_data_store(self, store):
        return PrefixStore(PrefixStore(store.store, "p"), "q")  # another path to the same keys

    @pytest.fixture
    def readonly_store_factory(self):
        def make(data):
            inner = MemoryStore({f"p/q/{k}": v for k, v in data.items()} | {"p/qx": b"no"})
            return PrefixStore(ReadOnlyStore(inner), "p/q")

        return make


class TestCountingStore(StoreConformanceTests):
    @pytest.fixture
    def store(self):
        return CountingStore(MemoryStore())

    @pytest.fixture
    def readonly_store_factory(self):
        return lambda data: CountingStore(MemoryStore(dict(data), read_only=True))


class TestReadOnlyStore(StoreConformanceTests):
    store_is_writable = False

    @pytest.fixture
    def readonly_store_factory(self, tmp_path):
        def make(data):
            _write_files(tmp_path / "ro", data)
            return ReadOnlyStore(LocalStore(tmp_path / "ro"))

        return make
