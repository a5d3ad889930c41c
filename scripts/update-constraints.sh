#!/usr/bin/env bash
# Re-resolve constraints.txt: the exact version of every distribution kpysched, its
# dev tools, its build backend (setuptools) and pip itself install, each with the
# sha256 of every file of that version Python 3.11 can install; and
# constraints-image.txt, the part of it the image installs (scripts/lock_hashes.py).
# setup.sh, CI and the Dockerfile all install with `pip install --require-hashes -r`,
# so the same commit installs the same files tomorrow, or fails.
# Run it on purpose (to take upgrades), commit the result, and run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
"$PYTHON" -m venv "$scratch/venv"
build_backend="$("$PYTHON" -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"])')"
"$scratch/venv/bin/python" -m pip install --quiet --upgrade pip "$build_backend"
"$scratch/venv/bin/python" -m pip install --quiet '.[dev]'
"$scratch/venv/bin/python" -m pip freeze --all --exclude kpysched > "$scratch/pins.txt"
"$scratch/venv/bin/python" scripts/lock_hashes.py "$scratch/pins.txt"
