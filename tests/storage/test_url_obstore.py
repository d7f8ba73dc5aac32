"""URLs served by obstore (the setting ``url_store``): which store a URL gets,
fsspec ``storage_options`` mapped onto obstore's options against the moto S3
server and the local HTTP server on 127.0.0.1, the error for an option obstore
lacks, and reads, writes and opens through either path giving the same data."""

from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import StorageOptionError, StoreError
from zarrdask.storage import FsspecStore, ObstoreStore, store_from
from zarrdask.storage.obstore_urls import obstore_store_for_url
from zarrdask.testing.servers import serve_proxy

pytest.importorskip("obstore")
pytestmark = pytest.mark.network


@pytest.fixture(params=["obstore", "fsspec"])
def url_store(request):
    with zarrdask.config.set(url_store=request.param):
        yield request.param


def moto_options(endpoint: str) -> dict:
    """s3fs's options for the moto server, as users write them."""
    return {"endpoint_url": endpoint, "key": "x", "secret": "y", "use_listings_cache": False}


def _data(shape=(40, 30)):
    return np.arange(np.prod(shape), dtype="f4").reshape(shape)


# -- which store -----------------------------------------------------------------
@pytest.mark.parametrize("url", ["s3://b/x.zarr", "s3a://b/x.zarr", "gs://b/x.zarr", "az://c/x.zarr",
                                 "https://example.com/x.zarr", "http://127.0.0.1:1/x.zarr"])
def test_the_setting_chooses_the_store(url):
    options = {"account_name": "acct"} if url.startswith("az") else None
    with zarrdask.config.set(url_store="obstore"):
        store = store_from(url, storage_options=options)
        assert isinstance(store, ObstoreStore)
        assert store.kind == {"s3": "s3", "s3a": "s3", "gs": "gcs", "az": "azure"}.get(url.split(":")[0], "http")
    with zarrdask.config.set(url_store="auto"):
        assert isinstance(store_from(url, storage_options=options), ObstoreStore)
    if not url.startswith(("gs", "az")):  # gcsfs and adlfs are not installed here
        with zarrdask.config.set(url_store="fsspec"):
            assert isinstance(store_from(url), FsspecStore)


@pytest.mark.parametrize("choice", ["auto", "obstore"])
def test_what_obstore_refuses_is_a_store_error_naming_it(choice):
    """An Azure URL without an account: obstore's refusal, or with "auto" fsspec (adlfs) is tried."""
    from zarrdask.storage.obstore_urls import ObstoreConfigError

    with zarrdask.config.set(url_store="obstore"), pytest.raises(ObstoreConfigError, match="Account must be"):
        store_from("az://container/x.zarr")


@pytest.mark.parametrize("choice", ["auto", "obstore"])
def test_other_urls_stay_with_fsspec(choice):
    with zarrdask.config.set(url_store=choice):
        assert isinstance(store_from(f"memory://{uuid.uuid4().hex}", mode="w"), FsspecStore)
        assert isinstance(store_from("simplecache::https://example.com/x.zarr"), FsspecStore)


def test_the_setting_is_checked():
    with pytest.raises(ValueError, match="'url_store' must be one of"):
        zarrdask.config.set(url_store="boto")


def test_the_environment_variable_sets_the_default(tmp_path):
    import subprocess
    import sys

    code = "import zarrdask; print(zarrdask.config.get('url_store'))"
    env = dict(os.environ, ZARRDASK_URL_STORE="fsspec")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "fsspec"


# -- storage_options ---------------------------------------------------------------
def test_s3_options_are_mapped():
    store = obstore_store_for_url("s3://bkt/deep/x.zarr/", {
        "key": "K", "secret": "S", "token": "T", "anon": False, "requester_pays": True,
        "client_kwargs": {"endpoint_url": "http://host:9000", "region_name": "eu-west-3"},
        "config_kwargs": {"retries": {"total_max_attempts": 1}, "connect_timeout": 5,
                          "s3": {"addressing_style": "virtual"}, "max_pool_connections": 99},
        "s3_additional_kwargs": {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "kid"},
        "use_listings_cache": False, "skip_instance_cache": True,
    })
    config = {k.removeprefix("aws_"): v for k, v in store.config.items()}
    assert store.prefix == "deep/x.zarr"
    assert config["bucket"] == "bkt" and config["endpoint"] == "http://host:9000"
    assert (config["access_key_id"], config["secret_access_key"], config["session_token"]) == ("K", "S", "T")
    assert config["region"] == "eu-west-3" and config["server_side_encryption"] == "aws:kms"
    assert config["sse_kms_key_id"] == "kid"
    assert str(config["virtual_hosted_style_request"]).lower() == "true"
    assert store.client_options["allow_http"] in (True, "true")
    assert store.retry_config["max_retries"] == 0


