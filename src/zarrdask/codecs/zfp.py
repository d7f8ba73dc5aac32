"""The ``zfp`` codec: array → bytes, compressed with the zfp library.

Spec: zarr-extensions ``codecs/zfp`` (README: "Configuration parameters",
"Supported Chunk Shapes", "Supported Data Types", "Format and algorithm",
"Differences from numcodecs.zfpy"), whose modes are zfp's own
(zfp docs, "Compression modes": expert, fixed-rate, fixed-precision,
fixed-accuracy, reversible). Tested example configurations (the README's
``examples/*.json``)::

    {"name": "zfp", "configuration": {"mode": "fixed_accuracy", "tolerance": 0.05}}
    {"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": 10.5}}
    {"name": "zfp", "configuration": {"mode": "fixed_precision", "precision": 19}}
    {"name": "zfp", "configuration": {"mode": "reversible"}}
    {"name": "zfp", "configuration": {"mode": "expert", "minbits": 1, "maxbits": 13,
                                      "maxprec": 19, "minexp": -2}}

A chunk is stored as the bare zfp stream of ``zfp_compress`` — no
``zfp_write_header`` header (the difference from ``numcodecs.zfpy``): the
codec configuration and the chunk spec say everything a header would.

**The library.** zfp runs through the ``zfpy`` package (an optional
dependency, imported when a codec is first validated or run), whose Python
functions offer neither reversible nor expert mode nor decoding a headerless
stream. So the codec calls the zfp C library that ``zfpy``'s extension module
is linked against, through :mod:`ctypes` (:func:`zfp_library`): the same
library, every mode, and decoding into a buffer sized from the chunk spec.
Without ``zfpy`` a ``zfp`` array cannot be opened:
:class:`~zarrdask.errors.MissingDependencyError` says ``pip install zfpy``.

**Chunk shapes** ("Supported Chunk Shapes"): a C-order chunk of shape
``[nw, nz, ny, nx]`` (or its last 3, 2, 1 axes) is zfp field ``zfp_field_Nd``
with those sizes; a 0-d chunk is ``nx = 1``; a chunk of more than four
dimensions is taken with its length-1 axes removed (the README's squeeze,
inside the codec) and refused if more than four remain.

**Data types** ("Supported Data Types", "Format and algorithm"): ``int32``,
``int64``, ``float32``, ``float64`` as they are; ``uint32`` / ``uint64`` as
``int32`` / ``int64`` (as zarrs: decoded values are clamped at 0, and a value
above ``2**31 - 1`` / ``2**63 - 1`` cannot be encoded: a
:class:`~zarrdask.errors.CodecError`, never a silently changed value);
``float16`` and every ml_dtypes float (``bfloat16``, ``float8_*``, ...)
through ``float32``; ``int8``, ``int16``, ``uint8``, ``uint16`` and ml_dtypes'
``int2``, ``int4``, ``uint2``, ``uint4`` through ``int32`` with the README's
``zfp_promote`` / ``zfp_demote`` shifts.

**Modes.** ``fixed_rate`` calls ``zfp_stream_set_rate`` with the field's
dimensionality (``rate`` is bits per value, as zfp defines it). zarrs (to
0.24-dev) passes 3 for every field: its fixed-rate chunks of other than three
dimensions have 4**(3 - d) times the bits per block, so their length is not
the one expected here and they are refused as corrupt (unless both lengths
round to the same 64-bit words, as a lone 1-d block at a low rate may).
``fixed_accuracy`` needs floating-point data (zfp's rule). In expert mode a
``maxbits`` smaller than the bits a block writes before zfp checks it (zfp
docs, "Expert mode": such a maxbits "will not be respected by zfp") leaves
the blocks unbounded, as zfp's FAQ uses it (``0 0 p -1075``: a bounded
relative error); buffers are then sized for unbounded blocks, where zfp's own
``zfp_stream_maximum_size`` would be too small.

**Untrusted chunks.** The stream is decoded from a zero-padded copy of at
least ``zfp_stream_maximum_size`` bytes — the most any stream of the chunk
spec can take, so that no input makes zfp read past it — into an array of
the chunk's size. A stream longer than that, shorter than the minimum bits
per block the mode writes, or whose decoding does not end in its last 64-bit
word (truncated, trailing data, another configuration) is a
:class:`~zarrdask.errors.CorruptChunkError` naming the key.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import numbers
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np

from ..errors import CodecError, CorruptChunkError, MissingDependencyError
from ..metadata.dtypes.float_formats import ml_info
from .abc import ArrayBytesCodec, ChunkSpec
from .buffers import byte_view

__all__ = ["ZfpCodec", "MODES", "zfp_library", "ZfpElements", "zfp_elements", "field_shape"]

#: mode → its required parameters, in the README's order
MODES: dict[str, tuple[str, ...]] = {
    "reversible": (),
    "expert": ("minbits", "maxbits", "maxprec", "minexp"),
    "fixed_accuracy": ("tolerance",),
    "fixed_rate": ("rate",),
    "fixed_precision": ("precision",),
}
_UNSIGNED = ("minbits", "maxbits", "maxprec", "precision")
_UINT_MAX = (1 << 32) - 1  # zfp's parameters are C ``uint`` / ``int``
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
#: zfp_stream_set_rate computes 4**dims * rate + 0.5 as a C uint: at most 4**4 * (2**24 - 1) + 0.5
_MAX_RATE = float((1 << 24) - 1)
_GUARD = np.uint64(0x5A46502047554152)
_WORD = 8  # bytes of a zfp stream word (stream_word_bits = 64, checked when the library loads)
#: zfp_type → the most bits a block writes before its maxbits is checked (reversible mode: the
#: precision field, after a float's 2 + exponent bits; zfp_stream_maximum_size's overhead):
#: in expert mode a smaller maxbits wraps around (C unsigned) to "no limit"
_PREFIX_BITS = {1: 5, 2: 6, 3: 1 + 1 + 8 + 5, 4: 1 + 1 + 11 + 6}

# zfp_type
_INT32, _INT64, _FLOAT, _DOUBLE = 1, 2, 3, 4
_ZFP_DTYPE = {_INT32: np.dtype("=i4"), _INT64: np.dtype("=i8"), _FLOAT: np.dtype("=f4"), _DOUBLE: np.dtype("=f8")}


# -- the zfp library -----------------------------------------------------------------------

_P, _SZ, _U, _I, _D = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_double
_SIGNATURES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "stream_open": (_P, (_P, _SZ)),
    "stream_close": (None, (_P,)),
    "zfp_stream_open": (_P, (_P,)),
    "zfp_stream_close": (None, (_P,)),
    "zfp_stream_set_bit_stream": (None, (_P, _P)),
    "zfp_stream_rewind": (None, (_P,)),
    "zfp_stream_set_reversible": (None, (_P,)),
    "zfp_stream_set_rate": (_D, (_P, _D, _I, _U, _I)),
    "zfp_stream_set_precision": (_U, (_P, _U)),
    "zfp_stream_set_accuracy": (_D, (_P, _D)),
    "zfp_stream_set_params": (_I, (_P, _U, _U, _U, _I)),
    "zfp_stream_params": (None, (_P, ctypes.POINTER(_U), ctypes.POINTER(_U), ctypes.POINTER(_U),
                                 ctypes.POINTER(_I))),
    "zfp_stream_maximum_size": (_SZ, (_P, _P)),
    "zfp_field_1d": (_P, (_P, _I, _SZ)),
    "zfp_field_2d": (_P, (_P, _I, _SZ, _SZ)),
    "zfp_field_3d": (_P, (_P, _I, _SZ, _SZ, _SZ)),
    "zfp_field_4d": (_P, (_P, _I, _SZ, _SZ, _SZ, _SZ)),
    "zfp_field_free": (None, (_P,)),
    "zfp_compress": (_SZ, (_P, _P)),
    "zfp_decompress": (_SZ, (_P, _P)),
}
_INSTALL = "pip install zfpy"
_lib_lock = threading.Lock()
_lib: Any = None


def _candidates(zfpy: Any) -> list[str]:
    """Libraries that may hold the zfp symbols: zfpy's extension module itself
    (its dependencies are searched too, on Linux and macOS), then the zfp
    library a wheel bundles beside it, then a system libzfp."""
    import ctypes.util

    here = os.path.dirname(os.path.abspath(zfpy.__file__))
    found = [zfpy.__file__]
    for pattern in ("zfpy.libs/*zfp*", ".dylibs/*zfp*", "zfpy.libs/zfp*.dll", "*zfp*.dll"):
        found += sorted(glob.glob(os.path.join(here, pattern)))
    system = ctypes.util.find_library("zfp")
    return found + ([system] if system else [])


def _bind(cdll: Any) -> Any:
    """``cdll`` with every function the codec calls typed; ``None`` if it lacks one
    or is not zfp 1.x with 64-bit stream words."""
    try:
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(cdll, name)
            fn.restype, fn.argtypes = restype, argtypes
        version = ctypes.c_uint.in_dll(cdll, "zfp_library_version").value
        codec = ctypes.c_uint.in_dll(cdll, "zfp_codec_version").value
        word = ctypes.c_size_t.in_dll(cdll, "stream_word_bits").value
    except (AttributeError, ValueError):
        return None
    if version < 0x1000 or codec != 5 or word != 8 * _WORD:
        return None
    return cdll


def zfp_library() -> Any:
    """The zfp C library (through :mod:`ctypes`) that the ``zfpy`` package loads.

    Raises :class:`~zarrdask.errors.MissingDependencyError` when ``zfpy`` is not
    installed, or when none of the libraries it brings is zfp 1.x (stream
    format version 5, 64-bit stream words) with the functions the codec calls.
    """
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        try:
            import zfpy
        except ImportError as e:
            raise MissingDependencyError(
                f"codec 'zfp' needs the package zfpy, which is not installed ({e}): {_INSTALL}") from None
        for path in _candidates(zfpy):
            try:
                lib = _bind(ctypes.CDLL(path))
            except OSError:
                continue
            if lib is not None:
                _lib = lib
                return lib
        raise MissingDependencyError(
            f"codec 'zfp': zfpy {getattr(zfpy, '__version__', '')} is installed, but no zfp 1.x library "
            f"(stream version 5, 64-bit words) could be loaded from it; reinstall it: pip install -U zfpy")


# -- data types and shapes -----------------------------------------------------------------


@dataclass(frozen=True)
class ZfpElements:
    """How the elements of one data type are given to zfp: as ``zfp_type``
    (one of int32, int64, float, double), with ``promote`` / ``demote``
    between the data type and that one."""

    zfp_type: int
    promote: Callable[[np.ndarray], np.ndarray]
    demote: Callable[[np.ndarray], np.ndarray]

    @property
    def is_float(self) -> bool:
        return self.zfp_type in (_FLOAT, _DOUBLE)


def _small_int(dtype: np.dtype, signed: bool, bits: int) -> ZfpElements:
    """The README's zfp_promote / zfp_demote for an ``bits``-bit integer type."""
    shift, half = 31 - bits, 1 << (bits - 1)
    if signed:
        lo, hi = -half, half - 1
        promote = lambda a: np.left_shift(a.astype(np.int32), shift)  # noqa: E731
        demote = lambda a: np.clip(np.right_shift(a, shift), lo, hi).astype(dtype)  # noqa: E731
    else:
        top = (1 << bits) - 1
        promote = lambda a: np.left_shift(a.astype(np.int32) - half, shift)  # noqa: E731
        demote = lambda a: np.clip(np.right_shift(a, shift) + half, 0, top).astype(dtype)  # noqa: E731
    return ZfpElements(_INT32, promote, demote)


