"""Print one of the README's two set-up commands: ``main`` (the first) or ``test`` (the second).

`.ci/run` runs exactly what the README tells a new user to run.
"""

import pathlib
import re
import sys

text = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
block = re.search(r"```bash\n(.*?)\n```", text, re.S)
if block is None:
    sys.exit("README.md has no ```bash block with the set-up commands")
lines = [line for line in block.group(1).splitlines() if line.strip()]
if len(lines) != 2:
    sys.exit(f"README.md's first bash block must hold exactly two commands, found {len(lines)}")
print(lines[{"main": 0, "test": 1}[sys.argv[1]]])
