"""zarrdask.xarray.to_zarr(..., resume=True): a two-variable Dataset write, an
append and a region write, interrupted midway in this process, finish with
only the unfinished blocks computed and leave what a plain write leaves."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import zarrdask
from zarrdask.dask.write_record import RECORD_DIR
from zarrdask.errors import ResumeRefusedError, WriteRecordMismatchError

from . import _sources as S

SCHED = {"scheduler": "threads", "num_workers": 1}
ENC = {"chunks": (4, 32), "shards": (8, 64)}
ALL = {(i, 0) for i in range(8)}



def dataset(offset=0, start=0):
    x = S.source(offset=offset)
    return xr.Dataset(
        {"a": (("t", "y"), x), "b": (("t", "y"), (x * 2).astype("i4"))},
        coords={"t": np.arange(start, start + 64), "y": np.arange(64)},
        attrs={"title": "resume"},
    )


def write(path, ds, **kwargs):
    return zarrdask.xarray.to_zarr(ds, str(path), resume=True, chunkmanager_store_kwargs=SCHED, **kwargs)



def recorded(files, created=True):
    """Per array number of the write, the blocks finished: in arrays the write
    creates, those whose shard is stored; in others, those recorded by a marker."""
    out: dict[int, set] = {}
    if created:
        for n, i, j in S.shards(files, ("a", "b")):
            out.setdefault(n, set()).add((i, j))
        return out
    for key in files:
        if key.startswith(RECORD_DIR + "/") and "/done/" in key:
            n, index = key.split("/done/")[1].split("/")
            out.setdefault(int(n), set()).add(tuple(int(i) for i in index.split(".")))
    return out


def no_record(path):
    return not [k for k in S.files(path) if k.startswith(RECORD_DIR)]


def test_two_variables_finish_with_only_unfinished_blocks(tmp_path):
    plain = tmp_path / "plain.zarr"
    zarrdask.xarray.to_zarr(dataset(), str(plain), encoding={"a": ENC, "b": ENC}, chunkmanager_store_kwargs=SCHED)
    out = tmp_path / "out.zarr"
    S.interrupt(lambda: write(out, dataset(), encoding={"a": ENC, "b": ENC}))
    done = recorded(S.files(out))
    assert done
    write(out, dataset(), encoding={"a": ENC, "b": ENC})
    # "b" is computed from "a"'s blocks: a source block is computed when either variable still needs it
    assert set(S.CALLS) == ALL - (done.get(0, set()) & done.get(1, set()))
    assert S.files(out) == S.files(plain)
    xr.testing.assert_identical(xr.open_zarr(str(out)).compute(), dataset().compute())


def test_other_data_is_refused_and_changes_nothing(tmp_path):
    out = tmp_path / "out.zarr"
    S.interrupt(lambda: write(out, dataset(), encoding={"a": ENC, "b": ENC}))
    before = S.files(out)
    with pytest.raises(WriteRecordMismatchError, match=r"group '/'.*array 'a' source"):
        write(out, dataset(offset=5), encoding={"a": ENC, "b": ENC})
    with pytest.raises(WriteRecordMismatchError, match="attributes"):
        write(out, dataset().assign_attrs(title="other"), encoding={"a": ENC, "b": ENC})
    assert S.files(out) == before and S.CALLS == []


def test_append_resumes_without_appending_twice(tmp_path):
    plain = tmp_path / "plain.zarr"
    zarrdask.xarray.to_zarr(dataset(), str(plain), encoding={"a": ENC, "b": ENC})
    zarrdask.xarray.to_zarr(dataset(start=64), str(plain), append_dim="t")
    out = tmp_path / "out.zarr"
    zarrdask.xarray.to_zarr(dataset(), str(out), encoding={"a": ENC, "b": ENC})
    S.CALLS.clear()
    S.interrupt(lambda: write(out, dataset(start=64), append_dim="t"))
    assert zarrdask.open_array(str(out), path="a").shape == (128, 64)  # resized before the blocks
    done = recorded(S.files(out), created=False)
    write(out, dataset(start=64), append_dim="t")
    assert set(S.CALLS) == ALL - (done.get(0, set()) & done.get(1, set()))
    assert S.files(out) == S.files(plain)  # the region recorded: no second append, no hole
    before = S.files(out)
    with pytest.raises(ResumeRefusedError, match="already ends with the 64 values"):
        write(out, dataset(start=64), append_dim="t")  # finished: no record, and the values are there
    assert S.files(out) == before


def test_append_without_coordinate_is_refused(tmp_path):
    out = tmp_path / "out.zarr"
    ds = dataset().drop_vars("t")
    zarrdask.xarray.to_zarr(ds, str(out))
    before = S.files(out)
    with pytest.raises(ResumeRefusedError, match="needs an index coordinate 't'"):
        write(out, ds, append_dim="t")
    assert S.files(out) == before


def test_region_write_resumes_its_region(tmp_path):
    def target(path):
        template = dataset().isel(t=[0]).reindex(t=np.arange(128)).chunk({"t": 8})
        zarrdask.xarray.to_zarr(template, str(path), compute=False, encoding={"a": ENC, "b": ENC})
    region = {"t": slice(32, 96)}
    part = dataset().drop_vars("y")
    plain = tmp_path / "plain.zarr"
    target(plain)
    zarrdask.xarray.to_zarr(part, str(plain), region=region, chunkmanager_store_kwargs=SCHED)
    out = tmp_path / "out.zarr"
    target(out)
    S.interrupt(lambda: write(out, part, region=region))
    done = recorded(S.files(out), created=False)
    write(out, part, region=region)
    assert set(S.CALLS) == ALL - (done.get(0, set()) & done.get(1, set()))
    assert S.files(out) == S.files(plain)


def test_replacing_write_and_peers_while_unfinished(tmp_path):
    out = tmp_path / "out.zarr"
    zarrdask.xarray.to_zarr(dataset(offset=9), str(out))
    S.interrupt(lambda: write(out, dataset(), mode="w", encoding={"a": ENC, "b": ENC}))
    with pytest.warns(Warning):  # zarr-python names the record's directory; it opens the rest
        reopened = xr.open_zarr(str(out), consolidated=False)
    assert set(reopened.data_vars) == {"a", "b"}
    assert set(xr.open_dataset(str(out), engine="zarrdask", chunks={}).data_vars) == {"a", "b"}
    write(out, dataset(), mode="w", encoding={"a": ENC, "b": ENC})
    assert no_record(out)
    xr.testing.assert_identical(xr.open_zarr(str(out)).compute(), dataset().compute())


def test_accessor_and_datatree(tmp_path):
    out = tmp_path / "acc.zarr"
    dataset().zarrdask.to_zarr(str(out), resume=True, encoding={"a": ENC, "b": ENC},
                               chunkmanager_store_kwargs=SCHED)
    assert no_record(out)
    tree = xr.DataTree.from_dict({"/": dataset(), "/child": dataset(offset=3)})
    S.interrupt(lambda: zarrdask.xarray.to_zarr(tree, str(tmp_path / "tree.zarr"), resume=True,
                                              chunkmanager_store_kwargs=SCHED))
    zarrdask.xarray.to_zarr(tree, str(tmp_path / "tree.zarr"), resume=True, chunkmanager_store_kwargs=SCHED)
    assert no_record(tmp_path / "tree.zarr")
    back = xr.open_datatree(str(tmp_path / "tree.zarr"), engine="zarrdask")
    xr.testing.assert_identical(back["child"].to_dataset().compute(), dataset(offset=3).compute())
