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
   reaches it and each entry loaded only when its name is asked for;
4. ``numcodecs.<id>``: any codec numcodecs can make
   (:mod:`~zarrdask.codecs.numcodecs_v3`; its kind comes from the ``kind``
   argument of :func:`codec_from_json` — the place a codec is given when an
   array is created — or else from its position in the codec list).

Tested examples::

    codec_from_json({"name": "gzip", "configuration": {"level": 1}})  # GzipCodec(level=1)
    codec_from_json("crc32c")                                         # Crc32cCodec()
    codec_from_json(numcodecs.Blosc(cname="lz4"))                     # BloscCodec(cname="lz4", ...)
    codec_from_json({"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}},
                    kind="array_bytes")                               # NumcodecsArrayBytesCodec

A third-party package makes its codec available with::

    [project.entry-points."zarrdask.codecs"]
    "mycompany.mycodec" = "mypackage.codecs:MyCodec"
"""

from __future__ import annotations

import importlib
import threading
from importlib import metadata
from collections.abc import Mapping
from typing import Any

from numcodecs.abc import Codec as Numcodec

from ..errors import CodecError, MetadataError, UnknownCodecError
from .abc import Codec

__all__ = [
    "BUILTIN_CODECS",
    "NUMCODECS_PREFIX",
    "ENTRY_POINT_GROUP",
    "register_codec",
    "get_codec_class",
    "codec_from_json",
    "known_codec_names",
]

ENTRY_POINT_GROUP = "zarrdask.codecs"

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
    "cast_value": "zarrdask.codecs.cast_value:CastValueCodec",
    "scale_offset": "zarrdask.codecs.scale_offset:ScaleOffsetCodec",
    "conditional": "zarrdask.codecs.conditional:ConditionalCodec",
    "n5_default": "zarrdask.codecs.n5_default:N5DefaultCodec",
    "bitround": "zarrdask.codecs.bitround:BitroundCodec",
    "packbits": "zarrdask.codecs.packbits:PackBitsCodec",
    "reshape": "zarrdask.codecs.reshape:ReshapeCodec",
    "zfp": "zarrdask.codecs.zfp:ZfpCodec",
    # draft ZEP 7 layout (no registered name yet), opt-in
    "zarrdask.vlen-offsets": "zarrdask.codecs.vlen_offsets:VlenOffsetsCodec",
}

#: names of numcodecs codecs as zarr-python 3 writes them: ``numcodecs.<id>``
NUMCODECS_PREFIX = "numcodecs."

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
    """Every name that can be looked up (registered, built-in, entry points,
    and ``numcodecs.<id>`` for every codec numcodecs can make)."""
    from .numcodecs_registry import numcodecs_ids

    entry_points = _discover_entry_points()
    numcodecs_names = {NUMCODECS_PREFIX + i for i in numcodecs_ids()}
    with _lock:
        return sorted({*_registered, *BUILTIN_CODECS, *entry_points, *numcodecs_names})


def _lookup(name: str) -> type[Codec] | None:
    """The class registered, built in or declared for ``name``, or ``None``."""
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
            return None
        cls = _load_entry_point(name, ep)
    with _lock:
        return _registered.get(name) or _loaded.setdefault(name, cls)


def _unknown(name: str) -> UnknownCodecError:
    if name.startswith(NUMCODECS_PREFIX):
        from .numcodecs_registry import missing_codec_message

        return UnknownCodecError(f"codec {name!r}: {missing_codec_message(name[len(NUMCODECS_PREFIX):])}")
    return UnknownCodecError(f"unknown codec {name!r}; known codecs: {', '.join(known_codec_names())}")


def get_codec_class(name: str) -> type[Codec]:
    """The codec class for ``name``; :class:`UnknownCodecError` if there is none.

    For ``numcodecs.<id>`` (without a registered class) this is the special
    class of ``id`` (:data:`~zarrdask.codecs.numcodecs_v3.SPECIAL_CLASSES`) or
    :class:`~zarrdask.codecs.numcodecs_v3.NumcodecsKindless`; build such codecs
    with :func:`codec_from_json`, which also knows the id.
    """
    cls = _lookup(name)
    if cls is not None:
        return cls
    if name.startswith(NUMCODECS_PREFIX):
        from .numcodecs_registry import numcodecs_ids
        from .numcodecs_v3 import SPECIAL_CLASSES, NumcodecsKindless

        codec_id = name[len(NUMCODECS_PREFIX):]
        if codec_id in numcodecs_ids():
            return SPECIAL_CLASSES.get(codec_id, NumcodecsKindless)  # type: ignore[return-value]
    raise _unknown(name)


def _from_numcodecs(codec: Numcodec, key: str, kind: str | None) -> Codec:
    """A numcodecs object as the matching zarrdask codec: as a compressor
    (``kind`` ``None`` or ``"bytes_bytes"``) zstd, gzip, blosc and crc32c become
    the v3 core codecs, every other codec its ``numcodecs.<id>`` wrapper."""
    config = dict(codec.get_config())
    codec_id = config.pop("id", getattr(codec, "codec_id", None))
    try:
        if kind in (None, "bytes_bytes"):
            core = core_compressor(codec, str(codec_id), config)
            if core is not None:
                return core
        from .numcodecs_v3 import from_numcodecs

        return from_numcodecs(codec, kind)
    except UnknownCodecError as e:
        raise UnknownCodecError(f"{key}: {e}") from None
    except CodecError as e:
        raise CodecError(f"{key}: numcodecs codec {codec!r}: {e}") from None


def core_compressor(codec: Numcodec, codec_id: str, config: dict[str, Any]) -> Codec | None:
    """The v3 core codec writing the same bytes as numcodecs compressor ``codec``, if any."""
    if codec_id == "zstd":
        from .zstd_codec import ZstdCodec

        return ZstdCodec(level=config.get("level", 0), checksum=bool(config.get("checksum", False)))
    if codec_id == "gzip":
        from .gzip_codec import GzipCodec

        return GzipCodec(level=config.get("level", 1))
    if codec_id == "blosc":
        from .blosc_codec import BloscCodec

        shuffle_id = config.get("shuffle", 1)  # "?" (refused by BloscCodec) for a hostile non-integer
        shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle", -1: None}.get(shuffle_id, "?") \
            if isinstance(shuffle_id, int) else "?"
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
    return None


def codec_from_json(doc: Any, *, key: str = "zarr.json", kind: str | None = None) -> Codec:
    """A codec from its JSON form or an object.

    Accepts ``{"name": ..., "configuration": {...}}`` (``configuration`` and
    ``must_understand`` optional), a bare name, a zarrdask :class:`Codec`
    (returned as is) or a numcodecs codec object (``Zstd`` → ``ZstdCodec``,
    ``GZip`` → ``GzipCodec``, ``Blosc`` → ``BloscCodec``, ``CRC32C`` →
    ``Crc32cCodec`` where a compressor is expected, others → their
    ``numcodecs.<id>`` wrapper), or any object with a ``to_dict()`` giving that
    JSON (zarr-python's codec objects).

    ``kind`` (``"array_array"``, ``"array_bytes"``, ``"bytes_bytes"``) is the
    kind the caller expects at this place — the position of a
    ``create_array`` argument; it decides the kind of a ``numcodecs.<id>``
    codec. Without it such a codec is a
    :class:`~zarrdask.codecs.abc.KindlessCodec`, given its kind by its position in the
    codec list.

    ``key`` names the metadata document in error messages. A malformed codec
    object raises :class:`MetadataError`, an unknown name
    :class:`UnknownCodecError`, a bad configuration :class:`CodecError`.
    """
    if type(doc) is not dict and type(doc) is not str:  # (JSON, the common case, skips these checks)
        if isinstance(doc, Codec):
            return doc
        if isinstance(doc, Numcodec):
            return _from_numcodecs(doc, key, kind)
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
        cls = _lookup(name)
        if cls is None and name.startswith(NUMCODECS_PREFIX):
            from .numcodecs_v3 import numcodecs_codec

            return numcodecs_codec(name[len(NUMCODECS_PREFIX):], configuration, kind=kind)
        if cls is None:
            raise _unknown(name)
        return cls.from_config(dict(configuration))
    except UnknownCodecError as e:
        raise UnknownCodecError(f"{key}: {e}") from None
    except CodecError as e:
        raise CodecError(f"{key}: {e}") from None
    except TypeError as e:  # unexpected / missing keyword arguments of a third-party from_config
        raise CodecError(f"{key}: codec {name!r}: invalid configuration {dict(configuration)}: {e}") from None
