"""Run dask's own zarr tests with ``dask.array.to_zarr``, ``dask.array.from_zarr``
and ``dask.array.Array.to_zarr`` routed to :func:`zarrdask.to_zarr` and
:func:`zarrdask.from_zarr`.

The adapters only translate dask's argument names into zarrdask's: arguments
given by position are named as dask names them, ``component`` becomes ``path``,
and everything else is passed on as given (nothing is added, defaulted or
dropped), so a keyword zarrdask does not take fails as it would for a user.

dask's test suite turns the warnings dask emits into errors
(``filterwarnings = ["error:::dask[.*]", ...]`` in dask's ``pyproject.toml``;
``test_zarr_risky_shards_warns`` relies on it). zarrdask attributes its warnings
to its first caller outside zarrdask and dask, which here is the adapter, so the
same filter is applied to warnings attributed to this package.

Deliberate differences are marked where the tests are collected
(``test_dask_own_suite.DIFFERENCES``) and listed in ``docs/differences.md``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Iterator

import pytest

_RENAMED = {"component": "path"}


def _adapter(dask_function: Callable[..., Any], zarrdask_function: Callable[..., Any], leading: int
             ) -> Callable[..., Any]:
    """``zarrdask_function`` called with dask's arguments: the first ``leading``
    positional ones as they are, the others by dask's name (renamed per ``_RENAMED``)."""
    signature = inspect.signature(dask_function)

    def routed(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind_partial(*args, **kwargs).arguments  # what the caller gave, no defaults
        names = list(signature.parameters)
        leading_args = [bound.pop(n) for n in names[:leading]]
        given: dict[str, Any] = {}
        for name, value in bound.items():
            if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                given.update(value)
            else:
                given[name] = value
        return zarrdask_function(*leading_args, **{_RENAMED.get(k, k): v for k, v in given.items()})

    routed.__name__ = routed.__qualname__ = f"routed_{dask_function.__name__}"
    return routed


@pytest.fixture(autouse=True)
def _routed_to_zarrdask(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import dask.array
    import dask.array.core

    import zarrdask

    to_zarr = _adapter(dask.array.core.to_zarr, zarrdask.to_zarr, leading=2)  # (arr, url, ...)
    from_zarr = _adapter(dask.array.core.from_zarr, zarrdask.from_zarr, leading=1)  # (url, ...)

    def array_to_zarr(self: Any, *args: Any, **kwargs: Any) -> Any:
        return to_zarr(self, *args, **kwargs)

    for module in (dask.array, dask.array.core):
        monkeypatch.setattr(module, "to_zarr", to_zarr)
        monkeypatch.setattr(module, "from_zarr", from_zarr)
    monkeypatch.setattr(dask.array.Array, "to_zarr", array_to_zarr)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=r"dask[.*]")  # dask's own configuration
        warnings.filterwarnings("error", module=r"tests\.dask_suite[.*]")  # the adapters stand in for dask's functions
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import fnmatch
    import pathlib

    here = pathlib.Path(__file__).parent
    ours = [item for item in items if here in item.path.parents]
    if not ours:  # zarr-python is not installed: the suite's module skipped itself
        return
    from .test_dask_own_suite import DIFFERENCES

    for item in ours:
        reasons = [r for pattern, r in DIFFERENCES.items() if fnmatch.fnmatchcase(item.name, pattern)]
        if reasons:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"deliberate difference: {reasons[0]}"))
