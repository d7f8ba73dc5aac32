"""Writes killed for real: a child process runs a resumable write on a
``distributed.LocalCluster`` with two worker processes (one thread each) and
is SIGKILLed with its process group — the cluster with it — once about a
third of the shards are stored; the same call in a fresh process finishes it.

Checked each time: the finished store equals an uninterrupted write (every
key, every byte: metadata, shards, no record left); the resume ran the write
tasks of exactly the blocks not recorded as written (the graph is culled);
and of the shards the killed run had stored, at most the ones in flight (one
per worker thread) were written again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import zarrdask
from zarrdask.dask.write_record import RECORD_DIR
from zarrdask.errors import WriteRecordMismatchError

from . import _child
from . import _sources as S

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 2  # one thread each: at most 2 blocks in flight
SHARD = re.compile(r"(?:^|/)c/(\d+)/(\d+)$")
MARKER = re.compile(r"/done/(\d+)/(\d+)\.(\d+)$")

pytestmark = pytest.mark.slow


class Target:
    """Where a write goes, and what the test reads of it: every key with its
    bytes, and the shards stored since a moment (local files' mtimes; on S3,
    the keys that exist: its targets start empty)."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url, self.storage_options = url, storage_options
        if storage_options is None:
            self.fs, self.root = None, url
        else:
            import fsspec

            self.fs, self.root = fsspec.filesystem("s3", **storage_options), url[len("s3://"):]

    def files(self) -> dict[str, bytes]:
        if self.fs is None:
            return S.files(self.root)
        self.fs.invalidate_cache()
        paths = self.fs.find(self.root)
        return {p[len(self.root) + 1:]: v for p, v in self.fs.cat(paths).items()} if paths else {}

    def shards_since(self, t0: float) -> set[str]:
        if self.fs is None:
            out = set()
            for dirpath, _, names in os.walk(self.root):
                for name in names:
                    full = os.path.join(dirpath, name)
                    rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                    try:
                        fresh = os.stat(full).st_mtime >= t0
                    except FileNotFoundError:
                        continue
                    if fresh and SHARD.search(rel) and not name.startswith("."):
                        out.add(rel)
            return out
        self.fs.invalidate_cache()
        return {p[len(self.root) + 1:] for p in self.fs.find(self.root) if SHARD.search(p)}


