"""The ``scale_offset`` codec: array → array, ``out = (in - offset) * scale``.

Spec: zarr-extensions ``codecs/scale_offset/README.md`` — "Codec metadata"
(``offset``, ``scale``: optional, in the fill value JSON encoding of the input
data type; the whole ``configuration`` may be omitted: a no-op), "Algorithm"
(encoding ``(in - offset) * scale``, decoding ``in / scale + offset``, in the
arithmetic of the input data type, a non-representable intermediate or final
value an error; the fill value transformed the same way), "Implementation
notes" ("Fill value handling").

Name: ``scale_offset``. Tested example configurations (the README's three
examples, byte for byte at array level)::

    {"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}   # float32
    {"name": "scale_offset", "configuration": {"offset": 1000}}               # uint16, then cast_value uint8
    {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}} # float64, NaN fill

Defined for the integer and floating-point types (numpy's and the ``ml_dtypes``
ones, :mod:`.numeric_types`); any other data type (bool, complex, strings,
raw bytes, structs, datetimes) is a :class:`~zarrdask.errors.CodecError` naming it.

What "the arithmetic semantics of the input array's data type" and "not
representable" mean here (zarrdask's reading, the same as zarr-python 3.4's
where it decides):

* Integers: exact integer arithmetic; a difference, product, quotient or sum
  outside the type's range is an error (no wrap-around), and so is a division
  with a remainder (``in / scale`` is not an integer: not representable). A
  missing ``offset`` / ``scale`` is no operation at all (not ``- 0`` / ``* 1``),
  so a type without a zero (``float8_e8m0fnu``) works with ``scale`` alone.
* Floats: each operation rounded to the type (round to nearest even, IEEE 754);
  NaN and ±Infinity in the data pass through as IEEE arithmetic makes them.
  A finite value whose result overflows (to ±Infinity, to NaN in a type without
  infinities, or beyond the range of a type with neither) is an error — the
  result is not the value the formula gives. ``ml_dtypes`` floats compute each
  step in float64 and round once to the type (exact: float64 has more than twice
  their precision).
* ``scale`` must not be zero (decoding would divide by it) and ``offset`` and
  ``scale`` must be finite: both checked when the codec meets the data type
  (``validate``), as is that both are values of that type (``0.1`` is not an
  ``int16``).

Encoding errors are :class:`~zarrdask.errors.CodecError`, decoding errors (a
stored value that does not decode into the type)
:class:`~zarrdask.errors.CorruptChunkError`; both name the first such value and
how many there are. The fill value is transformed in ``encoded_spec``; a fill
value the encoding cannot transform (``0`` for ``uint16`` with ``offset`` 1000)
is a :class:`~zarrdask.errors.CodecError` naming it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CodecError, CorruptChunkError
from .abc import ArrayArrayCodec, ChunkSpec
from .cast_value import cast_values
from .numeric_types import NumericType, numeric_type, scalar_from_json

__all__ = ["ScaleOffsetCodec"]

NAME = "scale_offset"


def _floor_div(a: int, b: int) -> int:
    return a // b


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _preimage(lo: int, hi: int, scale: int) -> tuple[int, int]:
    """The integers ``v`` with ``lo <= v * scale <= hi``."""
    if scale > 0:
        return _ceil_div(lo, scale), _floor_div(hi, scale)
    return _ceil_div(hi, scale), _floor_div(lo, scale)


class _Bound:
    """``offset`` and ``scale`` as values of one data type, and the arithmetic on it."""

    def __init__(self, t: NumericType, offset: np.generic | None, scale: np.generic | None) -> None:
        self.t, self.offset, self.scale = t, offset, scale
        if t.is_int:
            self.o = None if offset is None else int(np.asarray(offset).astype(np.int64)) \
                if t.dtype.kind not in "iu" else int(offset)
            self.s = None if scale is None else int(np.asarray(scale).astype(np.int64)) \
                if t.dtype.kind not in "iu" else int(scale)
        else:
            self.o = None if offset is None else float(np.asarray(offset).astype(np.float64))
            self.s = None if scale is None else float(np.asarray(scale).astype(np.float64))

    @staticmethod
    def fail(error: type[Exception], verb: str, x: np.ndarray, bad: np.ndarray, t: NumericType, why: str) -> None:
        first = x[bad].reshape(-1)[0]
        count = int(np.count_nonzero(bad))
        value = int(np.asarray(first).astype(np.int64)) if t.is_int and t.dtype.kind not in "iu" else first.item() \
            if t.is_int else float(np.asarray(first).astype(np.float64))
        raise error(f"codec {NAME!r}: cannot {verb} the value {value!r} ({t.name}): {why} "
                    f"({count} such value{'s' if count != 1 else ''} in the chunk)")

    # -- integers --------------------------------------------------------------
    def _int_check(self, x: np.ndarray, lo: int, hi: int, error: type[Exception], verb: str, why: str) -> None:
        t = self.t
        if x.size == 0 or (lo <= t.lo and t.hi <= hi):
            return
        if lo > hi:
            bad = np.ones(x.shape, dtype=bool)
        else:
            bad = np.zeros(x.shape, dtype=bool)
            if lo > t.lo:
                bad |= x < lo
            if hi < t.hi:
                bad |= x > hi
        if bad.any():
            self.fail(error, verb, x, bad, t, why)

    def _int_work(self, x: np.ndarray) -> np.ndarray:
        """``x`` in a numpy integer type wide enough for the checked arithmetic."""
        return x.astype(np.int64) if self.t.dtype.kind not in "iu" else x

    def encode_int(self, x: np.ndarray) -> np.ndarray:
        t, o, s = self.t, self.o, self.s
        lo, hi = t.lo, t.hi
        if s is not None:  # (x - o) * s in range
            lo, hi = _preimage(lo, hi, s)
        if o is not None:  # x - o in range, and the product's bounds shifted back by o
            lo, hi = max(lo + o, t.lo + o), min(hi + o, t.hi + o)
        w = self._int_work(x)
        self._int_check(w, lo, hi, CodecError, "encode",
                        f"(value - {o or 0}) * {1 if s is None else s} is out of the range [{t.lo}, {t.hi}]")
        if o is not None:
            w = w - w.dtype.type(o)
        if s is not None:
            w = w * w.dtype.type(s)
        return w.astype(t.dtype, copy=False)

    def decode_int(self, x: np.ndarray) -> np.ndarray:
        t, o, s = self.t, self.o, self.s
        w = self._int_work(x)
        if s is not None and s not in (1, -1) and w.size:
            bad = (w % w.dtype.type(abs(s))) != 0
            if bad.any():
                self.fail(CorruptChunkError, "decode", w, bad, t,
                          f"value / {s} is not an integer (not representable in {t.name})")
        qlo, qhi = t.lo, t.hi  # the quotient, then the sum, in range
        if o is not None:
            qlo, qhi = max(qlo, t.lo - o), min(qhi, t.hi - o)
        lo, hi = (qlo, qhi) if s is None else (min(qlo * s, qhi * s), max(qlo * s, qhi * s))
        self._int_check(w, lo, hi, CorruptChunkError, "decode",
                        f"value / {1 if s is None else s} + {o or 0} is out of the range [{t.lo}, {t.hi}]")
        if s is not None and s != 1:
            w = w // w.dtype.type(s) if s != -1 else -w
        if o is not None:
            w = w + w.dtype.type(o)
        return w.astype(t.dtype, copy=False)

    # -- floats ------------------------------------------------------------------
    def _float_steps(self, x: np.ndarray, steps: list[tuple[str, float]], error: type[Exception],
                     verb: str) -> np.ndarray:
        t = self.t
        numpy_float = t.dtype.kind == "f" and t.dtype.name in ("float16", "float32", "float64")
        with np.errstate(over="ignore", invalid="ignore"):
            if numpy_float:
                y = x
                for op, v in steps:
                    y = _apply(op, y, t.dtype.type(v))
                bad = ~np.isfinite(y) & np.isfinite(x)
                if bad.any():
                    self.fail(error, verb, x, bad, t, f"the result overflows {t.name}")
                return y
            y = x
            for op, v in steps:  # each step in float64, rounded once to the type
                try:
                    y = cast_values(_apply(op, y.astype(np.float64), np.float64(v)), np.float64, t.dtype,
                                    error=error, verb=verb)
                except (CodecError, CorruptChunkError) as err:
                    raise error(f"codec {NAME!r}: cannot {verb} a value of data type {t.name}: the step "
                                f"'{op} {v}' gives a value that is not representable: {err}") from None
            return y

    def encode_float(self, x: np.ndarray) -> np.ndarray:
        steps = ([("-", self.o)] if self.o is not None else []) + ([("*", self.s)] if self.s is not None else [])
        return self._float_steps(x, steps, CodecError, "encode")

    def decode_float(self, x: np.ndarray) -> np.ndarray:
        steps = ([("/", self.s)] if self.s is not None else []) + ([("+", self.o)] if self.o is not None else [])
        return self._float_steps(x, steps, CorruptChunkError, "decode")

    def encode(self, x: np.ndarray) -> np.ndarray:
        if self.o is None and self.s is None:
            return x
        return self.encode_int(x) if self.t.is_int else self.encode_float(x)

    def decode(self, x: np.ndarray) -> np.ndarray:
        if self.o is None and self.s is None:
            return x
        return self.decode_int(x) if self.t.is_int else self.decode_float(x)


def _apply(op: str, a: np.ndarray, b: Any) -> np.ndarray:
    if op == "-":
        return a - b
    if op == "+":
        return a + b
    if op == "*":
        return a * b
    return a / b


def _check_json_scalar(field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise CodecError(f"codec {NAME!r}: configuration field {field!r}: found {value!r}, expected a scalar "
                         "in the fill value JSON encoding of the array's data type (a number or a string)")


class ScaleOffsetCodec(ArrayArrayCodec):
    """``encode: (x - offset) * scale``, ``decode: x / scale + offset``, in the array's data type.

    Parameters
    ----------
    offset, scale : number or str, optional
        Fill-value JSON of the input data type (``5``, ``0.1``, ``"NaN"``,
        ``"0x3dcccccd"``); absent: no subtraction / no multiplication.
    """

    name = NAME

    def __init__(self, offset: Any = None, scale: Any = None) -> None:
        for field, value in (("offset", offset), ("scale", scale)):
            if value is not None:
                _check_json_scalar(field, value)
        self.offset, self.scale = offset, scale
        self._bound: dict[np.dtype, _Bound] = {}

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "ScaleOffsetCodec":
        config = {} if configuration is None else configuration
        if not isinstance(config, dict):
            raise CodecError(f"codec {NAME!r}: 'configuration' must be an object, found {config!r}")
        extra = sorted(set(config) - {"offset", "scale"})
        if extra:
            raise CodecError(f"codec {NAME!r}: unknown configuration field(s) {extra}; expected 'offset', 'scale'")
        for field in ("offset", "scale"):
            if field in config:
                if config[field] is None:
                    raise CodecError(f"codec {NAME!r}: configuration field {field!r}: found None, "
                                     "expected a scalar (omit the field for the default)")
        return cls(**config)

    def get_config(self) -> dict[str, Any]:
        return {k: v for k, v in (("offset", self.offset), ("scale", self.scale)) if v is not None}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_bound"] = {}
        return state

    def _bind(self, dtype: np.dtype) -> _Bound:
        found = self._bound.get(dtype)
        if found is None:
            t = numeric_type(dtype, NAME, "the array data type (the codec's input)")
            offset = None if self.offset is None else scalar_from_json(self.offset, t, NAME, "offset")
            scale = None if self.scale is None else scalar_from_json(self.scale, t, NAME, "scale")
            found = _Bound(t, offset, scale)
            if found.s is not None and found.s == 0:
                raise CodecError(f"codec {NAME!r}: configuration field 'scale': found {self.scale!r}, "
                                 "expected a non-zero value (decoding divides by it)")
            for field, v in (("offset", found.o), ("scale", found.s)):
                if v is not None and not t.is_int and not np.isfinite(v):
                    raise CodecError(f"codec {NAME!r}: configuration field {field!r}: found "
                                     f"{getattr(self, field)!r}, expected a finite number")
            self._bound[dtype] = found
        return found

    def _encoded_fill(self, spec: ChunkSpec) -> Any:
        bound = self._bind(spec.dtype)
        if spec.fill_value is None:
            return None
        fill = np.asarray(spec.fill_value).astype(spec.dtype).reshape(1)
        try:
            return bound.encode(fill)[0]
        except CodecError as err:
            raise CodecError(f"codec {NAME!r}: the fill value {fill[0]!r} cannot be encoded: {str(err).removeprefix(f'codec {NAME!r}: ')}") from None

    def validate(self, spec: ChunkSpec) -> None:
        self._encoded_fill(spec)

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec(spec.shape, spec.dtype, self._encoded_fill(spec), spec.order, spec.write_empty, spec.read_missing)

    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._bind(spec.dtype).encode(np.asarray(chunk, dtype=spec.dtype))

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._bind(spec.dtype).decode(np.asarray(chunk, dtype=spec.dtype))
