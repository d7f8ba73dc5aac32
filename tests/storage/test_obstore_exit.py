"""A program that ends right after its last obstore request exits cleanly.

obstore answers ``..._async`` calls from its own threads, which take the GIL
back after waking the event loop; a program ending at that moment used to
abort in about one run in fifteen (SIGABRT while Python finalized, every
request completed). Each run here is a fresh interpreter that writes through
an ``ObstoreStore`` and ends at once."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("obstore")

PROGRAM = """
from obstore.store import MemoryStore
from zarrdask.storage import ObstoreStore
store = ObstoreStore(MemoryStore())
for _ in range(3):
    store.set_many({f"a/{i}": b"x" * 100 for i in range(8)})
assert store.get_many(["a/0"]) == [b"x" * 100]
"""

RUNS = 40


def _exit_code(_: int) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stderr[-2000:]


def test_programs_ending_right_after_their_last_request_exit_cleanly():
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(_exit_code, range(RUNS)))
    failed = [(code, err) for code, err in results if code != 0]
    assert not failed, f"{len(failed)} of {RUNS} runs failed; the first: exit code {failed[0][0]}\n{failed[0][1]}"
