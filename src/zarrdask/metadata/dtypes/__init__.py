"""Data types and fill values: numpy ↔ Zarr v2 ``dtype`` ↔ Zarr v3 ``data_type``.

Pure code, no I/O. One module per data-type family, each a
:class:`~.base.DataType` subclass that recognises its v2 typestr and its v3
data type JSON, knows its numpy dtype, and encodes and decodes its fill values
in v2 and v3 JSON; its module docstring cites the spec sections it follows:

=====================  ==========================================================
:mod:`.boolean`        ``bool``
:mod:`.integers`       ``int8`` … ``uint64``
:mod:`.floats`         ``float16``, ``float32``, ``float64`` (NaN, infinities, hex bits)
:mod:`.complexes`      ``complex64``, ``complex128`` (and ``complex_float32``, ``complex_float64``)
:mod:`.times`          ``numpy.datetime64``, ``numpy.timedelta64``
:mod:`.fixed_strings`  ``fixed_length_utf32`` (numpy ``U``)
:mod:`.fixed_bytes`    ``null_terminated_bytes`` (numpy ``S``)
:mod:`.raw`            raw bits ``r<N>`` and ``raw_bytes`` (numpy ``V``)
:mod:`.small_ints`     ``int2``, ``int4``, ``uint2``, ``uint4`` (``ml_dtypes``)
:mod:`.small_floats`   ``bfloat16``, ``float8_*``, ``float6_*``, ``float4_e2m1fn`` (``ml_dtypes``)
:mod:`.small_complexes` ``complex_float16``, ``complex_bfloat16``, ``complex_float8_*``, … (real/imag fields)
:mod:`.structured`     ``struct`` and its legacy alias ``structured``
:mod:`.vlen`           ``string`` and ``bytes`` / ``variable_length_bytes``; v2 ``"|O"``
=====================  ==========================================================

:mod:`.registry` lists the families (one line each) and finds a family from
a v3 name, a v2 typestr or a numpy dtype; :mod:`.api` holds the functions the
metadata documents and the core call. :mod:`.base` is the family contract,
:mod:`.typestr` splits v2 typestrs, :mod:`.binary` holds the bytes forms of
fill values (base64, lists of byte values) several families share.

v2 (``zarr-specs/v2-v2.0.rst`` "Data type encoding", "Fill value encoding")
keeps the byte order as stored; v3 data types are always native (byte order
belongs to the ``bytes`` codec). How the *JSON form* of a v3 data type is chosen
(:func:`data_type_to_v3`) is what zarr-python 3.1.6 writes, so arrays written
here are readable there (``raw_bytes``, ``null_terminated_bytes``,
``structured``; see :mod:`.raw`, :mod:`.fixed_bytes`, :mod:`.structured`).
"""

from .api import *  # noqa: F403 - the functions the metadata documents and the core call (api.__all__)
from .api import __all__ as _functions
from .base import DataType
from .registry import FAMILIES, REGISTRY, Registry
from .vlen import vlen_dtype_v2, vlen_fill_value_v2

__all__ = [
    *_functions,
    "vlen_dtype_v2",
    "vlen_fill_value_v2",
    "DataType",
    "Registry",
    "FAMILIES",
    "REGISTRY",
]
