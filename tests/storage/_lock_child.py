"""The child process of tests/storage/test_locks.py (imported by a spawned
interpreter: it needs nothing but zarrdask)."""

from __future__ import annotations

import os
import sys
import time

from zarrdask.storage import LocalStore


def contend(root: str, signals: str, increments: int) -> None:
    """Take the lock the parent holds, then race the parent on a counter.

    Exits 0 if the lock was granted only after the parent released it (the
    parent writes ``released`` just before releasing), 3 otherwise.
    """
    store = LocalStore(root)
    open(os.path.join(signals, "trying"), "w").close()
    with store.locked(["k"]):
        waited = os.path.exists(os.path.join(signals, "released"))
    open(os.path.join(signals, "counting"), "w").close()
    for _ in range(increments):
        with store.locked(["counter"]):
            value = int(store.get("counter"))
            time.sleep(0.002)
            store.set("counter", str(value + 1).encode())
    sys.exit(0 if waited else 3)
