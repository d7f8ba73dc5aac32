"""The ``zstd`` codec: bytes → bytes, Zstandard (RFC 8878) frames.

Spec: zarr-extensions ``codecs/zstd`` ("Configuration parameters", "Format and
algorithm").

Name: ``zstd``. Tested example configuration (the spec's own example)::

    {"name": "zstd", "configuration": {"level": 1, "checksum": true}}

``level`` is -131072..22 (0: the library default); ``checksum`` stores a frame
checksum that is verified on read. The JSON always carries both fields, as
zarr-python 3.1 and tensorstore write it (the extension says ``checksum``
"should be omitted if false"; both forms are read).

Compression is numcodecs' ``Zstd`` (one object per codec, created once).
numcodecs creates a fresh ZSTD context per call and releases the GIL, so the
codec is thread-safe. Decompression calls the same library, the libzstd
numcodecs' extension module is built with, directly through :mod:`ctypes`
(:func:`libzstd`) with one decompression context per thread, kept for the
thread's life: creating and initialising a context per chunk, as numcodecs
does, costs about 7% of decoding a 256 KiB chunk of level-1 data, and its
Python wrapper a few microseconds more (measured: 280 against 305 µs per
chunk). Where that module exports no ``ZSTD_*`` functions (Windows builds),
numcodecs' own ``decode`` is used. Decoding is bounded
(:mod:`zarrdask.codecs.bounded`, :func:`decode_zstd`): the sizes frame
headers declare are checked against the chunk's expected size before anything
is decompressed, and the data goes straight into the caller's buffer. Data
of several frames (RFC 8878: "a sequence of frames") is decoded frame by
frame into its place (:func:`frames`), which also serves numcodecs < 0.16,
which decodes only the first frame.

A small selection of a chunk decodes only what it needs where it can
(:class:`~zarrdask.codecs.abc.PartialBytesDecode`): a zstd frame is decoded
from its start (each block may refer back to the bytes before it, RFC 8878
section 3.1.1.2), so a range of the output needs the blocks up to its last
byte and none after. :meth:`ZstdCodec.decode_range` stops there, with the
streaming decoder of ``compression.zstd`` (Python 3.14; the ``backports.zstd``
package before), when the prefix is short enough to cost less than a whole
decode (at most 40% of the chunk, and at least one block left out); frames
with a content checksum are decoded whole, so that the checksum is verified.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable

import numcodecs.zstd
import numpy as np
from numcodecs.zstd import Zstd

from ..errors import ChecksumError, CodecError, CorruptChunkError
from .buffers import byte_view
from .abc import ChunkSpec, PartialBytesDecode
from .bounded import BoundedBytesBytesCodec, DecodeBound

__all__ = ["ZstdCodec", "decode_zstd", "decode_zstd_prefix", "frame_content_size", "frames", "libzstd", "split_frames"]

_MAGIC = 0xFD2FB528
#: the most of a chunk decoded as a prefix: the streaming decoder takes about
#: twice the time per byte of the one-shot decode into a buffer (measured on a
#: 1 MiB chunk: an eighth of it 0.37x a whole decode, a quarter 0.6x, half
#: 0.94x, seven eighths 1.6-2.2x)
_PREFIX_MAX = 0.4
#: Content_Checksum_flag of a frame header descriptor (RFC 8878 section 3.1.1.1.1)
_CHECKSUM_FLAG = 0x4
#: Block_Maximum_Size (RFC 8878 section 3.1.1.2.4): the most a compressed block decodes to
_BLOCK_MAX = 128 << 10


def frame_content_size(data: memoryview) -> int | None:
    """Decompressed size declared by the first zstd frame header, if any."""
    if data.nbytes < 6 or int.from_bytes(data[:4], "little") != _MAGIC:
        return None
    descriptor = data[4]
    fcs_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or data.nbytes < pos + size:
        return None
    value = int.from_bytes(data[pos : pos + size], "little")
    return value + 256 if size == 2 else value


def frames(data: memoryview) -> list[tuple[memoryview, int | None, int]] | None:
    """The frames of ``data`` (RFC 8878 section 3.1: a frame header, blocks with
    3-byte headers, an optional 4-byte checksum; skippable frames dropped), each
    with its declared content size (``None`` if the header has none) and an
    upper bound of what it can decode to; ``None`` if ``data`` is not a sequence
    of whole frames.

    The bound walks the block headers only (section 3.1.1.2): a raw or RLE
    block regenerates the ``Block_Size`` its header states, a compressed block
    at most ``Block_Maximum_Size`` (128 KiB, which the decoder enforces).
    """
    found = []
    pos, n = 0, data.nbytes
    while pos < n:
        if n - pos < 8:
            return None
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame: magic, 4-byte size, content
            pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
            if pos > n:
                return None
            continue
        if magic != _MAGIC:
            return None
        start, descriptor = pos, data[pos + 4]
        fcs_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
        pos += 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
        pos += (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
        last, bound = False, 0
        while not last:
            if pos + 3 > n:
                return None
            header = int.from_bytes(data[pos : pos + 3], "little")
            last, block_type, size = bool(header & 1), (header >> 1) & 3, header >> 3
            if block_type == 3:  # reserved
                return None
            bound += _BLOCK_MAX if block_type == 2 else size
            pos += 3 + (1 if block_type == 1 else size)  # an RLE block holds one byte
        pos += 4 if descriptor & _CHECKSUM_FLAG else 0  # content checksum
        if pos > n:
            return None
        frame = data[start:pos]
        declared = frame_content_size(frame)
        found.append((frame, declared, bound if declared is None else declared))
    return found


def split_frames(data: memoryview) -> list[memoryview] | None:
    """The frames of ``data`` (see :func:`frames`), or ``None`` if ``data`` is
    not a sequence of whole frames."""
    found = frames(data)
    return None if found is None else [f for f, _, _ in found]


def _zstd_error(bound: DecodeBound, e: Exception) -> CorruptChunkError:
    cls = ChecksumError if "checksum" in str(e).lower() else CorruptChunkError
    return cls(f"chunk {bound.key!r}: codec {bound.codec!r} could not decode it: {e}")


_SIZE, _PTR = ctypes.c_size_t, ctypes.c_void_p
_SIGNATURES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "ZSTD_versionNumber": (ctypes.c_uint, ()),
    "ZSTD_createDCtx": (_PTR, ()),
    "ZSTD_freeDCtx": (_SIZE, (_PTR,)),
    "ZSTD_decompressDCtx": (_SIZE, (_PTR, _PTR, _SIZE, _PTR, _SIZE)),
    "ZSTD_isError": (ctypes.c_uint, (_SIZE,)),
    "ZSTD_getErrorName": (ctypes.c_char_p, (_SIZE,)),
}
#: the oldest libzstd called directly (1.4.0, 2019; numcodecs bundles a recent
#: one): ZSTD_decompressDCtx decodes every frame of its input, with or without
#: a declared size, since long before
_MIN_VERSION = 10400
_library: list[Any] = []  # once looked for: the library, or None
_library_lock = threading.Lock()
_contexts = threading.local()


def libzstd() -> Any:
    """The libzstd that numcodecs' ``zstd`` extension module is built with,
    through :mod:`ctypes`, with the functions decompression calls typed; ``None``
    where that module exports no ``ZSTD_*`` functions or its libzstd is older
    than 1.4 (then numcodecs' ``decode`` is used). Looked for once."""
    if _library:
        return _library[0]
    with _library_lock:
        if not _library:
            lib = None
            try:
                cdll = ctypes.CDLL(numcodecs.zstd.__file__)
                for name, (restype, argtypes) in _SIGNATURES.items():
                    fn = getattr(cdll, name)
                    fn.restype, fn.argtypes = restype, argtypes
                if cdll.ZSTD_versionNumber() >= _MIN_VERSION:
                    lib = cdll
            except (OSError, AttributeError):
                pass
            _library.append(lib)
    return _library[0]


class _Context:
    """A thread's decompression context, freed with the thread's local data."""

    __slots__ = ("lib", "ptr")

    def __init__(self, lib: Any) -> None:
        self.lib, self.ptr = lib, lib.ZSTD_createDCtx()
        if not self.ptr:
            raise MemoryError("libzstd could not allocate a decompression context")

    def __del__(self) -> None:
        self.lib.ZSTD_freeDCtx(self.ptr)

    def decompress(self, src: memoryview, target: memoryview) -> int:
        """Decompress the frames ``src`` into the writable ``target`` (the GIL
        released meanwhile, as ctypes does); the number of bytes written.
        Raises ``RuntimeError`` with libzstd's message."""
        lib, capacity = self.lib, target.nbytes
        written = lib.ZSTD_decompressDCtx(self.ptr, _address(target), capacity, _address(src), src.nbytes)
        # libzstd's error codes are the largest size_t values: a count past the
        # capacity is one (ZSTD_isError, without a second call)
        if written > capacity and lib.ZSTD_isError(written):
            raise RuntimeError(lib.ZSTD_getErrorName(written).decode("ascii", "replace"))
        return written


def _address(buffer: memoryview) -> int:
    """The address of a contiguous buffer's first byte (a writable one through
    ctypes, a tenth of the cost of going through numpy)."""
    if not buffer.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    return np.frombuffer(buffer, np.uint8).__array_interface__["data"][0]


def _context() -> _Context | None:
    """This thread's decompression context; ``None`` without :func:`libzstd`
    (a thread has one only once the library was found)."""
    context = getattr(_contexts, "context", None)
    if context is None:
        lib = libzstd()
        if lib is None:
            return None
        context = _contexts.context = _Context(lib)
    return context


def _into(zstd: Zstd, src: memoryview, target: memoryview, bound: DecodeBound) -> None:
    """Decode the frames ``src`` into ``target``, which they must fill exactly."""
    context = _context() if target.nbytes and src.nbytes and not target.readonly else None
    try:
        if context is None:
            zstd.decode(src, out=target)
            return
        written = context.decompress(src, target)
    except Exception as e:  # numcodecs raises RuntimeError / ValueError
        if "too small" in str(e):  # libzstd or numcodecs refused to write past `target`
            raise bound.error(f"decodes to more than {target.nbytes} bytes ({e})") from None
        raise _zstd_error(bound, e) from None
    if written != target.nbytes:
        raise bound.error(f"decodes to {written} bytes")


def decode_zstd(zstd: Zstd, data: Any, bound: DecodeBound) -> memoryview | bytes:
    """Decode zstd ``data`` within ``bound``.

    The usual chunk is one frame whose header declares exactly the expected
    size: it is decompressed straight into the output. Otherwise the frames'
    declared sizes are added up and checked before anything is decompressed,
    then each frame goes into its place in the output. Frames without a
    declared size are decompressed into a buffer of the expected size, which
    libzstd refuses to overflow (numcodecs >= 0.16; older versions refuse such
    frames); without an expected size (``max_chunk_bytes``), their block
    headers give an upper bound that must be within the limit.
    """
    mv = byte_view(data)
    first = frame_content_size(mv)
    if first is not None and first == bound.size and first:
        target = bound.buffer(first)
        _into(zstd, mv, target, bound)
        return target
    found = frames(mv)
    if found is None:
        raise bound.error("holds no sequence of whole zstd frames (corrupt or truncated)")
    if all(declared is not None for _, declared, _ in found):
        total = sum(declared for _, declared, _ in found)  # type: ignore[misc]
        bound.check(total, "declares (in its frame headers)")
        target = bound.buffer(total)
        pos = 0
        for frame, declared, _ in found:
            if declared:  # numcodecs refuses empty frames: nothing to decode
                _into(zstd, frame, target[pos : pos + declared], bound)
                pos += declared  # type: ignore[operator]
        return target
    if bound.size is not None:
        target = bound.buffer(bound.size)
        _into(zstd, mv, target, bound)
        return target
    upper = sum(b for _, _, b in found)
    if upper > bound.limit:
        raise bound.error(f"holds frames without a declared size that may decode to {upper} bytes")
    try:
        return zstd.decode(mv)  # streaming decompression: at most `upper` bytes
    except Exception as e:
        raise _zstd_error(bound, e) from None


_decoder: list[Any] = []  # once looked for: the decoder class, or None
_asked = [0]


def _streaming_decoder() -> Any:
    """The ``ZstdDecompressor`` class of ``compression.zstd`` (or its backport), or
    ``None``. Looked for once (a failed import searches every path again), and
    not the first time it is asked for: importing the backport costs about
    2 ms, more than decoding a chunk whole, so a process that reads one small
    window (a fresh ``open_array(...)[...]``) does not pay for it."""
    if _decoder:
        return _decoder[0]
    _asked[0] += 1
    if _asked[0] == 1:
        return None
    try:
        from compression.zstd import ZstdDecompressor  # type: ignore[import-not-found]
    except ImportError:
        try:
            from backports.zstd import ZstdDecompressor  # type: ignore[import-not-found]
        except ImportError:
            ZstdDecompressor = None
    _decoder.append(ZstdDecompressor)
    return ZstdDecompressor


def decode_zstd_prefix(data: Any, stop: int, size: int) -> bytes | None:
    """The first ``stop`` of the ``size`` bytes the one zstd frame ``data``
    decodes to, decoding no block past them; ``None`` where that is not done
    (a prefix longer than :data:`_PREFIX_MAX` of the output or leaving less
    than a block undecoded, where the whole decode costs less; not one frame
    declaring ``size``; a frame with a content checksum; no streaming decoder;
    or data that does not decode to that many bytes: then the whole decode
    reports what is wrong)."""
    mv = byte_view(data)
    if stop > size * _PREFIX_MAX or size - stop < _BLOCK_MAX:
        return None
    if frame_content_size(mv) != size or mv[4] & _CHECKSUM_FLAG:
        return None
    decoder = _streaming_decoder()
    if decoder is None:
        return None
    try:
        raw = decoder().decompress(mv, max_length=stop)
    except Exception:  # corrupt: the whole decode raises the typed error
        return None
    return raw if len(raw) == stop else None


class ZstdCodec(PartialBytesDecode, BoundedBytesBytesCodec):
    """Zstandard compression.

    Parameters
    ----------
    level : int
        -131072..22; 0 means the library default (3).
    checksum : bool
        Store a content checksum in each frame.
    """

    name = "zstd"
    exact_decode = True

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        if not isinstance(level, int) or isinstance(level, bool) or not -131072 <= level <= 22:
            raise CodecError(
                f"codec 'zstd': configuration field 'level' must be an integer -131072..22, found {level!r}"
            )
        if not isinstance(checksum, bool):
            raise CodecError(f"codec 'zstd': configuration field 'checksum' must be a boolean, found {checksum!r}")
        self.level = level
        self.checksum = checksum
        self._zstd = Zstd(level=level, checksum=checksum)

    def __getstate__(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": "zstd", "level": self.level, "checksum": self.checksum}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "ZstdCodec":
        config = dict(configuration or {})
        level = config.pop("level", 0)
        checksum = config.pop("checksum", False)
        if config:
            raise CodecError(f"codec 'zstd': unknown configuration field(s) {sorted(config)}")
        return cls(level=level, checksum=checksum)

    def get_config(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes:
        return self._zstd.encode(byte_view(data))

    def decode_within(self, data: bytes | memoryview, spec: ChunkSpec, bound: DecodeBound) -> Any:
        return decode_zstd(self._zstd, data, bound)

    def decode_exact(self, data: Any, target: memoryview) -> bool:
        """Frames that decode to exactly ``target``'s size, decompressed into
        it by libzstd (:func:`decode_zstd`'s usual case without its checks'
        wrapping: libzstd refuses to write past ``target``, and a frame that
        declares another size, or none, decodes to its size or fails);
        ``False`` for anything else, failures included."""
        size = target.nbytes
        context = _context() if size else None
        if context is None:
            return False
        try:
            return context.decompress(byte_view(data), target) == size
        except RuntimeError:
            return False

    def exact_decoder(self, source: memoryview, target: memoryview) -> Callable[[int, int], bool] | None:
        """:meth:`decode_exact` with the thread's context and both buffers'
        addresses taken once: a chunk is then one libzstd call."""
        size, end = target.nbytes, source.nbytes
        context = _context() if size and end and not target.readonly else None
        if context is None:
            return None
        decompress, ptr = context.lib.ZSTD_decompressDCtx, context.ptr
        src, dst = _address(source), _address(target)

        # (_held: the context and both buffers live as long as the function)
        def exact(offset: int, nbytes: int, _held: Any = (context, source, target)) -> bool:
            # an error code is larger than any size (see _Context.decompress)
            return 0 <= offset and offset + nbytes <= end and decompress(ptr, dst, size, src + offset, nbytes) == size

        return exact

    def decode_range(self, data: Any, start: int, length: int, size: int, key: str) -> memoryview | None:
        """Bytes ``start`` to ``start + length`` of the ``size`` bytes ``data``
        decodes to, from the blocks up to the last of them
        (:func:`decode_zstd_prefix`), or ``None`` (then decode it whole)."""
        raw = decode_zstd_prefix(data, start + length, size)
        return None if raw is None else memoryview(raw)[start:]
