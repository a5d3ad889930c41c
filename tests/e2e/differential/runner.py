"""Run one scenario against one scheduler on the real cluster and observe the outcome."""

from __future__ import annotations

import asyncio
import collections
import copy
import datetime
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube, provisioner
from tests.e2e.differential.model import (
    AllocationState,
    CapacitySpec,
    ClaimState,
    CSIDriverSpec,
    CSINodeSpec,
    DeviceClassSpec,
    DeviceResult,
    Outcome,
    PodSpec,
    PvcSpec,
    PvSpec,
    ResourceClaimSpec,
    Scenario,
    StorageClassSpec,
    VolumeState,
)

ROLE_LABEL = "kpysched.test/role"
HOSTNAME = "kubernetes.io/hostname"
PRIORITY_CLASSES = {"low": (100, "PreemptLowerPriority"), "mid": (500, "PreemptLowerPriority"),
                    "high": (1000, "PreemptLowerPriority"), "high-nonpreempting": (1000, "Never")}
# Informers of both schedulers must have seen the scenario's nodes and pods before the
# incoming pod arrives; watch latency on loopback is milliseconds, but a loaded 2-core CI
# machine can delay an informer by a second or more.
SETTLE_SECONDS = 2.5
OUTCOME_TIMEOUT_SECONDS = 30.0
# How long a pod expected to be held before any attempt is watched for an attempt.
GATED_OBSERVE_SECONDS = 3 * SETTLE_SECONDS
# The PV controller finishes a binding in a few writes after the scheduler's PreBind
# returns (the claim's phase comes last); a half-done binding that stays is an outcome.
STORAGE_SETTLE_SECONDS = 10.0
# The incoming pod waits behind this gate until its generic ephemeral claims exist:
# else whether a scheduler first sees the pod or the ephemeral volume controller's
# claim is a race, and so is a first "waiting for ephemeral volume controller" event.
CLAIMS_GATE = "kpysched.test/ephemeral-claims"
# resource.k8s.io/v1, read and written as plain JSON.
RESOURCE = ("resource.k8s.io", "v1")
MERGE_PATCH = "application/merge-patch+json"
# The role of the claim a scheduler makes for a pod's DRA-backed extended resources.
EXTENDED_RESOURCES_CLAIM = "extended-resources"


async def ensure_priority_classes(api: client.ApiClient) -> None:
    scheduling = client.SchedulingV1Api(api)
    for name, (value, policy) in PRIORITY_CLASSES.items():
        try:
            await scheduling.create_priority_class(
                {"metadata": {"name": name}, "value": value, "preemptionPolicy": policy})
        except ApiException as error:
            if error.status != 409:
                raise


@dataclass(frozen=True)
class _Names:
    """Roles to this run's real names and back."""

    suffix: str
    namespace: str

    def of(self, role: str) -> str:
        """A cluster-scoped object's name (Node, PV, StorageClass, CSINode)."""
        return f"{role}-{self.suffix}"

    def driver(self, name: str) -> str:
        if "." in name or "/" in name:
            return name
        return f"{name}-{self.suffix}.{provisioner.DOMAIN}"

    def role(self, name: str) -> str:
        return name.removesuffix(f"-{self.suffix}")

    def text(self, message: str) -> str:
        return re.sub(rf"-{self.suffix}\b", "", message).replace(self.namespace, "<namespace>")

    def hostnames(self, labels: dict[str, Any]) -> dict[str, Any]:
        """Label values under the hostname key name node roles."""
        def mapped(value: Any) -> Any:
            if isinstance(value, str):
                return self.of(value)
            return [self.of(v) for v in value]
        return {k: mapped(v) if k == HOSTNAME else v for k, v in labels.items()}


def _volumes(volumes: list[dict[str, Any]], names: _Names) -> list[dict[str, Any]]:
    """A pod's volumes with class and driver roles replaced by this run's names."""
    mapped = copy.deepcopy(volumes)
    for volume in mapped:
        if "ephemeral" in volume:
            spec = volume["ephemeral"]["volumeClaimTemplate"]["spec"]
            spec["storageClassName"] = (names.of(spec["storageClassName"])
                                        if spec.get("storageClassName") else "")
        if "csi" in volume:
            volume["csi"]["driver"] = names.driver(volume["csi"]["driver"])
    return mapped


