#!/usr/bin/env bash
# Set up (idempotent), bring up the local test cluster if it is not running
# (etcd, kube-apiserver, kube-controller-manager, KWOK and three KWOK nodes),
# and run kpysched against it. Extra arguments go to `kpysched run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Reuse a running cluster only if every one of its processes still answers (a cluster
# left by an older checkout may lack the controller manager or KWOK: start afresh).
if [ ! -f .cluster/state.json ] || ! .venv/bin/python - <<'PY'
import sys
from pathlib import Path
from tests.cluster import controller_manager, kwok
from tests.cluster.cluster import ClusterState, readyz
from tests.cluster.processes import alive
try:
    state = ClusterState.load(Path(".cluster"))
    wanted = {controller_manager.NAME, kwok.NAME}
    running = {c.name for c in state.components if alive(c.pid)}
    sys.exit(0 if readyz(state).strip() == "ok" and wanted <= running else 1)
except Exception:
    sys.exit(1)
PY
then
    .venv/bin/python -m tests.cluster down --dir .cluster >/dev/null 2>&1 || true
    .venv/bin/python -m tests.cluster up --dir .cluster
fi
if [ -z "$(scripts/kubectl get nodes -l type=kwok -o name)" ]; then
    .venv/bin/python -m tests.cluster nodes add --dir .cluster --count 3
fi
echo "In another terminal, apply README's example pod:  scripts/kubectl apply -f scripts/hello-pod.yaml"
echo "and watch kpysched place it and KWOK run it:      scripts/kubectl get pod hello -o wide --watch"
exec .venv/bin/kpysched run --kubeconfig .cluster/kubeconfig "$@"
