"""A public project's scheduler extender beside kpysched (issue 35): AliyunContainerService's
gpushare-scheduler-extender, built from its Go module (tests/cluster/extenders.py),
configured as its project documents it (filter and bind, nodeCacheCapable, managing
aliyun.com/gpu-mem, not ignored by the scheduler).

Nodes: gpu-a with two 8 GiB GPUs, gpu-b with one of 4 GiB, plain with none. Pods
asking 6, 6, 3 and 3 GiB: the first two fill a GPU each on gpu-a (only it has room;
the extender binds them and writes the GPU into their annotations), the third fits
gpu-a by the node's total (4 left) but no single GPU there (2 and 2), so the
extender refuses gpu-a and it goes to gpu-b; the fourth fits nowhere, and the
FailedScheduling text counts the extender's reason beside NodeResourcesFit's.
kube-scheduler v1.36.4 runs the same pods first, against the same extender process,
and the two must end the same.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.extenders import GpushareExtender
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config
from tests.cluster.upstream import UpstreamScheduler

pytestmark = pytest.mark.e2e

GPU_MEM, GPU_COUNT = "aliyun.com/gpu-mem", "aliyun.com/gpu-count"
GPU_INDEX, GPU_PER_DEVICE = "ALIYUN_COM_GPU_MEM_IDX", "ALIYUN_COM_GPU_MEM_DEV"
REFUSED = "Insufficient GPU Memory in one device"
UPSTREAM, KPYSCHED = "default-scheduler", "kpysched"
NODES = {"gpu-a": {GPU_MEM: "16", GPU_COUNT: "2"}, "gpu-b": {GPU_MEM: "4", GPU_COUNT: "1"},
         "plain": {}}
PODS = (("p1", "6"), ("p2", "6"), ("p3", "3"), ("p4", "3"))
OUTCOME_TIMEOUT_SECONDS = 30.0
SETTLE_SECONDS = 2.5


def _extender(url_prefix: str) -> dict[str, Any]:
    return {"urlPrefix": url_prefix, "filterVerb": "filter", "bindVerb": "bind",
            "enableHTTPS": False, "nodeCacheCapable": True, "ignorable": False,
            "managedResources": [{"name": GPU_MEM, "ignoredByScheduler": False}]}


@pytest.fixture(scope="module")
def gpushare(cluster: ClusterState) -> Iterator[str]:
    with GpushareExtender(cluster) as extender:
        fields = {"leaderElection": {"leaderElect": False},
                  "extenders": [_extender(extender.url_prefix)]}
        with (UpstreamScheduler(cluster, {"extenders": fields["extenders"]}),
              KpyschedProcess(cluster, scheduler_config([{"schedulerName": KPYSCHED}],
                                                        **fields), log_level="info")):
            yield extender.url_prefix


@dataclass(frozen=True)
class Placement:
    node: str | None  # node role
    gpu: str | None  # the extender's annotations: which GPU, of what size
    per_device: str | None


async def _run(api: client.ApiClient, scheduler: str) -> tuple[dict[str, Placement], str]:
    """Each pod in turn, waiting for the one before to be placed (or refused)."""
    core = client.CoreV1Api(api)
    suffix = secrets.token_hex(3)
    names = {role: f"{role}-{suffix}" for role in NODES}
    namespace = await kube.create_namespace(api, "gpushare")
    try:
        for role, extra in NODES.items():
            await kube.create_node(api, kube.node_body(names[role], extra_allocatable=extra))
        await asyncio.sleep(SETTLE_SECONDS)  # the scheduler's and the extender's informers
        placements: dict[str, Placement] = {}
        for pod, memory in PODS:
            body = kube.pod_body(pod, scheduler_name=scheduler)
            resources = body["spec"]["containers"][0]["resources"]
            resources["requests"][GPU_MEM] = memory
            resources["limits"] = {GPU_MEM: memory}
            await core.create_namespaced_pod(namespace, body)
            placements[pod] = await _placement(api, namespace, pod, suffix)
        notes = await kube.events(api, namespace, "FailedScheduling", regarding="p4")
        message = notes[0].get("note", "") if notes else ""
        return placements, message.replace(f"-{suffix}", "")
    finally:
        await kube.delete_namespace(api, namespace)
        await kube.delete_nodes(api, names.values())


async def _placement(api: client.ApiClient, namespace: str, pod: str,
                     suffix: str) -> Placement:
    core = client.CoreV1Api(api)
    deadline = asyncio.get_running_loop().time() + OUTCOME_TIMEOUT_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        found = await core.read_namespaced_pod(pod, namespace)
        if found.spec.node_name:
            annotations = found.metadata.annotations or {}
            return Placement(found.spec.node_name.removesuffix(f"-{suffix}"),
                             annotations.get(GPU_INDEX), annotations.get(GPU_PER_DEVICE))
        if await kube.events(api, namespace, "FailedScheduling", regarding=pod):
            return Placement(None, None, None)
        await asyncio.sleep(0.2)
    return Placement(None, None, None)


async def test_gpushare_extender_places_pods_as_with_kube_scheduler(
        gpushare: str, api: client.ApiClient) -> None:
    upstream, upstream_message = await _run(api, UPSTREAM)
    ours, message = await _run(api, KPYSCHED)
    # What the scenario means, on upstream's run.
    assert [upstream[p].node for p, _ in PODS] == ["gpu-a", "gpu-a", "gpu-b", None], upstream
    assert {upstream["p1"].gpu, upstream["p2"].gpu} == {"0", "1"}, upstream
    assert upstream["p1"].per_device == "8", upstream
    assert REFUSED in upstream_message, upstream_message
    assert ours == upstream, f"\n upstream: {upstream}\n kpysched: {ours}"
    assert message == upstream_message
