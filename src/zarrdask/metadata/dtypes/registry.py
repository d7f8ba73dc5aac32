"""Which data-type families exist, and how a v3 name, a v2 typestr or a numpy dtype finds its family.

:data:`FAMILIES` lists every family, one line each; :data:`REGISTRY` is built
from that list and from nothing else (importing a family's module registers
nothing). Adding a data type is one module holding a
:class:`~.base.DataType` subclass and one line in :data:`FAMILIES`. Code that
wants more types builds its own ``Registry(FAMILIES + (MyType,))``.

The order of :data:`FAMILIES` is the order in which errors list the known
v3 names (core names first, alphabetically; then the others in this order).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import numpy as np

from ...errors import UnknownDataTypeError
from ..json_checks import MISSING, field_error
from .base import DataType
from .boolean import Bool
from .complexes import Complex
from .fixed_bytes import NullTerminatedBytes
from .fixed_strings import FixedLengthUTF32
from .floats import Float
from .integers import Integer
from .raw import RawBits, RawBytes
from .small_complexes import SmallComplex
from .small_floats import SmallFloat
from .small_ints import SmallInteger
from .structured import Structured
from .times import NumpyTime
from .typestr import split_typestr
from .vlen import String, VariableLengthBytes

__all__ = ["FAMILIES", "REGISTRY", "Registry"]

FAMILIES: tuple[type[DataType], ...] = (
    Bool,  # bool
    Integer,  # int8 … uint64
    Float,  # float16, float32, float64
    Complex,  # complex64, complex128
    RawBits,  # r<N>
    NumpyTime,  # numpy.datetime64, numpy.timedelta64
    FixedLengthUTF32,  # fixed_length_utf32 (numpy U)
    NullTerminatedBytes,  # null_terminated_bytes (numpy S)
    RawBytes,  # raw_bytes (numpy V)
    Structured,  # struct, structured
    String,  # string (numpy StringDType)
    VariableLengthBytes,  # bytes, variable_length_bytes (numpy object, v2 "|O")
    SmallInteger,  # int2, int4, uint2, uint4 (ml_dtypes)
    SmallFloat,  # bfloat16, float8_*, float6_*, float4_e2m1fn (ml_dtypes)
    SmallComplex,  # complex_float16, complex_bfloat16, complex_float8_*, … (real/imag struct)
)


#: How many parsed type strings (v3 names, v2 typestrs) a registry remembers.
_CACHE_SIZE = 256


class Registry:
    """Data-type families found by v3 name, v2 typestr kind and numpy dtype kind.

    Two families may not claim the same name or kind (``ValueError``). What a
    data type *string* parses to is remembered (a consolidated document repeats
    a few of them many times), so the data types it returns are shared: treat
    them as immutable.
    """

    def __init__(self, families: Iterable[type[DataType]]) -> None:
        self.families = tuple(families)
        self._v3: dict[str, type[DataType]] = {}
        self._v2: dict[str, type[DataType]] = {}
        self._v2_names: dict[str, type[DataType]] = {}
        self._numpy: dict[str, type[DataType]] = {}
        self._dtypes: dict[np.dtype, type[DataType]] = {}
        self._patterns: list[tuple[re.Pattern, type[DataType]]] = []
        for family in self.families:
            for name in family.V3_CORE_NAMES + family.V3_EXTENSION_NAMES:
                self._claim(self._v3, name, family, "the v3 name")
            for kind in family.V2_KINDS:
                self._claim(self._v2, kind, family, "the v2 kind")
            for name in family.V2_NAMES:
                self._claim(self._v2_names, name, family, "the v2 name")
            for kind in family.NUMPY_KINDS:
                self._claim(self._numpy, kind, family, "the numpy kind")
            for dtype in family.NUMPY_DTYPES:
                self._claim(self._dtypes, dtype, family, "the numpy dtype")
            if family.V3_NAME_PATTERN is not None:
                self._patterns.append((re.compile(family.V3_NAME_PATTERN), family))
        core = sorted(n for f in self.families for n in f.V3_CORE_NAMES)
        others = [n for f in self.families
                  for n in ((f.V3_PATTERN_TEXT,) if f.V3_NAME_PATTERN else ()) + f.V3_EXTENSION_NAMES]
        #: The known v3 names as errors list them.
        self.known_v3: tuple[str, ...] = tuple(core + others)
        self._v3_names: dict[str, DataType] = {}
        self._v2_typestrs: dict[str, np.dtype] = {}

    @staticmethod
    def _claim(table: dict, what: str, family: type[DataType], label: str) -> None:
        if what in table:
            raise ValueError(f"data type families {table[what].__name__} and {family.__name__} "
                             f"both claim {label} {what!r}")
        table[what] = family

    def family_v3(self, name: str) -> type[DataType] | None:
        """The family of a v3 data type name, or ``None``."""
        family = self._v3.get(name)
        if family is None:
            for pattern, candidate in self._patterns:
                if pattern.fullmatch(name):
                    return candidate
        return family

    def parse_v3(self, doc: Any, key: str, field: str, depth: int = 0) -> DataType:
        """The data type of a v3 ``data_type`` value (a name or an object with ``name``);
        ``depth`` is how many structs enclose it."""
        if isinstance(doc, str):
            known = self._v3_names.get(doc)
            if known is not None:
                return known
            t = self._parse_v3_object(doc, {"name": doc}, key, field, depth)
            return _remember(self._v3_names, doc, t)  # a bare name depends on nothing else
        if not isinstance(doc, dict):
            raise field_error(key, field, doc, "a data type name string or an object with \"name\"")
        name = doc.get("name", MISSING)
        if not isinstance(name, str):
            raise field_error(key, f"{field}.name", name, "a data type name string")
        extra = set(doc) - {"name", "configuration", "must_understand"}
        if extra:
            raise field_error(key, field, doc, f"an object with name and configuration (unknown keys: {sorted(extra)})")
        if doc.get("must_understand", True) is not True:
            raise field_error(key, f"{field}.must_understand", doc["must_understand"],
                              "true or absent (v3-core: must_understand=false is not supported for data types)")
        return self._parse_v3_object(name, doc, key, field, depth)

    def _parse_v3_object(self, name: str, doc: dict, key: str, field: str, depth: int) -> DataType:
        family = self.family_v3(name)
        if family is None:
            raise field_error(key, field, name if doc == {"name": name} else doc,
                              f"a known data type ({', '.join(self.known_v3)})", UnknownDataTypeError)
        return family.from_v3(name, doc, key, field, self, depth)

    def parse_v2(self, doc: Any, key: str, field: str, depth: int = 0) -> np.dtype:
        """The numpy dtype of a v2 ``dtype`` value (typestr or list of fields), byte order as stored;
        ``depth`` is how many structured types enclose it."""
        if isinstance(doc, str):
            dtype = self._v2_typestrs.get(doc)
            if dtype is None and doc in self._v2_names:
                dtype = self._v2_names[doc].from_v2(doc, key, field, self, depth)
            if dtype is None:
                ts = split_typestr(doc, key, field)
                family = self._v2.get(ts.kind)
                if family is None:
                    raise ts.error(key, field)
                dtype = _remember(self._v2_typestrs, doc, family.from_v2(ts, key, field, self, depth))
            return dtype
        if isinstance(doc, list) and "fields" in self._v2:
            return self._v2["fields"].from_v2(doc, key, field, self, depth)
        raise field_error(key, field, doc, "a NumPy typestr such as \"<f8\" or a list of structured fields",
                          UnknownDataTypeError)

    def for_dtype(self, dtype: np.dtype) -> DataType:
        """The data type of a numpy dtype, in its family's default v3 form."""
        family = self._dtypes.get(dtype) if self._dtypes else None
        if family is None:
            family = self._numpy.get("fields" if dtype.names is not None else dtype.kind)
        if family is None:
            raise UnknownDataTypeError(f"numpy dtype {dtype} has no Zarr data type")
        return family.from_numpy(dtype, self)


def _remember(cache: dict, text: str, value: Any) -> Any:
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    cache[text] = value
    return value


REGISTRY = Registry(FAMILIES)
