"""The README's tour runs as written, and its first block holds the two set-up commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_tour_runs(tmp_path, monkeypatch):
    import shlex

    from click.testing import CliRunner

    from zarrdask.cli import cli

    text = README.read_text()
    code = re.search(r"## A short tour\n\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README tour", "exec"), {})
    assert (tmp_path / "data" / "sharded.zarr" / "zarr.json").exists()
    # then the shell commands, on what the tour wrote
    shell = re.search(r"From the shell.*?```bash\n(.*?)```", text, re.S).group(1)
    for line in shell.strip().splitlines():
        args = shlex.split(line.split("#")[0])
        assert args[0] == "zarrdask"
        result = CliRunner().invoke(cli, args[1:])
        assert result.exit_code == 0, (line, result.output)


def test_tour_runs_twice(tmp_path, monkeypatch):
    """What a user pastes twice works twice: the tour replaces what a previous run wrote."""
    import contextlib
    import io

    text = README.read_text()
    code = re.search(r"## A short tour\n\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, "README tour", "exec"), {})
    import zarrdask

    assert zarrdask.open_array("data/sharded.zarr", mode="r")[0, 0] == 7
    assert zarrdask.open_array("data/columns.zarr", mode="r").chunks == (4096, 64)


def test_readme_starts_with_a_sentence():
    """A sentence saying what zarrdask is comes before the set-up commands."""
    head = README.read_text().split("```bash", 1)[0]
    prose = [line for line in head.splitlines() if line.strip() and not line.startswith("#")]
    assert prose and "Zarr" in " ".join(prose)


def test_setup_commands():
    script = Path(__file__).resolve().parent.parent / "ci" / "readme_command.py"
    main = subprocess.run([sys.executable, str(script), "main"], capture_output=True, text=True, check=True)
    test = subprocess.run([sys.executable, str(script), "test"], capture_output=True, text=True, check=True)
    assert main.stdout.strip() == "pip install -e . && zarrdask demo"
    assert "pytest" in test.stdout
