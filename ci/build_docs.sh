#!/usr/bin/env bash
# Build the HTML documentation with warnings as errors (needs: pip install -e ".[docs]").
# Output: docs/_build/html/index.html. The API pages autosummary generates go to
# docs/generated/ (ignored by git) and are rebuilt every time.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf docs/generated
python -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
