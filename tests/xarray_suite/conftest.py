"""Run xarray's own zarr backend tests through zarrdask, twice over.

- ``test_xarray_own_suite.py`` (the reader): xarray writes with its own
  engine (zarr-python); reads that name ``engine="zarr"`` — ``open_dataset``,
  ``open_zarr``, ``open_mfdataset``, ``open_datatree``, ``open_groups``, and
  engine guessing — get zarrdask's backend instead (xarray's backend table is
  patched for each test).
- ``test_xarray_own_writer_suite.py`` (the writer): every ``Dataset.to_zarr``,
  ``DataArray.to_zarr`` and ``DataTree.to_zarr`` goes through
  :func:`zarrdask.xarray.to_zarr` (xarray's ``backends.writers.to_zarr`` and
  ``_datatree_to_zarr`` are patched for each test); xarray's own engine reads
  everything back.

A test that fails this way is run once more with xarray's own engine (reader)
or writer (writer). It is reported as xfailed ("fails with xarray's own ...
too") only when that run fails the same way (same exception type and message),
or, where the first run may have left state behind that changes the second (a
fixture's store), when the test also fails with xarray's own in a fresh
process; otherwise the zarrdask failure stands.
Deliberate differences are marked where the tests are collected
(``DIFFERENCES`` of each module) and listed in ``docs/xarray.md``.
"""

from __future__ import annotations

import contextlib
import warnings
import os
import subprocess
import sys
from typing import Any, Iterator

import pytest

#: whether reads or writes go through zarrdask (a fresh process checking xarray's
#: own engine and writer sets ZARRDASK_SUITE_ENGINE=zarr)
_state = {"redirect": os.environ.get("ZARRDASK_SUITE_ENGINE", "zarrdask") == "zarrdask"}
_WRITER_MODULE = "test_xarray_own_writer_suite"

#: markers xarray's own tests use; xarray registers them in its pyproject.toml, which
#: its wheel does not ship, so with ``--strict-markers`` (enforced from ``addopts`` by
#: pytest 8; pytest 9.0 only warns) importing its test modules would fail
_XARRAY_MARKERS = ("flaky", "skip_if_param", "skip_with_dask_array", "slow_hypothesis")


def pytest_configure(config: pytest.Config) -> None:
    for name in _XARRAY_MARKERS:
        config.addinivalue_line("markers", f"{name}: a marker of xarray's own tests (tests/xarray_suite)")


@contextlib.contextmanager
def zarr_engine_is_zarrdask(on: bool) -> Iterator[None]:
    """Within this block, ``engine="zarr"`` opens with zarrdask's backend (``on``)
    or with xarray's own (``not on``)."""
    from xarray.backends import plugins
    from xarray.backends.zarr import ZarrBackendEntrypoint

    from zarrdask.xarray.backend import ZarrdaskBackendEntrypoint

    old = plugins.BACKEND_ENTRYPOINTS["zarr"]
    cls = ZarrdaskBackendEntrypoint if on else ZarrBackendEntrypoint
    plugins.BACKEND_ENTRYPOINTS["zarr"] = ("zarrdask" if on else "zarr", cls)
    plugins.list_engines.cache_clear()
    try:
        yield
    finally:
        plugins.BACKEND_ENTRYPOINTS["zarr"] = old
        plugins.list_engines.cache_clear()


@contextlib.contextmanager
def writes_go_through_zarrdask(on: bool) -> Iterator[None]:
    """Within this block, ``Dataset.to_zarr``, ``DataArray.to_zarr`` and
    ``DataTree.to_zarr`` write with :func:`zarrdask.xarray.to_zarr` (``on``) or
    with xarray's own writer (``not on``)."""
    import zarr
    from xarray.backends import writers

    import zarrdask
    from zarrdask.errors import AlignmentWarning
    from zarrdask.xarray import to_zarr

    def through_zarrdask(obj: Any, store: Any = None, **kwargs: Any) -> Any:
        # xarray's tests choose the format of new groups with zarr-python's
        # default_zarr_format setting (a fixture); zarrdask has the same setting
        with zarrdask.config.set(default_zarr_format=zarr.config.get("default_zarr_format")), \
                warnings.catch_warnings():
            # where dask blocks cut through chunks xarray's writer raises or writes unsafely;
            # zarrdask's rechunks them and says so (AlignmentWarning), which tests written for
            # xarray's writer cannot expect: expected here, still raised by every other test
            warnings.simplefilter("ignore", AlignmentWarning)
            return to_zarr(obj, store, **kwargs)

    saved = writers.to_zarr, writers._datatree_to_zarr
    own = _XARRAYS_WRITERS.setdefault("writers", saved)
    writers.to_zarr, writers._datatree_to_zarr = (through_zarrdask, through_zarrdask) if on else own
    try:
        yield
    finally:
        writers.to_zarr, writers._datatree_to_zarr = saved


