#!/usr/bin/env bash
# Set up (idempotent), bring up the local test cluster if it is not running,
# and run kpysched against it. Extra arguments go to `kpysched run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ ! -f .cluster/state.json ] || ! .venv/bin/python - <<'PY'
import sys
from pathlib import Path
from tests.cluster.cluster import ClusterState, readyz
try:
    sys.exit(0 if readyz(ClusterState.load(Path(".cluster"))).strip() == "ok" else 1)
except Exception:
    sys.exit(1)
PY
then
    .venv/bin/python -m tests.cluster down --dir .cluster >/dev/null 2>&1 || true
    .venv/bin/python -m tests.cluster up --dir .cluster
fi
echo "kpysched schedules pods with spec.schedulerName: kpysched; stop with Ctrl-C."
exec .venv/bin/kpysched run --kubeconfig .cluster/kubeconfig "$@"
