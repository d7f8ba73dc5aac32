"""One benchmark step in a fresh process: ``python -m benchmarks.worker < task.json``.

The task is a JSON object on stdin (``{"op": ..., ...}``); the result is printed as
one JSON line after the marker ``@@RESULT@@`` on stdout (anything a library prints
before it is ignored). The runner (:mod:`benchmarks.run`) sets the thread-related
environment variables; the defaults below only matter when a worker is run by hand.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "BLOSC_NTHREADS"):
    os.environ.setdefault(_var, "1")

import gc
import json
import shutil
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from benchmarks import impls
from benchmarks._rss import read_peak, reset_peak, status_kib
from benchmarks.cases import Case, load_encoded_chunks, numcodecs_decoder, stored_bytes

MARKER = "@@RESULT@@"
WINDOW = 10  # the small windows are WINDOW x WINDOW


#: warm open + window repetitions in each read process
WARM_OPENS = 200


def first_window_position(size: int) -> tuple[int, int]:
    """Where the "first small window" is read: near the middle, not chunk-aligned."""
    return max(0, size // 2 + 3), max(0, size // 2 - 21)


def random_windows(size: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, size - WINDOW + 1, size=(n, 2))


# -- memory --------------------------------------------------------------------------
class PeakRSS:
    """Peak resident set size of this process while a block runs, above the RSS at its start.

    Linux: writing ``5`` to ``/proc/self/clear_refs`` resets the high-water mark
    ``VmHWM`` to the current RSS, so ``VmHWM`` after the block is the block's own peak.
    RSS counts every allocation that was touched - numpy, C/C++ libraries
    (tensorstore's, the codecs'), thread stacks - which tracemalloc cannot see
    in full. Fallback (no clear_refs): ``ru_maxrss``, only valid when the block
    peaks above everything before it (true for the first full read in a fresh process).
    """

    def __enter__(self) -> PeakRSS:  # noqa: PYI034
        try:
            self.baseline_kib = reset_peak()
            self.method = "VmHWM after clear_refs=5"
        except OSError:
            self.baseline_kib = status_kib("VmRSS")
            self.method = "ru_maxrss (fallback)"
        return self

    def __exit__(self, *exc) -> None:
        if self.method.startswith("VmHWM"):
            peak = read_peak()
        else:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.peak_kib = peak
        self.above_bytes = max(0, peak - self.baseline_kib) * 1024


# -- operations ----------------------------------------------------------------------
def _setup(task: dict) -> tuple[impls.Impl, Case, int]:
    impl = impls.get(task["impl"])
    impl.configure(task["threads"])
    return impl, Case.from_json(task["case"]), task["size"]


def op_write(task: dict) -> dict:
    """Create the array and write all the data, ``repeat`` times into a fresh directory."""
    impl, case, size = _setup(task)
    data = np.load(task["data"])
    dest = task["dest"]
    times = []
    for _ in range(task["repeat"]):
        shutil.rmtree(dest, ignore_errors=True)
        t0 = time.perf_counter()
        handle = impl.create(dest, case, size)
        impl.write(handle, data)
        times.append(time.perf_counter() - t0)
        del handle
    meta_file = os.path.join(dest, ".zarray" if case.zarr_format == 2 else "zarr.json")
    with open(meta_file) as f:
        metadata = json.load(f)
    return {"times": times, "stored_bytes": stored_bytes(dest), "metadata": metadata, "config": impl.config_summary()}


def op_first(task: dict) -> dict:
    """Open + read one small window, the first thing in a fresh process (imports excluded)."""
    impl, case, size = _setup(task)
    i, j = first_window_position(size)
    t0 = time.perf_counter()
    handle = impl.open(task["path"], case)
    window = impl.read_window(handle, i, j, WINDOW, WINDOW)
    elapsed = time.perf_counter() - t0
    ref = np.load(task["data"], mmap_mode="r")
    return {"time": elapsed, "ok": bool(np.array_equal(window, ref[i : i + WINDOW, j : j + WINDOW]))}


def op_read(task: dict) -> dict:
    """All read benchmarks of one implementation on one stored array, in this order:
    first window after opening, first full read (peak memory), timed full reads,
    random windows, dask sum."""
    impl, case, size = _setup(task)
    path = task["path"]
    nbytes = size * size * 4
    out: dict = {"config": impl.config_summary(), "errors": {}}

    # 1. open + one small window: the first thing this process does
    i, j = first_window_position(size)
    t0 = time.perf_counter()
    handle = impl.open(path, case)
    window = impl.read_window(handle, i, j, WINDOW, WINDOW)
    out["first_window_time"] = time.perf_counter() - t0

    # 2. the first full read: peak memory above the baseline (also the warm-up read)
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        arr = impl.read_all(handle)
        first_read = time.perf_counter() - t0
    out["first_read_time"] = first_read
    out["memory"] = {
        "baseline_rss_bytes": mem.baseline_kib * 1024,
        "peak_above_baseline_bytes": mem.above_bytes,
        "ratio_to_array": mem.above_bytes / nbytes,
        "method": mem.method,
    }
    ref = np.load(task["data"], mmap_mode="r")
    out["correct"] = bool(
        isinstance(arr, np.ndarray) and arr.shape == ref.shape and arr.dtype == ref.dtype and np.array_equal(arr, ref)
        and np.array_equal(window, ref[i : i + WINDOW, j : j + WINDOW])
    )
    ref_sum = float(np.sum(ref, dtype=np.float64))
    del arr, ref
    gc.collect()

    # 3. timed full reads (warm: page cache and the process's pools)
    times = []
    for _ in range(task["repeat"]):
        t0 = time.perf_counter()
        arr = impl.read_all(handle)
        times.append(time.perf_counter() - t0)
        del arr
    out["read_times"] = times

    # 4. random small windows
    positions = random_windows(size, task["windows"], task["seed"])
    pos = positions.tolist()
    t0 = time.perf_counter()
    last = None
    for a, b in pos:
        last = impl.read_window(handle, a, b, WINDOW, WINDOW)
    out["windows_time"] = time.perf_counter() - t0
    out["windows_count"] = len(pos)
    ref = np.load(task["data"], mmap_mode="r")
    a, b = pos[-1]
    out["windows_ok"] = bool(np.array_equal(last, ref[a : a + WINDOW, b : b + WINDOW]))
    del ref

    # 4b. a warm open + one small window, again and again (a notebook's repeated
    # ``open_array(...)[...]``): the median of WARM_OPENS, each opening anew
    i, j = first_window_position(size)
    warm = []
    for _ in range(WARM_OPENS):
        t0 = time.perf_counter()
        impl.read_window(impl.open(path, case), i, j, WINDOW, WINDOW)
        warm.append(time.perf_counter() - t0)
    out["warm_open_time"] = float(np.median(warm))

    # 5. dask: from_zarr(...).sum().compute() with the same number of threads
    if task.get("dask", True):
        try:
            import dask
            import dask.array

            with dask.config.set(scheduler="threads", num_workers=task["threads"]):
                darr = impl.dask_array(path, case)
                if darr is None:
                    out["dask_sum"] = {"skipped": impl.dask_unavailable_reason()}
                else:
                    # a warm-up compute (dask's thread pool starts), then the best of
                    # the same number of timed runs as the direct reads
                    total = float(darr.sum().compute())
                    best = float("inf")
                    for _ in range(max(1, int(task.get("repeat", 3)))):
                        t0 = time.perf_counter()
                        total = float(darr.sum().compute())
                        best = min(best, time.perf_counter() - t0)
                    out["dask_sum"] = {"time": best, "ok": bool(np.isclose(total, ref_sum, rtol=1e-5))}
        except Exception as e:  # noqa: BLE001 - report, keep the other numbers
            out["dask_sum"] = {"error": f"{type(e).__name__}: {e}"}
    return out


def op_floor(task: dict) -> dict:
    """The codec floor: numcodecs alone decoding every chunk, with ``threads`` threads.

    The stored chunks are loaded into memory first (not timed). ``decode_only``
    decodes each chunk into its own slot of a preallocated, pre-faulted
    ``(nchunks, *chunk)`` buffer: pure codec cost. ``with_copy`` decodes into a
    per-thread scratch chunk and copies it into place in a freshly allocated
    ``size x size`` output (what a reader must do when chunks are not contiguous in
    the output): codec + allocation + scatter, still with no orchestration.
    """
    case, size, threads = Case.from_json(task["case"]), task["size"], task["threads"]
    import numcodecs.blosc

    numcodecs.blosc.set_nthreads(1)
    numcodecs.blosc.use_threads = False
    chunks = load_encoded_chunks(case, task["path"], size)
    codec = numcodecs_decoder(case)
    cshape = case.chunks
    dt = np.dtype("<f4")

    def decode_into(data: memoryview, target: np.ndarray) -> None:
        if codec is None:
            target[...] = np.frombuffer(data, dtype=dt).reshape(cshape)
        else:
            codec.decode(data, out=target)

    buf = np.zeros((len(chunks), *cshape), dtype=dt)  # zeros + fill: every page touched
    buf.fill(1)

    def dec(k: int) -> None:
        decode_into(chunks[k][1], buf[k])

    local = threading.local()

    def dec_copy(arg) -> None:
        (r, c), data = arg
        scratch = getattr(local, "scratch", None)
        if scratch is None:
            scratch = local.scratch = np.empty(cshape, dtype=dt)
        decode_into(data, scratch)
        out_arr[r * cshape[0] : (r + 1) * cshape[0], c * cshape[1] : (c + 1) * cshape[1]] = scratch

    idx = range(len(chunks))
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(dec, idx))  # warm-up (threads started, code paths hot)
        decode_times = []
        for _ in range(task["repeat"]):
            t0 = time.perf_counter()
            list(pool.map(dec, idx))
            decode_times.append(time.perf_counter() - t0)
        copy_times = []
        for _ in range(task["repeat"]):
            out_arr = np.empty((size, size), dtype=dt)
            t0 = time.perf_counter()
            list(pool.map(dec_copy, chunks))
            copy_times.append(time.perf_counter() - t0)
    ref = np.load(task["data"], mmap_mode="r")
    ok = bool(np.array_equal(out_arr, ref))
    (r, c), _ = chunks[-1]
    ok = ok and bool(np.array_equal(buf[-1], ref[r * cshape[0] : (r + 1) * cshape[0], c * cshape[1] : (c + 1) * cshape[1]]))
    return {
        "decode_only_times": decode_times,
        "with_copy_times": copy_times,
        "nchunks": len(chunks),
        "encoded_bytes": sum(m.nbytes for _, m in chunks),
        "ok": ok,
    }


def op_verify(task: dict) -> dict:
    """Check stores written by each implementation with zarr-python (a few
    chunk-straddling windows against the source data)."""
    impl = impls.get("zarr-python")
    impl.configure(task["threads"])
    case, size = Case.from_json(task["case"]), task["size"]
    ref = np.load(task["data"], mmap_mode="r")
    h = min(700, size)
    starts = [(0, 0), (size - h, size - h), (size // 3, size // 2 - h // 2)]
    results = {}
    for name, path in task["paths"].items():
        try:
            arr = impl.open(path, case)
            ok = all(np.array_equal(arr[a : a + h, b : b + h], ref[a : a + h, b : b + h]) for a, b in starts)
            results[name] = {"ok": ok}
        except Exception as e:  # noqa: BLE001 - a store that cannot be read fails verification
            results[name] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return results


def op_graph(task: dict) -> dict:
    """Build the dask array of an array with many chunks (metadata only, no data)."""
    impl = impls.get(task["impl"])
    impl.configure(task["threads"])
    import dask.array  # noqa: F401  (outside the timing)

    import tracemalloc

    tracemalloc.start()
    t0 = time.perf_counter()
    darr = impl.dask_array(task["path"], None)  # type: ignore[arg-type]
    build = time.perf_counter() - t0
    # Python allocations made while building (the graph is Python objects)
    build_mem = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if darr is None:
        return {"skipped": impl.dask_unavailable_reason()}
    # the graph of a reduction over it, built but not computed (materialising
    # every task key would take longer than computing on this scale, so it isn't)
    t0 = time.perf_counter()
    total = darr.sum()
    reduce_graph = time.perf_counter() - t0
    return {
        "build_time": build, "build_mem": build_mem, "sum_graph_time": reduce_graph, "graph_len": len(total.__dask_graph__()),
        "nchunks": int(np.prod(darr.numblocks)),
    }


def op_make_many_chunks(task: dict) -> dict:
    """Create (metadata only) the array with ``nchunks`` chunks for ``op_graph``."""
    import zarr

    side = round(task["nchunks"] ** 0.5)
    zarr.create_array(store=task["path"], shape=(side * 10, side * 10), chunks=(10, 10), dtype="f4", overwrite=True)
    return {"shape": [side * 10, side * 10], "chunks": [10, 10], "nchunks": side * side}


def op_prepare(task: dict) -> dict:
    """Write the shared read store with zarr-python."""
    impl = impls.get("zarr-python")
    impl.configure(task["threads"])
    case, size = Case.from_json(task["case"]), task["size"]
    shutil.rmtree(task["path"], ignore_errors=True)
    handle = impl.create(task["path"], case, size)
    impl.write(handle, np.load(task["data"]))
    return {"stored_bytes": stored_bytes(task["path"]), "writer": "zarr-python"}


def op_warm(task: dict) -> dict:
    """Write and read a small array of every case (warms byte-code and page caches)."""
    impl = impls.get(task["impl"])
    impl.configure(task["threads"])
    rng = np.random.default_rng(0)
    for cj in task["cases"]:
        case = Case.from_json(cj)
        size = case.stored_chunks[0] * 2
        data = rng.standard_normal((size, size), dtype=np.float32)
        path = os.path.join(task["path"], f"{task['impl']}-{case.name}.zarr")
        impl.write(impl.create(path, case, size), data)
        impl.read_all(impl.open(path, case))
        impl.read_window(impl.open(path, case), 1, 1, WINDOW, WINDOW)
    return {"ok": True}


OPS = {
    "warm": op_warm,
    "write": op_write,
    "first": op_first,
    "read": op_read,
    "floor": op_floor,
    "verify": op_verify,
    "graph": op_graph,
    "make_many_chunks": op_make_many_chunks,
    "prepare": op_prepare,
}


def main() -> int:
    task = json.loads(sys.stdin.read())
    try:
        result = OPS[task["op"]](task)
    except Exception as e:  # noqa: BLE001 - the runner reports it and carries on
        traceback.print_exc()
        result = {"error": f"{type(e).__name__}: {e}"}
    sys.stdout.flush()
    sys.stdout.write("\n" + MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
