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
from typing import Any

import numpy as np

from ..errors import CodecError, MetadataError, UnknownCodecError, UnknownDataTypeError
from ..metadata import ArrayMetadataV2, ArrayMetadataV3
from ..metadata.dtypes import data_type_to_v3, default_fill_value, encode_fill_value_v3
from ._frozen import UNSET, thaw
from .spec import ArraySpecV2, ArraySpecV3, GroupSpecV2, GroupSpecV3, NodeSpec, _join

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
                           members={name: convert_v2_to_v3(m, path=_join(path, name))
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
    from ..codecs.numcodecs_registry import get_numcodec, numcodecs_ids
    from ..codecs.numcodecs_v3 import PREFIX, SPECIAL_CLASSES, classify, numcodecs_codec

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
        import numcodecs

        from ..codecs.registry import codec_from_json

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
    from ..codecs.abc import ChunkSpec

    zarray = spec.metadata_document()
    meta = ArrayMetadataV2.from_json(zarray, key=f"{path.rstrip('/')}/.zarray")
    where = path
    dtype, ndim = meta.dtype, len(meta.shape)
    attrs = thaw(spec.attributes)
    dimension_names = _dimension_names(attrs, ndim, where)
    filters = [dict(f) for f in (meta.filters or ())]

    array_array: list[dict] = []
    bytes_bytes: list[dict] = []
    serializer: dict | None = None
    if meta.order == "F" and ndim > 1:
        array_array.append({"name": "transpose", "configuration": {"order": list(range(ndim - 1, -1, -1))}})

    if dtype.kind == "O":
        first = filters[0]["id"] if filters else None
        if first not in _VLEN:
            raise UnknownCodecError(
                f"{where}: an object array with {'the object codec ' + repr(first) if first else 'no object codec'};"
                f" only {sorted(_VLEN)} have a Zarr v3 equivalent")
        data_type: Any = _VLEN[first]
        serializer = {"name": filters.pop(0)["id"], "configuration": {}}
        spec_dtype = np.dtype("u1")  # bytes → bytes codecs see a byte stream (zarr-python: item size 1)
    else:
        try:
            data_type = data_type_to_v3(dtype)
        except UnknownDataTypeError as e:
            raise UnknownDataTypeError(f"{where}: {e}") from None
        spec_dtype = dtype

    chunk = ChunkSpec(tuple(meta.chunks), spec_dtype, 0)
    for i, f in enumerate(filters):
        if f["id"] in _VLEN:
            raise UnknownCodecError(f"{where}: filter {i} {f['id']!r} is an object codec after the first filter")
        default_kind = "array_array" if serializer is None else "bytes_bytes"
        codec_json, kind, after = _numcodecs_codec(f, chunk, default_kind, f"{where}: filter {i}")
        if kind == "array_array":
            if serializer is not None:
                raise CodecError(
                    f"{where}: filter {i} {f['id']!r} works on arrays but follows a bytes → bytes filter; "
                    "Zarr v3 has no such codec order")
            array_array.append(codec_json)
            chunk = after
        elif kind == "array_bytes":
            if serializer is not None:
                raise CodecError(f"{where}: filter {i} {f['id']!r} turns arrays into bytes after another; "
                                 "Zarr v3 has one array → bytes codec")
            serializer = codec_json
        else:
            if serializer is None:
                serializer = _bytes_codec(chunk.dtype, where)
            bytes_bytes.append(codec_json)
    if meta.compressor is not None:
        codec_json, kind = _compressor(dict(meta.compressor), chunk, f"{where}: compressor")
        if kind == "array_bytes":  # zfpy, pcodec: the v2 compressor gets the (filtered) array
            if serializer is not None:
                raise CodecError(f"{where}: compressor {meta.compressor['id']!r} turns arrays into bytes, "
                                 "but a filter already did; Zarr v3 has one array → bytes codec")
            serializer = codec_json
        else:
            bytes_bytes.append(codec_json)
    if serializer is None:
        serializer = _bytes_codec(chunk.dtype, where)

    fill = meta.fill_value
    if dtype.kind == "O":
        if data_type == "string":
            fill_json: Any = fill if isinstance(fill, str) else ""
        else:
            fill_json = fill if isinstance(fill, str) else encode_fill_value_v3(
                b"", dtype, data_type="variable_length_bytes")
    else:
        native = dtype.newbyteorder("=")
        if fill is None:
            fill = default_fill_value(native)
        fill_json = encode_fill_value_v3(np.asarray(fill).astype(native)[()], native, data_type=data_type)

    result = ArraySpecV3(
        shape=meta.shape,
        data_type=data_type,
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(meta.chunks)}},
        chunk_key_encoding={"name": "v2", "configuration": {"separator": meta.dimension_separator}},
        fill_value=fill_json,
        codecs=[*array_array, serializer, *bytes_bytes],
        attributes=attrs,
        dimension_names=dimension_names,
        storage_transformers=[],
    )
    ArrayMetadataV3.from_json(result.metadata_document(), key=f"{path.rstrip('/')}/zarr.json")
    return result
