"""Karpenter (KWOK provider) scales up for kpysched's pods and down after them (issue 37).

A cluster of its own (kube-controller-manager, KWOK), Karpenter with its KWOK cloud
provider (tests/cluster/karpenter.py) and kpysched as a process; no kube-scheduler.
Karpenter acts only on pods whose PodScheduled condition is False with reason
Unschedulable: the condition kpysched writes when no node fits. The pods here fit no
existing node three ways at once (more CPU than it has, a nodeSelector only the
NodePool's template carries, required anti-affinity by host), Karpenter provisions
one node per pod, and kpysched binds each pod to one of them. When two pods go,
Karpenter removes their empty nodes and leaves the one whose pod still runs.

Kueue runs here too (tests/cluster/kueue.py): Jobs it admits within quota get nodes
from Karpenter and places from kpysched.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client, watch

from tests.cluster import cluster as harness
from tests.cluster import karpenter, kube, kueue, nodes
from tests.cluster.kpysched_process import KpyschedProcess

pytestmark = pytest.mark.e2e

SCHEDULER = "kpysched"
POOL_LABEL = "example.com/pool"
POOL = "burst"
APP_LABEL = "app"
SCALE_UP_TIMEOUT_SECONDS = 90.0
# Seen at about 70 s here: Karpenter's disruption loop runs every 10 s, holds an empty
# node's consolidation for a 15 s validation, then drains and deletes it.
SCALE_DOWN_TIMEOUT_SECONDS = 180.0


@dataclass(frozen=True, slots=True)
class KarpenterCluster:
    state: harness.ClusterState
    kpysched: KpyschedProcess
    existing_node: str


@pytest.fixture(scope="module")
def karpenter_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KarpenterCluster]:
    directory = tmp_path_factory.mktemp("karpenter-cluster") / "state"
    state = harness.up(directory, harness.FULL)
    try:
        existing = asyncio.run(_add_existing_node(state))
        with karpenter.running(state), kueue.running(state), \
                KpyschedProcess(state, log_level="info") as scheduler:
            yield KarpenterCluster(state, scheduler, existing)
    finally:
        harness.down(directory)


async def _add_existing_node(state: harness.ClusterState) -> str:
    # A small node that none of the test's pods fits (2 CPUs, no pool label).
    async with kube.api_client(state) as api:
        added = await nodes.add(api, 1, nodes.NodeShape(cpu="2", memory="8Gi", zones=1),
                                name_prefix="static")
    name: str = added[0]
    return name


@pytest.fixture
async def api(karpenter_cluster: KarpenterCluster) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(karpenter_cluster.state) as api_client:
        yield api_client


@pytest.fixture
async def namespace(api: client.ApiClient) -> AsyncIterator[str]:
    name = await kube.create_namespace(api, "karpenter")
    try:
        yield name
    finally:
        await kube.delete_namespace(api, name)


def _custom(api: client.ApiClient) -> Any:
    return client.CustomObjectsApi(api)


async def _node_pool(api: client.ApiClient, name: str) -> None:
    """A KWOKNodeClass and a NodePool whose nodes carry POOL_LABEL; empty nodes go
    after 5 s."""
    for group, version, plural, body in karpenter.node_pool(
            name, labels={POOL_LABEL: POOL}, cpu_limit="64", consolidate_after="5s"):
        await _custom(api).create_cluster_custom_object(group, version, plural, body)


async def _delete_node_pool(api: client.ApiClient, name: str) -> None:
    for group, version, plural in (("karpenter.sh", "v1", "nodepools"),
                                   ("karpenter.kwok.sh", "v1alpha1", "kwoknodeclasses")):
        try:
            await _custom(api).delete_cluster_custom_object(group, version, plural, name)
        except client.ApiException as error:
            if error.status != 404:
                raise


def _pod(name: str) -> dict[str, Any]:
    return kube.pod_body(name, scheduler_name=SCHEDULER, cpu="3", memory="1Gi",
                         labels={APP_LABEL: "spread"}, node_selector={POOL_LABEL: POOL},
                         affinity={"podAntiAffinity": {
                             "requiredDuringSchedulingIgnoredDuringExecution": [{
                                 "labelSelector": {"matchLabels": {APP_LABEL: "spread"}},
                                 "topologyKey": kube.HOSTNAME_LABEL}]}})


async def _pods(api: client.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    response = await client.CoreV1Api(api).list_namespaced_pod(namespace,
                                                                _preload_content=False)
    return {p["metadata"]["name"]: p for p in json.loads(await response.read())["items"]}


async def _node_claims(api: client.ApiClient, pool: str) -> list[dict[str, Any]]:
    listed = await _custom(api).list_cluster_custom_object(
        "karpenter.sh", "v1", "nodeclaims", label_selector=f"{karpenter.NODEPOOL_LABEL}={pool}")
    items: list[dict[str, Any]] = listed["items"]
    return items


def _unschedulable_by_kpysched(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "PodScheduled" and c["status"] == "False"
               and c.get("reason") == "Unschedulable"
               for c in pod.get("status", {}).get("conditions", []))


async def test_unplaceable_pods_make_karpenter_scale_up_and_kpysched_places_them(
    karpenter_cluster: KarpenterCluster, api: client.ApiClient, namespace: str,
) -> None:
    pool = namespace
    await _node_pool(api, pool)
    names = [f"spread-{i}" for i in range(3)]
    seen: list[PodView] = []
    watching = asyncio.create_task(_record_pods(api, namespace, seen))
    try:
        for name in names:
            await kube.create_pod(api, namespace, _pod(name))

        # What Karpenter reads: kpysched's PodScheduled=False/Unschedulable condition,
        # written (with its FailedScheduling event) before any node could take the pods.
        failed = await kube.wait_for(
            lambda: _failed_scheduling_events(api, namespace, names), SCALE_UP_TIMEOUT_SECONDS,
            "kpysched's FailedScheduling event for every pod")
        assert {e["reportingController"] for e in failed} == {SCHEDULER}, failed

        bound = await kube.wait_bound(api, namespace, names, timeout=SCALE_UP_TIMEOUT_SECONDS)
        pods = await _pods(api, namespace)
        assert len(set(bound.values())) == len(names), f"anti-affinity broken: {bound}"
        assert karpenter_cluster.existing_node not in bound.values()
        core = client.CoreV1Api(api)
        for name, node_name in bound.items():
            node = await core.read_node(node_name)
            assert node.metadata.labels.get(POOL_LABEL) == POOL, node.metadata.labels
            assert node.metadata.labels.get(karpenter.NODEPOOL_LABEL) == pool
            conditions = {c["type"]: c for c in pods[name]["status"]["conditions"]}
            assert conditions["PodScheduled"]["status"] == "True", conditions

        async def claims_registered() -> bool:
            # A NodeClaim's status names its node a moment after the node is usable.
            claims = await _node_claims(api, pool)
            return sorted(c.get("status", {}).get("nodeName") or "" for c in claims) == \
                sorted(bound.values())

        await kube.wait_for(claims_registered, SCALE_UP_TIMEOUT_SECONDS,
                            f"exactly one registered NodeClaim per bound node {bound}")
        # Every version of every pod, as Karpenter's informer saw them: each was first
        # unbound with kpysched's PodScheduled=False/Unschedulable and no
        # nominatedNodeName (Karpenter skips a pod that has one), then bound.
        for name in names:
            history = [view for view in seen if view.name == name]
            waiting = [v for v in history if not v.node and v.scheduled == ("False",
                                                                           "Unschedulable")]
            assert waiting, f"{name} was never seen Unschedulable by kpysched: {history}"
            assert not any(v.nominated for v in waiting), history
            assert history[-1].node == bound[name], history
        # Karpenter says which NodeClaim it meant a pod for (not for every pod: a run
        # here had events for two of the three).
        # Events are written asynchronously, after the nodes may already be in use.
        nominated = await kube.wait_for(lambda: kube.events(api, namespace, "Nominated"),
                                        SCALE_UP_TIMEOUT_SECONDS, "Karpenter's Nominated event")
        assert all(e["reportingController"] == "karpenter" and
                                 "nodeclaim/" in e["note"] for e in nominated), nominated
        scheduled = await kube.events(api, namespace, "Scheduled")
        assert {e["reportingController"] for e in scheduled} == {SCHEDULER}

        # Two pods go: their nodes are empty and Karpenter removes them; the third pod's
        # node stays and the pod keeps running there (it could go nowhere else).
        keep = names[0]
        kept_uid, kept_node = pods[keep]["metadata"]["uid"], bound[keep]
        for name in names[1:]:
            await core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

        async def scaled_down() -> bool:
            claims = await _node_claims(api, pool)
            current = (await _pods(api, namespace)).get(keep)
            assert current is not None and current["metadata"]["uid"] == kept_uid, (
                f"Karpenter evicted {keep}, which fits no other node")
            return [c["status"].get("nodeName") for c in claims] == [kept_node]

        await kube.wait_for(scaled_down, SCALE_DOWN_TIMEOUT_SECONDS,
                            f"Karpenter to remove the two empty nodes and keep {kept_node}")
        assert (await _pods(api, namespace))[keep]["spec"]["nodeName"] == kept_node
    finally:
        watching.cancel()
        await kube.delete_namespace(api, namespace)
        await _delete_node_pool(api, pool)


@dataclass(frozen=True, slots=True)
class PodView:
    name: str
    node: str
    nominated: str
    scheduled: tuple[str, str]  # PodScheduled (status, reason); ("", "") when absent


async def _record_pods(api: client.ApiClient, namespace: str, seen: list[PodView]) -> None:
    """Append every version of every pod in `namespace` to `seen` until cancelled."""
    core = client.CoreV1Api(api)
    version = "0"
    while True:
        stream = watch.Watch()
        async with stream.stream(core.list_namespaced_pod, namespace, resource_version=version,
                                 timeout_seconds=60) as events:
            async for event in events:
                pod = event["object"]
                version = pod.metadata.resource_version
                condition = next((c for c in (pod.status.conditions or ())
                                  if c.type == "PodScheduled"), None)
                seen.append(PodView(
                    pod.metadata.name, pod.spec.node_name or "",
                    pod.status.nominated_node_name or "",
                    (condition.status, condition.reason or "") if condition else ("", "")))


async def _failed_scheduling_events(api: client.ApiClient, namespace: str,
                                    names: list[str]) -> list[dict[str, Any]] | None:
    events = await kube.events(api, namespace, "FailedScheduling")
    about = {e["regarding"]["name"] for e in events}
    return events if about >= set(names) else None


async def test_kueue_admits_karpenter_provisions_kpysched_places(
    karpenter_cluster: KarpenterCluster, api: client.ApiClient, namespace: str,
) -> None:
    """Three Jobs of one 3-CPU pod (the anti-affinity pods above) against a ClusterQueue
    of 6 CPUs: Kueue admits two and the third when one has finished (KWOK finishes a
    Job's pod right after it starts); no more than two pods are ever active; Karpenter
    makes the nodes and kpysched binds every pod to one of them."""
    pool = namespace
    await _node_pool(api, pool)
    custom = _custom(api)
    group, version = kueue.API_VERSION.split("/")
    await custom.create_cluster_custom_object(group, version, "resourceflavors", {
        "apiVersion": kueue.API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": pool}})
    await custom.create_cluster_custom_object(group, version, "clusterqueues", {
        "apiVersion": kueue.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": pool},
        "spec": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": namespace}},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                     {"name": pool, "resources": [{"name": "cpu", "nominalQuota": "6"},
                                                  {"name": "memory", "nominalQuota": "64Gi"}]}]}]}})
    await custom.create_namespaced_custom_object(group, version, namespace, "localqueues", {
        "apiVersion": kueue.API_VERSION, "kind": "LocalQueue",
        "metadata": {"name": pool, "namespace": namespace}, "spec": {"clusterQueue": pool}})
    batch = client.BatchV1Api(api)
    try:
        for index in range(3):
            template = _pod(f"job-{index}")
            template["metadata"] = {"labels": template["metadata"]["labels"]}
            template["spec"]["restartPolicy"] = "Never"
            await batch.create_namespaced_job(namespace, {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"job-{index}", "labels": {kueue.QUEUE_LABEL: pool}},
                "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                         "template": template}})

        async def all_finished() -> bool:
            pods = list((await _pods(api, namespace)).values())
            active = [p["metadata"]["name"] for p in pods
                      if p["status"].get("phase") not in ("Succeeded", "Failed")]
            assert len(active) <= 2, f"more pods active than the quota admits: {active}"
            workloads = (await custom.list_namespaced_custom_object(
                group, version, namespace, "workloads"))["items"]
            return sum(_finished(w) for w in workloads) == 3

        await kube.wait_for(all_finished, SCALE_UP_TIMEOUT_SECONDS,
                            "Kueue to admit and finish all three Jobs on Karpenter's nodes")
        pods = list((await _pods(api, namespace)).values())
        assert len(pods) == 3, [p["metadata"]["name"] for p in pods]
        # By name: a node whose pod finished early may be consolidated away already. The
        # KWOK provider names a node after its NodeClaim, which is named after the pool.
        for pod in pods:
            assert pod["spec"]["nodeName"].startswith(f"kwok-{pool}-"), (
                f"{pod['metadata']['name']} ran on {pod['spec']['nodeName']}, "
                "not a node of the test's NodePool")
        scheduled = await kube.events(api, namespace, "Scheduled")
        assert {e["regarding"]["name"] for e in scheduled} == {
            p["metadata"]["name"] for p in pods}
        assert {e["reportingController"] for e in scheduled} == {SCHEDULER}, scheduled
    finally:
        await batch.delete_collection_namespaced_job(namespace, propagation_policy="Background")
        for plural in ("clusterqueues", "resourceflavors"):
            try:
                await custom.delete_cluster_custom_object(group, version, plural, pool)
            except client.ApiException as error:
                if error.status != 404:
                    raise
        await kube.delete_namespace(api, namespace)
        await _delete_node_pool(api, pool)


def _finished(workload: dict[str, Any]) -> bool:
    return any(c["type"] == "Finished" and c["status"] == "True"
               for c in workload.get("status", {}).get("conditions", []))
