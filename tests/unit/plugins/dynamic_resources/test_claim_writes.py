"""DynamicResources' writes as upstream makes them (issue 33): PreBind updates the claim
whole with the resourceVersion it read (opaque parameters byte for byte), reads it
again from the API server after a conflict, PostFilter writes before it returns, the
extended resource claim's finalizer goes with a guarded update, an in-flight
allocation is shared within one pod-group cycle only, and PreBind announces a wait
for binding conditions. tests/e2e/differential holds the same against the API server."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from kpysched.api.response import ApiResponse
from kpysched.cache.pod_groups import PodGroupState
from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources
from kpysched.plugins.dynamic_resources import verbatim
from kpysched.plugins.dynamic_resources.claim_writes import ClaimWriteError, ClaimWriter
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_pod, make_pod_group
from tests.unit.plugins.dynamic_resources.test_plugin import (
    DRIVER,
    World,
    _claim,
    _class,
    _pod,
    _slice,
    _uses,
)
from tests.unit.scheduler_harness import build_harness, node

CONFLICT = ApiResponse(409, b'{"kind":"Status","reason":"Conflict","code":409,"message":'
                            b'"Operation cannot be fulfilled on resourceclaims.resource.k8s.io'
                            b' \\"shared\\": the object has been modified; please apply your'
                            b' changes to the latest version and try again"}')
ALLOCATED_ON_N1 = {"devices": {"results": [
    {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
    "allocationTimestamp": "2026-01-01T00:00:00Z"}


def _field(number: int, value: bytes) -> bytes:
    """One length-delimited protobuf field (sizes below 128)."""
    assert len(value) < 128
    return bytes([number << 3 | 2, len(value)]) + value


def _protobuf(parameters: list[bytes], allocated: list[bytes]) -> bytes:
    """The protobuf of a claim, as far as verbatim.py reads it: its spec's and its
    allocation's opaque parameters (other fields as the API server puts them first)."""
    def configuration(raw: bytes) -> bytes:  # DeviceConfiguration{opaque{driver, params}}
        return _field(1, _field(1, DRIVER.encode()) + _field(2, _field(1, raw)))

    spec = _field(1, b"".join(_field(1, _field(1, b"gpu")) for _ in parameters)
                  + b"".join(_field(3, _field(1, b"gpu") + _field(2, configuration(raw)))
                             for raw in parameters))
    status = _field(1, _field(1, b"".join(
        _field(2, _field(1, b"FromClass") + _field(3, configuration(raw)))
        for raw in allocated)))
    claim = _field(1, _field(1, b"c")) + _field(2, spec) + _field(3, status)
    return b"k8s\x00" + _field(1, _field(1, b"resource.k8s.io/v1")) + bytes(
        [2 << 3 | 2]) + _varint(len(claim)) + claim


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


@dataclass
class VersionedApi(RecordingApi):
    """An API server holding one claim: PUTs with a stale resourceVersion get 409, the
    others are stored (resourceVersion + 1) and answered with what is stored. It
    answers GETs in JSON (opaque parameters compacted, as the API server does) or, when
    asked, with `protobuf` (the parameters as stored)."""

    stored: dict[str, Any] = field(default_factory=dict)
    failures: dict[tuple[str, str], ApiResponse] = field(default_factory=dict)
    protobuf: bytes = b""

    async def request(self, method: str, path: str, body: Any = None,
                      accept: str = "application/json", **_: Any) -> ApiResponse:
        self.requests.append((method, path, body))
        for (want, suffix), answer in self.failures.items():
            if method == want and path.endswith(suffix):
                return answer
        if method == "GET" and accept == verbatim.PROTOBUF:
            return ApiResponse(200, self.protobuf)
        if method == "GET":
            return ApiResponse(200, msgspec.json.encode(self.stored))
        if method != "PUT":
            return ApiResponse(200, b"{}")
        sent = msgspec.json.decode(body)
        version = self.stored["metadata"]["resourceVersion"]
        if sent["metadata"]["resourceVersion"] != version:
            return CONFLICT
        if path.endswith("/status"):
            self.stored = {**self.stored, "status": sent.get("status", {})}
        else:
            self.stored = {**self.stored, "metadata": sent["metadata"]}
        self.stored["metadata"] = {**self.stored["metadata"],
                                   "resourceVersion": str(int(version) + 1)}
        return ApiResponse(200, msgspec.json.encode(self.stored))

    def puts(self) -> list[tuple[str, dict[str, Any]]]:
        return [(path.rsplit("/", 1)[-1], msgspec.json.decode(body))
                for method, path, body in self.requests if method == "PUT"]


