#!/usr/bin/env bash
# The test suite with the dependencies at the lowest versions pyproject.toml allows.
# Not run by .ci/run (about 30 minutes on 2 cores); run it by hand after changing a
# dependency or its floor:
#
#   bash ci/min_versions.sh [WORKDIR]        # WORKDIR: default a new temporary directory
#   PYTHON=python3.11 bash ci/min_versions.sh   # the interpreter (default python3.11)
#   RUNS="floors" bash ci/min_versions.sh       # only one of the two runs below
#
# It tests the committed HEAD (git archive), installed non-editable so that the
# entry points (xarray's "zarrdask" engine) register, in two runs, each with its own
# venv made by uv from PyPI:
#
# floors        uv pip install --resolution lowest-direct ".[test]": every direct
#               dependency, runtime and test, at the lowest version that resolves with
#               the others. The test peers lift some runtime dependencies above their
#               floors here: zarr-python needs numcodecs >= 0.14, moto[server]'s flask
#               click >= 8.1.3, its openapi validators a recent jsonschema.
# exact         every runtime dependency pinned to its floor (constraints made from
#               [project].dependencies), with the test extra at lowest-direct except
#               zarr-python, which cannot install with numcodecs 0.13: the zarr-python
#               interop tests and xarray's own suite (tests/xarray_suite) skip there.
#
# Each run ends with pytest's summary line; the script exits non-zero if either fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d -t zarrdask-min-versions-XXXXXX)}
python=${PYTHON:-python3.11}
runs=${RUNS:-"floors exact"}
mkdir -p "$work"
echo "== working directory: $work"

src="$work/src"
rm -rf "$src" && mkdir -p "$src"
git -C "$root" archive HEAD | tar -x -C "$src"

# constraints pinning every runtime dependency to its declared floor ("name>=X" -> "name==X"),
# and the requirements of the "exact" run: the runtime dependencies and the test extra
# without zarr-python
"$python" - "$src/pyproject.toml" "$work/exact-constraints.txt" "$work/exact-requirements.txt" <<'EOF'
import re
import sys
import tomllib

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
pins, reqs = [], list(project["dependencies"])
for dep in project["dependencies"]:
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([^,;\s]+)", dep.strip())
    if m is None:
        sys.exit(f"ci/min_versions.sh: no single floor (name>=X) in the dependency {dep!r}")
    pins.append(f"{m[1]}=={m[3]}")
reqs += [d for d in project["optional-dependencies"]["test"] if re.split(r"[\s<>=!~\[;]", d, maxsplit=1)[0] != "zarr"]
open(sys.argv[2], "w").write("\n".join(pins) + "\n")
open(sys.argv[3], "w").write("\n".join(reqs) + "\n")
EOF

status=0
for run in $runs; do
  venv="$work/venv-$run"
  echo "== $run: venv $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check uv
  uv=("$venv/bin/uv" pip install -q --python "$venv/bin/python" --resolution lowest-direct)
  case "$run" in
    floors) (cd "$src" && "${uv[@]}" ".[test]") ;;
    exact)
      "${uv[@]}" -c "$work/exact-constraints.txt" -r "$work/exact-requirements.txt"
      (cd "$src" && "${uv[@]}" --no-deps .) ;;
    *) echo "unknown run $run (floors, exact)" >&2; exit 2 ;;
  esac
  "$venv/bin/uv" pip freeze --python "$venv/bin/python" > "$work/$run-versions.txt"
  echo "== $run: versions in $work/$run-versions.txt"
  grep -iE "^(numpy|numcodecs|fsspec|google-crc32c|dask|distributed|xarray|click|jsonschema|zarr|tensorstore|s3fs|moto|pyarrow|pandas|pytest)==" \
    "$work/$run-versions.txt" | tr '\n' ' '
  echo
  echo "== $run: pytest"
  if (cd "$src" && "$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider); then
    echo "== $run: passed"
  else
    echo "== $run: FAILED" >&2
    status=1
  fi
done
exit $status
