"""Opens in round trips: ``open_dataset`` and ``open_datatree`` with
engine="zarrdask" read the metadata one batch per level of the hierarchy, then
every value xarray reads while opening in one more batch — asserted from the
servers' request logs (which requests had ended before which started), never
from timings; request counts against engine="zarr" for the same open; values
identical to engine="zarr"'s."""

from __future__ import annotations

import os
import uuid
import warnings

import pytest

xr = pytest.importorskip("xarray")

from benchmarks.opens import cf_dataset, cf_datatree  # noqa: E402
from zarrdask.testing.servers import Request, RequestLog, serve_directory, serve_proxy  # noqa: E402

pytestmark = pytest.mark.network

DELAY = 0.2  # seconds added to each request: long beside the work of client and servers (a loaded
# machine, moto in this process), so waves are clear
N_VARIABLES = 4
TREE_DEPTH = 3  # the arrays of "/a/c"


def _write(root, zarr_format):
    ds, tree = cf_dataset(N_VARIABLES), cf_datatree(N_VARIABLES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for consolidated, suffix in ((True, "cons"), (False, "flat")):
            ds.to_zarr(os.path.join(root, f"ds-{suffix}.zarr"), consolidated=consolidated, zarr_format=zarr_format)
            tree.to_zarr(os.path.join(root, f"tree-{suffix}.zarr"), consolidated=consolidated,
                         zarr_format=zarr_format)
    return ds, tree


def _open(target, engine, call="open_dataset", **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # engine="zarr" on unconsolidated stores
        if call == "open_datatree":
            return xr.open_datatree(target, engine=engine, **kwargs)
        return xr.open_dataset(target, engine=engine, **kwargs)


def _measure(server, target, engine, call="open_dataset", **kwargs):
    """(result, requests, round trips, the log's requests and their waves)."""
    server.log.clear()
    result = _open(target, engine, call, **kwargs)
    return result, server.log.count(), server.log.round_trips(), server.log.requests, server.log.waves()


def _chunk_request(r: Request) -> bool:
    """A request for array data (not a metadata document nor a listing)."""
    path = r.path.split("?")[0]
    return not path.endswith(("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")) and "list-type" not in r.path


def _assert_coordinates_last(requests, waves, budget):
    """The values are read in one wave, the last, after every metadata request."""
    data = [w for r, w in zip(requests, waves) if _chunk_request(r)]
    meta = [w for r, w in zip(requests, waves) if not _chunk_request(r)]
    assert data and set(data) == {budget}, [(w, r.path) for r, w in zip(requests, waves)]
    assert max(meta) == budget - 1


def _assert_same(got, want):
    xr.testing.assert_identical(got.load(), want.load())  # a Dataset or a DataTree


# -- the wave counter --------------------------------------------------------------
def _req(start, end, path="/k"):
    return Request("GET", path, None, None, start, end, 200, 1, 0, None)


def test_waves_count_which_requests_waited_for_which():
    log = RequestLog()
    assert log.waves() == [] and log.round_trips() == 0
    for r in [_req(0.0, 1.0, "/a"), _req(0.1, 1.2, "/b"), _req(1.1, 2.0, "/c"), _req(1.3, 2.5, "/d"),
              _req(0.5, 3.0, "/e"), _req(3.1, 4.0, "/f")]:
        log.add(r)
    # /e started before anything ended; /c after /a ended, /d after /a and /b (not /c);
    # /f after everything: one more than the highest wave before it
    assert [r.path for r in log.requests] == ["/a", "/b", "/e", "/c", "/d", "/f"]
    assert log.waves() == [1, 1, 1, 2, 2, 3]
    assert log.round_trips() == 3


# -- HTTP, consolidated --------------------------------------------------------------
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("chunks", [None, {}])
def test_http_consolidated_opens_in_two_round_trips(tmp_path, zarr_format, chunks):
    ds, _ = _write(tmp_path, zarr_format)
    with serve_directory(tmp_path, delay=DELAY) as server:
        url = f"{server.url}/ds-cons.zarr"
        got, n, trips, requests, waves = _measure(server, url, "zarrdask", chunks=chunks)
        assert trips == 2, [(w, r.path) for r, w in zip(requests, waves)]
        _assert_coordinates_last(requests, waves, 2)
        server.delay = 0
        want, n_zarr, trips_zarr, _, _ = _measure(server, url, "zarr", chunks=chunks)
    assert n <= n_zarr, (n, n_zarr)
    assert trips_zarr > trips  # engine="zarr" reads index coordinates one after another
    _assert_same(got, want)


# -- S3 (moto behind a latency proxy) ---------------------------------------------------
@pytest.fixture(scope="module")
def s3_data(tmp_path_factory, s3_client):
    """Both formats' datasets and trees in a bucket: ``(bucket, {zarr_format: prefix})``."""
    s3_bucket = f"opens-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=s3_bucket)
    tmp_path = tmp_path_factory.mktemp("opens")
    prefixes = {}
    for zarr_format in (2, 3):
        local = tmp_path / f"v{zarr_format}"
        local.mkdir()
        _write(local, zarr_format)
        for here, _, files in os.walk(local):
            for name in files:
                path = os.path.join(here, name)
                key = f"v{zarr_format}/" + os.path.relpath(path, local).replace(os.sep, "/")
                with open(path, "rb") as f:
                    s3_client.put_object(Bucket=s3_bucket, Key=key, Body=f.read())
        prefixes[zarr_format] = f"v{zarr_format}"
    return s3_bucket, prefixes


def _obstore(proxy, bucket, prefix):
    """zarrdask's obstore store over an S3Store reaching moto through ``proxy``."""
    obstore = pytest.importorskip("obstore")
    from zarrdask.storage.obstore import ObstoreStore

    return ObstoreStore(obstore.store.S3Store(
        bucket, prefix=prefix, endpoint=proxy.url, region="us-east-1", access_key_id="x",
        secret_access_key="y", virtual_hosted_style_request=False, client_options={"allow_http": True},
    ))


CASES = [  # (name, open call, round-trip budget)
    ("ds-cons.zarr", "open_dataset", 2),
    ("tree-cons.zarr", "open_datatree", 2),
    ("ds-flat.zarr", "open_dataset", 3),
    ("tree-flat.zarr", "open_datatree", TREE_DEPTH + 2),
]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("name, call, budget", CASES)
def test_s3_opens_within_the_budget(s3_endpoint, s3_data, s3_storage_options, zarr_format, name, call, budget):
    bucket, prefixes = s3_data
    with serve_proxy(s3_endpoint) as proxy:
        store = _obstore(proxy, bucket, f"{prefixes[zarr_format]}/{name}")
        _open(store, "zarrdask", call)  # connections are made: they are not what is measured
        proxy.delay = DELAY
        got, n, trips, requests, waves = _measure(proxy, store, "zarrdask", call)
        assert trips == budget, [(w, r.path) for r, w in zip(requests, waves)]
        _assert_coordinates_last(requests, waves, budget)
        proxy.delay = 0
        options = dict(s3_storage_options, endpoint_url=proxy.url)
        url = f"s3://{bucket}/{prefixes[zarr_format]}/{name}"
        want, n_zarr, _, _, _ = _measure(proxy, url, "zarr", call, storage_options=options)
    assert n <= n_zarr, (n, n_zarr)
    _assert_same(got, want)


@pytest.mark.parametrize("name, call, budget", CASES[:1] + CASES[2:3])
def test_s3_with_fsspec_urls(s3_endpoint, s3_data, s3_storage_options, name, call, budget):
    """The same opens through s3fs (a URL and storage_options)."""
    import zarrdask

    bucket, prefixes = s3_data
    with serve_proxy(s3_endpoint) as proxy, zarrdask.config.set(url_store="fsspec"):
        options = dict(s3_storage_options, endpoint_url=proxy.url)
        url = f"s3://{bucket}/{prefixes[3]}/{name}"
        _open(url, "zarrdask", call, storage_options=options)
        proxy.delay = DELAY * 1.5  # s3fs prepares each request in Python: a batch takes a while to go out
        got, n, trips, requests, waves = _measure(proxy, url, "zarrdask", call, storage_options=options)
        assert trips == budget, [(w, r.path) for r, w in zip(requests, waves)]
        _assert_coordinates_last(requests, waves, budget)
        proxy.delay = 0
        want, n_zarr, _, _, _ = _measure(proxy, url, "zarr", call, storage_options=options)
    assert n <= n_zarr, (n, n_zarr)
    _assert_same(got, want)


def test_members_of_a_tree_one_round_trip_per_level(s3_endpoint, s3_data):
    """``Group.members(max_depth=None)`` and ``tree()`` without consolidated
    metadata: the root's listing, then one wave per level (documents and
    listings together)."""
    import zarrdask

    bucket, prefixes = s3_data
    with serve_proxy(s3_endpoint) as proxy:
        store = _obstore(proxy, bucket, f"{prefixes[3]}/tree-flat.zarr")
        group = zarrdask.open_group(store, mode="r")
        group.members(max_depth=None)
        proxy.delay = DELAY
        proxy.log.clear()
        members = group.members(max_depth=None)
        assert proxy.log.round_trips() == 1 + TREE_DEPTH
        assert {"a", "b", "a/c", "a/c/v00"} <= {name for name, _ in members}
        proxy.log.clear()
        assert "c" in group.tree()
        assert proxy.log.round_trips() == 1 + TREE_DEPTH
