"""``zarrdask info``, ``tree``, ``ls`` and ``cat`` through click's CliRunner: text and
``--json`` output, local directories, zip files and URLs, and one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrdask
from zarrdask.cli import COMMANDS, cli
from zarrdask.cli._app import LAZY_COMMANDS
from zarrdask.cli._common import jsonable, parse_storage_options

from ._util import no_traceback, run

TEMP = np.arange(20 * 30, dtype="f4").reshape(20, 30) / 7


@pytest.fixture(params=[3, 2], ids=["v3", "v2"])
def hierarchy(request, tmp_path):
    """A group with an array, a sharded array (v3) in a subgroup and attributes."""
    fmt = request.param
    path = tmp_path / "h.zarr"
    root = zarrdask.open_group(str(path), mode="w", zarr_format=fmt, attributes={"title": "test"})
    if fmt == 2:
        root.attrs["title"] = "test"
    t = root.create_array(
        "temperature", shape=(20, 30), dtype="f4", chunks=(10, 10), attributes={"units": "K"},
        fill_value=float("nan"),
    )
    t[:] = TEMP
    t[0, 0] = np.nan
    sub = root.create_group("sub")
    kwargs = dict(shards=(8, 8)) if fmt == 3 else {}
    s = sub.create_array("counts", shape=(16, 16), dtype="i8", chunks=(4, 4), **kwargs)
    s[:8] = 1  # half the chunks stored
    return path, fmt


def test_help_lists_every_command():
    r = run("--help")
    assert r.exit_code == 0
    for command in COMMANDS:
        assert f"  {command.name} " in r.stdout
    assert run("--version").stdout.strip() == f"zarrdask, version {zarrdask.__version__}"


# -- info ------------------------------------------------------------------------------
def test_info_array(hierarchy):
    path, fmt = hierarchy
    r = run("info", path / "temperature")
    assert r.exit_code == 0, r.output
    lines = dict(line.split(" : ", 1) for line in r.stdout.splitlines())
    lines = {k.strip(): v for k, v in lines.items()}
    assert lines["Type"] == "array" and lines["Zarr format"] == str(fmt)
    assert lines["Shape"] == "(20, 30)" and lines["Data type"] == "float32"
    assert lines["Chunk shape"] == "(10, 10)" and lines["Shard shape"] == "None"
    assert lines["Fill value"] == '"NaN"'
    assert lines["Chunks initialized"] == "6 of 6"
    assert lines["Attributes"] == "1 (units)"
    assert "zstd" in lines["Compressors"]

    doc = json.loads(run("info", path, "--node", "temperature", "--json").stdout)
    assert doc["node_type"] == "array" and doc["path"] == "/temperature"
    assert doc["shape"] == [20, 30] and doc["chunks"] == [10, 10] and doc["shards"] is None
    assert doc["fill_value"] == "NaN" and doc["attributes"] == {"units": "K"}
    assert doc["nchunks"] == doc["nchunks_initialized"] == 6
    assert doc["nbytes"] == 2400 and 0 < doc["nbytes_stored"]
    assert doc["compression_ratio"] == pytest.approx(2400 / doc["nbytes_stored"], rel=1e-2)
    if fmt == 2:
        assert doc["serializer"] is None and doc["compressors"][0]["id"] == "zstd"
    else:
        assert doc["serializer"]["name"] == "bytes" and doc["compressors"][0]["name"] == "zstd"


def test_info_sharded_array(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "s.zarr"), shape=(16, 16), dtype="i8", chunks=(4, 4), shards=(8, 8))
    a[:8] = 1
    doc = json.loads(run("info", tmp_path / "s.zarr", "--json").stdout)
    assert doc["chunks"] == [4, 4] and doc["shards"] == [8, 8]
    assert (doc["nchunks"], doc["nchunks_initialized"]) == (16, 8)
    assert (doc["nshards"], doc["nshards_initialized"]) == (4, 2)
    assert doc["codecs"][0]["name"] == "sharding_indexed"
    assert doc["serializer"]["name"] == "bytes"  # inside the shards, as zarr-python reports it
    text = run("info", tmp_path / "s.zarr").stdout
    assert "Shards initialized : 2 of 4" in text and "Chunks initialized : 8 of 16" in text


@pytest.mark.parametrize("name", ["bfloat16", "float8_e5m2", "float4_e2m1fn", "int4", "uint2", "complex_bfloat16",
                                  "complex_float16"])
def test_info_names_the_zarr_data_type(tmp_path, name):
    g = zarrdask.open_group(str(tmp_path / "m.zarr"), mode="w")
    a = g.create_array("a", shape=(4,), dtype=name, chunks=(2,))
    # Array.info, the array's repr and the command line show the Zarr name, not a numpy structure
    assert a.info["Data type"] == name and f"dtype={name}>" in repr(a)
    lines = dict(line.split(" : ", 1) for line in run("info", tmp_path / "m.zarr" / "a").stdout.splitlines())
    assert {k.strip(): v for k, v in lines.items()}["Data type"] == name
    assert json.loads(run("info", tmp_path / "m.zarr" / "a", "--json").stdout)["dtype"] == name
    assert run("tree", tmp_path / "m.zarr").stdout.splitlines()[-1] == f"└── a (4,) {name}"
    members = json.loads(run("info", tmp_path / "m.zarr", "--json").stdout)["members"]
    assert [m["dtype"] for m in members] == [name]


def test_info_keeps_numpy_names_for_other_structures(tmp_path):
    s = zarrdask.create_array(str(tmp_path / "s.zarr"), shape=(2,), dtype=[("a", "i4"), ("b", "f8")])
    assert s.info["Data type"] == str(s.dtype)
    assert run("info", tmp_path / "s.zarr", "--json").stdout.count(json.dumps(str(s.dtype))) == 1


def test_info_group(hierarchy):
    path, fmt = hierarchy
    r = run("info", path)
    assert r.exit_code == 0, r.output
    assert "Members     : 1 array, 1 group" in r.stdout
    assert "Type        : group" in r.stdout
    doc = json.loads(run("info", path, "--json").stdout)
    assert doc["node_type"] == "group" and doc["zarr_format"] == fmt
    assert doc["attributes"] == {"title": "test"}
    assert (doc["n_arrays"], doc["n_groups"]) == (1, 1)
    assert [(m["name"], m["node_type"]) for m in doc["members"]] == [("sub", "group"), ("temperature", "array")]
    assert doc["members"][1]["shape"] == [20, 30]


# -- tree and ls -------------------------------------------------------------------------
def test_tree(hierarchy):
    path, _ = hierarchy
    r = run("tree", path)
    assert r.exit_code == 0
    assert r.stdout.splitlines() == [
        "/",
        "├── sub",
        "│   └── counts (16, 16) int64",
        "└── temperature (20, 30) float32",
    ]
    assert run("tree", path, "-L", "1").stdout.splitlines() == ["/", "├── sub", "└── temperature (20, 30) float32"]
    doc = json.loads(run("tree", path, "--json").stdout)
    assert doc["node_type"] == "group"
    sub = doc["members"][0]
    assert (sub["name"], sub["members"][0]["name"], sub["members"][0]["shape"]) == ("sub", "counts", [16, 16])
    assert run("tree", path, "-n", "temperature").stdout.strip() == "temperature (20, 30) float32"
    assert run("tree", path / "temperature").stdout.strip() == "/ (20, 30) float32"


def test_ls(hierarchy):
    path, _ = hierarchy
    assert run("ls", path).stdout.splitlines() == ["sub", "temperature"]
    assert run("ls", path, "-r").stdout.splitlines() == ["sub", "sub/counts", "temperature"]
    long = run("ls", path, "--long", "--recursive").stdout.splitlines()
    assert [line.split() for line in long] == [
        ["group", "-", "-", "sub"],
        ["array", "(16,", "16)", "int64", "sub/counts"],
        ["array", "(20,", "30)", "float32", "temperature"],
    ]
    doc = json.loads(run("ls", path, "--json", "-r").stdout)
    assert [(m["name"], m["node_type"]) for m in doc] == [
        ("sub", "group"), ("sub/counts", "array"), ("temperature", "array"),
    ]
    assert doc[1]["dtype"] == "int64"


def test_ls_zip_file_with_node(tmp_path):
    g = zarrdask.open_group(str(tmp_path / "z.zip"), mode="w")
    g.create_group("inner").create_array("a", shape=(3,), dtype="i2", chunks=(3,))[:] = [1, 2, 3]
    g.store.close()
    assert run("ls", tmp_path / "z.zip", "--node", "inner").stdout.splitlines() == ["a"]
    assert run("cat", tmp_path / "z.zip", "-n", "inner/a").stdout.strip() == "[1 2 3]"


# -- cat -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "selection,expected",
    [
        ("", lambda a: a),
        ("0:10,5", lambda a: a[0:10, 5]),
        ("3", lambda a: a[3]),
        ("-1, ::-7", lambda a: a[-1, ::-7]),
        ("..., 2", lambda a: a[..., 2]),
        ("[1, 4, -1], 1:3", lambda a: a[[1, 4, -1]][:, 1:3]),
        ("2,3", lambda a: a[2, 3]),
    ],
)
def test_cat_json(hierarchy, selection, expected):
    path, _ = hierarchy
    r = run("cat", path, "-n", "temperature", "--slice", selection, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    want = expected(_with_nan())
    got = np.array(doc["values"], dtype=object)
    got = np.where(got == "NaN", np.nan, got).astype("f4")
    np.testing.assert_array_equal(got, np.asarray(want))
    assert doc["shape"] == list(np.shape(want)) and doc["dtype"] == "float32"
    assert doc["selection"] == selection and doc["path"] == "/temperature"


def _with_nan() -> np.ndarray:
    a = TEMP.copy()
    a[0, 0] = np.nan
    return a


def test_cat_text(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "i.zarr"), shape=(4, 5), dtype="i4", chunks=(2, 2))
    a[:] = np.arange(20).reshape(4, 5)
    assert run("cat", tmp_path / "i.zarr", "-s", "1:3, 0:2").stdout == "[[ 5  6]\n [10 11]]\n"
    assert run("cat", tmp_path / "i.zarr", "-s", "3,4").stdout == "19\n"
    big = zarrdask.create_array(str(tmp_path / "b.zarr"), shape=(3000,), dtype="u1", chunks=(1000,))
    big[:] = 7
    out = run("cat", tmp_path / "b.zarr").stdout
    assert "..." not in out and out.count("7") == 3000  # never summarised


def test_cat_limit(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "i.zarr"), shape=(100, 100), dtype="i4", chunks=(50, 50))
    r = run("cat", tmp_path / "i.zarr", "--limit", "99", "-s", "0:10, 0:10")
    assert r.exit_code == 2 and "holds 100 values, more than --limit 99" in r.stderr
    assert run("cat", tmp_path / "i.zarr", "--limit", "100", "-s", "0:10, 0:10").exit_code == 0
    assert run("cat", tmp_path / "i.zarr", "--limit", "0").exit_code == 0
    assert a.shape == (100, 100)


def test_cat_json_types(tmp_path):
    c = zarrdask.create_array(str(tmp_path / "c.zarr"), shape=(2,), dtype="c8", chunks=(2,))
    c[:] = [1 + 2j, np.inf]
    assert json.loads(run("cat", tmp_path / "c.zarr", "--json").stdout)["values"] == [[1.0, 2.0], ["Infinity", 0.0]]
    t = zarrdask.create_array(str(tmp_path / "t.zarr"), shape=(2,), dtype="M8[s]", chunks=(2,))
    t[:] = np.array(["2024-01-02T03:04:05", "NaT"], dtype="M8[s]")
    assert json.loads(run("cat", tmp_path / "t.zarr", "--json").stdout)["values"][0] == "2024-01-02T03:04:05"


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,code,message",
    [
        (["info", "{tmp}/missing.zarr"], 2, "zarrdask: error: FileNotFoundError: no such file or directory"),
        (["ls", "{tmp}/empty"], 2, "zarrdask: error: NodeNotFoundError: no Zarr array or group at"),
        (["tree", "{h}", "--node", "nope"], 2, "zarrdask: error: NodeNotFoundError: no Zarr array or group at"),
        (["cat", "{h}/temperature", "-s", "50"], 2, "zarrdask: error: BoundsCheckError: index 50 is out of bounds"),
        (["cat", "{h}/temperature", "-s", "0,0,0"], 2, "zarrdask: error: SelectionError: too many indices"),
        (["info", "{h}/broken"], 3, "zarrdask: error: MetadataError: "),
        (["info", "{h}", "-S", "anon=true"], 2, "storage options only apply to URLs"),
        (["cat", "{h}/temperature", "-s", "1:2:3:4"], 2, "has more than two ':'"),
        (["cat", "{h}/temperature", "-s", "__import__('os')"], 2, "is not an integer"),
        (["cat", "{h}"], 2, "is a group; cat prints arrays"),
        (["ls", "{h}", "-S", "novalue"], 2, "expected KEY=VALUE"),
    ],
)
def test_errors_are_one_line(tmp_path, hierarchy, args, code, message):
    path, fmt = hierarchy
    (tmp_path / "empty").mkdir()
    broken = path / "broken"
    broken.mkdir()
    (broken / ("zarr.json" if fmt == 3 else ".zarray")).write_text('{"zarr_format": 3, "node_type": "array"}')
    args = [a.format(tmp=tmp_path, h=path) for a in args]
    r = run(*args)
    assert r.exit_code == code, r.output
    assert message in r.stderr
    assert r.stdout == ""
    assert no_traceback(r.output)
    if r.stderr.startswith("zarrdask: error:"):
        assert r.stderr.count("\n") == 1


def test_debug_shows_the_exception(tmp_path):
    r = run("--debug", "info", tmp_path / "missing.zarr")
    assert isinstance(r.exception, FileNotFoundError)


def test_storage_options_parsing():
    assert parse_storage_options(()) is None
    assert parse_storage_options(("anon=true", "n=3", "region=eu-west-1", 'kw={"a": [1]}', "s=")) == {
        "anon": True, "n": 3, "region": "eu-west-1", "kw": {"a": [1]}, "s": "",
    }


def test_jsonable():
    assert jsonable({"a": (np.float32(np.nan), np.int64(3), b"\x00\x01", -np.inf)}) == {
        "a": ["NaN", 3, "AAE=", "-Infinity"]
    }


# -- URLs -----------------------------------------------------------------------------------------
def test_read_only_commands_on_a_url(http_server):
    path = http_server.root / "cli-commands.zarr"
    a = zarrdask.create_array(str(path), shape=(20, 30), dtype="f4", chunks=(10, 10), shards=(10, 30))
    a[:] = TEMP
    url = f"{http_server.url}/cli-commands.zarr"

    doc = json.loads(run("info", url, "--json", "-S", "block_size=0").stdout)
    assert doc["shape"] == [20, 30] and doc["shards"] == [10, 30]
    assert doc["nbytes_stored"] is None and doc["nchunks_initialized"] is None  # HTTP cannot list
    assert "No. bytes stored   : n/a (the store cannot list its keys)" in run("info", url).stdout

    doc = json.loads(run("cat", url, "-s", "1:3, 4", "--json").stdout)
    np.testing.assert_array_equal(np.array(doc["values"], dtype="f4"), TEMP[1:3, 4])
    assert run("tree", url).stdout.strip() == "/ (20, 30) float32"

    r = run("verify", url, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["keys_checked"] == 2

    r = run("info", f"{http_server.url}/no-such.zarr")
    assert r.exit_code == 2 and "NodeNotFoundError" in r.stderr and no_traceback(r.output)


def test_group_listing_on_a_url_is_a_clear_error(http_server):
    root = zarrdask.open_group(str(http_server.root / "cli-group.zarr"), mode="w")
    root.create_array("a", shape=(2,), dtype="i1", chunks=(2,))
    r = run("ls", f"{http_server.url}/cli-group.zarr")
    assert r.exit_code == 3
    assert r.stderr.startswith("zarrdask: error: StoreError: ") and "cannot list" in r.stderr
    assert r.stderr.count("\n") == 1


def test_cli_object_is_a_click_group():
    import click

    assert isinstance(cli, click.Group)
    assert set(cli.list_commands(click.Context(cli))) == {c.name for c in COMMANDS}
    assert [(c.name, c.get_short_help_str(limit=200)) for c in COMMANDS] == [
        (name, short_help) for name, (_, short_help) in LAZY_COMMANDS.items()
    ]


def test_consolidated_group_on_a_url(http_server):
    path = http_server.root / "cli-consolidated.zarr"
    root = zarrdask.open_group(str(path), mode="w")
    root.create_array("a", shape=(4,), dtype="i4", chunks=(2,))[:] = 1
    root.create_group("s").create_array("b", shape=(4,), dtype="i4", chunks=(2,), compressors=[{"name": "crc32c"}])[:] = 2
    zarrdask.consolidate_metadata(str(path))
    url = f"{http_server.url}/cli-consolidated.zarr"
    assert run("ls", "-r", url).stdout.splitlines() == ["a", "s", "s/b"]
    assert run("tree", url).stdout.splitlines()[-1] == "    └── b (4,) int32"
    r = run("verify", url, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["keys_checked"] == 4
    (path / "s" / "b" / "c" / "1").write_bytes(b"\x00" * 12)
    r = run("verify", url)
    assert r.exit_code == 1 and r.stdout.startswith("s/b/c/1: ChecksumError")


def test_info_of_a_rectilinear_array(tmp_path):
    import json as _json

    import zarrdask

    months = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    zarrdask.create_array(str(tmp_path / "m.zarr"), shape=(365, 4), chunks=(months, 4), dtype="f4")
    result = run("info", str(tmp_path / "m.zarr"))
    assert result.exit_code == 0, result.output
    assert "Chunk grid         : rectilinear" in result.stdout
    assert "Chunk shape        : ((31, 28, 31, 30, ... 31; 12 chunks), (4,))" in result.stdout
    result = run("info", "--json", str(tmp_path / "m.zarr"))
    doc = _json.loads(result.stdout)
    assert doc["chunk_grid"] == "rectilinear" and doc["chunks"] == [list(months), [4]]
    result = run("tree", str(tmp_path / "m.zarr"))
    assert result.exit_code == 0 and "(365, 4) float32" in result.stdout


def test_info_speaks_as_array_info(tmp_path):
    """`zarrdask info` and `Array.info` use one vocabulary: every label the command
    line prints for what Array.info also shows is Array.info's label."""
    a = zarrdask.create_array(str(tmp_path / "v.zarr"), shape=(16, 16), dtype="f4", chunks=(4, 4), shards=(8, 8))
    a[:8] = 1
    python_labels = set(a.info.items)
    text = run("info", tmp_path / "v.zarr").stdout
    cli_labels = {line.split(" : ", 1)[0].strip() for line in text.splitlines() if " : " in line}
    shared = {"Type", "Zarr format", "Data type", "Shape", "Chunk shape", "Shard shape", "Order", "Fill value",
              "Filters", "Serializer", "Compressors", "No. bytes", "No. bytes stored", "Storage ratio",
              "Chunks initialized", "Read-only"}
    assert shared <= python_labels and shared <= cli_labels
    assert not any("initialised" in label or label in ("Bytes", "Compression ratio") for label in cli_labels)
    assert a.info["Chunks initialized"] == "8 of 16" and "Chunks initialized : 8 of 16" in text
