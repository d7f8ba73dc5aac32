"""Zarr v2 → Zarr v3 conversion of specs.

ZEP 6, end of "Zarr Object Models in JSON schema": "it may be desirable to
define a mapping from ZOM to ZOM, e.g. ZOM for Zarr v2 -> ZOM for Zarr v3".
This is that mapping. The result describes the *same stored chunks*: with the
``v2`` chunk key encoding (``zarr-specs/v3-chunk-key-encodings-v2.rst``) the
chunk keys do not change, and the codecs produce the same bytes, so a v2
hierarchy becomes a v3 one by writing the converted metadata and copying (or
keeping) the chunks key for key.

Per array (v2 spec "Arrays / Metadata" → v3 core "Array metadata"):

* ``dtype`` → ``data_type`` as zarr-python 3 writes it
  (:func:`zarrdask.metadata.data_type_to_v3`); the byte order moves to the
  ``bytes`` codec's ``endian``. ``|O`` with a ``vlen-utf8`` / ``vlen-bytes``
  object codec → ``"string"`` / ``"variable_length_bytes"`` with that codec as
  the serializer (``{"name": "vlen-utf8", "configuration": {}}``).
* ``order: "F"`` → a ``transpose`` codec ``[n-1, ..., 0]`` first (the bytes of
  a transposed chunk in C order are the chunk's bytes in F order; v2 filters
  see the F-ordered elements, so they come after it).
* ``filters`` → ``numcodecs.<id>`` codecs (their configuration without
  ``"id"``, as zarr-python 3 names them), array → array ones before the
  serializer; a bytes → bytes filter (``shuffle``, a checksum) goes after it.
  The kind each has on the data type reaching it is found as for stored v3
  codec lists (:func:`zarrdask.codecs.numcodecs_v3.classify`).
* the serializer ``bytes``, ``endian`` from the data type entering it (the
  array's, or a filter's ``astype``), none for single-byte types — unless a
  filter or the compressor turns the array into bytes itself (``zfpy``,
  ``pcodec``, ``json2``: zarr-python hands a v2 compressor the array), which
  then is the serializer.
* ``compressor`` → ``blosc`` (``typesize`` and a named ``shuffle`` filled in),
  ``zstd``, ``gzip`` as the v3 codecs; any other id → ``numcodecs.<id>``.
* ``dimension_separator`` → ``{"name": "v2", "configuration": {"separator": ...}}``.
* ``fill_value`` re-encoded for the v3 data type
  (:func:`zarrdask.metadata.encode_fill_value_v3`); ``null`` (no fill value,
  allowed in v2 only) becomes the type's zero, which is what zarr-python reads
  for missing chunks of such an array.
* the attribute ``_ARRAY_DIMENSIONS`` (xarray) → ``dimension_names``, removed
  from the attributes; ``storage_transformers: []`` as zarr-python writes it.

Groups keep their attributes; members are converted recursively.

Not convertible (a :class:`~zarrdask.errors.MetadataError` naming the path):
object arrays with other object codecs (``vlen-array``, ``json2``,
``pickle``, ...), structured types with sub-array fields (no v3 form), fields
of mixed byte order, an array → array filter after a bytes → bytes one, two
codecs that each turn arrays into bytes.

Example: ``{"dtype": ">f8", "order": "F", "filters": [{"id": "delta", "dtype":
">f8"}], "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5,
"shuffle": 1}}`` → ``codecs [transpose [1, 0], numcodecs.delta, bytes big,
blosc (typesize 8, "shuffle")]``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numcodecs
import numpy as np

from ..codecs.abc import ChunkSpec
from ..codecs.numcodecs_registry import get_numcodec, numcodecs_ids
from ..codecs.numcodecs_v3 import PREFIX, SPECIAL_CLASSES, classify, numcodecs_codec
from ..codecs.registry import codec_from_json
from ..errors import CodecError, MetadataError, UnknownCodecError, UnknownDataTypeError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..metadata.dtypes import data_type_to_v3, default_fill_value, encode_fill_value_v3
from ._frozen import UNSET, thaw
from .fields import child_path
from .spec import NodeSpec
from .v2 import ArraySpecV2, GroupSpecV2
from .v3 import ArraySpecV3, GroupSpecV3

__all__ = ["convert_v2_to_v3"]

_VLEN = {"vlen-utf8": "string", "vlen-bytes": "variable_length_bytes"}
_CORE_COMPRESSORS = ("blosc", "zstd", "gzip")


def convert_v2_to_v3(spec: NodeSpec, *, path: str = "/") -> ArraySpecV3 | GroupSpecV3:
    """The Zarr v3 spec describing the same stored chunks as a v2 spec.

    Parameters
    ----------
    spec
        An :class:`ArraySpecV2` or :class:`GroupSpecV2` (members converted too).
    path
        Names the root in error messages.

    Returns
    -------
    ArraySpecV3 or GroupSpecV3
        See the module docstring for the mapping. The result is valid v3
        metadata (checked) and readable by zarr-python 3.

    Raises
    ------
    MetadataError
        The spec is not valid v2 metadata, or has no v3 equivalent; names the
        path and the field.
    """
    if isinstance(spec, GroupSpecV2):
        return GroupSpecV3(attributes=spec.attributes,
                           members={name: convert_v2_to_v3(m, path=child_path(path, name))
                                    for name, m in spec.members.items()})
    if isinstance(spec, ArraySpecV2):
        return _convert_array(spec, path)
    if isinstance(spec, NodeSpec):
        raise TypeError(f"convert_v2_to_v3: {path!r} is already a v{spec.zarr_format} {spec.node_type}")
    raise TypeError(f"convert_v2_to_v3: expected an ArraySpecV2 or GroupSpecV2, found {type(spec).__name__}")


def _endian(dtype: np.dtype, where: str) -> str | None:
    """The ``bytes`` codec ``endian`` of ``dtype`` (``None``: no byte order)."""
    orders: set[str] = set()

    def walk(dt: np.dtype) -> None:
        if dt.fields is not None:
            for name in dt.names:
                walk(dt.fields[name][0])
        elif dt.subdtype is not None:
            walk(dt.subdtype[0])
        elif dt.byteorder != "|":
            orders.add({"=": "<" if sys.byteorder == "little" else ">"}.get(dt.byteorder, dt.byteorder))

    walk(dtype)
    if not orders:
        return None
    if len(orders) > 1:
        raise UnknownDataTypeError(f"{where}: the data type {dtype} mixes byte orders; a v3 'bytes' codec has one")
    return "little" if orders.pop() == "<" else "big"


def _bytes_codec(dtype: np.dtype, where: str) -> dict[str, Any]:
    endian = _endian(dtype, where)
    return {"name": "bytes", "configuration": {"endian": endian}} if endian else {"name": "bytes"}


def _numcodecs_codec(config: dict[str, Any], spec: Any, default_kind: str, where: str) -> tuple[dict, str, Any]:
    """A v2 codec configuration as ``numcodecs.<id>``: (JSON, kind, spec after it).

    The kind is the one the codec has on chunks of ``spec`` (its special class,
    or :func:`~zarrdask.codecs.numcodecs_v3.classify`); an id numcodecs does not
    know keeps zarr-python's naming with the kind its position gives."""
    codec_id = config["id"]
    conf = {k: v for k, v in config.items() if k != "id"}
    if codec_id not in numcodecs_ids():  # not known here: zarr-python's naming, the kind from the position
        return {"name": PREFIX + codec_id, "configuration": conf}, default_kind, spec
    try:
        special = SPECIAL_CLASSES.get(codec_id)
        kind = special.kind if special is not None else classify(get_numcodec(config), spec.dtype, PREFIX + codec_id)
        codec = numcodecs_codec(codec_id, conf, kind=kind).complete(spec)
        out = codec.encoded_spec(spec) if kind == "array_array" else spec
    except (CodecError, UnknownCodecError, TypeError, ValueError) as e:
        raise CodecError(f"{where}: codec {codec_id!r} {conf}: {e}") from None
    return codec.to_json(), kind, out


