"""References whose targets (and reference files) are remote: S3 (the moto
server) and HTTP (the local range server), and how their byte ranges are
fetched: the chunks of one target file in one batch (one
``ReferenceFileSystem.cat``, nearby ranges merged, the rest concurrent), the
batches of several target files concurrently. Tests count requests and look
at which were in flight together; they never measure time.
"""

from __future__ import annotations

import json
import shutil

import fsspec
import numpy as np
import pytest

import zarrdask
from zarrdask.storage import store_from
from zarrdask.testing.servers import RequestLog

from ._sources import dump, kerchunk_refs, open_references, xr

pytest.importorskip("kerchunk")
pytestmark = pytest.mark.network


def refs_at(source, url: str, **kwargs) -> dict:
    """Kerchunk's references to ``source`` as if it were read from ``url``."""
    with open(source.path, "rb") as f:
        return kerchunk_refs(f, url=url, inline_threshold=0, **kwargs)


def served(source, server, name: str = "data.nc") -> dict:
    """``source`` copied to ``server`` as ``name``; its references pointing there."""
    shutil.copyfile(source.path, server.root / name)
    return refs_at(source, f"{server.url}/{name}")


def raw(source, name: str):
    """A variable's stored values (no CF decoding), as the source file holds them."""
    with xr.open_dataset(source.path, engine=source.engine, mask_and_scale=False) as ds:
        return ds[name].values


def data_gets(server, name: str = "data.nc") -> list:
    return [r for r in server.log.requests if r.method == "GET" and r.path.endswith(name)]



# -- HTTP --------------------------------------------------------------------------
@pytest.mark.parametrize("form", ["mapper", "url", "filesystem"])
def test_http_targets(source, faulty_http, form):
    refs = served(source, faulty_http)
    with open_references(refs, form, remote_protocol="http") as ds:
        xr.testing.assert_identical(ds.load(), source.expected)
    assert data_gets(faulty_http)  # the chunks came from the server


def test_references_file_over_http(source, faulty_http):
    refs = served(source, faulty_http)
    dump(refs, faulty_http.root / "refs.json")
    with open_references(f"{faulty_http.url}/refs.json", "url", remote_protocol="http") as ds:
        xr.testing.assert_identical(ds.load(), source.expected)


def test_chunks_of_one_target_file_are_one_batch(source, faulty_http):
    """Six chunks of one file are handed to the reference file system in one
    call: it merges their adjacent ranges into one request."""
    refs = served(source, faulty_http)
    store = store_from("reference://", storage_options={"fo": refs, "remote_protocol": "http"})
    assert "streaming" in store.capabilities  # the engine streams from a remote target
    array = zarrdask.open_array(store, path="temp", mode="r")
    faulty_http.log.clear()
    np.testing.assert_array_equal(array[:], raw(source, "temp"))
    gets = data_gets(faulty_http)
    assert len(gets) == 1, [r.range for r in gets]
    assert gets[0].range is not None  # a byte range of the file, not the file


def test_unmerged_ranges_of_one_target_file_are_concurrent(source, faulty_http):
    """Without merging (``max_gap=-1``) every chunk is a request of its own,
    and they are in flight together, not one after another."""
    refs = served(source, faulty_http)
    store = store_from("reference://", storage_options={"fo": refs, "remote_protocol": "http", "max_gap": -1})
    array = zarrdask.open_array(store, path="temp", mode="r")
    faulty_http.delay = 0.1
    faulty_http.log.clear()
    array[:]
    gets = data_gets(faulty_http)
    assert len(gets) == 6  # 3 x 2 x 1 chunks
    assert RequestLog.most_in_flight(gets) > 1


def test_several_target_files_are_fetched_concurrently(sources, faulty_http):
    combine = pytest.importorskip("kerchunk.combine")
    utils = pytest.importorskip("kerchunk.utils")
    refs = [kerchunk_refs(s.path, inline_threshold=0) for s in sources]
    combined = combine.MultiZarrToZarr(refs, concat_dims=["time"], identical_dims=["lat", "lon", "station"],
                                       inline_threshold=0).translate()
    for i, source in enumerate(sources):  # the same files, now on the server
        shutil.copyfile(source.path, faulty_http.root / f"part{i}.nc")
    combined = utils.rename_target(combined, {str(s.path): f"{faulty_http.url}/part{i}.nc"
                                              for i, s in enumerate(sources)})
    store = store_from("reference://", storage_options={"fo": combined, "remote_protocol": "http"})
    array = zarrdask.open_array(store, path="temp", mode="r")
    faulty_http.delay = 0.2
    faulty_http.log.clear()
    np.testing.assert_array_equal(array[:], np.concatenate([raw(s, "temp") for s in sources]))
    gets = [r for r in faulty_http.log.requests if r.method == "GET"]
    assert sorted(r.path for r in gets) == ["/part0.nc", "/part1.nc"]  # one merged batch per file
    assert RequestLog.most_in_flight(gets) == 2  # the two files at once


