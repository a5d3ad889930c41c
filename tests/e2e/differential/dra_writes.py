"""DynamicResources' writes on a real API server, under kube-scheduler v1.36.4 and
kpysched side by side (issue 33): the cases run at once, one namespace and one set of
nodes per scheduler (pods select their run's nodes), and end states compare by role.

- config: a DeviceClass and a claim with opaque device config, both created with
  spaced JSON; PreBind's updates must keep the claim's bytes (the API server compares
  the spec), and the allocation carries both configs.
- shared: two pods created together share an allocated claim; their reservations
  race, the loser gets 409 and reads the claim again from the API server.
- refused: a claim allocated on a full node, whose deallocation a
  ValidatingAdmissionPolicy denies: PostFilter's error is the pod's message.
- conditions: a device with binding conditions; PreBind announces its wait
  (BindingConditionsPending), the test then reports the device attached.

A gang sharing one unallocated claim needs the gang gates: test_gang_differential.py
runs it (`run_shared_claim_gang` here)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import secrets
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from kpysched.api.client import RawApi
from kpysched.plugins.dynamic_resources import verbatim
from tests.cluster import kube
from tests.e2e.differential.compare import first_failures
from tests.e2e.differential.gang import CONDITION_TYPES, POD_GROUP_VERSIONS
from tests.e2e.differential.runner import ROLE_LABEL, _Names, _wait_nodes_gone

DRIVER = "gpu.example.com"
BASE = "/apis/resource.k8s.io/v1"
RUN_LABEL = "kpysched.test/run"
CASE_LABEL = "kpysched.test/case"
FINALIZER = "resource.kubernetes.io/delete-protection"
# Opaque parameters as a person (or json.dumps) writes them: with spaces. The API
# server stores these bytes as sent.
CLASS_PARAMETERS = '{"kind" : "GpuClassConfig",  "mode": "shared"}'
CLAIM_PARAMETERS = '{"kind" : "GpuConfig", "sharing": { "strategy": "TimeSlicing" }}'
REFUSAL = "deallocation refused by policy"
SETTLE_SECONDS = 2.5
OUTCOME_TIMEOUT_SECONDS = 45.0

# node role -> case; every node has one device, gpu-0.
NODES = {"n-config": "config", "n-shared": "shared", "n-full": "refused",
         "n-free": "refused", "n-conditions": "conditions"}
# pod role -> (case, claim)
PODS = {"configured": ("config", "configured"), "share-a": ("shared", "shared"),
        "share-b": ("shared", "shared"), "refused": ("refused", "stuck"),
        "conditions": ("conditions", "conditions")}


@dataclass(frozen=True)
class ClaimEnd:
    role: str
    node: str | None
    devices: tuple[str, ...]  # "pool/device"
    config: tuple[tuple[str, str, str], ...]  # (source, driver, parameters as JSON)
    reserved_for: tuple[str, ...]
    finalizers: tuple[str, ...]
    spaced_parameters_kept: bool  # the spec's opaque parameters are the bytes sent


@dataclass(frozen=True)
class WritesOutcome:
    nodes: dict[str, str | None]  # pod role -> node role
    failed: dict[str, str]  # pod role -> first FailedScheduling note (roles for names)
    # pod role -> (type, action, note) of its BindingConditionsPending events
    waiting: dict[str, tuple[tuple[str, str, str], ...]]
    claims: tuple[ClaimEnd, ...]

    def describe(self) -> str:
        lines = [f"   {pod}: node={node} failed={self.failed.get(pod)!r} "
                 f"waiting={self.waiting.get(pod, ())}" for pod, node in sorted(self.nodes.items())]
        lines += [f"   claim {c}" for c in self.claims]
        return "\n" + "\n".join(lines)


def _request() -> dict[str, Any]:
    return {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}


def _raw_claim(role: str, device_class: str, parameters: str | None) -> bytes:
    """A claim's JSON as its author wrote it: the parameters' spaces kept."""
    config = ""
    if parameters is not None:
        config = (f', "config": [{{"requests": ["gpu"], "opaque": {{"driver": "{DRIVER}", '
                  f'"parameters": {parameters}}}}}]')
    return (f'{{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", '
            f'"metadata": {{"name": "{role}"}}, "spec": {{"devices": {{"requests": '
            f'[{{"name": "gpu", "exactly": {{"deviceClassName": "{device_class}"}}}}]'
            f'{config}}}}}}}').encode()


def _raw_class(name: str, parameters: str | None) -> bytes:
    config = ""
    if parameters is not None:
        config = (f', "config": [{{"opaque": {{"driver": "{DRIVER}", '
                  f'"parameters": {parameters}}}}}]')
    return (f'{{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", '
            f'"metadata": {{"name": "{name}"}}, "spec": {{"selectors": [{{"cel": '
            f'{{"expression": "device.driver == \\"{DRIVER}\\""}}}}]{config}}}}}').encode()


def _slice(names: _Names, node: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "gpu-0"}
    if NODES[node] == "conditions":
        device |= {"bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]}
    return {"metadata": {"name": names.of(f"slice-{node}")}, "spec": {
        "driver": DRIVER, "nodeName": names.of(node),
        "pool": {"name": names.of(node), "generation": 1, "resourceSliceCount": 1},
        "devices": [device]}}


def _policy(names: _Names) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ValidatingAdmissionPolicy (and its binding) that refuses, in the run's
    namespace, any status update leaving a claim without an allocation."""
    name = names.of("refuse-deallocation")
    policy = {"metadata": {"name": name}, "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": names.namespace}},
            "resourceRules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
                               "operations": ["UPDATE"],
                               "resources": ["resourceclaims/status"]}]},
        "validations": [{"expression": "has(object.status.allocation)",
                         "message": REFUSAL}]}}
    binding = {"metadata": {"name": name},
               "spec": {"policyName": name, "validationActions": ["Deny"]}}
    return policy, binding


