"""Start-up of the command line: ``zarrdask --help`` and ``zarrdask info`` on a small
array, the median of 5 subprocess runs each (the aim: well under half a second).

Each command runs once first, and the child processes may write bytecode, as an
installed package has it (``pip install`` compiles it; this machine sets
``PYTHONDONTWRITEBYTECODE``, which would time the compiler instead).

    PYTHONPATH=src python -m benchmarks.cli_startup
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def median_seconds(args: list[str], runs: int = 5) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "zarrdask.cli", *args]
    subprocess.run(command, check=True, capture_output=True, env=env)  # warm: bytecode written
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    import zarrdask

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "small.zarr")
        a = zarrdask.create_array(path, shape=(100, 100), dtype="f4", chunks=(10, 10))
        a[:] = np.ones((100, 100), dtype="f4")
        rows = [("zarrdask --help", median_seconds(["--help"])), ("zarrdask info small.zarr", median_seconds(["info", path]))]
    t0 = time.perf_counter()
    for _ in range(5):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    print(f"{'command':<28} {'median of 5 (s)':>16}")
    for name, seconds in rows:
        print(f"{name:<28} {seconds:>16.3f}")
    print(f"{'python -c pass (mean)':<28} {(time.perf_counter() - t0) / 5:>16.3f}")


if __name__ == "__main__":
    main()