def test_missing_target_file_names_the_key(source, faulty_http):
    refs = served(source, faulty_http)
    (faulty_http.root / "data.nc").unlink()
    array = zarrdask.open_array("reference://", path="temp", mode="r",
                                storage_options={"fo": refs, "remote_protocol": "http"})
    with pytest.raises(zarrdask.errors.StoreError, match=r"temp/\d\.\d\.\d.*data\.nc"):
        array[:]


def test_transient_target_failures_are_retried(source, faulty_http):
    refs = served(source, faulty_http)
    array = zarrdask.open_array("reference://", path="count", mode="r",
                                storage_options={"fo": refs, "remote_protocol": "http"})
    faulty_http.faults.fail_next(1, "503")
    np.testing.assert_array_equal(array[:], source.expected["count"].values)
    assert faulty_http.faults.pending == 0


# -- S3 ----------------------------------------------------------------------------
@pytest.fixture
def on_s3(source, s3_client, s3_bucket):
    """``source`` uploaded to the moto server; its references and their S3 URL."""
    s3_client.put_object(Bucket=s3_bucket, Key="data.nc", Body=source.path.read_bytes())
    refs = refs_at(source, f"s3://{s3_bucket}/data.nc")
    s3_client.put_object(Bucket=s3_bucket, Key="refs.json", Body=json.dumps(refs).encode())
    return refs, f"s3://{s3_bucket}/refs.json"


@pytest.mark.parametrize("form", ["mapper", "url", "fs_mapper"])
def test_s3_targets(source, on_s3, s3_storage_options, form):
    refs, _ = on_s3
    with open_references(refs, form, remote_protocol="s3", remote_options=s3_storage_options) as ds:
        xr.testing.assert_identical(ds.load(), source.expected)


def test_s3_references_file(source, on_s3, s3_storage_options):
    _, url = on_s3
    with open_references(url, "url", target_options=s3_storage_options, remote_protocol="s3",
                         remote_options=s3_storage_options) as ds:
        xr.testing.assert_identical(ds.load(), source.expected)
    chained = {"reference": {"remote_protocol": "s3", "remote_options": s3_storage_options},
               "s3": s3_storage_options}
    with xr.open_dataset(f"reference::{url}", engine="zarrdask", storage_options=chained) as ds:
        xr.testing.assert_identical(ds.load(), source.expected)


def test_s3_targets_with_options_made_for_asynchronous_use(source, on_s3, s3_storage_options):
    """What zarr-python needs (``asynchronous=True`` on the reference file system
    and its targets) fails there with "target filesystem must have same value of
    asynchronous" in one combination or another; zarrdask takes every one."""
    refs, _ = on_s3
    remote = {**s3_storage_options, "asynchronous": True}
    with open_references(refs, "url", remote_protocol="s3", remote_options=remote) as ds:
        xr.testing.assert_identical(ds.load(), source.expected)
    with open_references(refs, "url", remote_protocol="s3", remote_options=remote, asynchronous=True) as ds:
        xr.testing.assert_identical(ds.load(), source.expected)
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol="s3", remote_options=remote,
                           asynchronous=True, skip_instance_cache=True)
    with xr.open_dataset(fs.get_mapper(""), engine="zarrdask") as ds:
        xr.testing.assert_identical(ds.load(), source.expected)


def test_s3_chunks_of_one_target_file_are_one_batch(source, on_s3, s3_proxy):
    proxy, options = s3_proxy
    refs, _ = on_s3
    array = zarrdask.open_array("reference://", path="temp", mode="r",
                                storage_options={"fo": refs, "remote_protocol": "s3", "remote_options": options})
    proxy.log.clear()
    np.testing.assert_array_equal(array[:], raw(source, "temp"))
    gets = [r for r in proxy.log.requests if r.method == "GET" and r.path.endswith("/data.nc")]
    assert len(gets) == 1 and gets[0].range is not None
