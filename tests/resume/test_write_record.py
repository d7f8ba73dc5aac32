"""The write record: its id, identity comparison, markers and refusals
(zarrdask.dask.write_record)."""

from __future__ import annotations

import pytest

from zarrdask.dask.write_record import (
    RECORD_DIR,
    WriteRecord,
    array_identity,
    check_identity,
    check_resumable,
    record_id,
    whole_keys,
)
from zarrdask.errors import ResumeRefusedError, WriteRecordMismatchError
from zarrdask.storage import FsspecStore, LocalStore, MemoryStore, PrefixStore, ZipStore
from zarrdask.storage.abc import Store


class Unlisted(MemoryStore):
    """A writable store that cannot list its keys."""

    listable = False

    def list(self):
        raise AssertionError("a store that cannot list was listed")


def _identity(source="abc", shape=(8, 8), codecs=("zstd",), region=((0, 8), (0, 8))):
    meta = {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "float32",
            "codecs": list(codecs), "attributes": {"units": "m"}}
    return {"arrays": [array_identity("a", source, meta, {"units": "m"}, [slice(*r) for r in region])]}


def test_record_id_names_the_target():
    assert record_id("array", "a", region=None) == record_id("array", "a", region=None)
    assert record_id("array", "a", region=None) != record_id("array", "b", region=None)
    assert record_id("array", "a", region="(slice(0, 4),)") != record_id("array", "a", region="(slice(4, 8),)")
    assert record_id("array", "a") != record_id("dataset", "a")


def test_same_identity_passes():
    check_identity(_identity(), _identity(), "array '/a'")


def test_every_differing_field_is_named():
    with pytest.raises(WriteRecordMismatchError) as e:
        check_identity(_identity(), _identity(source="def", codecs=("gzip",)), "array '/a'")
    text = str(e.value)
    assert "array '/a'" in text and "source: recorded \"abc\", now \"def\"" in text
    assert "metadata codecs" in text and "gzip" in text
    assert "shape" not in text and "region" not in text  # only what differs
    with pytest.raises(WriteRecordMismatchError, match=r"region: recorded \[\[0, 8\], \[0, 8\]\], now \[\[0, 4\]"):
        check_identity(_identity(), _identity(region=((0, 4), (0, 8))), "array '/a'")


def test_other_arrays_are_named():
    other = {"arrays": [dict(_identity()["arrays"][0], path="b")]}
    with pytest.raises(WriteRecordMismatchError, match="path"):
        check_identity(_identity(), other, "group '/'")
    more = {"arrays": _identity()["arrays"] * 2}
    with pytest.raises(WriteRecordMismatchError, match="arrays written"):
        check_identity(_identity(), more, "group '/'")


@pytest.mark.parametrize("store", [MemoryStore(), Unlisted()], ids=["listable", "unlisted"])
def test_record_round_trip(store):
    record = WriteRecord(store, "w1")
    assert record.read() is None
    record.save(_identity(), "setup", {"created": True})
    doc = record.read()
    assert doc["state"] == "setup" and doc["plan"] == {"created": True} and doc["identity"] == _identity()
    record.save(_identity(), "ready")
    store.set(record.marker(0, (1, 2)), b"")
    store.set(record.marker(1, (0, 0)), b"")
    blocks = {0: [(0, 0), (1, 2)], 1: [(0, 0), (0, 1)]}
    assert record.finished(blocks) == {(0, (1, 2)), (1, (0, 0))}
    assert record.marker(0, (1, 2)).startswith(f"{RECORD_DIR}/w1/")
    record.remove(blocks)
    assert record.read() is None
    assert list(MemoryStore.list(store)) == []  # every marker and the document gone


def test_unlisted_store_removes_every_marker():
    store = Unlisted()
    record = WriteRecord(store, "w1")
    record.save(_identity(), "ready")
    store.set(record.marker(0, (3,)), b"")
    record.remove({0: [(3,), (4,)]})
    assert list(MemoryStore.list(store)) == []


def test_a_foreign_document_is_refused():
    store = MemoryStore()
    record = WriteRecord(store, "w1")
    store.set(record.key, b"not json")
    with pytest.raises(WriteRecordMismatchError, match="write.json.*not the record of a zarrdask write"):
        record.read()


def test_zip_stores_are_refused(tmp_path):
    path = tmp_path / "a.zip"
    with pytest.raises(ResumeRefusedError, match="zip archive"):
        check_resumable(str(path))
    with pytest.raises(ResumeRefusedError, match="zip archive"):
        check_resumable(path)
    assert not path.exists()
    zipped = ZipStore(str(tmp_path / "b.zip"), mode="w")
    for store in (zipped, PrefixStore(zipped, "x")):
        with pytest.raises(ResumeRefusedError, match="zip archive"):
            check_resumable(store)
    zipped.close()
    check_resumable(MemoryStore())
    check_resumable(str(tmp_path / "dir.zarr"))


def test_zarr_python_zip_store_is_refused(tmp_path):
    zarr = pytest.importorskip("zarr")
    from zarrdask.storage import ZarrPythonStore

    store = ZarrPythonStore(zarr.storage.ZipStore(str(tmp_path / "c.zip"), mode="w"))
    with pytest.raises(ResumeRefusedError):
        check_resumable(store)
    assert isinstance(store, Store)


def test_stores_whose_keys_are_written_whole(tmp_path):
    assert whole_keys(LocalStore(str(tmp_path / "d")))
    assert whole_keys(PrefixStore(LocalStore(str(tmp_path / "d")), "p"))
    assert whole_keys(MemoryStore())
    assert whole_keys(FsspecStore("memory://whole-keys"))
    assert not whole_keys(FsspecStore(f"file://{tmp_path}/f"))  # fsspec writes local files in place
