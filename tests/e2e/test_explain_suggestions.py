"""`kpysched explain` answers a pending pod with what would make it fit (issue 39),
against the live leader on the real cluster: each scenario below leaves a pod pending
for one reason; explain must name the rejecting plugin(s) and the queue state, and its
first suggested fix, applied by the test to the pod (recreated with the suggested spec
fields, since most are immutable) or to the cluster (the suggested node objects), must
get the pod placed by kpysched within 10 s.

Each scenario's nodes carry a label of their own and its pods select it, so scenarios
never see each other's nodes."""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster import aggregated, kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess

pytestmark = pytest.mark.e2e

SCHEDULER = "kpysched"
ROOT = Path(__file__).resolve().parents[2]
PLACED_WITHIN_SECONDS = 10
TAINT = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Nodes:
    count: int
    cpu: str = "4"
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()
    unschedulable: bool = False


@dataclass(frozen=True)
class Scenario:
    """A pending pod: why (the plugins explain must name) and the fix expected first."""

    name: str
    nodes: tuple[Nodes, ...]
    pod: dict[str, Any]  # kube.pod_body's keyword arguments, plus "spec" fields
    cause: frozenset[str]
    first_fix: str
    # Pods bound before the pending one (by spec.nodeName: node index, body arguments).
    placed: tuple[tuple[int, dict[str, Any]], ...] = ()


WEB = {"app": "web"}
SCENARIOS = [
    Scenario("cpu", (Nodes(2, cpu="1"),), {"cpu": "2"}, frozenset({"NodeResourcesFit"}),
             "request"),
    Scenario("taint", (Nodes(2, taints=(TAINT,)),), {}, frozenset({"TaintToleration"}),
             "toleration"),
    Scenario("selector", (Nodes(2, labels={"disk": "hdd"}),),
             {"node_selector": {"disk": "ssd"}}, frozenset({"NodeAffinity"}), "node-selector"),
    Scenario("node-affinity", (Nodes(2, labels={"zone": "z1"}),),
             {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                 "nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "zone", "operator": "In", "values": ["z9"]}]}]}}}},
             frozenset({"NodeAffinity"}), "node-affinity"),
    Scenario("cordoned", (Nodes(2, unschedulable=True),), {},
             frozenset({"NodeUnschedulable"}), "uncordon"),
    Scenario("anti-affinity", (Nodes(2),),
             {"labels": WEB, "affinity": {"podAntiAffinity": {
                 "requiredDuringSchedulingIgnoredDuringExecution": [{
                     "labelSelector": {"matchLabels": WEB},
                     "topologyKey": "kubernetes.io/hostname"}]}}},
             frozenset({"InterPodAffinity"}), "podAntiAffinity",
             placed=((0, {"labels": WEB}), (1, {"labels": WEB}))),
    Scenario("spread", (Nodes(2, labels={"zone": "a"}), Nodes(1, cpu="1", labels={"zone": "b"})),
             {"cpu": "500m", "labels": WEB, "spec": {"topologySpreadConstraints": [{
                 "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": WEB}}]}},
             frozenset({"PodTopologySpread", "NodeResourcesFit"}), "spread",
             placed=((0, {"labels": WEB}), (1, {"labels": WEB}), (2, {"cpu": "1"}))),
    Scenario("host-port", (Nodes(1),), {"host_ports": [8080]}, frozenset({"NodePorts"}),
             "host-port", placed=((0, {"host_ports": [8080]}),)),
    Scenario("preemption", (Nodes(1, cpu="2"),), {"cpu": "2"},
             frozenset({"NodeResourcesFit"}), "priority", placed=((0, {"cpu": "2"}),)),
    Scenario("gated", (Nodes(1),), {"spec": {"schedulingGates": [{"name": "example.com/q"}]}},
             frozenset(), "gates"),
]


@pytest.fixture(scope="module")
def leader(cluster: ClusterState) -> Iterator[KpyschedProcess]:
    with aggregated.decisions_api(cluster) as process:
        yield process


def _explain(cluster: ClusterState, pod: str) -> dict[str, Any] | None:
    result = subprocess.run(
        [sys.executable, "-m", "kpysched.cli", "explain", pod, "--kubeconfig",
         cluster.kubeconfig, "-o", "json"], cwd=ROOT, capture_output=True, text=True,
        timeout=120)
    if result.returncode != 0:
        return None
    return dict(json.loads(result.stdout))