def _ephemeral_claims(spec: PodSpec) -> list[str]:
    return [f"{spec.role}-{v['name']}" for v in spec.spec.get("volumes", ()) if "ephemeral" in v]


def _pod_body(spec: PodSpec, scheduler_name: str, names: _Names,
              extended_resources: frozenset[str] = frozenset()) -> dict[str, Any]:
    body = kube.pod_body(spec.role, scheduler_name=scheduler_name, cpu=spec.cpu,
                         memory=spec.memory, labels=spec.labels,
                         priority_class=spec.priority_class)
    body["spec"].update(copy.deepcopy(spec.spec))
    if "volumes" in spec.spec:
        body["spec"]["volumes"] = _volumes(spec.spec["volumes"], names)
    container = body["spec"]["containers"][0]
    container.update(copy.deepcopy(spec.container))
    resources = container.setdefault("resources", {})
    for kind in ("requests", "limits"):  # DRA-backed extended resource names are roles
        if kind in resources:
            resources[kind] = {names.of(k) if k in extended_resources else k: v
                               for k, v in resources[kind].items()}
    if spec.spec.get("resourceClaims") and "claims" not in resources:
        # The container uses every claim of the pod, as a real workload would.
        resources["claims"] = [{"name": c["name"]} for c in spec.spec["resourceClaims"]]
    if spec.node is not None:
        body["spec"]["nodeName"] = names.of(spec.node)
    return body


def _storage_class_body(spec: StorageClassSpec, names: _Names) -> dict[str, Any]:
    return kube.storage_class_body(
        names.of(spec.role), provisioner=names.driver(spec.provisioner),
        binding_mode=spec.binding_mode,
        allowed_topologies=names.hostnames(dict(spec.allowed_topologies)))


def _pv_body(spec: PvSpec, names: _Names) -> dict[str, Any]:
    affinity = dict(spec.affinity)
    if spec.node is not None:
        affinity[HOSTNAME] = (names.of(spec.node),)
    source = copy.deepcopy(spec.source)
    if source and "csi" in source:
        source["csi"]["driver"] = names.driver(source["csi"]["driver"])
    return kube.pv_body(
        names.of(spec.role), storage_class=names.of(spec.storage_class) if spec.storage_class
        else "", capacity=spec.capacity, access_modes=spec.access_modes,
        node_affinity=affinity, labels=spec.labels,
        claim=(names.namespace, spec.claim) if spec.claim else None, source=source)


def _pvc_body(spec: PvcSpec, names: _Names) -> dict[str, Any]:
    return kube.pvc_body(
        spec.role, storage_class=names.of(spec.storage_class) if spec.storage_class else "",
        request=spec.request, access_modes=spec.access_modes,
        volume_name=names.of(spec.volume) if spec.volume else None, selector=spec.selector)


def _csi_node_body(spec: CSINodeSpec, names: _Names) -> dict[str, Any]:
    node = names.of(spec.node)
    drivers = []
    for driver, count in spec.drivers.items():
        entry: dict[str, Any] = {"name": names.driver(driver), "nodeID": node}
        if count is not None:
            entry["allocatable"] = {"count": count}
        drivers.append(entry)
    return {"metadata": {"name": node, "annotations": dict(spec.annotations)},
            "spec": {"drivers": drivers}}


def _csi_driver_body(spec: CSIDriverSpec, names: _Names) -> dict[str, Any]:
    return {"metadata": {"name": names.driver(spec.role)},
            "spec": {"attachRequired": True, "storageCapacity": spec.storage_capacity}}


def _capacity_body(spec: CapacitySpec, names: _Names) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": spec.role}, "storageClassName": names.of(spec.storage_class),
        "nodeTopology": {"matchLabels": names.hostnames(dict(spec.node_labels))}}
    if spec.capacity is not None:
        body["capacity"] = spec.capacity
    if spec.maximum_volume_size is not None:
        body["maximumVolumeSize"] = spec.maximum_volume_size
    return body


