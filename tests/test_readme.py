"""The README's tour runs as written, and its first block holds the two set-up commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_tour_runs(tmp_path, monkeypatch):
    code = re.search(r"## A short tour\n\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README tour", "exec"), {})
    assert (tmp_path / "data" / "sharded.zarr" / "zarr.json").exists()


def test_setup_commands():
    script = Path(__file__).resolve().parent.parent / "ci" / "readme_command.py"
    main = subprocess.run([sys.executable, str(script), "main"], capture_output=True, text=True, check=True)
    test = subprocess.run([sys.executable, str(script), "test"], capture_output=True, text=True, check=True)
    assert main.stdout.strip() == "pip install -e . && zarrdask demo"
    assert "pytest" in test.stdout
