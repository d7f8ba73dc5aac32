"""zarr-python >= 3.4 (and zarrs) in a Python 3.12 virtual environment (test helper).

zarr-python 3.4, the first release that reads and writes the rectilinear chunk
grid, needs Python >= 3.12; the test suite runs on 3.11. The first test that
needs it builds a venv once, under a file lock so parallel xdist workers do not
race, in ``~/.cache/zarrdask-tests/zarr34-venv-py3.12`` (``ZARRDASK_TEST_CACHE``
moves the cache), with ``zarr>=3.4``, ``numpy`` and, where a wheel installs,
``zarrs``; later runs reuse it. Scripts run there in a subprocess and talk JSON.

Tests skip, saying why, when no Python 3.12 is found (``$(pyenv root)/versions/3.12.*``
or ``python3.12`` on the PATH) or the packages cannot be installed (no PyPI).
"""

from __future__ import annotations

import fcntl
import functools
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

VENV_NAME = "zarr34-venv-py3.12"
REQUIREMENT = "zarr>=3.4"


def _cache_dir() -> Path:
    return Path(os.environ.get("ZARRDASK_TEST_CACHE", Path.home() / ".cache" / "zarrdask-tests"))


def find_python312() -> str | None:
    """A Python 3.12 interpreter: pyenv's, else ``python3.12`` on the PATH."""
    roots = []
    try:
        roots.append(subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30,
                                    check=True).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    roots.append(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv")))
    for root in roots:
        found = sorted(glob.glob(os.path.join(root, "versions", "3.12.*", "bin", "python3.12")))
        if found:
            return found[-1]
    return shutil.which("python3.12")


@functools.lru_cache(maxsize=None)
def _venv() -> tuple[str | None, str]:
    """(the venv's python, "") or (None, why not)."""
    py = find_python312()
    if py is None:
        return None, "no Python 3.12 interpreter (pyenv versions/3.12.* or python3.12): zarr-python 3.4 needs it"
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / VENV_NAME
    marker = venv / "zarrdask-ready.json"
    python = venv / "bin" / "python"
    with open(cache / (VENV_NAME + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return str(python), ""
        if venv.exists():
            shutil.rmtree(venv)
        try:
            subprocess.run([py, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
            r = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                REQUIREMENT, "numpy"], capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.SubprocessError) as e:
            return None, f"could not build the Python 3.12 venv for zarr-python 3.4: {e}"
        if r.returncode:
            shutil.rmtree(venv, ignore_errors=True)
            return None, ("could not install zarr>=3.4 into a Python 3.12 venv (PyPI unreachable?): "
                          + (r.stderr.strip().splitlines() or ["?"])[-1])
        # zarrs (its codec pipeline for zarr-python) is optional: tests using it skip without it
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "zarrs"],
                       capture_output=True, timeout=900)
        versions = subprocess.run(
            [str(python), "-c", "import json, zarr\ntry:\n import zarrs; v = zarrs.__version__\n"
                                "except Exception: v = None\nprint(json.dumps([zarr.__version__, v]))"],
            capture_output=True, text=True, timeout=120)
        marker.write_text(versions.stdout or "[]")
        return str(python), ""


def python() -> str:
    """The venv's python, or skip the test saying why there is none."""
    py, why = _venv()
    if py is None:
        pytest.skip(why)
    return py


def versions() -> tuple[str, str | None]:
    """(zarr version, zarrs version or None) in the venv."""
    py = python()
    zarr_v, zarrs_v = json.loads((Path(py).parent.parent / "zarrdask-ready.json").read_text())
    return zarr_v, zarrs_v


@functools.lru_cache(maxsize=None)
def _ensure(module: str, requirement: str) -> str:
    py = python()
    check = [py, "-c", f"import {module}"]
    if subprocess.run(check, capture_output=True, timeout=120).returncode == 0:
        return ""
    with open(_cache_dir() / (VENV_NAME + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if subprocess.run(check, capture_output=True, timeout=120).returncode == 0:
            return ""
        r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement],
                           capture_output=True, text=True, timeout=900)
    if r.returncode:
        return f"could not install {requirement} into the Python 3.12 venv: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return ""


def require(module: str, requirement: str) -> None:
    """Make ``module`` importable in the venv (``pip install requirement`` there once,
    e.g. ``cast-value-rs``, which zarr-python's ``cast_value`` codec needs), or skip the test."""
    why = _ensure(module, requirement)
    if why:
        pytest.skip(why)


def run(script: str, *args: Any) -> Any:
    """Run ``script`` in the venv with ``sys.argv[1:] = args``; its stdout parsed as JSON."""
    r = subprocess.run([python(), "-c", script, *map(str, args)], capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise AssertionError(f"zarr-python 3.4 script failed:\n{r.stderr[-4000:]}")
    out = r.stdout.strip().splitlines()
    return json.loads(out[-1]) if out else None


if __name__ == "__main__":  # build the venv ahead of a test run
    print(_venv(), file=sys.stderr)
