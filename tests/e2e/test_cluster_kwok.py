"""The default `python -m tests.cluster up` works like a real cluster (issue 11).

One cluster for the module, started and filled exactly as README tells a person:
`up` (etcd, kube-apiserver, kube-controller-manager, KWOK) and `nodes add`. The
tests then drive it with the pinned kubectl: namespaces get their `default`
ServiceAccount, a Deployment that names kpysched ends with every pod bound by
kpysched and Running on KWOK nodes, `kubectl describe` shows kpysched's event,
and over two minutes KWOK renews the node Leases so node lifecycle (upstream's
50s grace) never marks a node Unknown or taints it. If the cluster cannot start,
every test errors with the harness's message; nothing is skipped.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import kubectl
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.state import ClusterState

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
NODES = 3
REPLICAS = 10
# Node lifecycle's default grace is 50s and KWOK renews every 10s: 70 s of watching
# covers a whole grace period plus a renewal, so renewals that stopped at any point
# would have made a node Unknown within it (two whole periods cost CI 50 s more).
LEASE_WATCH_SECONDS = 70.0
SAMPLE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class KwokCluster:
    state: ClusterState
    nodes: tuple[str, ...]
    nodes_ready_at: float  # time.monotonic() when `nodes add` returned


def _harness(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "tests.cluster", *args], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"`python -m tests.cluster {' '.join(args)}` exited "
                             f"{result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result.stdout


@pytest.fixture(scope="module")
def kwok_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KwokCluster]:
    directory = tmp_path_factory.mktemp("kwok-cluster") / "state"
    try:
        _harness("up", "--dir", str(directory))
        _harness("nodes", "add", "--dir", str(directory), "--count", str(NODES),
                 "--cpu", "4", "--memory", "32Gi", "--pods", "110", "--zones", "3")
        ready_at = time.monotonic()
        state = ClusterState.load(directory)
        listed = kubectl.get_json(state, "nodes", "-l", "type=kwok")
        names = tuple(sorted(n["metadata"]["name"] for n in listed["items"]))
        assert len(names) == NODES, names
        yield KwokCluster(state, names, ready_at)
    finally:
        _harness("down", "--dir", str(directory))


def test_nodes_add_spreads_zones_and_settles_ready_without_taints(
    kwok_cluster: KwokCluster,
) -> None:
    listed = kubectl.get_json(kwok_cluster.state, "nodes", "-l", "type=kwok")
    zones = sorted(n["metadata"]["labels"]["topology.kubernetes.io/zone"]
                   for n in listed["items"])
    assert zones == ["zone-0", "zone-1", "zone-2"]
    for node in listed["items"]:
        assert not node["spec"].get("taints"), node["spec"]
        ready = _condition(node, "Ready")
        assert ready["status"] == "True", ready
        assert node["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}


def test_new_namespace_gets_its_default_service_account(kwok_cluster: KwokCluster) -> None:
    state = kwok_cluster.state
    kubectl.run(state, "create", "namespace", "sa-check")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if kubectl.run(state, "get", "serviceaccount", "default", "-n", "sa-check",
                       check=False).returncode == 0:
            break
        time.sleep(0.5)
    else:
        raise AssertionError("no ServiceAccount default in a new namespace after 30s")
    # The root-CA publisher runs too: projected service-account volumes need it.
    kubectl.run(state, "get", "configmap", "kube-root-ca.crt", "-n", "sa-check")


DEPLOYMENT = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: kpysched-demo
spec:
  replicas: {REPLICAS}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      schedulerName: kpysched
      containers:
        - name: web
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {{cpu: 100m, memory: 64Mi}}
"""