def _device_class_body(spec: DeviceClassSpec, names: _Names) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": names.of(spec.role)}, "spec": {
        "selectors": [{"cel": {"expression": e}} for e in spec.selectors]}}
    if spec.extended_resource_name is not None:
        body["spec"]["extendedResourceName"] = names.of(spec.extended_resource_name)
    return body


def _slice_bodies(scenario: Scenario, names: _Names) -> list[dict[str, Any]]:
    """The scenario's ResourceSlices; a slice's shared counters go in a slice of their
    own (the API allows counters or devices in one slice, not both), in the same pool."""
    bodies: list[dict[str, Any]] = []
    for spec in scenario.slices:
        common = {"driver": spec.driver, "nodeName": names.of(spec.node),
                  "pool": {"name": names.of(spec.pool or spec.node), "generation": 1}}
        if spec.shared_counters:
            bodies.append({"metadata": {"name": names.of(f"{spec.role}-counters")}, "spec": {
                **copy.deepcopy(common),
                "sharedCounters": copy.deepcopy(list(spec.shared_counters))}})
        bodies.append({"metadata": {"name": names.of(spec.role)}, "spec": {
            **copy.deepcopy(common), "devices": copy.deepcopy(list(spec.devices))}})
    per_pool = collections.Counter(
        (b["spec"]["driver"], b["spec"]["pool"]["name"]) for b in bodies)
    for body in bodies:
        body["spec"]["pool"]["resourceSliceCount"] = per_pool[
            body["spec"]["driver"], body["spec"]["pool"]["name"]]
    return bodies


def _device_requests(requests: tuple[dict[str, Any], ...], names: _Names,
                     ) -> list[dict[str, Any]]:
    """DeviceRequests with their class roles replaced by this run's names."""
    mapped = copy.deepcopy(list(requests))
    for request in mapped:
        for entry in [request.get("exactly"), *request.get("firstAvailable", ())]:
            if entry and entry.get("deviceClassName"):
                entry["deviceClassName"] = names.of(entry["deviceClassName"])
    return mapped


def _claim_body(spec: ResourceClaimSpec, names: _Names) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": _device_requests(spec.requests, names)}
    if spec.constraints:
        devices["constraints"] = copy.deepcopy(list(spec.constraints))
    if spec.template:
        return {"metadata": {"name": spec.role}, "spec": {"spec": {"devices": devices}}}
    return {"metadata": {"name": spec.role}, "spec": {"devices": devices}}


def _result_body(result: DeviceResult, names: _Names) -> dict[str, Any]:
    body: dict[str, Any] = {"request": result.request, "driver": result.driver,
                            "pool": names.of(result.pool), "device": result.device}
    if result.admin_access:
        body["adminAccess"] = True
    return body


async def _create_dra(api: client.ApiClient, scenario: Scenario, names: _Names) -> None:
    custom = client.CustomObjectsApi(api)
    for device_class in scenario.device_classes:
        await custom.create_cluster_custom_object(
            *RESOURCE, "deviceclasses", _device_class_body(device_class, names))
    for body in _slice_bodies(scenario, names):
        await custom.create_cluster_custom_object(*RESOURCE, "resourceslices", body)
    for claim in scenario.resource_claims:
        plural = "resourceclaimtemplates" if claim.template else "resourceclaims"
        await custom.create_namespaced_custom_object(
            *RESOURCE, names.namespace, plural, _claim_body(claim, names))