async def _bound_to(api: client.ApiClient, namespace: str, name: str) -> str | None:
    try:
        pod = await client.CoreV1Api(api).read_namespaced_pod(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return pod.spec.node_name or None


def _body(name: str, pin: dict[str, str], arguments: dict[str, Any]) -> dict[str, Any]:
    arguments = dict(arguments)
    extra_spec = arguments.pop("spec", {})
    selector = {**pin, **arguments.pop("node_selector", {})}
    body = kube.pod_body(name, scheduler_name=SCHEDULER, node_selector=selector, **arguments)
    body["spec"].update(extra_spec)
    return body


async def _apply(api: client.ApiClient, namespace: str, body: dict[str, Any],
                 fix: dict[str, Any]) -> None:
    """The fix as a person would apply it: spec fields on a recreated pod (a higher
    priority through a PriorityClass of that value), node objects patched or created."""
    core = client.CoreV1Api(api)
    for node in fix.get("nodeObjects") or []:
        name = node["metadata"]["name"]
        try:
            await core.read_node(name)
        except ApiException as error:
            if error.status != 404:
                raise
            await kube.create_node(api, {"metadata": {"name": name,
                                                      "labels": node["metadata"]["labels"]},
                                         "spec": node["spec"], "status": node["status"]})
        else:
            await core.patch_node(name, {"spec": {
                "unschedulable": node["spec"].get("unschedulable") or None,
                "taints": node["spec"].get("taints") or None}})
    spec = dict(fix.get("podSpec") or {})
    if not spec:
        return
    name = body["metadata"]["name"]
    if "priority" in spec:
        level = spec.pop("priority")
        spec.pop("preemptionPolicy", None)
        class_name = f"suggested-{level}-{secrets.token_hex(2)}"
        await client.SchedulingV1Api(api).create_priority_class(
            {"metadata": {"name": class_name}, "value": level})
        spec["priorityClassName"] = class_name
    await core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    await kube.wait_for(lambda: _gone(core, namespace, name), 30, f"pod {name} deleted")
    recreated = json.loads(json.dumps(body))
    for key, value in spec.items():
        if value is None:
            recreated["spec"].pop(key, None)
        else:
            recreated["spec"][key] = value
    await kube.create_pod(api, namespace, recreated)


async def _gone(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    try:
        await core.read_namespaced_pod(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_the_first_suggested_fix_gets_the_pod_placed(
    scenario: Scenario, cluster: ClusterState, leader: KpyschedProcess,
    api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    pin = {"suggest.kpysched.test/scenario": f"{scenario.name}-{secrets.token_hex(2)}"}
    groups = []
    for spec in scenario.nodes:
        names = await kube.create_nodes(
            api, spec.count, prefix=f"sg-{scenario.name}", cpu=spec.cpu,
            labels={**pin, **spec.labels}, taints=spec.taints,
            unschedulable=spec.unschedulable)
        nodes_to_clean += names
        groups += names
    for index, (node, arguments) in enumerate(scenario.placed):
        body = _body(f"placed-{index}", pin, arguments)
        body["spec"]["nodeName"] = groups[node]
        await kube.create_pod(api, namespace, body)
    body = _body("pending", pin, scenario.pod)
    await kube.create_pod(api, namespace, body)
    pod = f"{namespace}/pending"

    async def answered() -> dict[str, Any] | None:
        raw = _explain(cluster, pod)
        queue = (raw or {}).get("queue") or {}
        if queue.get("queue") not in ("unschedulable", "gated", "backoff"):
            return None
        return raw

    raw = await kube.wait_for(answered, 40, f"explain to show {pod} waiting")
    queue = raw["queue"]
    assert set(queue.get("rejectedBy", [])) >= scenario.cause, queue
    if scenario.cause:
        assert queue["queue"] in ("unschedulable", "backoff")
    suggestions = raw["suggestions"]
    assert suggestions["fixes"], suggestions
    first = suggestions["fixes"][0]
    print(scenario.name, json.dumps(suggestions["fixes"], indent=1)[:3000])
    assert first["kind"] == scenario.first_fix, suggestions["fixes"]
    assert first["nodes"] >= 1 and first["node"]

    await _apply(api, namespace, body, first)
    node = await kube.wait_for(lambda: _bound_to(api, namespace, "pending"),
                               PLACED_WITHIN_SECONDS, f"{pod} placed after the fix")
    assert node in groups or node == first["node"]


async def test_the_table_shows_the_fixes(
    cluster: ClusterState, leader: KpyschedProcess, api: client.ApiClient, namespace: str,
    nodes_to_clean: list[str],
) -> None:
    pin = {"suggest.kpysched.test/scenario": f"table-{secrets.token_hex(2)}"}
    nodes_to_clean += await kube.create_nodes(api, 2, prefix="sg-table", labels=pin,
                                              taints=(TAINT,))
    await kube.create_pod(api, namespace, _body("pending", pin, {}))

    async def shown() -> str | None:
        result = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "kpysched.cli", "explain",
                             f"{namespace}/pending", "--kubeconfig", cluster.kubeconfig],
            cwd=ROOT, capture_output=True, text=True, timeout=120)
        return result.stdout if "What would make it fit" in result.stdout else None

    table = await kube.wait_for(shown, 40, "explain's table with suggestions")
    print(table)
    assert "  1. tolerate taint dedicated=db:NoSchedule: 2 nodes (it would go to sg-table" \
        in table
    assert '     patch: {"spec":{"tolerations":' in table
