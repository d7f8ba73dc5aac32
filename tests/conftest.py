"""Shared test fixtures: local S3 (moto) and HTTP servers, started once per session.

Fixtures
--------
s3_endpoint
    URL of a moto S3 server on 127.0.0.1 (dummy credentials set in the env).
s3_storage_options
    fsspec/s3fs ``storage_options`` for that server (listings cache disabled;
    the instance cache is kept, since making an s3fs client is slow).
s3_client
    A boto3 S3 client for that server.
s3_bucket
    A fresh, empty bucket name per test.
http_server
    A :class:`zarrdask.testing.servers.Server`: a static server with HTTP range
    and ETag support serving the directory ``root``, for the session.
faulty_http
    A fresh such server per test, whose ``faults`` plan, ``log`` and switches
    (``etags``, ``if_match``) the test may use and change.
s3_proxy
    ``(Server, storage_options)``: a fault-injecting, logging proxy in front of
    the moto server, and s3fs options that reach moto through it with s3fs's and
    botocore's own retries turned off (so zarrdask's retries are what is
    tested).
"""

from __future__ import annotations

import os
import threading
import uuid

import pytest

# Assertion rewriting for the reusable conformance suites (must precede imports).
pytest.register_assert_rewrite("zarrdask.testing")

_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "x",
    "AWS_SECRET_ACCESS_KEY": "y",
    "AWS_SESSION_TOKEN": "z",
    "AWS_SECURITY_TOKEN": "z",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture(scope="session")
def s3_endpoint():
    """Start a moto S3 server on 127.0.0.1 for the session; yield its URL."""
    server_mod = pytest.importorskip("moto.server")
    saved = {name: os.environ.get(name) for name in _AWS_ENV}
    os.environ.update(_AWS_ENV)
    # moto checks a PUT's If-Match / If-None-Match and then stores the object, two steps
    # its server threads can interleave: two conditional PUTs racing on one key may both
    # pass the check, and one update is lost. S3 makes the check and the write one step;
    # so does this lock.
    from moto.s3.responses import S3Response

    put_object, lock = S3Response.put_object, threading.Lock()

    def put_object_atomically(self):
        with lock:
            return put_object(self)

    S3Response.put_object = put_object_atomically
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        S3Response.put_object = put_object
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="session")
def s3_storage_options(s3_endpoint):
    """``storage_options`` for s3fs talking to the moto server, without caches."""
    pytest.importorskip("s3fs")
    return {
        "endpoint_url": s3_endpoint,
        "key": "x",
        "secret": "y",
        "use_listings_cache": False,
    }


@pytest.fixture(scope="session")
def s3_client(s3_endpoint):
    """A boto3 S3 client for the moto server."""
    boto3 = pytest.importorskip("boto3")
    return boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="x",
        aws_secret_access_key="y",
        region_name="us-east-1",
    )


@pytest.fixture
def s3_bucket(s3_client):
    """Create a fresh, empty bucket on the moto server; yield its name."""
    name = f"test-{uuid.uuid4().hex[:16]}"
    s3_client.create_bucket(Bucket=name)
    yield name


@pytest.fixture(scope="session")
def http_server(tmp_path_factory):
    """A range-capable static HTTP server on 127.0.0.1: ``Server`` (``url``, ``root``)."""
    from zarrdask.testing.servers import serve_directory

    root = tmp_path_factory.mktemp("http-root")
    with serve_directory(root) as server:
        yield server


@pytest.fixture
def faulty_http(tmp_path):
    """A range-capable HTTP server of its own, with a failure plan: ``Server``."""
    from zarrdask.testing.servers import serve_directory

    root = tmp_path / "served"
    root.mkdir()
    with serve_directory(root) as server:
        yield server


@pytest.fixture
def s3_proxy(s3_endpoint, s3_storage_options):
    """A fault-injecting proxy to the moto server and s3fs options that use it."""
    from zarrdask.testing.servers import serve_proxy

    with serve_proxy(s3_endpoint) as proxy:
        options = dict(
            s3_storage_options,
            endpoint_url=proxy.url,
            config_kwargs={"retries": {"total_max_attempts": 1}},  # botocore: no retries
        )
        yield proxy, options


# -- zarr-python is a test peer, not a dependency ---------------------------------------
try:
    import zarr  # noqa: F401

    HAVE_ZARR_PYTHON = True
except ImportError:
    HAVE_ZARR_PYTHON = False

#: what a test (or a notebook cell) raises when it needs zarr-python: importing it, or
#: xarray's engine="zarr" without it
_NO_ZARR_PYTHON = ("No module named 'zarr'", "The zarr package is required")


def _skip_if_only_zarr_python_is_missing():
    """Without zarr-python installed (ci/min_versions.sh runs the suite with every
    runtime dependency at its floor, where zarr-python cannot be installed), a test
    that fails (or whose fixture fails) only because it compares with zarr-python or
    xarray's own zarr engine is skipped, saying so. With zarr-python installed this
    does nothing."""
    try:
        return (yield)
    except Exception as failure:
        if HAVE_ZARR_PYTHON or not any(text in str(failure) for text in _NO_ZARR_PYTHON):
            raise
        pytest.skip("needs zarr-python (a test peer), which is not installed")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _skip_if_only_zarr_python_is_missing())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _skip_if_only_zarr_python_is_missing())
