"""This process's resident set size (Linux ``/proc/self``), for the benchmark
workers. Standard library only: the rechunk worker imports it in the
rechunker environment too.

Writing ``5`` to ``/proc/self/clear_refs`` resets the high-water mark ``VmHWM``
to the current RSS, so ``VmHWM`` read later is the peak since the reset.
"""

from __future__ import annotations

import gc
import re


def status_kib(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status") as f:
        m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.MULTILINE)
    if m is None:
        raise OSError(f"no {field} in /proc/self/status")
    return int(m.group(1))


def reset_peak() -> int:
    """Reset this process's RSS high-water mark; return the RSS (KiB) it starts
    from. ``OSError`` where ``clear_refs`` cannot be written."""
    gc.collect()
    rss = status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return rss


def read_peak() -> int:
    """This process's RSS high-water mark (KiB) since :func:`reset_peak`."""
    return status_kib("VmHWM")
