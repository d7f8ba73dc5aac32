"""The ``blosc`` codec: bytes → bytes, the Blosc 1 container format.

Spec: zarr-specs v3 ``codecs/blosc`` ("Configuration parameters", "Format and
algorithm", "Comparison to Zarr v2").

Name: ``blosc``. Tested example configuration (the spec's own example)::

    {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1,
     "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}

``typesize`` is required by the spec unless ``shuffle`` is ``"noshuffle"``; it
may be left ``None`` here, and ``shuffle`` too (``None``: ``"bitshuffle"`` for
1-byte types, ``"shuffle"`` otherwise — zarr-python 3.1's default). Both are
then taken from the chunk's data type: :meth:`BloscCodec.evolve` returns the
codec with the chosen values, which is what must be written to ``zarr.json``
(the spec: "MUST record in the metadata the value that is chosen"), and
:meth:`BloscCodec.encode` uses the same values, so the chunks match the
recorded metadata. The JSON lists ``typesize, cname, clevel, shuffle,
blocksize`` — the fields and order zarr-python 3.1 writes (``typesize`` is
written even with ``"noshuffle"``, since Blosc records it in its header and
uses it to pick the automatic block size).

Thread safety: compression runs in numcodecs' ``Blosc`` (one object per
codec and shuffle, created once; the data is handed to it as items of
``typesize`` bytes, which is how every numcodecs version >= 0.13 takes the
type size). zarrdask does not touch the process-wide
``numcodecs.blosc.use_threads``. In numcodecs' default mode (``None``), calls
from any thread other than the main thread use Blosc's contextual API
(``blosc_compress_ctx`` / ``blosc_decompress_ctx``: no shared state, GIL
released), so the chunk engine's worker threads run in parallel safely; calls
from the main thread use Blosc's global context with its internal threads,
which numcodecs (compress) and c-blosc (decompress) serialise with a mutex.
``use_threads = False`` (which importing zarr-python sets) forces the
contextual API everywhere — also safe; ``True`` is safe but serialises all
threads on that mutex. Decoding checks the 16-byte header (compressed size
equal to the stored size, decompressed size equal to the expected one, or at
most ``max_chunk_bytes`` where no size is fixed; :mod:`zarrdask.codecs.bounded`)
before handing the buffer to Blosc, so a truncated chunk is an error, not a
read past its end, and a header claiming gigabytes allocates nothing.
"""

from __future__ import annotations

import struct
from typing import Any

import numcodecs
import numcodecs.blosc as _blosc
import numpy as np
from numcodecs.blosc import Blosc

from ..errors import CodecError, CorruptChunkError
from .buffers import byte_view
from .abc import ChunkSpec, PartialBytesDecode
from .bounded import BoundedBytesBytesCodec, DecodeBound

__all__ = ["BloscCodec", "CNAMES", "SHUFFLES", "decode_blosc", "decode_blosc_range"]

#: compressors named by the spec (``snappy`` is not in numcodecs' wheels)
CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")
SHUFFLES = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}
_SHUFFLE_NAMES = {v: k for k, v in SHUFFLES.items()}
# compressor format code in header byte 2, bits 5..7 (c-blosc README_CHUNK_FORMAT)
_FORMATS = {0: ("blosclz",), 1: ("lz4", "lz4hc"), 2: ("snappy",), 3: ("zlib",), 4: ("zstd",)}
_HEADER = 16


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        bounds = f"{low}..{high}" if high is not None else f">= {low}"
        raise CodecError(f"codec 'blosc': configuration field {name!r} must be an integer {bounds}, found {value!r}")
    return value


