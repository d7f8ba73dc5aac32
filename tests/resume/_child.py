"""A resumable write run on a ``distributed.LocalCluster`` with worker
processes, as a process of its own: ``python -m tests.resume._child SPEC``.

``SPEC`` is JSON: ``kind`` (``"array"``, ``"dataset"``, ``"append"``,
``"region"``: see :func:`write`), ``url`` and ``storage_options`` of the
target, ``workers`` (one thread each) and ``report``, a file the child writes
when the write has finished: the blocks whose write tasks ran, as
``[array number, *block index]``. ``test_killed.py`` kills the child (and
with its process group, the cluster) midway, then runs it again.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any

import distributed

import zarrdask

from . import _sources as S

#: the array's layout: 8 x 8 = 64 shards, each the source block one task writes
SHAPE, SHARDS, CHUNKS = (256, 256), (32, 32), (16, 16)
ENCODING = {"chunks": CHUNKS, "shards": SHARDS}
#: the region write's values start here (other values than those it overwrites)
REGION_OFFSET = 10**6
_WRITE_TASK = re.compile(r"\('zarrdask-resume-write-(\d+)-[0-9a-f]+', (\d+), (\d+)\)")


def dataset(start: int = 0, offset: int | None = None) -> Any:
    """Two variables of 64 shards each, from one gated source, with an index coordinate
    (values continuing from ``start``, or from ``offset``: other values)."""
    import numpy as np
    import xarray as xr

    x = S.source(SHAPE, SHARDS, offset=start * SHAPE[1] if offset is None else offset)
    return xr.Dataset(
        {"a": (("t", "y"), x), "b": (("t", "y"), (x * 2).astype("i4"))},
        coords={"t": np.arange(start, start + SHAPE[0]), "y": np.arange(SHAPE[1])},
    )


def write(kind: str, url: str, storage_options: dict[str, Any] | None, **compute: Any) -> None:
    """The write, with ``resume=True``: the call that starts it and the call that finishes it."""
    if kind == "array":
        zarrdask.to_zarr(S.source(SHAPE, SHARDS), url, resume=True, storage_options=storage_options,
                         store_kwargs=compute, **ENCODING)
    elif kind == "dataset":
        zarrdask.xarray.to_zarr(dataset(), url, resume=True, storage_options=storage_options,
                                encoding={"a": ENCODING, "b": ENCODING}, chunkmanager_store_kwargs=compute)
    elif kind == "append":
        zarrdask.xarray.to_zarr(dataset(start=SHAPE[0]), url, append_dim="t", resume=True,
                                storage_options=storage_options, chunkmanager_store_kwargs=compute)
    elif kind == "region":
        part = dataset(start=SHAPE[0] // 2, offset=REGION_OFFSET).drop_vars("y")
        zarrdask.xarray.to_zarr(part, url, region={"t": slice(SHAPE[0] // 2, SHAPE[0] * 3 // 2)}, resume=True,
                                storage_options=storage_options, chunkmanager_store_kwargs=compute)
    else:
        raise ValueError(f"unknown kind {kind!r}")


def written_blocks(keys: list[Any]) -> list[list[int]]:
    """``[array number, i, j]`` of every write task among the task stream's keys."""
    out = []
    for key in keys:
        found = _WRITE_TASK.match(str(key))
        if found:
            out.append([int(g) for g in found.groups()])
    return out


def main(spec: dict[str, Any]) -> None:
    with distributed.LocalCluster(n_workers=spec["workers"], threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            write(spec["kind"], spec["url"], spec.get("storage_options"), retries=1)
        report = {"written": written_blocks([t["key"] for t in stream.data])}
    with open(spec["report"], "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
