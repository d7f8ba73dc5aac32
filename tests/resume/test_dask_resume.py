"""zarrdask.to_zarr(..., resume=True): a write interrupted midway (a block's
task raises, in this process) finishes with only the unfinished blocks
computed, and leaves the store a plain write leaves."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import zarrdask
from zarrdask.dask.write_record import RECORD_DIR
from zarrdask.errors import AlignmentWarning, ContainsArrayError, ResumeRefusedError, WriteRecordMismatchError
from zarrdask.storage import MemoryStore, ZipStore

from . import _sources as S

SCHED = {"scheduler": "threads", "num_workers": 1}
LAYOUT = dict(chunks=(4, 32), shards=(8, 64))  # the (64, 64) source's (8, 64) blocks are its 8 shards
ALL = {(i, 0) for i in range(8)}




def finished(files, created=True):
    """The blocks finished: in an array the write creates, those whose shard is
    stored; in another one, those recorded by a marker."""
    if created:
        return {(i, j) for _, i, j in S.shards(files)}
    return {tuple(int(i) for i in k.rsplit("/", 1)[1].split(".")) for k in files
            if k.startswith(RECORD_DIR + "/") and "/done/0/" in k}


def plain(path, x, **kwargs):
    zarrdask.to_zarr(x, str(path), store_kwargs=SCHED, **kwargs)
    return S.files(path)


def write(path, x, **kwargs):
    return zarrdask.to_zarr(x, str(path), resume=True, store_kwargs=SCHED, **kwargs)


def test_interrupted_write_finishes_with_only_unfinished_blocks(tmp_path):
    expected = plain(tmp_path / "plain.zarr", S.source(), **LAYOUT)
    out = tmp_path / "out.zarr"
    S.interrupt(lambda: write(out, S.source(), **LAYOUT))
    done = finished(S.files(out))
    assert done and done != ALL
    a = write(out, S.source(), **LAYOUT)
    assert set(S.CALLS) == ALL - done  # culled: the finished blocks are not computed again
    assert S.files(out) == expected  # same keys, same bytes: metadata, shards, no record
    np.testing.assert_array_equal(a[...], S.source().compute())


def test_resume_with_other_data_is_refused_and_changes_nothing(tmp_path):
    out = tmp_path / "out.zarr"
    S.interrupt(lambda: write(out, S.source(), **LAYOUT))
    before = S.files(out)
    with pytest.raises(WriteRecordMismatchError, match=r"array '/'.*source: recorded") as e:
        write(out, S.source(offset=1), **LAYOUT)
    assert "Nothing was written" in str(e.value)
    with pytest.raises(WriteRecordMismatchError, match="metadata codecs"):
        write(out, S.source(), compressors=None, **LAYOUT)
    with pytest.warns(AlignmentWarning), pytest.raises(WriteRecordMismatchError, match="metadata chunk_grid"):
        write(out, S.source(), chunks=(4, 32), shards=(16, 64))
    assert S.files(out) == before
    assert S.CALLS == []


def test_resume_of_a_finished_write_does_no_harm(tmp_path):
    out = tmp_path / "out.zarr"
    write(out, S.source(), **LAYOUT)
    before = S.files(out)
    with pytest.raises(ContainsArrayError, match="no record of an unfinished write"):
        write(out, S.source(), **LAYOUT)
    assert S.files(out) == before


def test_replacing_write_resumes_without_replacing_again(tmp_path):
    out = tmp_path / "out.zarr"
    zarrdask.create_array(str(out), shape=(3,), dtype="i1", data=np.arange(3, dtype="i1"))
    expected = plain(tmp_path / "plain.zarr", S.source(), **LAYOUT)
    S.interrupt(lambda: write(out, S.source(), mode="w", **LAYOUT))
    done = finished(S.files(out))
    write(out, S.source(), mode="w", **LAYOUT)
    assert set(S.CALLS) == ALL - done
    assert S.files(out) == expected


def test_region_write_resumes_its_region(tmp_path):
    def target(path):
        zarrdask.create_array(str(path), shape=(128, 64), dtype="f4", fill_value=-1, **LAYOUT)
    region = (slice(32, 96), slice(0, 64))
    target(tmp_path / "plain.zarr")
    expected = plain(tmp_path / "plain.zarr", S.source(), mode="r+", region=region)
    out = tmp_path / "out.zarr"
    target(out)
    S.interrupt(lambda: write(out, S.source(), mode="r+", region=region))
    done = finished(S.files(out), created=False)
    write(out, S.source(), mode="r+", region=region)
    assert set(S.CALLS) == ALL - done
    assert S.files(out) == expected
    values = zarrdask.open_array(str(out))[...]
    assert (values[:32] == -1).all() and (values[96:] == -1).all()


def test_compute_false_and_return_stored(tmp_path):
    out = tmp_path / "out.zarr"
    lazy = write(out, S.source(), compute=False, **LAYOUT)
    assert RECORD_DIR in {k.split("/")[0] for k in S.files(out)}  # the metadata and the record are made
    dask.compute(lazy, **SCHED)
    assert not any(k.startswith(RECORD_DIR) for k in S.files(out))
    stored = write(tmp_path / "s.zarr", S.source(), return_stored=True, compute=False, **LAYOUT)
    np.testing.assert_array_equal(stored.compute(**SCHED), S.source().compute())
    assert not any(k.startswith(RECORD_DIR) for k in S.files(tmp_path / "s.zarr"))
    stored = write(tmp_path / "t.zarr", S.source(), return_stored=True, **LAYOUT)
    assert not any(k.startswith(RECORD_DIR) for k in S.files(tmp_path / "t.zarr"))
    np.testing.assert_array_equal(stored.compute(**SCHED), S.source().compute())


def test_setup_cut_short_is_done_again(tmp_path, monkeypatch):
    import sys

    writer = sys.modules["zarrdask.dask.writer"]
    real = writer.create_array

    def create_then_die(store, **kwargs):
        if isinstance(store, MemoryStore):  # the in-memory preview of the metadata
            return real(store, **kwargs)
        real(store, **kwargs)
        raise S.Interrupted("killed after the metadata was written")

    expected = plain(tmp_path / "plain.zarr", S.source(), **LAYOUT)
    out = tmp_path / "out.zarr"
    monkeypatch.setattr(writer, "create_array", create_then_die)
    S.interrupt(lambda: write(out, S.source(), **LAYOUT))  # mode "w-": the array exists, the record says "setup"
    monkeypatch.setattr(writer, "create_array", real)
    write(out, S.source(), **LAYOUT)
    assert set(S.CALLS) == ALL
    assert S.files(out) == expected


def test_zip_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "a.zip"
    with pytest.raises(ResumeRefusedError, match="zip archive"):
        zarrdask.to_zarr(S.source(), str(path), resume=True, **LAYOUT)
    assert not path.exists()
    store = ZipStore(str(tmp_path / "b.zip"), mode="w")
    with pytest.raises(ResumeRefusedError):
        zarrdask.to_zarr(S.source(), store, resume=True, **LAYOUT)
    assert list(store.list()) == []
    store.close()


class Recording(MemoryStore):
    """A MemoryStore that records the keys of every request."""

    def __init__(self):
        super().__init__()
        self.requests = []

    def get_many(self, keys):
        self.requests.extend(("get", k) for k in keys)
        return super().get_many(keys)

    def set(self, key, value):
        self.requests.append(("set", key))
        super().set(key, value)

    def list_prefix(self, prefix):
        self.requests.append(("list", prefix))
        return super().list_prefix(prefix)

    def delete(self, key):
        self.requests.append(("delete", key))
        super().delete(key)

    def delete_many(self, keys):
        keys = list(keys)
        self.requests.extend(("delete", k) for k in keys)
        super().delete_many(keys)


def test_costs(tmp_path):
    plain_store, store = Recording(), Recording()
    zarrdask.to_zarr(S.source(), plain_store, store_kwargs=SCHED, **LAYOUT)
    assert not [r for r in plain_store.requests if RECORD_DIR in r[1]]  # without resume: no record, no request
    zarrdask.to_zarr(S.source(), store, resume=True, store_kwargs=SCHED, **LAYOUT)
    extra = [r for r in store.requests if RECORD_DIR in r[1]]
    # a new array: no marker (its shards say which blocks are finished); the record: read once before
    # anything, stored twice, deleted at the end
    assert sorted(r[0] for r in extra) == ["delete", "get", "set", "set"]
    plain_sets = [r for r in plain_store.requests if r[0] == "set"]
    assert [r for r in store.requests if r[0] == "set" and RECORD_DIR not in r[1]] == plain_sets
    assert sorted(store.list()) == sorted(plain_store.list())


def test_costs_into_an_existing_array(tmp_path):
    store = Recording()
    zarrdask.create_array(store, shape=(64, 64), dtype="f4", **LAYOUT)
    store.requests.clear()
    zarrdask.to_zarr(S.source(), store, mode="r+", resume=True, store_kwargs=SCHED)
    extra = [r for r in store.requests if RECORD_DIR in r[1]]
    markers = [r for r in extra if r[0] == "set" and "/done/" in r[1]]
    assert len(markers) == 8  # one small write per task
    assert len([r for r in extra if r[0] == "set"]) == 8 + 2
    deletes = [r[1] for r in extra if r[0] == "delete"]
    assert len(deletes) == 9 and deletes[-1].endswith("/write.json")  # the document last: a cut-short removal resumes


class Unlisted(MemoryStore):
    listable = False

    def list(self):
        raise AssertionError("listed")


def test_store_that_cannot_list(tmp_path):
    store = Unlisted()
    S.interrupt(lambda: zarrdask.to_zarr(S.source(), store, resume=True, store_kwargs=SCHED, **LAYOUT))
    done = {(i, j) for _, i, j in S.shards(MemoryStore.list(store))}
    a = zarrdask.to_zarr(S.source(), store, resume=True, store_kwargs=SCHED, **LAYOUT)
    assert set(S.CALLS) == ALL - done
    np.testing.assert_array_equal(a[...], S.source().compute())
    assert not [k for k in MemoryStore.list(store) if k.startswith(RECORD_DIR)]


def test_peers_read_while_the_record_is_there(tmp_path):
    zarr = pytest.importorskip("zarr")
    out = tmp_path / "out.zarr"
    S.interrupt(lambda: write(out, S.source(), **LAYOUT))
    done = finished(S.files(out))
    ours = zarrdask.open_array(str(out))
    assert len(ours.stored_keys()) == len(done) == ours.nshards_initialized
    theirs = zarr.open_array(str(out), mode="r")
    assert theirs.nchunks_initialized == ours.nchunks_initialized
    values = S.source().compute()
    for i, _ in done:  # the stored shards read back
        np.testing.assert_array_equal(theirs[i * 8:(i + 1) * 8], values[i * 8:(i + 1) * 8])


@pytest.mark.network
def test_s3(s3_bucket, s3_storage_options):
    url = f"s3://{s3_bucket}/out.zarr"
    opts = dict(storage_options=s3_storage_options, **LAYOUT)
    S.interrupt(lambda: zarrdask.to_zarr(S.source(), url, resume=True, store_kwargs=SCHED, **opts))
    fs = __import__("fsspec").filesystem("s3", **s3_storage_options)
    done = {(i, j) for _, i, j in S.shards(k[len(f"{s3_bucket}/out.zarr/"):] for k in fs.find(f"{s3_bucket}/out.zarr"))}
    assert done
    zarrdask.to_zarr(S.source(), url, resume=True, store_kwargs=SCHED, **opts)
    assert set(S.CALLS) == ALL - done
    assert not [k for k in fs.find(f"{s3_bucket}/out.zarr") if RECORD_DIR in k]
    np.testing.assert_array_equal(zarrdask.open_array(url, storage_options=s3_storage_options)[...],
                                  S.source().compute())


@pytest.mark.slow
def test_retries_reach_the_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        x = S.source().map_blocks(S.fail_once, flag=str(tmp_path / "once"), dtype="f4")
        with pytest.raises(S.Interrupted):  # no retries: the write stops
            zarrdask.to_zarr(x, str(tmp_path / "a.zarr"), resume=True, **LAYOUT)
        (tmp_path / "once").unlink()
        x = S.source().map_blocks(S.fail_once, flag=str(tmp_path / "twice"), dtype="f4")
        a = zarrdask.to_zarr(x, str(tmp_path / "b.zarr"), resume=True, store_kwargs={"retries": 1}, **LAYOUT)
    assert (tmp_path / "twice").exists()  # the task failed once, and dask ran it again
    np.testing.assert_array_equal(a[...], S.source().compute())
    assert not [k for k in S.files(tmp_path / "b.zarr") if k.startswith(RECORD_DIR)]
