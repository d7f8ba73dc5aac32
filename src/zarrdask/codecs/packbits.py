"""The ``packbits`` codec: array → bytes, packs values of a fixed number of bits.

Spec: zarr-extensions ``codecs/packbits`` ("Configuration parameters",
"Format and algorithm", "Supported data types").

Name: ``packbits``. Tested example configurations (the bytes compared with
zarrs, through zarr-python 3.4's zarrs codec pipeline)::

    {"name": "packbits"}                                              # bool: 1 bit each
    {"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}
    {"name": "packbits", "configuration": {"padding_encoding": "last_byte",
                                           "first_bit": 1, "last_bit": 3}}   # int16

Every component of an element (two for complex types: real, then imaginary)
is read as its ``N``-bit little-endian value; bits ``first_bit`` to
``last_bit`` (default 0 and ``N - 1``; ``null`` means the default) are taken,
``b`` bits each, and the components of the chunk (C order) are laid end to
end as one bit sequence: bit ``j`` of the sequence is bit ``j % 8`` (0 = least
significant) of byte ``j // 8`` — least significant bit first, as zarrs writes
it. The sequence is padded with zero bits to whole bytes; ``padding_encoding``
``"first_byte"`` / ``"last_byte"`` adds one byte holding the number of padding
bits before / after the data (``"none"``, the default, adds nothing). Decoding
puts the ``b`` bits back at ``first_bit`` and sign-extends them to ``N`` bits
for signed integers (``int2``, ``int4``, ``int8`` … ``int64``), zero-extends
them otherwise. A sub-byte value (one per byte, as ml_dtypes stores them) keeps
the bits above ``N`` zero: ``int4`` -1 decodes to the byte ``0x0f``, as
ml_dtypes writes it. (zarrs sign-extends to the whole byte, and for ``int16``
with ``last_bit`` < 15 only to the end of the byte holding ``last_bit``; the
README says ``N`` bits, and so does this module.)

``N`` per data type: ``bool`` 1; ``int2``/``uint2`` 2; ``int4``/``uint4``/
``float4_e2m1fn`` 4; ``float6_e2m3fn``/``float6_e3m2fn`` 6; a complex type
stored as the structured fields ``real``, ``imag`` of one of these (or of any
type below) counts two components of that type; every other integer and float
type its width in bits (``int8`` … ``uint64``, ``float16``/``32``/``64``,
``bfloat16``, ``float8_*``, ``complex64``/``128`` as two float components).
``float16``, ``float8_*`` and numpy's complex types are not in the README's
list; they are packed the same way (zarrs does too). Other types (strings,
datetimes, raw bytes) are refused with a :class:`~zarrdask.errors.CodecError`.

The registry's schema.json spells the fields ``start_byte`` / ``end_byte`` /
``start_bit`` / ``end_bit``; the README (the spec) says ``first_byte`` /
``last_byte`` / ``first_bit`` / ``last_bit``, and only those are accepted.
``"first_byte"`` is the layout of numcodecs' ``packbits`` for ``bool`` except
for the bit order: numcodecs packs the most significant bit first, so its
bytes differ (``numcodecs.packbits`` stays numcodecs' own codec).

A stored chunk must have exactly ``ceil(n * k / 8)`` bytes (plus the padding
byte), ``n`` elements of ``k = components * b`` bits, and a padding byte equal
to the padding: anything else is a :class:`~zarrdask.errors.CorruptChunkError`,
found before anything is allocated. The work is numpy bit operations
(``unpackbits`` / ``packbits`` with ``bitorder="little"``) over blocks of at
most a few MiB of bits; a whole-byte field is a byte copy.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CodecError, CorruptChunkError
from ..metadata.dtypes.float_formats import ml_info
from .abc import ArrayBytesCodec, ChunkSpec
from .buffers import byte_view

__all__ = ["PackBitsCodec", "Layout", "layout_of"]

PADDING_ENCODINGS = ("none", "first_byte", "last_byte")
#: bits of the temporary bit arrays of one block (bounds the memory of a chunk's work)
_BLOCK_BITS = 1 << 23


@dataclass(frozen=True)
class Layout:
    """How a data type's elements are packed: ``components`` per element, each in
    ``container`` bytes holding ``bits`` significant bits, sign-extended or not."""

    container: int
    components: int
    bits: int
    signed: bool


def _scalar_layout(dtype: np.dtype) -> Layout | None:
    if dtype == np.dtype(bool):
        return Layout(1, 1, 1, False)
    if dtype.kind in "iuf" and dtype.itemsize in (1, 2, 4, 8):
        return Layout(dtype.itemsize, 1, 8 * dtype.itemsize, dtype.kind == "i")
    if dtype.kind == "c" and dtype.itemsize in (8, 16):
        return Layout(dtype.itemsize // 2, 2, 4 * dtype.itemsize, False)
    if dtype.kind == "V" and dtype.fields is None:
        info = ml_info(dtype)
        if info is not None:  # floats zero-extended, as the spec says for all but signed integers
            return Layout(dtype.itemsize, 1, info[1], info[0] == "int")
    return None


def layout_of(dtype: np.dtype) -> Layout:
    """The packing of ``dtype`` (:class:`CodecError` if packbits does not support it)."""
    dtype = np.dtype(dtype)
    if dtype.names == ("real", "imag"):  # a complex type as a structured type
        real, imag = dtype.fields["real"], dtype.fields["imag"]  # type: ignore[index]
        part = _scalar_layout(real[0]) if real[0] == imag[0] else None
        if part is not None and part.components == 1 and (real[1], imag[1]) == (0, real[0].itemsize) \
                and dtype.itemsize == 2 * real[0].itemsize:
            return Layout(part.container, 2, part.bits, part.signed)
    elif dtype.fields is None:
        found = _scalar_layout(dtype)
        if found is not None:
            return found
    raise CodecError(
        f"codec 'packbits' does not support the data type {dtype}; expected bool, an integer, "
        "a float or a complex type (README 'Supported data types')"
    )


_UNSET: Any = object()


def _bit(config_name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise CodecError(
            f"codec 'packbits': configuration field {config_name!r} must be a non-negative integer "
            f"or null, found {value!r}"
        )
    return int(value)


class PackBitsCodec(ArrayBytesCodec):
    """Pack each element's bits ``first_bit`` … ``last_bit`` into a bit sequence.

    Parameters
    ----------
    padding_encoding : {"none", "first_byte", "last_byte"}
        Where a byte holding the number of padding bits goes (``"none"``: nowhere).
    first_bit, last_bit : int or None
        The bits of each component to store (``None``: 0 and ``N - 1``).
    """

    name = "packbits"

    def __init__(self, padding_encoding: str = _UNSET, first_bit: int | None = _UNSET,
                 last_bit: int | None = _UNSET) -> None:
        given = {"padding_encoding": padding_encoding, "first_bit": first_bit, "last_bit": last_bit}
        self._config = {k: v for k, v in given.items() if v is not _UNSET}
        encoding = self._config.get("padding_encoding", "none")
        if not isinstance(encoding, str) or encoding not in PADDING_ENCODINGS:
            raise CodecError(
                f"codec 'packbits': configuration field 'padding_encoding' must be one of "
                f"{list(PADDING_ENCODINGS)}, found {encoding!r}"
            )
        self.padding_encoding = encoding
        self.first_bit = _bit("first_bit", self._config.get("first_bit"))
        self.last_bit = _bit("last_bit", self._config.get("last_bit"))
        for key in ("first_bit", "last_bit"):
            if key in self._config:
                self._config[key] = getattr(self, key)
        if self.first_bit is not None and self.last_bit is not None and self.last_bit < self.first_bit:
            raise CodecError(
                f"codec 'packbits': configuration field 'last_bit' ({self.last_bit}) is less than "
                f"'first_bit' ({self.first_bit})"
            )

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "PackBitsCodec":
        config = dict(configuration or {})
        unknown = sorted(set(config) - {"padding_encoding", "first_bit", "last_bit"})
        if unknown:
            raise CodecError(
                f"codec 'packbits': unknown configuration field(s) {unknown}; expected "
                "'padding_encoding', 'first_bit', 'last_bit'"
            )
        return cls(**config)

    def get_config(self) -> dict[str, Any]:
        return dict(self._config)

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self._config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state["config"])  # type: ignore[misc]

    # -- the layout of a chunk -------------------------------------------------
    def _bits(self, spec: ChunkSpec) -> tuple[Layout, int, int]:
        """(layout, first bit, last bit) for chunks of ``spec``."""
        layout = layout_of(spec.dtype)
        first = 0 if self.first_bit is None else self.first_bit
        last = layout.bits - 1 if self.last_bit is None else self.last_bit
        if last >= layout.bits or first >= layout.bits:
            field = "last_bit" if last >= layout.bits else "first_bit"
            raise CodecError(
                f"codec 'packbits': configuration field {field!r} is {max(first, last)}, outside the "
                f"{layout.bits} bits (0..{layout.bits - 1}) of the data type {spec.dtype}"
            )
        if last < first:
            raise CodecError(
                f"codec 'packbits': configuration field 'last_bit' ({last}) is less than 'first_bit' "
                f"({first}) for the data type {spec.dtype}"
            )
        return layout, first, last

    def validate(self, spec: ChunkSpec) -> None:
        self._bits(spec)

    def _payload_size(self, spec: ChunkSpec) -> tuple[int, int]:
        """(bits of the packed elements, their bytes)."""
        layout, first, last = self._bits(spec)
        nbits = math.prod(spec.shape) * layout.components * (last - first + 1)
        return nbits, -(-nbits // 8)

    def encoded_size(self, spec: ChunkSpec) -> int:
        return self._payload_size(spec)[1] + (self.padding_encoding != "none")

    # -- encode / decode ---------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes:
        layout, first, last = self._bits(spec)
        arr = np.asarray(chunk)
        if arr.shape != tuple(spec.shape):
            raise CodecError(f"codec 'packbits': chunk has shape {arr.shape}, expected {spec.shape}")
        if arr.dtype.newbyteorder("=") != np.dtype(spec.dtype).newbyteorder("="):
            raise CodecError(f"codec 'packbits': chunk has data type {arr.dtype}, expected {spec.dtype}")
        if not arr.dtype.isnative:  # packed by value: first in the machine's byte order
            arr = arr.astype(arr.dtype.newbyteorder("="))
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).reshape(-1, layout.container)
        if sys.byteorder == "big" and layout.container > 1:
            raw = raw[:, ::-1]
        nbits, nbytes = self._payload_size(spec)
        padding = nbytes * 8 - nbits
        out = np.zeros(nbytes + (self.padding_encoding != "none"), dtype=np.uint8)
        payload = out[1:] if self.padding_encoding == "first_byte" else out[:nbytes]
        if self.padding_encoding != "none":
            out[0 if self.padding_encoding == "first_byte" else nbytes] = padding
        _pack(raw, first, last, payload)
        return out.tobytes()

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        layout, first, last = self._bits(spec)
        nbits, nbytes = self._payload_size(spec)
        mv = byte_view(data)
        expected = self.encoded_size(spec)
        if mv.nbytes != expected:
            raise CorruptChunkError(
                f"chunk {key!r}: the packbits codec expected {expected} bytes (shape {spec.shape}, "
                f"data type {spec.dtype}, bits {first}..{last}, padding_encoding "
                f"{self.padding_encoding!r}), found {mv.nbytes}"
            )
        stored = np.frombuffer(mv, dtype=np.uint8)
        payload = stored[1:] if self.padding_encoding == "first_byte" else stored[:nbytes]
        if self.padding_encoding != "none":
            found = int(stored[0 if self.padding_encoding == "first_byte" else nbytes])
            if found != nbytes * 8 - nbits:
                raise CorruptChunkError(
                    f"chunk {key!r}: the packbits padding byte ({self.padding_encoding}) says {found} "
                    f"padding bits, expected {nbytes * 8 - nbits}"
                )
        raw = np.zeros((math.prod(spec.shape) * layout.components, layout.container), dtype=np.uint8)
        _unpack(payload, first, last, layout, raw)
        if sys.byteorder == "big" and layout.container > 1:
            raw = np.ascontiguousarray(raw[:, ::-1])
        native = spec.dtype if spec.dtype.isnative else spec.dtype.newbyteorder("=")
        return raw.reshape(-1).view(native).reshape(spec.shape)


def _block_rows(row_bits: int) -> int:
    """Components per block: a multiple of 8 (each block starts on a byte of the
    packed sequence) whose bit arrays stay within :data:`_BLOCK_BITS`."""
    return max(8, (_BLOCK_BITS // max(row_bits, 1)) // 8 * 8)


def _pack(raw: np.ndarray, first: int, last: int, payload: np.ndarray) -> None:
    """Pack bits ``first..last`` of each row of ``raw`` (little-endian component
    bytes) into ``payload``."""
    rows, width = raw.shape
    b = last - first + 1
    if first % 8 == 0 and b % 8 == 0:  # whole bytes: a byte copy
        payload[:] = raw[:, first // 8:(last + 1) // 8].reshape(-1)
        return
    step = _block_rows(8 * width)
    lo, hi = first // 8, last // 8 + 1  # only the bytes holding the field
    for start in range(0, rows, step):
        block = raw[start:start + step, lo:hi]
        bits = np.unpackbits(block, axis=1, bitorder="little")[:, first - 8 * lo:last + 1 - 8 * lo]
        packed = np.packbits(bits.reshape(-1), bitorder="little")
        offset = start * b // 8
        payload[offset:offset + packed.size] = packed


def _unpack(payload: np.ndarray, first: int, last: int, layout: Layout, raw: np.ndarray) -> None:
    """Inverse of :func:`_pack` into the zeroed ``raw``, extending the sign bit up
    to ``layout.bits`` for signed types."""
    rows, width = raw.shape
    b = last - first + 1
    extend = layout.signed and last + 1 < layout.bits
    if first % 8 == 0 and b % 8 == 0 and not extend:
        raw[:, first // 8:(last + 1) // 8] = payload.reshape(rows, b // 8)
        return
    step = _block_rows(8 * width)
    for start in range(0, rows, step):
        count = min(step, rows - start)
        offset = start * b // 8
        bits = np.unpackbits(payload[offset:offset + -(-count * b // 8)], bitorder="little", count=count * b)
        bits = bits.reshape(count, b)
        full = np.zeros((count, 8 * width), dtype=np.uint8)
        full[:, first:last + 1] = bits
        if extend:
            full[:, last + 1:layout.bits] = bits[:, -1:]
        raw[start:start + count] = np.packbits(full, axis=1, bitorder="little")
