"""The contract of a data-type family, and what families share about dtypes and v3 data type objects.

A *family* is a :class:`DataType` subclass: it recognises its v2 typestrs and
its v3 data type JSON, knows its numpy dtypes, and encodes and decodes its fill
values in v2 and v3 JSON. An *instance* is one resolved data type: its numpy
``dtype`` and, where the family has several v3 spellings (``struct`` /
``structured``), the one it was read in, which decides the fill value's JSON
form. Families are listed in :data:`.registry.FAMILIES`; the
:class:`~.registry.Registry` finds them from what they declare:

``V3_CORE_NAMES``, ``V3_EXTENSION_NAMES``
    The v3 ``data_type`` names the family reads (``zarr-specs/v3-data-types.rst``
    core types; ``zarr-extensions/data-types-*.md``).
``V3_NAME_PATTERN``, ``V3_PATTERN_TEXT``
    A regular expression for names that carry a parameter (raw bits ``r<N>``),
    and how errors spell it.
``V2_NAMES``
    Whole v2 ``dtype`` strings that are not typestrs (tensorstore's ``"bfloat16"``,
    ``"int4"``, …): read, never written.
``V2_KINDS``
    The kinds of the v2 typestrs it reads (``"f"`` for ``"<f8"``), or
    ``"fields"`` for the v2 list form of structured types.
``NUMPY_DTYPES``
    numpy dtypes the family owns whatever their kind (``ml_dtypes``' types,
    whose kind is ``"V"`` or ``"f"``; the structured dtype of small complex
    numbers): looked up before ``NUMPY_KINDS``.
``NUMPY_KINDS``
    The numpy ``dtype.kind`` values of the dtypes it writes, or ``"fields"``
    for numpy dtypes with fields; the family whose v3 form is the default for
    those dtypes (``raw_bytes`` rather than ``r<N>``, as zarr-python writes).

Errors follow the house rules (:mod:`..json_checks`): every method that reads
JSON takes the document ``key`` and the ``field`` it came from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

import numpy as np

from ...errors import UnknownDataTypeError
from ..json_checks import MISSING, field_error, is_json_int
from ..limits import check_itemsize
from .typestr import Typestr, split_typestr

__all__ = ["CoreType", "DataType", "DataTypes", "configuration", "configured_length", "native",
           "no_configuration"]


class DataTypes(Protocol):
    """What a family whose values hold other types (structured) asks of the registry."""

    def parse_v3(self, doc: Any, key: str, field: str, depth: int = 0) -> DataType:
        """The data type of a v3 ``data_type`` JSON value; ``depth`` counts the enclosing structs."""

    def parse_v2(self, doc: Any, key: str, field: str, depth: int = 0) -> np.dtype:
        """The numpy dtype of a v2 ``dtype`` JSON value; ``depth`` counts the enclosing structs."""

    def for_dtype(self, dtype: np.dtype) -> DataType:
        """The data type of a numpy dtype, in its default v3 form."""


class DataType(ABC):
    """One data type of a family: its numpy ``dtype`` and its JSON forms.

    Fill values travel in three forms: the numpy scalar (or ``str`` / ``bytes``
    for variable-length types) that :meth:`normalize_fill` gives, v2 JSON and
    v3 JSON. ``decode_fill_v2`` / ``encode_fill_v2`` treat ``null`` / ``None``
    as "no fill value"; v3 has no such value (:meth:`decode_fill_v3`).
    """

    V3_CORE_NAMES: ClassVar[tuple[str, ...]] = ()
    V3_EXTENSION_NAMES: ClassVar[tuple[str, ...]] = ()
    V3_NAME_PATTERN: ClassVar[str | None] = None
    V3_PATTERN_TEXT: ClassVar[str] = ""
    V2_KINDS: ClassVar[tuple[str, ...]] = ()
    V2_NAMES: ClassVar[tuple[str, ...]] = ()
    NUMPY_KINDS: ClassVar[tuple[str, ...]] = ()
    NUMPY_DTYPES: ClassVar[tuple[np.dtype, ...]] = ()
    #: The sizes a v2 typestr of this family may have (``None``: any positive size).
    V2_SIZES: ClassVar[tuple[int, ...] | None] = None
    #: Bytes per unit of a v2 typestr's size for flexible kinds (``S``: 1, ``U``: 4), checked
    #: against :data:`~..limits.MAX_ITEMSIZE`; 0 for fixed-size kinds.
    V2_UNIT_BYTES: ClassVar[int] = 0
    #: A numpy scalar of exactly this (native) dtype is a valid fill value as it is
    #: (keeps NaN payloads); flexible and structured types always go through ``coerce_fill``.
    EXACT_SCALARS: ClassVar[bool] = False
    #: Elements have no fixed size (not allowed as fields of a structured type).
    VARIABLE_LENGTH: ClassVar[bool] = False

    __slots__ = ("dtype",)

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dtype!r})"

    # ------------------------------------------------------------------ recognising

    @classmethod
    @abstractmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> DataType:
        """The data type of a v3 ``data_type`` value named ``name`` (``doc`` is the
        object form; a bare name arrives as ``{"name": name}``)."""

    @classmethod
    def from_numpy(cls, dtype: np.dtype, types: DataTypes) -> DataType:
        """The data type of a numpy dtype this family owns (``NUMPY_KINDS``)."""
        return cls(dtype)

    @classmethod
    def from_v2(cls, doc: Any, key: str, field: str, types: DataTypes, depth: int) -> np.dtype:
        """The numpy dtype of a v2 ``dtype`` value of this family (a :class:`.Typestr`
        for typestr kinds), with the byte order as stored."""
        ts: Typestr = doc
        if not ts.size or int(ts.size) < 1:
            raise ts.error(key, field)
        n = int(ts.size)
        if cls.V2_UNIT_BYTES:
            check_itemsize(n * cls.V2_UNIT_BYTES, key, field, ts.text)
        if cls.V2_SIZES is not None and n not in cls.V2_SIZES:
            raise ts.error(key, field, f"a size in {cls.V2_SIZES} for kind {ts.kind!r}")
        cls.check_v2_unit(ts, key, field)
        if ts.order == "|" and cls.v2_byte_order_required(n):
            raise ts.error(key, field, "an explicit byte order '<' or '>' for a multi-byte type")
        return ts.to_dtype(key, field)

    @classmethod
    def check_v2_unit(cls, ts: Typestr, key: str, field: str) -> None:
        """Refuse a ``[unit]`` suffix (only time types have one)."""
        if ts.unit is not None:
            raise ts.error(key, field, "units only for datetime64/timedelta64 ('M'/'m')")

    @classmethod
    def v2_byte_order_required(cls, size: int) -> bool:
        """Whether a v2 typestr of this size must say ``<`` or ``>`` (multi-byte types)."""
        return size > 1

    # ------------------------------------------------------------------ writing

    @abstractmethod
    def to_v3(self, struct_name: str | None = None) -> str | dict:
        """The v3 ``data_type`` JSON (byte order is ignored: it belongs to the ``bytes``
        codec); ``struct_name`` spells structured types at any depth (default: as read).

        Raises :class:`~zarrdask.errors.UnknownDataTypeError` if v3 cannot represent it."""

    def to_v2(self) -> str | list:
        """The v2 ``dtype`` JSON: the typestr with its explicit byte order."""
        s = self.dtype.str
        try:
            parsed = self.from_v2(split_typestr(s, "<dtype>", "dtype"), "<dtype>", "dtype", None, 0)
        except UnknownDataTypeError:
            raise UnknownDataTypeError(f"numpy dtype {self.dtype} ({s}) has no Zarr v2 encoding") from None
        assert parsed == self.dtype
        return s

    def unrepresentable_v3(self) -> UnknownDataTypeError:
        """The error for a numpy dtype of this family that v3 cannot represent."""
        return UnknownDataTypeError(f"numpy dtype {self.dtype} has no Zarr v3 data type")

    # ------------------------------------------------------------------ fill values

    @abstractmethod
    def default_fill(self) -> Any:
        """The fill value used when none is given (the zero of the type; NaT for times)."""

    def normalize_fill(self, value: Any, key: str = "<fill_value>", field: str = "fill_value") -> Any:
        """``value`` as a fill value of this type (``None`` stays ``None``), its range checked."""
        if value is None:
            return None
        if self.EXACT_SCALARS and isinstance(value, np.generic) and value.dtype == native(self.dtype):
            return value
        return self.coerce_fill(value, key, field)

    @abstractmethod
    def coerce_fill(self, value: Any, key: str, field: str) -> Any:
        """A Python / numpy value (not ``None``) as a fill value of this type."""

    def decode_fill_v2(self, doc: Any, key: str, field: str) -> Any:
        """A v2 ``fill_value``; ``null`` is ``None``."""
        return None if doc is None else self.fill_from_v2(doc, key, field)

    def encode_fill_v2(self, value: Any) -> Any:
        """The v2 JSON of a fill value; ``None`` is ``null``."""
        return None if value is None else self.fill_to_v2(self.normalize_fill(value))

    def decode_fill_v3(self, doc: Any, key: str, field: str) -> Any:
        """A v3 ``fill_value`` (``null`` is not one)."""
        if doc is None:
            raise field_error(key, field, doc, f"a fill value for data type {self.dtype} (null is not permitted in v3)")
        return self.fill_from_v3(doc, key, field)

    def encode_fill_v3(self, value: Any) -> Any:
        """The v3 JSON of a fill value (not ``None``)."""
        return self.fill_to_v3(self.normalize_fill(value))

    @abstractmethod
    def fill_from_v2(self, doc: Any, key: str, field: str) -> Any:
        """A v2 fill value that is not ``null``."""

    @abstractmethod
    def fill_to_v2(self, value: Any) -> Any:
        """The v2 JSON of a normalized fill value."""

    @abstractmethod
    def fill_from_v3(self, doc: Any, key: str, field: str) -> Any:
        """A v3 fill value that is not ``null``."""

    @abstractmethod
    def fill_to_v3(self, value: Any) -> Any:
        """The v3 JSON of a normalized fill value."""


class CoreType(DataType):
    """A numeric core type of ``zarr-specs/v3-data-types.rst`` (bool, integers, floats,
    complex): named as numpy names its dtype, without configuration, zero by default,
    and a numpy scalar of exactly its dtype is a fill value as it is."""

    EXACT_SCALARS = True
    __slots__ = ()

    @classmethod
    def from_v3(cls, name: str, doc: dict, key: str, field: str, types: DataTypes, depth: int) -> DataType:
        no_configuration(name, doc, key, field)
        return cls(np.dtype(name))

    def default_fill(self) -> np.generic:
        return native(self.dtype).type(0)


# --------------------------------------------------------------------------- shared checks


def native(dtype: np.dtype) -> np.dtype:
    """``dtype`` with every field in native byte order."""
    if dtype.names is not None:
        fields = []
        for name in dtype.names:
            sub = dtype.fields[name][0]
            if sub.subdtype is not None:
                fields.append((name, native(sub.subdtype[0]), sub.subdtype[1]))
            else:
                fields.append((name, native(sub)))
        return np.dtype(fields)
    if dtype.kind in "SVOT" or dtype.itemsize <= 1 and dtype.kind != "U":
        return dtype
    return dtype.newbyteorder("=")


def no_configuration(name: str, doc: dict, key: str, field: str) -> None:
    """Refuse a non-empty ``configuration`` for a data type that has none (core types)."""
    if "configuration" in doc and doc["configuration"] not in ({},):
        raise field_error(key, f"{field}.configuration", doc["configuration"],
                          f"no configuration for data type {name!r}")


def configuration(doc: dict, name: str, key: str, field: str, required: tuple[str, ...]) -> dict:
    """The ``configuration`` of data type ``name``: an object with exactly the keys ``required``."""
    conf = doc.get("configuration", MISSING)
    if conf is MISSING or not isinstance(conf, dict):
        raise field_error(key, f"{field}.configuration", conf,
                          f"an object with {list(required)} for data type {name!r}")
    for r in required:
        if r not in conf:
            raise field_error(key, f"{field}.configuration.{r}", MISSING, f"a value (required for {name!r})")
    extra = set(conf) - set(required)
    if extra:
        raise field_error(key, f"{field}.configuration", conf,
                          f"only the keys {list(required)} for data type {name!r} (unknown: {sorted(extra)})")
    return conf


def configured_length(doc: dict, name: str, key: str, field: str, multiple: int = 1) -> int:
    """The ``length_bytes`` of data type ``name``'s configuration (its only key): a positive
    multiple of ``multiple`` numpy can represent."""
    n = configuration(doc, name, key, field, ("length_bytes",))["length_bytes"]
    if not is_json_int(n) or n < 1 or n % multiple:
        what = "a positive integer" + (f" multiple of {multiple}" if multiple > 1 else "")
        raise field_error(key, f"{field}.configuration.length_bytes", n, f"{what} for {name!r}")
    return check_itemsize(n, key, f"{field}.configuration.length_bytes", n)
