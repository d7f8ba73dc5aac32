"""What the workflow commands (``convert``, ``rechunk``, ``demo``) share: parsing
chunk and shard shapes, byte sizes and codecs, the stores of SRC and DST, and
the errors of a workflow's arguments.

Shapes
------
``--chunks`` and ``--shards`` take one of:

* comma-separated integers, ``64,64`` (a tuple; ``-1``: the whole dimension and
  ``none``: keep the source's length, where the command allows them). A lone
  integer is a 1-tuple for ``convert`` and a length for every dimension for
  ``rechunk`` (write ``64,`` for a 1-tuple);
* ``NAME=LENGTH`` pairs, ``time=365,lat=30`` (``rechunk``: by dimension name;
  an integer NAME is a dimension index for an array);
* JSON: a list (``[64, 64]``) or an object (``{"temp": [64, 64], "sub/x": null}``
  by array path, or ``{"time": 365}`` by dimension name for ``rechunk``).

Examples
--------
>>> parse_shape("64,64", "--chunks")
(64, 64)
>>> parse_shape("64", "--chunks", lone_int=True)
64
>>> parse_shape("time=365, lat=none", "--chunks", allow_names=True, allow_none=True)
{'time': 365, 'lat': None}
>>> parse_shape('{"temp": [8, 8]}', "--chunks")
{'temp': (8, 8)}
"""

from __future__ import annotations

import json
import re
from typing import Any

import click

from ..codecs.registry import codec_from_json
from ..errors import CodecError, MetadataError
from ..storage import store_from
from ..storage.factory import is_url
from ..workflows.plan import parse_max_mem
from ._common import EXIT_USAGE, CliError, describe, parse_storage_options

__all__ = [
    "codec_arguments",
    "parse_bytes",
    "parse_shape",
    "source_options",
    "target_store",
    "usage_error",
]

_INT = re.compile(r"^[+-]?\d+$")
_NONE = ("none", "null", "_")


# -- shapes ------------------------------------------------------------------------------
def _length(text: str, option: str, whole: str, allow_none: bool) -> int | None:
    text = text.strip()
    if allow_none and text.lower() in _NONE:
        return None
    if not _INT.match(text):
        hint = " (or none)" if allow_none else ""
        raise click.BadParameter(f"{text!r} in {whole!r} is not an integer{hint}", param_hint=f"'{option}'")
    value = int(text)
    if value == 0 or value < -1:
        raise click.BadParameter(
            f"{whole!r}: lengths are positive integers (or -1: the whole dimension), found {value}",
            param_hint=f"'{option}'",
        )
    return value


def _tuples(x: Any) -> Any:
    """JSON lists as tuples (values of a dict too)."""
    if isinstance(x, list):
        return tuple(_tuples(v) for v in x)
    if isinstance(x, dict):
        return {k: _tuples(v) for k, v in x.items()}
    return x


def parse_shape(
    text: str | None,
    option: str,
    *,
    lone_int: bool = False,
    allow_names: bool = False,
    allow_none: bool = False,
) -> Any:
    """A ``--chunks`` / ``--shards`` value (see the module doc); ``None`` stays ``None``.

    Raises :class:`click.BadParameter` (exit code 2) for text it cannot read.
    """
    if text is None:
        return None
    whole = text
    text = text.strip()
    if not text:
        raise click.BadParameter("empty value", param_hint=f"'{option}'")
    if text[0] in "[{":
        try:
            value = json.loads(text)
        except ValueError as e:
            raise click.BadParameter(f"{whole!r} is not valid JSON: {e}", param_hint=f"'{option}'") from None
        if isinstance(value, dict) and not allow_names:
            bad = [k for k, v in value.items() if v is not None and not isinstance(v, list)]
            if bad:
                raise click.BadParameter(
                    f"{whole!r}: expected {{array path: [lengths] or null}}, found a {type(value[bad[0]]).__name__} "
                    f"for {bad[0]!r}",
                    param_hint=f"'{option}'",
                )
        return _tuples(value)
    parts = [p for p in text.split(",")]
    trailing = parts[-1].strip() == "" and len(parts) > 1
    if trailing:
        parts = parts[:-1]
    if any("=" in p for p in parts):
        if not allow_names:
            raise click.BadParameter(
                f"{whole!r}: NAME=LENGTH is not accepted here; give comma-separated integers or JSON",
                param_hint=f"'{option}'",
            )
        out: dict[Any, int | None] = {}
        for p in parts:
            name, sep, value = p.partition("=")
            name = name.strip()
            if not sep or not name:
                raise click.BadParameter(f"{whole!r}: expected NAME=LENGTH pairs, found {p.strip()!r}",
                                         param_hint=f"'{option}'")
            out[name] = _length(value, option, whole, allow_none)
        return out
    lengths = tuple(_length(p, option, whole, allow_none) for p in parts)
    if lone_int and len(lengths) == 1 and not trailing and lengths[0] is not None:
        return lengths[0]
    return lengths


