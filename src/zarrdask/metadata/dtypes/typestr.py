"""Zarr v2 ``dtype`` strings: a NumPy typestr split into byte order, kind, size and unit.

``zarr-specs/v2-v2.0.rst`` "Data type encoding": a typestr is a byte order
(``<``, ``>`` or ``|``), a kind character, a size, and for ``datetime64`` /
``timedelta64`` an optional ``[<scale><unit>]`` (``"<f8"``, ``"|S12"``,
``"<m8[10s]"``). :func:`split_typestr` only splits; which kinds, sizes and
units are valid is up to the family the kind belongs to
(:meth:`.base.DataType.from_v2`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from ...errors import MetadataError, UnknownDataTypeError
from ..json_checks import field_error

__all__ = ["EXPECTED_TYPESTR", "Typestr", "split_typestr"]

_TYPESTR = re.compile(r"^([<>|])([A-Za-z])(\d{0,19})(?:\[(\d{0,19})([A-Za-zμ]+)\])?$")

EXPECTED_TYPESTR = ('a NumPy typestr with byte order, kind and size, e.g. "<f8", ">i4", "|b1", "|S12", '
                    '"<M8[ns]" (v2 spec "Data type encoding")')


class Typestr(NamedTuple):
    """The parts of a v2 typestr (empty ``size`` / ``None`` unit when absent)."""

    text: str
    order: str  # "<", ">" or "|"
    kind: str  # one character
    size: str  # the digits after the kind, possibly ""
    scale: str | None  # the digits inside "[...]"
    unit: str | None  # the unit inside "[...]"

    def error(self, key: str, field: str, expected: str = EXPECTED_TYPESTR) -> MetadataError:
        """The :class:`~zarrdask.errors.UnknownDataTypeError` naming this typestr."""
        return field_error(key, field, self.text, expected, UnknownDataTypeError)

    def to_dtype(self, key: str, field: str) -> np.dtype:
        """The numpy dtype of this (checked) typestr, with its byte order."""
        try:
            return np.dtype(self.text)
        except TypeError:
            raise self.error(key, field) from None


def split_typestr(s: str, key: str, field: str) -> Typestr:
    """The parts of ``s``; an :class:`~zarrdask.errors.UnknownDataTypeError` if it has not a typestr's shape."""
    m = _TYPESTR.match(s)
    if not m:
        raise field_error(key, field, s, EXPECTED_TYPESTR, UnknownDataTypeError)
    return Typestr(s, *m.groups())