def _compressor(config: dict[str, Any], spec: Any, where: str) -> tuple[dict[str, Any], str]:
    """The v3 form of a v2 compressor and its kind (``zfpy``, ``pcodec`` are array → bytes)."""
    if config["id"] in _CORE_COMPRESSORS:
        try:
            codec = codec_from_json(numcodecs.get_codec(dict(config)), key=where)
        except (ValueError, TypeError) as e:
            raise CodecError(f"{where}: compressor {config}: {e}") from None
        return codec.complete(spec).to_json(), "bytes_bytes"
    codec_json, kind, _ = _numcodecs_codec(config, spec, "bytes_bytes", where)
    if kind == "array_array":
        raise CodecError(f"{where}: compressor {config['id']!r} encodes arrays to arrays, not to bytes")
    return codec_json, kind


def _dimension_names(attrs: dict[str, Any], ndim: int, where: str) -> Any:
    if "_ARRAY_DIMENSIONS" not in attrs:
        return UNSET
    names = attrs.pop("_ARRAY_DIMENSIONS")
    if not isinstance(names, list) or len(names) != ndim or not all(isinstance(n, str) for n in names):
        raise MetadataError(
            f"{where}: attribute '_ARRAY_DIMENSIONS': found {names!r:.100}, expected a list of {ndim} "
            "dimension names (strings), one per dimension")
    return names


