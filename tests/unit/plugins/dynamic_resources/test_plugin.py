"""DynamicResources' extension points over in-memory informer indexes: which claims a
pod uses, allocation per node, in-flight allocations between cycles, deallocation,
prioritized-list scores and the writes PreBind makes (upstream's texts throughout).
The allocator itself is tested in test_dra_allocator*.py."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest

from kpysched.api.response import ApiResponse
from kpysched.cache.node_info import NodeInfo
from kpysched.config.features import Features
from kpysched.framework.cluster_events import ActionType
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import NodeScore, ScoreExtensions
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources
from kpysched.plugins.dynamic_resources.args import DynamicResourcesArgs
from tests.unit.api_double import RecordingApi
from tests.unit.builders import FakeHandle, make_node, make_snapshot

DRIVER = "gpu.example.com"


def _pod(claims: list[dict[str, Any]], name: str = "p", statuses: Any = ()) -> PodInfo:
    return PodInfo.of(msgspec.convert(
        {"metadata": {"name": name, "namespace": "d", "uid": f"uid-{name}"},
         "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
         "status": {"resourceClaimStatuses": list(statuses)}}, api.Pod))


def _claim(name: str, *requests: dict[str, Any], **status: Any) -> resource.ResourceClaim:
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "d", "uid": f"uid-{name}",
                      "resourceVersion": "5"},
         "spec": {"devices": {"requests": list(requests) or [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
         "status": status}, resource.ResourceClaim)


def _slice(node: str, *devices: str) -> resource.ResourceSlice:
    return msgspec.convert(
        {"metadata": {"name": f"{node}-slice"},
         "spec": {"driver": DRIVER, "nodeName": node,
                  "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": d} for d in devices]}}, resource.ResourceSlice)


def _class(name: str = "gpu", selector: str = "") -> resource.DeviceClass:
    spec = {"selectors": [{"cel": {"expression": selector}}]} if selector else {}
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, resource.DeviceClass)


def _uses(claim: str) -> dict[str, str]:
    return {"name": "gpu", "resourceClaimName": claim}


class World:
    def __init__(self, *objects: Any, api_client: RecordingApi | None = None,
                 release: int | None = None) -> None:
        self.handle = FakeHandle(api_client=api_client or RecordingApi())
        if release is not None:
            self.handle.features_value = Features(release=release)
        listers = self.handle.resource_listers
        for obj in objects:
            index = {resource.ResourceClaim: listers.resource_claims,
                     resource.ResourceSlice: listers.resource_slices,
                     resource.DeviceClass: listers.device_classes}[type(obj)]
            index.on_add(obj)
        self.plugin = dynamic_resources.DynamicResources(self.handle, DynamicResourcesArgs())

    def nodes(self, *names: str) -> list[NodeInfo]:
        return [make_node(name).info() for name in names]

    def cycle(self, pod: PodInfo, *nodes: str) -> tuple[CycleState, dict[str, Any]]:
        state = CycleState()
        _, status = self.plugin.pre_filter(state, pod, self.nodes(*nodes))
        assert status.ok, status.message()
        verdicts = {node.name: self.plugin.filter(state, pod, node)
                    for node in self.nodes(*nodes)}
        return state, verdicts


@pytest.mark.parametrize(("release", "reasons"), [
    (36, ["no new claims to deallocate"]),
    (37, []),  # v1.37's PostFilter only logs it: nothing in the FailedScheduling text
])
def test_pod_without_claims_skips_prefilter_and_says_no_claims_at_postfilter(
        release: int, reasons: list[str]) -> None:
    plugin = World(release=release).plugin
    pod = _pod([])
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, [])
    assert status.code == Code.SKIP
    result, post = plugin.post_filter(state, pod, {})
    assert result is None
    assert (post.code, post.reasons) == (Code.UNSCHEDULABLE, reasons)


def test_postfilter_without_its_prefilter_is_the_state_lookup_error() -> None:
    """An earlier PreFilter plugin rejected the pod (e.g. VolumeBinding's unbound
    immediate claims): upstream's PostFilter cannot read its state and errors."""
    result, post = World().plugin.post_filter(CycleState(), _pod([]), {})
    assert result is None
    assert (post.code, post.message()) == (Code.ERROR, "not found")


