"""The ``bitround`` codec: array → array, rounds floating-point mantissas and integers.

Spec: zarr-extensions ``codecs/bitround`` ("Configuration parameters",
"Format and algorithm", "Supported data types", "Sample Data").

Name: ``bitround``. Tested example configuration (with the registry's sample
arrays ``bitround_float32.zarr`` and ``bitround_uint8.zarr``)::

    [{"name": "bitround", "configuration": {"keepbits": 3}},
     {"name": "bytes", "configuration": {"endian": "little"}}]

``keepbits`` is an integer >= 1 ("Must be at least 1"; the registry's
schema.json says ``minimum: 0``, the README wins).

Floating point (``float16``, ``float32``, ``float64``, ``bfloat16``; complex
``complex64``/``complex128`` and a complex type stored as a structured data type
with fields ``real`` and ``imag`` of one of those float types, each part
rounded on its own): the mantissa is rounded to ``keepbits`` bits, round half
to even on the mantissa bits — the arithmetic of ``numcodecs.BitRound``
(``x += ((x >> drop) & 1) + 2**(drop-1) - 1; x &= ~(2**drop - 1)`` on the bits,
a carry running into the exponent as IEEE rounding does, so the largest finite
values may round to infinity). NaN and infinity (exponent all ones) are left
exactly as they are; numcodecs would round a NaN's payload (and can turn a
signalling NaN into infinity). ``keepbits`` at or above the number of mantissa
bits (10, 23, 52, 7) leaves the values unchanged, as zarrs does (numcodecs
raises instead for more bits than the mantissa has).

Integers (``int8`` … ``uint64``; ``datetime64`` / ``timedelta64`` as
``int64``): ``keepbits`` bits are kept from the most significant set bit of
the value's magnitude; the lower bits are rounded half to even and set to zero,
and the sign is put back. Where rounding up would leave the type's range, the
value is rounded down instead (the low bits just cleared): ``uint8`` with
keepbits 3 rounds 11 → 12, 100 → 96, 123 → 128, 208 → 192, 209 → 224 and
255 → 224, exactly the sample table (zarrs' ``round_bits8`` saturating at 255
gives the same), and ``int8`` 127 → 112, -127 → -128, -100 → -96. Values with
at most ``keepbits`` significant bits are unchanged (NaT too), so any
``keepbits`` is valid for integers. zarrs rounds a signed integer's two's
complement bits as if unsigned (``int8`` -1 → -32, 127 → -128); for
non-negative values that stay in range both agree.

Encoding returns a rounded copy; decoding is the identity (the chunk as given).
The fill value is kept as it is: bitround changes neither data type nor shape.

The deprecated alias ``numcodecs.bitround`` stays on the numcodecs bridge
(:mod:`~zarrdask.codecs.numcodecs_v3`): there it is numcodecs' own codec,
floats only, rewritten under the name it was read with, as zarr-python reads
and writes it. For finite floats both give the same bytes.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import CodecError
from .abc import ArrayArrayCodec, ChunkSpec

__all__ = ["BitroundCodec", "round_float_bits", "round_int_bits", "round_signed_bits"]

_UINT = {1: np.dtype("u1"), 2: np.dtype("u2"), 4: np.dtype("u4"), 8: np.dtype("u8")}
#: numpy float item size -> (mantissa bits, exponent mask)
_IEEE = {2: (10, 0x7C00), 4: (23, 0x7F800000), 8: (52, 0x7FF0000000000000)}
_BFLOAT16 = (7, 0x7F80)


def _ml_dtype(name: str) -> np.dtype | None:
    try:
        import ml_dtypes
    except ImportError:  # optional: only its data types need it
        return None
    t = getattr(ml_dtypes, name, None)
    return None if t is None else np.dtype(t)


def _round_fixed(u: np.ndarray, drop: int) -> np.ndarray:
    """``u`` (unsigned) with its lowest ``drop`` >= 1 bits rounded half to even
    (numcodecs' arithmetic; wraps on overflow, which no finite float reaches)."""
    t = u.dtype.type
    low = (t(1) << t(drop)) - t(1)
    rounded = u + ((u >> t(drop)) & t(1)) + (low >> t(1))
    rounded &= ~low
    return rounded


def round_float_bits(u: np.ndarray, keepbits: int, mantissa_bits: int, exponent_mask: int) -> np.ndarray:
    """The bits ``u`` (an unsigned view of IEEE-style floats) with mantissas
    rounded to ``keepbits`` bits; NaN and infinity unchanged."""
    if keepbits >= mantissa_bits:
        return u
    rounded = _round_fixed(u, mantissa_bits - keepbits)
    mask = u.dtype.type(exponent_mask)
    return np.where((u & mask) == mask, u, rounded)


def bit_length(u: np.ndarray) -> np.ndarray:
    """The number of significant bits of each element of the unsigned array ``u``."""
    x = u.copy()
    n = np.zeros(u.shape, dtype=np.uint8)
    for shift in (32, 16, 8, 4, 2, 1):
        if shift < 8 * u.dtype.itemsize:
            big = (x >> u.dtype.type(shift)) != 0
            np.right_shift(x, u.dtype.type(shift), out=x, where=big)
            n += big.astype(np.uint8) * np.uint8(shift)
    return n + (x != 0).astype(np.uint8)


def round_int_bits(u: np.ndarray, keepbits: int, limit: Any = None) -> np.ndarray:
    """The unsigned integers ``u`` rounded to ``keepbits`` bits from their most
    significant set bit (half to even); where the rounded value would exceed
    ``limit`` (a scalar or one per element; default: the type's maximum) it is
    rounded down instead."""
    if keepbits >= 8 * u.dtype.itemsize:
        return u
    drop = bit_length(u).astype(np.int16) - keepbits
    rounds = drop > 0
    if not rounds.any():
        return u
    drop_t = np.maximum(drop, 1).astype(u.dtype)
    one = u.dtype.type(1)
    low = (one << drop_t) - one
    up = u + ((u >> drop_t) & one) + (low >> one)
    over = up < u  # wrapped past the type's maximum
    up &= ~low
    if limit is not None:
        over |= up > limit
    out = np.where(over, u & ~low, up)
    return np.where(rounds, out, u)


def round_signed_bits(u: np.ndarray, keepbits: int) -> np.ndarray:
    """The two's complement integers ``u`` (an unsigned view) rounded in
    magnitude (:func:`round_int_bits`), staying within the signed range."""
    t = u.dtype.type
    top = t(1) << t(8 * u.dtype.itemsize - 1)
    negative = u >= top
    magnitude = np.where(negative, ~u + t(1), u)
    rounded = round_int_bits(magnitude, keepbits, np.where(negative, top, top - t(1)))
    return np.where(negative, ~rounded + t(1), rounded)


def _float_rounder(dtype: np.dtype) -> tuple[int, int] | None:
    """(mantissa bits, exponent mask) of a floating-point component type."""
    if dtype.kind == "f" and dtype.itemsize in _IEEE:
        return _IEEE[dtype.itemsize]
    bf16 = _ml_dtype("bfloat16")
    if bf16 is not None and dtype == bf16:
        return _BFLOAT16
    return None


def _component_rounder(dtype: np.dtype, keepbits: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """A function rounding an array of the non-structured type ``dtype`` (its
    bits, as a new unsigned array or the input itself), or ``None``."""
    if dtype.kind == "c" and dtype.itemsize // 2 in _IEEE:
        part = np.dtype(f"f{dtype.itemsize // 2}")
        inner = _component_rounder(part, keepbits)
        return lambda a: inner(np.ascontiguousarray(a).view(part))  # type: ignore[misc]
    floating = _float_rounder(dtype)
    unsigned = _UINT.get(dtype.itemsize)
    if floating is not None and unsigned is not None:
        return lambda a: round_float_bits(a.view(unsigned), keepbits, *floating)
    if dtype.kind == "u" and unsigned is not None:
        return lambda a: round_int_bits(a.view(unsigned), keepbits)
    if dtype.kind in "imM" and unsigned is not None:
        return lambda a: round_signed_bits(a.view(unsigned), keepbits)
    return None


def _complex_fields(dtype: np.dtype) -> np.dtype | None:
    """The part type of a complex type stored as fields ``real`` and ``imag``."""
    if dtype.names != ("real", "imag"):
        return None
    real, imag = dtype.fields["real"][0], dtype.fields["imag"][0]  # type: ignore[index]
    return real if real == imag and _float_rounder(real) is not None else None


class BitroundCodec(ArrayArrayCodec):
    """Round floating-point mantissas (or integers from their most significant
    set bit) to ``keepbits`` bits; lossy, keeps data type and shape.

    Parameters
    ----------
    keepbits : int
        Bits to keep, at least 1.
    """

    name = "bitround"

    def __init__(self, keepbits: int) -> None:
        if isinstance(keepbits, (bool, np.bool_)) or not isinstance(keepbits, (int, np.integer)):
            raise CodecError(f"codec 'bitround': configuration field 'keepbits' must be an integer, found {keepbits!r}")
        if keepbits < 1:
            raise CodecError(f"codec 'bitround': configuration field 'keepbits' must be at least 1, found {keepbits}")
        self.keepbits = int(keepbits)

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "BitroundCodec":
        config = dict(configuration or {})
        if "keepbits" not in config:
            raise CodecError("codec 'bitround': configuration field 'keepbits' is required")
        keepbits = config.pop("keepbits")
        if config:
            raise CodecError(f"codec 'bitround': unknown configuration field(s) {sorted(config)}; expected 'keepbits'")
        return cls(keepbits)

    def get_config(self) -> dict[str, Any]:
        return {"keepbits": self.keepbits}

    def _rounder(self, dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
        part = _complex_fields(dtype)
        if part is not None:
            inner = _component_rounder(part, self.keepbits)
            assert inner is not None

            def fields(a: np.ndarray) -> np.ndarray:
                out = a.copy()
                for name in ("real", "imag"):
                    out[name] = inner(out[name]).view(part)
                return out

            return fields
        rounder = _component_rounder(dtype, self.keepbits) if dtype.fields is None else None
        if rounder is None:
            raise CodecError(
                f"codec 'bitround' does not support the data type {dtype}; expected a float "
                "(float16/32/64, bfloat16), a complex type or an integer (int8..uint64, datetime64, timedelta64)"
            )
        return lambda a: rounder(np.ascontiguousarray(a)).view(dtype).reshape(a.shape)

    def validate(self, spec: ChunkSpec) -> None:
        self._rounder(np.dtype(spec.dtype))

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        dtype = np.dtype(spec.dtype)
        arr = np.asarray(chunk)
        if arr.dtype != dtype:
            raise CodecError(f"codec 'bitround': chunk has data type {arr.dtype}, expected {dtype}")
        return self._rounder(dtype)(arr)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return chunk
