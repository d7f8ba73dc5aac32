"""Codec registry: built-ins, register_codec, entry points, JSON and numcodecs objects."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import numcodecs
import pytest

from zarrdask.codecs import registry
from zarrdask.codecs.abc import BytesBytesCodec, Codec
from zarrdask.codecs.blosc_codec import BloscCodec
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.crc32c_codec import Crc32cCodec
from zarrdask.codecs.gzip_codec import GzipCodec
from zarrdask.codecs.numcodecs_v3 import Delta, NumcodecsBytesBytesCodec, NumcodecsKindless
from zarrdask.codecs.transpose import TransposeCodec
from zarrdask.codecs.zstd_codec import ZstdCodec
from zarrdask.errors import CodecError, MetadataError, UnknownCodecError


try:  # numcodecs >= 0.16
    numcodecs.Blosc(typesize=2)
    BLOSC_HAS_TYPESIZE = True
except TypeError:
    BLOSC_HAS_TYPESIZE = False


class EntryPointCodec(BytesBytesCodec):
    """A stand-in third-party codec, loaded through an entry point."""

    name = "test.entry-point"

    def encode(self, data, spec):
        return bytes(data)

    def decode(self, data, spec, key="", out=None):
        return bytes(data)


class Other(BytesBytesCodec):
    name = "gzip"


@pytest.fixture
def clean_registry(monkeypatch):
    """Isolate the registry's mutable state for one test."""
    monkeypatch.setattr(registry, "_registered", {})
    monkeypatch.setattr(registry, "_loaded", {})
    monkeypatch.setattr(registry, "_entry_points", None)
    return registry


def _fake_entry_points(*eps):
    def entry_points(*, group):
        assert group == "zarrdask.codecs"
        return list(eps)

    return entry_points


@pytest.mark.parametrize("name", sorted(registry.BUILTIN_CODECS))
def test_every_builtin_loads(name):
    cls = registry.get_codec_class(name)
    assert issubclass(cls, Codec) and cls.name == name


def test_builtin_classes():
    assert registry.get_codec_class("bytes") is BytesCodec
    assert registry.get_codec_class("transpose") is TransposeCodec
    assert registry.get_codec_class("gzip") is GzipCodec
    assert registry.get_codec_class("zstd") is ZstdCodec
    assert registry.get_codec_class("blosc") is BloscCodec
    assert registry.get_codec_class("crc32c") is Crc32cCodec