def index_keys(spec: Any) -> Any:
    """``{"0": 10}`` → ``{0: 10}``: NAME=LENGTH keys that are integers become
    dimension indices (for a single array)."""
    if isinstance(spec, dict):
        return {int(k) if isinstance(k, str) and _INT.match(k) else k: v for k, v in spec.items()}
    return spec


# -- sizes and codecs --------------------------------------------------------------------
def parse_bytes(text: str, option: str) -> int:
    """``"256MB"`` → ``256_000_000`` (dask's units: kB, MB, GB, KiB, MiB, GiB, ...)."""
    try:
        return parse_max_mem(text, "the size")
    except (ValueError, TypeError) as e:
        raise click.BadParameter(str(e), param_hint=f"'{option}'") from None


def codec_arguments(values: tuple[str, ...], option: str, *, zarr_format: int) -> list[Any]:
    """The codecs of a repeated ``--compressor``: each a JSON object or a bare codec
    name (``zstd``). For a v2 target a bare name becomes ``{"id": name}`` (a
    numcodecs configuration); a v3 JSON object is checked against the codec
    registry here, so an unknown codec or a bad configuration is a usage error."""
    out: list[Any] = []
    for text in values:
        text = text.strip()
        if text.startswith("{"):
            try:
                codec = json.loads(text)
            except ValueError as e:
                raise click.BadParameter(f"{text!r} is not valid JSON: {e}", param_hint=f"'{option}'") from None
        elif re.match(r"^[A-Za-z][\w.\-]*$", text):
            codec = {"id": text} if zarr_format == 2 else {"name": text}
        else:
            raise click.BadParameter(f"expected a codec name (zstd) or a JSON object, found {text!r}",
                                     param_hint=f"'{option}'")
        if not (isinstance(codec, dict) and (("id" in codec) if zarr_format == 2 else ("name" in codec))):
            key = "id" if zarr_format == 2 else "name"
            raise click.BadParameter(
                f"{text!r}: a Zarr v{zarr_format} codec is a JSON object with a {key!r}", param_hint=f"'{option}'"
            )
        if zarr_format == 3:
            try:
                codec_from_json(codec)
            except (MetadataError, CodecError) as e:
                raise click.BadParameter(describe(e), param_hint=f"'{option}'") from None
        out.append(codec)
    return out


# -- stores ------------------------------------------------------------------------------
def source_options(source: str, targets: list[str | None], storage_options: tuple[str, ...]) -> tuple[str, ...]:
    """The ``-S`` options for opening SRC: all of them if it is a URL, else none.

    ``-S`` options apply to every URL among SRC and the targets (DST,
    ``--temp``); giving some when none is a URL is a usage error, as in the
    other commands.
    """
    options = parse_storage_options(storage_options)
    if options and not any(p is not None and is_url(p) for p in (source, *targets)):
        raise click.BadParameter(
            "storage options only apply to URLs such as s3://..., and no path given is one",
            param_hint="'--storage-option'",
        )
    return storage_options if is_url(source) else ()


def target_store(path: str, storage_options: tuple[str, ...]) -> Any:
    """The store at ``path`` opened for writing (``-S`` options if it is a URL)."""
    options = parse_storage_options(storage_options) if is_url(path) else None
    return store_from(path, mode="a", storage_options=options)


def usage_error(exc: BaseException) -> CliError:
    """An error about a workflow's arguments, shown with exit code 2."""
    return CliError(describe(exc), EXIT_USAGE)
