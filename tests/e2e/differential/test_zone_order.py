"""Differential: the order nodes are walked in, at a size where it decides placements.

With 300 nodes the adaptive percentageOfNodesToScore (48 %) stops each cycle after
144 feasible nodes from a rotating start. kube-scheduler walks its nodes zone by
zone, round-robin, so every such window holds nodes of all three zones; a walk in
name order would give windows of one or two zones. The pods here prefer zone c
(preferred node affinity), so they all land in zone c only when every window
reaches into it. Both schedulers must give the same zone distribution.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.upstream import UpstreamScheduler

ZONE = "topology.kubernetes.io/zone"
ZONES = ("a", "b", "c")
NODES_PER_ZONE = 100
PODS = 30
PARALLEL = 25


@pytest.fixture(scope="module")
def schedulers(cluster: ClusterState) -> Iterator[None]:
    with UpstreamScheduler(cluster), KpyschedProcess(cluster, log_level="info"):
        yield


async def _in_batches(coroutines: list[object]) -> None:
    for start in range(0, len(coroutines), PARALLEL):
        await asyncio.gather(*coroutines[start:start + PARALLEL])  # type: ignore[arg-type]


def _pod(name: str, scheduler_name: str) -> dict[str, object]:
    body = kube.pod_body(name, scheduler_name=scheduler_name)
    body["spec"]["affinity"] = {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {
            "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["c"]}]}}]}}
    return body


async def _zone_distribution(api: client.ApiClient, scheduler_name: str) -> Counter[str]:
    suffix = secrets.token_hex(2)
    # Names sort zone by zone (a..., b..., c...): only the zone round-robin mixes them.
    names = {f"{zone}{index:03d}-{suffix}": zone
             for zone in ZONES for index in range(NODES_PER_ZONE)}
    namespace = await kube.create_namespace(api, "zones")
    try:
        await _in_batches([kube.create_node(api, kube.node_body(name, labels={ZONE: zone}))
                           for name, zone in names.items()])
        await asyncio.sleep(3)  # both schedulers' informers have every node
        pods = [f"p{index}" for index in range(PODS)]
        for name in pods:  # one at a time: each decision sees the previous one
            await kube.create_pod(api, namespace, _pod(name, scheduler_name))
            await kube.wait_bound(api, namespace, [name], timeout=30)
        bound = await kube.wait_bound(api, namespace, pods, timeout=30)
        return Counter(names[node] for node in bound.values())
    finally:
        await kube.delete_namespace(api, namespace)
        await _in_batches([kube.delete_nodes(api, [name]) for name in names])


async def test_zone_distribution_matches_kube_scheduler(schedulers: None,
                                                        api: client.ApiClient) -> None:
    upstream = await _zone_distribution(api, "default-scheduler")
    ours = await _zone_distribution(api, "kpysched")
    assert upstream == Counter({"c": PODS}), upstream  # the scenario means what it says
    assert ours == upstream
