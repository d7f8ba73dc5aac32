"""ReferenceStore: every zarrdask entry point takes references, they are
read-only, asynchronous options are taken, stores name their references
(dask tokens), reads are batched per target file, and bad input gets a clear
error."""

from __future__ import annotations

import json
import pickle

import dask.array as da
import fsspec
import numpy as np
import pytest
from fsspec.implementations.reference import ReferenceFileSystem

import zarrdask
from zarrdask.errors import ReadOnlyError, StoreError
from zarrdask.storage import (
    FsspecStore,
    RangeRequest,
    ReferenceStore,
    SuffixRequest,
    store_from,
)

from ._sources import dump, kerchunk_refs, open_references, xr

pytest.importorskip("kerchunk")


@pytest.fixture
def refs(source):
    return kerchunk_refs(source.path, inline_threshold=300)


@pytest.fixture
def fo(refs, tmp_path):
    return dump(refs, tmp_path / "refs.json")


# -- entry points ------------------------------------------------------------------
def test_open_group_and_open_array(source, fo):
    group = zarrdask.open_group("reference://", storage_options={"fo": fo})  # default mode
    assert sorted(name for name, _ in group.members()) == sorted(source.expected.variables)
    array = zarrdask.open_array(fsspec.get_mapper("reference://", fo=fo), path="count")
    np.testing.assert_array_equal(array[:], source.expected["count"].values)
    assert array.attrs["_ARRAY_DIMENSIONS"] == ["time", "lat"]


def test_from_zarr(source, fo):
    fs = fsspec.filesystem("reference", fo=fo)
    for arr in (zarrdask.from_zarr(fs, path="count"),
                zarrdask.dask.from_zarr("reference://", path="count", storage_options={"fo": fo})):
        assert isinstance(arr, da.Array)
        np.testing.assert_array_equal(arr.compute(), source.expected["count"].values)


def test_open_dataset_with_dask_chunks(source, fo):
    with xr.open_dataset("reference://", engine="zarrdask", chunks={}, storage_options={"fo": fo}) as ds:
        assert ds.temp.chunks == ((4, 4, 4), (3, 3), (8,))
        xr.testing.assert_identical(ds.compute(), source.expected)


def test_open_datatree(source, fo):
    tree = xr.open_datatree(fsspec.get_mapper("reference://", fo=fo), engine="zarrdask")
    xr.testing.assert_identical(tree.to_dataset().load(), source.expected)


# -- read-only ---------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["r", "r+", "a", "w", "w-"])
def test_read_only_whatever_the_mode(refs, mode):
    store = store_from(fsspec.get_mapper("reference://", fo=refs), mode=mode)
    assert isinstance(store, ReferenceStore) and not store.writable
    with pytest.raises(ReadOnlyError, match="'temp/0.0.0'"):
        store.set("temp/0.0.0", b"x")
    with pytest.raises(ReadOnlyError, match="'temp/0.0.0'"):
        store.delete("temp/0.0.0")
    with pytest.raises(ReadOnlyError):
        store.set_many({"a": b"1", "b": b"2"})
    with pytest.raises(ReadOnlyError):
        store.delete_prefix("temp")


def test_writers_get_read_only_errors_and_nothing_changes(refs):
    fs = fsspec.filesystem("reference", fo=refs)
    before = dict(fs.references)
    group = zarrdask.open_group(fs.get_mapper(""), mode="a")
    with pytest.raises(ReadOnlyError):
        group["temp"][0, 0, 0] = 1.0
    with pytest.raises(ReadOnlyError):
        group.create_array("new", shape=(2,), dtype="i4")
    with pytest.raises(ReadOnlyError):
        zarrdask.open_group(fs.get_mapper(""), mode="w")
    with pytest.raises(ReadOnlyError):
        zarrdask.to_zarr(da.zeros(2), fs.get_mapper(""), path="x")
    with pytest.raises(ReadOnlyError):
        xr.Dataset({"x": ("d", [1, 2])}).zarrdask.to_zarr(fs.get_mapper(""), mode="a")
    assert dict(fs.references) == before


# -- asynchronous options ----------------------------------------------------------
@pytest.mark.parametrize("how", ["remote_options", "top_level", "filesystem"])
def test_options_made_for_asynchronous_use(source, fo, how):
    if how == "filesystem":
        fs = fsspec.filesystem("reference", fo=fo, remote_protocol="file", asynchronous=True)
        ds = xr.open_dataset(fs.get_mapper(""), engine="zarrdask")
    else:
        options = {"remote_options": {"asynchronous": True}} if how == "remote_options" else {"asynchronous": True}
        ds = open_references(fo, "url", remote_protocol="file", **options)
    with ds:
        xr.testing.assert_identical(ds.load(), source.expected)