def test_gcs_and_azure_options_are_mapped():
    gcs = obstore_store_for_url("gs://bkt/x", {"token": "anon", "project": "p", "endpoint_url": "http://gcs:1"})
    config = {k.removeprefix("google_"): v for k, v in gcs.config.items()}
    assert config["bucket"] == "bkt" and config["base_url"] == "http://gcs:1"
    assert str(config["skip_signature"]).lower() == "true"
    az = obstore_store_for_url("abfs://cont@acct.dfs.core.windows.net/p/x.zarr", {
        "connection_string": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;"
                             "BlobEndpoint=https://acct.blob.core.windows.net/"})
    config = {k.removeprefix("azure_storage_").removeprefix("azure_"): v for k, v in az.config.items()}
    assert config["account_name"] == "acct" and config["account_key"] == "a2V5"
    assert config["container_name"] == "cont" and az.prefix == "p/x.zarr"
    sas = obstore_store_for_url("az://cont/x", {"account_name": "acct", "sas_token": "?sv=1&sig=2"})
    assert "sv=1&sig=2" in sas.config.values()


@pytest.mark.parametrize("url, options, named", [
    ("s3://b/x", {"session": object()}, "session"),
    ("s3://b/x", {"client_kwargs": {"region_name": "r", "proxies": {}}}, "client_kwargs={'proxies': ...}"),
    ("s3://b/x", {"config_kwargs": {"signature_version": "s3v4"}}, "config_kwargs={'signature_version': ...}"),
    ("gs://b/x", {"token": "browser"}, "token"),
    ("az://c/x", {"credential": object()}, "credential"),
    ("https://h/x", {"auth": ("u", "p")}, "auth"),
])
def test_an_option_obstore_lacks_is_named(url, options, named):
    with zarrdask.config.set(url_store="obstore"), pytest.raises(StorageOptionError) as caught:
        store_from(url, storage_options=options)
    message = str(caught.value)
    assert named in message and url in message and "url_store='fsspec'" in message
    assert isinstance(caught.value, ValueError)
    assert caught.value.options == (named.split("=")[0],)


def test_auto_falls_back_to_fsspec_for_options_obstore_lacks(s3_endpoint):
    options = dict(moto_options(s3_endpoint), config_kwargs={"signature_version": "s3v4"})
    with zarrdask.config.set(url_store="auto"):
        assert isinstance(store_from("s3://b/x", storage_options=options), FsspecStore)


