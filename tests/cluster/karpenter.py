"""Karpenter with its KWOK cloud provider beside kpysched on the loopback cluster.

Karpenter watches pods whose PodScheduled condition is False with reason
Unschedulable (the condition kpysched writes when no node fits), simulates
kube-scheduler's decision over the instance types its NodePools allow, and creates
a NodeClaim; its KWOK provider turns that into a Node annotated
`kwok.x-k8s.io/node=fake`, which the harness's KWOK (kwok.py) keeps Ready like its
own. `running(state)` installs it as its kwok chart does and runs the controller
until the block ends:

* the CRDs of the chart (kwok/charts/crds: NodePool, NodeClaim, NodeOverlay,
  CapacityBuffer) and of the provider (kwok/apis/crds: KWOKNodeClass);
* the binary build.py builds from karpenter_tools/go.mod (sigs.k8s.io/karpenter/kwok),
  with the chart's settings as environment variables, and why:
  - `KUBECONFIG`: the admin kubeconfig (Karpenter reads its cluster from it outside a pod);
  - `SYSTEM_NAMESPACE=karpenter`: where the chart installs it (namespace created here);
  - `DISABLE_LEADER_ELECTION=true`: one instance per cluster, no Lease to wait out;
  - `METRICS_PORT`, `HEALTH_PROBE_PORT`: free ports, so clusters can run side by side
    (Karpenter binds them on every interface; nothing here reaches them but the probe);
  - `LOG_LEVEL=debug`: its scheduling simulation explains each NodeClaim in the log.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.cluster import build, kubectl, processes
from tests.cluster.processes import ClusterError
from tests.cluster.state import ClusterState, Component

NAME = "karpenter"
NAMESPACE = "karpenter"
READY_TIMEOUT_SECONDS = 120.0
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def source_dir() -> Path:
    """The pinned Karpenter module in the Go module cache (downloaded if missing)."""
    module = f"sigs.k8s.io/karpenter@{build.KARPENTER_VERSION}"
    result = subprocess.run(["go", "mod", "download", "-json", module],
                            cwd=build.KARPENTER_TOOLS_DIR, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "GOFLAGS": "-mod=readonly"})
    if result.returncode != 0:
        raise ClusterError(f"`go mod download {module}` failed: {result.stderr.strip()}")
    return Path(json.loads(result.stdout)["Dir"])


def custom_resource_definitions(source: Path) -> list[dict[str, Any]]:
    paths = [*sorted((source / "kwok" / "charts" / "crds").glob("*.yaml")),
             *sorted((source / "kwok" / "apis" / "crds").glob("*.yaml"))]
    return [d for path in paths for d in yaml.safe_load_all(path.read_text())
            if d and d.get("kind") == "CustomResourceDefinition"]


def node_pool(name: str, *, labels: Mapping[str, str], taints: Sequence[Mapping[str, str]] = (),
              cpu_limit: str, consolidate_after: str,
              budget: str | None = None) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(group, version, plural, body) of a KWOKNodeClass and a NodePool named `name`:
    Linux amd64 on-demand nodes of the provider's instance types, carrying `labels` and
    `taints`, at most `cpu_limit` CPUs in all. A node empty for `consolidate_after` is
    removed (WhenEmpty); `budget` of the pool's nodes may go at once (Karpenter's
    default, 10%, when None)."""
    node_class = {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
                  "metadata": {"name": name}}
    disruption: dict[str, Any] = {"consolidationPolicy": "WhenEmpty",
                                  "consolidateAfter": consolidate_after}
    if budget is not None:
        disruption["budgets"] = [{"nodes": budget}]
    pool = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "taints": [dict(taint) for taint in taints],
                    "requirements": [
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In",
                         "values": ["on-demand"]}],
                    "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass",
                                     "name": name},
                    "expireAfter": "Never"}},
            "limits": {"cpu": cpu_limit},
            "disruption": disruption}}
    return [("karpenter.kwok.sh", "v1alpha1", "kwoknodeclasses", node_class),
            ("karpenter.sh", "v1", "nodepools", pool)]


def _apply(state: ClusterState, path: Path, objects: list[Mapping[str, Any]]) -> None:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    # Server-side: the NodePool CRD is larger than the last-applied annotation allows.
    kubectl.run(state, "apply", "--server-side", "--force-conflicts",
                "--field-manager=kpysched-test-harness", "-f", str(path))


@contextmanager
def running(state: ClusterState) -> Iterator[Component]:
    """Karpenter's CRDs and controller on the cluster until the block ends."""
    directory = Path(state.dir) / NAME
    directory.mkdir(exist_ok=True)
    binary = build.binary_path("karpenter-kwok")
    definitions = custom_resource_definitions(source_dir())
    _apply(state, directory / "crds.json", [
        *definitions, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    kubectl.wait_established(state, [body["metadata"]["name"] for body in definitions])
    metrics_port, health_port = processes.free_port(), processes.free_port()
    # `env` in the command, so a restart from state.json gets the same settings.
    command = ["env", f"KUBECONFIG={state.kubeconfig}", f"SYSTEM_NAMESPACE={NAMESPACE}",
               "DISABLE_LEADER_ELECTION=true", f"METRICS_PORT={metrics_port}",
               f"HEALTH_PROBE_PORT={health_port}", "LOG_LEVEL=debug", str(binary)]
    log = directory / "karpenter.log"
    component = Component(NAME, processes.spawn(command, log), command, str(log),
                          health_url=f"http://127.0.0.1:{health_port}/readyz")
    state.components.append(component)
    state.save()
    try:
        processes.wait_until(NAME, component.pid, component.log,
                             lambda: processes.http_get(component.health_url).strip() == "ok",
                             READY_TIMEOUT_SECONDS)
        yield component
    finally:
        processes.stop(component.pid)
        state.components.remove(component)
        state.save()
