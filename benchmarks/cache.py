"""Chunk cache benchmark: repeated and overlapping reads, cache off / on / revalidating,
on local files and on S3 (moto behind a latency proxy).

    python -m benchmarks.cache --latency 20 --repeat 3

Data: float32 4096x4096, chunks 256x256, zstd level 1 (compressible data from
``benchmarks.cases.make_data``; the array of ``benchmarks.remote``), and the
same array sharded (shards 2048x2048). Rows:

* ``repeated 1024² window``: a 1024x1024 window read a second time (the
  second read is measured);
* ``10 overlapping windows (notebook loop)``: ten 1024x1024 windows, each
  128 elements right of and below the one before, read one after another;
* ``overlapping-window dask computation``: the means of the same ten windows
  in one dask graph (threads scheduler, ``from_zarr(..., chunks=(384, 384),
  cache=...)``: blocks that do not line up with the stored chunks, so tasks
  share chunks, as rechunk stages and windows do).

Per row, store and mode: the best time of ``--repeat`` (the cache emptied
before each), requests (the proxy's log for S3, a ``CountingStore`` for local
files: keys and ranges asked for), the bytes the cache holds after it, and the
process's peak RSS growth over the row. The table also gives the time of a cache hit (the second read served
from stored bytes: decoding only) against the decode-free copy of the same
window, to show what caching stored rather than decoded bytes costs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any, Callable

import numpy as np

from . import remote
from ._rss import read_peak, reset_peak
from .run import machine_meta, save_results

WINDOWS = [(slice(1024 + 128 * i, 2048 + 128 * i), slice(1024 + 128 * i, 2048 + 128 * i)) for i in range(10)]
MODES = (False, True, "revalidate")
ROWS = ("repeated 1024² window", "10 overlapping windows (notebook loop)", "overlapping-window dask computation")


def _repeated(a: Any) -> None:
    a[WINDOWS[0]]  # not measured: fills the cache


def _loop(a: Any) -> None:
    for w in WINDOWS:
        a[w]


def _dask(a: Any, mode: Any) -> None:
    import dask

    import zarrdask

    x = zarrdask.from_zarr(a, chunks=(384, 384), cache=mode)  # blocks across stored chunks: each read by several tasks
    dask.compute(*[x[w].mean() for w in WINDOWS], scheduler="threads")


def _measure(run: Callable[[], None], before: Callable[[], None], count: Callable[[], int], repeat: int) -> dict:
    from zarrdask.storage.cache import chunk_cache

    best, requests, peak, held = float("inf"), 0, 0, 0
    for _ in range(repeat):
        chunk_cache().clear()
        before()
        base = reset_peak()
        t0 = time.perf_counter()
        start = count()
        run()
        best = min(best, time.perf_counter() - t0)
        requests = count() - start
        peak = max(peak, read_peak() - base)
        held = max(held, chunk_cache().nbytes)
    return {"seconds": best, "requests": requests, "peak_rss_mib": peak / 1024, "cache_mib": held / 2**20}


def _rows(open_array: Callable[[Any], Any], count: Callable[[], int], repeat: int) -> list[dict]:
    out = []
    for mode in MODES:
        a = open_array(mode)
        for row in ROWS:
            if row == ROWS[0]:
                result = _measure(lambda: a[WINDOWS[0]], lambda: _repeated(a), count, repeat)
            elif row == ROWS[1]:
                result = _measure(lambda: _loop(a), lambda: None, count, repeat)
            else:
                result = _measure(lambda: _dask(a, mode), lambda: None, count, repeat)
            out.append({"row": row, "cache": {False: "off", True: "on"}.get(mode, mode), **result})
            print(out[-1], flush=True)
    return out


def _hit_cost() -> dict:
    """A 1024² window from cached stored bytes (decode only) against a copy of decoded data."""
    import zarrdask
    from zarrdask.storage import MemoryStore

    data = remote._data()
    a = zarrdask.create_array(MemoryStore(), shape=data.shape, dtype="f4", chunks=(remote.CHUNK, remote.CHUNK),
                              compressors=remote._ZSTD, cache=True)
    a[...] = data
    a[WINDOWS[0]]
    t0 = time.perf_counter()
    for _ in range(10):
        a[WINDOWS[0]]
    hit = (time.perf_counter() - t0) / 10
    t0 = time.perf_counter()
    for _ in range(10):
        np.array(data[WINDOWS[0]])
    copy = (time.perf_counter() - t0) / 10
    stored = sum(len(e.data) for e in __import__("zarrdask.storage.cache").storage.cache.chunk_cache()._entries.values())
    return {"hit_seconds": hit, "decoded_copy_seconds": copy, "stored_bytes": stored,
            "decoded_bytes": 1024 * 1024 * 4}


def run(latency: float, repeat: int) -> dict:
    import zarrdask
    from zarrdask.storage import CountingStore, FsspecStore, LocalStore
    from zarrdask.testing.servers import serve_proxy

    results: dict = {"hit_cost": _hit_cost(), "rows": []}
    with tempfile.TemporaryDirectory() as root:
        remote.prepare(root)
        for name in ("chunked", "sharded"):
            counting = CountingStore(LocalStore(os.path.join(root, f"{name}.zarr")))

            def local_count(c: Any = counting) -> int:
                k = c.counts
                return k["keys_requested"] + k["ranges_requested"]

            for r in _rows(lambda mode, c=counting: zarrdask.open_array(c, mode="r", cache=mode), local_count,
                           repeat):
                results["rows"].append({"store": f"local {name}", **r})
        moto, moto_url = remote._start_moto()
        try:
            options = {"endpoint_url": moto_url, "key": "x", "secret": "y"}
            for name in ("chunked", "sharded"):
                url = f"s3://{remote.BUCKET}/{name}.zarr"
                src = zarrdask.open_array(os.path.join(root, f"{name}.zarr"), mode="r")
                dst = zarrdask.create_array(FsspecStore(url, storage_options=options), shape=src.shape,
                                            dtype=src.dtype, chunks=src.chunks, shards=src.shards,
                                            compressors=remote._ZSTD, fill_value=0, overwrite=True)
                dst[...] = src[...]
            with serve_proxy(moto_url) as proxy:
                proxy.delay = latency / 1000
                proxied = dict(options, endpoint_url=proxy.url)
                for name in ("chunked", "sharded"):
                    url = f"s3://{remote.BUCKET}/{name}.zarr"
                    rows = _rows(lambda mode, u=url: zarrdask.open_array(
                        FsspecStore(u, storage_options=proxied), mode="r", cache=mode),
                        lambda: len(proxy.log.requests), repeat)
                    for r in rows:
                        results["rows"].append({"store": f"S3 {latency:g} ms {name}", **r})
        finally:
            moto.terminate()
            moto.wait(10)
    return results


def table(results: dict) -> str:
    lines = ["| store | row | cache | time (s) | requests | held by the cache (MiB) | peak RSS growth (MiB) "
             "| speed-up vs off |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    off = {(r["store"], r["row"]): r["seconds"] for r in results["rows"] if r["cache"] == "off"}
    for r in results["rows"]:
        ratio = off[(r["store"], r["row"])] / r["seconds"] if r["seconds"] else float("inf")
        lines.append(f"| {r['store']} | {r['row']} | {r['cache']} | {r['seconds']:.3f} | {r['requests']} | "
                     f"{r.get('cache_mib', 0):.1f} | {r['peak_rss_mib']:.0f} | {ratio:.1f}x |")
    h = results["hit_cost"]
    lines.append("")
    lines.append(f"A cached 1024² window (chunked, zstd): {h['hit_seconds'] * 1e3:.1f} ms from "
                 f"{h['stored_bytes'] / 2**20:.1f} MiB of stored bytes (decoding); a copy of the same window "
                 f"already decoded: {h['decoded_copy_seconds'] * 1e3:.1f} ms from {h['decoded_bytes'] / 2**20:.0f} MiB.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--latency", type=float, default=20, help="ms added to every S3 request")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="benchmarks/results")
    args = p.parse_args(argv)
    results = run(args.latency, args.repeat)
    text = table(results)
    os.makedirs(args.out, exist_ok=True)
    save_results(args.out, "cache", machine_meta("s3fs", "moto"), results, results["rows"], text)
    print(text)


if __name__ == "__main__":
    main()
