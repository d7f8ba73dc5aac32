"""The registry page (docs/registry.md): its examples run as written and print what
their comments say, and its tables name every data type and codec of the
zarr-extensions registry copy the project follows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "registry.md"
REGISTRY = ROOT.parent / "shared" / "specs" / "zarr-extensions"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_example_runs(tmp_path, monkeypatch, index):
    code = _blocks()[index]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"docs/registry.md block {index}", "exec"), {})
    printed = out.getvalue().split("\n")
    expected = [m.group(1).strip() for line in code.splitlines()
                if line.lstrip().startswith("print(") and (m := re.search(r"#\s*(.*)$", line))]
    for want, got in zip(expected, printed):
        words = want.split(",")[0].split()
        assert all(w in got for w in words if w.replace(".", "").replace("-", "").isalnum()), (want, got)


@pytest.mark.skipif(not REGISTRY.is_dir(), reason="the zarr-extensions registry copy is not beside the checkout")
@pytest.mark.parametrize("kind", ["data-types", "codecs"])
def test_every_registered_name_is_in_the_tables(kind):
    text = PAGE.read_text()
    names = sorted(p.name for p in (REGISTRY / kind).iterdir() if p.is_dir())
    missing = []
    for name in names:
        pattern = {"r": "`r8`"}.get(name, f"`{name}`")
        if pattern not in text and not _covered_by_wildcard(name, text):
            missing.append(name)
    assert not missing, f"docs/registry.md does not name {missing}"


def _covered_by_wildcard(name: str, text: str) -> bool:
    for prefix in ("complex_float8_", "complex_float6_", "int8`…`", "uint8`…`"):
        if name.startswith(prefix.rstrip("`…")) and f"`{prefix.rstrip('`…')}*`" in text:
            return True
    ints = {"int16", "int32", "int64", "uint16", "uint32", "uint64"}
    return name in ints and "`int8`…`int64`" in text or name in {"float32", "float64"} and "`float16`/`32`/`64`" in text
