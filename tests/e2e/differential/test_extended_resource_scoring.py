"""Differential: NodeResourcesFit and BalancedAllocation scoring an extended resource a
DeviceClass backs (issue 33 item 11), with scoringStrategy.resources naming it.

Two nodes advertise no such resource; ResourceSlices give n0 one device of the class
and n1 eight, one of them held by a claim. n1 also runs a small pod, so on cpu and
memory alone n0 scores higher; counting devices, n1 has far more room (6 of 8 left
with the pod against 0 of 1) and wins. Both schedulers must choose the same node and
give the pod's extended-resource claim the same device.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config
from tests.cluster.upstream import UpstreamScheduler

pytestmark = pytest.mark.e2e

GPU = "scored.example.com/gpu"
DRIVER = "gpu.example.com"
RESOURCE = ("resource.k8s.io", "v1")
UPSTREAM, KPYSCHED = "default-scheduler", "kpysched"
SCORED = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
          {"name": GPU, "weight": 1}]
SETTLE_SECONDS = 2.5
OUTCOME_TIMEOUT_SECONDS = 30.0


def _profile(name: str) -> dict[str, Any]:
    return {"schedulerName": name, "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
            "type": "LeastAllocated", "resources": SCORED}}},
        {"name": "NodeResourcesBalancedAllocation", "args": {"resources": SCORED}}]}


@pytest.fixture(scope="module")
def schedulers(cluster: ClusterState) -> Iterator[None]:
    fields = {"leaderElection": {"leaderElect": False}}
    with (UpstreamScheduler(cluster, scheduler_config([_profile(UPSTREAM)], **fields)),
          KpyschedProcess(cluster, scheduler_config([_profile(KPYSCHED)], **fields),
                          log_level="info")):
        yield


def _slice(name: str, node: str, devices: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "driver": DRIVER, "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"dev-{index}"} for index in range(devices)]}}


def _held_claim(node: str) -> dict[str, Any]:
    """A claim already allocated dev-0 of `node`'s pool (as if another pod used it)."""
    return {"metadata": {"name": "held"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "unused"}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": DRIVER, "pool": node, "device": "dev-0"}]},
            "allocationTimestamp": datetime.datetime.now(datetime.UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"),
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}


async def _placement(api: client.ApiClient, scheduler: str) -> dict[str, Any]:
    suffix = secrets.token_hex(3)
    n0, n1, klass = f"n0-{suffix}", f"n1-{suffix}", f"gpus-{suffix}"
    namespace = await kube.create_namespace(api, "scored")
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    slices = [(f"s0-{suffix}", n0, 1), (f"s1-{suffix}", n1, 8)]
    try:
        for node in (n0, n1):
            await kube.create_node(api, kube.node_body(node))
        await custom.create_cluster_custom_object(*RESOURCE, "deviceclasses", {
            "metadata": {"name": klass}, "spec": {"extendedResourceName": GPU}})
        for name, node, devices in slices:
            await custom.create_cluster_custom_object(*RESOURCE, "resourceslices",
                                                      _slice(name, node, devices))
        held = _held_claim(n1)
        await custom.create_namespaced_custom_object(
            *RESOURCE, namespace, "resourceclaims",
            {key: value for key, value in held.items() if key != "status"})
        await custom.patch_namespaced_custom_object_status(
            *RESOURCE, namespace, "resourceclaims", "held", {"status": held["status"]},
            _content_type="application/merge-patch+json")
        busy = kube.pod_body("busy", scheduler_name=scheduler, cpu="200m", memory="100Mi")
        busy["spec"]["nodeName"] = n1
        await core.create_namespaced_pod(namespace, busy)
        await asyncio.sleep(SETTLE_SECONDS)  # both schedulers' informers have it all
        incoming = kube.pod_body("incoming", scheduler_name=scheduler, memory="100Mi")
        container = incoming["spec"]["containers"][0]["resources"]
        container["requests"][GPU] = "1"
        container["limits"] = {GPU: "1"}
        await core.create_namespaced_pod(namespace, incoming)
        bound = await kube.wait_bound(api, namespace, ["incoming"],
                                      timeout=OUTCOME_TIMEOUT_SECONDS)
        response = await custom.list_namespaced_custom_object(
            *RESOURCE, namespace, "resourceclaims", _preload_content=False)
        claims = json.loads(await response.read())["items"]
        allocated = sorted(
            (result["pool"].removesuffix(f"-{suffix}"), result["device"])
            for item in claims if item["metadata"]["name"] != "held"
            for result in item.get("status", {}).get("allocation", {})
                              .get("devices", {}).get("results", []))
        return {"node": bound["incoming"].removesuffix(f"-{suffix}"), "devices": allocated}
    finally:
        await kube.delete_namespace(api, namespace)
        for plural, name in [("deviceclasses", klass),
                             *(("resourceslices", s[0]) for s in slices)]:
            try:
                await custom.delete_cluster_custom_object(*RESOURCE, plural, name)
            except ApiException as error:
                if error.status != 404:
                    raise
        await kube.delete_nodes(api, [n0, n1])


async def test_devices_decide_the_score_as_in_kube_scheduler(
        schedulers: None, api: client.ApiClient) -> None:
    upstream = await _placement(api, UPSTREAM)
    ours = await _placement(api, KPYSCHED)
    assert upstream["node"] == "n1", upstream  # the devices decided, not cpu and memory
    assert ours == upstream, f"\n upstream: {upstream}\n kpysched: {ours}"
