#!/usr/bin/env bash
# Set up (idempotent), bring up the local test cluster if it is not running
# (etcd, kube-apiserver, kube-controller-manager, KWOK and three KWOK nodes),
# and run kpysched against it. Extra arguments go to `kpysched run`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The cluster's state directory and kpysched's secure port. Only tests/e2e/test_readme.py
# sets them, to run README's lines beside a developer's own local run; scripts/kubectl
# reads the same directory.
state="${KPYSCHED_LOCAL_DIR:-.cluster}"
port="${KPYSCHED_LOCAL_PORT:-10259}"
export KPYSCHED_LOCAL_DIR="$state"
bash scripts/setup.sh
# Reuse a running cluster only if every one of its processes still answers (a cluster
# left by an older checkout may lack the controller manager or KWOK: start afresh).
if [ ! -f "$state/state.json" ] || ! .venv/bin/python - <<'PY'
import os
import sys
from pathlib import Path
from tests.cluster import controller_manager, kwok
from tests.cluster.cluster import ClusterState, readyz
from tests.cluster.processes import alive
try:
    state = ClusterState.load(Path(os.environ["KPYSCHED_LOCAL_DIR"]))
    wanted = {controller_manager.NAME, kwok.NAME}
    running = {c.name for c in state.components if alive(c.pid)}
    sys.exit(0 if readyz(state).strip() == "ok" and wanted <= running else 1)
except Exception:
    sys.exit(1)
PY
then
    .venv/bin/python -m tests.cluster down --dir "$state" >/dev/null 2>&1 || true
    .venv/bin/python -m tests.cluster up --dir "$state"
fi
if [ -z "$(scripts/kubectl get nodes -l type=kwok -o name)" ]; then
    .venv/bin/python -m tests.cluster nodes add --dir "$state" --count 3
fi
echo "In another terminal, apply README's example pod:  scripts/kubectl apply -f scripts/hello-pod.yaml"
echo "and watch kpysched place it and KWOK run it:      scripts/kubectl get pod hello -o wide --watch"
echo "and ask kpysched why it went there (or waits):     .venv/bin/kpysched explain default/hello \\"
echo "    --kubeconfig $state/kubeconfig --scheduler-url https://127.0.0.1:$port --scheduler-ca $state/serving/kpysched.crt"
# Served as in a cluster: HTTPS on 127.0.0.1:10259 with a self-signed certificate, and
# /metrics for callers the API server authenticates and authorizes (the admin token in
# .cluster/state.json is in system:masters). The kubeconfig goes by environment so a
# --config among "$@" does not make kube-scheduler's rule ignore a --kubeconfig flag.
# The decisions are served (on loopback only) so `kpysched explain` works at once; the
# certificate is kept in .cluster/serving so explain can verify it.
export KPYSCHED_KUBECONFIG="$state/kubeconfig"
exec .venv/bin/kpysched run --bind-address 127.0.0.1 --secure-port "$port" --cert-dir "$state/serving" \
    --enable-decision-endpoint \
    --authentication-kubeconfig "$state/kubeconfig" \
    --authorization-kubeconfig "$state/kubeconfig" "$@"
