"""S3 stores for the rechunk benchmark (``python -m benchmarks.rechunk --store s3``),
and its chart.

A moto S3 server on 127.0.0.1 (in the orchestrator's process), behind a
proxy (:func:`zarrdask.testing.servers.serve_proxy`) that adds ``latency``
seconds to every request, as an object store across a network would: the
source, the target and the intermediate are ``s3://`` URLs in one bucket,
read and written by every run through the proxy. The source is written
once per run straight to moto.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Iterator

#: dummy credentials for moto, set in the orchestrator and passed to every run
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "x",
    "AWS_SECRET_ACCESS_KEY": "y",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
BUCKET = "zarrdask-rechunk-bench"


class S3:
    """The benchmark's bucket: ``storage_options`` reach it through the proxy
    (what runs use), ``direct`` straight (setting up and checking)."""

    def __init__(self, endpoint: str, proxy_url: str, latency: float) -> None:
        base = {"key": "x", "secret": "y", "use_listings_cache": False}
        self.direct = dict(base, endpoint_url=endpoint)
        self.storage_options = dict(base, endpoint_url=proxy_url)
        self.latency = latency

    @staticmethod
    def url(name: str) -> str:
        return f"s3://{BUCKET}/{name}"

    def _fs(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(**self.direct)

    def remove(self, url: str) -> None:
        fs = self._fs()
        if fs.exists(url):
            fs.rm(url, recursive=True)


def bytes_under(url: str, storage_options: dict | None) -> int:
    """Bytes stored under ``url`` (an ``s3://`` URL with ``storage_options``, or a local path)."""
    if storage_options is None:
        total = 0
        for root, _, files in os.walk(url):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.path.getsize(os.path.join(root, name))
        return total
    import s3fs

    fs = s3fs.S3FileSystem(**storage_options)
    return int(fs.du(url)) if fs.exists(url) else 0


@contextlib.contextmanager
def s3_bucket(latency: float) -> Iterator[S3]:
    """A moto S3 server with the benchmark's bucket, behind a proxy adding ``latency`` s per request."""
    import boto3
    from moto.server import ThreadedMotoServer

    from zarrdask.testing.servers import serve_proxy

    os.environ.update(AWS_ENV)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # not a line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        with serve_proxy(endpoint, delay=latency) as proxy:
            yield S3(endpoint, proxy.url, latency)
    finally:
        server.stop()