def test_import_registers_and_imports_nothing():
    code = (
        "import sys, zarrdask.codecs.registry as r\n"
        "assert not r._registered and not r._loaded and r._entry_points is None, (r._registered, r._loaded)\n"
        "print(sorted(m for m in sys.modules if m.startswith('zarrdask.codecs.') and m.endswith('_codec')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_unknown_name_lists_known(clean_registry):
    with pytest.raises(UnknownCodecError) as e:
        registry.get_codec_class("no-such-codec")
    assert "no-such-codec" in str(e.value) and "gzip" in str(e.value) and "numcodecs.zlib" in str(e.value)
    with pytest.raises(UnknownCodecError, match=r"^a/zarr.json: unknown codec 'no-such-codec'"):
        registry.codec_from_json({"name": "no-such-codec"}, key="a/zarr.json")


def test_register_codec_overrides(clean_registry):
    registry.register_codec("gzip", Other)
    assert registry.get_codec_class("gzip") is Other
    registry.register_codec("my.codec", EntryPointCodec)
    assert isinstance(registry.codec_from_json("my.codec"), EntryPointCodec)
    with pytest.raises(TypeError):
        registry.register_codec("x", dict)  # type: ignore[arg-type]


def test_entry_point(clean_registry, monkeypatch):
    ep = metadata.EntryPoint(
        name="test.entry-point", value=f"{__name__}:EntryPointCodec", group="zarrdask.codecs"
    )
    monkeypatch.setattr(registry.metadata, "entry_points", _fake_entry_points(ep))
    assert "test.entry-point" in registry.known_codec_names()
    assert registry.get_codec_class("test.entry-point") is EntryPointCodec
    codec = registry.codec_from_json({"name": "test.entry-point"})
    assert isinstance(codec, EntryPointCodec)


def test_entry_points_do_not_shadow_builtins(clean_registry, monkeypatch):
    ep = metadata.EntryPoint(name="gzip", value=f"{__name__}:Other", group="zarrdask.codecs")
    monkeypatch.setattr(registry.metadata, "entry_points", _fake_entry_points(ep))
    assert registry.get_codec_class("gzip") is GzipCodec


def test_entry_points_are_scanned_once_and_only_when_needed(clean_registry, monkeypatch):
    calls = []

    def entry_points(*, group):
        calls.append(group)
        return []

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
    registry.get_codec_class("gzip")
    assert calls == []  # built-ins never need the scan
    for _ in range(3):
        with pytest.raises(UnknownCodecError):
            registry.get_codec_class("missing")
    assert calls == ["zarrdask.codecs"]


@pytest.mark.parametrize(
    "value, match",
    [("no_such_module_xyz:Codec", "failed to load"), ("builtins:dict", "not a zarrdask Codec")],
)
def test_broken_entry_point(clean_registry, monkeypatch, value, match):
    ep = metadata.EntryPoint(name="broken", value=value, group="zarrdask.codecs")
    monkeypatch.setattr(registry.metadata, "entry_points", _fake_entry_points(ep))
    with pytest.raises(UnknownCodecError, match=match):
        registry.get_codec_class("broken")


# -- codec_from_json -----------------------------------------------------------------
@pytest.mark.parametrize(
    "doc, expected",
    [
        ({"name": "gzip", "configuration": {"level": 1}}, GzipCodec(1)),
        ({"name": "bytes", "configuration": {"endian": "big"}}, BytesCodec("big")),
        ({"name": "bytes"}, BytesCodec(None)),
        ("bytes", BytesCodec(None)),
        ("crc32c", Crc32cCodec()),
        ({"name": "crc32c", "configuration": {}}, Crc32cCodec()),
        ({"name": "crc32c", "must_understand": True}, Crc32cCodec()),
        ({"name": "zstd", "configuration": {"level": 1, "checksum": True}}, ZstdCodec(1, True)),
        ({"name": "transpose", "configuration": {"order": [1, 0]}}, TransposeCodec((1, 0))),
        (
            {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}},
            BloscCodec("lz4", 1, "shuffle", 4, 0),
        ),
        ({"name": "numcodecs.zlib", "configuration": {"level": 3}}, NumcodecsKindless("zlib", level=3)),
        ({"name": "numcodecs.delta", "configuration": {"dtype": "<f8"}}, Delta(dtype="<f8")),
    ],
    ids=repr,
)
def test_codec_from_json(doc, expected):
    codec = registry.codec_from_json(doc)
    assert codec == expected
    if isinstance(doc, dict) and "must_understand" not in doc and doc.get("configuration") != {}:
        assert codec.to_json() == doc


def test_codec_objects_pass_through():
    codec = GzipCodec(3)
    assert registry.codec_from_json(codec) is codec


@pytest.mark.parametrize(
    "doc, error, match",
    [
        (42, MetadataError, "object or a name"),
        ({"configuration": {}}, MetadataError, "string 'name'"),
        ({"name": "gzip", "configuration": [1]}, MetadataError, "'configuration' must be an object"),
        ({"name": "gzip", "level": 1}, MetadataError, r"unknown field\(s\) \['level'\]"),
        ({"name": "gzip", "configuration": {"level": 42}}, CodecError, "codec 'gzip'.*level"),
        ({"name": "gzip", "configuration": {"lvl": 1}}, CodecError, "codec 'gzip'.*lvl"),
        ({"name": "transpose"}, CodecError, "codec 'transpose'.*order"),
        ({"name": "numcodecs.zlib", "configuration": {"level": 1, "x": 2}}, CodecError, "numcodecs.zlib"),
    ],
)
def test_codec_from_json_errors_name_key_and_codec(doc, error, match):
    with pytest.raises(error, match=match) as e:
        registry.codec_from_json(doc, key="group/array/zarr.json")
    assert str(e.value).startswith("group/array/zarr.json: ")


def test_third_party_from_config_type_errors_become_codec_errors(clean_registry):
    registry.register_codec("my.codec", EntryPointCodec)
    with pytest.raises(CodecError, match="zarr.json: codec 'my.codec'"):
        registry.codec_from_json({"name": "my.codec", "configuration": {"unexpected": 1}})


