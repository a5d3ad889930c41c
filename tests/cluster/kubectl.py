"""Run the pinned kubectl against a test cluster, as a person at a terminal would."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from tests.cluster import build
from tests.cluster.state import ClusterState

TIMEOUT_SECONDS = 120.0


def run(state: ClusterState, *args: str, stdin: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """`kubectl --kubeconfig <the cluster's> ARGS`; raises with kubectl's stderr on failure."""
    command = [str(build.binary_path("kubectl")), f"--kubeconfig={state.kubeconfig}", *args]
    result = subprocess.run(command, input=stdin, capture_output=True, text=True,
                            timeout=TIMEOUT_SECONDS)
    if check and result.returncode != 0:
        raise AssertionError(f"`kubectl {' '.join(args)}` exited {result.returncode}:\n"
                             f"{result.stderr.strip()}")
    return result


def get_json(state: ClusterState, *args: str) -> Any:
    """`kubectl get ARGS -o json`, decoded."""
    return json.loads(run(state, "get", *args, "-o", "json").stdout)


def wait_established(state: ClusterState, crd_names: Sequence[str],
                     timeout: float = 60.0) -> None:
    """`kubectl wait --for=condition=Established` on the CRDs, asked again while it fails:
    kubectl errors out at once (".status.conditions accessor error") on a CRD whose
    status has no conditions yet, which a loaded API server leaves for a moment."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = max(1, round(deadline - time.monotonic()))
        names = [f"crd/{name}" for name in crd_names]
        result = run(state, "wait", "--for=condition=Established", f"--timeout={remaining}s",
                     *names, check=False)
        if result.returncode == 0:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"CRDs not Established within {timeout:.0f}s: "
                                 f"{result.stderr.strip()}")
        time.sleep(1)