async def _allocate(raw: RawApi, names: _Names, claim: str, node: str) -> None:
    """Write an allocation of `node`'s gpu-0 into the claim, as if a scheduler had."""
    status = {"status": {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER,
                                 "pool": names.of(node), "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
            "key": "metadata.name", "operator": "In", "values": [names.of(node)]}]}]},
        "allocationTimestamp": datetime.datetime.now(datetime.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ")}}}
    response = await raw.request(
        "PATCH", f"{BASE}/namespaces/{names.namespace}/resourceclaims/{claim}/status",
        status, content_type="application/merge-patch+json")
    assert response.ok, response.message()


async def _policy_in_force(raw: RawApi, names: _Names) -> bool:
    """A dry-run deallocation of the stuck claim is refused (the policy is loaded)."""
    response = await raw.request(
        "PATCH", f"{BASE}/namespaces/{names.namespace}/resourceclaims/stuck/status",
        {"status": {"allocation": None}}, content_type="application/merge-patch+json",
        query={"dryRun": "All"})
    return not response.ok and REFUSAL in response.message()


def _pod(role: str, scheduler: str, names: _Names) -> dict[str, Any]:
    case, claim = PODS[role]
    body = kube.pod_body(role, scheduler_name=scheduler, cpu="100m", memory="100Mi",
                         node_selector={RUN_LABEL: names.suffix, CASE_LABEL: case})
    body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return body


async def _attach_when_waiting(api: client.ApiClient, raw: RawApi, names: _Names) -> None:
    """Once PreBind has written the allocation and says it waits, report the device
    attached (as its driver would)."""
    path = f"{BASE}/namespaces/{names.namespace}/resourceclaims/conditions/status"

    async def allocated() -> dict[str, Any] | None:
        claim = json.loads((await raw.request("GET", path.removesuffix("/status"))).body)
        allocation: dict[str, Any] | None = claim.get("status", {}).get("allocation")
        return allocation

    async def waiting() -> bool:
        return any(e["regarding"]["name"] == "conditions"
                   for e in await kube.events(api, names.namespace,
                                              "BindingConditionsPending"))

    allocation = await kube.wait_for(allocated, OUTCOME_TIMEOUT_SECONDS,
                                     "the claim with binding conditions allocated")
    with contextlib.suppress(AssertionError):  # no event is part of the outcome
        await kube.wait_for(waiting, 10.0, "BindingConditionsPending")
    [result] = allocation["devices"]["results"]
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    devices = [{"driver": result["driver"], "pool": result["pool"], "device": result["device"],
                "conditions": [{"type": "Attached", "status": "True", "reason": "Attached",
                                "message": "", "lastTransitionTime": now}]}]
    # An update of the claim's own bytes: a patch (merge or JSON) makes the API server
    # re-encode the allocation's opaque parameters, which then differ from the stored
    # ones ("field is immutable"). Its status comes last in the API server's encoding.
    stored = (await raw.request("GET", path.removesuffix("/status"))).body
    at = stored.rindex(b'"status":{') + len(b'"status":{')
    body = stored[:at] + b'"devices":' + json.dumps(devices).encode() + b"," + stored[at:]
    response = await raw.request("PUT", path, body)
    assert response.ok, response.message()


async def _claims(api: client.ApiClient, raw: RawApi, names: _Names) -> tuple[ClaimEnd, ...]:
    core = client.CoreV1Api(api)
    pods = {p.metadata.uid: p.metadata.name
            for p in (await core.list_namespaced_pod(names.namespace)).items}
    listed = await raw.request("GET", f"{BASE}/namespaces/{names.namespace}/resourceclaims")
    ends = []
    for claim in json.loads(listed.body)["items"]:
        role = claim["metadata"]["name"]
        # Protobuf: JSON would show the parameters compacted, whatever is stored.
        stored = (await raw.request(
            "GET", f"{BASE}/namespaces/{names.namespace}/resourceclaims/{role}",
            accept=verbatim.PROTOBUF)).body
        status = claim.get("status", {})
        allocation = status.get("allocation") or {}
        node = None
        for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms", ()):
            for requirement in term.get("matchFields", ()):
                node = names.role(requirement["values"][0])
        devices = tuple(f"{names.role(r['pool'])}/{r['device']}"
                        for r in (allocation.get("devices") or {}).get("results", ()))
        config = tuple(
            (c["source"], c["opaque"]["driver"], json.dumps(c["opaque"]["parameters"],
                                                            sort_keys=True))
            for c in (allocation.get("devices") or {}).get("config", ()))
        reserved = tuple(sorted(pods.get(r["uid"], r["name"])
                                for r in status.get("reservedFor", ())))
        ends.append(ClaimEnd(role, node, devices, config, reserved,
                             tuple(claim["metadata"].get("finalizers", ())),
                             CLAIM_PARAMETERS.encode() in verbatim.stored_parameters(stored)[0]))
    return tuple(sorted(ends, key=lambda c: c.role))


async def _observe(api: client.ApiClient, raw: RawApi, names: _Names) -> WritesOutcome:
    core = client.CoreV1Api(api)
    to_bind = {"configured", "share-a", "share-b", "conditions"}

    async def decided() -> bool:
        pods = {p.metadata.name: p for p in
                (await core.list_namespaced_pod(names.namespace)).items}
        failed = await first_failures(api, names)
        return (all(pods[p].spec.node_name for p in to_bind) and "refused" in failed)

    with contextlib.suppress(AssertionError):  # the outcome shows what is missing
        await kube.wait_for(decided, OUTCOME_TIMEOUT_SECONDS, "every case decided")
    await asyncio.sleep(SETTLE_SECONDS)
    pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(names.namespace)).items}
    failed = await first_failures(api, names)
    waiting: dict[str, list[tuple[str, str, str]]] = {}
    for event in await kube.events(api, names.namespace, "BindingConditionsPending"):
        waiting.setdefault(event["regarding"]["name"], []).append(
            (event.get("type", ""), event.get("action", ""), names.text(event.get("note", ""))))
    return WritesOutcome(
        {role: names.role(pods[role].spec.node_name) if pods[role].spec.node_name else None
         for role in PODS},
        failed, {pod: tuple(notes) for pod, notes in waiting.items()},
        await _claims(api, raw, names))


