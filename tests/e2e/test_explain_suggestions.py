"""`kpysched explain` answers a pending pod with what would make it fit (issue 39),
against the live leader on the real cluster: each scenario below leaves a pod pending
for one reason; explain must name the rejecting plugin(s) and the queue state, and its
first suggested fix, applied by the test to the pod (its strategic merge patch applied
to the pod as the test wrote it, with `kubectl patch --local`, and the pod recreated,
since most spec fields are immutable) or to the cluster (the suggested node objects),
must get the pod placed by kpysched within 10 s.

Each scenario's nodes carry a label of their own and its pods select it, and the
module starts on a cluster without nodes (a dropped nodeSelector must not find another
module's), so scenarios never see each other's nodes. A scenario with no single fix
(a missing claim, a volume bound elsewhere, no devices, two obstacles on every node)
must say so: no fix is invented."""

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

from tests.cluster import aggregated, kube, kubectl
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
    memory: str = "32Gi"
    pods: int = 110
    extra: dict[str, str] = field(default_factory=dict)  # more allocatable


@dataclass(frozen=True)
class Scenario:
    """A pending pod: why (the plugins explain must name) and the fix expected first
    (None: no single change places it, and explain says so)."""

    name: str
    nodes: tuple[Nodes, ...]
    # kube.pod_body's keyword arguments, plus "spec" fields and extra "requests".
    pod: dict[str, Any]
    cause: frozenset[str]
    first_fix: str | None
    # Pods bound before the pending one (by spec.nodeName: node index, body arguments).
    placed: tuple[tuple[int, dict[str, Any]], ...] = ()
    change: str = ""  # the first fix's change starts so
    objects: str = ""  # a name in OBJECTS: what else the scenario creates first


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
    # Resources.
    Scenario("memory", (Nodes(2, memory="1Gi"),), {"memory": "2Gi"},
             frozenset({"NodeResourcesFit"}), "request",
             change="lower the memory request to at most 1Gi"),
    Scenario("extended-resource", (Nodes(2, extra={"example.com/foo": "1"}),),
             {"requests": {"example.com/foo": "2"}}, frozenset({"NodeResourcesFit"}),
             "request", change="lower the example.com/foo request to at most 1"),
    Scenario("pods-full", (Nodes(1, pods=1),), {}, frozenset({"NodeResourcesFit"}),
             "priority", placed=((0, {}),)),
    Scenario("cpu-and-memory", (Nodes(1, cpu="1", memory="1Gi"),), {"cpu": "2", "memory": "2Gi"},
             frozenset({"NodeResourcesFit"}), "new-node"),
    Scenario("cpu-partly-used", (Nodes(1, cpu="2"), Nodes(1, cpu="3")), {"cpu": "2500m"},
             frozenset({"NodeResourcesFit"}), "request",
             placed=((0, {"cpu": "1"}), (1, {"cpu": "1500m"})),
             change="lower the cpu request to at most 1500m"),
    Scenario("no-room-for-preemption", (Nodes(2, cpu="2"),), {"cpu": "8"},
             frozenset({"NodeResourcesFit"}), "request"),
    # Taints.
    Scenario("no-execute", (Nodes(2, taints=({**TAINT, "effect": "NoExecute"},)),), {},
             frozenset({"TaintToleration"}), "toleration",
             change="tolerate taint dedicated=db:NoExecute"),
    Scenario("taint-without-value",
             (Nodes(2, taints=({"key": "special", "effect": "NoSchedule"},)),), {},
             frozenset({"TaintToleration"}), "toleration", change="tolerate taint special:"),
    Scenario("two-taints", (Nodes(1, taints=({"key": "a", "value": "1", "effect": "NoSchedule"},)),
                            Nodes(2, taints=({"key": "b", "value": "2", "effect": "NoSchedule"},))),
             {}, frozenset({"TaintToleration"}), "toleration",
             change="tolerate taint b=2:NoSchedule"),
    Scenario("taint-or-cpu", (Nodes(1, taints=(TAINT,)), Nodes(1, cpu="1")), {"cpu": "2"},
             frozenset({"TaintToleration", "NodeResourcesFit"}), "toleration"),
    Scenario("taint-and-selector", (Nodes(2, labels={"disk": "hdd"}, taints=(TAINT,)),),
             {"node_selector": {"disk": "ssd"}}, frozenset({"TaintToleration"}), None),
    # Node affinity and selectors.
    Scenario("not-in", (Nodes(2, labels={"zone": "z1"}),),
             {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                 "nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "zone", "operator": "NotIn", "values": ["z1"]}]}]}}}},
             frozenset({"NodeAffinity"}), "node-affinity"),
    Scenario("exists", (Nodes(2),),
             {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                 "nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "gpu", "operator": "Exists"}]}]}}}},
             frozenset({"NodeAffinity"}), "node-affinity"),
    Scenario("two-selector-keys", (Nodes(2, labels={"disk": "ssd"}),),
             {"node_selector": {"disk": "ssd", "tier": "gold"}}, frozenset({"NodeAffinity"}),
             "node-selector", change="drop nodeSelector tier=gold"),
    Scenario("cordoned-or-small", (Nodes(1, unschedulable=True), Nodes(1, cpu="1")),
             {"cpu": "2"}, frozenset({"NodeUnschedulable", "NodeResourcesFit"}), "request"),
    # Pod affinity and anti-affinity.
    Scenario("zone-anti-affinity", (Nodes(2, labels={"zone": "a"}),),
             {"labels": WEB, "affinity": {"podAntiAffinity": {
                 "requiredDuringSchedulingIgnoredDuringExecution": [{
                     "labelSelector": {"matchLabels": {"app": "db"}},
                     "topologyKey": "zone"}]}}},
             frozenset({"InterPodAffinity"}), "podAntiAffinity",
             placed=((0, {"labels": {"app": "db"}}),)),
    Scenario("existing-anti-affinity", (Nodes(2),), {"labels": WEB},
             frozenset({"InterPodAffinity"}), "priority",
             placed=((0, {"labels": {"app": "db"}, "affinity": {"podAntiAffinity": {
                 "requiredDuringSchedulingIgnoredDuringExecution": [{
                     "labelSelector": {"matchLabels": WEB},
                     "topologyKey": "kubernetes.io/hostname"}]}}}),
                     (1, {"labels": {"app": "db"}, "affinity": {"podAntiAffinity": {
                         "requiredDuringSchedulingIgnoredDuringExecution": [{
                             "labelSelector": {"matchLabels": WEB},
                             "topologyKey": "kubernetes.io/hostname"}]}}}))),
    Scenario("affinity-to-nobody", (Nodes(2),),
             {"labels": WEB, "affinity": {"podAffinity": {
                 "requiredDuringSchedulingIgnoredDuringExecution": [{
                     "labelSelector": {"matchLabels": {"app": "cache"}},
                     "topologyKey": "kubernetes.io/hostname"}]}}},
             frozenset({"InterPodAffinity"}), "podAffinity"),
    # Spread.
    Scenario("hostname-spread-or-taint", (Nodes(1), Nodes(1, taints=(TAINT,))),
             {"labels": WEB, "spec": {"topologySpreadConstraints": [{
                 "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                 "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": WEB}}]}},
             frozenset({"PodTopologySpread", "TaintToleration"}), "toleration",
             placed=((0, {"labels": WEB}), (0, {"labels": WEB}))),
    # Ports.
    Scenario("two-ports", (Nodes(1),), {"host_ports": [8080, 9090]}, frozenset({"NodePorts"}),
             "priority", placed=((0, {"host_ports": [8080]}), (0, {"host_ports": [9090]}))),
    Scenario("port-everywhere", (Nodes(2),), {"host_ports": [8080]}, frozenset({"NodePorts"}),
             "host-port", placed=((0, {"host_ports": [8080]}), (1, {"host_ports": [8080]}))),
    Scenario("two-affinity-terms", (Nodes(2, labels={"zone": "z1"}),),
             {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                 "nodeSelectorTerms": [
                     {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z8"]}]},
                     {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]},
                 ]}}}},
             frozenset({"NodeAffinity"}), "node-affinity"),
    Scenario("selector-or-cpu", (Nodes(2, labels={"disk": "hdd"}),
                                 Nodes(1, cpu="1", labels={"disk": "ssd"})),
             {"cpu": "2", "node_selector": {"disk": "ssd"}},
             frozenset({"NodeAffinity", "NodeResourcesFit"}), "node-selector"),
    Scenario("ephemeral-storage", (Nodes(2, extra={"ephemeral-storage": "1Gi"}),),
             {"requests": {"ephemeral-storage": "2Gi"}}, frozenset({"NodeResourcesFit"}),
             "request", change="lower the ephemeral-storage request to at most 1073741824"),
    Scenario("spread-max-skew-2", (Nodes(2, labels={"zone": "a"}),
                                   Nodes(1, cpu="1", labels={"zone": "b"})),
             {"cpu": "500m", "labels": WEB, "spec": {"topologySpreadConstraints": [{
                 "maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": WEB}}]}},
             frozenset({"PodTopologySpread", "NodeResourcesFit"}), "spread",
             placed=((0, {"labels": WEB}), (0, {"labels": WEB}), (1, {"labels": WEB}),
                     (2, {"cpu": "1"})),
             change="relax the spread constraint over zone to maxSkew 4"),
    # Gates.
    Scenario("gated-on-tainted-nodes", (Nodes(1, taints=(TAINT,)),),
             {"spec": {"schedulingGates": [{"name": "example.com/q"}]}}, frozenset(), None),
    Scenario("two-gates", (Nodes(1),), {"spec": {"schedulingGates": [
        {"name": "example.com/a"}, {"name": "example.com/b"}]}}, frozenset(), "gates"),
    # Volumes and devices: nothing a single change of the pod or a node fixes.
    Scenario("claim-missing", (Nodes(1),), {"spec": {"volumes": [
        {"name": "v", "persistentVolumeClaim": {"claimName": "nowhere"}}]}},
             frozenset({"VolumeRestrictions"}), None),
    Scenario("volume-node-conflict", (Nodes(1),), {"spec": {"volumes": [
        {"name": "v", "persistentVolumeClaim": {"claimName": "pinned"}}]}},
             frozenset({"VolumeBinding"}), None, objects="pv-elsewhere"),
    Scenario("no-devices", (Nodes(1),), {"spec": {"resourceClaims": [
        {"name": "gpu", "resourceClaimName": "gpu"}]}},
             frozenset({"DynamicResources"}), None, objects="claim-without-devices"),
]


async def _remove_every_node(cluster: ClusterState) -> None:
    async with kube.api_client(cluster) as api:
        core = client.CoreV1Api(api)
        await kube.delete_nodes(api, [n.metadata.name for n in (await core.list_node()).items])

        async def gone() -> bool:
            return not (await core.list_node()).items

        await kube.wait_for(gone, 30, "leftover nodes deleted")


@pytest.fixture(scope="module")
def leader(cluster: ClusterState) -> Iterator[KpyschedProcess]:
    # Suggestions weigh every node of the cluster: nodes another test module left
    # behind would be places a dropped nodeSelector could send the pod. Each scenario
    # then deletes its own nodes when it ends.
    asyncio.run(_remove_every_node(cluster))
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
    extra_requests = arguments.pop("requests", {})
    selector = {**pin, **arguments.pop("node_selector", {})}
    body = kube.pod_body(name, scheduler_name=SCHEDULER, node_selector=selector, **arguments)
    body["spec"].update(extra_spec)
    body["spec"]["containers"][0]["resources"]["requests"].update(extra_requests)
    if extra_requests:  # an extended resource must be limited as it is requested
        body["spec"]["containers"][0]["resources"]["limits"] = dict(extra_requests)
    return body


async def _pv_elsewhere(api: client.ApiClient, namespace: str) -> None:
    """A claim bound to a local volume on a node that is not there."""
    name = f"sg-pv-{secrets.token_hex(3)}"
    await client.CoreV1Api(api).create_persistent_volume(kube.pv_body(
        name, node_affinity={kube.HOSTNAME_LABEL: ["gone-node"]},
        claim=(namespace, "pinned")))
    await client.CoreV1Api(api).create_namespaced_persistent_volume_claim(
        namespace, kube.pvc_body("pinned", volume_name=name))


async def _claim_without_devices(api: client.ApiClient, namespace: str) -> None:
    """A claim for a DeviceClass no ResourceSlice offers a device of."""
    custom = client.CustomObjectsApi(api)
    name = f"sg-class-{secrets.token_hex(3)}"
    await custom.create_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "none.example.com"'}}]}})
    await custom.create_namespaced_custom_object(
        "resource.k8s.io", "v1", namespace, "resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "gpu"},
            "spec": {"devices": {"requests": [{"name": "gpu",
                                               "exactly": {"deviceClassName": name}}]}}})


