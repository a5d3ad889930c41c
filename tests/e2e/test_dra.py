"""Dynamic resource allocation end to end, on the real API server with the real
resourceclaim controller (kube-controller-manager): devices are ResourceSlices the
test publishes, as a driver would, and no kubelet is needed.

- Pods racing for the last devices never share one: each device ends in at most
  one claim's allocation, and exactly as many pods bind as there are devices.
- A claim deleted while its pod is in the binding cycle (waiting for the device's
  binding conditions) gives the pod a FailedScheduling event naming the problem,
  the scheduler keeps running, and the pod is retried and binds once the claim is
  back and its device ready.
- A selector the API server admits but whose actual cost passes cel-go's limit fails
  Filter for the node with upstream's text, soon, while the pods after it bind.

Each test runs with kpysched and with the cluster's kube-scheduler as the yardstick that
shows the test asks for upstream's behaviour, except the last, kpysched's alone: the
differential scenario dra-request-cel-actual-cost-limit compares it with upstream.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config
from tests.cluster.upstream import UpstreamScheduler
from tests.e2e.differential.dra_scenarios import COST_LIMIT_EXCEEDED, COSTLY

pytestmark = pytest.mark.e2e

DRIVER = "gpu.kpysched.test"
BINDING_TIMEOUT = "5s"
# Both schedulers give up waiting for binding conditions after BINDING_TIMEOUT.
CONFIG = {"leaderElection": {"leaderElect": False}}
# Upstream stops COSTLY in ~0.1 s per device, kpysched in ~0.05 s: the first attempt's
# FailedScheduling is due within seconds; the rest is room for a loaded machine.
COST_LIMIT_SECONDS = 20


def _profile(name: str) -> dict[str, Any]:
    return {"schedulerName": name, "pluginConfig": [{
        "name": "DynamicResources",
        "args": {"bindingTimeout": BINDING_TIMEOUT}}]}


@pytest.fixture(params=["kpysched", "default-scheduler"], ids=["kpysched", "kube-scheduler"])
def scheduler(request: pytest.FixtureRequest, cluster: ClusterState) -> Iterator[str]:
    """The scheduler name pods ask for, with that scheduler running."""
    name = request.param
    config = scheduler_config([_profile(name)], **CONFIG)
    if name == "kpysched":
        with KpyschedProcess(cluster, config, log_level="info") as process:
            request.node.kpysched = process
            yield name
    else:
        with UpstreamScheduler(cluster, config):
            yield name


@dataclass
class World:
    api: client.ApiClient
    namespace: str
    scheduler: str
    suffix: str = field(default_factory=lambda: secrets.token_hex(3))
    nodes: list[str] = field(default_factory=list)
    slices: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)

    @property
    def resource(self) -> client.ResourceV1Api:
        return client.ResourceV1Api(self.api)

    async def node(self, role: str) -> str:
        name = f"{role}-{self.suffix}"
        await kube.create_node(self.api, kube.node_body(name))
        self.nodes.append(name)
        return name

    async def device_class(self, role: str) -> str:
        name = f"{role}-{self.suffix}"
        await self.resource.create_device_class({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {
                "expression": f'device.driver == "{DRIVER}"'}}]}})
        self.classes.append(name)
        return name

    async def devices(self, node: str, *devices: dict[str, Any]) -> None:
        name = f"{node}-gpus"
        await self.resource.create_resource_slice({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": list(devices)}})
        self.slices.append(name)

    async def claim(self, name: str, device_class: str, *selectors: str) -> None:
        """A claim for one device of the class, which these CEL selectors match."""
        exactly: dict[str, Any] = {"deviceClassName": device_class}
        if selectors:
            exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
        await self.resource.create_namespaced_resource_claim(self.namespace, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}})

    async def pod(self, name: str, claim: str) -> None:
        body = kube.pod_body(name, scheduler_name=self.scheduler)
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        await kube.create_pod(self.api, self.namespace, body)

    async def get_claim(self, name: str) -> Any:
        return await self.resource.read_namespaced_resource_claim(name, self.namespace)

    async def node_of(self, pod: str) -> str | None:
        found = await client.CoreV1Api(self.api).read_namespaced_pod(pod, self.namespace)
        return found.spec.node_name or None

    async def failed_scheduling(self, pod: str) -> list[str]:
        events = await client.EventsV1Api(self.api).list_namespaced_event(
            self.namespace, field_selector=f"regarding.name={pod}")
        return [e.note or "" for e in events.items if e.reason == "FailedScheduling"]

    async def cleanup(self) -> None:
        for name in self.slices:
            await _ignore_missing(self.resource.delete_resource_slice(name))
        for name in self.classes:
            await _ignore_missing(self.resource.delete_device_class(name))
        await kube.delete_nodes(self.api, self.nodes)


async def _ignore_missing(call: Any) -> None:
    try:
        await call
    except ApiException as error:
        if error.status != 404:
            raise


@pytest.fixture
async def world(api: client.ApiClient, scheduler: str) -> AsyncIterator[World]:
    namespace = await kube.create_namespace(api, "dra")
    made = World(api, namespace, scheduler)
    try:
        yield made
    finally:
        await made.cleanup()
        await kube.delete_namespace(api, namespace)


async def test_pods_racing_for_the_last_devices_never_share_one(
        world: World, request: pytest.FixtureRequest) -> None:
    node = await world.node("racing")
    gpu = await world.device_class("gpu")
    await world.devices(node, {"name": "gpu-0"}, {"name": "gpu-1"})
    pods = [f"p{i}" for i in range(5)]
    for pod in pods:
        await world.claim(f"{pod}-claim", gpu)
    # All five at once: the scheduler sees them in one burst.
    await asyncio.gather(*(world.pod(pod, f"{pod}-claim") for pod in pods))

    async def settled() -> dict[str, str | None] | None:
        placed = {pod: await world.node_of(pod) for pod in pods}
        waiting = [pod for pod, on in placed.items() if on is None]
        if sum(on is not None for on in placed.values()) != 2:
            return None
        told = [bool(await world.failed_scheduling(pod)) for pod in waiting]
        return placed if all(told) else None

    placed = await kube.wait_for(settled, 60, "two pods bound, three told why not")
    assert placed is not None
    taken: list[str] = []
    for pod in pods:
        claim = await world.get_claim(f"{pod}-claim")
        allocation = claim.status.allocation if claim.status else None
        if placed[pod] is None:
            assert allocation is None, f"{pod} is pending but holds {allocation}"
            notes = await world.failed_scheduling(pod)
            assert any("cannot allocate all claims" in note for note in notes), notes
        else:
            assert allocation is not None
            taken += [r.device for r in allocation.devices.results]
            assert [r.uid for r in claim.status.reserved_for] != []
    assert sorted(taken) == ["gpu-0", "gpu-1"], taken  # each device in exactly one claim
    process = getattr(request.node, "kpysched", None)
    if process is not None:
        # The expected node is written before the binding (NominatedNodeNameForExpectation):
        # the API server accepted every status write.
        refused = [e for e in process.log_events() if e.get("event") == "pod_status.patch_failed"]
        assert refused == [], refused


async def test_claim_deleted_during_binding_is_reported_and_the_pod_retried(
        world: World, request: pytest.FixtureRequest) -> None:
    node = await world.node("binding")
    gpu = await world.device_class("gpu")
    # The device must be prepared before the pod may bind: PreBind waits for "Ready".
    await world.devices(node, {"name": "gpu-0", "bindsToNode": True,
                               "bindingConditions": ["Ready"],
                               "bindingFailureConditions": ["Failed"]})
    await world.claim("shared", gpu)
    await world.pod("waiter", "shared")

    async def reserved() -> Any:
        claim = await world.get_claim("shared")
        return claim if claim.status and claim.status.reserved_for else None

    await kube.wait_for(reserved, 30, "the claim allocated and reserved during PreBind")
    # Deleted while the pod waits in its binding cycle. The scheduler's finalizer keeps
    # the claim until nobody has it reserved.
    await world.resource.delete_namespaced_resource_claim("shared", world.namespace)

    async def told() -> list[str] | None:
        notes = await world.failed_scheduling("waiter")
        return notes or None

    notes = await kube.wait_for(told, 30, "FailedScheduling for the pod whose claim went")
    assert any("device binding timeout" in note or "shared" in note for note in notes), notes
    assert await world.node_of("waiter") is None

    async def claim_gone() -> bool:
        try:
            await world.get_claim("shared")
        except ApiException as error:
            return error.status == 404
        return False

    await kube.wait_for(claim_gone, 30, "the claim released and gone")
    process = getattr(request.node, "kpysched", None)
    if process is not None:
        assert process.process is not None and process.process.poll() is None, "kpysched exited"
        assert process.get("/livez")[0] == 200

    # The claim comes back and its device gets ready: the pod is retried and binds.
    await world.claim("shared", gpu)
    claim = await kube.wait_for(reserved, 60, "the recreated claim allocated for the pod")
    results = claim.status.allocation.devices.results
    await world.resource.patch_namespaced_resource_claim_status("shared", world.namespace, {
        "status": {"devices": [{
            "driver": r.driver, "pool": r.pool, "device": r.device,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Attached",
                            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
            for r in results]}})
    assert await kube.wait_for(lambda: world.node_of("waiter"), 60, "the pod bound") == node


@pytest.mark.parametrize("scheduler", ["kpysched"], indirect=True)
async def test_a_selector_past_the_cost_limit_fails_filter_while_other_pods_bind(
        world: World, cluster: ClusterState) -> None:
    node = await world.node("costly")
    gpu = await world.device_class("gpu")
    await world.devices(node, {"name": "gpu-0"}, {"name": "gpu-1"})
    # The API server admits it (its estimate is 353,700); cel-go's meter stops it.
    await world.claim("costly", gpu, COSTLY)
    await world.pod("costly", "costly")
    plain = [f"plain-{i}" for i in range(20)]
    for name in plain:  # right after it, without waiting for its decision
        await kube.create_pod(world.api, world.namespace,
                              kube.pod_body(name, scheduler_name=world.scheduler))

    async def told() -> list[str] | None:
        return await world.failed_scheduling("costly") or None

    notes = await kube.wait_for(told, COST_LIMIT_SECONDS,
                                "FailedScheduling for the pod whose selector costs too much")
    # Filter's Error for the node, wrapped by the framework (a retried error, not a
    # "0/N nodes are available" summary). v1.37 names the device the error met.
    device = f" on device {DRIVER}/{node}/gpu-0" if cluster.release != "1.36" else ""
    assert set(notes) == {f'running "DynamicResources" filter plugin: claim '
                          f"{world.namespace}/costly: selector #0{device}: "
                          f"{COST_LIMIT_EXCEEDED}"}
    placed = await kube.wait_bound(world.api, world.namespace, plain, timeout=60)
    assert sorted(placed) == sorted(plain)
    assert await world.node_of("costly") is None
    claim = await world.get_claim("costly")
    assert claim.status is None or claim.status.allocation is None