@pytest.mark.parametrize(("pod_claims", "statuses", "text"), [
    ([_uses("missing")], (), 'resourceclaim.resource.k8s.io "missing" not found'),
    ([{"name": "gpu", "resourceClaimTemplateName": "t"}], (),
     'pod "d/p": ResourceClaim not created yet'),
    ([{"name": "gpu"}], (), 'pod "d/p", spec.resourceClaim "gpu": none of the supported '
     "fields are set"),
    ([{"name": "gpu", "resourceClaimTemplateName": "t"}],
     ({"name": "gpu", "resourceClaimName": "made"},),
     "ResourceClaim d/made was not created for Pod d/p (Pod is not owner)"),
])
def test_pre_enqueue_holds_pods_whose_claims_are_not_usable(
        pod_claims: list[dict[str, Any]], statuses: Any, text: str) -> None:
    world = World(_claim("made"))
    status = world.plugin.pre_enqueue(_pod(pod_claims, statuses=statuses))
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, text)


def test_template_claim_owned_by_the_pod_is_used() -> None:
    owned = msgspec.structs.replace(_claim("made"), metadata=msgspec.convert(
        {"name": "made", "namespace": "d", "uid": "uid-made",
         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                              "uid": "uid-p", "controller": True}]}, api.ObjectMeta))
    world = World(owned, _class(), _slice("n1", "gpu-0"))
    pod = _pod([{"name": "gpu", "resourceClaimTemplateName": "t"}],
               statuses=({"name": "gpu", "resourceClaimName": "made"},))
    assert world.plugin.pre_enqueue(pod).ok
    _, verdicts = world.cycle(pod, "n1")
    assert verdicts["n1"].ok


def test_missing_device_class_is_unresolvable_at_prefilter() -> None:
    world = World(_claim("c"))
    _, status = world.plugin.pre_filter(CycleState(), _pod([_uses("c")]), [])
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "request gpu: device class gpu does not exist")