# --- item 1: the claim goes back as it was read ------------------------------------

SPACED = (b'{"metadata": {"name": "c", "namespace": "d", "uid": "uid-c", '
          b'"resourceVersion": "5", "generateName": "c-", "labels": {"app": "x"}, '
          b'"annotations": {"note": "kept"}, "creationTimestamp": "2026-01-01T00:00:00Z", '
          b'"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", '
          b'"uid": "uid-p", "controller": true, "blockOwnerDeletion": true}]}, '
          b'"spec": {"devices": {"requests": [{"name": "gpu", "exactly": '
          b'{"deviceClassName": "gpu", "allocationMode": "ExactCount"}}], '
          b'"config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", '
          b'"parameters": {"kind" : "GpuConfig",  "sharing": { "strategy": "TimeSlicing" }}}}]}},'
          b' "status": {}}')


async def test_prebind_updates_the_claim_as_read_opaque_parameters_byte_for_byte() -> None:
    # The informer's copy came as JSON, where the API server compacts the parameters;
    # their stored bytes come from the protobuf read.
    claim = msgspec.json.decode(msgspec.json.encode(msgspec.json.decode(SPACED)),
                                type=resource.ResourceClaim)
    api_double = VersionedApi(stored=msgspec.json.decode(SPACED), protobuf=_protobuf(
        [b'{"kind" : "GpuConfig",  "sharing": { "strategy": "TimeSlicing" }}'], []))
    world = World(claim, _class(), _slice("n1", "gpu-0"), api_client=api_double)
    pod = _pod([_uses("c")])
    state, _ = world.cycle(pod, "n1")
    assert world.plugin.reserve(state, pod, "n1").ok
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert status.ok, status.message()
    [(_, finalizer_body), (_, status_body)] = [
        (path, body) for method, path, body in api_double.requests if method == "PUT"]
    assert [(method, path) for method, path, _ in api_double.requests] == [
        ("GET", "/apis/resource.k8s.io/v1/namespaces/d/resourceclaims/c"),
        ("PUT", "/apis/resource.k8s.io/v1/namespaces/d/resourceclaims/c"),
        ("PUT", "/apis/resource.k8s.io/v1/namespaces/d/resourceclaims/c/status")]
    # The parameters' bytes are the creator's, spaces included; nothing else is lost
    # (a count of 1 would be left out: the API server defaults it back, as it does
    # everything resource.py leaves out at its default). The status update's spec is
    # not compared by the API server.
    assert b'"parameters":{"kind" : "GpuConfig",  "sharing": { "strategy": ' \
           b'"TimeSlicing" }}' in finalizer_body
    for body in (finalizer_body, status_body):
        assert msgspec.json.decode(body)["spec"] == msgspec.json.decode(SPACED)["spec"]
    meta = msgspec.json.decode(finalizer_body)["metadata"]
    assert meta == {**msgspec.json.decode(SPACED)["metadata"],
                    "finalizers": [dynamic_resources.FINALIZER]}
    assert msgspec.json.decode(status_body)["metadata"]["resourceVersion"] == "6"
    # The class's and claim's configs land in the allocation, the claim's bytes intact.
    assert b'"source":"FromClaim"' in status_body


async def test_a_reservation_keeps_the_stored_bytes_of_the_allocations_parameters() -> None:
    """kube-scheduler (protobuf) allocated the claim with a class's spaced parameters;
    the allocation is immutable, so adding a reservation must send those bytes."""
    spaced = b'{"mode" :  "shared"}'
    stored = copy.deepcopy(_shared("5", "a"))
    stored["status"]["allocation"]["devices"]["config"] = [{
        "source": "FromClass", "requests": ["gpu"],
        "opaque": {"driver": DRIVER, "parameters": {"mode": "shared"}}}]
    api_double = VersionedApi(stored=stored, protobuf=_protobuf([], [spaced]))
    informer = msgspec.json.decode(msgspec.json.encode(stored), type=resource.ResourceClaim)
    world = World(informer, _class(), _slice("n1", "gpu-0"), api_client=api_double)
    pod = _pod([_uses("shared")], name="b")
    state, _ = world.cycle(pod, "n1")
    assert world.plugin.reserve(state, pod, "n1").ok
    assert (await world.plugin.pre_bind(state, pod, "n1")).ok
    [(_, body)] = [(p, b) for m, p, b in api_double.requests if m == "PUT"]
    assert b'"parameters":{"mode" :  "shared"}' in body


