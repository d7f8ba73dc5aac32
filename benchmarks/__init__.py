"""Benchmark harness: zarrdask against zarr-python 3 and tensorstore.

Run ``python -m benchmarks`` from the repository root (see ``benchmarks/README.md``).
"""
