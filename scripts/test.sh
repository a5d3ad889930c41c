#!/usr/bin/env bash
# Set up (idempotent) and run the whole suite: lint, types, unit and e2e tests.
# The e2e tests start their own etcd + kube-apiserver on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
# Two workers, whole files each: e2e tests mostly wait on real components, and each
# worker gets its own session cluster, so files never see each other's objects.
.venv/bin/python -m pytest -n 2 --dist loadfile "$@"