async def run_claim_writes(api: client.ApiClient, scheduler: str,
                           barrier: asyncio.Barrier) -> WritesOutcome:
    """The cases under `scheduler`, in step with the other scheduler's run (`barrier`
    of two)."""
    namespace = await kube.create_namespace(api, "draw")
    names = _Names(secrets.token_hex(3), namespace)
    raw = RawApi(api)
    custom = client.CustomObjectsApi(api)
    admission = client.AdmissionregistrationV1Api(api)
    policy, binding = _policy(names)
    # The configured claim's class has config too; the others' has none (a test that
    # writes a claim back, as _attach_when_waiting does, reads JSON, which would change
    # the bytes of the allocation's parameters).
    classes = {names.of("configured"): CLASS_PARAMETERS, names.of("plain"): None}
    try:
        await asyncio.gather(*(kube.create_node(api, kube.node_body(
            names.of(node), labels={ROLE_LABEL: node, RUN_LABEL: names.suffix,
                                    CASE_LABEL: case})) for node, case in NODES.items()))
        for device_class, parameters in classes.items():
            response = await raw.request("POST", f"{BASE}/deviceclasses",
                                         _raw_class(device_class, parameters))
            assert response.ok, response.message()
        for node in NODES:
            await custom.create_cluster_custom_object("resource.k8s.io", "v1",
                                                      "resourceslices", _slice(names, node))
        for role, parameters in (("configured", CLAIM_PARAMETERS), ("shared", None),
                                 ("stuck", None), ("conditions", None)):
            response = await raw.request(
                "POST", f"{BASE}/namespaces/{namespace}/resourceclaims",
                _raw_claim(role, names.of("configured" if parameters else "plain"),
                           parameters))
            assert response.ok, response.message()
        await _allocate(raw, names, "shared", "n-shared")
        await _allocate(raw, names, "stuck", "n-full")
        full = kube.pod_body("full", scheduler_name=scheduler, cpu="4", memory="100Mi")
        full["spec"]["nodeName"] = names.of("n-full")
        await core_create(api, namespace, full)
        await admission.create_validating_admission_policy(policy)
        await admission.create_validating_admission_policy_binding(binding)
        await kube.wait_for(lambda: _policy_in_force(raw, names), 30.0,
                            "the ValidatingAdmissionPolicy in force")
        # The other run's nodes exist too (both schedulers count every node in their
        # messages): its pods come at the same moment, and its nodes stay until both
        # outcomes are read.
        await barrier.wait()
        await asyncio.sleep(SETTLE_SECONDS)  # both schedulers' informers have it all
        await asyncio.gather(*(core_create(api, namespace, _pod(role, scheduler, names))
                               for role in PODS))
        await _attach_when_waiting(api, raw, names)
        outcome = await _observe(api, raw, names)
        await barrier.wait()
        return outcome
    except BaseException:
        await barrier.abort()
        raise
    finally:
        await _clean_up(api, names, list(classes))


