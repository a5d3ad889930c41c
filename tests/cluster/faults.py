"""Control-plane faults for the reliability soak: what goes wrong in a real cluster.

Each works on the processes the harness started (pids in `state.json`) and returns
once the fault is over and the control plane answers again; restarting kube-apiserver
is `cluster.restart_apiserver`.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.cluster import cluster
from tests.cluster.processes import spawn, wait_listenable
from tests.cluster.processes import stop as stop_process
from tests.cluster.state import ClusterState


def restart_etcd(directory: Path) -> ClusterState:
    """Stop etcd and start it again on its data: kube-apiserver's requests fail until
    it is back, and its watches on etcd restart (clients' watches stay open)."""
    state = ClusterState.load(directory.resolve())
    stop_process(state.etcd_pid, timeout=5.0)
    wait_listenable((state.etcd_client_port, state.etcd_peer_port))
    state.etcd_pid = spawn(state.etcd_command, Path(state.etcd_log))
    state.save()
    cluster.wait_etcd(state)
    cluster.wait_apiserver(state)
    return state


def _etcd(state: ClusterState, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """etcd's JSON gateway (its v3 API over HTTP on the client URL)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{state.etcd_client_port}{path}", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def compact_etcd(directory: Path) -> int:
    """Compact etcd's history up to its current revision; returns that revision.

    Combined with an API server restart this expires every client's watch: the new
    server's watch cache starts at the current revision, so a client resuming from an
    older resourceVersion gets 410 Gone and must list again."""
    state = ClusterState.load(directory.resolve())
    key = base64.b64encode(b"/registry").decode()
    revision = int(_etcd(state, "/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])
    _etcd(state, "/v3/kv/compaction", {"revision": str(revision), "physical": True})
    return revision


def pause_apiserver(directory: Path, seconds: float) -> None:
    """SIGSTOP kube-apiserver for `seconds`, then SIGCONT: every request and renewal
    hangs meanwhile, as when the API server's machine stalls or is partitioned."""
    state = ClusterState.load(directory.resolve())
    os.kill(state.apiserver_pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(state.apiserver_pid, signal.SIGCONT)
    cluster.wait_apiserver(state)