async def _allocate_claims(api: client.ApiClient, scenario: Scenario, names: _Names) -> None:
    """Write the pre-allocated claims' status (as if a scheduler had allocated them and
    the existing pods had reserved them), then wait until it has stuck."""
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    allocated = [c for c in scenario.resource_claims if c.allocated and not c.template]
    for claim in allocated:
        # A scheduler stamps the allocations it makes; upstream's PreBind stamps an
        # unstamped one when it adds a reservation, and the API server then refuses
        # the update (status.allocation is immutable).
        allocation: dict[str, Any] = {
            "devices": {"results": [_result_body(r, names) for r in claim.allocated]},
            "allocationTimestamp": datetime.datetime.now(datetime.UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ")}
        if claim.allocated_node is not None:
            allocation["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [{
                "key": "metadata.name", "operator": "In",
                "values": [names.of(claim.allocated_node)]}]}]}
        reserved = []
        for pod in claim.reserved_for:
            uid = (await core.read_namespaced_pod(pod, names.namespace)).metadata.uid
            reserved.append({"resource": "pods", "name": pod, "uid": uid})
        status: dict[str, Any] = {"allocation": allocation}
        if reserved:
            status["reservedFor"] = reserved
        await custom.patch_namespaced_custom_object_status(
            *RESOURCE, names.namespace, "resourceclaims", claim.role, {"status": status},
            _content_type=MERGE_PATCH)

    async def stuck() -> bool:
        for claim in allocated:
            body = await custom.get_namespaced_custom_object(
                *RESOURCE, names.namespace, "resourceclaims", claim.role)
            status = body.get("status", {})
            reserved = {r["name"] for r in status.get("reservedFor", ())}
            if "allocation" not in status or not set(claim.reserved_for) <= reserved:
                return False
        return True

    await kube.wait_for(stuck, kube.SETTLE_TIMEOUT_SECONDS,
                        f"claims {[c.role for c in allocated]} allocated and reserved")


def _template_entries(spec: PodSpec, scenario: Scenario) -> set[str]:
    """The pod's claim entries made from one of the scenario's templates."""
    templates = {c.role for c in scenario.resource_claims if c.template}
    return {c["name"] for c in spec.spec.get("resourceClaims", ())
            if c.get("resourceClaimTemplateName") in templates}


async def _create_storage(api: client.ApiClient, scenario: Scenario, names: _Names) -> None:
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    for driver in scenario.csi_drivers:
        await storage.create_csi_driver(_csi_driver_body(driver, names))
    for csi_node in scenario.csi_nodes:
        await storage.create_csi_node(_csi_node_body(csi_node, names))
    for storage_class in scenario.storage_classes:
        await storage.create_storage_class(_storage_class_body(storage_class, names))
    for capacity in scenario.capacities:
        await storage.create_namespaced_csi_storage_capacity(
            names.namespace, _capacity_body(capacity, names))
    for pv in scenario.pvs:
        await core.create_persistent_volume(_pv_body(pv, names))
    for pvc in scenario.pvcs:
        await core.create_namespaced_persistent_volume_claim(names.namespace,
                                                             _pvc_body(pvc, names))


async def _wait_storage_ready(api: client.ApiClient, scenario: Scenario, names: _Names) -> None:
    """Every PV has a phase (FindMatchingVolume skips a PV not yet Available), claims
    meant to be bound are, and the existing pods' ephemeral claims exist."""
    core = client.CoreV1Api(api)
    pv_roles = {pv.role for pv in scenario.pvs}
    to_bind = ({c.role for c in scenario.pvcs if c.bound or c.volume in pv_roles}
               | {pv.claim for pv in scenario.pvs if pv.claim})
    to_bind &= {c.role for c in scenario.pvcs}
    ephemeral = {claim for pod in scenario.existing for claim in _ephemeral_claims(pod)}
    wanted_pvs = {names.of(role) for role in pv_roles}

    async def ready() -> bool:
        pvs = {pv.metadata.name: pv.status.phase
               for pv in (await core.list_persistent_volume()).items}
        if any(pvs.get(name) not in ("Available", "Bound") for name in wanted_pvs):
            return False
        claims = {c.metadata.name: c.status.phase for c in
                  (await core.list_namespaced_persistent_volume_claim(names.namespace)).items}
        return (all(claims.get(role) == "Bound" for role in to_bind)
                and ephemeral <= claims.keys())

    await kube.wait_for(ready, kube.SETTLE_TIMEOUT_SECONDS,
                        f"storage of {scenario.name} ready (PVs with a phase, claims "
                        f"{sorted(to_bind)} Bound, ephemeral claims {sorted(ephemeral)})")


def _extended_resources(scenario: Scenario) -> frozenset[str]:
    return frozenset(c.extended_resource_name for c in scenario.device_classes
                     if c.extended_resource_name is not None)