def test_verbatim_reads_both_places_of_parameters() -> None:
    body = _protobuf([b'{"a" : 1}', b'{ }'], [b'{"b" :2}'])
    assert verbatim.stored_parameters(body) == ([b'{"a" : 1}', b'{ }'], [b'{"b" :2}'])
    with pytest.raises(verbatim.ProtobufError):
        verbatim.stored_parameters(b'{"kind":"ResourceClaim"}')


# --- item 6: after a conflict, the claim as the API server has it -------------------

def _shared(rv: str, *reserved: str) -> dict[str, Any]:
    return {"metadata": {"name": "shared", "namespace": "d", "uid": "uid-shared",
                         "resourceVersion": rv,
                         "finalizers": [dynamic_resources.FINALIZER]},
            "spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": ALLOCATED_ON_N1, "reservedFor": [
                {"resource": "pods", "name": name, "uid": f"uid-{name}"} for name in reserved]}}


async def _bind_shared(api_double: RecordingApi) -> tuple[Any, World]:
    # The informer still has version 5; pod a's reservation made it 6 on the server.
    informer = msgspec.convert(_shared("5"), resource.ResourceClaim)
    world = World(informer, _class(), _slice("n1", "gpu-0"), api_client=api_double)
    pod = _pod([_uses("shared")], name="b")
    state, verdicts = world.cycle(pod, "n1")
    assert verdicts["n1"].ok and world.plugin.reserve(state, pod, "n1").ok
    return await world.plugin.pre_bind(state, pod, "n1"), world


async def test_prebind_conflict_reads_the_claim_from_the_api_server() -> None:
    api_double = VersionedApi(stored=_shared("6", "a"))
    status, world = await _bind_shared(api_double)
    assert status.ok, status.message()
    assert [method for method, _, _ in api_double.requests] == ["PUT", "GET", "PUT"]
    [(_, stale), (_, fresh)] = api_double.puts()
    assert (stale["metadata"]["resourceVersion"], fresh["metadata"]["resourceVersion"]) == (
        "5", "6")
    assert [r["name"] for r in fresh["status"]["reservedFor"]] == ["a", "b"]
    # The claim as written is what the next cycles see.
    stored = world.plugin._tracker.get("d/shared")
    assert stored is not None and stored.metadata.resource_version == "7"


@pytest.mark.parametrize(("failures", "text"), [
    pytest.param({}, "add reservation to claim d/shared: Operation cannot be fulfilled on "
                     'resourceclaims.resource.k8s.io "shared": the object has been modified; '
                     "please apply your changes to the latest version and try again",
                 id="still-conflicting-after-five-tries"),
    pytest.param({("GET", "/resourceclaims/shared"): ApiResponse(
        404, b'{"kind":"Status","code":404,"message":'
             b'"resourceclaims.resource.k8s.io \\"shared\\" not found"}')},
        'get updated claim d/shared after conflict: resourceclaims.resource.k8s.io "shared" '
        "not found", id="gone"),
])
async def test_prebind_conflict_errors(failures: dict[tuple[str, str], ApiResponse],
                                       text: str) -> None:
    api_double = VersionedApi(stored=_shared("6", "a"), failures=dict(failures))
    if not failures:  # every version is stale by the time it is written
        api_double.failures[("PUT", "/status")] = CONFLICT
    status, _ = await _bind_shared(api_double)
    assert (status.code, status.message()) == (Code.ERROR, text)
    methods = [method for method, _, _ in api_double.requests]
    assert methods == (["PUT", "GET"] if failures else ["PUT", "GET"] * 4 + ["PUT"])


# --- item 7: PostFilter's deallocation is done, or is an error, when it returns -----

async def test_postfilter_deallocation_failure_is_an_error() -> None:
    recording = RecordingApi(answers={("PUT", "/resourceclaims/c/status"): ApiResponse(
        500, b'{"kind":"Status","message":"etcdserver: request timed out"}')})
    claim = _claim("c", allocation={**ALLOCATED_ON_N1, "nodeSelector": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}]}})
    world = World(claim, _class(), _slice("n1", "gpu-0"), api_client=recording)
    pod = _pod([_uses("c")])
    state, verdicts = world.cycle(pod, "n1")
    assert verdicts["n1"].message() == "resourceclaim not available on the node"
    _, status = world.plugin.post_filter(state, pod, verdicts)
    assert (status.code, status.message()) == (Code.ERROR, "etcdserver: request timed out")
    assert [(m, p.rsplit("/", 2)[-2:]) for m, p, _ in recording.requests] == [
        ("PUT", ["c", "status"])]


# --- item 9: the extended resource claim's finalizer, guarded --------------------------