def test_deployment_is_placed_by_kpysched_and_runs(kwok_cluster: KwokCluster) -> None:
    state = kwok_cluster.state
    kubectl.run(state, "create", "namespace", "kpysched-demo")
    with KpyschedProcess(state, log_level="info"):
        kubectl.run(state, "apply", "-f", "-", stdin=DEPLOYMENT)
        kubectl.run(state, "rollout", "status", "deployment/web", "-n", "kpysched-demo",
                    "--timeout=120s")
        pods = kubectl.get_json(state, "pods", "-n", "kpysched-demo", "-l", "app=web")["items"]

    assert len(pods) == REPLICAS
    for pod in pods:
        assert pod["spec"]["nodeName"] in kwok_cluster.nodes, pod["spec"].get("nodeName")
        assert pod["status"]["phase"] == "Running", pod["status"]
        assert _condition(pod, "Ready")["status"] == "True"
    assert len({p["spec"]["nodeName"] for p in pods}) == NODES  # spread, not piled up

    events = kubectl.get_json(state, "events.events.k8s.io", "-n", "kpysched-demo")["items"]
    scheduled = {e["regarding"]["name"]: e for e in events if e.get("reason") == "Scheduled"}
    assert set(scheduled) == {p["metadata"]["name"] for p in pods}
    assert {e["reportingController"] for e in scheduled.values()} == {"kpysched"}

    described = kubectl.run(state, "describe", "pod", "-n", "kpysched-demo",
                            pods[0]["metadata"]["name"]).stdout
    line = next((ln for ln in described.splitlines() if "Successfully assigned" in ln), "")
    # Type, Reason, Age, From, Message: the Scheduled event comes from kpysched.
    assert line.split()[:2] == ["Normal", "Scheduled"] and line.split()[3] == "kpysched", \
        described
    assert f"Successfully assigned kpysched-demo/{pods[0]['metadata']['name']} to" in line


JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: batch
  namespace: kpysched-jobs
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      schedulerName: kpysched
      restartPolicy: Never
      containers:
        - name: work
          image: registry.k8s.io/pause:3.10
"""


def test_job_pods_placed_by_kpysched_complete_and_the_job_succeeds(
    kwok_cluster: KwokCluster,
) -> None:
    """The job controller runs, and KWOK finishes Job pods (its pod stages for Jobs)."""
    state = kwok_cluster.state
    kubectl.run(state, "create", "namespace", "kpysched-jobs")
    with KpyschedProcess(state, log_level="info"):
        kubectl.run(state, "apply", "-f", "-", stdin=JOB)
        kubectl.run(state, "wait", "--for=condition=complete", "job/batch", "-n",
                    "kpysched-jobs", "--timeout=120s")
    pods = kubectl.get_json(state, "pods", "-n", "kpysched-jobs")["items"]
    assert sorted(p["status"]["phase"] for p in pods) == ["Succeeded"] * 3
    assert all(p["spec"]["nodeName"] in kwok_cluster.nodes for p in pods)


def test_kwok_renews_node_leases_and_no_node_is_ever_tainted(
    kwok_cluster: KwokCluster,
) -> None:
    """Runs last: samples until LEASE_WATCH_SECONDS have passed since the nodes became
    Ready."""
    state = kwok_cluster.state
    renewals: dict[str, set[str]] = {name: set() for name in kwok_cluster.nodes}
    transitions: dict[str, str] = {}
    end = max(kwok_cluster.nodes_ready_at + LEASE_WATCH_SECONDS, time.monotonic() + 30)
    while True:
        leases = {lease["metadata"]["name"]: lease for lease in
                  kubectl.get_json(state, "leases", "-n", "kube-node-lease")["items"]}
        for node in kubectl.get_json(state, "nodes", "-l", "type=kwok")["items"]:
            name = node["metadata"]["name"]
            taints = node["spec"].get("taints", [])
            assert taints == [], f"{name} gained taints {taints}"
            ready = _condition(node, "Ready")
            assert ready["status"] == "True", f"{name}: {ready}"
            # Ready since creation: a flip to Unknown and back, even one before this
            # test began, would have moved the transition time.
            became_ready = _time(ready["lastTransitionTime"])
            assert became_ready - _time(node["metadata"]["creationTimestamp"]) < \
                timedelta(seconds=15), f"{name} left Ready at some point: {ready}"
            assert transitions.setdefault(name, ready["lastTransitionTime"]) == \
                ready["lastTransitionTime"], f"{name} left Ready: {ready}"
            assert name in leases, f"no Lease for {name}"
            renewals[name].add(leases[name]["spec"]["renewTime"])
        if time.monotonic() >= end:
            break
        time.sleep(SAMPLE_SECONDS)

    watched = time.monotonic() - kwok_cluster.nodes_ready_at
    assert watched >= LEASE_WATCH_SECONDS
    for name, times in renewals.items():
        # KWOK renews every 10s; samples every 5s over >= 30s see several renewals.
        assert len(times) >= 3, f"{name}: Lease renewed {len(times)} time(s) in {watched:.0f}s"
    events = kubectl.get_json(state, "events", "-A", "--field-selector",
                              "involvedObject.kind=Node")["items"]
    not_ready = [e for e in events if e.get("reason") in ("NodeNotReady", "TaintManagerEviction")]
    assert not_ready == [], not_ready


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in obj["status"].get("conditions", [])
                                 if c["type"] == kind)
    return found
