"""DynamicResources with DRAWorkloadResourceClaims (v1.37): the rows of kube-scheduler
v1.37.2's dynamicresources_test.go about PodGroup claims (TestPlugin's podgroup-*,
bind-podgroup-failure, postfilter-*-podgroup*, reserved-okay-podgroup, and
TestPodGroupPostFilter), with the gate on and, where upstream has the row, off."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kpysched.api.response import ApiResponse
from kpysched.config.features import Features
from kpysched.framework.cluster_events import QueueingHint
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins.dynamic_resources import hints
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources
from kpysched.plugins.dynamic_resources.args import DynamicResourcesArgs
from kpysched.plugins.dynamic_resources.group_cleanup import (
    GROUP_CLAIM_DEALLOCATED,
    GROUP_CLAIM_UNRESERVED,
)
from kpysched.plugins.dynamic_resources.plugin import POD_GROUP_CLAIMS_CLEANED_UP
from tests.unit.api_double import RecordingApi
from tests.unit.builders import FakeHandle, make_node, make_pod, make_pod_group
from tests.unit.plugins.dynamic_resources.test_claim_writes import VersionedApi
from tests.unit.plugins.dynamic_resources.test_plugin import DRIVER, _class, _slice
from tests.unit.scheduler_harness import build_harness, node

GATE = "DRAWorkloadResourceClaims"
GROUP = "g"
GROUP_UID = "uid-pg-g"
GROUP_REF = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": GROUP,
             "uid": GROUP_UID}
GROUP_OWNER = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
               "name": GROUP, "uid": GROUP_UID, "controller": True}
BY_NAME = {"name": "gpu", "resourceClaimName": "shared"}
BY_TEMPLATE = {"name": "gpu", "resourceClaimTemplateName": "t"}
ON_N1 = {"devices": {"results": [
    {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
    "allocationTimestamp": "2026-01-01T00:00:00Z"}
# upstream's allocatedPodGroupClaimWithWrongTopology: allocated where no node is.
NOWHERE = {"devices": {"results": []}, "nodeSelector": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "no-such-label", "operator": "In",
                           "values": ["no-such-value"]}]}]}}


def _claim_body(name: str = "shared", *, owner: dict[str, Any] | None = None,
                allocation: dict[str, Any] | None = None,
                reserved: tuple[dict[str, str], ...] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "d", "uid": f"uid-{name}",
                            "resourceVersion": "5"}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    status: dict[str, Any] = {"reservedFor": list(reserved)}
    if allocation is not None:
        status["allocation"] = allocation
        meta["finalizers"] = [dynamic_resources.FINALIZER]
    return {"metadata": meta, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}, "status": status}


def _member(name: str = "p", entry: dict[str, Any] = BY_NAME,
            statuses: tuple[dict[str, Any], ...] = (), group: str | None = GROUP,
            node: str = "") -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "resourceClaims": [entry]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    return PodInfo.of(msgspec.convert(
        {"metadata": {"name": name, "namespace": "d", "uid": f"uid-{name}"}, "spec": spec,
         "status": {"resourceClaimStatuses": list(statuses)}}, api.Pod))


def _group(*entries: dict[str, Any], statuses: tuple[dict[str, Any], ...] = ()) -> PodGroup:
    return msgspec.convert(
        {"metadata": {"name": GROUP, "namespace": "d", "uid": GROUP_UID},
         "spec": {"schedulingPolicy": {"gang": {"minCount": 1}},
                  "resourceClaims": list(entries or (BY_NAME,))},
         "status": {"resourceClaimStatuses": list(statuses)}}, PodGroup)


class GroupWorld:
    """The plugin with GenericWorkload and, unless `gate` is False, the gate on."""

    def __init__(self, *claims: dict[str, Any], gate: bool = True,
                 group: PodGroup | None = None, api_client: Any = None,
                 slices: bool = True) -> None:
        self.api = api_client if api_client is not None else RecordingApi()
        self.handle = FakeHandle(api_client=self.api)
        self.handle.features_value = Features.from_gates(
            {"GenericWorkload": True, GATE: gate}, release=37)
        self.handle.pod_groups[f"d/{GROUP}"] = group if group is not None else _group()
        listers = self.handle.resource_listers
        listers.device_classes.on_add(_class())
        if slices:
            listers.resource_slices.on_add(_slice("n1", "gpu-0"))
        for body in claims:
            listers.resource_claims.on_add(msgspec.convert(body, resource.ResourceClaim))
        self.plugin = dynamic_resources.DynamicResources(self.handle, DynamicResourcesArgs())

    def tried(self, pod: PodInfo, node: str = "n1") -> tuple[CycleState, Status]:
        """PreFilter (which must pass) and Filter on one node."""
        state = CycleState()
        _, status = self.plugin.pre_filter(state, pod, [])
        assert status.ok, status.message()
        return state, self.plugin.filter(state, pod, make_node(node).info())


# --- PreBind: whom the claim is reserved for -----------------------------------------

@pytest.mark.parametrize(("gate", "pod", "group", "reserved_for"), [
    pytest.param(True, _member(), _group(), GROUP_REF, id="podgroup-claim-reference"),
    pytest.param(False, _member(), _group(), {"resource": "pods", "name": "p",
                                               "uid": "uid-p"},
                 id="podgroup-claim-reference-feature-disabled-reserves-for-pod"),
    pytest.param(True, _member(entry=BY_TEMPLATE,
                               statuses=({"name": "gpu", "resourceClaimName": "shared"},)),
                 _group(BY_TEMPLATE), GROUP_REF, id="podgroup-claim-template"),
    # The group lists another entry: this claim is the pod's own.
    pytest.param(True, _member(), _group({"name": "other", "resourceClaimName": "shared"}),
                 {"resource": "pods", "name": "p", "uid": "uid-p"},
                 id="claim-the-podgroup-does-not-list"),
])
async def test_prebind_reserves_an_allocated_claim_for_its_consumer(
        gate: bool, pod: PodInfo, group: PodGroup, reserved_for: dict[str, str]) -> None:
    owner = GROUP_OWNER if pod.pod.spec.resource_claims[0].resource_claim_template_name else None
    stored = _claim_body(owner=owner, allocation=ON_N1)
    api_double = VersionedApi(stored=stored)
    world = GroupWorld(stored, gate=gate, group=group, api_client=api_double)
    state, verdict = world.tried(pod)
    assert verdict.ok, verdict.message()
    assert world.plugin.reserve(state, pod, "n1").ok
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert status.ok, status.message()
    [(subresource, sent)] = api_double.puts()
    assert subresource == "status"
    assert sent["status"]["reservedFor"] == [reserved_for]


async def test_podgroup_with_resources_allocates_and_reserves_for_the_podgroup() -> None:
    stored = _claim_body()
    api_double = VersionedApi(stored=stored)
    world = GroupWorld(stored, api_client=api_double)
    pod = _member()
    state, verdict = world.tried(pod)
    assert verdict.ok, verdict.message()
    assert world.plugin.reserve(state, pod, "n1").ok
    assert (await world.plugin.pre_bind(state, pod, "n1")).ok
    [(first, finalizer), (second, status)] = api_double.puts()
    assert (first, finalizer["metadata"]["finalizers"]) == ("shared", [
        dynamic_resources.FINALIZER])
    assert second == "status"
    assert status["status"]["reservedFor"] == [GROUP_REF]
    assert [r["device"] for r in status["status"]["allocation"]["devices"]["results"]] == [
        "gpu-0"]


@pytest.mark.parametrize(("gate", "writes"), [
    pytest.param(True, 0, id="reserved-okay-podgroup"),
    # Without the gate the group's reservation is not the pod's: it adds its own.
    pytest.param(False, 1, id="reserved-for-podgroup-feature-disabled"),
])
async def test_a_claim_reserved_for_the_podgroup_is_the_members(gate: bool,
                                                               writes: int) -> None:
    stored = _claim_body(owner=GROUP_OWNER, allocation=ON_N1, reserved=(GROUP_REF,))
    api_double = VersionedApi(stored=stored)
    world = GroupWorld(stored, gate=gate, api_client=api_double)
    pod = _member()
    state, verdict = world.tried(pod)
    assert verdict.ok, verdict.message()
    assert world.plugin.reserve(state, pod, "n1").ok
    assert (await world.plugin.pre_bind(state, pod, "n1")).ok
    assert len(api_double.puts()) == writes


async def test_bind_podgroup_failure_leaves_the_podgroup_reserved() -> None:
    """bind-podgroup-failure: Unreserve after a failed PreBind takes only the pod out
    of a claim, never its PodGroup (other members may still need the claim)."""
    stored = _claim_body(allocation=ON_N1)
    failing = VersionedApi(stored=stored, failures={("PUT", "/status"): ApiResponse(
        400, b'{"kind":"Status","message":"claim bind error"}')})
    world = GroupWorld(stored, api_client=failing)
    pod = _member()
    state, _ = world.tried(pod)
    assert world.plugin.reserve(state, pod, "n1").ok
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert (status.code, status.message()) == (
        Code.ERROR, "add reservation to claim d/shared: claim bind error")
    world.plugin.unreserve(state, pod, "n1")
    assert [m for m, _, _ in failing.requests if m == "PATCH"] == []


# --- PreEnqueue and PreFilter ----------------------------------------------------------

TEMPLATE_STATUS = ({"name": "gpu", "resourceClaimName": "made"},)


@pytest.mark.parametrize(("gate", "group", "text"), [
    pytest.param(True, GROUP, None, id="claim-owned-by-the-podgroup"),
    pytest.param(False, GROUP, "ResourceClaim d/made was not created for Pod d/p (Pod is "
                 "not owner)", id="feature-disabled"),
    pytest.param(True, "other", "ResourceClaim d/made was not created for Pod d/p (neither "
                 "Pod nor PodGroup other is the owner)", id="member-of-another-podgroup"),
    pytest.param(True, None, "ResourceClaim d/made was not created for Pod d/p (Pod is not "
                 "owner)", id="pod-in-no-podgroup"),
])
def test_pre_enqueue_takes_a_template_claim_of_the_pods_podgroup(
        gate: bool, group: str | None, text: str | None) -> None:
    world = GroupWorld(_claim_body("made", owner=GROUP_OWNER), gate=gate)
    status = world.plugin.pre_enqueue(_member(entry=BY_TEMPLATE, statuses=TEMPLATE_STATUS,
                                              group=group))
    if text is None:
        assert status.ok, status.message()
    else:
        assert (status.code, status.message()) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, text)


@pytest.mark.parametrize("entries", [[BY_NAME], []], ids=["with-claims", "without-claims"])
def test_prefilter_refuses_a_member_whose_podgroup_is_unknown(
        entries: list[dict[str, Any]]) -> None:
    world = GroupWorld(_claim_body())
    del world.handle.pod_groups[f"d/{GROUP}"]
    pod = _member()
    pod.pod.spec.resource_claims = [msgspec.convert(e, api.PodResourceClaim) for e in entries]
    _, status = world.plugin.pre_filter(CycleState(), pod, [])
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pod group object not found for pod group podgroup/d/g")


# --- PodGroupPostFilter (TestPodGroupPostFilter, TestPlugin's postfilter-*) ------------

POD_LEVEL = _claim_body("pod-level", allocation=NOWHERE,
                        reserved=({"resource": "pods", "name": "podlevel",
                                   "uid": "uid-podlevel"},))
POD_LEVEL_ENTRY = {"name": "gpu2", "resourceClaimName": "pod-level"}


def _tried_members(world: GroupWorld, *pods: PodInfo) -> list[tuple[PodInfo, CycleState]]:
    return [(pod, world.tried(pod)[0]) for pod in pods]


@pytest.mark.parametrize(("gate", "claims", "members", "status", "writes"), [
    pytest.param(True, [_claim_body(allocation=NOWHERE, reserved=(GROUP_REF,))], ["p"],
                 (Code.UNSCHEDULABLE, GROUP_CLAIM_DEALLOCATED), [("PUT", "shared/status")],
                 id="deallocate-podgroup-level-claim"),
    pytest.param(False, [_claim_body(allocation=NOWHERE, reserved=(GROUP_REF,))], ["p"],
                 (Code.UNSCHEDULABLE, POD_GROUP_CLAIMS_CLEANED_UP), [],
                 id="skip-deallocate-feature-disabled"),
    pytest.param(True, [_claim_body(allocation=NOWHERE)], ["p"],
                 (Code.UNSCHEDULABLE, POD_GROUP_CLAIMS_CLEANED_UP), [("PUT", "shared/status")],
                 id="postfilter-deallocate-unreserved-podgroup"),
    pytest.param(True, [_claim_body(allocation=ON_N1, reserved=(GROUP_REF,))], ["p"],
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, GROUP_CLAIM_UNRESERVED),
                 [("PATCH", "shared/status")], id="unreserve-podgroup-claim"),
    pytest.param(True, [_claim_body(allocation=ON_N1, reserved=(GROUP_REF,))], ["p", "p-2"],
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, GROUP_CLAIM_UNRESERVED),
                 [("PATCH", "shared/status")],
                 id="unreserve-podgroup-multiple-unscheduled-pods"),
    pytest.param(True, [_claim_body(allocation=ON_N1, reserved=(GROUP_REF,)), POD_LEVEL],
                 ["p", "podlevel"],
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, GROUP_CLAIM_UNRESERVED),
                 [("PUT", "pod-level/status"), ("PATCH", "shared/status")],
                 id="mixed-pod-level-and-podgroup-claims"),
])
def test_pod_group_post_filter(gate: bool, claims: list[dict[str, Any]], members: list[str],
                               status: tuple[Code, str],
                               writes: list[tuple[str, str]]) -> None:
    recording = RecordingApi()
    world = GroupWorld(*claims, gate=gate, api_client=recording)
    pods = [_member(name, POD_LEVEL_ENTRY if name == "podlevel" else BY_NAME)
            for name in members]
    got = world.plugin.pod_group_post_filter(_tried_members(world, *pods))
    assert (got.code, got.message()) == status
    assert [(method, path.rsplit("/resourceclaims/", 1)[1])
            for method, path, _ in recording.requests] == writes
    for method, _, body in recording.requests:
        if method == "PATCH":  # the PodGroup's uid, not a pod's, leaves reservedFor
            assert body["status"]["reservedFor"] == [{"$patch": "delete", "uid": GROUP_UID}]


def test_pod_group_claims_are_kept_while_a_member_is_placed() -> None:
    """postfilter-skip-deallocate-reserved-podgroup-when-pods-active: a bound member
    still needs the PodGroup's claim."""
    recording = RecordingApi()
    world = GroupWorld(_claim_body(allocation=NOWHERE, reserved=(GROUP_REF,)),
                       api_client=recording)
    world.handle.pod_group_states.add_or_update(_member("p-2", node="n1"))
    status = world.plugin.pod_group_post_filter(_tried_members(world, _member()))
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, POD_GROUP_CLAIMS_CLEANED_UP)
    assert recording.requests == []