# -- where the data lives ----------------------------------------------------------
def test_same_metadata_other_targets_are_other_data(sources, tmp_path):
    """Two files kerchunked alike have the same metadata: their stores, arrays
    and dask names must still differ (a shared token would mix their data)."""
    fos = [dump(kerchunk_refs(s.path, inline_threshold=0), tmp_path / f"refs{i}.json") for i, s in enumerate(sources)]
    stores = [store_from("reference://", storage_options={"fo": fo}) for fo in fos]
    assert stores[0].get("temp/.zarray") == stores[1].get("temp/.zarray")
    assert stores[0] != stores[1] and stores[0].location != stores[1].location
    arrays = [zarrdask.from_zarr(store, path="count") for store in stores]
    assert arrays[0].name != arrays[1].name
    both = da.concatenate(arrays).compute()
    np.testing.assert_array_equal(both, np.concatenate([s.expected["count"].values for s in sources]))


def test_same_references_are_the_same_store(fo, tmp_path, monkeypatch):
    by_url = store_from("reference://", storage_options={"fo": fo})
    by_mapper = store_from(fsspec.get_mapper("reference://", fo=fo))
    monkeypatch.chdir(tmp_path)
    relative = store_from("reference://", storage_options={"fo": "refs.json"})
    assert by_url == by_mapper == relative
    assert by_url.location == by_mapper.location == relative.location
    assert hash(by_url) == hash(by_mapper)
    assert zarrdask.from_zarr(by_url, path="temp").name == zarrdask.from_zarr(by_mapper, path="temp").name
    other_target = store_from("reference://", storage_options={"fo": fo, "remote_protocol": "memory"})
    assert other_target != by_url


@pytest.mark.parametrize("form", ["url", "filesystem"])
def test_pickles(refs, fo, form):
    store = (store_from("reference://", storage_options={"fo": fo}) if form == "url"
             else store_from(fsspec.filesystem("reference", fo=refs)))
    again = pickle.loads(pickle.dumps(store))
    assert again == store
    assert again.get_many(["temp/0.0.0", "lat/0", "nope"]) == store.get_many(["temp/0.0.0", "lat/0", "nope"])


# -- values ------------------------------------------------------------------------
def test_inline_values_sizes_and_ranges(refs):
    store = ReferenceStore(storage_options={"fo": refs})
    assert refs["refs"]["lat/0"].startswith("base64:")
    lat = store.get("lat/0")
    assert len(lat) == 48 and store.getsize("lat/0") == 48  # decoded, not the base64 text
    assert store.get_ranges("lat/0", [RangeRequest(8, 8), SuffixRequest(8)]) == [lat[8:16], lat[-8:]]
    chunk = store.get("temp/0.0.0")
    assert store.getsize("temp/0.0.0") == len(chunk) == refs["refs"]["temp/0.0.0"][2]
    assert store.get_ranges("temp/0.0.0", [RangeRequest(2, 5), SuffixRequest(4)]) == [chunk[2:7], chunk[-4:]]
    assert store.get_many(["temp/9.9.9", "temp/zarr.json", "zarr.json"]) == [None, None, None]
    assert store.getsize("temp/9.9.9") is None and not store.exists("temp")


def test_parquet_index_reads_as_consolidated_metadata(source, refs, tmp_path):
    df = pytest.importorskip("kerchunk.df")
    pytest.importorskip("fastparquet")
    df.refs_to_dataframe(refs, str(tmp_path / "refs.parq"), record_size=4)
    store = store_from("reference://", storage_options={"fo": str(tmp_path / "refs.parq"), "remote_protocol": "file"})
    index = json.loads(store.get(".zmetadata"))
    assert index["zarr_consolidated_format"] == 1
    assert json.loads(refs["refs"]["temp/.zarray"]) == index["metadata"]["temp/.zarray"]
    assert store.getsize(".zmetadata") == len(store.get(".zmetadata"))
    # keys that are not chunk keys of the parquet layout read as missing
    assert store.get_many(["temp/zarr.json", "temp/x.y.z", "temp/0.0.0"])[:2] == [None, None]
    group = zarrdask.open_group(store, mode="r", consolidated=True)
    np.testing.assert_array_equal(group["count"][:], source.expected["count"].values)


class _CatCalls:
    """Records the paths of every ``ReferenceFileSystem.cat`` call."""

    def __init__(self, monkeypatch):
        self.calls: list[list[str]] = []
        original = ReferenceFileSystem.cat

        def cat(fs, path, *args, **kwargs):
            self.calls.append(list(path))
            return original(fs, path, *args, **kwargs)

        monkeypatch.setattr(ReferenceFileSystem, "cat", cat)