def _extended(rv: str, *finalizers: str) -> dict[str, Any]:
    return {"metadata": {"name": "p-extended-resources-x", "namespace": "d", "uid": "uid-x",
                         "resourceVersion": rv, "finalizers": list(finalizers),
                         "annotations": {"resource.kubernetes.io/extended-resource-claim":
                                         "true"}},
            "spec": {"devices": {"requests": [
                {"name": "container-0-request-0", "exactly": {"deviceClassName": "gpu"}}]}}}


async def test_extended_claim_delete_keeps_other_finalizers_and_retries_on_conflict() -> None:
    # Read at version 3; another controller added its finalizer since (version 4).
    api_double = VersionedApi(stored=_extended("4", dynamic_resources.FINALIZER,
                                               "example.com/other"))
    read = msgspec.convert(_extended("3", dynamic_resources.FINALIZER), resource.ResourceClaim)
    world = World(api_client=api_double)
    await ClaimWriter(api_double, world.plugin._tracker).delete(read)
    assert [m for m, _, _ in api_double.requests] == ["PUT", "GET", "PUT", "DELETE"]
    [(_, stale), (_, fresh)] = api_double.puts()
    assert (stale["metadata"]["resourceVersion"], stale["metadata"].get("finalizers")) == (
        "3", None)
    assert (fresh["metadata"]["resourceVersion"], fresh["metadata"]["finalizers"]) == (
        "4", ["example.com/other"])


async def test_extended_claim_delete_failure_is_reported() -> None:
    api_double = VersionedApi(stored=_extended("3"), failures={
        ("PUT", "/resourceclaims/p-extended-resources-x"): ApiResponse(
            403, b'{"kind":"Status","message":"forbidden"}')})
    read = msgspec.convert(_extended("3"), resource.ResourceClaim)
    with pytest.raises(ClaimWriteError, match=r"^update resourceclaim "
                                              r"d/p-extended-resources-x: forbidden$"):
        await ClaimWriter(api_double, World().plugin._tracker).delete(read)
    assert [m for m, _, _ in api_double.requests] == ["PUT"]


# --- item 3: one in-flight allocation, shared within a pod-group cycle ---------------

def _member(name: str) -> PodInfo:
    return _pod([_uses("shared")], name=name)


def _reserve(world: World, pod: PodInfo, group: PodGroupState | None) -> CycleState:
    state = CycleState()
    state.pod_group = group
    _, status = world.plugin.pre_filter(state, pod, world.nodes("n1"))
    assert status.ok, status.message()
    assert world.plugin.filter(state, pod, world.nodes("n1")[0]).ok
    assert world.plugin.reserve(state, pod, "n1").ok
    return state


def test_members_of_one_pod_group_cycle_share_an_inflight_allocation() -> None:
    world = World(_claim("shared"), _class(), _slice("n1", "gpu-0"))
    group = PodGroupState()
    first = _reserve(world, _member("a"), group)
    second = _reserve(world, _member("b"), group)
    first_info = first.read("PreFilterDynamicResources").infos[0]
    second_info = second.read("PreFilterDynamicResources").infos[0]
    assert second_info.allocation == first_info.allocation is not None
    # Outside that cycle (another group's, or a lone pod) the allocation is in flight.
    for other in (PodGroupState(), None):
        state = CycleState()
        state.pod_group = other
        _, status = world.plugin.pre_filter(state, _member("c"), [])
        assert (status.code, status.message()) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "resource claim d/shared is in the process of being allocated")
    # Undone in reverse: the entry goes with its last sharer, and leaves the cycle's set.
    world.plugin.unreserve(second, _member("b"), "n1")
    assert world.plugin._tracker.pending_allocation("uid-shared") is not None
    world.plugin.unreserve(first, _member("a"), "n1")
    assert world.plugin._tracker.pending_allocation("uid-shared") is None
    assert group.cycle_data["PreFilterDynamicResources"] == set()


@pytest.mark.parametrize(("release", "verdict"), [
    (37, "resourceclaim not available on the node"),
    (36, ""),  # v1.36.4 does not keep the sharer to the allocation's node
])
def test_a_member_sharing_an_inflight_allocation_is_kept_to_its_nodes(
        release: int, verdict: str) -> None:
    """v1.37.2 (TestPreFilterReusesPendingAllocation...): a member reusing another's
    allocation in flight may only go where that allocation's devices are."""
    world = World(_claim("shared"), _class(), _slice("n1", "gpu-0"), release=release)
    group = PodGroupState()
    _reserve(world, _member("a"), group)
    state = CycleState()
    state.pod_group = group
    _, status = world.plugin.pre_filter(state, _member("b"), world.nodes("n1", "n2"))
    assert status.ok, status.message()
    on_n1, on_n2 = (world.plugin.filter(state, _member("b"), info)
                    for info in world.nodes("n1", "n2"))
    assert on_n1.ok
    assert on_n2.message() == verdict


