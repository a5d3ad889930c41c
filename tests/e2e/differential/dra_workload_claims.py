"""Scenarios of ResourceClaims shared by a PodGroup (DRAWorkloadResourceClaims, v1.37)
for the differential suite: run once under kube-scheduler and once under kpysched, one
after the other, each in a namespace and on nodes of its own (deleted before the next
run, so both count the same nodes in their messages).

Every scenario has a PodGroup `g` (a gang of its members) whose spec.resourceClaims
lists the claim `shared` by name (or a template, from which kube-controller-manager
makes the PodGroup's claim), and members g-0, g-1... whose own spec.resourceClaims
name it the same way: PreBind then reserves it for the PodGroup. A node has one
device per `devices`, in a ResourceSlice of this run's driver pool. The outcome
compared: which node each pod is on, the first FailedScheduling note of each, the
PodGroup's PodGroupInitiallyScheduled condition, and every claim's end (node, devices,
reservedFor as pod or PodGroup names, finalizers; dra_writes.ClaimEnd).

An outsider uses the PodGroup's claim as if it were made for it from a template
(spec.resourceClaims names a template, status.resourceClaimStatuses the claim, which
the PodGroup owns): a pod in no group, or in another group, is held at PreEnqueue
(IsForPod), with no event.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import re
import secrets
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from kpysched.api.client import RawApi
from tests.cluster import kube
from tests.e2e.differential.compare import first_failures
from tests.e2e.differential.dra_writes import (
    BASE,
    DRIVER,
    ClaimEnd,
    _claims,
    _raw_claim,
    _raw_class,
)
from tests.e2e.differential.gang import CONDITION_TYPES, GROUP, POD_GROUP_VERSIONS
from tests.e2e.differential.runner import ROLE_LABEL, _Names, _wait_nodes_gone

RELEASE = "1.37"
VERSION = POD_GROUP_VERSIONS[RELEASE]
TAINT = {"key": "kpysched.test/taken", "value": "yes", "effect": "NoSchedule"}
OUTCOME_TIMEOUT_SECONDS = 40.0
# A pod held at PreEnqueue sends no event: watch this long that nothing happens.
QUIET_SECONDS = 6.0
SETTLE_SECONDS = 3.0
# The name kube-controller-manager gives the PodGroup's claim made from the template.
GENERATED_CLAIM = re.compile(r"\bg-gpu-[a-z0-9]{5}\b")


@dataclass(frozen=True)
class ClaimNode:
    role: str
    cpu: str = "4"
    devices: int = 1
    tainted: bool = False  # NoSchedule, which no pod tolerates


@dataclass(frozen=True)
class Outsider:
    role: str
    group: str | None  # another PodGroup (made, basic policy), or None


@dataclass(frozen=True)
class WorkloadClaimScenario:
    name: str
    nodes: tuple[ClaimNode, ...]
    members: int = 2
    member_cpu: str = "100m"
    # The claim as the scenario starts: None (unallocated), else the node whose first
    # device it is allocated, reserved for the PodGroup.
    allocated_on: str | None = None
    owned_by_group: bool = False  # the PodGroup is the claim's controller
    # The PodGroup and its members name a ResourceClaimTemplate instead of `shared`:
    # kube-controller-manager makes one claim for the PodGroup (g-gpu-<random>, its
    # role g-gpu) and records it in the PodGroup's and the members' status.
    template: bool = False
    outsiders: tuple[Outsider, ...] = ()
    # What upstream must do for the scenario to mean what it says: pod -> node role
    # (None: pending), and the claim's end: the node of its allocation and whom it is
    # reserved for. (PodGroupPostFilter's words reach neither the members' first notes
    # nor the PodGroup's condition: what it did shows in the claim.)
    expect_nodes: dict[str, str | None] | None = None
    expect_claim: tuple[str | None, tuple[str, ...]] | None = None

    def member_roles(self) -> list[str]:
        return [f"g-{i}" for i in range(self.members)]


@dataclass(frozen=True)
class WorkloadClaimOutcome:
    nodes: dict[str, str | None]  # pod role -> node role
    notes: tuple[str, ...]  # the first FailedScheduling notes, sorted (which member was
    # tried first follows creation order to the millisecond)
    # The pods outside the group that got one (members are told by the group's words,
    # whichever of them lost a race).
    noted: frozenset[str]
    condition: tuple[str, str, str] | None
    claims: tuple[ClaimEnd, ...]

    def describe(self) -> str:
        lines = [f"   {pod}: {node}" for pod, node in sorted(self.nodes.items())]
        lines += [f"   note {note!r}" for note in self.notes]
        lines += [f"   condition {self.condition}", *(f"   claim {c}" for c in self.claims)]
        return "\n" + "\n".join(lines)


def _slice(names: _Names, node: ClaimNode) -> dict[str, Any]:
    return {"metadata": {"name": names.of(f"slice-{node.role}")}, "spec": {
        "driver": DRIVER, "nodeName": names.of(node.role),
        "pool": {"name": names.of(node.role), "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}"} for i in range(node.devices)]}}


def _claim_entry(template: bool) -> dict[str, str]:
    """The spec.resourceClaims entry the PodGroup and its members share."""
    if template:
        return {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}
    return {"name": "gpu", "resourceClaimName": "shared"}


def _group_body(name: str, min_count: int | None, template: bool = False) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if name == "g":
        spec["resourceClaims"] = [_claim_entry(template)]
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": name},
            "spec": spec}


def _group_reference(group: dict[str, Any]) -> dict[str, str]:
    return {"apiGroup": GROUP, "resource": "podgroups", "name": group["metadata"]["name"],
            "uid": group["metadata"]["uid"]}


async def _allocate_for_group(raw: RawApi, names: _Names, node: str,
                              group: dict[str, Any]) -> None:
    """Write an allocation of `node`'s gpu-0 and a reservation for the PodGroup into the
    claim, as if an earlier attempt of the group had."""
    status = {"status": {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER,
                                 "pool": names.of(node), "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
            "key": "metadata.name", "operator": "In", "values": [names.of(node)]}]}]},
        "allocationTimestamp": datetime.datetime.now(datetime.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ")},
        "reservedFor": [_group_reference(group)]}}
    response = await raw.request(
        "PATCH", f"{BASE}/namespaces/{names.namespace}/resourceclaims/shared/status",
        status, content_type="application/merge-patch+json")
    assert response.ok, response.message()


async def _create_claim(raw: RawApi, names: _Names, device_class: str,
                        owner: dict[str, Any] | None) -> None:
    response = await raw.request("POST", f"{BASE}/namespaces/{names.namespace}/resourceclaims",
                                 _raw_claim("shared", device_class, None))
    assert response.ok, response.message()
    if owner is not None:
        reference = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup",
                     "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                     "controller": True}
        response = await raw.request(
            "PATCH", f"{BASE}/namespaces/{names.namespace}/resourceclaims/shared",
            {"metadata": {"ownerReferences": [reference]}},
            content_type="application/merge-patch+json")
        assert response.ok, response.message()


def _member(role: str, scheduler: str, cpu: str, template: bool) -> dict[str, Any]:
    body = kube.pod_body(role, scheduler_name=scheduler, cpu=cpu, memory="100Mi")
    body["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    body["spec"]["resourceClaims"] = [_claim_entry(template)]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return body


def _outsider(outsider: Outsider, scheduler: str) -> dict[str, Any]:
    body = kube.pod_body(outsider.role, scheduler_name=scheduler, cpu="100m", memory="100Mi")
    if outsider.group is not None:
        body["spec"]["schedulingGroup"] = {"podGroupName": outsider.group}
    # A template nobody made: only the status this test writes names a claim.
    body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "none"}]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return body


async def run_workload_claim_scenario(api: client.ApiClient, scenario: WorkloadClaimScenario,
                                      scheduler: str) -> WorkloadClaimOutcome:
    namespace = await kube.create_namespace(api, "wlclaim")
    names = _Names(secrets.token_hex(3), namespace)
    raw = RawApi(api)
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    device_class = names.of("plain")
    try:
        for node in scenario.nodes:
            await kube.create_node(api, kube.node_body(
                names.of(node.role), cpu=node.cpu, labels={ROLE_LABEL: node.role},
                taints=[TAINT] if node.tainted else ()))
        response = await raw.request("POST", f"{BASE}/deviceclasses",
                                     _raw_class(device_class, None))
        assert response.ok, response.message()
        for node in scenario.nodes:
            if node.devices:
                await custom.create_cluster_custom_object(
                    "resource.k8s.io", "v1", "resourceslices", _slice(names, node))
        if scenario.template:
            response = await raw.request(
                "POST", f"{BASE}/namespaces/{namespace}/resourceclaimtemplates",
                {"metadata": {"name": "gpu-template"}, "spec": {"spec": {"devices": {
                    "requests": [{"name": "gpu",
                                  "exactly": {"deviceClassName": device_class}}]}}}})
            assert response.ok, response.message()
        group = await custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "podgroups",
            _group_body("g", scenario.members, scenario.template))
        for outsider in scenario.outsiders:
            if outsider.group is not None:
                await custom.create_namespaced_custom_object(
                    GROUP, VERSION, namespace, "podgroups", _group_body(outsider.group, None))
        if not scenario.template:
            await _create_claim(raw, names, device_class,
                                group if scenario.owned_by_group else None)
        if scenario.allocated_on is not None:
            await _allocate_for_group(raw, names, scenario.allocated_on, group)
        await asyncio.sleep(SETTLE_SECONDS / 2)  # the scheduler's informers have it all
        for outsider in scenario.outsiders:
            await core.create_namespaced_pod(namespace, _outsider(outsider, scheduler))
            await core.patch_namespaced_pod_status(outsider.role, namespace, {"status": {
                "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "shared"}]}})
        for role in scenario.member_roles():
            await core.create_namespaced_pod(namespace, _member(
                role, scheduler, scenario.member_cpu, scenario.template))
        return await _observe(api, raw, scenario, names)
    finally:
        with contextlib.suppress(ApiException):
            await custom.delete_cluster_custom_object("resource.k8s.io", "v1",
                                                      "deviceclasses", device_class)
        for node in scenario.nodes:
            if node.devices:
                with contextlib.suppress(ApiException):
                    await custom.delete_cluster_custom_object(
                        "resource.k8s.io", "v1", "resourceslices",
                        names.of(f"slice-{node.role}"))
        await kube.delete_namespace(api, namespace)
        node_names = [names.of(node.role) for node in scenario.nodes]
        await kube.delete_nodes(api, node_names)
        await _wait_nodes_gone(api, node_names)


async def _condition(custom: client.CustomObjectsApi,
                     names: _Names) -> tuple[str, str, str] | None:
    group = await custom.get_namespaced_custom_object(GROUP, VERSION, names.namespace,
                                                      "podgroups", "g")
    found = [c for c in group.get("status", {}).get("conditions", [])
             if c["type"] == CONDITION_TYPES[RELEASE]]
    return ((found[0]["status"], found[0]["reason"], names.text(found[0].get("message", "")))
            if found else None)


async def _observe(api: client.ApiClient, raw: RawApi, scenario: WorkloadClaimScenario,
                   names: _Names) -> WorkloadClaimOutcome:
    """Wait until every member is bound or was told why not (outsiders are told
    nothing), then a settling spell, then read the outcome."""
    core = client.CoreV1Api(api)
    members = scenario.member_roles()
    expected = scenario.expect_nodes or {}
    loop = asyncio.get_running_loop()
    started = loop.time()
    while loop.time() - started < OUTCOME_TIMEOUT_SECONDS:
        pods = {p.metadata.name: p for p in
                (await core.list_namespaced_pod(names.namespace)).items}
        notes = await first_failures(api, names)
        # A member upstream binds is decided once bound (a failed first attempt may
        # free the claim for the next one); one it leaves pending, at its first note.
        decided = [role for role in members
                   if pods[role].spec.node_name
                   or (role in notes and expected.get(role) is None)]
        if len(decided) == len(members) and loop.time() - started >= QUIET_SECONDS:
            break
        await asyncio.sleep(0.25)
    await asyncio.sleep(SETTLE_SECONDS)
    pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(names.namespace)).items}
    notes = await first_failures(api, names)
    return WorkloadClaimOutcome(
        {role: names.role(pod.spec.node_name) if pod.spec.node_name else None
         for role, pod in pods.items()},
        tuple(sorted(GENERATED_CLAIM.sub("g-gpu", note) for note in notes.values())),
        frozenset(notes) - set(members),
        await _condition(client.CustomObjectsApi(api), names),
        tuple(_with_role(claim) for claim in await _claims(api, raw, names)))


def _with_role(claim: ClaimEnd) -> ClaimEnd:
    """A claim kube-controller-manager named g-gpu-<random> as its role, g-gpu."""
    return dataclasses.replace(claim, role=GENERATED_CLAIM.sub("g-gpu", claim.role))


def check_upstream(scenario: WorkloadClaimScenario, outcome: WorkloadClaimOutcome) -> None:
    """kube-scheduler did what the scenario is about."""
    detail = outcome.describe()
    if scenario.expect_nodes is not None:
        assert outcome.nodes == scenario.expect_nodes, detail
    if scenario.expect_claim is not None:
        [claim] = outcome.claims
        assert (claim.node, claim.reserved_for) == scenario.expect_claim, detail
    for outsider in scenario.outsiders:
        assert outsider.role not in outcome.noted, detail  # held at PreEnqueue: no event