def test_filter_allocates_where_devices_are_and_reserve_keeps_them_for_this_pod() -> None:
    world = World(_claim("c1"), _claim("c2"), _class(), _slice("n1", "gpu-0"))
    first = _pod([_uses("c1")], name="first")
    state, verdicts = world.cycle(first, "n1", "n2")
    assert verdicts["n1"].ok
    assert (verdicts["n2"].code, verdicts["n2"].message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")
    assert world.plugin.reserve(state, first, "n1").ok
    # The only device is in flight for `first`: nothing is left for the next pod.
    second = _pod([_uses("c2")], name="second")
    _, verdicts = world.cycle(second, "n1")
    assert verdicts["n1"].message() == "cannot allocate all claims"
    # A claim allocated in flight makes its sharers wait for PreBind.
    _, status = world.plugin.pre_filter(CycleState(), _pod([_uses("c1")], name="sharer"), [])
    assert status.message() == "resource claim d/c1 is in the process of being allocated"
    # Unreserve hands the device back.
    world.plugin.unreserve(state, first, "n1")
    _, verdicts = world.cycle(second, "n1")
    assert verdicts["n1"].ok


def test_devices_held_by_allocated_claims_are_not_handed_out() -> None:
    held = _claim("held", allocation={"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}})
    world = World(held, _claim("c"), _class(), _slice("n1", "gpu-0", "gpu-1"))
    pod = _pod([_uses("c")])
    state, verdicts = world.cycle(pod, "n1")
    assert verdicts["n1"].ok
    assert world.plugin.reserve(state, pod, "n1").ok
    allocation = world.plugin._tracker.pending_allocation("uid-c")
    assert allocation is not None
    assert [r.device for r in allocation.devices.results] == ["gpu-1"]


async def test_allocated_claim_elsewhere_is_not_available_and_postfilter_frees_it() -> None:
    on_n2 = {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    claim = _claim("c", allocation={"nodeSelector": on_n2, "devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]}})
    recording = RecordingApi()
    world = World(claim, _class(), api_client=recording)
    pod = _pod([_uses("c")])
    state, verdicts = world.cycle(pod, "n1", "n2")
    assert verdicts["n2"].ok
    assert (verdicts["n1"].code, verdicts["n1"].message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim not available on the node")
    _, status = world.plugin.post_filter(state, pod, {})
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
    # Written before PostFilter returned: the claim as read, its status emptied.
    [body] = recording.sent("PUT", "/resourceclaims/c/status")
    assert body["metadata"]["resourceVersion"] == "5"
    assert body.get("status", {}) == {}


@pytest.mark.parametrize(("release", "reasons"), [
    (36, ["still not schedulable"]), (37, [])])
def test_postfilter_keeps_claims_other_pods_use(release: int, reasons: list[str]) -> None:
    on_n2 = {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    claim = _claim("c", allocation={"nodeSelector": on_n2, "devices": {"results": []}},
                   reservedFor=[{"resource": "pods", "name": "other", "uid": "uid-other"}])
    world = World(claim, _class(), release=release)
    pod = _pod([_uses("c")])
    state, _ = world.cycle(pod, "n1")
    _, status = world.plugin.post_filter(state, pod, {})
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, reasons)


def test_prioritized_list_scores_earlier_choices_higher() -> None:
    is_big = 'device.attributes["gpu.example.com"].size == "big"'
    requests = {"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": is_big}}]},
        {"name": "small", "deviceClassName": "gpu"}]}
    big = msgspec.convert(
        {"metadata": {"name": "n1-slice"}, "spec": {
            "driver": DRIVER, "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "g", "attributes": {"size": {"string": "big"}}}]}},
        resource.ResourceSlice)
    small = msgspec.convert(
        {"metadata": {"name": "n2-slice"}, "spec": {
            "driver": DRIVER, "nodeName": "n2",
            "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "g", "attributes": {"size": {"string": "small"}}}]}},
        resource.ResourceSlice)
    world = World(_claim("c", requests), _class(), big, small)
    pod = _pod([_uses("c")])
    state, verdicts = world.cycle(pod, "n1", "n2")
    assert verdicts["n1"].ok and verdicts["n2"].ok
    scores = [NodeScore(node.name, world.plugin.score(state, pod, node)[0])
              for node in world.nodes("n1", "n2")]
    assert [s.score for s in scores] == [8, 7]
    world.plugin.normalize_score(state, pod, scores)
    assert [s.score for s in scores] == [100, 87]
    # The framework normalises only plugins that declare ScoreExtensions.
    assert ScoreExtensions in type(world.plugin).__mro__


async def test_prebind_adds_the_finalizer_then_allocation_and_reservation() -> None:
    stored = _claim("c")
    with_finalizer = msgspec.structs.replace(stored, metadata=msgspec.structs.replace(
        stored.metadata, finalizers=[dynamic_resources.FINALIZER], resource_version="6"))
    recording = RecordingApi(answers={
        ("PUT", "/resourceclaims/c"): ApiResponse(200, msgspec.json.encode(with_finalizer)),
        ("PUT", "/resourceclaims/c/status"): ApiResponse(200, msgspec.json.encode(
            with_finalizer))})
    world = World(stored, _class(), _slice("n1", "gpu-0"), api_client=recording)
    pod = _pod([_uses("c")])
    state, _ = world.cycle(pod, "n1")
    assert world.plugin.reserve(state, pod, "n1").ok
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert status.ok, status.message()
    # The claim goes back whole (Update), with the finalizer, then with its status
    # (UpdateStatus), each with the resourceVersion it was read at.
    [finalizer] = recording.sent("PUT", "/resourceclaims/c")
    assert finalizer["metadata"] == {"name": "c", "namespace": "d", "uid": "uid-c",
                                     "resourceVersion": "5",
                                     "finalizers": [dynamic_resources.FINALIZER]}
    assert finalizer["spec"] == msgspec.to_builtins(stored.spec)
    [written] = recording.sent("PUT", "/resourceclaims/c/status")
    assert written["metadata"]["resourceVersion"] == "6"
    assert written["status"]["reservedFor"] == [
        {"resource": "pods", "name": "p", "uid": "uid-p"}]
    [result] = written["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"], result["device"]) == (DRIVER, "n1", "gpu-0")
    assert "allocationTimestamp" in written["status"]["allocation"]
    # Written: no longer in flight, so another claim's pod may not take the device, and
    # the claim's sharers may use the allocation.
    assert world.plugin._tracker.pending_allocation("uid-c") is None


async def test_prebind_reports_a_claim_deleted_in_the_meantime() -> None:
    stored = _claim("c")
    world = World(stored, _class(), _slice("n1", "gpu-0"))
    pod = _pod([_uses("c")])
    state, _ = world.cycle(pod, "n1")
    assert world.plugin.reserve(state, pod, "n1").ok
    deleting = msgspec.structs.replace(stored, metadata=msgspec.structs.replace(
        stored.metadata, deletion_timestamp="2026-01-01T00:00:00Z"))
    state.read("PreFilterDynamicResources").claims[0] = deleting
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert (status.code, status.message()) == (
        Code.ERROR, "claim d/c got deleted in the meantime")
    assert world.plugin._tracker.pending_allocation("uid-c") is None


async def test_dra_backed_extended_resource_gets_a_claim_made_at_prebind() -> None:
    gpu_class = msgspec.convert({"metadata": {"name": "gpu"},
                                 "spec": {"extendedResourceName": "example.com/gpu"}},
                                resource.DeviceClass)
    made = msgspec.structs.replace(_claim("p-extended-resources-x"), status=msgspec.convert(
        {"allocation": {"devices": {"results": []}}}, resource.ResourceClaimStatus))
    recording = RecordingApi(answers={
        ("POST", "/namespaces/d/resourceclaims"): ApiResponse(201, msgspec.json.encode(
            _claim("p-extended-resources-x"))),
        ("PUT", "/resourceclaims/p-extended-resources-x"): ApiResponse(
            200, msgspec.json.encode(_claim("p-extended-resources-x"))),
        ("PUT", "/resourceclaims/p-extended-resources-x/status"): ApiResponse(
            200, msgspec.json.encode(made))})
    world = World(gpu_class, _slice("n1", "gpu-0"), api_client=recording)
    world.handle.resource_listers.device_classes.on_add(gpu_class)
    pod = PodInfo.of(msgspec.convert(
        {"metadata": {"name": "p", "namespace": "d", "uid": "uid-p"},
         "spec": {"containers": [{"name": "c", "resources": {
             "requests": {"example.com/gpu": "1"}}}]}}, api.Pod))
    state, verdicts = world.cycle(pod, "n1", "n2")
    assert verdicts["n1"].ok
    assert verdicts["n2"].message() == "cannot allocate all claims"
    assert world.plugin.reserve(state, pod, "n1").ok
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert status.ok, status.message()
    [created] = recording.sent("POST", "/namespaces/d/resourceclaims")
    assert created["metadata"]["generateName"] == "p-extended-resources-"
    [request] = created["spec"]["devices"]["requests"]
    assert request["name"] == "container-0-request-0"
    assert request["exactly"]["deviceClassName"] == "gpu"
    [pod_status] = recording.sent("PATCH", "/pods/p/status")
    assert pod_status["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [{"containerName": "c", "resourceName": "example.com/gpu",
                             "requestName": "container-0-request-0"}],
        "resourceClaimName": "p-extended-resources-x"}


# --- queueing hints (upstream's isSchedulableAfterClaimChange / AfterPodChange) ---------

ALLOCATED = {"allocation": {"devices": {"results": [
    {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}}}


def _hint(world: World, pod: PodInfo, old: Any, new: Any) -> str:
    registration = next(r for r in world.plugin.events_to_register()
                        if getattr(r, "hint", None) is not None
                        and r.event.resource.value == "ResourceClaim")
    return str(registration.hint(pod, old, new).value)


@pytest.mark.parametrize(("held", "old", "new", "want"), [
    # The pod's own claim appears: Queue.
    (False, None, _claim("c"), "Queue"),
    # Someone else's claim appears while the pod's exists: QueueSkip.
    (True, None, _claim("other"), "QueueSkip"),
    # The pod's claim got an allocation (status changed): Queue.
    (True, _claim("c"), _claim("c", **ALLOCATED), "Queue"),
    # Only metadata changed (a driver's finalizer): QueueSkip.
    (True, _claim("c"), _claim("c"), "QueueSkip"),
    # Another claim freed its devices and the pod's claims exist: Queue.
    (True, _claim("other", **ALLOCATED), _claim("other"), "Queue"),
    # ... but while the pod's own claim is missing: QueueSkip.
    (False, _claim("other", **ALLOCATED), _claim("other"), "QueueSkip"),
    # A claim of the same name elsewhere: QueueSkip.
    (True, None, msgspec.structs.replace(_claim("c"), metadata=api.ObjectMeta(
        name="c", namespace="elsewhere", uid="uid-x")), "QueueSkip"),
])
def test_claim_change_hint(held: bool, old: Any, new: Any, want: str) -> None:
    world = World(*([_claim("c")] if held else []), _class())
    if not held and new is not None and new.metadata.name == "c":
        world.handle.resource_listers.resource_claims.on_add(new)
    assert _hint(world, _pod([_uses("c")]), old, new) == want


@pytest.mark.parametrize(("release", "deletion"), [(36, False), (37, True)])
def test_claim_events_registered(release: int, deletion: bool) -> None:
    """v1.37 registers a claim's deletion too (with the same hint)."""
    registration = next(r for r in World(release=release).plugin.events_to_register()
                        if getattr(r, "hint", None) is not None
                        and r.event.resource.value == "ResourceClaim")
    action = registration.event.action
    assert ActionType.ADD in action and ActionType.UPDATE in action
    assert (ActionType.DELETE in action) == deletion


@pytest.mark.parametrize(("deleted", "want"), [
    # An allocated claim's deletion frees its devices, whoever used it: Queue.
    (_claim("other", **ALLOCATED), "Queue"),
    (_claim("c", **ALLOCATED), "Queue"),
    # An unallocated claim's deletion frees nothing: QueueSkip (the pod waits for the
    # claim to be made again, an Add).
    (_claim("c"), "QueueSkip"),
    (_claim("other"), "QueueSkip"),
])
def test_claim_deletion_hint(deleted: Any, want: str) -> None:
    world = World(_claim("c"), _class(), release=37)
    assert _hint(world, _pod([_uses("c")]), deleted, None) == want


@pytest.mark.parametrize(("release", "kind"), [(36, "Pod"), (37, "TargetPod")])
def test_pod_change_hint_queues_only_the_pod_whose_claims_now_exist(
        release: int, kind: str) -> None:
    world = World(_claim("made"), _class(), release=release)
    registration = next(r for r in world.plugin.events_to_register()
                        if getattr(r, "hint", None) is not None
                        and r.event.resource.value == kind)
    template = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    waiting = _pod(template)
    other = _pod(template, name="other")
    assert registration.hint(waiting, waiting, other).value == "QueueSkip"
    assert registration.hint(waiting, waiting, waiting).value == "QueueSkip"  # not created
    owned = msgspec.structs.replace(_claim("made"), metadata=msgspec.convert(
        {"name": "made", "namespace": "d", "uid": "uid-made",
         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                              "uid": "uid-p", "controller": True}]}, api.ObjectMeta))
    world.handle.resource_listers.resource_claims.on_update(_claim("made"), owned)
    made = _pod(template, statuses=({"name": "gpu", "resourceClaimName": "made"},))
    assert registration.hint(waiting, waiting, made).value == "Queue"


def test_a_pod_without_claims_scores_every_node_zero_at_once() -> None:
    world = World()
    pod = _pod([])
    state = CycleState()
    world.plugin.pre_filter(state, pod, [])
    snapshot = make_snapshot(*(make_node(node).info() for node in ("n1", "n2", "n3")))
    vector = world.plugin.score_vector(state, pod, snapshot)
    assert vector is not None and vector.tolist() == [0, 0, 0]
    assert [world.plugin.score(state, pod, info)[0] for info in snapshot.node_infos] == [0, 0, 0]
    assert world.plugin.normalize_vector(state, pod, vector).tolist() == [0, 0, 0]
    # With claims, the per-node form does the work.
    claimed = _pod([_uses("c")])
    assert World(_claim("c", {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}),
                 _class()).plugin.score_vector(CycleState(), claimed, snapshot) is None


def test_normalize_vector_matches_normalize_score() -> None:
    plugin = World().plugin
    scores = [NodeScore("n1", 8), NodeScore("n2", 7), NodeScore("n3", 0)]
    plugin.normalize_score(CycleState(), _pod([]), scores)
    vector = plugin.normalize_vector(CycleState(), _pod([]), np.array([8, 7, 0], dtype=np.int64))
    assert vector.tolist() == [s.score for s in scores] == [100, 87, 0]


@pytest.mark.parametrize(("release", "in_flight"), [(36, True), (37, False)])
def test_reserve_puts_nothing_in_flight_for_a_claim_allocated_meanwhile(
        release: int, in_flight: bool) -> None:
    """v1.37's SignalClaimPendingAllocation: the claim got an allocation after PreFilter
    read it (another pod's PreBind), so Reserve leaves it out of flight."""
    world = World(_claim("c"), _class(), _slice("n1", "gpu-0"), release=release)
    pod = _pod([_uses("c")])
    state, verdicts = world.cycle(pod, "n1")
    assert verdicts["n1"].ok
    claims = world.handle.resource_listers.resource_claims
    claims.on_update(_claim("c"), _claim("c", **ALLOCATED))
    assert world.plugin.reserve(state, pod, "n1").ok
    tracker = dynamic_resources.tracker_for(claims)
    assert (tracker.pending_allocation("uid-c") is not None) == in_flight
