"""The structural checks under ci/ (check_sizes.py, check_imports.py) on small
packages built here: each finds what it must, and nothing else."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CI = Path(__file__).resolve().parent.parent / "ci"


def make_package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "pkg"
    for rel, text in files.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return pkg


def run(script: str, *args: object) -> tuple[int, str]:
    r = subprocess.run([sys.executable, str(CI / script), *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    assert not r.stderr, r.stderr
    return r.returncode, r.stdout


# -- check_sizes -------------------------------------------------------------------------------------
def body(n: int) -> str:
    return "".join(f"    x{i} = {i}\n" for i in range(n))


def test_sizes_counts_bodies_without_docstrings(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "__init__.py": "",
        "a.py": ('def ok():\n    """A docstring\n\n    of several lines\n    """\n' + body(10)
                 + "\n\nclass C:\n    @property\n    def big(self):\n        '''doc'''\n"
                 + body(12).replace("    ", "        ")
                 + "\n\ndef outer():\n    def inner():\n" + body(11).replace("    ", "        ")
                 + "    return inner\n"),
    })
    rc, out = run("check_sizes.py", pkg, "--max-function-lines", "10", "--max-module-lines", "1000")
    assert rc == 1, out
    lines = [line.split() for line in out.splitlines() if line.startswith("  ")]
    # largest first; docstrings and signatures left out; a nested function counts on its own and in its parent
    assert [(int(n), name) for n, _, name in lines] == [(13, "outer"), (12, "C.big"), (11, "outer.<locals>.inner")]
    rc, out = run("check_sizes.py", pkg, "--max-function-lines", "13")
    assert rc == 0 and "check_sizes: OK" in out


def test_sizes_module_lines(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {"__init__.py": "", "big.py": "x = 1\n" * 30, "small.py": "x = 1\n" * 5})
    rc, out = run("check_sizes.py", pkg, "--max-module-lines", "20")
    assert rc == 1 and "modules over 20 lines: 1" in out and "big.py" in out and "small.py" not in out


# -- check_imports -----------------------------------------------------------------------------------
def test_imports_finds_cycles_with_function_level_imports(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "from .a import A\n",
        "core/a.py": "from .b import B\nA = 1\n",
        "core/b.py": "def f():\n    from .c import C\n    return C\nB = 2\n",
        "core/c.py": "from . import a\nC = 3\n",
        "core/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import E\n",
        "core/e.py": "from .d import *\nE = 5\n",
        "io/__init__.py": "",
        "io/x.py": "from pkg.core import a\n",  # no cycle: core does not import io
    })
    rc, out = run("check_imports.py", pkg)
    assert rc == 1, out
    assert "in pkg.core: a -> b -> c -> a" in out
    assert "in f()" in out  # where the function-level import is
    assert "in pkg.core: d -> e -> d" in out and "TYPE_CHECKING" in out
    assert "(a) import cycles inside a package: 2" in out
    rc, out = run("check_imports.py", pkg, "--exclude-type-checking")
    assert "(a) import cycles inside a package: 1" in out


def test_imports_cycle_between_subpackages(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "", "low/m.py": "def f():\n    import pkg.high.n\n",
        "high/__init__.py": "", "high/n.py": "from ..low import m\n",
    })
    rc, out = run("check_imports.py", pkg)
    assert rc == 1 and "in pkg: high -> low -> high" in out, out


def test_imports_private_names(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "__init__.py": "",
        "_util.py": "def helper(): pass\n",  # a private module of pkg: usable anywhere in pkg
        "a.py": "def _y(): pass\ndef ok(): pass\n__all__ = []\n",
        "sub/__init__.py": "",
        "sub/_impl.py": "def g(): pass\n",  # private to pkg.sub
        "sub/s.py": "from ._impl import g\nfrom .._util import helper\n",
        "b.py": ("from .a import _y, ok, __all__\n"
                 "from . import a\n"
                 "import pkg.sub.s\n"
                 "def f():\n    return a._y() + a.ok() + pkg.sub.s._hidden\n"),
        "c.py": "from .sub._impl import g\nimport os\nos._exit\n",
    })
    rc, out = run("check_imports.py", pkg)
    assert rc == 1, out
    reported = [line.strip() for line in out.split("(b)")[1].split("(c)")[0].splitlines()[1:]]
    assert any(r.endswith("from .a import _y") for r in reported)  # not ok, not the dunder
    assert any(r.endswith("a._y") for r in reported)
    assert any(r.endswith("pkg.sub.s._hidden") for r in reported)
    assert any(r.endswith("from .sub._impl import g") for r in reported)  # pkg.sub's private module, from pkg
    assert not any("_util" in r or r.endswith("from ._impl import g") for r in reported)
    assert "os._exit" in out and "other libraries" in out
    rc, out = run("check_imports.py", pkg, "--internal-only")
    assert "os._exit" not in out


def test_imports_clean_package_passes(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, {
        "__init__.py": "from .a import f\n",
        "a.py": "from .b import g\ndef f():\n    import json\n    return g(json)\n",
        "b.py": "def g(x):\n    return x\n",
    })
    rc, out = run("check_imports.py", pkg)
    assert rc == 0, out
    assert "(c) import statements inside functions (report only): 1 in 1 modules" in out


@pytest.mark.parametrize("script", ["check_sizes.py", "check_imports.py"])
def test_runs_on_the_source_tree(script: str) -> None:
    """Both run on src/zarrdask and report (the offenders are not enforced yet)."""
    rc, out = run(script)
    assert rc in (0, 1), out
    verdict = out.strip().splitlines()[-1]
    assert verdict == f"{script[:-3]}: OK" if rc == 0 else verdict.startswith(f"{script[:-3]}: FAILED"), out
