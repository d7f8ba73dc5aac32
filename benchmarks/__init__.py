"""Benchmark harness: zarrdask against zarr-python 3 and tensorstore.

Run ``python -m benchmarks`` from the repository root (see ``benchmarks/README.md``).
"""


def in_turn(items: list, round_: int) -> list:
    """``items`` in the order of round ``round_`` when benchmarked
    implementations take turns: rotated by one each round, so none is always
    first (or always just after another)."""
    turn = round_ % len(items)
    return items[turn:] + items[:turn]