async def core_create(api: client.ApiClient, namespace: str, body: dict[str, Any]) -> None:
    await client.CoreV1Api(api).create_namespaced_pod(namespace, body)


async def _clean_up(api: client.ApiClient, names: _Names, device_classes: list[str]) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    custom = client.CustomObjectsApi(api)
    for delete in (lambda: admission.delete_validating_admission_policy_binding(
                       names.of("refuse-deallocation")),
                   lambda: admission.delete_validating_admission_policy(
                       names.of("refuse-deallocation")),
                   *(lambda name=name: custom.delete_cluster_custom_object(
                       "resource.k8s.io", "v1", "deviceclasses", name)
                     for name in device_classes),
                   *(lambda node=node: custom.delete_cluster_custom_object(
                       "resource.k8s.io", "v1", "resourceslices", names.of(f"slice-{node}"))
                     for node in NODES)):
        try:
            await delete()
        except ApiException as error:
            if error.status != 404:
                raise
    await kube.delete_namespace(api, names.namespace)
    node_names = [names.of(node) for node in NODES]
    await kube.delete_nodes(api, node_names)
    await _wait_nodes_gone(api, node_names)


def check_upstream(outcome: WritesOutcome) -> None:
    """What kube-scheduler must do for the cases to mean what they say."""
    detail = outcome.describe()
    assert outcome.nodes == {"configured": "n-config", "share-a": "n-shared",
                             "share-b": "n-shared", "refused": None,
                             "conditions": "n-conditions"}, detail
    assert set(outcome.failed) == {"refused"}, detail
    assert REFUSAL in outcome.failed["refused"], detail
    assert outcome.waiting == {"conditions": (
        ("Normal", "Scheduling",
         "waiting for binding conditions for device on node n-conditions"),)}, detail
    claims = {c.role: c for c in outcome.claims}
    configured = claims["configured"]
    assert configured.spaced_parameters_kept and FINALIZER in configured.finalizers, detail
    assert [source for source, _, _ in configured.config] == ["FromClass", "FromClaim"], detail
    assert claims["shared"].reserved_for == ("share-a", "share-b"), detail
    assert claims["stuck"].devices == ("n-full/gpu-0",), detail


# --- a gang sharing one unallocated claim (GenericWorkload + GangScheduling) --------

GANG_MEMBERS = ("g-0", "g-1")


