"""zarrdask.rechunk(..., resume=True): a two-stage copy of an array, a group
and a Dataset, interrupted midway, finishes with only the tasks not recorded
as done, on the plan it was made with."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.dask.write_record import RECORD_DIR
from zarrdask.errors import ContainsArrayError, WriteRecordMismatchError

from . import _sources as S

SCHED = {"scheduler": "threads", "num_workers": 1}
rechunk_module = importlib.import_module("zarrdask.workflows.rechunk")



@pytest.fixture
def copies(monkeypatch):
    """Every copy task's region, in order; the ``at``-th one fails while ``fail`` is set."""
    real = rechunk_module.copy_block
    seen: list = []
    state = {"fail": True, "at": 7}

    def copy(source, target, region, *after):
        seen.append((target.path, region))
        if state["fail"] and len(seen) == state["at"]:
            raise S.Interrupted("copy 7")
        return real(source, target, region, *after)

    monkeypatch.setattr(rechunk_module, "copy_block", copy)
    return seen, state


def source_array(path):
    return zarrdask.create_array(str(path), shape=(200, 200), dtype="f4", chunks=(1, 200),
                                 data=np.arange(40000, dtype="f4").reshape(200, 200), attributes={"u": 1})


def plan(src, tmp_path, **kwargs):
    return zarrdask.rechunk(src, (200, 1), str(tmp_path / "tgt.zarr"), max_mem="40kB",
                            temp_store=str(tmp_path / "tmp.zarr"), resume=True, **kwargs)


def test_two_stage_copy_resumes(tmp_path, copies, monkeypatch):
    seen, state = copies
    src = source_array(tmp_path / "src.zarr")
    first = plan(src, tmp_path)
    assert first.nstages == 2
    with pytest.raises(S.Interrupted):
        first.execute(progress=False, **SCHED)
    state["fail"] = False
    ran_before = len(seen) - 1
    seen.clear()
    resume_module = importlib.import_module("zarrdask.workflows.rechunk_resume")
    monkeypatch.setattr(resume_module, "min_tasks", lambda: 1000)
    monkeypatch.setattr(resume_module, "threads_per_worker", lambda: 4)
    again = plan(src, tmp_path)  # another cluster: the recorded plan is kept
    assert again.ntasks == first.ntasks
    target = again.execute(progress=False, **SCHED)
    assert len(seen) == first.ntasks - ran_before
    np.testing.assert_array_equal(target[...], src[...])
    assert target.chunks == (200, 1)
    assert not [k for k in S.files(tmp_path / "tgt.zarr") if k.startswith(RECORD_DIR)]
    assert S.files(tmp_path / "tmp.zarr") == {}  # the intermediate removed
    with pytest.raises(ContainsArrayError, match="rechunk writes into an empty place"):
        plan(src, tmp_path)  # finished: no record left


def test_other_copy_is_refused(tmp_path, copies):
    src = source_array(tmp_path / "src.zarr")
    with pytest.raises(S.Interrupted):
        plan(src, tmp_path).execute(progress=False, **SCHED)
    before = S.files(tmp_path / "tgt.zarr")
    other = zarrdask.rechunk(src, (100, 1), str(tmp_path / "tgt.zarr"), max_mem="40kB",
                             temp_store=str(tmp_path / "tmp.zarr"), resume=True)
    with pytest.raises(WriteRecordMismatchError, match="chunk"):
        other.execute(progress=False, **SCHED)
    assert S.files(tmp_path / "tgt.zarr") == before


def test_group_copy_resumes(tmp_path, copies):
    seen, state = copies
    g = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    for name in ("a", "b"):
        g.create_array(name, shape=(400, 400), dtype="i4", chunks=(50, 400),
                       data=np.arange(160000, dtype="i4").reshape(400, 400))

    def copy():
        return zarrdask.rechunk(g, {"a": (50, 50), "b": (50, 50)}, str(tmp_path / "t.zarr"), max_mem="300kB",
                                resume=True).execute(progress=False, **SCHED)

    state["at"] = 11
    with pytest.raises(S.Interrupted):
        copy()
    state["fail"] = False
    seen.clear()
    out = copy()
    assert len(seen) == 16 - 10
    for name in ("a", "b"):
        np.testing.assert_array_equal(out[name][...], g[name][...])
    assert not [k for k in S.files(tmp_path / "t.zarr") if k.startswith(RECORD_DIR)]


def test_dataset_copy_resumes(tmp_path):
    x = S.source(shape=(200, 200), chunks=(1, 200))
    ds = xr.Dataset({"a": (("t", "y"), x), "b": (("t", "y"), x + 1)})

    def run():
        return zarrdask.rechunk(ds, {"t": 200, "y": 1}, str(tmp_path / "tgt.zarr"), max_mem="40kB",
                                temp_store=str(tmp_path / "tmp.zarr"), resume=True).execute(progress=False, **SCHED)

    S.FAIL_AT_CALL[0] = 150
    with pytest.raises(S.Interrupted):
        run()
    S.FAIL_AT_CALL[0] = 0
    S.CALLS.clear()
    run()
    assert 0 < len(S.CALLS) < 200  # source blocks of the copies recorded as done are not computed again
    back = xr.open_zarr(str(tmp_path / "tgt.zarr"))
    np.testing.assert_array_equal(back.a.values, x.compute())
    np.testing.assert_array_equal(back.b.values, x.compute() + 1)
    assert not [k for k in S.files(tmp_path / "tgt.zarr") if k.startswith(RECORD_DIR)]
    assert S.files(tmp_path / "tmp.zarr") == {}
