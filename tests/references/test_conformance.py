"""The store conformance suite (zarrdask.testing.store) run against ReferenceStore:
references inline (base64) and into one target file, on local disk and over HTTP
(where the store declares ``streaming``)."""

from __future__ import annotations

import base64
import uuid

import pytest

from zarrdask.storage import ReferenceStore
from zarrdask.testing.store import StoreConformanceTests


def references(data: dict[str, bytes], target: str, blob_path) -> dict:
    """Reference set (kerchunk spec version 1) for ``data``: short values inline
    (base64), the others as byte ranges of one file written at ``blob_path``
    and read as ``target``."""
    refs, blob = {}, bytearray()
    for key, value in data.items():
        if len(value) < 4:
            refs[key] = "base64:" + base64.b64encode(value).decode()
        else:
            refs[key] = [target, len(blob), len(value)]
            blob += value
    blob_path.write_bytes(bytes(blob))
    return {"version": 1, "refs": refs}


class TestReferenceStoreLocal(StoreConformanceTests):
    """References into a local file (no ``streaming``: the targets are in-process)."""

    store_is_writable = False

    @pytest.fixture
    def readonly_store_factory(self, tmp_path):
        def make(data):
            blob = tmp_path / f"{uuid.uuid4().hex}.bin"
            return ReferenceStore(storage_options={"fo": references(data, str(blob), blob)})

        return make


@pytest.mark.network
class TestReferenceStoreHTTP(StoreConformanceTests):
    """References into a file on a local HTTP server (declares ``streaming``)."""

    store_is_writable = False

    @pytest.fixture
    def readonly_store_factory(self, http_server):
        def make(data):
            name = f"{uuid.uuid4().hex}.bin"
            refs = references(data, f"{http_server.url}/{name}", http_server.root / name)
            store = ReferenceStore(storage_options={"fo": refs, "remote_protocol": "http"})
            assert "streaming" in store.capabilities
            return store

        return make