@dataclass(frozen=True)
class GangClaimOutcome:
    bound: dict[str, str | None]  # member role -> node role
    notes: tuple[str, ...]  # the members' first FailedScheduling notes, sorted
    # The release's PodGroup condition (gang.CONDITION_TYPES): (status, reason, message).
    condition: tuple[str, str, str] | None
    claim: ClaimEnd | None

    def describe(self) -> str:
        return (f"\n   bound={self.bound}\n   notes={self.notes}\n   "
                f"condition={self.condition}\n   claim={self.claim}")


async def run_shared_claim_gang(api: client.ApiClient, scheduler: str,
                                barrier: asyncio.Barrier,
                                release: str = "1.36") -> GangClaimOutcome:
    """A PodGroup of two (minCount 2) whose members use one claim nobody allocated, on
    a node with one device. Both schedulers allocate it for the first member's
    reservation and let the second share it; the two PreBinds then race to write it."""
    namespace = await kube.create_namespace(api, "gangclaim")
    names = _Names(secrets.token_hex(3), namespace)
    raw = RawApi(api)
    custom = client.CustomObjectsApi(api)
    device_class = names.of("plain")
    try:
        await kube.create_node(api, kube.node_body(
            names.of("n0"), labels={ROLE_LABEL: "n0", RUN_LABEL: names.suffix}))
        response = await raw.request("POST", f"{BASE}/deviceclasses",
                                     _raw_class(device_class, None))
        assert response.ok, response.message()
        await custom.create_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", {
            "metadata": {"name": names.of("slice-n0")}, "spec": {
                "driver": DRIVER, "nodeName": names.of("n0"),
                "pool": {"name": names.of("n0"), "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}]}})
        response = await raw.request("POST", f"{BASE}/namespaces/{namespace}/resourceclaims",
                                     _raw_claim("shared", device_class, None))
        assert response.ok, response.message()
        version = POD_GROUP_VERSIONS[release]
        await custom.create_namespaced_custom_object(
            "scheduling.k8s.io", version, namespace, "podgroups",
            {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
             "metadata": {"name": "g"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
        await barrier.wait()
        await asyncio.sleep(SETTLE_SECONDS)
        for role in GANG_MEMBERS:
            body = kube.pod_body(role, scheduler_name=scheduler, cpu="100m", memory="100Mi",
                                 node_selector={RUN_LABEL: names.suffix})
            body["spec"]["schedulingGroup"] = {"podGroupName": "g"}
            body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
            body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
            await core_create(api, namespace, body)
        outcome = await _observe_gang(api, raw, custom, names, release)
        await barrier.wait()
        return outcome
    except BaseException:
        await barrier.abort()
        raise
    finally:
        for plural, name in (("deviceclasses", device_class),
                             ("resourceslices", names.of("slice-n0"))):
            try:
                await custom.delete_cluster_custom_object("resource.k8s.io", "v1", plural, name)
            except ApiException as error:
                if error.status != 404:
                    raise
        await kube.delete_namespace(api, namespace)
        await kube.delete_nodes(api, [names.of("n0")])
        await _wait_nodes_gone(api, [names.of("n0")])


async def _observe_gang(api: client.ApiClient, raw: RawApi, custom: client.CustomObjectsApi,
                        names: _Names, release: str) -> GangClaimOutcome:
    core = client.CoreV1Api(api)

    async def bound() -> bool:
        pods = (await core.list_namespaced_pod(names.namespace)).items
        return all(p.spec.node_name for p in pods) and len(pods) == len(GANG_MEMBERS)

    with contextlib.suppress(AssertionError):  # the outcome shows what is missing
        await kube.wait_for(bound, OUTCOME_TIMEOUT_SECONDS, "the gang bound")
    await asyncio.sleep(SETTLE_SECONDS)
    pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(names.namespace)).items}
    first = await first_failures(api, names)
    group = await custom.get_namespaced_custom_object(
        "scheduling.k8s.io", POD_GROUP_VERSIONS[release], names.namespace, "podgroups", "g")
    found = [c for c in group.get("status", {}).get("conditions", [])
             if c["type"] == CONDITION_TYPES[release]]
    condition = ((found[0]["status"], found[0]["reason"],
                  names.text(found[0].get("message", ""))) if found else None)
    claims = {c.role: c for c in await _claims(api, raw, names)}
    return GangClaimOutcome(
        {role: names.role(pods[role].spec.node_name) if pods[role].spec.node_name else None
         for role in GANG_MEMBERS},
        tuple(sorted(first.values())), condition, claims.get("shared"))