# -- numcodecs objects ---------------------------------------------------------------
@pytest.mark.parametrize(
    "numcodec, expected",
    [
        (numcodecs.Zstd(level=3, checksum=True), ZstdCodec(3, True)),
        (numcodecs.Zstd(), ZstdCodec(0, False)),
        (numcodecs.GZip(level=7), GzipCodec(7)),
        (numcodecs.Blosc(cname="lz4", clevel=2, shuffle=numcodecs.Blosc.BITSHUFFLE), BloscCodec("lz4", 2, "bitshuffle")),
        (numcodecs.Blosc(shuffle=numcodecs.Blosc.NOSHUFFLE, blocksize=256), BloscCodec("lz4", 5, "noshuffle", blocksize=256)),
        (numcodecs.Blosc(shuffle=numcodecs.Blosc.AUTOSHUFFLE), BloscCodec("lz4", 5, None)),
        *([(numcodecs.Blosc(typesize=2), BloscCodec("lz4", 5, "shuffle", typesize=2))] if BLOSC_HAS_TYPESIZE else []),
        *([(numcodecs.CRC32C(), Crc32cCodec())] if hasattr(numcodecs, "CRC32C") else []),  # numcodecs >= 0.14
        (numcodecs.Zlib(level=4), NumcodecsKindless("zlib", level=4)),
        (numcodecs.Delta(dtype="<i4"), Delta(dtype="<i4", astype="<i4")),
    ],
    ids=repr,
)
def test_numcodecs_objects(numcodec, expected):
    assert registry.codec_from_json(numcodec) == expected


@pytest.mark.skipif(not hasattr(numcodecs, "CRC32C"), reason="numcodecs < 0.14 has no crc32c")
def test_numcodecs_crc32c_at_the_start_stays_a_numcodecs_codec():
    codec = registry.codec_from_json(numcodecs.CRC32C(location="start"))
    assert codec.name == "numcodecs.crc32c"


def test_the_expected_kind_decides_a_numcodecs_codec():
    assert registry.codec_from_json(numcodecs.Zlib(level=4), kind="bytes_bytes") == NumcodecsBytesBytesCodec("zlib", level=4)
    # where a compressor goes, zstd / gzip / blosc / crc32c become the v3 core codecs
    assert registry.codec_from_json(numcodecs.Zstd(level=3), kind="bytes_bytes") == ZstdCodec(3, False)
    # elsewhere they stay numcodecs codecs
    assert registry.codec_from_json(numcodecs.Zstd(level=3), kind="array_bytes").name == "numcodecs.zstd"
    categorize = registry.codec_from_json(numcodecs.Categorize(["a"], dtype="U1"), kind="array_array")
    assert categorize.kind == "array_array" and categorize.to_json()["name"] == "numcodecs.categorize"


def test_every_numcodecs_id_is_a_codec_name():
    from zarrdask.codecs.numcodecs_registry import numcodecs_ids

    names = registry.known_codec_names()
    assert all(f"numcodecs.{i}" in names for i in numcodecs_ids())
    assert registry.get_codec_class("numcodecs.zlib") is NumcodecsKindless
    assert registry.get_codec_class("numcodecs.delta") is Delta


def test_a_numcodecs_name_numcodecs_does_not_know():
    with pytest.raises(UnknownCodecError, match=r"a/zarr.json: codec 'numcodecs.no-such'.*has no codec 'no-such'"):
        registry.codec_from_json({"name": "numcodecs.no-such", "configuration": {}}, key="a/zarr.json")
    with pytest.raises(UnknownCodecError, match="'numcodecs.codecs' entry-point group"):
        registry.get_codec_class("numcodecs.no-such")


def test_concurrent_first_lookups(clean_registry):
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(registry.BUILTIN_CODECS) * 4
    with ThreadPoolExecutor(8) as pool:
        classes = list(pool.map(registry.get_codec_class, names))
    assert all(cls.name == name for cls, name in zip(classes, names))


@pytest.mark.skipif("numcodecs.zfpy" not in registry.known_codec_names(), reason="numcodecs without zfpy")
def test_docstring_numcodecs_example():
    from zarrdask.codecs.numcodecs_v3 import NumcodecsArrayBytesCodec

    codec = registry.codec_from_json(
        {"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}}, kind="array_bytes"
    )
    assert type(codec) is NumcodecsArrayBytesCodec and codec.name == "numcodecs.zfpy"