def child(kind: str, target: Target, report: Path) -> subprocess.Popen:
    spec = {"kind": kind, "url": target.url, "storage_options": target.storage_options, "workers": WORKERS,
            "report": str(report)}
    env = dict(os.environ, ZARRDASK_TEST_BLOCK_DELAY="0.1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    return subprocess.Popen([sys.executable, "-m", "tests.resume._child", json.dumps(spec)], cwd=ROOT, env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_when(proc: subprocess.Popen, stored: Callable[[], int], at: int, timeout: float = 120) -> None:
    """SIGKILL ``proc``'s process group once ``stored()`` reaches ``at``."""
    deadline = time.monotonic() + timeout
    while stored() < at:
        if proc.poll() is not None:
            raise AssertionError(f"the write ended before it was killed: {proc.stderr.read().decode()[-3000:]}")
        if time.monotonic() > deadline:
            kill_group(proc)
            raise AssertionError("the write did not get a third of the way in time")
        time.sleep(0.05)
    kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group and wait until all of it is gone; then
    remove the named semaphores its processes held. (multiprocessing's
    resource tracker, which would remove them, dies with the group: without
    this every killed cluster left a few files in ``/dev/shm`` for good.) The
    group is stopped first, so that it creates none between the look and the
    kill."""
    os.killpg(proc.pid, signal.SIGSTOP)
    held = _named_semaphores(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for _ in range(500):  # the workers die with their group
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    else:
        raise AssertionError("processes of the killed group are still alive")
    for path in held:
        try:
            os.unlink(path)
        except FileNotFoundError:  # removed by its owner before the kill
            pass


def _named_semaphores(group: int) -> set[str]:
    """The POSIX named semaphores (``/dev/shm/sem.*``) mapped by the processes of ``group``."""
    held: set[str] = set()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():  # (Linux; elsewhere: none found)
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # the process group is the 5th field, after "pid (comm) state ppid"
                if int(f.read().rsplit(")", 1)[1].split()[2]) != group:
                    continue
            with open(f"/proc/{entry}/maps") as f:
                held.update(line.split(None, 5)[5].strip() for line in f if "/dev/shm/sem." in line)
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    return held


def finish(kind: str, target: Target, report: Path) -> set[tuple[int, int, int]]:
    proc = child(kind, target, report)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()[-3000:]
    return {tuple(b) for b in json.loads(report.read_text())["written"]}


def recorded(files: dict[str, bytes]) -> set[tuple[int, int, int]]:
    return {tuple(map(int, m.groups())) for k in files if k.startswith(RECORD_DIR) and (m := MARKER.search(k))}


def block_of(key: str, variables: list[str], row0: int) -> tuple[int, int, int]:
    """The record's ``(array number, i, j)`` of the block that writes shard ``key``."""
    name = key.split("/c/")[0] if "/c/" in key else ""
    i, j = map(int, SHARD.search(key).groups())
    return variables.index(name), i - row0, j


def kill_and_resume(kind: str, target: Target, tmp_path: Path, total: int, variables: list[str], row0: int = 0,
                    before_resume: Callable[[], None] | None = None) -> None:
    """Kill the write a third of the way in, resume it, check what the resume wrote.

    Arrays the write creates (``row0 == 0``: kinds "array" and "dataset") need
    no markers: a block is finished when its shard is stored. Arrays it writes
    into (an append, a region) are finished block by block as the markers say.
    """
    t0 = time.time() - 0.001
    proc = child(kind, target, tmp_path / "killed.json")
    kill_when(proc, lambda: len(target.shards_since(t0)), total // 3)
    stored = target.shards_since(t0)
    files = target.files()
    written_before = {block_of(k, variables, row0) for k in stored}
    done = written_before if kind in ("array", "dataset") else recorded(files)
    assert total // 3 <= len(stored) < total, len(stored)
    assert done and done <= written_before
    if before_resume is not None:
        before_resume()
    written = finish(kind, target, tmp_path / "resumed.json")
    every = {(n, i, j) for n in range(len(variables)) for i in range(8) for j in range(8)}
    assert written == every - done  # the resume culled the graph to the unfinished blocks
    again = written & written_before
    assert len(again) <= WORKERS, again  # only the blocks in flight at the kill were written twice
    if target.fs is None:
        # a worker killed between creating a chunk's temporary file and moving it into
        # place leaves that file (never a key); the documented clean-up removes it
        from zarrdask.storage import LocalStore

        LocalStore(target.root).clean_temporary_files(max_age=0)


def reference_dataset(path: Path, kind: str) -> dict[str, bytes]:
    import xarray as xr

    enc = {"a": _child.ENCODING, "b": _child.ENCODING}
    if kind == "region":
        whole = xr.concat([_child.dataset(), _child.dataset(start=256)], "t").chunk({"t": 32})
        zarrdask.xarray.to_zarr(whole, str(path), encoding=enc)
        part = _child.dataset(start=128, offset=_child.REGION_OFFSET).drop_vars("y")
        zarrdask.xarray.to_zarr(part, str(path), region={"t": slice(128, 384)})
    else:
        zarrdask.xarray.to_zarr(_child.dataset(), str(path), encoding=enc)
        if kind == "append":
            zarrdask.xarray.to_zarr(_child.dataset(start=256), str(path), append_dim="t")
    return S.files(path)


def test_array_on_a_local_directory(tmp_path):
    ref = tmp_path / "ref.zarr"
    zarrdask.to_zarr(S.source(_child.SHAPE, _child.SHARDS), str(ref), **_child.ENCODING)
    target = Target(str(tmp_path / "out.zarr"))

    def other_data_is_refused() -> None:
        before = target.files()
        with pytest.raises(WriteRecordMismatchError, match="source"):
            zarrdask.to_zarr(S.source(_child.SHAPE, _child.SHARDS, offset=1), target.url, resume=True,
                             **_child.ENCODING)
        assert target.files() == before  # nothing changed: every key, every byte

    kill_and_resume("array", target, tmp_path, 64, [""], before_resume=other_data_is_refused)
    assert target.files() == S.files(ref)


@pytest.mark.network
def test_array_on_s3(tmp_path, s3_bucket, s3_storage_options):
    ref = tmp_path / "ref.zarr"
    zarrdask.to_zarr(S.source(_child.SHAPE, _child.SHARDS), str(ref), **_child.ENCODING)
    target = Target(f"s3://{s3_bucket}/out.zarr", s3_storage_options)
    kill_and_resume("array", target, tmp_path, 64, [""])
    assert target.files() == S.files(ref)


def test_dataset_on_a_local_directory(tmp_path):
    target = Target(str(tmp_path / "out.zarr"))
    kill_and_resume("dataset", target, tmp_path, 128, ["a", "b"])
    assert target.files() == reference_dataset(tmp_path / "ref.zarr", "dataset")


@pytest.mark.network
def test_dataset_on_s3(tmp_path, s3_bucket, s3_storage_options):
    target = Target(f"s3://{s3_bucket}/out.zarr", s3_storage_options)
    kill_and_resume("dataset", target, tmp_path, 128, ["a", "b"])
    assert target.files() == reference_dataset(tmp_path / "ref.zarr", "dataset")


def test_append(tmp_path):
    out = tmp_path / "out.zarr"
    zarrdask.xarray.to_zarr(_child.dataset(), str(out), encoding={"a": _child.ENCODING, "b": _child.ENCODING})
    time.sleep(0.05)
    kill_and_resume("append", Target(str(out)), tmp_path, 128, ["a", "b"], row0=8)
    assert S.files(out) == reference_dataset(tmp_path / "ref.zarr", "append")
    assert zarrdask.open_array(str(out), path="a").shape == (512, 256)  # appended once, no hole
    np.testing.assert_array_equal(zarrdask.open_array(str(out), path="t")[...], np.arange(512))


def test_region(tmp_path):
    import xarray as xr

    out = tmp_path / "out.zarr"
    whole = xr.concat([_child.dataset(), _child.dataset(start=256)], "t").chunk({"t": 32})
    zarrdask.xarray.to_zarr(whole, str(out), encoding={"a": _child.ENCODING, "b": _child.ENCODING})
    time.sleep(0.05)
    kill_and_resume("region", Target(str(out)), tmp_path, 128, ["a", "b"], row0=4)
    assert S.files(out) == reference_dataset(tmp_path / "ref.zarr", "region")
