"""Run xarray's own zarr backend tests with every read going through engine="zarrdask".

xarray writes with its own engine (zarr-python); reads that name
``engine="zarr"`` — ``open_dataset``, ``open_zarr``, ``open_mfdataset``,
``open_datatree``, ``open_groups``, and engine guessing — get zarrdask's backend
instead (xarray's backend table is patched for each test).

A test that fails this way is run once more with xarray's own engine. It is
reported as xfailed ("fails with xarray's own engine too") only when that run
fails the same way (same exception type and message), or, where the first run
may have left state behind that changes the second (a fixture's store), when
the test also fails with xarray's engine in a fresh process; otherwise the
zarrdask failure stands.
Deliberate differences are marked where the tests are collected
(``test_xarray_own_suite.DIFFERENCES``) and listed in ``docs/xarray.md``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Iterator

import pytest

#: whether reads go through zarrdask (a fresh process checking xarray's own
#: engine sets ZARRDASK_SUITE_ENGINE=zarr)
_state = {"redirect": os.environ.get("ZARRDASK_SUITE_ENGINE", "zarrdask") == "zarrdask"}

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


@pytest.fixture(autouse=True)
def _reads_through_zarrdask(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                            ) -> Iterator[None]:
    # some of xarray's tests write into the working directory
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    with zarr_engine_is_zarrdask(_state["redirect"]):
        yield


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
        with zarr_engine_is_zarrdask(False):
            try:
                item.runtest()
            except BaseException as e:
                again = e
        if again is None:
            raise failure  # passes with xarray's engine: zarrdask's failure
        same = type(again) is type(failure) and str(again) == str(failure)
        if same or _fails_with_xarrays_engine_in_a_fresh_process(item):
            pytest.xfail(
                f"fails with xarray's own engine='zarr' too: {type(again).__name__}: {again}"[:300]
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
            pytest.xfail(f"set-up fails with xarray's own engine='zarr' too: {type(failure).__name__}: {failure}"[:300])
        raise failure


def _fails_with_xarrays_engine_in_a_fresh_process(item: pytest.Item) -> bool:
    """Run ``item`` alone, with xarray's own engine, in a new Python process."""
    env = dict(os.environ, ZARRDASK_SUITE_ENGINE="zarr")
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
    from .test_xarray_own_suite import DIFFERENCES

    for item in ours:
        name = f"{item.cls.__name__ if item.cls else '-'}::{item.name}"
        reasons = [r for pattern, r in DIFFERENCES.items() if fnmatch.fnmatchcase(name, pattern)]
        if reasons:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"deliberate difference: {reasons[0]}"))
