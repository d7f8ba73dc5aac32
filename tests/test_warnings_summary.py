"""The pytest configuration's ``filterwarnings`` hides only other libraries'
warnings the project knows about, so that a warning from zarrdask stands out in
the test run's summary: every ``ignore`` entry names what it hides by message
(or by a third-party module), none names a zarrdask module or warning class, and
no entry's message matches a warning zarrdask itself emits."""

from __future__ import annotations

import ast
import builtins
import re
import tomllib
from pathlib import Path

import zarrdask.errors

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "zarrdask"


def _filters() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["pytest"]["ini_options"].get("filterwarnings", []))


def _fields(entry: str) -> tuple[str, str, str, str]:
    """action, message, category, module of a ``-W``-style entry (pytest's parsing)."""
    parts = [p.strip() for p in entry.split(":")] + [""] * 5
    return parts[0], parts[1], parts[2], parts[3]


def _zarrdask_warning_classes() -> set[str]:
    # every public name (some are loaded on first use, so not yet in vars())
    objs = {name: getattr(zarrdask.errors, name) for name in zarrdask.errors.__all__}
    return {name for name, obj in objs.items() if isinstance(obj, type) and issubclass(obj, Warning)}


def _own_messages() -> list[str]:
    """The literal start of every message zarrdask's source passes to ``warn``/``warnings.warn``."""
    out = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name != "warn":
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.append(arg.value)
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                out.append(str(arg.values[0].value))
    return [m for m in out if m]


def test_filters_never_name_zarrdask() -> None:
    own = _zarrdask_warning_classes()
    assert "AlignmentWarning" in own  # the check sees zarrdask's classes
    for entry in _filters():
        action, message, category, module = _fields(entry)
        assert "zarrdask" not in entry.lower(), entry
        assert category.rsplit(".", 1)[-1] not in own, entry
        if module:
            assert not re.match(module, "zarrdask") and not re.match(module, "zarrdask.xarray.backend"), entry
        if action == "ignore":
            # a bare category would hide zarrdask's warnings of that category too
            assert message or module, f"{entry!r} names neither a message nor a module"
            if category and "." not in category:
                assert isinstance(getattr(builtins, category, None), type), entry


def test_filters_do_not_match_zarrdask_messages() -> None:
    messages = _own_messages()
    assert len(messages) >= 3  # the scan finds zarrdask's warnings
    for entry in _filters():
        action, message, _, _ = _fields(entry)
        if action != "ignore" or not message:
            continue
        pattern = re.compile(message, re.I)
        hit = [m for m in messages if pattern.match(m)]
        assert not hit, f"{entry!r} would hide zarrdask's own warning {hit[0]!r}"