async def _create_incoming(api: client.ApiClient, scenario: Scenario, scheduler_name: str,
                           names: _Names) -> None:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    body = _pod_body(scenario.incoming, scheduler_name, names, _extended_resources(scenario))
    claims = set(_ephemeral_claims(scenario.incoming))
    # ResourceClaims the resourceclaim controller makes from templates: else whether a
    # scheduler first sees the pod before them is a race too.
    entries = _template_entries(scenario.incoming, scenario)
    if not claims and not entries:
        await core.create_namespaced_pod(names.namespace, body)
        return
    body["spec"]["schedulingGates"] = [{"name": CLAIMS_GATE}]
    await core.create_namespaced_pod(names.namespace, body)

    async def created() -> bool:
        listed = await core.list_namespaced_persistent_volume_claim(names.namespace)
        if not claims <= {c.metadata.name for c in listed.items}:
            return False
        if not entries:
            return True
        pod = await core.read_namespaced_pod(scenario.incoming.role, names.namespace)
        made = {s.name: s.resource_claim_name
                for s in pod.status.resource_claim_statuses or ()}
        resource_claims = await custom.list_namespaced_custom_object(
            *RESOURCE, names.namespace, "resourceclaims")
        existing = {c["metadata"]["name"] for c in resource_claims["items"]}
        return all(made.get(entry) in existing for entry in entries)

    await kube.wait_for(created, kube.SETTLE_TIMEOUT_SECONDS,
                        f"ephemeral claims {sorted(claims)} and template claims "
                        f"{sorted(entries)} created")
    await asyncio.sleep(SETTLE_SECONDS)  # the schedulers' informers have the claims
    await core.patch_namespaced_pod(scenario.incoming.role, names.namespace,
                                    [{"op": "remove", "path": "/spec/schedulingGates"}])


async def run_scenario(api: client.ApiClient, scenario: Scenario, scheduler_name: str,
                       decided: Callable[[], None] | None = None) -> Outcome:
    """Build the scenario, observe its outcome, clean up. `decided` runs once the
    outcome is read and before clean-up, whose deletions a scheduler still retrying
    the pod would see (test_extenders stops counting extender requests there)."""
    core = client.CoreV1Api(api)
    namespace = await kube.create_namespace(api, "diff")
    names = _Names(secrets.token_hex(3), namespace)
    try:
        for node in scenario.nodes:
            body = kube.node_body(
                names.of(node.role), cpu=node.cpu, memory=node.memory, pods=node.pods,
                labels={ROLE_LABEL: node.role, **node.labels}, taints=node.taints,
                unschedulable=node.unschedulable, images=node.images,
                extra_allocatable=node.extra)
            # Returns once node lifecycle has settled the taints: both schedulers see
            # the same final Node before any pod arrives.
            await kube.create_node(api, body)
        if scenario.namespace_labels:
            await core.patch_namespace(namespace,
                                       {"metadata": {"labels": scenario.namespace_labels}})
        await _create_storage(api, scenario, names)
        await _create_dra(api, scenario, names)
        for pdb in scenario.pdbs:
            await client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(namespace, {
                "metadata": {"name": pdb.role},
                "spec": {"maxUnavailable": pdb.max_unavailable,
                         "selector": {"matchLabels": pdb.selector}}})
        for existing in scenario.existing:
            await core.create_namespaced_pod(
                namespace, _pod_body(existing, scheduler_name, names,
                                     _extended_resources(scenario)))
        await _wait_storage_ready(api, scenario, names)
        await _allocate_claims(api, scenario, names)
        await asyncio.sleep(SETTLE_SECONDS)
        await _create_incoming(api, scenario, scheduler_name, names)
        for pod in scenario.then:
            await core.create_namespaced_pod(
                namespace, _pod_body(pod, scheduler_name, names, _extended_resources(scenario)))
        outcome = await _observe(api, scenario, names)
        if decided is not None:
            decided()
    except BaseException:
        await _clean_up(api, scenario, names)
        raise
    left = await _clean_up(api, scenario, names)
    if left:
        raise AssertionError(f"{scenario.name}: PersistentVolumes left behind: {left}")
    return outcome


async def _failed_scheduling_note(api: client.ApiClient, namespace: str) -> str | None:
    notes = await kube.events(api, namespace, "FailedScheduling", regarding="incoming")
    note: str | None = notes[0].get("note") if notes else None
    return note


