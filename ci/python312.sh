#!/usr/bin/env bash
# Print the path of a Python 3.12 interpreter: pyenv's newest 3.12.x (under
# `pyenv root`, $PYENV_ROOT or ~/.pyenv), else `python3.12` on the PATH.
# Exits 1, saying where it looked, when there is none.
set -euo pipefail

roots=()
if command -v pyenv >/dev/null 2>&1; then
  roots+=("$(pyenv root 2>/dev/null || true)")
fi
roots+=("${PYENV_ROOT:-}" "$HOME/.pyenv")

looked=()
for root in "${roots[@]}"; do
  [ -n "$root" ] || continue
  looked+=("$root/versions/3.12.*/bin/python3.12")
  # the newest patch release first (3.12.10 after 3.12.9)
  found=$(ls -d "$root"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$found" ] && "$found" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    echo "$found"
    exit 0
  fi
done
looked+=("python3.12 on the PATH")
if found=$(command -v python3.12 2>/dev/null) \
    && "$found" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
  echo "$found"
  exit 0
fi
{
  echo "no Python 3.12 interpreter found; looked for:"
  printf '  %s\n' "${looked[@]}"
  echo "install one (e.g. pyenv install 3.12) to run the test suite on Python 3.12"
} >&2
exit 1