OBJECTS = {"pv-elsewhere": _pv_elsewhere, "claim-without-devices": _claim_without_devices}


def _patched(cluster: ClusterState, body: dict[str, Any], patch: dict[str, Any]
             ) -> dict[str, Any]:
    """The pod as written, with the strategic merge patch applied as a person would:
    `kubectl patch --local` (nothing is sent to the API server)."""
    written = {"apiVersion": "v1", "kind": "Pod", **body}
    result = kubectl.run(cluster, "patch", "--local", "-f", "-", "--type", "strategic",
                         "-p", json.dumps(patch), "-o", "json", stdin=json.dumps(written))
    patched: dict[str, Any] = json.loads(result.stdout)
    return patched


async def _apply(cluster: ClusterState, api: client.ApiClient, namespace: str,
                 body: dict[str, Any], fix: dict[str, Any], created_nodes: list[str]) -> None:
    """The fix as a person would apply it: the pod's patch applied to the pod as it was
    written, which is recreated (a higher priority through a PriorityClass of that
    value, as `how` says); node objects patched or created."""
    core = client.CoreV1Api(api)
    for node in fix.get("nodeObjects") or []:
        name = node["metadata"]["name"]
        try:
            await core.read_node(name)
        except ApiException as error:
            if error.status != 404:
                raise
            created_nodes.append(name)
            await kube.create_node(api, {"metadata": {"name": name,
                                                      "labels": node["metadata"]["labels"]},
                                         "spec": node["spec"], "status": node["status"]})
        else:
            await core.patch_node(name, {"spec": {
                "unschedulable": node["spec"].get("unschedulable") or None,
                "taints": node["spec"].get("taints") or None}})
    patch = fix.get("podPatch") or {}
    if not patch:
        return
    assert set(patch) == {"spec"}, patch  # a pod's fix changes its spec only
    spec = dict(patch["spec"])
    name = body["metadata"]["name"]
    if "priority" in spec:
        level = spec.pop("priority")
        spec.pop("preemptionPolicy", None)
        assert fix["how"].startswith("set priorityClassName"), fix
        class_name = f"suggested-{level}-{secrets.token_hex(2)}"
        await client.SchedulingV1Api(api).create_priority_class(
            {"metadata": {"name": class_name}, "value": level})
        spec["priorityClassName"] = class_name
    recreated = await asyncio.to_thread(_patched, cluster, body, {"spec": spec})
    await core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    await kube.wait_for(lambda: _gone(core, namespace, name), 30, f"pod {name} deleted")
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
    if scenario.objects:
        await OBJECTS[scenario.objects](api, namespace)
    bodies = []
    for group_index, spec in enumerate(scenario.nodes):
        for index in range(spec.count):
            name = f"sg-{scenario.name}-{group_index}{index}-{secrets.token_hex(2)}"
            bodies.append(kube.node_body(
                name, cpu=spec.cpu, labels={**pin, **spec.labels}, taints=spec.taints,
                unschedulable=spec.unschedulable, memory=spec.memory, pods=spec.pods,
                extra_allocatable=spec.extra))
    groups = [body["metadata"]["name"] for body in bodies]
    nodes_to_clean += groups
    # At once: each waits for node lifecycle to lift its not-ready taint.
    await asyncio.gather(*(kube.create_node(api, body) for body in bodies))
    for index, (node, arguments) in enumerate(scenario.placed):
        body = _body(f"placed-{index}", pin, arguments)
        body["spec"]["nodeName"] = groups[node]
        await kube.create_pod(api, namespace, body)
    body = _body("pending", pin, scenario.pod)
    await kube.create_pod(api, namespace, body)
    pod = f"{namespace}/pending"

    async def reported() -> bool:
        # PodScheduled=False (Unschedulable from the scheduler, SchedulingGated from the
        # API server): cheap to poll, where each explain is a process and a simulation.
        read = await client.CoreV1Api(api).read_namespaced_pod("pending", namespace)
        return any(c.type == "PodScheduled" and c.status == "False"
                   for c in read.status.conditions or ())

    await kube.wait_for(reported, 40, f"{pod} reported unschedulable or gated")

    async def answered() -> dict[str, Any] | None:
        raw = await asyncio.to_thread(_explain, cluster, pod)
        queue = (raw or {}).get("queue") or {}
        if queue.get("queue") not in ("unschedulable", "gated", "backoff"):
            return None
        return raw

    raw = await kube.wait_for(answered, 40, f"explain to show {pod} waiting")
    queue = raw["queue"]
    assert set(queue.get("rejectedBy", [])) >= scenario.cause, queue
    if scenario.cause:
        assert queue["queue"] in ("unschedulable", "backoff")
        # The attempt's FailedScheduling text, with its counts, is kept with it.
        assert raw["decisions"][-1]["message"].startswith("0/"), raw["decisions"][-1]
    if queue["queue"] == "unschedulable":
        # What can move it: the events each rejecting plugin registered for.
        assert {t["plugin"] for t in queue["requeueOn"]} == set(queue["rejectedBy"]), queue
    suggestions = raw["suggestions"]
    print(scenario.name, json.dumps(suggestions["fixes"], indent=1)[:3000])
    if scenario.first_fix is None:
        assert suggestions["fixes"] == [], suggestions
        return
    assert suggestions["fixes"], suggestions
    first = suggestions["fixes"][0]
    assert first["kind"] == scenario.first_fix, suggestions["fixes"]
    assert first["change"].startswith(scenario.change), first
    assert first["nodes"] >= 1 and first["node"]

    await _apply(cluster, api, namespace, body, first, nodes_to_clean)
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