def test_get_many_is_one_cat_call(refs, monkeypatch):
    store = ReferenceStore(storage_options={"fo": refs})
    spy = _CatCalls(monkeypatch)
    keys = [f"temp/{i}.{j}.0" for i in range(3) for j in range(2)] + ["lat/0", "missing/0"]
    values = store.get_many(keys)
    assert values[-1] is None and all(v is not None for v in values[:-1])
    assert spy.calls == [keys[:-1]]  # one call; the key without a reference is not asked for


def test_iter_many_is_one_cat_call_per_target_file(sources, monkeypatch):
    """Streaming reads: one call per target file (the store groups the keys),
    so each file's ranges are merged and fetched together."""
    combine = pytest.importorskip("kerchunk.combine")
    refs = [kerchunk_refs(s.path, inline_threshold=0) for s in sources]
    combined = combine.MultiZarrToZarr(refs, concat_dims=["time"], identical_dims=["lat", "lon", "station"],
                                       inline_threshold=0).translate()
    store = ReferenceStore(storage_options={"fo": combined})
    keys = [f"temp/{i}.{j}.0" for i in range(6) for j in range(2)] + ["lat/0", "missing/0"]
    spy = _CatCalls(monkeypatch)
    got = dict(store.iter_many(keys))
    calls = list(spy.calls)
    assert got == dict(enumerate(store.get_many(keys)))
    assert got[len(keys) - 1] is None  # no reference: read as missing, not asked for
    targets = [{combined["refs"][p][0] for p in call} for call in calls]
    assert sorted(map(sorted, targets)) == [[str(sources[0].path)], [str(sources[1].path)]]
    assert sum(len(call) for call in calls) == len(keys) - 1


# -- what is accepted, and errors --------------------------------------------------
def test_fsspec_store_at_the_root_of_a_file_system_without_leading_slashes(refs):
    """The cause of "No group found" on main: at the root of a file system whose
    paths have no leading slash (references, object stores) every path was
    looked for under "/"."""
    fs = fsspec.filesystem("reference", fo=refs)
    store = FsspecStore.from_filesystem(fs, "")
    assert store.get(".zgroup") == b'{"zarr_format":2}'
    assert "temp" in store.list_dir("") and "temp/.zarray" in set(store.list())
    memory = fsspec.filesystem("memory")  # root marker "/": paths there are unchanged
    FsspecStore.from_filesystem(memory, "").set("refs-root-test", b"x")
    assert memory.cat("/refs-root-test") == b"x"
    memory.rm("/refs-root-test")


def test_store_from_takes_file_system_objects(tmp_path):
    fs = fsspec.filesystem("memory")
    fs.pipe("/refs-test/a/.zgroup", b'{"zarr_format": 2}')
    store = store_from(fs)
    assert type(store) is FsspecStore
    assert store.get("refs-test/a/.zgroup") == b'{"zarr_format": 2}'
    assert store == store_from(fs.get_mapper(""))
    with pytest.raises(ValueError, match="file system"):
        store_from(fs, storage_options={"anon": True})


def test_missing_references_file_names_it(tmp_path):
    missing = str(tmp_path / "nope.json")
    with pytest.raises(StoreError, match="nope.json.*FileNotFoundError"):
        store_from("reference://", storage_options={"fo": missing})
    with pytest.raises(StoreError, match="nope.json"):
        xr.open_dataset("reference://", engine="zarrdask", storage_options={"fo": missing})


@pytest.mark.parametrize("bad", ["not json", json.dumps({"version": 7, "refs": {}})])
def test_bad_references_file(tmp_path, bad):
    (tmp_path / "bad.json").write_text(bad)
    with pytest.raises(StoreError, match="bad.json"):
        ReferenceStore(storage_options={"fo": str(tmp_path / "bad.json")})


def test_not_a_reference_url_or_file_system():
    with pytest.raises(ValueError, match="reference://"):
        ReferenceStore("s3://bucket/refs.json")
    with pytest.raises(ValueError, match="'fo'.*remote_protocol"):
        store_from("reference://", storage_options={"remote_protocol": "s3"})
    with pytest.raises(TypeError, match="ReferenceFileSystem"):
        ReferenceStore.from_filesystem(fsspec.filesystem("memory"))


def test_missing_local_target_names_the_key_and_target(source, tmp_path):
    copy = tmp_path / "copy.nc"
    copy.write_bytes(source.path.read_bytes())
    refs = kerchunk_refs(copy, inline_threshold=0)
    copy.unlink()
    array = zarrdask.open_array(store_from("reference://", storage_options={"fo": refs}), path="temp")
    with pytest.raises(StoreError, match=r"temp/0\.0\.0.*copy\.nc"):
        array[:4, :3]
