"""The ``cast_value`` codec: array → array, converts each value to another
real-number data type by its numerical value (not its bits).

Spec: zarr-extensions ``codecs/cast_value/README.md`` — "Procedure" (the
ordered conditions: ``scalar_map``, exact representability, rounding then
``out_of_range``; otherwise an error), "Special values", "Codec metadata"
(``data_type``, ``rounding``, ``out_of_range``, ``scalar_map``).

Name: ``cast_value``. Tested example configuration (the README's "NumPy
compatibility" example, and the one in ``scale_offset``'s "Float64 to uint8
with NaN preservation")::

    {"name": "cast_value", "configuration": {
        "data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap",
        "scalar_map": {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]}}}

(``"+Infinity"`` is not a fill value form of ``float64``; that README example is
refused with a :class:`~zarrdask.errors.CodecError` naming the entry — write
``"Infinity"``.)

What zarrdask does, to the letter of the README:

* Types: every integer and floating-point type (numpy's and the ``ml_dtypes``
  ones, :mod:`.numeric_types`), on both sides; anything else is a
  :class:`~zarrdask.errors.CodecError` naming the data type.
* ``rounding`` (default ``"nearest-even"``) is exact for every pair of types,
  including ``int64``/``uint64`` → ``float64``/``float32`` (the integer is split
  into an exact float64 pair first) and wider → narrower floats (rounded once,
  from the exact value, never twice). Rounding is done as if the target's
  exponent range were unbounded; a rounded value beyond the finite range is out
  of range (as ``cast-value-rs``, zarr-python's backend, does: ``1e39`` to
  ``float32`` with ``"towards-zero"`` is out of range, not ``3.4e38``).
* ``out_of_range``: absent → a value out of range after rounding is an error;
  ``"clamp"`` → the target's minimum / maximum, or ±Infinity when the target has
  infinities; ``"wrap"`` → modulo ``2**N`` in two's complement (``N`` the
  target's bits; sub-byte types wrap at their own width); ``"wrap"`` with a
  floating-point ``data_type`` is refused in ``from_config``. Decoding into a
  floating-point array type under ``"wrap"`` has no wrap to apply: an out of
  range value there is an error (as in ``cast-value-rs``).
* Special values: NaN and ±Infinity carry over where the target has them
  (a NaN payload is not kept); into a type without them they are an error
  unless ``scalar_map`` maps them — ``"clamp"`` does not apply to them. Signed
  zero is kept (``-0.0`` stays ``-0.0``; ``float8_*fnuz`` types have no ``-0``
  and get ``0``, the same number).
* ``scalar_map``: keys in the fill-value JSON of the input side, values in that
  of the output side (encode: array type → ``data_type``; decode: the
  reverse); checked when the codec meets the array's data type (``validate``).
  A key matches equal numbers (``0`` matches ``-0.0``); ``"NaN"`` matches every
  NaN. The first entry of a repeated key wins.
* The fill value is cast to ``data_type`` (``encoded_spec``) and must come back
  equal (NaN to NaN) when decoded; otherwise ``validate`` / ``encoded_spec``
  raise :class:`~zarrdask.errors.CodecError` naming the fill value.

Errors on data: a value that cannot be encoded is a
:class:`~zarrdask.errors.CodecError`, a stored value that cannot be decoded a
:class:`~zarrdask.errors.CorruptChunkError`; both name the first such value,
the data types, the reason and how many values fail.

Everything is vectorised numpy on float64 (or int64/uint64) intermediates:
rounding computes each value's quantum in the target (from its exponent),
rounds the scaled value with the mode, and scales back exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CodecError, CorruptChunkError, MetadataError
from ..metadata.dtypes.api import data_type_to_v3, resolve_data_type_v3
from .abc import ArrayArrayCodec, ChunkSpec
from .numeric_types import NumericType, numeric_type, scalar_from_json

__all__ = ["CastValueCodec", "cast_values", "ROUNDING_MODES", "OUT_OF_RANGE_MODES"]

NAME = "cast_value"
ROUNDING_MODES = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
OUT_OF_RANGE_MODES = ("clamp", "wrap")
_FIELDS = ("data_type", "rounding", "out_of_range", "scalar_map")

#: parsed scalar maps: ``[(key, value), ...]`` as numpy scalars, first occurrence of a key kept
ScalarPairs = tuple[tuple[np.generic, np.generic], ...]


# --------------------------------------------------------------------------- rounding


def _exact_pair(x: np.ndarray, src: NumericType) -> tuple[np.ndarray, np.ndarray | None]:
    """``x`` as float64 ``s`` plus an exact residual ``e`` (``x == s + e``), ``e``
    ``None`` when every value is exact in float64 (all but 64-bit integers)."""
    if not (src.is_int and src.bits > 53):
        return x.astype(np.float64), None
    hi = (x >> 32).astype(np.float64) * 2.0**32  # exact: |x >> 32| < 2**32
    lo = (x & 0xFFFFFFFF).astype(np.float64)
    s = hi + lo  # one correctly rounded addition; TwoSum recovers its error exactly
    b = s - hi
    e = (hi - (s - b)) + (lo - b)
    return s, e


def _round_integral(s: np.ndarray, rounding: str) -> np.ndarray:
    """Float64 values rounded to integers (exact)."""
    if rounding == "nearest-even":
        return np.rint(s)
    if rounding == "towards-zero":
        return np.trunc(s)
    if rounding == "towards-positive":
        return np.ceil(s)
    if rounding == "towards-negative":
        return np.floor(s)
    t = np.trunc(s)  # nearest-away; s - t is exact
    return np.where(np.abs(s - t) >= 0.5, t + np.sign(s), t)


def _round_ieee(s: np.ndarray, dst: NumericType, rounding: str) -> np.ndarray | None:
    """Float64 values (exact in float64) rounded onto a numpy float type: numpy's
    cast (round to nearest even, IEEE 754), then one step of one ulp where the
    mode rounds the other way. ``None`` where a value overflows the type (the
    general :func:`_round` decides those)."""
    y = s.astype(dst.dtype)
    yf = y.astype(np.float64)
    if np.isinf(yf).any():
        return None
    if rounding == "nearest-even":
        return yf
    if rounding == "towards-negative":
        y = np.where(yf > s, np.nextafter(y, dst.dtype.type(-np.inf)), y)
    elif rounding == "towards-positive":
        y = np.where(yf < s, np.nextafter(y, dst.dtype.type(np.inf)), y)
    elif rounding == "towards-zero":
        y = np.where(np.abs(yf) > np.abs(s), np.nextafter(y, dst.dtype.type(0)), y)
    else:  # nearest-away: a tie (s midway between y and its neighbour on s's side) goes to the larger magnitude
        other = np.nextafter(y, np.where(s > yf, dst.dtype.type(np.inf), dst.dtype.type(-np.inf)))
        of = other.astype(np.float64)
        tie = (yf != s) & (s - yf == of - s) & (np.abs(of) > np.abs(yf))
        y = np.where(tie, other, y)
    return y.astype(np.float64)


def _round(s: np.ndarray, e: np.ndarray | None, dst: NumericType, rounding: str) -> np.ndarray:
    """The exact value ``s + e`` rounded with ``rounding`` onto ``dst``'s values (with
    an unbounded exponent range), as float64 (exact)."""
    if dst.is_int and e is None:
        return _round_integral(s, rounding)
    if e is None and dst.dtype.kind == "f" and dst.dtype.name in ("float16", "float32", "float64"):
        found = _round_ieee(s, dst, rounding)
        if found is not None:
            return found
    if dst.is_int:
        qexp = np.zeros(s.shape, dtype=np.int32)
        t = s
    else:
        m, k = np.frexp(s)
        k = k - 1  # s = 1.f * 2**k
        if e is not None:  # s a power of two rounded up from just below it: one binade lower
            k = np.where((np.abs(m) == 0.5) & (e * s < 0), k - 1, k)
        qexp = np.maximum(k, dst.emin) - (dst.precision - 1)  # the quantum is 2**qexp
        t = np.ldexp(s, -qexp)
    i = np.floor(t)
    f = t - i  # exact, in [0, 1)
    if e is None:
        low, exact = i, f == 0
        half = np.sign(f - 0.5)
        half[exact] = -1
    else:  # f is coarser than e except where f == 0 or f == 1/2
        eq = np.ldexp(e, -qexp)
        on = f == 0
        low = np.where(on & (e < 0), i - 1, i)
        exact = on & (e == 0)
        half = np.where(on, np.where(e > 0, np.sign(2 * eq - 1), np.where(e < 0, np.sign(2 * eq + 1), -1)),
                        np.where(f == 0.5, np.sign(e), np.sign(f - 0.5)))
    up = low + 1
    if rounding == "towards-negative":
        r = low
    elif rounding == "towards-positive":
        r = np.where(exact, low, up)
    elif rounding == "towards-zero":
        r = np.where(exact | ~np.signbit(s), low, up)
    elif rounding == "nearest-even":
        r = np.where(half < 0, low, np.where(half > 0, up, np.where(np.fmod(low, 2) == 0, low, up)))
    else:  # nearest-away
        r = np.where(half < 0, low, np.where(half > 0, up, np.where(np.signbit(s), low, up)))
    if dst.is_int:
        return r
    out = np.ldexp(r, qexp)
    return np.where(out == 0, np.copysign(0.0, s), out)  # a negative value rounded to zero is -0.0


# --------------------------------------------------------------------------- wrapping


def _residue(r: np.ndarray) -> np.ndarray:
    """Integral float64 values modulo ``2**64`` as uint64 (exact for any magnitude)."""
    a = np.fmod(r, 2.0**64)  # exact
    big = np.abs(a) >= 2.0**63
    a = np.where(big, a - np.copysign(2.0**63, a), a)
    u = a.astype(np.int64).astype(np.uint64)
    return u + np.where(big, np.uint64(2**63), np.uint64(0))


def _wrap(u: np.ndarray, dst: NumericType) -> np.ndarray:
    """uint64 residues modulo ``2**64`` as values of the integer type ``dst`` (two's complement)."""
    n = dst.bits
    if n < 64:
        u = u & np.uint64(2**n - 1)
    if dst.lo == 0:
        return u.astype(dst.dtype)
    if n == 64:
        return u.view(np.int64).astype(dst.dtype, copy=False)
    v = u.astype(np.int64)
    return (v - np.where(u >= np.uint64(2 ** (n - 1)), np.int64(2**n), np.int64(0))).astype(dst.dtype)


# --------------------------------------------------------------------------- the cast


class _Cast:
    """One cast of an array from ``src`` to ``dst`` (the settings and where errors go)."""

    def __init__(self, src: NumericType, dst: NumericType, rounding: str, out_of_range: str | None,
                 pairs: ScalarPairs, error: type[Exception], verb: str) -> None:
        self.src, self.dst, self.rounding, self.out_of_range = src, dst, rounding, out_of_range
        self.pairs, self.error, self.verb = pairs, error, verb

    def fail(self, x: np.ndarray, bad: np.ndarray, reason: str) -> None:
        first = x[bad].reshape(-1)[0]
        count = int(np.count_nonzero(bad))
        value = first.item() if self.src.is_int else float(first)
        raise self.error(
            f"codec {NAME!r}: cannot {self.verb} the value {value!r} ({self.src.name}) as {self.dst.name}: "
            f"{reason} ({count} such value{'s' if count != 1 else ''} in the chunk)"
        )

    def matches(self, x: np.ndarray) -> list[tuple[np.ndarray, np.generic]]:
        """The ``scalar_map`` entries' masks (each value matched by its first key only)."""
        found, taken = [], np.zeros(x.shape, dtype=bool)
        xs = x if self.src.is_int and self.src.dtype.kind in "iu" else x.astype(np.float64)
        for key, value in self.pairs:
            key_cmp = key if xs is x else np.float64(key)
            m = np.isnan(xs) if not self.src.is_int and np.isnan(key_cmp) else xs == key_cmp
            m &= ~taken
            if m.any():
                taken |= m
                found.append((m, value))
        return found

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype != self.src.dtype:
            x = x.astype(self.src.dtype)
        found = self.matches(x) if self.pairs else []
        handled = None
        if found:
            handled = found[0][0].copy()
            for m, _ in found[1:]:
                handled |= m
        if not found and self.dst.contains(self.src):
            return x.astype(self.dst.dtype)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if self.src.is_int and self.dst.is_int:
                y = self.int_to_int(x, handled)
            else:
                y = self.via_float(x, handled)
        for m, value in found:
            y[m] = value
        return y

    def out_of_range_error(self, x: np.ndarray, bad: np.ndarray) -> None:
        lo, hi = (self.dst.lo, self.dst.hi)
        what = "no out_of_range is set" if self.out_of_range is None else \
            f"out_of_range {self.out_of_range!r} does not apply to {self.dst.name}"
        self.fail(x, bad, f"out of the range [{lo}, {hi}] after rounding {self.rounding!r}, and {what}")

    def int_to_int(self, x: np.ndarray, handled: np.ndarray | None) -> np.ndarray:
        src, dst = self.src, self.dst
        if src.dtype.kind not in "iu":  # ml_dtypes integers: compare as int64
            x = x.astype(np.int64)
        bad = np.zeros(x.shape, dtype=bool)
        if dst.lo > src.lo:
            bad |= x < dst.lo
        if dst.hi < src.hi:
            bad |= x > dst.hi
        if handled is not None:
            bad &= ~handled
        if not bad.any():
            return x.astype(dst.dtype)
        if self.out_of_range == "clamp":
            return np.clip(x, max(dst.lo, src.lo), min(dst.hi, src.hi)).astype(dst.dtype)
        if self.out_of_range == "wrap":
            return _wrap(x.astype(np.uint64), dst)
        self.out_of_range_error(x, bad)
        raise AssertionError("unreachable")

    def via_float(self, x: np.ndarray, handled: np.ndarray | None) -> np.ndarray:
        src, dst = self.src, self.dst
        s, e = _exact_pair(x.astype(np.int64) if src.is_int and src.dtype.kind not in "iu" else x, src)
        nan = inf = special = None
        if not src.is_int:
            nan, inf = np.isnan(s), np.isinf(s)
            special = nan | inf
            bad = (nan & (not dst.has_nan)) | (inf & (not dst.has_inf))
            if handled is not None:
                bad &= ~handled
            if bad.any():
                what = "NaN" if np.isnan(s[bad].reshape(-1)[0]) else "Infinity"
                self.fail(x, bad, f"{dst.name} has no {what} and no scalar_map entry maps it")
            if special.any():
                negative_inf = inf & (s < 0)
                s = np.where(special, 0.0, s)
            else:
                special = None
        r = _round(s, e, dst, self.rounding)
        skip = special if handled is None else (handled if special is None else handled | special)
        if dst.is_int:
            low, high = r < dst.lo, r >= float(dst.hi) + 1  # dst.hi + 1 is a power of two: exact
        else:
            low, high = r < dst.lo, r > dst.hi
        bad = low | high
        if skip is not None:
            bad &= ~skip
            r = np.where(skip, 0.0 if dst.lo <= 0 else dst.lo, r)
        clamped = bad.any() and self.out_of_range == "clamp"
        if bad.any() and not clamped:
            if self.out_of_range == "wrap" and dst.is_int:
                return _wrap(_residue(r), dst)
            self.out_of_range_error(x, bad)
        if dst.is_int:
            if clamped:
                r = np.where(bad, 0.0, r)
            y = r.astype(np.uint64 if dst.lo == 0 and dst.bits == 64 else np.int64).astype(dst.dtype)
            if clamped:
                y[high & bad] = dst.hi
                y[low & bad] = dst.lo
            return y
        if clamped:
            top, bottom = (np.inf, -np.inf) if dst.has_inf else (dst.hi, dst.lo)
            r = np.where(high & bad, top, np.where(low & bad, bottom, r))
        if special is not None:
            r = np.where(nan, np.nan, np.where(inf, np.where(negative_inf, -np.inf, np.inf), r))
        if not dst.has_neg_zero:
            r = r + 0.0  # -0.0 + 0.0 == +0.0: the same number in a type without -0
        return r.astype(dst.dtype)


def cast_values(x: np.ndarray, src: Any, dst: Any, *, rounding: str = "nearest-even",
                out_of_range: str | None = None, scalar_map: ScalarPairs = (),
                error: type[Exception] = CodecError, verb: str = "encode") -> np.ndarray:
    """``x`` (of data type ``src``) cast to ``dst`` as the ``cast_value`` codec does.

    ``scalar_map`` holds ``(key, value)`` numpy scalars of ``src`` and ``dst``.
    A value that cannot be cast raises ``error`` naming it.
    """
    s, d = numeric_type(src, NAME, "the input data type"), numeric_type(dst, NAME, "the output data type")
    return _Cast(s, d, rounding, out_of_range, tuple(scalar_map), error, verb)(x)


# --------------------------------------------------------------------------- the codec


def _config_error(field: str, found: Any, expected: str) -> CodecError:
    return CodecError(f"codec {NAME!r}: configuration field {field!r}: found {found!r}, expected {expected}")


def _check_scalar_map(doc: Any) -> dict[str, list[list[Any]]]:
    if not isinstance(doc, dict):
        raise _config_error("scalar_map", doc, 'an object with optional "encode" and "decode" arrays')
    extra = sorted(set(doc) - {"encode", "decode"})
    if extra:
        raise _config_error("scalar_map", doc, f'only the fields "encode" and "decode" (unknown: {extra})')
    out = {}
    for direction, pairs in doc.items():
        if not isinstance(pairs, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
            raise _config_error(f"scalar_map.{direction}", pairs, "an array of [input, output] pairs")
        out[direction] = [list(p) for p in pairs]
    return out


class CastValueCodec(ArrayArrayCodec):
    """Cast each value to ``data_type`` by its numerical value.

    Parameters
    ----------
    data_type : str or dict or numpy.dtype
        The target: Zarr v3 data type JSON (``"uint8"``, ``"bfloat16"``) or a
        numpy dtype.
    rounding : str, optional
        One of :data:`ROUNDING_MODES`; absent means ``"nearest-even"``.
    out_of_range : {"clamp", "wrap"}, optional
        Absent: values out of range are errors.
    scalar_map : dict, optional
        ``{"encode": [[in, out], ...], "decode": [[in, out], ...]}`` in fill-value JSON.
    """

    name = NAME

    def __init__(self, data_type: Any, rounding: str | None = None, out_of_range: str | None = None,
                 scalar_map: dict[str, Any] | None = None) -> None:
        if isinstance(data_type, (np.dtype, type)) and not isinstance(data_type, str):
            dtype = np.dtype(data_type)
            try:
                self.data_type_json: Any = data_type_to_v3(dtype)
            except MetadataError:
                self.data_type_json = dtype.name
            if not isinstance(self.data_type_json, str) or self.data_type_json != dtype.name:
                self.data_type_json = dtype.name  # an ml_dtypes type the registry does not name yet
        else:
            try:
                dtype = resolve_data_type_v3(data_type, key=f"codec {NAME!r}", field="data_type").dtype
            except MetadataError as err:
                raise CodecError(f"codec {NAME!r}: configuration field 'data_type': {err}") from None
            self.data_type_json = data_type
        self.target = numeric_type(dtype, NAME, "configuration field 'data_type'")
        if rounding is not None and rounding not in ROUNDING_MODES:
            raise _config_error("rounding", rounding, f"one of {list(ROUNDING_MODES)}")
        if out_of_range is not None and out_of_range not in OUT_OF_RANGE_MODES:
            raise _config_error("out_of_range", out_of_range, f"one of {list(OUT_OF_RANGE_MODES)} or absent")
        if out_of_range == "wrap" and not self.target.is_int:
            raise _config_error("out_of_range", out_of_range,
                                f"'clamp' or absent: 'wrap' needs an integral data_type, not {self.target.name}")
        self.rounding_json = rounding
        self.out_of_range = out_of_range
        self.scalar_map = None if scalar_map is None else _check_scalar_map(scalar_map)
        self._parsed: dict[tuple[str, np.dtype], ScalarPairs] = {}

    @property
    def rounding(self) -> str:
        return self.rounding_json or "nearest-even"

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "CastValueCodec":
        if not isinstance(configuration, dict) or not configuration:
            raise CodecError(f"codec {NAME!r}: a configuration with 'data_type' is required, found {configuration!r}")
        extra = sorted(set(configuration) - set(_FIELDS))
        if extra:
            raise CodecError(f"codec {NAME!r}: unknown configuration field(s) {extra}; expected {list(_FIELDS)}")
        if "data_type" not in configuration:
            raise CodecError(f"codec {NAME!r}: configuration field 'data_type' is required")
        for field in ("rounding", "out_of_range"):
            if field in configuration and not isinstance(configuration[field], str):
                raise _config_error(field, configuration[field], "a string")
        if "scalar_map" in configuration and configuration["scalar_map"] is None:
            raise _config_error("scalar_map", None, "an object")
        return cls(**configuration)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"data_type": self.data_type_json}
        if self.rounding_json is not None:
            config["rounding"] = self.rounding_json
        if self.out_of_range is not None:
            config["out_of_range"] = self.out_of_range
        if self.scalar_map is not None:
            config["scalar_map"] = {k: [list(p) for p in v] for k, v in self.scalar_map.items()}
        return config

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_parsed"] = {}
        return state

    # -- the scalar map, parsed for one array data type --------------------------
    def _pairs(self, direction: str, source: NumericType) -> ScalarPairs:
        cache_key = (direction, source.dtype)
        found = self._parsed.get(cache_key)
        if found is None:
            key_type, value_type = (source, self.target) if direction == "encode" else (self.target, source)
            pairs: list[tuple[np.generic, np.generic]] = []
            for i, (k, v) in enumerate((self.scalar_map or {}).get(direction, [])):
                key = scalar_from_json(k, key_type, NAME, f"scalar_map.{direction}[{i}][0]")
                value = scalar_from_json(v, value_type, NAME, f"scalar_map.{direction}[{i}][1]")
                if not any(_same_key(key, earlier, key_type) for earlier, _ in pairs):  # the first occurrence wins
                    pairs.append((key, value))
            found = self._parsed[cache_key] = tuple(pairs)
        return found

    def _cast(self, source: NumericType, direction: str) -> _Cast:
        if direction == "encode":
            return _Cast(source, self.target, self.rounding, self.out_of_range,
                         self._pairs("encode", source), CodecError, "encode")
        return _Cast(self.target, source, self.rounding, self.out_of_range,
                     self._pairs("decode", source), CorruptChunkError, "decode")

    def _source(self, spec: ChunkSpec) -> NumericType:
        return numeric_type(spec.dtype, NAME, "the array data type (the codec's input)")

    # -- binding ---------------------------------------------------------------
    def _encoded_fill(self, spec: ChunkSpec, source: NumericType) -> np.generic:
        fill = np.asarray(spec.fill_value if spec.fill_value is not None else 0).astype(source.dtype).reshape(1)
        try:
            encoded = self._cast(source, "encode")(fill)
            back = self._cast(source, "decode")(encoded)
        except (CodecError, CorruptChunkError) as err:
            raise CodecError(f"codec {NAME!r}: the fill value {fill[0]!r} cannot be cast to "
                             f"{self.target.name} and back: {str(err).removeprefix(f'codec {NAME!r}: ')}") from None
        same = (int(back[0]) == int(fill[0])) if source.is_int else (
            float(back[0]) == float(fill[0]) or bool(np.isnan(float(back[0])) and np.isnan(float(fill[0]))))
        if not same:
            raise CodecError(
                f"codec {NAME!r}: the fill value {fill[0]!r} ({source.name}) does not survive the cast: it "
                f"encodes to {encoded[0]!r} ({self.target.name}), which decodes to {back[0]!r}; "
                "choose a fill value representable in both, or map it with scalar_map"
            )
        return encoded[0]

    def validate(self, spec: ChunkSpec) -> None:
        source = self._source(spec)
        self._pairs("encode", source)
        self._pairs("decode", source)
        self._encoded_fill(spec, source)

    def encoded_spec(self, spec: ChunkSpec) -> ChunkSpec:
        fill = self._encoded_fill(spec, self._source(spec))
        return ChunkSpec(spec.shape, self.target.dtype, fill, spec.order, spec.write_empty, spec.read_missing)

    # -- encode / decode ---------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._cast(self._source(spec), "encode")(chunk)

    def decode(self, chunk: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._cast(self._source(spec), "decode")(chunk)


def _number(a: np.generic, t: NumericType) -> int | float:
    """A scalar of ``t`` as a Python number (to compare scalar_map keys)."""
    if t.is_int:
        return int(a) if t.dtype.kind in "iu" else int(np.asarray(a).astype(np.int64))
    return float(np.asarray(a).astype(np.float64))


def _same_key(a: np.generic, b: np.generic, t: NumericType) -> bool:
    x, y = _number(a, t), _number(b, t)
    return x == y or (x != x and y != y)