def _convert_array(spec: ArraySpecV2, path: str) -> ArraySpecV3:
    meta = ArrayMetadataV2.from_json(spec.metadata_document(), key=f"{path.rstrip('/')}/.zarray")
    attrs = thaw(spec.attributes)
    dimension_names = _dimension_names(attrs, len(meta.shape), path)
    data_type, codecs = _data_type_and_codecs(meta, path)
    result = ArraySpecV3(
        shape=meta.shape,
        data_type=data_type,
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(meta.chunks)}},
        chunk_key_encoding={"name": "v2", "configuration": {"separator": meta.dimension_separator}},
        fill_value=_fill_value(meta, data_type),
        codecs=codecs,
        attributes=attrs,
        dimension_names=dimension_names,
        storage_transformers=[],
    )
    ArrayMetadataV3.from_json(result.metadata_document(), key=f"{path.rstrip('/')}/zarr.json")
    return result


def _data_type_and_codecs(meta: ArrayMetadataV2, where: str) -> tuple[Any, list[dict[str, Any]]]:
    """The v3 ``data_type`` and ``codecs`` of a v2 array: ``order`` as a
    ``transpose``, then the filters, then the compressor, each where its kind puts it."""
    ndim = len(meta.shape)
    filters = [dict(f) for f in (meta.filters or ())]
    data_type, serializer, element_dtype = _data_type(meta.dtype, filters, where)
    codecs = _Codecs(ChunkSpec(tuple(meta.chunks), element_dtype, 0), serializer)
    if meta.order == "F" and ndim > 1:
        codecs.array_array.append({"name": "transpose", "configuration": {"order": list(range(ndim - 1, -1, -1))}})
    for i, f in enumerate(filters):
        codecs.add_filter(f, i, where)
    if meta.compressor is not None:
        codecs.add_compressor(dict(meta.compressor), where)
    return data_type, codecs.as_list(where)


