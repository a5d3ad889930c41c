"""The default profile's affinity, spread and preemption plugins on the real cluster."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config

SCHEDULER = "kpysched"
ZONE = "topology.kubernetes.io/zone"
NO_ELECTION = scheduler_config(leaderElection={"leaderElect": False})


async def _events(api: client.ApiClient, namespace: str, pod: str) -> list[Any]:
    listed = await client.EventsV1Api(api).list_namespaced_event(
        namespace, field_selector=f"regarding.name={pod}")
    return list(listed.items)


async def test_required_anti_affinity_places_one_replica_per_node(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 6, prefix="anti")
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    names = [f"web-{i}" for i in range(7)]
    for name in names:
        await kube.create_pod(api, namespace, kube.pod_body(
            name, scheduler_name=SCHEDULER, labels={"app": "web"}, affinity=anti))
    with KpyschedProcess(cluster, NO_ELECTION):
        async def six_bound() -> dict[str, str] | None:
            pods = (await client.CoreV1Api(api).list_namespaced_pod(namespace)).items
            bound = {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}
            return bound if len(bound) == 6 else None

        bound = await kube.wait_for(six_bound, 60, "six replicas to bind")

        async def failed() -> Any:
            pending = next(n for n in names if n not in bound)
            events = await _events(api, namespace, pending)
            return next((e for e in events if e.reason == "FailedScheduling"), None)

        event = await kube.wait_for(failed, 30, "the seventh replica's FailedScheduling event")
    assert sorted(bound.values()) == sorted(nodes_to_clean)  # one per node
    # v1.36 words DynamicResources' PostFilter in the text, v1.37 only preemption's.
    dra_post_filter = "no new claims to deallocate, " if cluster.release == "1.36" else ""
    assert event.note == (
        "0/6 nodes are available: 6 node(s) didn't match pod anti-affinity rules. "
        f"{dra_post_filter}preemption: 0/6 nodes are available: "
        "6 No preemption victims found for incoming pod.")


async def test_zone_spread_with_max_skew_one_ends_balanced(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    for zone in "abc":
        # Zone a is far bigger: without the constraint, LeastAllocated would fill it first.
        cpu = "32" if zone == "a" else "4"
        nodes_to_clean += await kube.create_nodes(api, 2, prefix=f"zone-{zone}", cpu=cpu,
                                                  labels={ZONE: zone})
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "spread"}}}]
    names = [f"s-{i}" for i in range(9)]
    for name in names:
        body = kube.pod_body(name, scheduler_name=SCHEDULER, labels={"app": "spread"})
        body["spec"]["topologySpreadConstraints"] = spread
        await kube.create_pod(api, namespace, body)
    with KpyschedProcess(cluster, NO_ELECTION):
        bound = await kube.wait_bound(api, namespace, names, timeout=60)
    nodes = {n.metadata.name: n.metadata.labels[ZONE]
             for n in (await client.CoreV1Api(api).list_node()).items if n.metadata.labels
             and ZONE in n.metadata.labels}
    assert Counter(nodes[node] for node in bound.values()) == {"a": 3, "b": 3, "c": 3}


async def _priority_classes(api: client.ApiClient) -> None:
    for name, value in (("e2e-low", 10), ("e2e-mid", 100), ("e2e-high", 10000)):
        with contextlib.suppress(ApiException):
            await client.SchedulingV1Api(api).create_priority_class(
                {"metadata": {"name": name}, "value": value})


async def test_preemption_takes_the_lowest_victims_and_spares_the_pdb(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    await _priority_classes(api)
    nodes_to_clean += await kube.create_nodes(api, 3, prefix="preempt", cpu="2")
    guarded, free, busy = nodes_to_clean
    core = client.CoreV1Api(api)
    existing = {
        "guarded": (guarded, "e2e-low", {"app": "guarded"}),  # protected by a PDB
        "free": (free, "e2e-low", {"app": "free"}),
        "busy": (busy, "e2e-mid", {"app": "busy"}),  # higher priority than the others
    }
    for name, (node, priority, labels) in existing.items():
        body = kube.pod_body(name, scheduler_name=SCHEDULER, cpu="1500m", labels=labels,
                             priority_class=priority)
        body["spec"]["nodeName"] = node
        await core.create_namespaced_pod(namespace, body)
    await client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(namespace, {
        "metadata": {"name": "guard"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}}})

    with KpyschedProcess(cluster, NO_ELECTION) as kp:
        await kube.create_pod(api, namespace, kube.pod_body(
            "urgent", scheduler_name=SCHEDULER, cpu="1500m", priority_class="e2e-high"))
        bound = await kube.wait_bound(api, namespace, ["urgent"], timeout=60)
        victims = [e["victim"] for e in kp.log_events()
                   if e.get("event") == "preemption.victim_deleted"]
    assert bound == {"urgent": free}
    assert victims == [f"{namespace}/free"]
    left = {p.metadata.name for p in (await core.list_namespaced_pod(namespace)).items}
    assert left == {"guarded", "busy", "urgent"}
    preempted = [e for e in await _events(api, namespace, "free") if e.reason == "Preempted"]
    assert preempted and preempted[0].note.startswith("Preempted by pod ")
