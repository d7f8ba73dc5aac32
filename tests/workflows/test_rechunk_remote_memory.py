"""A rechunk from S3 to S3 (moto behind a proxy adding 20 ms to every request,
so that requests really overlap) on a ``distributed.LocalCluster`` of two
single-threaded worker processes: each worker's peak of traced memory
(tracemalloc: numpy buffers, fetched and encoded bytes, the HTTP client's
buffers) during the copy stays within 1.1 x ``max_mem``, and reads still
overlap (the proxy's log)."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import zarrdask
from zarrdask.testing.servers import RequestLog, serve_proxy
from zarrdask.workflows import rechunk

MAX_MEM = 8_000_000


def _warm(url: str, options: dict) -> int:
    """In a worker: open the arrays once (the S3 client is made and cached),
    then trace allocations from here on; the bytes traced now."""
    import tracemalloc

    a = zarrdask.open_array(url, mode="r", storage_options=options)
    a[:1, :1, :1]
    tracemalloc.start()
    return tracemalloc.get_traced_memory()[0]


def _reset() -> int:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.reset_peak()
    return tracemalloc.get_traced_memory()[0]


def _peak() -> int:
    import tracemalloc

    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak



@pytest.mark.network
@pytest.mark.slow
def test_a_rechunk_from_s3_to_s3_keeps_each_worker_within_max_mem(s3_endpoint, s3_storage_options, s3_bucket):
    distributed = pytest.importorskip("distributed")
    data = np.random.default_rng(3).normal(size=(32, 512, 512)).astype("f4")  # 32 MB that do not compress
    src_url, dst_url = f"s3://{s3_bucket}/src.zarr", f"s3://{s3_bucket}/dst.zarr"
    zarrdask.create_array(src_url, shape=data.shape, dtype="f4", chunks=(4, 128, 128), data=data,
                          storage_options=s3_storage_options)
    with serve_proxy(s3_endpoint, delay=0.02) as proxy:
        options = dict(s3_storage_options, endpoint_url=proxy.url)
        # the workers' statistical profiler keeps what it samples: off, so that what is traced is the copy's
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                               dashboard_address=":0", silence_logs=40)
        with cluster, distributed.Client(cluster) as client:
            src = zarrdask.open_array(src_url, mode="r", storage_options=options)
            plan = rechunk(src, (32, 32, 32), dst_url, max_mem=MAX_MEM,
                           target_options={"storage_options": options})
            assert plan.nstages == 1 and plan.ntasks >= 8 and plan.peak_memory <= MAX_MEM
            plan.to_dask()
            client.run(_warm, src_url, options)
            base = client.run(_reset)
            proxy.log.clear()
            plan.execute(progress=False)
            peaks = client.run(_peak)
        gets = [r for r in proxy.log.requests if r.method == "GET"]
    held = {worker: peak - base[worker] for worker, peak in peaks.items()}
    assert max(held.values()) <= 1.1 * MAX_MEM, (held, plan.peak_memory)
    assert RequestLog.most_in_flight(gets) >= 4  # a task's reads overlap
    out = zarrdask.open_array(dst_url, mode="r", storage_options=s3_storage_options)
    assert out.chunks == (32, 32, 32)
    np.testing.assert_array_equal(out[...], data)
