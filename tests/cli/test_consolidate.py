"""``zarrdask consolidate``: calls ``zarrdask.consolidate_metadata(store, path=...)``."""

from __future__ import annotations

import json

import pytest

import zarrdask

from ._util import no_traceback, run


@pytest.fixture(params=[3, 2], ids=["v3", "v2"])
def hierarchy(request, tmp_path):
    path = tmp_path / "h.zarr"
    root = zarrdask.open_group(str(path), mode="w", zarr_format=request.param)
    root.create_array("a", shape=(4,), dtype="i4", chunks=(2,))[:] = 1
    root.create_group("sub").create_array("b", shape=(2, 2), dtype="f8", chunks=(2, 2))
    return path, request.param


def test_consolidate(hierarchy):
    path, fmt = hierarchy
    r = run("consolidate", path)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("consolidated the metadata of '/'")
    assert r.stdout.rstrip().endswith("(3 nodes)")
    if fmt == 2:
        doc = json.loads((path / ".zmetadata").read_text())
        assert "sub/b/.zarray" in doc["metadata"]
    else:
        doc = json.loads((path / "zarr.json").read_text())
        assert doc["consolidated_metadata"]["kind"] == "inline"
        assert "sub/b" in doc["consolidated_metadata"]["metadata"]
    r = run("consolidate", path, "--json")
    assert r.exit_code == 0
    assert json.loads(r.stdout) == {"path": "/", "consolidated": True, "members": 3}


def test_consolidate_errors(tmp_path):
    r = run("consolidate", tmp_path / "missing.zarr")
    assert r.exit_code == 2 and r.stderr.startswith("zarrdask: error: FileNotFoundError") and no_traceback(r.output)

