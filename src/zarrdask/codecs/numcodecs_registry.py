"""numcodecs' own registry: making a codec from its ``{"id": ...}`` configuration,
and saying what to install when numcodecs cannot.

Zarr v2 names a filter or compressor by its numcodecs id (v2 spec, "Metadata":
``compressor`` and ``filters`` are ``{"id": ...}`` objects); zarr-python 3 names
the same codecs ``numcodecs.<id>`` in Zarr v3 (zarr-specs v3 core, "Codecs" /
"Extension codecs"). Which ids exist is numcodecs' business, not a list kept
here: an id is known when numcodecs registered a class for it
(``numcodecs.registry.codec_registry``) or a package declares it in the
``numcodecs.codecs`` entry-point group.

An id numcodecs does not know raises :class:`~zarrdask.errors.UnknownCodecError`
naming the id and what to install. numcodecs ships its optional codecs behind
extras named after them (``zfpy``, ``pcodec``, ``crc32c``; ``msgpack`` for
``msgpack2``, whose trailing digit is the format's version), so the extra — and
the package it requires, with numcodecs' own version bounds — is read from
numcodecs' distribution metadata. Tested examples (numcodecs 0.16 without the
optional packages)::

    get_numcodec({"id": "pcodec"}, where=".zarray")
    # UnknownCodecError: .zarray: codec 'pcodec': numcodecs 0.16.6 cannot make codec
    # 'pcodec': it needs the optional package pcodec (numcodecs asks for
    # 'pcodec<0.4,>=0.3'): pip install "numcodecs[pcodec]"
    get_numcodec({"id": "no-such"}, where=".zarray")
    # UnknownCodecError: .zarray: codec 'no-such': numcodecs 0.16.6 has no codec
    # 'no-such' (...) a package providing it registers it in the
    # 'numcodecs.codecs' entry-point group; codecs available: adler32, ...

Works with numcodecs 0.13 and later (``get_codec`` raises a plain ``ValueError``
before 0.15, ``numcodecs.errors.UnknownCodecError`` since; both are handled by
looking the id up first).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import metadata
from typing import Any, Mapping

import numcodecs
from numcodecs import registry as _nc_registry
from numcodecs.abc import Codec as Numcodec

from ..errors import CodecError, UnknownCodecError

__all__ = ["get_numcodec", "numcodecs_ids", "missing_codec_message", "decode_buffer", "REFUSED"]

try:  # numcodecs >= 0.15
    from numcodecs import errors as _nc_errors
except ImportError:  # pragma: no cover - older numcodecs
    _nc_errors = None

#: numcodecs errors that mean "refused on purpose", not corrupt data (decoding
#: ``pickle`` without the process' opt-in, numcodecs >= 0.16.6)
REFUSED: tuple[type[BaseException], ...] = tuple(
    c for c in (getattr(_nc_errors, "UnsafeDecodeError", None),) if isinstance(c, type)
)


def numcodecs_ids() -> list[str]:
    """Every codec id numcodecs can make now: its registered classes and the
    ``numcodecs.codecs`` entry points."""
    entries = getattr(_nc_registry, "entries", {})
    return sorted({*_nc_registry.codec_registry, *entries})


@lru_cache(maxsize=None)
def _extras() -> dict[str, tuple[str, ...]]:
    """numcodecs' extras → the requirements each adds (from its distribution metadata)."""
    found: dict[str, list[str]] = {}
    try:
        requires = metadata.requires("numcodecs") or []
    except metadata.PackageNotFoundError:  # pragma: no cover - numcodecs without metadata
        return {}
    for line in requires:
        requirement, _, marker = line.partition(";")
        m = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if m:
            found.setdefault(m.group(1), []).append(requirement.strip().replace(" ", ""))
    return {k: tuple(v) for k, v in found.items()}


def _project(requirement: str) -> str:
    """The project name at the start of a requirement string (``"pcodec<0.4,>=0.3"`` → ``"pcodec"``)."""
    m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    return m.group(0) if m else requirement


def _installed(project: str) -> str | None:
    try:
        return metadata.version(project)
    except metadata.PackageNotFoundError:
        return None


def missing_codec_message(codec_id: str) -> str:
    """Why numcodecs cannot make ``codec_id`` and what to install."""
    version = getattr(numcodecs, "__version__", "?")
    extras = _extras()
    extra = next((e for e in (codec_id, codec_id.rstrip("0123456789")) if e in extras), None)
    if extra is not None:
        needed = extras[extra]
        pins = ", ".join(f"'{r}'" for r in needed)
        installed = [f"{p} {_installed(p)}" for p in dict.fromkeys(_project(r) for r in needed) if _installed(p)]
        if not installed or len(installed) < len({_project(r) for r in needed}):
            missing = [p for p in dict.fromkeys(_project(r) for r in needed) if not _installed(p)]
            return (
                f"numcodecs {version} cannot make codec {codec_id!r}: it needs the optional package "
                f'{", ".join(missing)} (numcodecs asks for {pins}): pip install "numcodecs[{extra}]"'
            )
        # installed, yet numcodecs did not register the codec: versions it does not accept
        return (
            f"numcodecs {version} cannot make codec {codec_id!r}: its extra {extra!r} asks for {pins}, "
            f"installed are {', '.join(installed)}; install versions that fit "
            f'(pip install "numcodecs[{extra}]") or a newer numcodecs (pip install -U numcodecs)'
        )
    return (
        f"numcodecs {version} has no codec {codec_id!r} (not in its registry nor in the "
        "'numcodecs.codecs' entry-point group; no numcodecs extra is named after it). A newer "
        "numcodecs may have it (pip install -U numcodecs), or a package providing it registers "
        f"it in the 'numcodecs.codecs' entry-point group; codecs available: {', '.join(numcodecs_ids())}"
    )


def get_numcodec(config: Mapping[str, Any], *, where: str = "", name: str | None = None) -> Numcodec:
    """The numcodecs codec for ``{"id": ..., **configuration}``.

    Raises :class:`UnknownCodecError` (naming ``where``, the codec — ``name``,
    by default its id — and what to install) when numcodecs has no such codec,
    :class:`CodecError` when the configuration is not accepted.
    """
    config = dict(config)
    codec_id = config.get("id")
    prefix = f"{where}: " if where else ""
    if not isinstance(codec_id, str):
        raise CodecError(f"{prefix}a numcodecs configuration needs a string 'id', found {dict(config)!r}")
    what = f"codec {name or codec_id!r}"
    if codec_id not in numcodecs_ids():
        raise UnknownCodecError(f"{prefix}{what}: {missing_codec_message(codec_id)}")
    try:
        return numcodecs.get_codec(config)
    except ImportError as e:  # an entry point whose package does not import
        raise UnknownCodecError(f"{prefix}{what} could not be loaded: {e}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        shown = {k: v for k, v in config.items() if k != "id"}
        raise CodecError(f"{prefix}{what}: invalid configuration {shown}: {e}") from None


def decode_buffer(codec: Numcodec, data: Any) -> Any:
    """``codec.decode(data)`` for a buffer ``data``; again with ``bytes`` when the
    codec takes nothing else (numcodecs < 0.16's ``pcodec``)."""
    try:
        return codec.decode(data)
    except TypeError:
        if isinstance(data, bytes):
            raise
        return codec.decode(bytes(data))
