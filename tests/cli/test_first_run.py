"""What a new user sees first: the demo, run as the README says, prints no warning.

The test environment is the installed one (no fresh venv per test run): the base
install's absence of the old ``crc32c`` package, which numcodecs >= 0.16.4 warns
about when ``google_crc32c`` is missing, is made by a ``sitecustomize`` on the
subprocesses' ``PYTHONPATH`` (the demo's worker processes inherit it) that hides the
``crc32c`` module: zarrdask must then run on ``google_crc32c`` alone, as it installs.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ._util import subprocess_env

_HIDE_CRC32C = """\
import sys
sys.modules["crc32c"] = None  # as if not installed: import fails, find_spec is None
"""


def test_demo_prints_no_warning(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_HIDE_CRC32C)
    env = subprocess_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    r = subprocess.run(
        [sys.executable, "-m", "zarrdask.cli", "demo", "--size", "5MB", "--workers", "1", "--max-mem", "64MB",
         "--path", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert "Warning" not in out, out
    assert "OK, no corrupt chunk" in out
