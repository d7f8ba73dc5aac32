"""Codec registry: a codec name → its class, and codec JSON → codec objects.

Spec: zarr-specs v3 core, "Codecs" / "Extension codecs" and "Extension
definition" (a codec is ``{"name": ..., "configuration": {...}}``, or the bare
name when it needs no configuration; ``must_understand`` may appear).

Where a name is looked up, in order:

1. codecs registered at run time with :func:`register_codec`;
2. the built-in table :data:`BUILTIN_CODECS` of ``"module:ClassName"`` strings,
   imported on first use — importing this module registers nothing and
   imports no codec module;
3. the entry-point group ``zarrdask.codecs`` (name = codec name, value =
   ``"package.module:ClassName"``), scanned once on the first lookup that
   reaches it and each entry loaded only when its name is asked for.

Tested examples::

    codec_from_json({"name": "gzip", "configuration": {"level": 1}})  # GzipCodec(level=1)
    codec_from_json("crc32c")                                         # Crc32cCodec()
    codec_from_json(numcodecs.Blosc(cname="lz4"))                     # BloscCodec(cname="lz4", ...)

A third-party package makes its codec available with::

    [project.entry-points."zarrdask.codecs"]
    "mycompany.mycodec" = "mypackage.codecs:MyCodec"
"""

from __future__ import annotations

import importlib
import threading
from importlib import metadata
from typing import Any, Mapping

from numcodecs.abc import Codec as Numcodec

from ..errors import CodecError, MetadataError, UnknownCodecError
from .abc import Codec

__all__ = [
    "BUILTIN_CODECS",
    "ENTRY_POINT_GROUP",
    "register_codec",
    "get_codec_class",
    "codec_from_json",
    "known_codec_names",
]

ENTRY_POINT_GROUP = "zarrdask.codecs"

_NC = "zarrdask.codecs.numcodecs_v3"

#: built-in codecs: name → "module:ClassName", imported on first lookup
BUILTIN_CODECS: dict[str, str] = {
    # zarr-specs v3 core codecs
    "bytes": "zarrdask.codecs.bytes_codec:BytesCodec",
    "transpose": "zarrdask.codecs.transpose:TransposeCodec",
    "gzip": "zarrdask.codecs.gzip_codec:GzipCodec",
    "blosc": "zarrdask.codecs.blosc_codec:BloscCodec",
    "crc32c": "zarrdask.codecs.crc32c_codec:Crc32cCodec",
    "sharding_indexed": "zarrdask.codecs.sharding.codec:ShardingCodec",
    # zarr-extensions codecs
    "zstd": "zarrdask.codecs.zstd_codec:ZstdCodec",
    "vlen-utf8": "zarrdask.codecs.vlen:VlenUtf8Codec",
    "vlen-bytes": "zarrdask.codecs.vlen:VlenBytesCodec",
    # draft ZEP 7 layout (no registered name yet), opt-in
    "zarrdask.vlen-offsets": "zarrdask.codecs.vlen_offsets:VlenOffsetsCodec",
    # numcodecs codecs as zarr-python 3 writes them
    "numcodecs.delta": f"{_NC}:Delta",
    "numcodecs.fixedscaleoffset": f"{_NC}:FixedScaleOffset",
    "numcodecs.quantize": f"{_NC}:Quantize",
    "numcodecs.bitround": f"{_NC}:BitRound",
    "numcodecs.astype": f"{_NC}:AsType",
    "numcodecs.packbits": f"{_NC}:PackBits",
    "numcodecs.zlib": f"{_NC}:Zlib",
    "numcodecs.bz2": f"{_NC}:BZ2",
    "numcodecs.lzma": f"{_NC}:LZMA",
    "numcodecs.lz4": f"{_NC}:LZ4",
    "numcodecs.gzip": f"{_NC}:GZip",
    "numcodecs.zstd": f"{_NC}:Zstd",
    "numcodecs.blosc": f"{_NC}:Blosc",
    "numcodecs.shuffle": f"{_NC}:Shuffle",
    "numcodecs.crc32": f"{_NC}:CRC32",
    "numcodecs.adler32": f"{_NC}:Adler32",
    "numcodecs.fletcher32": f"{_NC}:Fletcher32",
    "numcodecs.jenkins_lookup3": f"{_NC}:JenkinsLookup3",
    "numcodecs.crc32c": f"{_NC}:CRC32C",
}

_lock = threading.Lock()
_registered: dict[str, type[Codec]] = {}  # register_codec
_loaded: dict[str, type[Codec]] = {}  # built-ins and entry points, once imported
_entry_points: dict[str, metadata.EntryPoint] | None = None