class BloscCodec(PartialBytesDecode, BoundedBytesBytesCodec):
    """Blosc meta-compression.

    Parameters
    ----------
    cname : {"lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib"}
    clevel : int
        0 (no compression) to 9.
    shuffle : {"noshuffle", "shuffle", "bitshuffle", None}
        ``None``: ``"bitshuffle"`` for 1-byte data types, else ``"shuffle"``.
    typesize : int or None
        Bytes per element for shuffling; ``None``: the data type's item size.
    blocksize : int
        Block size in bytes; 0 lets Blosc choose.
    """

    name = "blosc"

    def __init__(
        self,
        cname: str = "zstd",
        clevel: int = 5,
        shuffle: str | None = None,
        typesize: int | None = None,
        blocksize: int = 0,
    ) -> None:
        if cname not in CNAMES:
            raise CodecError(f"codec 'blosc': configuration field 'cname' must be one of {list(CNAMES)}, found {cname!r}")
        if shuffle is not None and shuffle not in SHUFFLES:
            raise CodecError(
                f"codec 'blosc': configuration field 'shuffle' must be one of {list(SHUFFLES)}, found {shuffle!r}"
            )
        self.cname = cname
        self.clevel = _check_int("clevel", clevel, 0, 9)
        self.shuffle = shuffle
        self.typesize = None if typesize is None else _check_int("typesize", typesize, 1)
        self.blocksize = _check_int("blocksize", blocksize, 0)
        self._compressors: dict[tuple[int, int | None], Blosc] = {}

    def numcodecs_config(self) -> dict[str, Any]:
        shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2, None: -1}[self.shuffle]  # -1: by the item size
        return {"id": "blosc", "cname": self.cname, "clevel": self.clevel, "shuffle": shuffle,
                "blocksize": self.blocksize}

    def __getstate__(self) -> dict[str, Any]:
        return {
            "cname": self.cname,
            "clevel": self.clevel,
            "shuffle": self.shuffle,
            "typesize": self.typesize,
            "blocksize": self.blocksize,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    # -- configuration -------------------------------------------------------
    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "BloscCodec":
        config = dict(configuration or {})
        known = {"cname", "clevel", "shuffle", "typesize", "blocksize"}
        unknown = sorted(set(config) - known)
        if unknown:
            raise CodecError(f"codec 'blosc': unknown configuration field(s) {unknown}")
        return cls(**config)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if self.typesize is not None:
            config["typesize"] = self.typesize
        config["cname"] = self.cname
        config["clevel"] = self.clevel
        if self.shuffle is not None:
            config["shuffle"] = self.shuffle
        config["blocksize"] = self.blocksize
        return config

    def _chosen(self, spec: ChunkSpec | None) -> tuple[int, str]:
        itemsize = max(1, spec.dtype.itemsize) if spec is not None else 1
        typesize = self.typesize if self.typesize is not None else itemsize
        shuffle = self.shuffle if self.shuffle is not None else ("bitshuffle" if itemsize == 1 else "shuffle")
        return typesize, shuffle

    def complete(self, spec: ChunkSpec) -> "BloscCodec":
        """This codec with ``typesize`` / ``shuffle`` chosen for ``spec``'s data
        type filled in: what to record in the array metadata."""
        if self.typesize is not None and self.shuffle is not None:
            return self
        typesize, shuffle = self._chosen(spec)
        return BloscCodec(self.cname, self.clevel, shuffle, typesize, self.blocksize)

    def validate(self, spec: ChunkSpec) -> None:
        self._check_available()

    def _check_available(self) -> None:
        if self.cname not in _blosc.list_compressors():
            raise CodecError(
                f"codec 'blosc': compressor {self.cname!r} is not available in this numcodecs build "
                f"(available: {_blosc.list_compressors()})"
            )

    # -- encode / decode -----------------------------------------------------
    def _compressor(self, shuffle: str, typesize: int | None = None) -> Blosc:
        k = (SHUFFLES[shuffle], typesize)
        compressor = self._compressors.get(k)
        if compressor is None:
            self._check_available()
            extra = {} if typesize is None else {"typesize": typesize}
            compressor = Blosc(cname=self.cname, clevel=self.clevel, shuffle=k[0], blocksize=self.blocksize, **extra)
            self._compressors[k] = compressor  # races only build an equal object
        return compressor

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes:
        typesize, shuffle = self._chosen(spec)
        mv = byte_view(data)
        if mv.nbytes % typesize == 0:
            # numcodecs' Blosc takes the type size from the item size of what it is
            # given (every numcodecs version; the `typesize` argument came in 0.16)
            items = np.frombuffer(mv, dtype=f"V{typesize}") if typesize > 1 else mv
            return self._compressor(shuffle).encode(items)
        try:
            compressor = self._compressor(shuffle, typesize)
        except TypeError:
            raise CodecError(
                f"codec 'blosc': typesize {typesize} does not divide the {mv.nbytes} bytes to compress, "
                f"which numcodecs {numcodecs.__version__} cannot compress (numcodecs >= 0.16 can)"
            ) from None
        return compressor.encode(mv)

    def decode_within(self, data: bytes | memoryview, spec: ChunkSpec, bound: DecodeBound) -> Any:
        return decode_blosc(data, bound)

    def decode_range(self, data: Any, start: int, length: int, size: int, key: str) -> memoryview | None:
        """Bytes ``start`` to ``start + length`` of the ``size`` bytes ``data``
        decodes to, or ``None`` (then decode it whole): :func:`decode_blosc_range`
        (the codec's :class:`~zarrdask.codecs.abc.PartialBytesDecode` capability)."""
        return decode_blosc_range(data, start, length, DecodeBound(key, self.name, size))


def _checked(data: Any, bound: DecodeBound) -> tuple[memoryview, int]:
    """``data`` as bytes and the decoded size its 16-byte header declares,
    after checking the header against the stored and the expected sizes."""
    mv = byte_view(data)
    key = bound.key
    if mv.nbytes < _HEADER:
        raise CorruptChunkError(
            f"chunk {key!r}: codec {bound.codec!r} needs a {_HEADER}-byte header, found {mv.nbytes} bytes"
        )
    nbytes, _blocksize, cbytes = struct.unpack_from("<III", mv, 4)
    if cbytes != mv.nbytes:
        raise CorruptChunkError(
            f"chunk {key!r}: the blosc header says {cbytes} compressed bytes, found {mv.nbytes}"
        )
    bound.check(nbytes, "declares (in its header)")
    return mv, nbytes


def decode_blosc(data: Any, bound: DecodeBound) -> bytes | memoryview:
    """Decode a Blosc 1 chunk within ``bound``: the 16-byte header's sizes are
    checked (compressed size equal to the stored size, decompressed size equal
    to the expected one, or within ``max_chunk_bytes``) before Blosc sees the data."""
    mv, nbytes = _checked(data, bound)
    key = bound.key
    if nbytes == 0:  # blosc_decompress returns 0 (its error code) for empty data
        return b""
    try:
        return _blosc.decompress(mv, bound.out)
    except Exception as e:  # numcodecs raises RuntimeError on failure
        names = _FORMATS.get((mv[2] >> 5) & 0x7, ())
        if names and not set(names) & set(_blosc.list_compressors()):
            raise CodecError(
                f"chunk {key!r}: compressed with blosc's {names[0]!r}, which this numcodecs build lacks"
            ) from None
        raise CorruptChunkError(f"chunk {key!r}: codec {bound.codec!r} could not decode it: {e}") from None


def _load_getitem() -> Any:
    """c-blosc's ``blosc_getitem`` from numcodecs' extension module (which
    exports it), or ``None``."""
    try:
        import ctypes

        fn = ctypes.CDLL(_blosc.__file__).blosc_getitem
    except (OSError, AttributeError, TypeError):  # pragma: no cover - another numcodecs build
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


_getitem = _load_getitem()


def decode_blosc_range(data: Any, start: int, length: int, bound: DecodeBound) -> memoryview | None:
    """Bytes ``start`` to ``start + length`` of what the Blosc 1 chunk ``data``
    decodes to, decompressing only the blocks they lie in (c-blosc's
    ``blosc_getitem``, which works on a context of its own: safe from any
    thread, and the GIL is released by ``ctypes``). The header is checked as by
    :func:`decode_blosc`. ``None`` when it cannot be done here (no
    ``blosc_getitem``, a range not in whole items of the header's type size, or
    Blosc refusing): the caller then decodes the whole chunk, which reports
    what is wrong with it."""
    if _getitem is None:
        return None
    mv, nbytes = _checked(data, bound)
    typesize = mv[3]
    if not typesize or start % typesize or length % typesize or start + length > nbytes or length <= 0:
        return None
    src = np.frombuffer(mv, dtype=np.uint8)
    dest = np.empty(length, dtype=np.uint8)
    got = _getitem(src.ctypes.data, start // typesize, length // typesize, dest.ctypes.data)
    return memoryview(dest) if got == length else None