#: xarray's own writers, as found before the first test patched them
_XARRAYS_WRITERS: dict[str, Any] = {}


def routed(item: pytest.Item, on: bool) -> contextlib.AbstractContextManager[None]:
    """What ``item``'s module routes through zarrdask: its writes or its reads."""
    if item.path.stem == _WRITER_MODULE:
        return writes_go_through_zarrdask(on)
    return zarr_engine_is_zarrdask(on)


@pytest.fixture(autouse=True)
def _through_zarrdask(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # some of xarray's tests write into the working directory
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    if _state["redirect"] and request.node.path.stem == _WRITER_MODULE:
        # the writer's errors must be of xarray's types; their wording may differ
        monkeypatch.setattr(pytest, "raises", _any_wording(pytest.raises))
    with routed(request.node, _state["redirect"]):
        yield


def _any_wording(raises: Any) -> Any:
    """``pytest.raises`` that checks the exception's type only (``match`` ignored)."""

    def raises_any_wording(expected: Any, *args: Any, match: Any = None, **kwargs: Any) -> Any:
        return raises(expected, *args, **kwargs)

    return raises_any_wording


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    except (pytest.skip.Exception, pytest.xfail.Exception):
        raise
    except BaseException as failure:
        if item.get_closest_marker("xfail") is not None or not _state["redirect"]:
            raise
        _empty_temporary_directories(item)
        again: BaseException | None = None
        with routed(item, False):
            try:
                item.runtest()
            except BaseException as e:
                again = e
        if again is None:
            raise failure  # passes with xarray's engine: zarrdask's failure
        same = type(again) is type(failure) and str(again) == str(failure)
        if same or _fails_with_xarrays_engine_in_a_fresh_process(item):
            pytest.xfail(
                f"fails with xarray's own {_own(item)} too: {type(again).__name__}: {again}"[:300]
                + ("" if same else f" (with zarrdask: {type(failure).__name__}: {failure})"[:300])
            )
        raise failure


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A fixture that fails (they write with xarray's own engine) counts as zarrdask's
    failure only if the test passes with xarray's engine in a fresh process."""
    try:
        return (yield)
    except (pytest.skip.Exception, pytest.xfail.Exception):
        raise
    except BaseException as failure:
        if item.get_closest_marker("xfail") is not None or not _state["redirect"]:
            raise
        if _fails_with_xarrays_engine_in_a_fresh_process(item):
            pytest.xfail(f"set-up fails with xarray's own {_own(item)} too: {type(failure).__name__}: {failure}"[:300])
        raise failure


def _own(item: pytest.Item) -> str:
    return "writer" if item.path.stem == _WRITER_MODULE else "engine='zarr'"


def _fails_with_xarrays_engine_in_a_fresh_process(item: pytest.Item) -> bool:
    """Run ``item`` alone, with xarray's own engine, in a new Python process."""
    # only the test's own class (or function) is collected there: collecting them all takes ~20 s
    only = item.cls.__name__ if item.cls is not None else getattr(item, "originalname", item.name)
    env = dict(os.environ, ZARRDASK_SUITE_ENGINE="zarr", ZARRDASK_SUITE_ONLY=only)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-W", "ignore",
           item.nodeid]
    done = subprocess.run(cmd, cwd=str(item.config.rootpath), env=env, capture_output=True, timeout=300)
    return done.returncode not in (0, 5)  # 5: nothing ran


def _empty_temporary_directories(item: pytest.Item) -> None:
    """Give the second run the empty ``tmp_path``/``tmpdir`` the first one had."""
    import pathlib
    import shutil

    for name in ("tmp_path", "tmpdir"):
        d = getattr(item, "funcargs", {}).get(name)
        if d is None:
            continue
        for child in pathlib.Path(d).iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import fnmatch
    import pathlib

    here = pathlib.Path(__file__).parent
    ours = [item for item in items if here in item.path.parents]
    if not ours:  # e.g. zarr-python is not installed: the suite's module skipped itself
        return
    for item in ours:
        name = f"{item.cls.__name__ if item.cls else '-'}::{item.name}"
        differences = getattr(item.module, "DIFFERENCES", {})
        reasons = [r for pattern, r in differences.items() if fnmatch.fnmatchcase(name, pattern)]
        if reasons:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"deliberate difference: {reasons[0]}"))