async def test_prebind_failure_only_drops_its_share_of_the_inflight_allocation() -> None:
    recording = RecordingApi(answers={("PUT", "/resourceclaims/shared"): ApiResponse(
        500, b'{"kind":"Status","message":"etcdserver: request timed out"}')})
    world = World(_claim("shared"), _class(), _slice("n1", "gpu-0"), api_client=recording)
    group = PodGroupState()
    states = [_reserve(world, _member(name), group) for name in ("a", "b")]
    for state in states:  # the binding cycles run without the group's cycle
        state.pod_group = None
    status = await world.plugin.pre_bind(states[1], _member("b"), "n1")
    assert (status.code, status.message()) == (
        Code.ERROR, "add finalizer to claim d/shared: etcdserver: request timed out")
    # Pod a still binds with that allocation.
    assert world.plugin._tracker.pending_allocation("uid-shared") is not None
    recording.answers.clear()
    recording.answers[("PUT", "/resourceclaims/shared")] = ApiResponse(
        200, msgspec.json.encode(msgspec.structs.replace(
            _claim("shared"), metadata=msgspec.structs.replace(
                _claim("shared").metadata, resource_version="6",
                finalizers=[dynamic_resources.FINALIZER]))))
    assert (await world.plugin.pre_bind(states[0], _member("a"), "n1")).ok


async def test_a_gang_sharing_one_unallocated_claim_schedules() -> None:
    """gang.py: two members of a PodGroup (minCount 2) use one claim nobody allocated."""
    listers = Listers(generic_workload=True)
    harness = build_harness({"schedulerName": "kpysched"},
                            Features(generic_workload=True, gang_scheduling=True), listers,
                            node("n1", "4"))
    listers.workloads.pod_groups.on_add(make_pod_group("g", 2, namespace="d"))
    listers.resources.device_classes.on_add(_class())
    listers.resources.resource_slices.on_add(_slice("n1", "gpu-0"))
    listers.resources.resource_claims.on_add(_claim("shared"))
    for name in ("a", "b"):
        pod = make_pod(name, namespace="d").group("g").req(cpu="1").obj()
        pod.spec.scheduler_name = "kpysched"
        pod.spec.resource_claims = [api.PodResourceClaim(name="gpu",
                                                         resource_claim_name="shared")]
        harness.pods.on_add(pod)
    await harness.schedule_all()
    assert harness.bound() == {"a": "n1", "b": "n1"}
    assert harness.notes("FailedScheduling") == {}


# --- item 10: the BindingConditionsPending event -----------------------------------------

async def test_prebind_announces_its_wait_for_binding_conditions() -> None:
    conditions = {**ALLOCATED_ON_N1, "devices": {"results": [{
        "request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0",
        "bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]}]}}
    ready = {"allocation": conditions, "devices": [{
        "driver": DRIVER, "pool": "n1", "device": "gpu-0",
        "conditions": [{"type": "Attached", "status": "True", "reason": "Done",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}
    stored = {**_shared("5"), "status": ready}
    api_double = VersionedApi(stored=stored)
    world = World(msgspec.convert(stored, resource.ResourceClaim), _class(),
                  _slice("n1", "gpu-0"), api_client=api_double)
    pod = _pod([_uses("shared")])
    state, _ = world.cycle(pod, "n1")
    assert world.plugin.reserve(state, pod, "n1").ok
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert status.ok, status.message()
    assert world.handle.events == [("d/p", "kpysched", "Normal", "BindingConditionsPending",
                                    "Scheduling",
                                    "waiting for binding conditions for device on node n1")]
    # The device status the driver wrote went back untouched.
    assert api_double.puts()[0][1]["status"]["devices"] == ready["devices"]


async def test_no_event_without_binding_conditions() -> None:
    api_double = VersionedApi(stored=_shared("5"))
    world = World(msgspec.convert(_shared("5"), resource.ResourceClaim), _class(),
                  _slice("n1", "gpu-0"), api_client=api_double)
    pod = _pod([_uses("shared")])
    state, _ = world.cycle(pod, "n1")
    assert world.plugin.reserve(state, pod, "n1").ok
    assert (await world.plugin.pre_bind(state, pod, "n1")).ok
    assert world.handle.events == []