def register_codec(name: str, cls: type[Codec]) -> None:
    """Make ``cls`` the codec for ``name`` (overrides built-ins and entry points)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"a codec name must be a non-empty string, found {name!r}")
    if not (isinstance(cls, type) and issubclass(cls, Codec)):
        raise TypeError(f"codec {name!r}: {cls!r} is not a zarrdask.codecs.abc.Codec subclass")
    with _lock:
        _registered[name] = cls


def _discover_entry_points() -> dict[str, metadata.EntryPoint]:
    global _entry_points
    with _lock:
        if _entry_points is None:
            found: dict[str, metadata.EntryPoint] = {}
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                found.setdefault(ep.name, ep)
            _entry_points = found
        return _entry_points


def _import_target(name: str, target: str) -> type[Codec]:
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise UnknownCodecError(f"codec {name!r}: cannot load {target!r}: {e}") from None
    return obj


def _load_entry_point(name: str, ep: metadata.EntryPoint) -> type[Codec]:
    try:
        cls = ep.load()
    except Exception as e:  # a broken third-party package must not hide the name
        raise UnknownCodecError(f"codec {name!r}: entry point {ep.value!r} failed to load: {e}") from None
    if not (isinstance(cls, type) and issubclass(cls, Codec)):
        raise UnknownCodecError(f"codec {name!r}: entry point {ep.value!r} is not a zarrdask Codec subclass")
    return cls


def known_codec_names() -> list[str]:
    """Every name that can be looked up (registered, built-in, entry points)."""
    entry_points = _discover_entry_points()
    with _lock:
        return sorted({*_registered, *BUILTIN_CODECS, *entry_points})


def get_codec_class(name: str) -> type[Codec]:
    """The codec class for ``name``; :class:`UnknownCodecError` if there is none."""
    with _lock:
        cls = _registered.get(name) or _loaded.get(name)
    if cls is not None:
        return cls
    # import outside the lock: a module being imported by another thread may
    # itself look a codec up
    if name in BUILTIN_CODECS:
        cls = _import_target(name, BUILTIN_CODECS[name])
    else:
        ep = _discover_entry_points().get(name)
        if ep is None:
            raise UnknownCodecError(f"unknown codec {name!r}; known codecs: {', '.join(known_codec_names())}")
        cls = _load_entry_point(name, ep)
    with _lock:
        return _registered.get(name) or _loaded.setdefault(name, cls)


def _from_numcodecs(codec: Numcodec, key: str) -> Codec:
    """A numcodecs object as the matching zarrdask codec."""
    config = dict(codec.get_config())
    codec_id = config.pop("id", getattr(codec, "codec_id", None))
    try:
        if codec_id == "zstd":
            from .zstd_codec import ZstdCodec

            return ZstdCodec(level=config.get("level", 0), checksum=bool(config.get("checksum", False)))
        if codec_id == "gzip":
            from .gzip_codec import GzipCodec

            return GzipCodec(level=config.get("level", 1))
        if codec_id == "blosc":
            from .blosc_codec import BloscCodec

            shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle", -1: None}.get(config.get("shuffle", 1), "?")
            return BloscCodec(
                cname=config.get("cname", "lz4"),
                clevel=config.get("clevel", 5),
                shuffle=shuffle,
                # numcodecs 0.16 keeps typesize out of get_config(), in `_typesize`
                typesize=config.get("typesize", getattr(codec, "typesize", getattr(codec, "_typesize", None))),
                blocksize=config.get("blocksize", 0),
            )
        if codec_id == "crc32c" and getattr(codec, "location", "end") == "end":
            from .crc32c_codec import Crc32cCodec

            return Crc32cCodec()
        from .numcodecs_v3 import from_numcodecs

        return from_numcodecs(codec)
    except UnknownCodecError as e:
        raise UnknownCodecError(f"{key}: {e}") from None
    except CodecError as e:
        raise CodecError(f"{key}: numcodecs codec {codec!r}: {e}") from None


def codec_from_json(doc: Any, *, key: str = "zarr.json") -> Codec:
    """A codec from its JSON form or an object.

    Accepts ``{"name": ..., "configuration": {...}}`` (``configuration`` and
    ``must_understand`` optional), a bare name, a zarrdask :class:`Codec`
    (returned as is) or a numcodecs codec object (``Zstd`` → ``ZstdCodec``,
    ``GZip`` → ``GzipCodec``, ``Blosc`` → ``BloscCodec``, ``CRC32C`` →
    ``Crc32cCodec``, others → their ``numcodecs.<id>`` wrapper), or any object
    with a ``to_dict()`` giving that JSON (zarr-python's codec objects).

    ``key`` names the metadata document in error messages. A malformed codec
    object raises :class:`MetadataError`, an unknown name
    :class:`UnknownCodecError`, a bad configuration :class:`CodecError`.
    """
    if isinstance(doc, Codec):
        return doc
    if isinstance(doc, Numcodec):
        return _from_numcodecs(doc, key)
    if not isinstance(doc, (str, Mapping)) and callable(getattr(doc, "to_dict", None)):
        doc = doc.to_dict()  # a zarr-python codec object: its JSON form
    if isinstance(doc, str):
        name, configuration = doc, {}
    elif isinstance(doc, Mapping):
        name = doc.get("name")
        if not isinstance(name, str):
            raise MetadataError(f"{key}: a codec needs a string 'name', found {doc!r}")
        extra = sorted(set(doc) - {"name", "configuration", "must_understand"})
        if extra:
            raise MetadataError(f"{key}: codec {name!r} has unknown field(s) {extra}")
        configuration = doc.get("configuration", {})
        if configuration is None:
            configuration = {}
        if not isinstance(configuration, Mapping):
            raise MetadataError(f"{key}: codec {name!r}: 'configuration' must be an object, found {configuration!r}")
    else:
        raise MetadataError(f"{key}: a codec must be an object or a name, found {doc!r}")
    try:
        cls = get_codec_class(name)
    except UnknownCodecError as e:
        raise UnknownCodecError(f"{key}: {e}") from None
    try:
        return cls.from_config(dict(configuration))
    except UnknownCodecError as e:
        raise UnknownCodecError(f"{key}: {e}") from None
    except CodecError as e:
        raise CodecError(f"{key}: {e}") from None
    except TypeError as e:  # unexpected / missing keyword arguments of a third-party from_config
        raise CodecError(f"{key}: codec {name!r}: invalid configuration {dict(configuration)}: {e}") from None
