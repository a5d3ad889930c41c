"""A fresh benchmark cluster per scheduler run, built from tests.cluster.

The harness's `up()` starts kube-apiserver with the test suite's flags; the
benchmark then restarts it (`restart_apiserver`, etcd keeps its data) with three
benchmark-only changes:

* `--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority`, as
  upstream's scheduler_perf runs its API server: pods carry `spec.priority`
  directly, Nodes are created without the not-ready taint (no kubelet would lift
  it) and pods get no projected service-account volume.
* higher in-flight limits, so the server's own ceiling is never the one measured.
* a second static token for the scheduler under test (user `kpysched-bench-scheduler`,
  bound to cluster-admin), so every request the scheduler sends can be counted apart
  from the benchmark's own. A FlowSchema maps that user to the `exempt` priority
  level: the scheduler is never throttled by API Priority and Fairness (as the
  admin's `system:masters` group is not), and the server's
  `apiserver_flowcontrol_dispatched_requests_total{flow_schema=...}` counts exactly
  its requests.

Workloads with DRA (ResourceClaimTemplates) also get kube-controller-manager
running only its resourceclaim controller, which makes each pod's claim from its
template and records it in pod.status.resourceClaimStatuses (no scheduler places
such a pod before that). The same for both schedulers.

Gang workloads start the control plane with feature gates and extra API versions
(tests.cluster.gates: kube-apiserver gets `--feature-gates` and `--runtime-config`,
kept across the restart), or install CustomResourceDefinitions (scheduler-plugins'
PodGroup) before the scheduler starts. kube-controller-manager is not started for
them: its podgroup-protection controller only matters for deleting PodGroups, and
the cluster is thrown away whole.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from benchmarks.kubeapi import BenchApi
from benchmarks.promtext import parse
from tests.cluster import certs, controller_manager, kubeconfig, processes
from tests.cluster import cluster as harness
from tests.cluster.gates import UPSTREAM_DEFAULTS, Gates
from tests.cluster.state import Component

SCHEDULER_USER = "kpysched-bench-scheduler"
FLOW_SCHEMA = SCHEDULER_USER
APISERVER_BENCH_FLAGS = (
    "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority",
    "--max-requests-inflight=3000",
    "--max-mutating-requests-inflight=1000",
)


@dataclasses.dataclass(slots=True)
class BenchCluster:
    state: harness.ClusterState
    scheduler_state: harness.ClusterState  # the same cluster, seen as the scheduler user
    scheduler_token: str

    @property
    def directory(self) -> Path:
        return Path(self.state.dir)


RESOURCE_CLAIM_CONTROLLER = "resourceclaim-controller"  # its name in v1.36


def start(parent: Path | None = None, *, resource_claim_controller: bool = False,
          gates: Gates = UPSTREAM_DEFAULTS, crds: Sequence[Path] = ()) -> BenchCluster:
    """Start etcd + kube-apiserver with the benchmark flags and `gates` (and, when
    asked, kube-controller-manager's resourceclaim controller, and the CRDs in the
    files `crds`); return once ready."""
    parent = parent or Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="kpysched-bench-", dir=parent))
    state = harness.up(directory, gates=gates)
    try:
        token = secrets.token_hex(24)
        tokens = Path(state.dir, "tokens.csv")
        tokens.write_text(tokens.read_text() + f"{token},{SCHEDULER_USER},bench-scheduler-uid,\n")
        state.apiserver_command = [*state.apiserver_command, *APISERVER_BENCH_FLAGS]
        state.save()
        state = harness.restart_apiserver(directory)
        scheduler_kubeconfig = Path(state.dir, "scheduler.kubeconfig")
        scheduler_kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "bench", "cluster": {
                "server": state.server, "certificate-authority": state.ca_file}}],
            "users": [{"name": SCHEDULER_USER, "user": {"token": token}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench",
                                                      "user": SCHEDULER_USER}}],
            "current-context": "bench",
        }, indent=2))
        scheduler_state = dataclasses.replace(state, kubeconfig=str(scheduler_kubeconfig))
        bench = BenchCluster(state, scheduler_state, token)
        asyncio.run(_grant_scheduler(bench))
        if crds:
            asyncio.run(_install_crds(bench, crds))
        if resource_claim_controller:
            _start_resource_claim_controller(state)
    except BaseException:
        stop(directory)
        raise
    return bench


def stop(directory: Path) -> None:
    """Stop etcd and kube-apiserver and remove the directory (scheduler workdirs too)."""
    harness.down(directory)


def _start_resource_claim_controller(state: harness.ClusterState) -> None:
    """kube-controller-manager with the harness's flags (its own identity, each
    controller under its ServiceAccount) but only the resourceclaim controller, and
    a client rate limit as high as the schedulers' (5000) so that making the claims
    is not what the setup waits on. Recorded in the state: `stop` ends it."""
    cert, key = certs.client_certificate(state.pki, "controller-manager",
                                         controller_manager.USER)
    kubeconfig.write(Path(state.dir, "controller-manager.kubeconfig"), server=state.server,
                     ca_file=state.ca_file, user=controller_manager.USER, cert=cert, key=key)
    port = processes.free_port()
    replaced = {"--controllers": RESOURCE_CLAIM_CONTROLLER,
                "--kube-api-qps": "5000", "--kube-api-burst": "5000"}
    args = []
    for arg in controller_manager.command(state, port, None):
        flag = arg.split("=", 1)[0]
        args.append(f"{flag}={replaced[flag]}" if flag in replaced else arg)
    log = Path(state.dir, f"{controller_manager.NAME}.log")
    component = Component(controller_manager.NAME, processes.spawn(args, log), args,
                          str(log), health_url=f"https://127.0.0.1:{port}/healthz")
    state.components.append(component)
    state.save()
    processes.wait_until(
        controller_manager.NAME, component.pid, component.log,
        lambda: processes.http_get(component.health_url,
                                   context=processes.insecure_tls()).strip() == "ok",
        controller_manager.READY_TIMEOUT_SECONDS)


CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_READY_TIMEOUT_SECONDS = 60.0


async def _install_crds(bench: BenchCluster, files: Sequence[Path]) -> None:
    """Create every CustomResourceDefinition in `files` and wait until the server
    serves each (Established, and a list of its resource answers), so a scheduler
    that checks for the API at start-up finds it."""
    crds: list[dict[str, Any]] = [document for path in files
                                  for document in yaml.safe_load_all(path.read_text())
                                  if document]
    async with BenchApi(bench.state) as api:
        for crd in crds:
            await api.must("POST", CRD_PATH, crd)
        deadline = time.monotonic() + CRD_READY_TIMEOUT_SECONDS
        for crd in crds:
            name, spec = crd["metadata"]["name"], crd["spec"]
            version = next(v["name"] for v in spec["versions"] if v.get("served"))
            listing = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"
            while True:
                status = msgspec.json.decode(
                    await api.must("GET", f"{CRD_PATH}/{name}")).get("status") or {}
                established = any(c["type"] == "Established" and c["status"] == "True"
                                  for c in status.get("conditions") or [])
                if established and (await api.request("GET", listing))[0] == 200:
                    break
                if time.monotonic() > deadline:
                    raise harness.ClusterError(
                        f"CRD {name} not served after {CRD_READY_TIMEOUT_SECONDS:.0f}s")
                await asyncio.sleep(0.2)


async def _grant_scheduler(bench: BenchCluster) -> None:
    async with BenchApi(bench.state) as api:
        await api.must("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "metadata": {"name": SCHEDULER_USER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"},
            "subjects": [{"kind": "User", "name": SCHEDULER_USER,
                          "apiGroup": "rbac.authorization.k8s.io"}],
        })
        await api.must("POST", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", {
            "metadata": {"name": FLOW_SCHEMA},
            "spec": {
                "matchingPrecedence": 100,
                "priorityLevelConfiguration": {"name": "exempt"},
                "rules": [{
                    "subjects": [{"kind": "User", "user": {"name": SCHEDULER_USER}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                       "resources": ["*"], "namespaces": ["*"],
                                       "clusterScope": True}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }],
            },
        })
    # The flow-control configuration is picked up asynchronously: probe as the
    # scheduler until the server classifies it under the new FlowSchema.
    async with BenchApi(bench.state, token=bench.scheduler_token) as as_scheduler, \
            BenchApi(bench.state) as admin:
        for _ in range(100):
            await as_scheduler.request("GET", "/api/v1/namespaces/default")
            if scheduler_requests(parse(await admin.get_text("/metrics"))) > 0:
                return
            await asyncio.sleep(0.1)
    raise harness.ClusterError(
        f"the API server never classified {SCHEDULER_USER} under FlowSchema {FLOW_SCHEMA}")


def scheduler_requests(metrics: dict[str, list[tuple[dict[str, str], float]]]) -> float:
    """Requests the scheduler user has sent so far, as counted by the API server."""
    return sum(value for labels, value in
               metrics.get("apiserver_flowcontrol_dispatched_requests_total", [])
               if labels.get("flow_schema") == FLOW_SCHEMA)
