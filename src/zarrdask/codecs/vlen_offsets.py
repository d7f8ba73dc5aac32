"""``zarrdask.vlen-offsets``: the draft ZEP 7 layout for ``string`` and ``bytes``.

Spec: ZEP 7 "Strings" (draft; Isaac Virshup), section "Detailed description":
each chunk is ``chunk_size + 1`` offsets (int32, or int64 for the "large"
variants), then zero padding so that the data buffer starts at a multiple of
64 bytes, then the data buffer; element ``i`` is
``data[offsets[i]:offsets[i + 1]]`` (UTF-8 for ``string``). It is Arrow's
``String``/``Binary`` (``LargeString``/``LargeBinary`` for int64) layout without
a validity bitmap, so a chunk becomes a ``pyarrow`` array without copying its
data (:func:`chunk_to_arrow`).

The ZEP has no registered codec name yet, so this codec lives under the
implementation's prefix and is opt-in (``serializer=VlenOffsetsCodec()``);
arrays using it are readable by zarrdask only. Offsets are little-endian and
signed (the ZEP's recommendation). Tested example configurations::

    {"name": "zarrdask.vlen-offsets", "configuration": {"offset_type": "int32"}}
    {"name": "zarrdask.vlen-offsets", "configuration": {"offset_type": "int64"}}

Decoding checks what a reader must not trust: the chunk holds the offsets and
the data buffer's start, offsets never decrease and stay inside the data
buffer, and (``string``) every element is valid UTF-8. Failures are
:class:`~zarrdask.errors.CorruptChunkError` naming the chunk's key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CodecError, CorruptChunkError
from .buffers import byte_view
from .abc import ArrayBytesCodec, ChunkSpec
from .vlen import bytes_array, coerce_vlen, is_bytes_dtype, is_string_dtype, strings_array

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "VlenOffsetsCodec",
    "ALIGNMENT",
    "encode_offsets_chunk",
    "decode_offsets_chunk",
    "chunk_to_arrow",
    "arrow_type",
    "fill_to_arrow",
    "unit_to_arrow",
    "supports_zero_copy",
    "arrow_offset_type",
]

#: the data buffer starts at a multiple of this many bytes (ZEP 7)
ALIGNMENT = 64
_OFFSET_DTYPES = {"int32": np.dtype("<i4"), "int64": np.dtype("<i8")}
_INT32_MAX = 2**31 - 1


def _round_up(x: int, base: int = ALIGNMENT) -> int:
    return -(-x // base) * base


def _offset_dtype(offset_type: str) -> np.dtype:
    try:
        return _OFFSET_DTYPES[offset_type]
    except KeyError:
        raise CodecError(
            f"codec 'zarrdask.vlen-offsets': configuration field 'offset_type' must be "
            f"\"int32\" or \"int64\", found {offset_type!r}"
        ) from None


def _kind(dtype: Any) -> str:
    if is_string_dtype(dtype):
        return "string"
    if is_bytes_dtype(dtype):
        return "bytes"
    raise CodecError(
        f"codec 'zarrdask.vlen-offsets' is only for the data types 'string' and 'bytes', found {dtype}"
    )


# -- encoding ------------------------------------------------------------------------
def encode_offsets_chunk(values: np.ndarray, offset_type: str = "int32") -> bytearray:
    """The ZEP 7 encoding of ``values`` (``StringDType``/``U``/object of ``str``,
    or object/``S`` of ``bytes``), elements in C order."""
    odt = _offset_dtype(offset_type)
    arr = np.asarray(values)
    flat = arr.reshape(-1).tolist()
    if arr.dtype.kind in "TU" or (arr.dtype.kind == "O" and flat and isinstance(flat[0], str)):
        try:
            parts = [s.encode("utf-8") for s in flat]
        except (AttributeError, UnicodeEncodeError) as e:
            raise CodecError(f"codec 'zarrdask.vlen-offsets': cannot encode a string as UTF-8: {e}") from None
    else:
        parts = [bytes(b) for b in flat]
    n = len(parts)
    offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=n), out=offsets[1:])
    total = int(offsets[-1])
    if odt.itemsize == 4 and total > _INT32_MAX:
        raise CodecError(
            f"codec 'zarrdask.vlen-offsets': the chunk's data is {total} bytes, more than int32 "
            "offsets can address; use {\"offset_type\": \"int64\"} or smaller chunks"
        )
    head = (n + 1) * odt.itemsize
    start = _round_up(head)
    out = bytearray(start + total)
    out[:head] = offsets.astype(odt).tobytes()
    out[start:] = b"".join(parts)
    return out


# -- decoding ---------------------------------------------------------------------------
def _parse(data: Any, size: int, offset_type: str, key: str) -> tuple[memoryview, np.ndarray, int]:
    """(the chunk's bytes, the offsets as int64, the data buffer's start), checked."""
    odt = _offset_dtype(offset_type)
    mv = byte_view(data)
    head = (size + 1) * odt.itemsize
    start = _round_up(head)
    if mv.nbytes < start:
        raise CorruptChunkError(
            f"chunk {key!r}: codec 'zarrdask.vlen-offsets': {mv.nbytes} bytes cannot hold the "
            f"{size + 1} {offset_type} offsets of {size} elements and their padding ({start} bytes); "
            "the element count disagrees with the chunk shape or the chunk is truncated"
        )
    offsets = np.frombuffer(mv, dtype=odt, count=size + 1).astype(np.int64)
    nbytes = mv.nbytes - start
    if offsets[0] < 0:
        raise CorruptChunkError(
            f"chunk {key!r}: codec 'zarrdask.vlen-offsets': the first offset is {int(offsets[0])}, expected >= 0"
        )
    steps = np.diff(offsets)
    if steps.size and steps.min() < 0:
        i = int(np.argmax(steps < 0))
        raise CorruptChunkError(
            f"chunk {key!r}: codec 'zarrdask.vlen-offsets': offsets decrease at element {i} "
            f"({int(offsets[i])} then {int(offsets[i + 1])})"
        )
    if offsets[-1] > nbytes:
        i = int(np.argmax(offsets > nbytes)) - 1
        raise CorruptChunkError(
            f"chunk {key!r}: codec 'zarrdask.vlen-offsets': element {max(i, 0)} ends at offset "
            f"{int(offsets[i + 1])}, past the end of the {nbytes}-byte data buffer"
        )
    return mv, offsets, start


def _element_at(offsets: np.ndarray, pos: int) -> int:
    """Index of the element holding data byte ``pos``."""
    return int(np.searchsorted(offsets, pos, side="right")) - 1


def _split_strings(raw: bytes, rel: np.ndarray, offsets: np.ndarray, key: str) -> list[str]:
    """Cut ``raw`` (the data bytes of all elements) into ``str`` elements at the
    byte offsets ``rel``: one UTF-8 decode of the whole buffer, then slicing by
    character offsets (vectorised from the byte offsets)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        i = _element_at(offsets, int(offsets[0]) + e.start)
        raise CorruptChunkError(
            f"chunk {key!r}: codec 'zarrdask.vlen-offsets': element {i} is not valid UTF-8 ({e.reason})"
        ) from None
    if len(text) != len(raw):  # non-ASCII: byte offsets → character offsets
        u8 = np.frombuffer(raw, dtype=np.uint8)
        lead = (u8 & 0xC0) != 0x80
        inner = rel[(rel > 0) & (rel < len(raw))]
        if inner.size and not lead[inner].all():
            pos = int(inner[np.argmin(lead[inner])])
            i = _element_at(offsets, int(offsets[0]) + pos)
            raise CorruptChunkError(
                f"chunk {key!r}: codec 'zarrdask.vlen-offsets': element {i} starts inside a multi-byte "
                "UTF-8 character (not valid UTF-8)"
            )
        chars = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum(lead, out=chars[1:])
        rel = chars[rel]
    bounds = rel.tolist()
    return [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def decode_offsets_chunk(
    data: Any, shape: tuple[int, ...], *, data_type: str = "string", offset_type: str = "int32", key: str = ""
) -> np.ndarray:
    """Decode a ZEP 7 chunk of ``shape`` into a ``StringDType`` (``data_type="string"``)
    or ``object`` array of ``bytes`` (``"bytes"``)."""
    size = int(np.prod(shape, dtype=np.int64))
    mv, offsets, start = _parse(data, size, offset_type, key)
    lo, hi = int(offsets[0]), int(offsets[-1])
    raw = mv[start + lo : start + hi].tobytes()
    rel = offsets - lo
    if data_type == "string":
        return strings_array(_split_strings(raw, rel, offsets, key), tuple(shape))
    bounds = rel.tolist()
    return bytes_array([raw[a:b] for a, b in zip(bounds[:-1], bounds[1:])], tuple(shape))


class VlenOffsetsCodec(ArrayBytesCodec):
    """``zarrdask.vlen-offsets``: ZEP 7 offsets + data buffer (array → bytes).

    Parameters
    ----------
    offset_type : {"int32", "int64"}
        Width of the offsets: ``int32`` (Arrow ``string``/``binary``, up to 2 GiB of
        data per chunk) or ``int64`` (``large_string``/``large_binary``).
    """

    name = "zarrdask.vlen-offsets"

    def __init__(self, offset_type: str = "int32") -> None:
        _offset_dtype(offset_type)
        self.offset_type = offset_type

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "VlenOffsetsCodec":
        config = dict(configuration or {})
        offset_type = config.pop("offset_type", "int32")
        if config:
            raise CodecError(f"codec 'zarrdask.vlen-offsets': unknown configuration field(s) {sorted(config)}")
        return cls(offset_type)

    def get_config(self) -> dict[str, Any]:
        return {"offset_type": self.offset_type}

    def validate(self, spec: ChunkSpec) -> None:
        _kind(spec.dtype)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytearray:
        _kind(spec.dtype)
        arr = np.asarray(chunk)
        if arr.shape != tuple(spec.shape):
            raise CodecError(
                f"codec 'zarrdask.vlen-offsets': chunk has shape {arr.shape}, expected {spec.shape}"
            )
        try:
            arr = coerce_vlen(arr, spec.dtype)
        except TypeError as e:
            raise CodecError(f"codec 'zarrdask.vlen-offsets': cannot encode the chunk: {e}") from None
        return encode_offsets_chunk(arr, self.offset_type)

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        return decode_offsets_chunk(
            data, tuple(spec.shape), data_type=_kind(spec.dtype), offset_type=self.offset_type, key=key
        )

    def decode_into(self, data: Any, spec: ChunkSpec, out: np.ndarray, key: str = "") -> None:
        out[...] = self.decode(data, spec, key)

    def to_arrow(self, data: Any, spec: ChunkSpec, key: str = "", *, validate: bool = True) -> "pa.Array":
        """The chunk's elements (C order) as a zero-copy pyarrow array."""
        return chunk_to_arrow(
            data, int(np.prod(spec.shape, dtype=np.int64)), data_type=_kind(spec.dtype),
            offset_type=self.offset_type, key=key, validate=validate,
        )


# -- Arrow --------------------------------------------------------------------------------
def _pyarrow() -> Any:
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is optional
        raise ImportError(
            "reading strings into Arrow needs pyarrow (pip install pyarrow); it is optional for zarrdask"
        ) from None
    return pa


def arrow_type(data_type: str = "string", offset_type: str = "int32") -> "pa.DataType":
    """``pa.string()``, ``pa.binary()``, or their ``large_`` forms for int64 offsets."""
    pa = _pyarrow()
    _offset_dtype(offset_type)
    large = offset_type == "int64"
    if data_type == "string":
        return pa.large_string() if large else pa.string()
    if data_type == "bytes":
        return pa.large_binary() if large else pa.binary()
    raise ValueError(f"data_type must be 'string' or 'bytes', found {data_type!r}")


def chunk_to_arrow(
    chunk: Any,
    size: int,
    *,
    data_type: str = "string",
    offset_type: str = "int32",
    key: str = "",
    validate: bool = True,
) -> "pa.Array":
    """A ZEP 7 chunk as a ``pyarrow.StringArray`` / ``BinaryArray`` without copying.

    Parameters
    ----------
    chunk
        The chunk's bytes as stored by ``zarrdask.vlen-offsets`` (after any
        bytes→bytes codecs are decoded): ``bytes``, ``bytearray``, a memoryview
        or a uint8 array.
    size
        The number of elements (the product of the chunk shape).
    data_type
        ``"string"`` (→ ``pa.string()``) or ``"bytes"`` (→ ``pa.binary()``).
    offset_type
        ``"int32"``, or ``"int64"`` for ``pa.large_string()`` / ``pa.large_binary()``.
    key
        The chunk's store key, for error messages.
    validate
        Check the offsets (always cheap) and, for strings, that every element is
        valid UTF-8 (one pass over the data, no copy).

    Returns
    -------
    pyarrow.Array
        Its offsets and data buffers point into ``chunk``'s memory (which the
        array keeps alive).

    Raises
    ------
    zarrdask.errors.CorruptChunkError
        Offsets that decrease or run past the data buffer, a chunk too short for
        ``size`` elements, invalid UTF-8; the message names ``key``.
    """
    pa = _pyarrow()
    typ = arrow_type(data_type, offset_type)
    mv, offsets, start = _parse(chunk, int(size), offset_type, key)
    width = _offset_dtype(offset_type).itemsize
    buf = pa.py_buffer(mv)
    arr = pa.Array.from_buffers(typ, int(size), [None, buf.slice(0, (size + 1) * width), buf.slice(start)])
    if validate and data_type == "string":
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid as e:
            raise CorruptChunkError(f"chunk {key!r}: codec 'zarrdask.vlen-offsets': {e}") from None
    return arr


def fill_to_arrow(fill_value: Any, size: int, *, data_type: str = "string", offset_type: str = "int32") -> "pa.Array":
    """``size`` copies of ``fill_value`` as a pyarrow array (what a missing chunk reads as)."""
    pa = _pyarrow()
    one = fill_value.encode("utf-8") if isinstance(fill_value, str) else bytes(fill_value)
    odt = _offset_dtype(offset_type)
    offsets = (np.arange(size + 1, dtype=np.int64) * len(one)).astype(odt)
    return pa.Array.from_buffers(
        arrow_type(data_type, offset_type), int(size), [None, pa.py_buffer(offsets), pa.py_buffer(one * size)]
    )


def _offsets_codec(codec: Any) -> VlenOffsetsCodec | None:
    """The :class:`VlenOffsetsCodec` of a chain without array→array codecs, if any."""
    ab = getattr(codec, "array_bytes", None)
    if getattr(codec, "array_array", ()) or not isinstance(ab, VlenOffsetsCodec):
        return None
    return ab


def arrow_offset_type(codec: Any) -> str:
    """The offset width of the Arrow arrays :func:`unit_to_arrow` gives for ``codec``:
    the ZEP 7 codec's (also inside a shard), else ``"int32"`` (``pa.string()``)."""
    from .sharding import ShardingCodec

    offsets_codec = _offsets_codec(codec)
    if offsets_codec is not None:
        return offsets_codec.offset_type
    ab = getattr(codec, "array_bytes", None)
    if isinstance(ab, ShardingCodec):
        return arrow_offset_type(ab.codec_chain)
    return "int32"


def supports_zero_copy(codec: Any, spec: ChunkSpec) -> bool:
    """Whether :func:`unit_to_arrow` gives a stored unit (chunk or shard) of ``spec``
    as zero-copy Arrow arrays in C order: the serializer is ``zarrdask.vlen-offsets``,
    or ``sharding_indexed`` with it inside and inner chunks that span the shard's
    trailing dimensions (so that inner chunks in C order are rows in C order)."""
    from .sharding import ShardingCodec

    if _offsets_codec(codec) is not None:
        return True
    ab = getattr(codec, "array_bytes", None)
    if isinstance(ab, ShardingCodec) and not codec.array_array and not codec.bytes_bytes:
        return ab.chunk_shape[1:] == tuple(spec.shape[1:]) and supports_zero_copy(
            ab.codec_chain, spec.with_shape(ab.chunk_shape)
        )
    return False


def unit_to_arrow(codec: Any, data: Any, spec: ChunkSpec, key: str = "", *, validate: bool = True) -> list["pa.Array"]:
    """A stored chunk or shard (``data``; ``None`` if missing) as pyarrow arrays
    whose concatenation is its elements in C order. Zero-copy when
    :func:`supports_zero_copy`; otherwise the unit is decoded to numpy and
    converted (a copy)."""
    from .sharding import ShardingCodec

    data_type = _kind(spec.dtype)
    size = int(np.prod(spec.shape, dtype=np.int64))
    offsets_codec = _offsets_codec(codec)
    offset_type = arrow_offset_type(codec)
    if data is None:
        return [fill_to_arrow(spec.fill_value, size, data_type=data_type, offset_type=offset_type)]
    if offsets_codec is not None:
        raw = codec.decode_to_bytes(data, spec, key)
        return [offsets_codec.to_arrow(raw, spec, key, validate=validate)]
    ab = getattr(codec, "array_bytes", None)
    if isinstance(ab, ShardingCodec) and supports_zero_copy(codec, spec):
        inner = spec.with_shape(ab.chunk_shape)
        pieces: list[Any] = []
        for piece in ab.inner_chunks(data, spec, key):
            pieces.extend(unit_to_arrow(ab.codec_chain, piece, inner, key, validate=validate))
        return pieces
    pa = _pyarrow()
    values = codec.decode(data, spec, key).reshape(-1)
    return [pa.array(values.tolist(), type=arrow_type(data_type, offset_type))]
