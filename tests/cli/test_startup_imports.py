"""What the command line and ``import zarrdask`` load before doing anything.

Start-up time itself is a benchmark row (``python -m benchmarks.cli_startup``);
what is asserted here is what makes it: the modules a process has imported.
``--help`` needs neither numpy nor the format core; ``info`` needs the core but
neither dask.array, xarray, fsspec nor asyncio; ``import zarrdask`` loads
nothing heavy, and the ``Dataset.zarrdask`` accessor is there whichever of
zarrdask and xarray is imported first.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import zarrdask

from ._util import subprocess_env

HEAVY = ("dask.array", "xarray", "distributed", "fsspec", "asyncio", "zarr", "pandas")


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)), file=sys.__stderr__)"
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert r.returncode in (0, 2), r.stderr  # click exits 0 for --help
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def run_cli(*args: str) -> str:
    return (f"import sys\nsys.argv = ['zarrdask', *{list(args)!r}]\nfrom zarrdask.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n")


def test_help_imports_neither_numpy_nor_the_core():
    loaded = modules_after(run_cli("--help"))
    assert "click" in loaded
    for name in ("numpy", "zarrdask.core.array", "zarrdask.storage", *HEAVY):
        assert name not in loaded, f"`zarrdask --help` imported {name}"


def test_info_imports_the_core_only(tmp_path):
    path = str(tmp_path / "a.zarr")
    zarrdask.create_array(path, shape=(10, 10), dtype="f4", chunks=(5, 5))[:] = np.ones((10, 10), "f4")
    loaded = modules_after(run_cli("info", path))
    assert "zarrdask.core.array" in loaded
    for name in HEAVY:
        assert name not in loaded, f"`zarrdask info` imported {name}"


def test_import_zarrdask_is_light_and_names_load_on_use():
    loaded = modules_after("import zarrdask")
    for name in ("numpy", "zarrdask.core", *HEAVY):
        assert name not in loaded, f"`import zarrdask` imported {name}"
    loaded = modules_after("import zarrdask; zarrdask.open_array; zarrdask.MemoryStore")
    assert "zarrdask.core.array" in loaded and "zarrdask.codecs.zstd_codec" in loaded  # codecs come with the core
    assert "dask.array" not in loaded and "fsspec" not in loaded
    assert "dask.array" in modules_after("import zarrdask; zarrdask.from_zarr")


@pytest.mark.parametrize("order", ["import zarrdask, xarray as xr", "import xarray as xr, zarrdask"])
def test_accessor_registered_in_either_import_order(order):
    code = (f"{order}\nimport sys\nds = xr.Dataset({{'v': ('x', [1.0, 2.0])}})\n"
            "assert type(ds.zarrdask).__name__ == 'ZarrdaskAccessor'\n"
            "assert type(xr.DataTree().zarrdask).__name__ == 'ZarrdaskAccessor'\n"
            "assert xr.backends.ZarrStore is not None\n"  # xarray whole: its subpackages as attributes
            "assert 'dask.array' not in sys.modules or 'dask' in sys.modules\n"
            "m = zarrdask.MemoryStore()\nds.zarrdask.to_zarr(m)\n"
            "assert xr.open_dataset(m, engine='zarrdask').v.values.tolist() == [1.0, 2.0]\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr


def test_xarray_import_that_fails_leaves_the_hook_for_the_next():
    # a first `import xarray` that raises (here: a dependency made unimportable)
    # must not take the accessor away from the import that later succeeds
    code = ("import sys, zarrdask\nsys.modules['pandas'] = None\n"
            "try:\n    import xarray\nexcept ImportError:\n    pass\nelse:\n    raise SystemExit('xarray imported without pandas')\n"
            "for m in [m for m in sys.modules if m == 'xarray' or m.startswith('xarray.') or m == 'pandas']:\n"
            "    del sys.modules[m]\n"
            "import xarray as xr\nassert type(xr.Dataset().zarrdask).__name__ == 'ZarrdaskAccessor'\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert r.returncode == 0, r.stderr
