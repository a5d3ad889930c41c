"""A pod kpysched places on a real node runs (issue 11, item 4).

The harness starts a cluster of its own with `--with-node`'s node: kubelet v1.36.4,
containerd 2.x, runc and the bridge CNI, all built from Go modules. A pod of the
locally built hello image, scheduled by kpysched, must start, answer HTTP on its
pod IP from the host, and lose its sandbox when deleted. If the node cannot start,
the fixture errors with the reason and the kubelet/containerd log tails; it never
skips.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import cluster as harness
from tests.cluster import kube
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.realnode import images, node

SCHEDULER = "kpysched"


@dataclass(frozen=True, slots=True)
class RealNodeCluster:
    state: harness.ClusterState
    node: node.NodeState


@pytest.fixture(scope="module")
def real_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNodeCluster]:
    directory = tmp_path_factory.mktemp("real-node") / "state"
    state = harness.up(directory)
    try:
        yield RealNodeCluster(state, node.start(state))
    finally:
        problems = node.stop(directory)
        harness.down(directory)
        assert not problems, f"the real node did not clean up: {problems}"


@pytest.fixture
async def node_api(real_node: RealNodeCluster) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(real_node.state) as api_client:
        yield api_client


def _http_get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            body: bytes = response.read()
            return body.decode()
    except (urllib.error.URLError, OSError):
        return None


async def _namespace_with_service_account(core: client.CoreV1Api) -> str:
    """A fresh namespace whose `default` ServiceAccount exists before any pod.

    ServiceAccount admission rejects pods whose account is missing, and this cluster
    may run without kube-controller-manager's serviceaccount controller; if it does
    run, the controller may create the account first (409).
    """
    name = kube.unique_name("realnode")
    await core.create_namespace({"metadata": {"name": name}})
    try:
        await core.create_namespaced_service_account(name, {"metadata": {"name": "default"}})
    except ApiException as error:
        if error.status != 409:
            raise
    return name


def _hello_pod(name: str) -> dict[str, Any]:
    port = images.HELLO_PORT
    return {
        "metadata": {"name": name, "labels": {"app": "hello"}},
        "spec": {
            "schedulerName": SCHEDULER,
            # No kube-root-ca.crt publisher may run, so no projected token volume.
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "hello",
                "image": images.HELLO_IMAGE,
                "imagePullPolicy": "Never",  # no registry: the image was imported
                "ports": [{"containerPort": port}],
                "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
                # The kubelet probes from the host, over the bridge, like the test.
                "readinessProbe": {"httpGet": {"path": "/", "port": port},
                                   "periodSeconds": 1},
            }],
        },
    }


async def test_pod_placed_by_kpysched_runs_answers_http_and_its_sandbox_goes_on_delete(
    real_node: RealNodeCluster, node_api: client.ApiClient,
) -> None:
    core = client.CoreV1Api(node_api)
    layout = real_node.node.layout
    namespace = await _namespace_with_service_account(core)
    try:
        await kube.create_pod(node_api, namespace, _hello_pod("hello"))
        with KpyschedProcess(real_node.state, log_level="info"):
            bound = await kube.wait_bound(node_api, namespace, ["hello"], timeout=60)
        assert bound == {"hello": real_node.node.node_name}

        # Raw JSON: the kubelet's core/v1 events have no eventTime, which the
        # client's events.k8s.io model refuses to build.
        response = await client.EventsV1Api(node_api).list_namespaced_event(
            namespace, field_selector="regarding.name=hello", _preload_content=False)
        events = json.loads(await response.read())["items"]
        scheduled = [e for e in events if e["reason"] == "Scheduled"]
        assert [e["reportingController"] for e in scheduled] == [SCHEDULER], scheduled

        async def running_and_ready() -> Any:
            pod = await core.read_namespaced_pod("hello", namespace)
            ready = any(c.type == "Ready" and c.status == "True"
                        for c in pod.status.conditions or [])
            return pod if pod.status.phase == "Running" and ready and pod.status.pod_ip else None

        try:
            pod = await kube.wait_for(running_and_ready, 120, "pod hello Running and Ready")
        except AssertionError as error:
            status = (await core.read_namespaced_pod("hello", namespace)).status
            raise AssertionError(f"{error}\npod status: {status}\n"
                                 f"{node.diagnosis(layout)}") from None
        assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(layout.pod_subnet)
        url = f"http://{pod.status.pod_ip}:{images.HELLO_PORT}/"
        body = await asyncio.to_thread(_http_get, url)
        assert body == "hello from hello\n", f"GET {url} -> {body!r}"

        sandboxes = await asyncio.to_thread(node.sandboxes, layout)
        ours = [s for s in sandboxes if s["uid"] == pod.metadata.uid]
        assert [s["state"] for s in ours] == ["SANDBOX_READY"], sandboxes
        sandbox_id = ours[0]["id"]

        await core.delete_namespaced_pod("hello", namespace)

        async def pod_gone() -> bool:
            try:
                await core.read_namespaced_pod("hello", namespace)
            except ApiException as error:
                return error.status == 404
            return False

        # The kubelet confirms the deletion only after stopping the containers.
        await kube.wait_for(pod_gone, 60, "the kubelet to finish deleting pod hello")
        assert await asyncio.to_thread(_http_get, url) is None, f"{url} still answers"

        async def sandbox_removed() -> bool:
            listed = await asyncio.to_thread(node.sandboxes, layout)
            return not any(s["id"] == sandbox_id for s in listed)

        # Stopped at once; removed by the kubelet's container GC, which runs each minute.
        await kube.wait_for(sandbox_removed, 150, f"sandbox {sandbox_id} to be removed")
        tasks = await asyncio.to_thread(node.ctr, layout, "tasks", "list", "--quiet")
        assert sandbox_id not in tasks.split(), tasks
    finally:
        # With grace 0 the kubelet still kills the containers; nothing waits here for it.
        await core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        await core.delete_namespace(namespace)