def _unsigned_native(dtype: np.dtype, zfp_type: int) -> ZfpElements:
    """``uint32`` / ``uint64`` as ``int32`` / ``int64`` (zarrs' mapping): values
    above the signed maximum cannot be encoded; decoded values clamp at 0."""
    signed = _ZFP_DTYPE[zfp_type]
    top = np.iinfo(signed).max

    def promote(a: np.ndarray) -> np.ndarray:
        if a.size and a.max() > top:
            raise CodecError(
                f"codec 'zfp': stores {dtype} as {signed.name} (as zarrs does), so values above {top} "
                f"cannot be encoded; found {a.max()}")
        return a.astype(signed)

    return ZfpElements(zfp_type, promote, lambda a: np.maximum(a, 0).astype(dtype))


@functools.lru_cache(maxsize=None)
def zfp_elements(dtype: np.dtype) -> ZfpElements:
    """How ``dtype`` is given to zfp; :class:`~zarrdask.errors.CodecError` for a
    data type the codec does not support."""
    native = dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype
    kind, size = native.kind, native.itemsize
    same = lambda a: a  # noqa: E731
    if kind == "f" and size in (4, 8) and native.type in (np.float32, np.float64):
        return ZfpElements(_FLOAT if size == 4 else _DOUBLE, same, same)
    if kind == "i" and size in (4, 8):
        return ZfpElements(_INT32 if size == 4 else _INT64, same, same)
    if kind == "u" and size in (4, 8):
        return _unsigned_native(native, _INT32 if size == 4 else _INT64)
    if kind in "iu" and size in (1, 2):
        return _small_int(native, kind == "i", 8 * size)
    info = ml_info(native) if kind in "Vf" else None
    if kind == "f" and native.type is np.float16 or info is not None and info[0] == "float" and info[1] < 32:
        return ZfpElements(_FLOAT, lambda a: a.astype(np.float32), lambda a: a.astype(native))
    if info is not None and info[0] in ("int", "uint") and info[1] < 32:
        return _small_int(native, info[0] == "int", info[1])
    raise CodecError(
        f"codec 'zfp': cannot encode data type {dtype}; expected int32, uint32, int64, uint64, float32, "
        "float64, or a smaller integer or floating-point type (promoted to int32 / float32)")