async def _observe(api: client.ApiClient, scenario: Scenario, names: _Names) -> Outcome:
    core = client.CoreV1Api(api)
    namespace = names.namespace
    existing = {p.role for p in scenario.existing}
    deadline = asyncio.get_running_loop().time() + (
        GATED_OBSERVE_SECONDS if scenario.expect == "gated" else OUTCOME_TIMEOUT_SECONDS)
    message: str | None = None
    node: str | None = None
    while asyncio.get_running_loop().time() < deadline:
        pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(namespace)).items}
        incoming = pods["incoming"]
        if message is None:
            message = await _failed_scheduling_note(api, namespace)
        if incoming.spec.node_name:
            node = names.role(incoming.spec.node_name)
            break
        if message is not None and scenario.expect not in ("preempted", "retried"):
            await asyncio.sleep(SETTLE_SECONDS)  # a second attempt must not change anything
            break
        await asyncio.sleep(0.2)
    then = await _then_nodes(api, scenario, names, deadline)
    remaining = {p.metadata.name for p in (await core.list_namespaced_pod(namespace)).items}
    claims, volumes = await _settled_storage(api, scenario, names)
    resource_claims = await _resource_claims(api, scenario, names)
    return Outcome(node, names.text(message) if message is not None else None,
                   frozenset(existing - remaining), claims, volumes, resource_claims, then)


async def _then_nodes(api: client.ApiClient, scenario: Scenario, names: _Names,
                      deadline: float) -> tuple[tuple[str, str | None], ...]:
    """Where the scenario's `then` pods are, once all are bound or at the deadline."""
    core = client.CoreV1Api(api)
    while True:
        pods = {p.metadata.name: p for p in
                (await core.list_namespaced_pod(names.namespace)).items}
        nodes = tuple((spec.role, names.role(pods[spec.role].spec.node_name)
                       if pods[spec.role].spec.node_name else None) for spec in scenario.then)
        if (all(node is not None for _, node in nodes)
                or asyncio.get_running_loop().time() >= deadline):
            return nodes
        await asyncio.sleep(0.2)


async def _resource_claims(api: client.ApiClient, scenario: Scenario, names: _Names,
                           ) -> tuple[AllocationState, ...]:
    """The namespace's ResourceClaims by role, with their allocations."""
    if not (scenario.resource_claims or scenario.device_classes):
        return ()
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    roles: dict[str, str] = {}  # claim name -> role, for claims made for pods
    uids: dict[str, str] = {}  # pod uid -> pod role
    for pod in (await core.list_namespaced_pod(names.namespace)).items:
        uids[pod.metadata.uid] = pod.metadata.name
        for status in pod.status.resource_claim_statuses or ():
            if status.resource_claim_name:
                roles[status.resource_claim_name] = f"{pod.metadata.name}/{status.name}"
        extended = pod.status.extended_resource_claim_status
        if extended is not None and extended.resource_claim_name:
            roles[extended.resource_claim_name] = (
                f"{pod.metadata.name}/{EXTENDED_RESOURCES_CLAIM}")
    listed = await custom.list_namespaced_custom_object(*RESOURCE, names.namespace,
                                                        "resourceclaims")
    states = []
    for claim in listed["items"]:
        name = claim["metadata"]["name"]
        status = claim.get("status", {})
        allocation = status.get("allocation") or {}
        node = None
        for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms", ()):
            for requirement in (*term.get("matchFields", ()),
                                *term.get("matchExpressions", ())):
                if requirement["key"] in ("metadata.name", HOSTNAME):
                    node = names.role(requirement["values"][0])
        devices = tuple(
            DeviceResult(r["request"], r["driver"], names.role(r["pool"]), r["device"],
                         bool(r.get("adminAccess")))
            for r in (allocation.get("devices") or {}).get("results", ()))
        reserved = tuple(sorted(uids.get(r.get("uid", ""), r["name"])
                                for r in status.get("reservedFor", ())))
        states.append(AllocationState(roles.get(name, name), node, devices, reserved))
    return tuple(sorted(states, key=lambda s: s.claim))