def test_s3_options_reach_moto(s3_endpoint, s3_bucket):
    """endpoint_url, key/secret and region (client_kwargs) work against the server."""
    options = {"key": "x", "secret": "y", "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}}
    with zarrdask.config.set(url_store="obstore"):
        a = zarrdask.create_array(f"s3://{s3_bucket}/m.zarr", shape=(10,), dtype="i4", chunks=(4,),
                                  storage_options=options)
        a[...] = np.arange(10)
    with zarrdask.config.set(url_store="fsspec"):
        b = zarrdask.open_array(f"s3://{s3_bucket}/m.zarr", storage_options=moto_options(s3_endpoint))
        np.testing.assert_array_equal(b[...], np.arange(10))


def test_anon_reads_a_public_bucket_unsigned(s3_endpoint, s3_bucket, s3_client):
    with zarrdask.config.set(url_store="fsspec"):
        zarrdask.create_array(f"s3://{s3_bucket}/p.zarr", shape=(4,), dtype="u1", chunks=(4,),
                              storage_options=moto_options(s3_endpoint))[...] = 7
    anon = {"anon": True, "endpoint_url": s3_endpoint}
    with zarrdask.config.set(url_store="obstore"):
        with pytest.raises(StoreError, match="403"):  # unsigned requests: refused while the objects are private
            zarrdask.open_array(f"s3://{s3_bucket}/p.zarr", storage_options=anon)
        for key in ("p.zarr/zarr.json", "p.zarr/c/0"):
            s3_client.put_object_acl(Bucket=s3_bucket, Key=key, ACL="public-read")
        np.testing.assert_array_equal(zarrdask.open_array(f"s3://{s3_bucket}/p.zarr", storage_options=anon)[...], 7)


def test_environment_credentials_work_on_both_paths(s3_endpoint, s3_bucket, monkeypatch, url_store):
    """No storage options: the key, secret, region and endpoint come from AWS_* variables."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    url = f"s3://{s3_bucket}/env-{url_store}.zarr"
    a = zarrdask.create_array(url, shape=(6,), dtype="i2", chunks=(3,))
    assert type(a.store).__name__ == {"obstore": "ObstoreStore", "fsspec": "FsspecStore"}[url_store]
    a[...] = np.arange(6)
    np.testing.assert_array_equal(zarrdask.open_array(url)[...], np.arange(6))


# -- the same data through either path ----------------------------------------------
def test_s3_roundtrip_is_the_same_on_both_paths(s3_endpoint, s3_bucket):
    data = _data()
    options = moto_options(s3_endpoint)
    stored = {}
    for choice in ("obstore", "fsspec"):
        url = f"s3://{s3_bucket}/{choice}.zarr"
        with zarrdask.config.set(url_store=choice):
            g = zarrdask.open_group(url, mode="w", storage_options=options)
            assert type(g.store).__name__ == {"obstore": "ObstoreStore", "fsspec": "FsspecStore"}[choice]
            g.create_array("x", shape=data.shape, dtype="f4", chunks=(16, 16), shards=(32, 32),
                           attributes={"u": "m"})[...] = data
            g.create_array("y", shape=(5,), dtype="i8", chunks=(2,))[...] = np.arange(5)
            zarrdask.consolidate_metadata(url, storage_options=options)
        store = store_from(url, storage_options=options)
        keys = sorted(store.list())
        stored[choice] = dict(zip(keys, store.get_many(keys)))
    assert stored["obstore"] == stored["fsspec"]
    for reader in ("obstore", "fsspec"):
        for writer in ("obstore", "fsspec"):
            with zarrdask.config.set(url_store=reader):
                g = zarrdask.open_group(f"s3://{s3_bucket}/{writer}.zarr", mode="r", storage_options=options)
                np.testing.assert_array_equal(g["x"][5:37, 3:29], data[5:37, 3:29])
                assert dict(g["x"].attrs) == {"u": "m"} and sorted(g.keys()) == ["x", "y"]


def test_dask_through_a_url(s3_endpoint, s3_bucket, url_store):
    import dask.array as da

    x = da.from_array(_data(), chunks=(20, 15))
    url = f"s3://{s3_bucket}/dask-{url_store}.zarr"
    zarrdask.to_zarr(x, url, chunks=(20, 15), storage_options=moto_options(s3_endpoint))
    y = zarrdask.from_zarr(url, storage_options=moto_options(s3_endpoint))
    np.testing.assert_array_equal(y.compute(), _data())


def test_xarray_open_dataset_on_s3(s3_endpoint, s3_bucket, url_store):
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"t": (("y", "x"), _data((6, 8)))}, coords={"y": np.arange(6), "x": np.arange(8) * 2.0})
    url = f"s3://{s3_bucket}/xr-{url_store}.zarr"
    options = moto_options(s3_endpoint)
    ds.to_zarr(url, storage_options=options, zarr_format=3, consolidated=True)  # xarray's own writer
    opened = xr.open_dataset(url, engine="zarrdask", storage_options=options, chunks={})
    assert type(opened.t.encoding.get("preferred_chunks")) is dict
    xr.testing.assert_identical(opened.load(), xr.open_dataset(url, engine="zarr", storage_options=options))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_hierarchy_over_http(http_server, url_store, zarr_format):
    xr = pytest.importorskip("xarray")
    name = f"h{uuid.uuid4().hex}.zarr"
    ds = xr.Dataset({"t": (("y", "x"), _data((6, 8)))}, coords={"y": np.arange(6)})
    ds.to_zarr(http_server.root / name, zarr_format=zarr_format, consolidated=True)
    url = f"{http_server.url}/{name}"
    store = store_from(url)
    assert type(store).__name__ == {"obstore": "ObstoreStore", "fsspec": "FsspecStore"}[url_store]
    assert not store.listable and not store.writable
    http_server.log.clear()
    opened = xr.open_dataset(url, engine="zarrdask")
    xr.testing.assert_identical(opened, ds)
    np.testing.assert_array_equal(zarrdask.open_group(url)["t"][1:4], _data((6, 8))[1:4])


def test_http_headers_are_sent(http_server):
    name = f"h{uuid.uuid4().hex}.zarr"
    zarrdask.create_array(http_server.root / name, shape=(3,), dtype="u1", chunks=(3,))[...] = 1
    with zarrdask.config.set(url_store="obstore"):
        a = zarrdask.open_array(f"{http_server.url}/{name}",
                                storage_options={"client_kwargs": {"headers": {"X-Zarrdask-Test": "42"}}})
        np.testing.assert_array_equal(a[...], 1)
    store = obstore_store_for_url(f"{http_server.url}/{name}", {"headers": {"X-Zarrdask-Test": "42"}})
    assert store.client_options["default_headers"] == {"x-zarrdask-test": b"42"}


# -- guarantees ----------------------------------------------------------------------
def test_a_url_made_store_declares_what_obstore_stores_declare(s3_endpoint, s3_bucket, http_server):
    with zarrdask.config.set(url_store="obstore"):
        s3 = store_from(f"s3://{s3_bucket}/c.zarr", mode="w", storage_options=moto_options(s3_endpoint))
        http = store_from(f"{http_server.url}/c.zarr")
    assert s3.capabilities == {"streaming", "background_uploads", "exact_readers", "conditional_writes"}
    assert http.capabilities == {"streaming"}


def test_a_conflicting_conditional_write_through_a_url(s3_endpoint, s3_bucket):
    """The URL-made store puts conditionally: a stale version is refused, a fresh one stored."""
    with zarrdask.config.set(url_store="obstore"):
        store = store_from(f"s3://{s3_bucket}/cond.zarr", mode="w", storage_options=moto_options(s3_endpoint))
    store.set("k", b"1")
    [(value, version)] = store.get_versioned(["k"])
    store.set("k", b"2")  # another writer meanwhile
    assert store.set_if({"k": (b"3", version)}) == ["k"]
    assert store.get("k") == b"2"
    [(_, fresh)] = store.get_versioned(["k"])
    assert store.set_if({"k": (b"3", fresh)}) == [] and store.get("k") == b"3"
    assert store.set_if({"new": (b"n", None)}) == [] and store.set_if({"new": (b"m", None)}) == ["new"]


def test_transient_failures_are_retried_through_a_url(s3_endpoint, s3_bucket):
    options = dict(moto_options(s3_endpoint), config_kwargs={"retries": {"total_max_attempts": 1}})
    with serve_proxy(s3_endpoint) as proxy, zarrdask.config.set(url_store="obstore", retry_backoff=0.001):
        options["endpoint_url"] = proxy.url
        a = zarrdask.create_array(f"s3://{s3_bucket}/r.zarr", shape=(8,), dtype="u1", chunks=(4,),
                                  storage_options=options)
        a[...] = 3
        proxy.log.clear()
        proxy.faults.fail_next(2, "503", methods=("GET",))
        np.testing.assert_array_equal(a[...], 3)
        statuses = [r.status for r in proxy.log.requests]
        assert statuses.count(503) == 2 and statuses.count(200) == 2


def test_a_large_value_is_one_put(s3_endpoint, s3_bucket):
    """obstore would upload a value over 5 MiB in parts (create, parts, complete); one PUT it is."""
    with serve_proxy(s3_endpoint) as proxy, zarrdask.config.set(url_store="obstore"):
        store = store_from(f"s3://{s3_bucket}/big.zarr", mode="w",
                           storage_options=dict(moto_options(s3_endpoint), endpoint_url=proxy.url))
        value = np.random.default_rng(0).bytes(12 << 20)
        store.set("c/0", value)
        assert [(r.method, r.path.split("?")[0]) for r in proxy.log.requests] == [
            ("PUT", f"/{s3_bucket}/big.zarr/c/0")]
        assert store.get("c/0") == value


def test_the_same_url_reuses_its_client(s3_endpoint, monkeypatch):
    """Opening a URL again reuses the obstore store (its HTTP client and connections); other
    options or other credentials in the environment make another."""
    options = moto_options(s3_endpoint)
    with zarrdask.config.set(url_store="obstore"):
        first = store_from("s3://b/x.zarr", storage_options=options).obstore_store
        assert store_from("s3://b/x.zarr", storage_options=dict(options)).obstore_store is first
        assert store_from("s3://b/y.zarr", storage_options=options).obstore_store is not first
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "another")
        second = store_from("s3://b/x.zarr", storage_options=options).obstore_store
        assert second is not first
        # a changed value, a variable gone, a lower-case name (matched as upper case): each another store
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a third")
        third = store_from("s3://b/x.zarr", storage_options=options).obstore_store
        assert third is not second
        monkeypatch.setenv("aws_session_token", "t")
        fourth = store_from("s3://b/x.zarr", storage_options=options).obstore_store
        assert fourth is not third
        monkeypatch.delenv("aws_session_token")
        assert store_from("s3://b/x.zarr", storage_options=options).obstore_store is third
        monkeypatch.setenv("UNRELATED_TO_STORES", "x")  # not a store's variable: the same one
        assert store_from("s3://b/x.zarr", storage_options=options).obstore_store is third


def test_a_named_aws_profile_works_on_both_paths(s3_endpoint, s3_bucket, tmp_path, monkeypatch, url_store):
    (tmp_path / "credentials").write_text("[zd-test]\naws_access_key_id = x\naws_secret_access_key = y\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    options = {"profile": "zd-test", "endpoint_url": s3_endpoint}
    url = f"s3://{s3_bucket}/profile-{url_store}.zarr"
    a = zarrdask.create_array(url, shape=(5,), dtype="u2", chunks=(5,), storage_options=options)
    a[...] = np.arange(5)
    np.testing.assert_array_equal(zarrdask.open_array(url, storage_options=options)[...], np.arange(5))


# -- reads handing each range over as it arrives ---------------------------------------
def _served_value(http_server) -> tuple[str, bytes]:
    name = f"v{uuid.uuid4().hex}"
    payload = np.random.default_rng(7).integers(0, 256, 100_000, dtype=np.uint8).tobytes()
    (http_server.root / name).write_bytes(payload)
    return name, payload


_RANGES = [(1_000, 5_000), (20_000, 3_000), (90_000, 10_000)]


def test_an_obstore_reader_hands_each_range_over_as_it_arrives(http_server, monkeypatch):
    """read_each: the same requests as read (one per range, each conditional on
    the version the first read saw), every range's bytes handed over once, by
    the thread that got them, while the others are still on their way."""
    import threading

    from zarrdask.storage.byte_range import RangeRequest

    name, payload = _served_value(http_server)
    with zarrdask.config.set(url_store="obstore"):
        reader = store_from(http_server.url).reader(name)
    assert bytes(reader.read([RangeRequest(0, 10)])[0]) == payload[:10]  # the first read fixes the version
    backend = reader.backend
    get = backend.get
    first_in = threading.Event()
    waited = []

    def held(header, if_match, *rest):  # the last range asked for only once the first is handed over
        if header == "bytes=90000-99999":
            waited.append(first_in.wait(10))
        return get(header, if_match, *rest)

    monkeypatch.setattr(backend, "get", held)
    handed = []

    def each(item):
        j, data = item
        handed.append((j, bytes(data), threading.get_ident()))
        if j == 0:
            first_in.set()

    http_server.log.clear()
    got = reader.read_each([RangeRequest(s, n) for s, n in _RANGES], each)
    expected = [payload[s : s + n] for s, n in _RANGES]
    assert [bytes(g) for g in got] == expected
    assert waited == [True]
    assert sorted((j, d) for j, d, _ in handed) == list(enumerate(expected))
    requests = http_server.log.requests
    assert sorted(r.range for r in requests) == sorted(f"bytes={s}-{s + n - 1}" for s, n in _RANGES)
    assert all(r.method == "GET" and r.if_match is not None for r in requests)


def test_a_reader_hands_nothing_over_from_a_replaced_value(http_server):
    from zarrdask.errors import ValueChangedError
    from zarrdask.storage.byte_range import RangeRequest

    name, payload = _served_value(http_server)
    with zarrdask.config.set(url_store="obstore"):
        reader = store_from(http_server.url).reader(name)
    reader.read([RangeRequest(0, 10)])
    path = http_server.root / name
    path.write_bytes(payload[::-1])
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    handed = []
    with pytest.raises(ValueChangedError, match="no longer has the version"):
        reader.read_each([RangeRequest(s, n) for s, n in _RANGES], handed.append)
    assert handed == []


def test_read_each_gives_what_read_gives_on_either_path(http_server, url_store):
    """Before the first read, and through fsspec (whose requests are coroutines
    on its event loop, which must not decode), each range is read on its own."""
    from zarrdask.storage.byte_range import RangeRequest

    name, payload = _served_value(http_server)
    reader = store_from(http_server.url).reader(name)
    handed = []
    got = reader.read_each([RangeRequest(s, n) for s, n in _RANGES], lambda item: handed.append(item))
    expected = [payload[s : s + n] for s, n in _RANGES]
    assert [bytes(g) for g in got] == expected
    assert sorted((j, bytes(d)) for j, d in handed) == list(enumerate(expected))
    assert store_from(http_server.url).reader(f"missing-{name}").read_each([RangeRequest(0, 5)], handed.append) is None