def _data_type(dtype: np.dtype, filters: list[dict[str, Any]], where: str) -> tuple[Any, dict | None, np.dtype]:
    """``(data_type, serializer, dtype the codecs see)`` of a v2 ``dtype``: an
    object array's first filter (its object codec, taken off ``filters``) is its
    serializer, and the codecs after it see a byte stream."""
    if dtype.kind != "O":
        try:
            return data_type_to_v3(dtype), None, dtype
        except UnknownDataTypeError as e:
            raise UnknownDataTypeError(f"{where}: {e}") from None
    first = filters[0]["id"] if filters else None
    if first not in _VLEN:
        raise UnknownCodecError(
            f"{where}: an object array with {'the object codec ' + repr(first) if first else 'no object codec'};"
            f" only {sorted(_VLEN)} have a Zarr v3 equivalent")
    serializer = {"name": filters.pop(0)["id"], "configuration": {}}
    return _VLEN[first], serializer, np.dtype("u1")  # (zarr-python: item size 1)


@dataclass
class _Codecs:
    """A converted array's v3 codecs as they are placed, and the chunk the next one sees."""

    chunk: ChunkSpec
    serializer: dict[str, Any] | None = None
    array_array: list[dict[str, Any]] = field(default_factory=list)
    bytes_bytes: list[dict[str, Any]] = field(default_factory=list)

    def add_filter(self, f: dict[str, Any], i: int, where: str) -> None:
        """The v2 filter number ``i``: before, as or after the serializer, as its kind says."""
        if f["id"] in _VLEN:
            raise UnknownCodecError(f"{where}: filter {i} {f['id']!r} is an object codec after the first filter")
        default_kind = "array_array" if self.serializer is None else "bytes_bytes"
        codec_json, kind, after = _numcodecs_codec(f, self.chunk, default_kind, f"{where}: filter {i}")
        if kind == "array_array":
            if self.serializer is not None:
                raise CodecError(
                    f"{where}: filter {i} {f['id']!r} works on arrays but follows a bytes → bytes filter; "
                    "Zarr v3 has no such codec order")
            self.array_array.append(codec_json)
            self.chunk = after
        elif kind == "array_bytes":
            if self.serializer is not None:
                raise CodecError(f"{where}: filter {i} {f['id']!r} turns arrays into bytes after another; "
                                 "Zarr v3 has one array → bytes codec")
            self.serializer = codec_json
        else:
            if self.serializer is None:
                self.serializer = _bytes_codec(self.chunk.dtype, where)
            self.bytes_bytes.append(codec_json)

    def add_compressor(self, config: dict[str, Any], where: str) -> None:
        """The v2 compressor: a bytes → bytes codec, or the serializer (``zfpy``,
        ``pcodec``: the v2 compressor gets the filtered array)."""
        codec_json, kind = _compressor(config, self.chunk, f"{where}: compressor")
        if kind != "array_bytes":
            self.bytes_bytes.append(codec_json)
            return
        if self.serializer is not None:
            raise CodecError(f"{where}: compressor {config['id']!r} turns arrays into bytes, "
                             "but a filter already did; Zarr v3 has one array → bytes codec")
        self.serializer = codec_json

    def as_list(self, where: str) -> list[dict[str, Any]]:
        """The codecs in order; ``bytes`` is the serializer when nothing else is."""
        serializer = self.serializer if self.serializer is not None else _bytes_codec(self.chunk.dtype, where)
        return [*self.array_array, serializer, *self.bytes_bytes]


def _fill_value(meta: ArrayMetadataV2, data_type: Any) -> Any:
    """The v2 fill value re-encoded for the v3 ``data_type`` (``null``: the type's zero)."""
    fill, dtype = meta.fill_value, meta.dtype
    if dtype.kind == "O":
        if isinstance(fill, str):
            return fill
        return "" if data_type == "string" else encode_fill_value_v3(b"", dtype, data_type="variable_length_bytes")
    native = dtype.newbyteorder("=")
    if fill is None:
        fill = default_fill_value(native)
    return encode_fill_value_v3(np.asarray(fill).astype(native)[()], native, data_type=data_type)