async def _storage_state(api: client.ApiClient, scenario: Scenario, names: _Names,
                         ) -> tuple[tuple[ClaimState, ...], tuple[VolumeState, ...], bool]:
    """Claims and the scenario's PVs by role, and whether every binding is finished."""
    core = client.CoreV1Api(api)
    pvs = {pv.metadata.name: pv for pv in (await core.list_persistent_volume()).items}
    listed = await core.list_namespaced_persistent_volume_claim(names.namespace)
    finished = True
    claims = []
    for claim in sorted(listed.items, key=lambda c: c.metadata.name):
        volume_name = claim.spec.volume_name
        volume: str | None = names.role(volume_name) if volume_name else None
        pv = pvs.get(volume_name or "")
        if pv is not None and provisioner.ANN_PROVISIONED_BY in (pv.metadata.annotations or {}):
            terms = pv.spec.node_affinity.required.node_selector_terms
            volume = f"provisioned@{names.role(terms[0].match_expressions[0].values[0])}"
        selected = (claim.metadata.annotations or {}).get(provisioner.ANN_SELECTED_NODE)
        phase = claim.status.phase or ""
        finished &= not volume_name or phase == "Bound"
        claims.append(ClaimState(claim.metadata.name, phase, volume,
                                 names.role(selected) if selected else None))
    volumes = []
    for spec in scenario.pvs:
        pv = pvs.get(names.of(spec.role))
        if pv is None:
            volumes.append(VolumeState(spec.role, "<deleted>", None))
            continue
        ref = pv.spec.claim_ref
        claim_role = None
        if ref is not None:
            claim_role = ref.name if ref.namespace == names.namespace else \
                f"{ref.namespace}/{ref.name}"
        phase = pv.status.phase or ""
        finished &= not (ref is not None and ref.uid) or phase == "Bound"
        volumes.append(VolumeState(spec.role, phase, claim_role))
    return tuple(claims), tuple(volumes), finished


async def _settled_storage(api: client.ApiClient, scenario: Scenario, names: _Names,
                           ) -> tuple[tuple[ClaimState, ...], tuple[VolumeState, ...]]:
    deadline = asyncio.get_running_loop().time() + STORAGE_SETTLE_SECONDS
    while True:
        claims, volumes, finished = await _storage_state(api, scenario, names)
        if finished or asyncio.get_running_loop().time() > deadline:
            return claims, volumes
        await asyncio.sleep(0.2)


async def _clean_up(api: client.ApiClient, scenario: Scenario, names: _Names) -> list[str]:
    """Delete everything the run made; return the PVs that would not go."""
    core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
    await kube.delete_namespace(api, names.namespace)
    # The scenario's PVs, and any a provisioner made for the run's claims.
    volumes = {names.of(pv.role) for pv in scenario.pvs} | {
        pv.metadata.name for pv in (await core.list_persistent_volume()).items
        if pv.spec.claim_ref is not None and pv.spec.claim_ref.namespace == names.namespace}
    left = await kube.delete_persistent_volumes(api, volumes)
    deletions = ([(storage.delete_storage_class, names.of(c.role))
                  for c in scenario.storage_classes]
                 + [(storage.delete_csi_driver, names.driver(d.role))
                    for d in scenario.csi_drivers]
                 + [(storage.delete_csi_node, names.of(n.node)) for n in scenario.csi_nodes])
    custom = client.CustomObjectsApi(api)
    for plural, dra_names in (
            ("deviceclasses", [names.of(c.role) for c in scenario.device_classes]),
            ("resourceslices", [b["metadata"]["name"] for b in _slice_bodies(scenario, names)])):
        for name in dra_names:
            try:
                await custom.delete_cluster_custom_object(*RESOURCE, plural, name)
            except ApiException as error:
                if error.status != 404:
                    raise
    for delete, name in deletions:
        try:
            await delete(name)
        except ApiException as error:
            if error.status != 404:
                raise
    node_names = [names.of(n.role) for n in scenario.nodes]
    await kube.delete_nodes(api, node_names)
    await _wait_nodes_gone(api, node_names)
    return left


async def _wait_nodes_gone(api: client.ApiClient, names: Any) -> None:
    core = client.CoreV1Api(api)
    for name in names:
        for _ in range(50):
            try:
                await core.read_node(name)
            except ApiException as error:
                if error.status == 404:
                    break
                raise
            await asyncio.sleep(0.1)
