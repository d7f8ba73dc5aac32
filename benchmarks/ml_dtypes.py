"""bfloat16 against float16: write and read of the same array, zarrdask vs tensorstore vs zarr-python.

    python -m benchmarks.ml_dtypes                 # 4096x4096, chunks 512x512, zstd and uncompressed
    python -m benchmarks.ml_dtypes --quick         # 1024x1024, one repeat: checks that every cell works

Both data types are 2 bytes per element, so the same array (the smooth field of
:func:`benchmarks.cases.make_data`, converted) is the same number of bytes in
each; what differs is the element type the library has to carry: ``float16`` is
numpy's own, ``bfloat16`` is ``ml_dtypes``' (numpy kind ``"V"``), which zarrdask
stores through the same ``bytes`` codec. The question the ratios answer: does
bfloat16 cost more than float16? ``bf16 / f16`` is bfloat16's time over float16's
for one implementation and codec (1.00x: no extra cost; above: slower).

Cases: v3, ``SIZE x SIZE``, chunks ``CHUNK x CHUNK``, ``bytes`` (little-endian)
with ``zstd`` level 1 (no checksum) or uncompressed; fill value 0. Operations:
**write all** (create + one full write into a fresh directory, best of
``--write-repeat``) and **read all** (one full read of the written array, best
of ``--repeat`` after an untimed warm-up read; checked equal to the source, bit
for bit). Each (implementation, data type, codec) runs in a fresh process with
the thread settings of the main benchmark (:mod:`benchmarks.impls`'s
``configure``: ``--threads`` worker threads each, codec-internal threads off).
zarr-python 3.1.6 has no ``bfloat16`` data type: its bfloat16 cells say so
(the error it gives is in the JSON) and it runs float16 only.

Writes ``ml_dtypes.json`` (every timing, versions, commit) and ``ml_dtypes.md``
(the table) into ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPLS = ("zarrdask", "tensorstore", "zarr-python")
DTYPES = ("bfloat16", "float16")
CODECS = ("zstd1", "none")
OPS = (("write", "write all"), ("read", "read all"))


def _dtype(name: str) -> Any:
    import ml_dtypes
    import numpy as np

    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


# -- one implementation's create / write / open / read ------------------------------------
def _create(impl: Any, name: str, path: str, size: int, chunk: int, dtype: str, codec: str) -> Any:
    """A new array (overwriting ``path``), as each implementation spells it."""
    if name == "zarrdask":
        comp = [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}] if codec == "zstd1" else None
        return impl.zarrdask.create_array(path, shape=(size, size), chunks=(chunk, chunk), dtype=dtype,
                                          compressors=comp, fill_value=0.0, overwrite=True)
    if name == "zarr-python":
        from zarr.codecs import ZstdCodec

        comp = [ZstdCodec(level=1, checksum=False)] if codec == "zstd1" else None
        return impl.zarr.create_array(store=path, shape=(size, size), chunks=(chunk, chunk), dtype=_dtype(dtype),
                                      compressors=comp, fill_value=0.0, overwrite=True, zarr_format=3)
    codecs: list[dict[str, Any]] = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if codec == "zstd1":
        codecs.append({"name": "zstd", "configuration": {"level": 1, "checksum": False}})
    metadata = {"shape": [size, size], "data_type": dtype, "fill_value": 0.0, "codecs": codecs,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk, chunk]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}}
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "metadata": metadata}
    return impl.ts.open(spec, context=impl.context, create=True, delete_existing=True).result()


def _open(impl: Any, name: str, path: str) -> Any:
    if name == "zarrdask":
        return impl.zarrdask.open_array(path, mode="r")
    if name == "zarr-python":
        return impl.zarr.open_array(path, mode="r")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
    return impl.ts.open(spec, context=impl.context, open=True, read=True).result()


def worker(name: str, dtype: str, codec: str, args: argparse.Namespace) -> dict[str, Any]:
    """Time the writes and reads of one cell (in its own process)."""
    import warnings

    import numpy as np

    from benchmarks import impls
    from benchmarks.cases import make_data

    warnings.simplefilter("ignore")
    impl = impls.get(name)
    impl.configure(args.threads)
    data = make_data(args.size).astype(_dtype(dtype))
    base = os.path.join(args.workdir, f"{name}-{dtype}-{codec}")
    writes = []
    for i in range(args.write_repeat):
        path = f"{base}-w{i}.zarr"
        shutil.rmtree(path, ignore_errors=True)
        t0 = time.perf_counter()
        handle = _create(impl, name, path, args.size, args.chunk, dtype, codec)
        impl.write(handle, data)
        writes.append(time.perf_counter() - t0)
        del handle
    path = f"{base}-w0.zarr"
    stored = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    handle = _open(impl, name, path)
    first = np.asarray(impl.read_all(handle))  # warm-up (page cache, thread pools), and the check
    same = first.dtype == data.dtype and first.view(np.uint16).tobytes() == data.view(np.uint16).tobytes()
    del first
    reads = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        out = impl.read_all(handle)
        reads.append(time.perf_counter() - t0)
        del out
    for i in range(args.write_repeat):
        shutil.rmtree(f"{base}-w{i}.zarr", ignore_errors=True)
    return {"write": writes, "read": reads, "correct": bool(same), "stored_bytes": stored,
            "config": impl.config_summary()}


def measure(name: str, dtype: str, codec: str, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.run import worker_env

    env = worker_env(args.threads, args.workdir)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "src"), env["PYTHONPATH"]])
    cmd = [sys.executable, "-m", "benchmarks.ml_dtypes", "--worker", name, dtype, codec,
           "--size", str(args.size), "--chunk", str(args.chunk), "--threads", str(args.threads),
           "--repeat", str(args.repeat), "--write-repeat", str(args.write_repeat), "--workdir", args.workdir]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the report ----------------------------------------------------------------------------
def rows(results: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """One row per (codec, operation, implementation): MiB/s of each data type and bf16 / f16 (time)."""
    mib = size * size * 2 / 2**20
    best = {(r["impl"], r["dtype"], r["codec"], op): min(r[op]) for r in results for op, _ in OPS if r.get(op)}
    errors = {(r["impl"], r["dtype"], r["codec"]): r.get("error") for r in results}
    out = []
    for codec in CODECS:
        for op, label in OPS:
            for impl in IMPLS:
                if not any(r["impl"] == impl and r["codec"] == codec for r in results):
                    continue
                row: dict[str, Any] = {"codec": codec, "operation": label, "impl": impl}
                for dtype in DTYPES:
                    t = best.get((impl, dtype, codec, op))
                    row[f"{dtype}_s"] = t
                    row[f"{dtype}_mibs"] = None if t is None else mib / t
                    row[f"{dtype}_error"] = errors.get((impl, dtype, codec))
                bf, f16 = row["bfloat16_s"], row["float16_s"]
                row["bf16_over_f16"] = None if bf is None or f16 is None else bf / f16
                out.append(row)
    # zarrdask against each peer, same data type
    for row in out:
        for dtype in DTYPES:
            zd = next((r[f"{dtype}_s"] for r in out if r["impl"] == "zarrdask" and r["codec"] == row["codec"]
                       and r["operation"] == row["operation"]), None)
            t = row[f"{dtype}_s"]
            row[f"{dtype}_zd_advantage"] = None if zd is None or t is None else t / zd
    return out


def _cell(row: dict[str, Any], dtype: str) -> str:
    if row[f"{dtype}_mibs"] is not None:
        return f"{row[f'{dtype}_mibs']:,.0f}"
    err = row[f"{dtype}_error"] or "not run"
    return "n/a (no bfloat16)" if dtype == "bfloat16" and row["impl"] == "zarr-python" else f"error: {err[:60]}"


def markdown(table: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    f = lambda x: "—" if x is None else f"{x:.2f}x"  # noqa: E731
    lines = [
        f"bfloat16 vs float16, {meta['size']}x{meta['size']} ({meta['size'] ** 2 * 2 / 2**20:.0f} MiB), chunks "
        f"{meta['chunk']}x{meta['chunk']}, v3, {meta['threads']} threads; MiB/s (higher is better), best of "
        f"{meta['write_repeat']} writes / {meta['repeat']} reads, each cell in a fresh process. "
        "bf16 / f16: bfloat16's time over float16's (1.00x: no extra cost). zd adv.: the peer's time over "
        "zarrdask's, same data type (above 1: zarrdask faster). zarr-python 3.1.6 has no bfloat16 data type: "
        "it runs float16 only.",
        "",
        "| codec | operation | implementation | float16 MiB/s | bfloat16 MiB/s | bf16 / f16 | zd adv. f16 | zd adv. bf16 |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in table:
        lines.append(f"| {'zstd 1' if r['codec'] == 'zstd1' else 'none'} | {r['operation']} | {r['impl']} | "
                     f"{_cell(r, 'float16')} | {_cell(r, 'bfloat16')} | {f(r['bf16_over_f16'])} | "
                     f"{f(r['float16_zd_advantage'])} | {f(r['bfloat16_zd_advantage'])} |")
    raw = meta["size"] ** 2 * 2
    ratios = {(r["dtype"], r["impl"]): raw / r["stored_bytes"] for r in meta["results"]
              if r["codec"] == "zstd1" and r.get("stored_bytes")}
    if ratios:
        lines += ["", "zstd level 1 compresses the bfloat16 array (8 significant bits) far more than the float16 "
                  "one (11), so with zstd the two data types give the codec different work: "
                  + "; ".join(f"{d} {i} {x:.2f}x" for (d, i), x in sorted(ratios.items()))
                  + ". The uncompressed rows compare the data types alone."]
    checks = [f"{r['impl']} {r['dtype']} {r['codec']}" for r in meta["results"] if r.get("correct") is False]
    lines += ["", "Every read compared bit for bit with the source: "
              + ("all equal." if not checks else "DIFFERENT: " + ", ".join(checks)),
              f"Stores in {meta['workdir']}. {meta['cpu']}, {meta['ncpu']} CPUs, load average {meta['loadavg']} "
              f"when it started, {meta['date']}; " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
              + f"; zarrdask commit {meta['commit']}."]
    return "\n".join(lines) + "\n"


def _meta(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.run import machine_meta

    return {"size": args.size, "chunk": args.chunk, "threads": args.threads, "repeat": args.repeat,
            "write_repeat": args.write_repeat, "workdir": args.workdir, **machine_meta("ml_dtypes")}


def _default_workdir() -> str:
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > (2 << 30):
        return os.path.join(shm, "zarrdask-bench-ml-dtypes")
    return os.path.join(tempfile.gettempdir(), "zarrdask-bench-ml-dtypes")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--chunk", type=int, default=512)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--write-repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="1024x1024, one repeat of each")
    p.add_argument("--impls", nargs="+", default=list(IMPLS))
    p.add_argument("--codecs", nargs="+", default=list(CODECS))
    p.add_argument("--workdir", default=_default_workdir())
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument("--worker", nargs=3, metavar=("IMPL", "DTYPE", "CODEC"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.repeat, args.write_repeat = 1024, 1, 1
    if args.worker:
        print(json.dumps(worker(*args.worker, args)))
        return 0
    meta = _meta(args)  # the load average before the run
    os.makedirs(args.workdir, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    results = []
    for codec in args.codecs:
        for dtype in DTYPES:
            for impl in args.impls:
                r = measure(impl, dtype, codec, args)
                results.append({"impl": impl, "dtype": dtype, "codec": codec, **r})
                shown = (f"write {min(r['write']):.3f} s, read {min(r['read']):.3f} s, correct {r['correct']}"
                         if r.get("write") else r.get("error"))
                print(f"{codec:6s} {dtype:9s} {impl:12s} {shown}", flush=True)
    meta["results"] = [{k: r.get(k) for k in ("impl", "dtype", "codec", "correct", "stored_bytes")} for r in results]
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    table = rows(results, args.size)
    text = markdown(table, meta)
    from benchmarks.run import save_results

    save_results(args.out, "ml_dtypes", meta, results, table, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
