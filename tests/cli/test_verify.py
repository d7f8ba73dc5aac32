"""``zarrdask verify`` and the checks behind it (zarrdask.core.verify, zarrdask.dask.verify):
every corrupt chunk, shard index and inner chunk is reported, for v2 and v3, with
and without crc32c."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numcodecs.registry import codec_registry

import zarrdask
from zarrdask.core.verify import Problem, verify_array, verify_hierarchy
from zarrdask.dask.verify import verify as dask_verify

from ._util import flip, no_traceback, run, shard_entries

DATA = np.arange(32 * 32, dtype="u2").reshape(32, 32)

ZSTD = {"name": "zstd", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}

# (id, create_array keywords, byte to flip in chunk c/1/0 (or 1.0), error expected)
PLAIN = [
    ("v2-zstd", dict(zarr_format=2), 0, "CorruptChunkError"),  # zstd magic number
    ("v2-crc32c", dict(zarr_format=2, compressors={"id": "crc32c"}), 20, "ChecksumError"),
    ("v2-blosc", dict(zarr_format=2, compressors={"id": "blosc", "cname": "lz4"}), 0, "CorruptChunkError"),
    ("v3-zstd", dict(), 0, "CorruptChunkError"),
    ("v3-zstd-crc32c", dict(compressors=[ZSTD, CRC]), 12, "ChecksumError"),
    ("v3-raw-crc32c", dict(compressors=[CRC]), 20, "ChecksumError"),
]


def _plain(tmp_path, kwargs):
    path = tmp_path / "a.zarr"
    a = zarrdask.create_array(str(path), shape=(32, 32), dtype="u2", chunks=(8, 8), **kwargs)
    a[:] = DATA
    key = "1.0" if a.zarr_format == 2 else "c/1/0"
    return path, key


#: numcodecs has a v2 crc32c codec from 0.14
_V2_CRC32C = pytest.mark.skipif("crc32c" not in codec_registry, reason="numcodecs < 0.14 has no crc32c codec")


@pytest.mark.parametrize("kwargs,pos,error", [
    pytest.param(*p[1:], id=p[0], marks=[_V2_CRC32C] if p[0] == "v2-crc32c" else []) for p in PLAIN
])
def test_plain_chunk_flipped_byte(tmp_path, kwargs, pos, error):
    path, key = _plain(tmp_path, kwargs)
    assert verify_array(zarrdask.open_array(str(path), mode="r")) == []
    flip(path / key, pos)
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [(p.key, p.error, p.inner) for p in problems] == [(key, error, None)]

    r = run("verify", path, "--no-progress")
    assert r.exit_code == 1, r.output
    assert f"{key}: {error}" in r.stdout
    assert "FAILED: 1 problem in 16 stored chunks" in r.stdout

    r = run("verify", path, "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["keys_checked"] == 16 and doc["arrays"] == ["/"]
    assert [(p["key"], p["error"], p["inner"]) for p in doc["problems"]] == [(key, error, None)]


def test_every_corrupt_key_is_reported(tmp_path):
    path, _ = _plain(tmp_path, dict(compressors=[ZSTD, CRC]))
    bad = ["c/0/0", "c/2/3", "c/3/3"]
    for k in bad:
        flip(path / k, 5)
    (path / "c" / "1" / "1").write_bytes(b"")  # empty: too short for the checksum
    r = run("verify", path, "--json", "--batch-mib", "0.001")  # one task per chunk
    found = {p["key"]: p["error"] for p in json.loads(r.stdout)["problems"]}
    assert found == {**{k: "ChecksumError" for k in bad}, "c/1/1": "CorruptChunkError"}
    assert r.exit_code == 1


def test_clean_array_and_group_pass(tmp_path):
    root = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w")
    root.create_array("a", shape=(20,), dtype="i4", chunks=(5,))[:] = np.arange(20)
    root.create_group("sub").create_array("b", shape=(8, 8), dtype="f8", chunks=(2, 2), shards=(4, 4))[:] = 1.5
    root.create_array("empty", shape=(10,), dtype="i4", chunks=(5,))  # nothing stored: nothing to check
    r = run("verify", tmp_path / "g.zarr")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "OK: checked 8 stored chunks or shards in 3 arrays"
    doc = json.loads(run("verify", tmp_path / "g.zarr", "--json").stdout)
    assert doc == {"ok": True, "arrays": ["/a", "/empty", "/sub/b"], "keys_checked": 8, "problems": []}


# -- shards -------------------------------------------------------------------------------
def _sharded(tmp_path, inner_codecs, index_codecs=None, name="s.zarr", compressors=None):
    path = tmp_path / name
    serializer = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [4, 4],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, *inner_codecs],
            "index_codecs": index_codecs
            or [{"name": "bytes", "configuration": {"endian": "little"}}, CRC],
            "index_location": "end",
        },
    }
    a = zarrdask.create_array(
        str(path), shape=(32, 32), dtype="u2", chunks=(16, 16), serializer=serializer,
        compressors=compressors,
    )
    a[:] = DATA
    return path


@pytest.mark.parametrize(
    "inner,pos,error",
    [([ZSTD], 0, "CorruptChunkError"), ([CRC], 10, "ChecksumError"), ([ZSTD, CRC], 9, "ChecksumError")],
    ids=["zstd", "crc32c", "zstd-crc32c"],
)
def test_flipped_byte_in_an_inner_chunk(tmp_path, inner, pos, error):
    path = _sharded(tmp_path, inner)
    shard = path / "c" / "1" / "0"
    entries = shard_entries(shard.read_bytes(), 16)
    # inner chunk (2, 1) of the shard is entry 2 * 4 + 1
    off = int(entries[9, 0])
    flip(shard, off + pos)
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [(p.key, p.error, p.inner) for p in problems] == [("c/1/0", error, ((2, 1),))]
    assert str(problems[0]).startswith(f"c/1/0 inner chunk (2, 1): {error}: ")

    r = run("verify", path)
    assert r.exit_code == 1
    assert r.stdout.splitlines()[0].startswith(f"c/1/0 inner chunk (2, 1): {error}")
    doc = json.loads(run("verify", path, "--json").stdout)
    assert [(p["key"], p["inner"]) for p in doc["problems"]] == [("c/1/0", [[2, 1]])]


def test_several_inner_chunks_of_one_shard(tmp_path):
    path = _sharded(tmp_path, [CRC])
    shard = path / "c" / "0" / "1"
    entries = shard_entries(shard.read_bytes(), 16)
    for i in (0, 5, 15):
        flip(shard, int(entries[i, 0]) + 3)
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [p.inner for p in problems] == [((0, 0),), ((1, 1),), ((3, 3),)]
    assert {p.key for p in problems} == {"c/0/1"}


def test_shard_index_checksum(tmp_path):
    path = _sharded(tmp_path, [ZSTD])
    flip(path / "c" / "1" / "1", -10)  # inside the index, before its crc32c
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [(p.key, p.error, p.inner) for p in problems] == [("c/1/1", "ChecksumError", None)]
    assert problems[0].message.startswith("shard index: ")


def test_shard_compressed_as_a_whole(tmp_path):
    # bytes→bytes codecs after sharding_indexed apply to the whole shard
    path = _sharded(tmp_path, [CRC], compressors=[ZSTD])
    flip(path / "c" / "0" / "1", 0)
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [(p.key, p.error, p.inner) for p in problems] == [("c/0/1", "CorruptChunkError", None)]


def test_truncated_shard(tmp_path):
    path = _sharded(tmp_path, [ZSTD])
    (path / "c" / "0" / "0").write_bytes(b"\x00" * 10)
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [(p.key, p.error) for p in problems] == [("c/0/0", "CorruptChunkError")]
    assert "truncated" in problems[0].message


def test_index_entry_outside_the_shard(tmp_path):
    # no crc32c on the index: a bad entry is found by checking it against the shard's size
    path = _sharded(tmp_path, [ZSTD], index_codecs=[{"name": "bytes", "configuration": {"endian": "little"}}])
    shard = path / "c" / "0" / "0"
    data = bytearray(shard.read_bytes())
    entries = shard_entries(bytes(data), 16, crc32c=False).copy()
    entries[6, 0] = len(data) + 100
    data[-16 * 16 :] = entries.astype("<u8").tobytes()
    shard.write_bytes(bytes(data))
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [(p.key, p.error, p.inner) for p in problems] == [("c/0/0", "CorruptChunkError", ((1, 2),))]
    assert "points outside" in problems[0].message


def test_nested_shards(tmp_path):
    path = tmp_path / "n.zarr"
    inner = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, CRC],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, CRC],
        },
    }
    outer = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [8, 8],
            "codecs": [inner],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, CRC],
        },
    }
    a = zarrdask.create_array(str(path), shape=(16, 16), dtype="u2", chunks=(16, 16), serializer=outer, compressors=None)
    a[:] = DATA[:16, :16]
    shard = path / "c" / "0" / "0"
    outer_entries = shard_entries(shard.read_bytes(), 4)
    off, n = (int(x) for x in outer_entries[3])  # outer inner chunk (1, 1)
    nested = shard.read_bytes()[off : off + n]
    inner_entries = shard_entries(nested, 16)
    flip(shard, off + int(inner_entries[1, 0]) + 1)  # its inner chunk (0, 1)
    problems = verify_array(zarrdask.open_array(str(path), mode="r"))
    assert [(p.key, p.error, p.inner) for p in problems] == [("c/0/0", "ChecksumError", ((1, 1), (0, 1)))]
    assert problems[0].where == "c/0/0 inner chunk (1, 1) inner chunk (0, 1)"


def test_group_with_unreadable_member_metadata(tmp_path):
    root = zarrdask.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=2)
    root.create_array("ok", shape=(10,), dtype="i4", chunks=(5,), compressors={"id": "crc32"})[:] = 1
    root.create_array("bad", shape=(10,), dtype="i4", chunks=(5,))[:] = 2
    root.create_array("corrupt", shape=(10,), dtype="i4", chunks=(5,), compressors={"id": "crc32"})[:] = 3
    (tmp_path / "g.zarr" / "bad" / ".zarray").write_text("{not json")
    flip(tmp_path / "g.zarr" / "corrupt" / "1", 2)
    report = verify_hierarchy(zarrdask.open_group(str(tmp_path / "g.zarr"), mode="r"))
    assert report.arrays == ["/corrupt", "/ok"]
    assert [(p.path, p.error) for p in report.problems] == [("/bad", "MetadataError"), ("/corrupt", "ChecksumError")]
    assert report.problems[0].key.startswith("bad/.zarray")

    r = run("verify", tmp_path / "g.zarr")
    assert r.exit_code == 1
    assert "FAILED: 2 problems in 4 stored chunks or shards in 2 arrays" in r.stdout


def test_dask_and_serial_agree(tmp_path):
    path = _sharded(tmp_path, [CRC])
    for k in ("c/0/0", "c/1/1"):
        flip(path / k, 2)
    a = zarrdask.open_array(str(path), mode="r")
    serial = verify_hierarchy(a)
    for kwargs in ({"scheduler": "sync"}, {"scheduler": "threads"}, {"batch_bytes": 1}):
        parallel = dask_verify(a, **kwargs)
        assert parallel.problems == serial.problems
        assert parallel.keys_checked == serial.keys_checked == 4
    assert all(isinstance(p, Problem) for p in serial.problems)


def test_verify_from_a_store_that_cannot_list(http_server):
    path = http_server.root / "verify-http.zarr"
    a = zarrdask.create_array(str(path), shape=(32, 32), dtype="u2", chunks=(8, 8), shards=(16, 16))
    a[:16] = DATA[:16]  # shards c/1/* are never written
    url = f"{http_server.url}/verify-http.zarr"
    r = run("verify", url, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["keys_checked"] == 2
    flip(path / "c" / "0" / "1", 0)  # zstd magic of its first inner chunk
    r = run("verify", url)
    assert r.exit_code == 1
    assert r.stdout.startswith("c/0/1 inner chunk (0, 0): CorruptChunkError")


def test_verify_errors_are_one_line(tmp_path):
    r = run("verify", tmp_path / "missing.zarr")
    assert r.exit_code == 2
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("zarrdask: error: FileNotFoundError")
    assert no_traceback(r.output)
