"""The workflow commands: ``validate`` (zarrdask.zom.check), ``convert``
(zarrdask.workflows.convert), ``rechunk`` (zarrdask.rechunk) and ``demo``
(zarrdask.workflows.demo): exit codes, --json output, one-line errors, and the
stores they write checked with zarr-python and zarrdask."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import numpy as np
import pytest
zarr = pytest.importorskip("zarr")  # zarr-python, which needs numcodecs >= 0.14

import zarrdask
from zarrdask import zom
from zarrdask.cli._workflow import parse_shape

from ._util import no_traceback, run, subprocess_env

TEMP = np.arange(40 * 30, dtype="f4").reshape(40, 30)
COUNTS = np.arange(100, dtype="i8")


@pytest.fixture
def v2_tree(tmp_path):
    """A v2 hierarchy written by zarr-python: /temp (y, x) with _ARRAY_DIMENSIONS,
    /sub/counts without dimension names."""
    path = tmp_path / "v2.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.attrs["title"] = "test"
    t = root.create_array("temp", shape=(40, 30), chunks=(10, 10), dtype="f4",
                          attributes={"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"})
    t[:] = TEMP
    c = root.create_group("sub").create_array("counts", shape=(100,), chunks=(7,), dtype="i8")
    c[:] = COUNTS
    return path


@pytest.fixture
def v3_tree(tmp_path):
    """A v3 hierarchy with dimension names everywhere."""
    path = tmp_path / "v3.zarr"
    root = zarrdask.open_group(str(path), mode="w")
    root.create_array("temp", shape=(40, 30), dtype="f4", chunks=(10, 10), dimension_names=("y", "x"))[:] = TEMP
    root.create_array("x", shape=(30,), dtype="f8", chunks=(30,), dimension_names=("x",))[:] = np.arange(30.0)
    return path


def one_error_line(r, start: str = "zarrdask: error: ") -> str:
    assert r.stderr.startswith(start) and r.stderr.count("\n") == 1, r.stderr
    assert no_traceback(r.stderr) and r.stdout == ""
    return r.stderr


def usage_error(r, option: str) -> None:
    assert r.exit_code == 2, r.output
    assert f"Error: Invalid value for '{option}'" in r.stderr or "Error: Invalid value for '-" in r.stderr, r.stderr
    assert no_traceback(r.stderr)


# -- parsing -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,kwargs,expected",
    [
        ("64,64", {}, (64, 64)),
        (" 8 , -1 ", {}, (8, -1)),
        ("64", {}, (64,)),
        ("64", {"lone_int": True}, 64),
        ("64,", {"lone_int": True}, (64,)),
        ("none,5", {"allow_none": True}, (None, 5)),
        ("time=365, lat=30", {"allow_names": True}, {"time": 365, "lat": 30}),
        ("0=4,x=none", {"allow_names": True, "allow_none": True}, {"0": 4, "x": None}),
        ("[8, 8]", {}, (8, 8)),
        ('{"temp": [20, 20], "sub/counts": null}', {}, {"temp": (20, 20), "sub/counts": None}),
        ('{"time": 10}', {"allow_names": True}, {"time": 10}),
        (None, {}, None),
    ],
)
def test_parse_shape(text, kwargs, expected):
    assert parse_shape(text, "--chunks", **kwargs) == expected


@pytest.mark.parametrize(
    "text,kwargs",
    [("a,b", {}), ("0,4", {}), ("-2", {}), ("none", {}), ("x=4", {}), ("x=", {"allow_names": True}),
     ("{bad", {}), ('{"temp": 5}', {}), ("", {})],
)
def test_parse_shape_errors(text, kwargs):
    with pytest.raises(click.BadParameter):
        parse_shape(text, "--chunks", **kwargs)


# -- validate ------------------------------------------------------------------------------
def test_validate_ok(v3_tree):
    r = run("validate", v3_tree, "--xarray")
    assert r.exit_code == 0, r.output
    assert r.stdout == f"{v3_tree}: OK (3 node(s) checked, no problems)\n"
    r = run("validate", v3_tree, "--node", "temp", "--require-dimension-names", "--json")
    assert r.exit_code == 0
    assert json.loads(r.stdout) == {"ok": True, "checked": 1, "problems": []}


def test_validate_missing_dimension_names(v2_tree):
    assert run("validate", v2_tree).exit_code == 0  # the default rules: names, when given, fit the shape
    r = run("validate", v2_tree, "--require-dimension-names")
    assert r.exit_code == 1, r.output
    assert r.stdout.splitlines() == [
        f"{v2_tree}: 1 problem(s) in 4 node(s):",
        "  /sub/counts: [require-dimension-names] the array has no attribute '_ARRAY_DIMENSIONS'",
    ]
    r = run("validate", v2_tree, "--require-dimension-names", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["checked"] == 4
    assert [(p["path"], p["rule"]) for p in doc["problems"]] == [("/sub/counts", "require-dimension-names")]


def test_validate_template(v2_tree, tmp_path):
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(zom.from_zarr(str(v2_tree)).to_json()))
    for args in (["-t", whole], ["-t", whole, "--exact"], ["--template", v2_tree, "--exact"]):
        r = run("validate", v2_tree, *args)
        assert r.exit_code == 0, (args, r.output)

    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"members": {"temp": {"shape": [41, 30], "attributes": {"units": "C"}},
                                               "extra": {"shape": [3]}}}))
    r = run("validate", v2_tree, "--template", partial, "--json")
    assert r.exit_code == 1
    found = {(p["path"], p["message"]) for p in json.loads(r.stdout)["problems"]}
    assert found == {
        ("/temp", "field 'shape' is [40, 30], the template expects [41, 30]"),
        ("/temp", "attribute 'units' is 'K', the template expects 'C'"),
        ("/extra", "missing: the template expects an array here"),
    }
    usage_error(run("validate", v2_tree, "-t", partial, "--exact"), "--template")  # --exact needs a whole doc
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    usage_error(run("validate", v2_tree, "-t", broken), "--template")
    broken.write_text("[1]")
    usage_error(run("validate", v2_tree, "-t", broken), "--template")
    usage_error(run("validate", v2_tree, "-t", tmp_path / "missing.json"), "-t")
    assert run("validate", v2_tree, "--exact").exit_code == 2


def test_validate_nothing_at_the_path(tmp_path):
    r = run("validate", tmp_path / "missing.zarr")
    assert r.exit_code == 2
    assert "FileNotFoundError: no such file or directory" in one_error_line(r)


# -- convert -------------------------------------------------------------------------------
def test_convert_v2_to_sharded_v3(v2_tree, tmp_path):
    dst = tmp_path / "v3.zarr"
    r = run("convert", v2_tree, dst, "--shards", "20,20", "--chunks", "5,5", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["ok"] is True and doc["verified"] is True and doc["zarr_format"] == 3
    assert doc["tasks_run"] == 4 + 1 and doc["tasks_skipped"] == 0  # 4 shards of temp, 1 block of counts
    assert {a["path"]: a["ok"] for a in doc["arrays"]} == {"temp": True, "sub/counts": True}
    assert all(a["source_sha256"] == a["target_sha256"] for a in doc["arrays"])

    g = zarr.open_group(str(dst), mode="r")  # zarr-python reads the result
    assert g.metadata.zarr_format == 3 and g.attrs["title"] == "test"
    t = g["temp"]
    assert t.shards == (20, 20) and t.chunks == (5, 5)
    assert t.metadata.dimension_names == ("y", "x") and t.attrs["units"] == "K"
    assert "_ARRAY_DIMENSIONS" not in t.attrs
    np.testing.assert_array_equal(t[:], TEMP)
    c = g["sub/counts"]  # --shards 20,20 applies to 2-d arrays only
    assert c.shards is None and c.chunks == (7,)
    np.testing.assert_array_equal(c[:], COUNTS)

    r = run("convert", v2_tree, dst, "--shards", "20,20", "--chunks", "5,5", "--json")  # again: all done
    assert r.exit_code == 0, r.output
    again = json.loads(r.stdout)
    assert again["tasks_run"] == 0 and again["tasks_skipped"] == doc["tasks_run"] and again["ok"]

    r = run("convert", v2_tree, dst, "--no-verify")
    assert r.exit_code == 2  # a different layout than what is there
    assert "NodeConflictError" in one_error_line(r) and "pass --overwrite" in r.stderr
    r = run("convert", v2_tree, dst, "--no-verify", "--overwrite")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("converted to v3 ") and r.stdout.endswith("not verified (--no-verify)\n")
    assert zarr.open_array(str(dst / "temp"), mode="r").shards is None


def test_convert_per_array_layout_and_codecs(v2_tree, tmp_path):
    dst = tmp_path / "v3.zarr"
    r = run("convert", v2_tree, dst, "--shards", '{"temp": [40, 30]}', "--chunks", '{"sub/counts": [50]}',
            "--compressor", '{"name": "zstd", "configuration": {"level": 3}}', "--compressor", "crc32c")
    assert r.exit_code == 0, r.output
    assert "temp (40, 30) float32 sha256" in r.stdout and r.stdout.count(" OK") == 2
    t = zarrdask.open_array(str(dst), path="temp", mode="r")
    assert t.shards == (40, 30) and t.chunks == (10, 10)
    c = zarrdask.open_array(str(dst), path="sub/counts", mode="r")
    assert c.shards is None and c.chunks == (50,)
    names = [codec["name"] for codec in c.metadata.to_json()["codecs"]]
    assert names == ["bytes", "zstd", "crc32c"]
    np.testing.assert_array_equal(c[:], COUNTS)

    r = run("convert", v2_tree, tmp_path / "raw.zarr", "--no-compression", "--json")
    assert r.exit_code == 0
    raw = zarrdask.open_array(str(tmp_path / "raw.zarr"), path="temp", mode="r")
    assert list(raw.compressors) == []


def test_convert_v2_to_v2_with_a_codec_name(v2_tree, tmp_path):
    dst = tmp_path / "v2b.zarr"
    r = run("convert", v2_tree, dst, "--zarr-format", "2", "--chunks", "20,15", "--compressor", "zstd")
    assert r.exit_code == 0, r.output
    meta = json.loads((dst / "temp" / ".zarray").read_text())
    assert meta["compressor"]["id"] == "zstd" and meta["chunks"] == [20, 15]
    a = zarr.open_array(str(dst / "temp"), mode="r")
    np.testing.assert_array_equal(a[:], TEMP)


@pytest.mark.parametrize(
    "args,code,needle",
    [
        (["--shards", "a,b"], 2, "Invalid value for '--shards'"),
        (["--chunks", "x=4"], 2, "Invalid value for '--chunks'"),
        (["--compressor", "nosuchcodec"], 2, "UnknownCodecError"),
        (["--compressor", "[1]"], 2, "Invalid value for '--compressor'"),
        (["--no-compression", "--compressor", "zstd"], 2, "exclude each other"),
        (["--zarr-format", "2", "--shards", "20,20"], 2,
         "zarrdask: error: ValueError: array '/temp': Zarr v2 has no shards; convert with --zarr-format 3"),
        (["-S", "anon=true"], 2, "storage options only apply to URLs"),
    ],
)
def test_convert_usage_errors(v2_tree, tmp_path, args, code, needle):
    r = run("convert", v2_tree, tmp_path / "out.zarr", *args)
    assert r.exit_code == code, r.output
    assert needle in r.stderr and no_traceback(r.stderr) and r.stdout == ""


def test_convert_missing_source(tmp_path):
    r = run("convert", tmp_path / "missing.zarr", tmp_path / "out.zarr")
    assert r.exit_code == 2
    assert one_error_line(r) == f"zarrdask: error: FileNotFoundError: no such file or directory: " \
                                f"'{tmp_path / 'missing.zarr'}'\n"
    assert not (tmp_path / "out.zarr").exists()


def test_convert_verification_failure(v2_tree, tmp_path, monkeypatch):
    import importlib

    module = importlib.import_module("zarrdask.workflows.convert")  # the module, not the function

    def differ(pairs, *args):
        return [module.ArrayCheck(d.path, d.shape, str(d.dtype), "aa", "bb") for _, d in pairs]

    monkeypatch.setattr(module, "_verify", differ)
    r = run("convert", v2_tree, tmp_path / "out.zarr")
    assert r.exit_code == 1
    assert "VerificationError: the converted arrays differ from the source" in one_error_line(r)
    r = run("convert", v2_tree, tmp_path / "out.zarr", "--json")
    assert r.exit_code == 1 and r.stderr.startswith("zarrdask: error: VerificationError")
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and "'temp': values differ" in doc["error"]


# -- rechunk -------------------------------------------------------------------------------
def test_rechunk_dry_run(v2_tree, tmp_path):
    dst = tmp_path / "r.zarr"
    r = run("rechunk", v2_tree, dst, "--chunks", "y=40,x=5", "--dry-run")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("<zarrdask.RechunkPlan: 2 arrays, 1 stage, 2 tasks, max_mem ")
    assert "/temp  (40, 30) float32: chunks (10, 10) -> (40, 5)" in lines
    assert lines[-1] == "dry run: nothing written"
    assert not dst.exists()

    r = run("rechunk", v2_tree, dst, "--chunks", "y=40,x=5", "--max-mem", "1MB", "--dry-run", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["executed"] is False and doc["seconds"] is None and doc["max_mem"] == 1_000_000
    assert doc["ntasks"] == 2 and doc["nstages"] == 1
    plans = {a["name"]: a for a in doc["arrays"]}
    assert plans["temp"]["target_chunks"] == [40, 5] and plans["sub/counts"]["target_chunks"] == [7]
    assert not dst.exists()


def test_rechunk_group_by_dimension_name_with_shards(v3_tree, tmp_path):
    dst = tmp_path / "r.zarr"
    r = run("rechunk", v3_tree, dst, "-c", "y=40,x=5", "--shards", "x=15", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["executed"] is True and doc["seconds"] >= 0
    t = zarrdask.open_array(str(dst), path="temp", mode="r")
    assert t.chunks == (40, 5) and t.shards == (40, 15) and t.dimension_names == ("y", "x")
    np.testing.assert_array_equal(t[:], TEMP)
    x = zarrdask.open_array(str(dst), path="x", mode="r")  # has the dimension x too
    assert x.chunks == (5,) and x.shards == (15,)
    np.testing.assert_array_equal(x[:], np.arange(30.0))

    r = run("rechunk", v3_tree, dst, "-c", "y=40")  # DST must be empty
    assert r.exit_code == 2 and "ContainsGroupError" in one_error_line(r)


def test_rechunk_array_through_an_intermediate(v2_tree, tmp_path):
    dst, temp = tmp_path / "r.zarr", tmp_path / "temp.zarr"
    r = run("rechunk", v2_tree / "temp", dst, "--chunks", "40,1", "--max-mem", "1.2kB")
    assert r.exit_code == 2
    assert "RechunkPlanError" in one_error_line(r) and "Pass --temp PATH" in r.stderr
    assert not dst.exists()

    r = run("rechunk", v2_tree / "temp", dst, "--chunks", "0=-1", "--dry-run", "--json")  # by dimension index
    assert json.loads(r.stdout)["arrays"][0]["target_chunks"] == [40, 10]

    r = run("rechunk", v2_tree, dst, "-n", "temp", "--chunks", "40,1", "--max-mem", "1.2kB", "--temp", temp)
    assert r.exit_code == 0, r.output
    assert "stage 2: intermediate -> target" in r.stdout
    assert r.stdout.splitlines()[-1] == f"the intermediate arrays in {temp} are removed"
    assert zarrdask.open_group(str(temp), mode="r").nmembers == 0 if (temp / "zarr.json").exists() else True
    assert not [f for f in temp.rglob("*") if f.is_file() and f.name not in ("zarr.json", ".zgroup")]
    a = zarrdask.open_array(str(dst), mode="r")
    assert a.chunks == (40, 1) and a.zarr_format == 2
    np.testing.assert_array_equal(a[:], TEMP)


@pytest.mark.parametrize(
    "args,needle",
    [
        ([], "give the target layout with --chunks and/or --shards"),
        (["--chunks", "z=4"], "ValueError: target_chunks: no array of the group has the dimension(s) ['z']"),
        (["--chunks", "4,4,4"], "ValueError: target_chunks (4, 4, 4): the group has no array with 3 dimensions"),
        (["--chunks", "4,4", "--max-mem", "lots"], "Invalid value for '--max-mem'"),
        (["--chunks", "4,4", "--shards", "8,8"], "Zarr v2 has no sharding"),
    ],
)
def test_rechunk_usage_errors(v2_tree, tmp_path, args, needle):
    r = run("rechunk", v2_tree, tmp_path / "r.zarr", *args)
    assert r.exit_code == 2, r.output
    assert needle in r.stderr and no_traceback(r.stderr) and r.stdout == ""


# -- as users run them ---------------------------------------------------------------------
def zd(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "zarrdask.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, check=False, env=subprocess_env(), stdin=subprocess.DEVNULL)


def test_validate_in_a_subprocess(v2_tree, tmp_path):
    r = zd("validate", v2_tree, "--require-dimension-names", "--json")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["problems"][0]["path"] == "/sub/counts" and r.stderr == ""
    r = zd("validate", tmp_path / "missing.zarr")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"zarrdask: error: FileNotFoundError: no such file or directory: '{tmp_path / 'missing.zarr'}'\n"


def test_demo(tmp_path):
    """The demo, small, on a LocalCluster of one worker process: the progress lines on
    stderr, the summary as JSON on stdout, the stores kept in --path."""
    r = zd("demo", "--size", "5MB", "--workers", "1", "--path", tmp_path / "demo", "--max-mem", "64MB",
           "--progress", "--json", timeout=180)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is True and doc["problems"] == 0 and doc["stores_kept"] is True
    assert doc["shape"] == [64, 90, 180] and doc["nbytes"] == 64 * 90 * 180 * 4
    assert set(doc["timings"]) == {"write", "open", "reduce", "rechunk", "verify"}
    assert 250 < doc["global_mean"] < 300
    assert set(doc["access"]) == {"one point, all days", "one day, whole globe"}
    assert "1. writing the map layout" in r.stderr and "OK, no corrupt chunk" in r.stderr
    assert "% Completed" in r.stderr  # the progress bars go to stderr too
    series = zarrdask.open_array(str(tmp_path / "demo" / "t2m_series.zarr"), path="t2m", mode="r")
    assert series.shape == (64, 90, 180) and series.chunks[0] == 64


def test_rechunk_and_convert_to_a_rectilinear_grid(tmp_path):
    import numpy as np

    import zarrdask

    from ._util import run as run_cli

    src = str(tmp_path / "src.zarr")
    zarrdask.create_array(src, shape=(90, 8), chunks=(30, 8), dtype="f4", data=np.arange(720, dtype="f4").reshape(90, 8))
    for command, extra in (("rechunk", ["--max-mem", "10MB"]), ("convert", [])):
        dst = str(tmp_path / f"{command}.zarr")
        result = run_cli(command, src, dst, "--chunks", "[[31, 28, 31], 8]", *extra)
        assert result.exit_code == 0, result.output
        a = zarrdask.open_array(dst)
        assert a.chunk_grid == "rectilinear" and a.chunks == ((31, 28, 31), (8,))
        np.testing.assert_array_equal(a[...], np.arange(720, dtype="f4").reshape(90, 8))
