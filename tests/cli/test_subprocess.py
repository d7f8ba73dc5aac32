"""The command line as users run it: ``python -m zarrdask.cli`` (and the ``zarrdask``
script when installed) in a subprocess: exit codes, stdout/stderr, no tracebacks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import zarrdask

from ._util import flip, no_traceback, subprocess_env


def zd(*args, script: bool = False) -> subprocess.CompletedProcess:
    cmd = [shutil.which("zarrdask")] if script else [sys.executable, "-m", "zarrdask.cli"]
    return subprocess.run(
        [*cmd, *map(str, args)], capture_output=True, text=True, timeout=120, env=subprocess_env(),
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def sharded(tmp_path):
    path = tmp_path / "s.zarr"
    a = zarrdask.create_array(str(path), shape=(64, 64), dtype="i4", chunks=(8, 8), shards=(32, 32))
    a[:] = np.arange(64 * 64).reshape(64, 64)
    return path


def test_info_json(sharded):
    r = zd("info", sharded, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["shards"] == [32, 32] and doc["nshards_initialized"] == 4


def test_verify_flipped_byte_in_a_shard(sharded):
    flip(sharded / "c" / "1" / "0", 0)  # zstd magic number of inner chunk (0, 0)
    r = zd("verify", sharded, "--no-progress")
    assert r.returncode == 1
    assert r.stdout.splitlines()[0].startswith("c/1/0 inner chunk (0, 0): CorruptChunkError")
    assert r.stdout.splitlines()[-1] == "FAILED: 1 problem in 4 stored chunks or shards in 1 array"
    r = zd("verify", sharded, "--json", "--progress")  # a progress bar goes to stderr only
    assert r.returncode == 1 and json.loads(r.stdout)["problems"][0]["inner"] == [[0, 0]]


def test_errors_have_no_traceback(tmp_path):
    r = zd("info", tmp_path / "missing.zarr")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"zarrdask: error: FileNotFoundError: no such file or directory: '{tmp_path / 'missing.zarr'}'\n"


def test_output_into_a_closed_pipe(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "big.zarr"), shape=(50_000,), dtype="i4", chunks=(25_000,))
    a[:] = 1
    cmd = f"{sys.executable} -m zarrdask.cli cat --limit 0 '{tmp_path / 'big.zarr'}' | head -c 10"
    r = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True, text=True, timeout=120)
    assert r.stdout == "[1 1 1 1 1" and no_traceback(r.stderr)


@pytest.mark.skipif(shutil.which("zarrdask") is None, reason="the zarrdask script is not installed (pip install -e .)")
def test_console_script(sharded):
    r = zd("cat", sharded, "--slice", "0:2, 62:", script=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "[[ 62  63]\n [126 127]]\n", "")
