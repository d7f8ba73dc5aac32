"""The ``conditional`` codec: bytes → bytes, applies each of a list of bytes →
bytes codecs or skips it, chunk by chunk, and records which in a bitfield header.

Spec: zarr-extensions ``codecs/conditional`` ("Detailed Description": "Codec
Configuration", "Encoding Process", "Decoding Process"; "Implementation",
phases 1-3).

Name: ``conditional``. Tested example configurations (the README's; it names a
``shuffle`` codec that is registered nowhere, zarrdask reads numcodecs' under
its zarr-python name)::

    {"name": "conditional", "configuration": {"codecs": [
        {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
        {"name": "zstd", "configuration": {"level": 5}}]}}
    {"name": "conditional", "configuration": {
        "codecs": [{"name": "zstd", "configuration": {"level": 5, "checksum": false}}],
        "header_bits": 16}}

Configuration: ``codecs`` (required) a list of bytes → bytes codecs (any other
kind is a :class:`~zarrdask.errors.CodecError`; ``numcodecs.<id>`` codecs are
taken as bytes → bytes); ``header_bits`` (optional) a multiple of 8, at least
``len(codecs)``, default ``ceil(len(codecs) / 8) * 8`` (written back only when
given). An empty ``codecs`` list is allowed (a 0-byte header by default).

Stored chunk: ``header_bits / 8`` header bytes, then the data. Bit ``i`` of the
header is bit ``i % 8`` (least significant first) of byte ``i // 8`` ("little-endian
bit order": the mask is ``int.from_bytes(header, "little")``); set means codec ``i``
was applied. Encoding applies the codecs with their bit set in list order;
decoding undoes them in reverse order. A header shorter than ``header_bits / 8``
or with a bit set at or past ``len(codecs)`` (reserved bits, which writers must
leave 0) is a :class:`~zarrdask.errors.CorruptChunkError` naming the key.
Decoding is bounded: each applied codec decodes to the size the chunk implies
where it is fixed (see :mod:`zarrdask.codecs.bounded`).

Writing (the README's phases 2 and 3) is decided per chunk by the codec
object's ``decision`` (runtime only, never written into ``zarr.json``):

* ``"not_larger"`` (**the default**): trial-encode; apply the codec unless its
  output is larger than its input. A compressor that inflates a chunk is
  skipped (the chunk stored raw, its bit clear); a size-preserving filter such
  as ``shuffle`` is applied, so a compressor after it sees the shuffled bytes.
  A stored chunk is therefore never larger than the raw chunk plus the header.
* ``"compress_if_smaller"`` (README phase 3): trial-encode; apply only when the
  output is strictly smaller than the input (a same-size ``shuffle`` is skipped).
* ``"always_apply"`` / ``"never_apply"``: every bit set / clear (the README's
  phase 1 default runtime mask, all 0s, is ``"never_apply"``).
* an ``int``: a fixed bitmask for every chunk (the README's "runtime bitmask").
* a callable (README phase 2): ``decision(chunk_index, codec, unencoded_chunk)``
  or, with ``trial_encode=True``, ``decision(chunk_index, codec,
  unencoded_chunk, trial_encoded_chunk)``, returning a truth value. A callable
  with a parameter named ``codec_index`` (README example 3) is called as
  ``decision(chunk_index, codec_index, codec, unencoded_chunk[, trial])``.
  ``unencoded_chunk`` is the codec's input: the chunk's bytes after the codecs
  before it that were applied; a trial encoding that is kept is not encoded
  again. zarrdask codecs do not see chunk coordinates, so ``chunk_index`` is
  ``None``.

The decision travels with the codec object (it pickles with it; a callable must
pickle for dask), not with the array metadata: two codecs that differ only in
their decision are equal and write the same ``zarr.json``. An array made by
``create_array`` from codec objects runs those objects;
``Array.with_codecs([...])`` gives an opened array codec objects (the README's
"re-open with a new decision"); an array opened from the store, or a copy made
by ``rechunk``, runs the default decision. Tested::

    arr = zarrdask.create_array(path, shape=(20, 30), dtype="uint32", chunks=(10, 30),
                                compressors=[ConditionalCodec(["zstd"], decision=my_function)])
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from ..errors import CodecError, CorruptChunkError
from .abc import BytesBytesCodec, ChunkSpec, Codec, KindlessCodec
from .bounded import DecodeBound
from .buffers import byte_view

__all__ = ["ConditionalCodec", "DECISIONS"]

#: the built-in decisions: name → (trial-encodes, rule(input size, trial size) → apply)
DECISIONS: dict[str, tuple[bool, Callable[[int, int], bool]]] = {
    "not_larger": (True, lambda n, trial: trial <= n),
    "compress_if_smaller": (True, lambda n, trial: trial < n),
    "always_apply": (False, lambda n, trial: True),
    "never_apply": (False, lambda n, trial: False),
}

_WHERE = "codec 'conditional'"


def _nested(codecs: Any) -> tuple[BytesBytesCodec, ...]:
    """The ``codecs`` field as bytes → bytes codec objects."""
    from .registry import codec_from_json

    if not isinstance(codecs, (list, tuple)):
        raise CodecError(f"{_WHERE}: configuration field 'codecs' must be a list of codecs, found {codecs!r}")
    parsed = []
    for i, doc in enumerate(codecs):
        codec: Codec = codec_from_json(doc, key=f"conditional.codecs[{i}]", kind="bytes_bytes")
        if isinstance(codec, KindlessCodec):
            codec = codec.as_kind("bytes_bytes")
        if not isinstance(codec, BytesBytesCodec):
            raise CodecError(
                f"{_WHERE}: configuration field 'codecs[{i}]' is {codec.name!r}, a {codec.kind.replace('_', '→')} "
                "codec; expected bytes→bytes codecs only"
            )
        parsed.append(codec)
    return tuple(parsed)


def _header_bits(header_bits: Any, n: int) -> int:
    if header_bits is None:
        return -(-n // 8) * 8
    if not isinstance(header_bits, int) or isinstance(header_bits, bool):
        raise CodecError(f"{_WHERE}: configuration field 'header_bits' must be an integer, found {header_bits!r}")
    if header_bits < 0 or header_bits % 8:
        raise CodecError(
            f"{_WHERE}: configuration field 'header_bits' must be a non-negative multiple of 8, found {header_bits}"
        )
    if header_bits < n:
        raise CodecError(
            f"{_WHERE}: configuration field 'header_bits' is {header_bits}, expected at least the number of "
            f"codecs ({n})"
        )
    return header_bits


def _takes_codec_index(decision: Callable[..., Any]) -> bool:
    try:
        return "codec_index" in inspect.signature(decision).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


class ConditionalCodec(BytesBytesCodec):
    """Apply or skip each of ``codecs`` per chunk, recorded in a bitfield header.

    Parameters
    ----------
    codecs : list
        bytes → bytes codecs (objects or their JSON).
    header_bits : int, optional
        Bits of the header (a multiple of 8, at least ``len(codecs)``); omitted:
        ``ceil(len(codecs) / 8) * 8``.
    decision : str, int or callable
        How writing decides which codecs to apply (not stored in metadata; see
        the module docstring): ``"not_larger"`` (default), ``"compress_if_smaller"``,
        ``"always_apply"``, ``"never_apply"``, a fixed bitmask, or a function.
    trial_encode : bool
        For a callable ``decision``: encode with each codec first and pass the
        result as the fourth argument.
    """

    name = "conditional"
    bounded_decode = True

    def __init__(
        self,
        codecs: Sequence[Any],
        header_bits: int | None = None,
        *,
        decision: str | int | Callable[..., Any] = "not_larger",
        trial_encode: bool = False,
    ) -> None:
        self.codecs = _nested(codecs)
        self._given_bits = header_bits
        self.header_bits = _header_bits(header_bits, len(self.codecs))
        self.header_bytes = self.header_bits // 8
        self._set_decision(decision, trial_encode)

    def _set_decision(self, decision: Any, trial_encode: bool) -> None:
        if not isinstance(trial_encode, bool):
            raise TypeError(f"{_WHERE}: trial_encode must be a bool, found {trial_encode!r}")
        if isinstance(decision, str):
            if decision not in DECISIONS:
                raise ValueError(f"{_WHERE}: unknown decision {decision!r}; expected one of {sorted(DECISIONS)}, "
                                 "a bitmask or a function")
            trial_encode = DECISIONS[decision][0]
        elif isinstance(decision, int) and not isinstance(decision, bool):
            if decision < 0 or decision >> len(self.codecs):
                raise ValueError(f"{_WHERE}: the bitmask {decision:#x} sets bits for codecs that do not exist "
                                 f"(there are {len(self.codecs)})")
            trial_encode = False
        elif not callable(decision):
            raise TypeError(f"{_WHERE}: decision must be a name, a bitmask or a function, found {decision!r}")
        self.decision = decision
        self.trial_encode = trial_encode
        self._with_index = callable(decision) and _takes_codec_index(decision)

    def with_decision(self, decision: str | int | Callable[..., Any], trial_encode: bool = False) -> "ConditionalCodec":
        """This codec (same configuration) deciding with ``decision``."""
        return ConditionalCodec(self.codecs, self._given_bits, decision=decision, trial_encode=trial_encode)

    def _evolved(self, codecs: Sequence[BytesBytesCodec]) -> "ConditionalCodec":
        new = ConditionalCodec(codecs, self._given_bits, decision="never_apply")
        new.decision, new.trial_encode, new._with_index = self.decision, self.trial_encode, self._with_index
        return new

    # -- configuration ---------------------------------------------------------
    @classmethod
    def from_config(cls, configuration: dict[str, Any] | None) -> "ConditionalCodec":
        config = dict(configuration or {})
        if "codecs" not in config:
            raise CodecError(f"{_WHERE}: configuration field 'codecs' is required")
        unknown = sorted(set(config) - {"codecs", "header_bits"})
        if unknown:
            raise CodecError(f"{_WHERE}: unknown configuration field(s) {unknown}; expected 'codecs', 'header_bits'")
        return cls(config["codecs"], config.get("header_bits"))

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"codecs": [c.to_json() for c in self.codecs]}
        if self._given_bits is not None:
            config["header_bits"] = self.header_bits
        return config

    def validate(self, spec: ChunkSpec) -> None:
        for codec in self.codecs:
            codec.validate(spec)

    def complete(self, spec: ChunkSpec) -> "ConditionalCodec":
        completed = [c.complete(spec) for c in self.codecs]
        return self._evolved(completed)  # type: ignore[arg-type]

    def encoded_size(self, decoded_size: int) -> int | None:
        return decoded_size + self.header_bytes if not self.codecs else None

    # -- encode ------------------------------------------------------------------
    def _apply(self, i: int, codec: BytesBytesCodec, data: memoryview, trial: Any) -> bool:
        decision = self.decision
        if isinstance(decision, str):
            return DECISIONS[decision][1](data.nbytes, len(byte_view(trial)) if trial is not None else 0)
        if isinstance(decision, int):
            return bool(decision >> i & 1)
        args: tuple[Any, ...] = (None, i, codec, data) if self._with_index else (None, codec, data)
        if self.trial_encode:
            args += (trial,)
        return bool(decision(*args))

    def mask_and_encode(self, data: Any, spec: ChunkSpec) -> tuple[int, Any]:
        """The bitmask the decision gives for ``data``, and ``data`` encoded with it (no header)."""
        current = byte_view(data)
        mask = 0
        for i, codec in enumerate(self.codecs):
            trial = codec.encode(current, spec) if self.trial_encode else None
            if self._apply(i, codec, current, trial):
                mask |= 1 << i
                current = byte_view(trial if trial is not None else codec.encode(current, spec))
        return mask, current

    def encode(self, data: bytes | memoryview, spec: ChunkSpec) -> bytes:
        mask, encoded = self.mask_and_encode(data, spec)
        return b"".join((mask.to_bytes(self.header_bytes, "little"), encoded))

    # -- decode ------------------------------------------------------------------
    def read_mask(self, data: Any, key: str = "") -> int:
        """The bitmask in the header of the stored chunk ``data``, checked."""
        mv = byte_view(data)
        n = self.header_bytes
        if mv.nbytes < n:
            raise CorruptChunkError(
                f"chunk {key!r}: {_WHERE}: holds {mv.nbytes} bytes, shorter than its {n}-byte header"
            )
        mask = int.from_bytes(mv[:n], "little")
        if mask >> len(self.codecs):
            extra = [b for b in range(len(self.codecs), self.header_bits) if mask >> b & 1]
            raise CorruptChunkError(
                f"chunk {key!r}: {_WHERE}: header bit(s) {extra} set, but there are only {len(self.codecs)} "
                f"codecs (bits {len(self.codecs)}..{self.header_bits - 1} are reserved and must be 0)"
            )
        return mask

    def decode(
        self,
        data: bytes | memoryview,
        spec: ChunkSpec,
        key: str = "",
        out: memoryview | None = None,
        *,
        size: int | None = None,
    ) -> bytes | memoryview:
        from .chain import bounded_decode

        mask = self.read_mask(data, key)
        payload: Any = byte_view(data)[self.header_bytes :]
        applied = [i for i in range(len(self.codecs)) if mask >> i & 1]
        bound = DecodeBound(key, self.name, size, out)
        sizes: dict[int, int | None] = {}  # the decoded size of each applied codec, where fixed
        known = bound.size
        for i in applied:
            sizes[i] = known
            known = None if known is None else self.codecs[i].encoded_size(known)
        if not applied:
            bound.check(payload.nbytes, "holds (no codec applied)")
            if out is None:
                return payload
            bound.out[:] = payload  # type: ignore[index]
            return out
        for i in reversed(applied):
            last = i == applied[0]
            payload = bounded_decode(self.codecs[i], payload, spec, key, out if last else None, sizes[i])
        return out if out is not None else payload

    def __repr__(self) -> str:
        decision = self.decision if not callable(self.decision) else getattr(self.decision, "__name__", "function")
        return f"ConditionalCodec({self.get_config()}, decision={decision!r})"
