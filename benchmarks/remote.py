"""Remote benchmark: zarrdask, zarr-python 3 and tensorstore against a
latency-injecting HTTP range server and a latency proxy in front of moto's S3
server, with request counts and bytes transferred measured on the servers.

    python -m benchmarks.remote --latency 0 20 --repeat 3

Data: float32 4096x4096, bytes + zstd level 1 (compressible data from
``benchmarks.cases.make_data``): ``chunked`` (256 chunks of 256x256),
``sharded`` (4 shards of 2048x2048, inner chunks 256x256, index at the end),
and a v3 group of 100 small arrays without consolidated metadata. Each
implementation runs in its own process, moto in another; the HTTP server and
the proxy run in this one. The repetitions alternate between the
implementations' processes, so the machine's load falls on all of them
alike. zarrdask runs twice: ``zarrdask-fsspec`` opens the URLs through
fsspec (s3fs, fsspec's HTTP) and ``zarrdask-obstore`` through obstore
(setting ``url_store``), with the same ``storage_options``. Times are
the best of ``--repeat``; requests and bytes are those of the last repetition
(they do not vary). The ``opens`` rows (on by default) are those of
:mod:`benchmarks.opens`: a CF-like dataset and a DataTree opened with xarray,
round trips and time, zarrdask against engine="zarr".

``--impls floor`` (not run by default) adds a diagnostic to the window row:
the same twelve requests made with the same blocking obstore calls on as many
threads as zarrdask uses, each inner chunk decoded by the same libzstd into a
scratch buffer and copied into place, and nothing else (no indexing, readers,
retries or pools; the index's checksum is checked). zarrdask's distance from
the floor is what its own machinery costs; the floor's distance from
tensorstore is what the transport costs.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import numpy as np

from . import in_turn

SIZE = 4096
CHUNK = 256
SHARD = 2048
WINDOW = (slice(1536, 2560), slice(1536, 2560))  # 1024x1024, 2x2 inner chunks in each of 4 shards
N_ARRAYS = 100
BUCKET = "zarrdask-bench"
#: zarrdask through each of its URL paths (the setting ``url_store``); "zarrdask" alone
#: (accepted by ``--impls``) is the default path
IMPLS = ("zarrdask-fsspec", "zarrdask-obstore", "zarr-python", "tensorstore")
#: the operations of the diagnostic implementation ``floor`` (``--impls floor``)
FLOOR_OPS = ("window",)
ZARRDASK = {"zarrdask": None, "zarrdask-fsspec": "fsspec", "zarrdask-obstore": "obstore"}
OPS = (
    ("open100", "open 100 arrays of a non-consolidated group by name"),
    ("open1", "open an array (format not given)"),
    ("window", "1024² window across 4 shards (2x2 inner chunks in each)"),
    ("read_sharded", "full read, sharded (4 shards)"),
    ("read_chunked", "full read, 256 chunks"),
    ("write_chunked", "S3 write, 256 chunks"),
    ("write_sharded", "S3 write, sharded"),
)
_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
}
_ZSTD = [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}]


def _data() -> np.ndarray:
    from .cases import make_data

    return make_data(SIZE)


# -- the data served ---------------------------------------------------------
def prepare(root: str) -> dict:
    import zarrdask

    data = _data()
    a = zarrdask.create_array(os.path.join(root, "chunked.zarr"), shape=data.shape, dtype="f4",
                              chunks=(CHUNK, CHUNK), compressors=_ZSTD, fill_value=0)
    a[...] = data
    s = zarrdask.create_array(os.path.join(root, "sharded.zarr"), shape=data.shape, dtype="f4",
                              chunks=(CHUNK, CHUNK), shards=(SHARD, SHARD), compressors=_ZSTD, fill_value=0)
    s[...] = data
    g = zarrdask.open_group(os.path.join(root, "group.zarr"), mode="w")
    for i in range(N_ARRAYS):
        g.create_array(f"a{i:03d}", shape=(100,), dtype="f4", chunks=(100,))
    return {"needed_window_bytes": _window_bytes(os.path.join(root, "sharded.zarr"))}


#: inner chunks along each side of a shard, and the bytes of a shard's index (16 per inner chunk, a CRC32C)
_PER_SHARD = SHARD // CHUNK
_INDEX_SIZE = _PER_SHARD * _PER_SHARD * 16 + 4


def _window_chunks() -> tuple[range, range]:
    """The rows and the columns of inner chunks (over the whole array) the window touches."""
    return tuple(range(w.start // CHUNK, (w.stop - 1) // CHUNK + 1) for w in WINDOW)  # type: ignore[return-value]


def _window_bytes(path: str) -> int:
    """Bytes of the inner chunks the window needs, plus the indexes of their shards."""
    cps, index_size = _PER_SHARD, _INDEX_SIZE
    total = 0
    rows, cols = _window_chunks()
    shards = set()
    for r in rows:
        for c in cols:
            shard = (r // cps, c // cps)
            with open(os.path.join(path, "c", str(shard[0]), str(shard[1])), "rb") as f:
                raw = f.read()
            entries = np.frombuffer(raw[-index_size:-4], dtype="<u8").reshape(cps, cps, 2)
            total += int(entries[r % cps, c % cps, 1])
            shards.add(shard)
    return total + len(shards) * index_size


# -- one implementation, in its own process ------------------------------------------
class Worker:
    def __init__(self, impl: str, http: str, s3: str) -> None:
        self.impl, self.http, self.s3 = impl, http, s3
        self.data = _data()
        self.n = 0
        self.handles: dict = {}

    def _fresh(self, what: str) -> str:
        self.n += 1
        return f"{self.impl}/{what}-{self.n}-{uuid.uuid4().hex[:6]}.zarr"

    # zarrdask --------------------------------------------------------------
    def zd(self, op: str) -> None:
        import zarrdask

        if op == "open100":
            g = zarrdask.open_group(f"{self.http}/group.zarr", mode="r")
            g.open_members([f"a{i:03d}" for i in range(N_ARRAYS)])
        elif op == "open1":
            zarrdask.open_array(f"{self.http}/chunked.zarr", mode="r")
        elif op.startswith("write_"):
            shards = (SHARD, SHARD) if op == "write_sharded" else None
            options = {"endpoint_url": self.s3, "key": "x", "secret": "y", "use_listings_cache": False}
            a = zarrdask.create_array(f"s3://{BUCKET}/{self._fresh(op)}", shape=self.data.shape, dtype="f4",
                                      chunks=(CHUNK, CHUNK), shards=shards, compressors=_ZSTD, fill_value=0,
                                      storage_options=options)
            a[...] = self.data
        else:
            self._read(op)

    def zd_open(self, name: str):
        import zarrdask

        return zarrdask.open_array(f"{self.http}/{name}.zarr", mode="r")

    # zarr-python -----------------------------------------------------------
    def zp(self, op: str) -> None:
        import zarr
        from zarr.codecs import ZstdCodec

        if op == "open100":
            g = zarr.open_group(f"{self.http}/group.zarr", mode="r")
            [g[f"a{i:03d}"] for i in range(N_ARRAYS)]
        elif op == "open1":
            zarr.open_array(f"{self.http}/chunked.zarr", mode="r")
        elif op.startswith("write_"):
            shards = (SHARD, SHARD) if op == "write_sharded" else None
            a = zarr.create_array(
                f"s3://{BUCKET}/{self._fresh(op)}", shape=self.data.shape, dtype="f4", chunks=(CHUNK, CHUNK),
                shards=shards, compressors=ZstdCodec(level=1), fill_value=0,
                storage_options={"endpoint_url": self.s3, "key": "x", "secret": "y"},
            )
            a[...] = self.data
        else:
            self._read(op)

    def zp_open(self, name: str):
        import zarr

        return zarr.open_array(f"{self.http}/{name}.zarr", mode="r")

    def _read(self, op: str) -> None:
        if op == "window":
            self.handles["sharded"][WINDOW]
        elif op == "read_sharded":
            self.handles["sharded"][...]
        elif op == "read_chunked":
            self.handles["chunked"][...]
        else:
            raise ValueError(op)

    # the floor: the window's requests and decoding, nothing else ---------------
    def fl_open(self, name: str):
        from obstore.store import HTTPStore

        return HTTPStore.from_url(f"{self.http}/{name}.zarr", client_options={"allow_http": True})

    def fl(self, op: str) -> np.ndarray:
        if op != "window":
            raise ValueError(f"the floor reads the window only, not {op!r}")
        return window_floor(self.handles["sharded"], self._floor_pool())

    def _floor_pool(self):
        from concurrent.futures import ThreadPoolExecutor

        if not hasattr(self, "_pool"):
            self._pool = ThreadPoolExecutor(8)
        return self._pool

    # tensorstore -------------------------------------------------------------
    def _ts_http(self, path: str) -> dict:
        return {"driver": "zarr3", "kvstore": {"driver": "http", "base_url": self.http, "path": path}}

    def ts(self, op: str) -> None:
        import tensorstore as ts

        if op == "open100":
            futures = [ts.open(self._ts_http(f"group.zarr/a{i:03d}/"), read=True) for i in range(N_ARRAYS)]
            [f.result() for f in futures]
        elif op == "open1":
            ts.open(self._ts_http("chunked.zarr/"), read=True).result()
        elif op == "window":
            self.handles["sharded"][WINDOW].read().result()
        elif op == "read_sharded":
            self.handles["sharded"].read().result()
        elif op == "read_chunked":
            self.handles["chunked"].read().result()
        elif op.startswith("write_"):
            inner = [{"name": "bytes", "configuration": {"endian": "little"}}, *_ZSTD]
            if op == "write_sharded":
                codecs = [{"name": "sharding_indexed", "configuration": {
                    "chunk_shape": [CHUNK, CHUNK], "codecs": inner,
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                    "index_location": "end"}}]
                grid = [SHARD, SHARD]
            else:
                codecs, grid = inner, [CHUNK, CHUNK]
            spec = {
                "driver": "zarr3",
                "kvstore": {"driver": "s3", "bucket": BUCKET, "path": self._fresh(op) + "/",
                            "endpoint": self.s3, "aws_region": "us-east-1"},
                "metadata": {"shape": [SIZE, SIZE], "data_type": "float32",
                             "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid}},
                             "codecs": codecs, "fill_value": 0},
                "create": True, "delete_existing": True,
            }
            ts.open(spec).result().write(self.data).result()

    def ts_open(self, name: str):
        import tensorstore as ts

        return ts.open(self._ts_http(f"{name}.zarr/"), read=True).result()

    # ---------------------------------------------------------------------
    def run(self) -> None:
        if self.impl in ZARRDASK:
            import zarrdask

            if ZARRDASK[self.impl] is not None:
                zarrdask.config.set(url_store=ZARRDASK[self.impl])
        short = "zd" if self.impl in ZARRDASK else {"zarr-python": "zp", "tensorstore": "ts", "floor": "fl"}[self.impl]
        fn = getattr(self, short)
        opener = getattr(self, short + "_open")
        for line in sys.stdin:
            op = line.strip()
            if not op:
                continue
            if op == "prepare":  # open the arrays read from (not timed, not counted)
                self.handles = {name: opener(name) for name in ("chunked", "sharded")}
                print(json.dumps({"ok": True}), flush=True)
                continue
            try:
                t0, c0 = time.perf_counter(), time.process_time()
                fn(op)
                ms = (time.perf_counter() - t0) * 1000
                cpu_ms = (time.process_time() - c0) * 1000  # every thread of the client process
                print(json.dumps({"ms": ms, "cpu_ms": cpu_ms}), flush=True)
            except Exception as e:  # reported in the table, the run goes on
                print(json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}), flush=True)


# -- the floor -----------------------------------------------------------------
_SCRATCH = threading.local()


def window_floor(store, pool) -> np.ndarray:
    """``WINDOW`` of the sharded array at ``store`` (an obstore store), read
    with the requests zarrdask makes and nothing else: each shard's index
    (a suffix request; its ETag kept, its CRC32C checked), then one range per
    row of inner chunks the window needs, asked ``If-Match`` that ETag, the
    shard's two rows concurrently; each inner chunk decoded as its range
    arrives into a scratch buffer and copied into the output, at most
    zarrdask's setting ``threads`` decodes at once."""
    import obstore

    from zarrdask import config
    from zarrdask.codecs.crc32c_codec import checked_payload
    from zarrdask.codecs.zstd_codec import _context

    if _context() is None:
        raise RuntimeError("the floor calls libzstd through numcodecs' zstd module, which does not export it here")
    decoding = threading.Semaphore(int(config.get("threads")))

    out = np.empty((WINDOW[0].stop - WINDOW[0].start, WINDOW[1].stop - WINDOW[1].start), dtype="f4")
    per_shard = _PER_SHARD
    rows, cols = _window_chunks()

    def decode(data: memoryview, row: int, col: int) -> None:
        scratch = getattr(_SCRATCH, "buffer", None)
        if scratch is None:
            scratch = _SCRATCH.buffer = np.empty((CHUNK, CHUNK), dtype="f4")
        with decoding:
            if _context().decompress(data, memoryview(scratch).cast("B")) != scratch.nbytes:
                raise ValueError(f"inner chunk ({row}, {col}) decodes to the wrong size")
        r, c = row * CHUNK - WINDOW[0].start, col * CHUNK - WINDOW[1].start
        out[r:r + CHUNK, c:c + CHUNK] = scratch

    def row_of(path: str, etag: str, entries: np.ndarray, row: int, shard_cols: list[int]) -> None:
        offsets = [(int(entries[row % per_shard, c % per_shard, 0]), int(entries[row % per_shard, c % per_shard, 1]))
                   for c in shard_cols]
        start, stop = min(o for o, _ in offsets), max(o + n for o, n in offsets)
        got = obstore.get(store, path, options={"range": (start, stop), "if_match": etag})
        data = memoryview(got.bytes())
        for col, (offset, nbytes) in zip(shard_cols, offsets):
            decode(data[offset - start:offset - start + nbytes], row, col)

    def shard(key: tuple[int, int]) -> None:
        path = f"c/{key[0]}/{key[1]}"
        got = obstore.get(store, path, options={"range": {"suffix": _INDEX_SIZE}})
        index = checked_payload(memoryview(got.bytes()))
        if index is None:
            raise ValueError(f"{path}: index checksum mismatch")
        entries = np.frombuffer(index, dtype="<u8").reshape(per_shard, per_shard, 2)
        shard_rows = [r for r in rows if r // per_shard == key[0]]
        shard_cols = [c for c in cols if c // per_shard == key[1]]
        etag = got.meta["e_tag"]
        others = [pool.submit(row_of, path, etag, entries, r, shard_cols) for r in shard_rows[1:]]
        row_of(path, etag, entries, shard_rows[0], shard_cols)
        for f in others:
            f.result()

    keys = sorted({(r // per_shard, c // per_shard) for r in rows for c in cols})
    for f in [pool.submit(shard, key) for key in keys]:
        f.result()
    return out


# -- the run -----------------------------------------------------------------
def _start_moto() -> tuple[subprocess.Popen, str]:
    """moto's S3 server in a process of its own (in this one it would compete
    for the GIL with the proxy)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.update(_AWS_ENV)
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    import boto3

    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1")
    for _ in range(400):
        try:
            client.create_bucket(Bucket=BUCKET)
            break
        except Exception:
            time.sleep(0.05)
    return server, url


def run(latencies: list[float], repeat: int, impls: list[str], ops: list[str]) -> dict:
    from zarrdask.testing.servers import serve_directory, serve_proxy

    results: dict = {"latencies_ms": latencies, "repeat": repeat, "rows": {}}
    moto, moto_url = _start_moto()
    try:
        with tempfile.TemporaryDirectory(prefix="zarrdask-remote-") as root:
            results.update(prepare(root))
            # ETags from the file's stat: no whole-shard read per range request
            with serve_directory(root, etags="stat") as files, serve_proxy(moto_url) as proxy:
                for latency in latencies:
                    files.delay = proxy.delay = latency / 1000
                    _run_impls(impls, ops, repeat, latency, files, proxy, results)
    finally:
        moto.terminate()
        moto.wait(10)
    return results


class _Client:
    """One implementation's worker process, asked one operation at a time."""

    def __init__(self, impl: str, files, proxy) -> None:
        env = dict(os.environ, **_AWS_ENV, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.impl = impl
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.remote", "--worker", impl, "--http", files.url, "--s3", proxy.url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )

    def ask(self, op: str) -> dict:
        self.process.stdin.write(op + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(60)


def _run_impls(impls, ops, repeat, latency, files, proxy, results) -> None:
    """Every implementation's worker is started at once and the repetitions
    alternate between them (the order turned each round), so a spell of load
    on the machine falls on all of them rather than on whichever ran then."""
    clients = [_Client(impl, files, proxy) for impl in impls]
    try:
        for client in clients:
            client.ask("prepare")
        for op in ops:
            answers: dict = {client.impl: [] for client in clients if client.impl != "floor" or op in FLOOR_OPS}
            stats: dict = {}
            for round_ in range(repeat):
                for client in in_turn(clients, round_):
                    if client.impl not in answers:
                        continue
                    if answers[client.impl] and "error" in answers[client.impl][-1]:
                        continue
                    files.log.clear()
                    proxy.log.clear()
                    answers[client.impl].append(client.ask(op))
                    stats[client.impl] = (proxy if op.startswith("write_") else files).log.summary()
            for impl, answered in answers.items():
                _record(results, op, latency, impl, answered, stats[impl])
    finally:
        for client in clients:
            client.close()


def _record(results, op, latency, impl, answers, stats) -> None:
    error = next((a["error"] for a in answers if "error" in a), None)
    best = None if error else min(a["ms"] for a in answers)
    cpu = None if error else min(a["cpu_ms"] for a in answers)
    median = None if error else float(np.median([a["ms"] for a in answers]))
    results["rows"].setdefault(op, {}).setdefault(str(latency), {})[impl] = {
        "ms": best, "cpu_ms": cpu, "ms_median": median, "error": error, **(stats or {})}
    shown = f"ERROR {error}" if error else f"{best:8.1f} ms (median {median:8.1f}, cpu {cpu:7.1f} ms)"
    print(f"{latency:>4} ms  {impl:<16} {op:<14} {shown}  {stats}", file=sys.stderr, flush=True)


_NAMES = {"zarrdask": "zarrdask (default)", "zarr-python": "zarr-python 3", "floor": "floor (obstore + libzstd alone)"}


def table(results: dict) -> str:
    lines = []
    impls = [i for i in (*ZARRDASK, "zarr-python", "tensorstore", "floor")
             if any(i in row.get(str(lat), {}) for row in results["rows"].values() for lat in results["latencies_ms"])]
    ours = [i for i in impls if i in ZARRDASK]
    for latency in results["latencies_ms"]:
        lines.append(f"\n**{latency:g} ms added to every request** (time ms / requests, best of {results['repeat']})\n")
        lines.append("| operation | " + " | ".join(_NAMES.get(i, i) for i in impls) + " | faster zd / ts time |")
        lines.append("|---|" + "---:|" * (len(impls) + 1))
        for op, label in OPS:
            row = results["rows"].get(op, {}).get(str(latency))
            if row is None:
                continue
            cells = []
            for impl in impls:
                r = row.get(impl)
                if r is None:
                    cells.append("n/a")
                elif r["error"]:
                    cells.append("error")
                else:
                    extra = ""
                    if op == "window":
                        extra = f" ({r['bytes_sent'] / results['needed_window_bytes']:.2f}x bytes needed)"
                    cells.append(f"{r['ms']:,.0f} / {r['requests']}{extra}")
            times = [row[i]["ms"] for i in ours if row.get(i) and row[i]["ms"]]
            ts_ = row.get("tensorstore")
            ratio = f"{min(times) / ts_['ms']:.2f}x" if times and ts_ and ts_["ms"] else ""
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    lines.append(f"\n**CPU time of the client process** (ms, all its threads, best of {results['repeat']}; "
                 "latency adds none)\n")
    lines.append("| operation | " + " | ".join(f"{_NAMES.get(i, i)} ({lat:g} ms)" for lat in results["latencies_ms"]
                                         for i in impls) + " |")
    lines.append("|---|" + "---:|" * (len(impls) * len(results["latencies_ms"])))
    for op, label in OPS:
        cells = []
        for latency in results["latencies_ms"]:
            row = results["rows"].get(op, {}).get(str(latency), {})
            cells += [f"{row[i]['cpu_ms']:,.0f}" if row.get(i) and row[i].get("cpu_ms") is not None
                      and not row[i]["error"] else "n/a" for i in impls]
        if any(c != "n/a" for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append(f"\nBytes the window needs (its inner chunks and their shards' indexes): "
                 f"{results['needed_window_bytes']:,}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--latency", type=float, nargs="+", default=[0, 20], help="ms added to every request")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--impls", nargs="+", default=list(IMPLS))
    p.add_argument("--ops", nargs="+", default=[op for op, _ in OPS] + ["opens"],
                   help="rows to run; 'opens' runs the rows of benchmarks.opens (a CF-like dataset and a "
                        "DataTree opened with xarray: round trips and time, zarrdask against engine=\"zarr\")")
    p.add_argument("--out", default="benchmarks/results/remote.json")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--http", help=argparse.SUPPRESS)
    p.add_argument("--s3", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        Worker(args.worker, args.http, args.s3).run()
        return
    results = run(args.latency, args.repeat, args.impls, [op for op in args.ops if op != "opens"])
    text = table(results)
    if "opens" in args.ops:
        from . import opens

        results["opens"] = opens.run(args.latency, args.repeat)
        text += "\n\n**Opening a dataset with xarray**\n\n" + opens.table(results["opens"])
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