def test_a_failed_unreserve_of_the_podgroup_is_passed_by() -> None:
    """Upstream logs a failed removal and tries the next claim; with none left the
    group hears the usual words."""
    recording = RecordingApi(answers={("PATCH", "/status"): ApiResponse(
        500, b'{"kind":"Status","message":"etcdserver: request timed out"}')})
    world = GroupWorld(_claim_body(allocation=ON_N1, reserved=(GROUP_REF,)),
                       api_client=recording)
    status = world.plugin.pod_group_post_filter(_tried_members(world, _member()))
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, POD_GROUP_CLAIMS_CLEANED_UP)
    assert len(recording.sent("PATCH", "/resourceclaims/shared/status")) == 1


# --- through the scheduler ---------------------------------------------------------------

async def test_a_gang_sharing_its_podgroups_claim_reserves_it_for_the_podgroup() -> None:
    """The gate reaches the plugin from --feature-gates: both members of a gang bind and
    every reservation PreBind writes names the PodGroup."""
    listers = Listers(generic_workload=True)
    features = Features.from_gates({"GenericWorkload": True, GATE: True}, release=37)
    harness = build_harness({"schedulerName": "kpysched"}, features, listers,
                            node("n1", "4"))
    group = msgspec.structs.replace(_group(), spec=msgspec.structs.replace(
        _group().spec, scheduling_policy=make_pod_group(GROUP, 2).spec.scheduling_policy))
    listers.workloads.pod_groups.on_add(group)
    listers.resources.device_classes.on_add(_class())
    listers.resources.resource_slices.on_add(_slice("n1", "gpu-0"))
    listers.resources.resource_claims.on_add(msgspec.convert(_claim_body(),
                                                             resource.ResourceClaim))
    for name in ("a", "b"):
        pod = make_pod(name, namespace="d").group(GROUP).req(cpu="1").obj()
        pod.spec.scheduler_name = "kpysched"
        pod.spec.resource_claims = [msgspec.convert(BY_NAME, api.PodResourceClaim)]
        harness.pods.on_add(pod)
    await harness.schedule_all()
    assert harness.bound() == {"a": "n1", "b": "n1"}
    # (The recording API answers the finalizer's update with an empty claim, whose
    # status update then names no claim: only its body is read here.)
    reservations = [msgspec.json.decode(body)["status"]["reservedFor"]
                    for method, path, body in harness.api.requests
                    if method == "PUT" and "/resourceclaims/" in path
                    and path.endswith("/status")]
    assert reservations == [[GROUP_REF], [GROUP_REF]]


# --- queueing hints ------------------------------------------------------------------------

@pytest.mark.parametrize(("gate", "hint"), [
    pytest.param(True, QueueingHint.QUEUE, id="gate-on"),
    pytest.param(False, QueueingHint.QUEUE_SKIP, id="gate-off"),
])
def test_a_members_template_claim_made_for_its_podgroup_requeues_it(
        gate: bool, hint: QueueingHint) -> None:
    """The resourceclaim controller records the PodGroup's claim in a member's status:
    the member may go on only if a claim its PodGroup owns counts as its own."""
    claim = msgspec.convert(_claim_body("made", owner=GROUP_OWNER), resource.ResourceClaim)
    waiting = _member(entry=BY_TEMPLATE)
    recorded = _member(entry=BY_TEMPLATE, statuses=TEMPLATE_STATUS)
    lookup = {"d/made": claim}.get
    assert hints.after_pod_change(lookup, waiting, waiting, recorded, gate) == hint
    # A change of the claim is heard the same way.
    changed = msgspec.structs.replace(claim, status=msgspec.convert(
        {"allocation": ON_N1}, resource.ResourceClaimStatus))
    assert hints.after_claim_change(lookup, recorded, claim, changed, gate) == hint