def field_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The zfp field sizes ``[nw, nz, ny, nx]`` (or their last 1-3) of a C-order
    chunk of ``shape``: 0-d is ``[1]``; beyond four dimensions the length-1
    axes are left out; :class:`~zarrdask.errors.CodecError` if more than four remain."""
    if len(shape) > 4:
        squeezed = tuple(n for n in shape if n != 1)
        if len(squeezed) > 4:
            raise CodecError(
                f"codec 'zfp': chunk shape {list(shape)} has {len(squeezed)} axes longer than 1; zfp "
                "supports at most 4 dimensions (the README's squeeze leaves out only the length-1 axes)")
        shape = squeezed
    return tuple(shape) if shape else (1,)


# -- the codec ------------------------------------------------------------------------------


def _number(field: str, value: Any, mode: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise CodecError(f"codec 'zfp': configuration field {field!r} of mode {mode!r} must be a number, "
                         f"found {value!r}")
    value = int(value) if isinstance(value, numbers.Integral) else float(value)
    if not math.isfinite(value):
        raise CodecError(f"codec 'zfp': configuration field {field!r} must be finite, found {value!r}")
    return value


def _integer(field: str, value: Any, mode: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise CodecError(f"codec 'zfp': configuration field {field!r} of mode {mode!r} must be an integer, "
                         f"found {value!r}")
    if not lo <= int(value) <= hi:
        kind = "an unsigned integer" if lo == 0 else "a signed integer"
        raise CodecError(f"codec 'zfp': configuration field {field!r} must be {kind} from {lo} to {hi} "
                         f"(zfp's C type), found {value!r}")
    return int(value)


def _parameter(mode: str, field: str, value: Any) -> int | float:
    if field in _UNSIGNED:
        return _integer(field, value, mode, 0, _UINT_MAX)
    if field == "minexp":
        return _integer(field, value, mode, *_INT_RANGE)
    number = _number(field, value, mode)
    if field == "tolerance" and number < 0:
        raise CodecError(f"codec 'zfp': configuration field 'tolerance' must be >= 0, found {value!r}")
    if field == "rate" and not 0 < number <= _MAX_RATE:
        raise CodecError(f"codec 'zfp': configuration field 'rate' (bits per value) must be > 0 and at most "
                         f"{_MAX_RATE:.0f}, found {value!r}")
    return number


class ZfpCodec(ArrayBytesCodec):
    """Array → bytes with zfp (zarr-extensions ``codecs/zfp``).

    Parameters
    ----------
    mode : {"reversible", "expert", "fixed_accuracy", "fixed_rate", "fixed_precision"}
    **parameters
        The mode's parameters, all required: ``tolerance`` (fixed_accuracy,
        a number >= 0), ``rate`` (fixed_rate, bits per value > 0),
        ``precision`` (fixed_precision, unsigned), ``minbits``, ``maxbits``,
        ``maxprec`` (unsigned) and ``minexp`` (signed) for expert mode.
    """

    name: ClassVar[str] = "zfp"

    def __init__(self, mode: str, **parameters: Any) -> None:
        if not isinstance(mode, str) or mode not in MODES:
            raise CodecError(f"codec 'zfp': configuration field 'mode' must be one of "
                             f"{', '.join(repr(m) for m in MODES)}, found {mode!r}")
        needed = MODES[mode]
        extra = sorted(set(parameters) - set(needed))
        if extra:
            raise CodecError(f"codec 'zfp': configuration field(s) {extra} are not parameters of mode {mode!r} "
                             f"(expected {list(needed) or 'none'})")
        missing = [p for p in needed if p not in parameters]
        if missing:
            raise CodecError(f"codec 'zfp': mode {mode!r} requires the configuration field(s) {missing}")
        self.mode = mode
        self.parameters = {p: _parameter(mode, p, parameters[p]) for p in needed}
        if mode == "expert":
            params = self.parameters
            if params["minbits"] > params["maxbits"]:
                raise CodecError(f"codec 'zfp': expert mode needs 'minbits' <= 'maxbits', found "
                                 f"minbits {params['minbits']} and maxbits {params['maxbits']}")
            if not 1 <= params["maxprec"] <= 64:
                raise CodecError(f"codec 'zfp': configuration field 'maxprec' must be from 1 to 64 (zfp's "
                                 f"ZFP_MAX_PREC), found {params['maxprec']}")

    # -- configuration -------------------------------------------------------
    @classmethod
    def from_config(cls, configuration: dict[str, Any]) -> "ZfpCodec":
        config = dict(configuration or {})
        if "mode" not in config:
            raise CodecError(f"codec 'zfp': configuration field 'mode' is required (one of "
                             f"{', '.join(repr(m) for m in MODES)}), found the fields {sorted(config)}")
        return cls(**config)

    def get_config(self) -> dict[str, Any]:
        return {"mode": self.mode, **self.parameters}

    def validate(self, spec: ChunkSpec) -> None:
        """Check that zfpy is there (:class:`~zarrdask.errors.MissingDependencyError`),
        and the data type, the chunk shape and the mode fit
        (:class:`~zarrdask.errors.CodecError`)."""
        zfp_library()
        self._plan(spec)

    def _plan(self, spec: ChunkSpec) -> tuple[ZfpElements, tuple[int, ...]]:
        elements = zfp_elements(np.dtype(spec.dtype))
        shape = field_shape(tuple(spec.shape))
        if self.mode == "fixed_accuracy" and not elements.is_float:
            raise CodecError(f"codec 'zfp': mode 'fixed_accuracy' needs floating-point data (zfp's rule), "
                             f"found data type {spec.dtype}")
        return elements, shape

    def _maximum_size(self, lib: Any, stream: Any, field: Any, zfp_type: int) -> int:
        """The most bytes a stream of ``field`` takes (``zfp_stream_maximum_size``),
        for unbounded blocks when expert mode's ``maxbits`` does not bound them."""
        if self.mode != "expert" or self.parameters["maxbits"] >= _PREFIX_BITS[zfp_type]:
            return lib.zfp_stream_maximum_size(stream, field)
        params = self.parameters
        unbounded = lib.zfp_stream_open(None)
        try:
            lib.zfp_stream_set_params(unbounded, params["minbits"], _UINT_MAX, params["maxprec"], params["minexp"])
            return lib.zfp_stream_maximum_size(unbounded, field)
        finally:
            lib.zfp_stream_close(unbounded)

    # -- the zfp stream ------------------------------------------------------
    def _open_stream(self, lib: Any, zfp_type: int, dims: int) -> Any:
        stream = lib.zfp_stream_open(None)
        if not stream:
            raise MemoryError("zfp_stream_open failed")
        params = self.parameters
        if self.mode == "reversible":
            lib.zfp_stream_set_reversible(stream)
        elif self.mode == "fixed_rate":
            lib.zfp_stream_set_rate(stream, float(params["rate"]), zfp_type, dims, 0)
        elif self.mode == "fixed_precision":
            lib.zfp_stream_set_precision(stream, params["precision"])
        elif self.mode == "fixed_accuracy":
            lib.zfp_stream_set_accuracy(stream, float(params["tolerance"]))
        elif not lib.zfp_stream_set_params(stream, params["minbits"], params["maxbits"], params["maxprec"],
                                           params["minexp"]):
            lib.zfp_stream_close(stream)
            raise CodecError(f"codec 'zfp': zfp refused the expert parameters {params}")
        return stream

    @staticmethod
    def _field(lib: Any, pointer: int | None, zfp_type: int, shape: tuple[int, ...]) -> Any:
        make = (lib.zfp_field_1d, lib.zfp_field_2d, lib.zfp_field_3d, lib.zfp_field_4d)[len(shape) - 1]
        field = make(pointer, zfp_type, *reversed(shape))  # nx (the last, fastest axis) first
        if not field:
            raise MemoryError("zfp_field_alloc failed")
        return field

    # -- encode / decode -----------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ChunkSpec) -> bytes:
        arr = np.asarray(chunk)
        if arr.shape != tuple(spec.shape):
            raise CodecError(f"codec 'zfp': chunk has shape {arr.shape}, expected {spec.shape}")
        elements, shape = self._plan(spec)
        if arr.size == 0:
            return b""
        values = np.ascontiguousarray(elements.promote(arr), dtype=_ZFP_DTYPE[elements.zfp_type])
        lib = zfp_library()
        stream = self._open_stream(lib, elements.zfp_type, len(shape))
        field = bits = None
        try:
            field = self._field(lib, values.ctypes.data, elements.zfp_type, shape)
            size = self._maximum_size(lib, stream, field, elements.zfp_type)
            words = -(-size // _WORD)
            buffer = np.empty(words + 1, dtype=np.uint64)
            buffer[words] = _GUARD  # a word zfp must not reach
            bits = lib.stream_open(buffer.ctypes.data, words * _WORD)
            lib.zfp_stream_set_bit_stream(stream, bits)
            lib.zfp_stream_rewind(stream)
            written = lib.zfp_compress(stream, field)
        finally:
            _close(lib, stream, field, bits)
        if written > words * _WORD or buffer[words] != _GUARD:  # (0: every block took 0 bits)
            raise CodecError(f"codec 'zfp': zfp_compress failed (mode {self.mode!r}, shape {spec.shape}, "
                             f"{written} bytes written into {words * _WORD})")
        return buffer.view(np.uint8)[:written].tobytes()

    def decode(self, data: bytes | memoryview, spec: ChunkSpec, key: str = "") -> np.ndarray:
        elements, shape = self._plan(spec)
        raw = byte_view(data)
        if math.prod(spec.shape) == 0:
            if raw.nbytes:
                raise CorruptChunkError(f"chunk {key!r}: codec 'zfp': a chunk of shape {spec.shape} has no "
                                        f"values, found {raw.nbytes} bytes")
            return np.empty(spec.shape, dtype=spec.dtype)
        lib = zfp_library()
        values = np.empty(math.prod(shape), dtype=_ZFP_DTYPE[elements.zfp_type])
        stream = self._open_stream(lib, elements.zfp_type, len(shape))
        field = bits = None
        try:
            field = self._field(lib, values.ctypes.data, elements.zfp_type, shape)
            buffer = self._padded(lib, stream, field, elements.zfp_type, raw, shape, key)
            bits = lib.stream_open(buffer.ctypes.data, buffer.nbytes)
            lib.zfp_stream_set_bit_stream(stream, bits)
            lib.zfp_stream_rewind(stream)
            read = lib.zfp_decompress(stream, field)
        finally:
            _close(lib, stream, field, bits)
        if raw.nbytes > read or raw.nbytes <= read - _WORD:
            hint = " (it starts with a zfp header: the zfp codec stores none)" if bytes(raw[:3]) == b"zfp" else ""
            raise CorruptChunkError(
                f"chunk {key!r}: codec 'zfp' ({self.mode}) decoded a chunk of shape {spec.shape} "
                f"({spec.dtype}) from {read} bytes of the stream, which holds {raw.nbytes}: truncated, "
                f"or written with another configuration{hint}")
        return elements.demote(values).reshape(spec.shape)

    def _padded(self, lib: Any, stream: Any, field: Any, zfp_type: int, raw: memoryview,
                shape: tuple[int, ...], key: str) -> np.ndarray:
        """``raw`` in zeroed words as long as the longest stream of this chunk
        spec (which zfp never reads past); errors for a stream longer than
        that or shorter than the bits every block takes."""
        most = self._maximum_size(lib, stream, field, zfp_type)
        minbits = ctypes.c_uint()
        lib.zfp_stream_params(stream, ctypes.byref(minbits), None, None, None)
        blocks = math.prod(-(-n // 4) for n in shape)
        least = -(-blocks * minbits.value // (8 * _WORD)) * _WORD
        if not least <= raw.nbytes <= most:
            raise CorruptChunkError(
                f"chunk {key!r}: codec 'zfp' ({self.mode}): a stream of field {list(shape)} takes "
                f"{least} to {most} bytes, found {raw.nbytes}")
        buffer = np.zeros(most // _WORD + 1, dtype=np.uint64)
        buffer.view(np.uint8)[:raw.nbytes] = np.frombuffer(raw, dtype=np.uint8)
        return buffer


def _close(lib: Any, stream: Any, field: Any, bits: Any) -> None:
    if field:
        lib.zfp_field_free(field)
    if bits:
        lib.stream_close(bits)
    lib.zfp_stream_close(stream)
