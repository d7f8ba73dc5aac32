"""xarray's own zarr backend tests, collected from the installed xarray, with
every read going through engine="zarrdask" (see ``conftest.py``).

Collected: every ``ZarrBase``-derived class of ``xarray/tests/test_backends.py``
(the store × zarr_format matrix), the DataTree zarr IO tests of
``test_backends_datatree.py``, and the other tests of those modules whose name
says zarr. Left out, with why:

- ``TestInstrumentedZarrStore`` counts the calls xarray's engine makes on a
  zarr-python store; zarrdask makes its own (batched) calls, which
  ``tests/xarray/test_backend_matrix.py`` counts.
- ``test_zarr_entrypoint`` instantiates ``ZarrBackendEntrypoint`` itself.
- ``test_encode_zarr_attr_value`` and ``test_extract_zarr_variable_encoding``
  test xarray helpers that read nothing.
"""

from __future__ import annotations

import inspect
import os

import pytest

pytest.importorskip("xarray")
pytest.importorskip("zarr")

from xarray.tests import conftest as _xconftest  # noqa: E402
from xarray.tests import test_backends as _tb  # noqa: E402
from xarray.tests import test_backends_datatree as _tbd  # noqa: E402

_LEFT_OUT = {
    "TestInstrumentedZarrStore",
    "test_zarr_entrypoint",
    "test_encode_zarr_attr_value",
    "test_extract_zarr_variable_encoding",
}


def _fixtures(module: object) -> dict[str, object]:
    return {n: f for n, f in vars(module).items() if type(f).__name__ == "FixtureFunctionDefinition"}


def _zarr_tests(module: object) -> dict[str, object]:
    out = {}
    for name, obj in vars(module).items():
        if name in _LEFT_OUT or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj) and name.startswith("Test"):
            if issubclass(obj, _tb.ZarrBase) or "zarr" in name.lower():
                out[name] = obj
        elif inspect.isfunction(obj) and name.startswith("test") and "zarr" in name.lower():
            out[name] = obj
    return out


#: xarray's fixtures (its conftest's and those of the two modules)
FIXTURES = {**_fixtures(_xconftest), **_fixtures(_tb), **_fixtures(_tbd)}
#: xarray's zarr tests, and those that use zarr without "zarr" in their name (those
#: the installed xarray has; xarray 2024.10 has only the first)
TESTS = {
    **_zarr_tests(_tb),
    **_zarr_tests(_tbd),
    **{name: getattr(_tb, name) for name in
       ("test_open_fsspec", "test_open_mfdataset_fsspec", "test_chunking_consistency") if hasattr(_tb, name)},
}
if os.environ.get("ZARRDASK_SUITE_ONLY"):  # a re-run of one test in a fresh process (conftest.py)
    TESTS = {k: v for k, v in TESTS.items() if k == os.environ["ZARRDASK_SUITE_ONLY"]}
globals().update(FIXTURES)
globals().update(TESTS)

_FILL_VALUE_KEYWORD = (
    "use_zarr_fill_value_as_mask=False is honoured; xarray's engine='zarr' drops the keyword in "
    "open_dataset (pydata/xarray#10269), so it masks Zarr v2 data with its fill_value anyway, and "
    "this test asserts that"
)

_ZARR_PYTHON_ASYNC_INTERNALS = (
    "mocks zarr-python's AsyncArray.getitem (and its oindex/vindex forms) and asserts that "
    "load_async awaits it; zarrdask reads through its own engine, never through zarr-python's "
    "array methods (its load_async runs the engine in a worker thread; the results are checked in "
    "tests/xarray/test_parity.py)"
)

#: ``"<Class>::<test id>"`` patterns (fnmatch; module-level tests have the class
#: ``-``) → why zarrdask deliberately differs. Each is listed in docs/xarray.md.
DIFFERENCES: dict[str, str] = {
    "*::test_zarr_fill_value_setting[[]2-*": _FILL_VALUE_KEYWORD,
    "TestZarrDictStore::test_indexing[[]*": _ZARR_PYTHON_ASYNC_INTERNALS,
    "TestZarrDictStore::test_async_load_multiple_variables*": _ZARR_PYTHON_ASYNC_INTERNALS,
    "TestZarrDictStore::test_concurrent_load_multiple_objects*": _ZARR_PYTHON_ASYNC_INTERNALS,
}
